//! Micro-benchmarks of the per-frame work: patching the header on send,
//! parsing it on receive, sequence accounting, fragment reassembly,
//! latency recording, and the batch loops of both sides against an
//! in-memory UMEM (the kernel's rings are left out: they need a socket).
//!
//! `cargo bench --bench frame`; CI runs `cargo bench --bench frame -- --test`
//! (each once) to keep them compiling and running.

use std::{hint::black_box, net::Ipv4Addr};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use hdrhistogram::Histogram;
use linerate_datapath::{
    frame::{parse, Endpoint, FrameSpec, HEADER_OFFSET},
    header::{Fragment, Header, Kind},
    message::{Fragmentation, MessageTracker},
    sequence::SequenceTracker,
    stats::CounterSnapshot,
    worker::FlowTable,
};

fn spec(size: usize, kind: Kind) -> FrameSpec {
    FrameSpec {
        src: Endpoint {
            mac: [2, 0, 0, 0, 0, 1],
            ip: Ipv4Addr::new(198, 18, 0, 1).into(),
            port: 7472,
        },
        dst: Endpoint {
            mac: [2, 0, 0, 0, 0, 2],
            ip: Ipv4Addr::new(198, 18, 0, 2).into(),
            port: 7471,
        },
        frame_size: size,
        flow: 0,
        kind,
    }
}

const BATCH: usize = 64;
const SLOTS: usize = 512;
const CHUNK: usize = 4096;

fn per_frame(c: &mut Criterion) {
    let mut frame = spec(1518, Kind::Stream).template().unwrap();
    let mut seq = 0u64;
    c.bench_function("patch header", |b| {
        b.iter(|| {
            seq += 1;
            Header::patch(black_box(&mut frame[HEADER_OFFSET..]), seq, seq * 7);
        })
    });
    let frame = spec(64, Kind::Stream).template().unwrap();
    c.bench_function("parse 64-byte frame", |b| {
        b.iter(|| parse(black_box(&frame)).unwrap())
    });
    let mut t = SequenceTracker::default();
    let mut s = 0u64;
    c.bench_function("sequence record", |b| {
        b.iter(|| {
            s += 1;
            t.record(black_box(s));
        })
    });
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
    let mut x = 1u64;
    c.bench_function("latency histogram record", |b| {
        b.iter(|| {
            x = (x * 6364136223846793005 + 1442695040888963407) % 1_000_000 + 1000;
            h.record(black_box(x)).unwrap();
        })
    });
}

fn reassembly(c: &mut Criterion) {
    let cut = Fragmentation::new(65536, 1438).unwrap();
    let mut g = c.benchmark_group("reassembly");
    g.throughput(Throughput::Elements(cut.count as u64));
    let mut t = MessageTracker::new(false);
    let mut id = 0u32;
    g.bench_function("64 KB message, 46 fragments, counted", |b| {
        b.iter(|| {
            id = id.wrapping_add(1);
            for i in 0..cut.count {
                let f = Fragment {
                    msg_id: id,
                    index: i as u32,
                    count: cut.count as u32,
                    msg_len: 65536,
                };
                black_box(t.on_fragment(&f, &[]));
            }
        })
    });
    g.finish();
}

/// The sender's batch loop over a 512-slot in-memory UMEM: pick the next
/// slot, stamp sequence and time into its header.
fn tx_batch(c: &mut Criterion) {
    let template = spec(1518, Kind::Stream).template().unwrap();
    let mut umem = vec![0u8; SLOTS * CHUNK];
    for s in 0..SLOTS {
        umem[s * CHUNK..s * CHUNK + template.len()].copy_from_slice(&template);
    }
    let mut g = c.benchmark_group("batch");
    g.throughput(Throughput::Elements(BATCH as u64));
    let (mut next, mut seq) = (0usize, 0u64);
    g.bench_function("tx: stamp 64 frames in a 512-slot UMEM", |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                let off = next * CHUNK + HEADER_OFFSET;
                Header::patch(&mut umem[off..off + 18], seq, seq);
                seq += 1;
                next = (next + 1) % SLOTS;
            }
            black_box(&umem);
        })
    });

    // The receiver's: parse and account 64 frames of one flow.
    let mut frames = vec![0u8; SLOTS * CHUNK];
    for s in 0..SLOTS {
        let f = &mut frames[s * CHUNK..s * CHUNK + template.len()];
        f.copy_from_slice(&template);
        Header::patch(&mut f[HEADER_OFFSET..], s as u64, 0);
    }
    g.bench_function("rx: parse and account 64 frames", |b| {
        b.iter_batched_ref(
            || (FlowTable::default(), CounterSnapshot::default()),
            |(table, cnt)| {
                for s in 0..BATCH {
                    let off = s * CHUNK;
                    table.account_frame(cnt, &frames[off..off + template.len()], 1514);
                }
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

/// A frame as the other end of a test might send it: IPv4 with a UDP
/// checksum (linerate's senders send none over IPv4), or IPv6 (always one).
fn checked_frame(size: usize, ipv6: bool) -> Vec<u8> {
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};
    let mut s = spec(size, Kind::Stream);
    if ipv6 {
        s.src.ip = "2001:2::1".parse().unwrap();
        s.dst.ip = "2001:2::2".parse().unwrap();
        return s.template().unwrap();
    }
    let mut f = s.template().unwrap();
    let sliced = SlicedPacket::from_ethernet(&f).unwrap();
    let (Some(NetSlice::Ipv4(ip)), Some(TransportSlice::Udp(udp))) =
        (&sliced.net, &sliced.transport)
    else {
        unreachable!("an IPv4 UDP template")
    };
    let check = udp
        .to_header()
        .calc_checksum_ipv4(&ip.header().to_header(), udp.payload())
        .unwrap();
    f[HEADER_OFFSET - 2..HEADER_OFFSET].copy_from_slice(&check.to_be_bytes());
    f
}

/// Parsing a received frame, its checksums verified (`frame::parse`):
/// the IPv4 header's (20 bytes) always, the UDP checksum over the whole
/// datagram where the frame carries one.
fn checksum_check(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse and check");
    for size in [64, 1518] {
        let cases = [
            (
                "IPv4, no UDP checksum",
                spec(size, Kind::Stream).template().unwrap(),
            ),
            ("IPv4, UDP checksum", checked_frame(size, false)),
            ("IPv6, UDP checksum", checked_frame(size.max(84), true)),
        ];
        for (what, f) in cases {
            g.bench_function(format!("{size} B, {what}"), |b| {
                b.iter(|| parse(black_box(&f)).unwrap())
            });
        }
    }
    g.finish();
}

criterion_group!(
    frame_benches,
    per_frame,
    reassembly,
    tx_batch,
    checksum_check
);
criterion_main!(frame_benches);
