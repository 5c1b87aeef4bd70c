//! Micro-benchmarks of the per-frame work: patching the header on send,
//! parsing it on receive, sequence accounting, fragment reassembly,
//! latency recording, and the batch loops of both sides against an
//! in-memory UMEM (the kernel's rings are left out: they need a socket).
//!
//! `cargo bench --bench frame`; CI runs `cargo bench --bench frame -- --test`
//! (each once) to keep them compiling and running.
//!
//! Instruction counts, which the load of a shared machine does not change:
//! `LINERATE_FRAME_BATCHES=20` and `=220` with `LINERATE_FRAME_ROW=<part of
//! a batch row's name>`, each under `valgrind --tool=callgrind`; the
//! difference of the two totals over 200 x 64 frames is the row's count per
//! frame. Valgrind hides the vDSO, so a clock read is a syscall there and
//! not counted: what one clock read per batch instead of per frame saves
//! shows in the wall-clock rows only.

use std::{hint::black_box, net::Ipv4Addr};

use criterion::{criterion_group, Criterion, Throughput};
use hdrhistogram::Histogram;
use linerate_datapath::{
    clock::monotonic_ns,
    frame::{parse, verify, Endpoint, FrameSpec, Stamp, HEADER_OFFSET},
    header::{Fragment, Header, Kind},
    message::{Fragmentation, MessageTracker},
    mix::SizeMix,
    port::FrameMut,
    sequence::SequenceTracker,
    stats::CounterSnapshot,
    worker::{FlowTable, Stamper, Stamping},
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

/// One batch of a row: the work of [`BATCH`] frames.
type Row = (String, Box<dyn FnMut()>);

/// A slot of the in-memory UMEM, as the sender's port hands it out.
struct Slot<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl FrameMut for Slot<'_> {
    fn len(&self) -> usize {
        self.len
    }
    fn set_len(&mut self, len: usize) {
        self.len = len.min(self.buf.len());
    }
    fn head(&mut self) -> &mut [u8] {
        &mut self.buf[..self.len]
    }
}

/// The sender loops (`worker::Stamper`, as `worker::tx` runs it) over a
/// 512-slot in-memory UMEM: plain frames of 64 B, an IMIX, and 64 KB
/// messages cut into 1518-byte frames; one clock read per batch, as the
/// sender does.
fn tx_rows() -> Vec<Row> {
    let imix = SizeMix::imix();
    let cut = Fragmentation::new(65536, 1438).unwrap();
    let cases: [(&str, usize, Option<Fragmentation>, Option<&SizeMix>); 3] = [
        ("plain 64 B", 64, None, None),
        ("mix (IMIX)", 1518, None, Some(&imix)),
        ("message (64 KB)", 1518, Some(cut), None),
    ];
    cases
        .into_iter()
        .map(|(what, size, message, mix)| {
            let frame = spec(size, Kind::Stream);
            let template = frame.template().unwrap();
            let run = match Stamper::from_parts(&frame, message, mix).unwrap() {
                Stamper::Plain(s) => stamp_batches(s, &template),
                Stamper::Mix(s) => stamp_batches(s, &template),
                Stamper::Message(s) => stamp_batches(s, &template),
            };
            (format!("tx: stamp 64 frames, {what}"), run)
        })
        .collect()
}

/// A sender loop's batches, compiled for its stamper as `worker::tx` is.
fn stamp_batches<S: Stamping + 'static>(mut stamper: S, template: &[u8]) -> Box<dyn FnMut()> {
    let mut umem = vec![0u8; SLOTS * CHUNK];
    for s in 0..SLOTS {
        umem[s * CHUNK..s * CHUNK + template.len()].copy_from_slice(template);
    }
    let mut lens = vec![template.len(); SLOTS];
    let (mut next, mut seq) = (0usize, 0u64);
    Box::new(move || {
        let ts = monotonic_ns();
        let mut wire = 0;
        for _ in 0..BATCH {
            let buf = &mut umem[next * CHUNK..(next + 1) * CHUNK];
            let mut f = Slot {
                buf,
                len: lens[next],
            };
            wire += stamper.stamp(&mut f, seq, ts).0;
            lens[next] = f.len;
            seq += 1;
            next += 1;
            if next == SLOTS {
                next = 0;
            }
        }
        black_box((&umem, wire));
    })
}

/// The receiver's work on a batch of [`BATCH`] frames of one flow in
/// order (`FlowTable::account_frame_verified`: parse, checksums as `V`
/// asks, sequence, latency, counters). Each frame's sequence number and
/// send time are written first (the "patch header" row's cost), so the
/// flow runs forward as on the wire; the clock is read once per batch.
fn account_batches<const V: u8>(template: Vec<u8>) -> Box<dyn FnMut()> {
    account_buffers::<V>(template, usize::MAX)
}

/// [`account_batches`] of frames received in buffers of `buffer` bytes
/// (multi-buffer, as AF_XDP hands a frame larger than its chunk).
fn account_buffers<const V: u8>(template: Vec<u8>, buffer: usize) -> Box<dyn FnMut()> {
    account_batches_with(template, move |table, c, f, len| {
        let (head, rest) = f.split_at(buffer.min(f.len()));
        table.account_frame_verified::<V>(c, (head, rest.chunks(buffer)), len);
    })
}

/// [`account_batches`] at `--verify 1/N`: one frame in `every` in full.
fn account_sampled(template: Vec<u8>, every: u32) -> Box<dyn FnMut()> {
    let mut left = every;
    account_batches_with(template, move |table, c, f, len| {
        table.account_frame_sampled(c, (f, [], len), &mut left, every);
    })
}

/// The batches of [`account_batches`], each frame accounted by `account`.
fn account_batches_with(
    template: Vec<u8>,
    mut account: impl FnMut(&mut FlowTable, &mut CounterSnapshot, &[u8], u64) + 'static,
) -> Box<dyn FnMut()> {
    let len = template.len();
    let stride = len.max(CHUNK);
    let mut frames = vec![0u8; BATCH * stride];
    for s in 0..BATCH {
        frames[s * stride..s * stride + len].copy_from_slice(&template);
    }
    let stamp = Stamp::for_template(&template);
    let (mut table, mut c, mut seq) = (FlowTable::default(), CounterSnapshot::default(), 0u64);
    Box::new(move || {
        let ts = monotonic_ns();
        for s in 0..BATCH {
            let f = &mut frames[s * stride..s * stride + len];
            stamp.apply(f, seq, ts);
            seq += 1;
        }
        table.start_batch();
        for s in 0..BATCH {
            let f = &frames[s * stride..s * stride + len];
            account(&mut table, &mut c, black_box(f), len as u64);
        }
        assert_eq!((c.frames, c.bad), (seq, 0), "every frame accounted");
    })
}

/// A 4 KB chunk's room for data after the kernel's XDP headroom: a
/// 9000-byte frame comes in three buffers.
const JUMBO_BUFFER: usize = linerate_datapath::geometry::CHUNK_DATA;

/// The receiver's rows: 64 B IPv4 at each verify level, 1518 B IPv4
/// (linerate's: no UDP checksum) and 1518 B IPv6 (a UDP checksum over the
/// whole datagram) at `header`, `full` and `1/64`, and a 9000 B IPv6 frame
/// in three buffers (the checksum over all of them) at `header` and `full`.
fn rx_rows() -> Vec<Row> {
    let v4_64 = spec(64, Kind::Stream).template().unwrap();
    let v4_1518 = spec(1518, Kind::Stream).template().unwrap();
    let v6_1518 = checked_frame(1518, true);
    let v6_9000 = checked_frame(9000, true);
    let name = |what: &str| format!("rx: parse and account 64 frames at {what}");
    vec![
        (
            name("64 B, verify off"),
            account_batches::<{ verify::OFF }>(v4_64.clone()),
        ),
        (
            name("64 B, verify header"),
            account_batches::<{ verify::HEADER }>(v4_64.clone()),
        ),
        (
            name("64 B, verify full"),
            account_batches::<{ verify::FULL }>(v4_64),
        ),
        (
            name("1518 B, verify header"),
            account_batches::<{ verify::HEADER }>(v4_1518.clone()),
        ),
        (
            name("1518 B, verify full"),
            account_batches::<{ verify::FULL }>(v4_1518),
        ),
        (
            name("1518 B IPv6, verify header"),
            account_batches::<{ verify::HEADER }>(v6_1518.clone()),
        ),
        (
            name("1518 B IPv6, verify full"),
            account_batches::<{ verify::FULL }>(v6_1518.clone()),
        ),
        (
            name("1518 B IPv6, verify 1/64"),
            account_sampled(v6_1518, 64),
        ),
        (
            name("9000 B IPv6 in 3 buffers, verify header"),
            account_buffers::<{ verify::HEADER }>(v6_9000.clone(), JUMBO_BUFFER),
        ),
        (
            name("9000 B IPv6 in 3 buffers, verify full"),
            account_buffers::<{ verify::FULL }>(v6_9000, JUMBO_BUFFER),
        ),
    ]
}

fn batch_rows() -> Vec<Row> {
    let mut rows = tx_rows();
    rows.extend(rx_rows());
    rows
}

/// The sender's and receiver's batch loops, per frame.
fn batches(c: &mut Criterion) {
    let mut g = c.benchmark_group("batch");
    g.throughput(Throughput::Elements(BATCH as u64));
    for (name, mut run) in batch_rows() {
        g.bench_function(name, |b| b.iter(&mut run));
    }
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
    batches,
    checksum_check
);

/// `LINERATE_FRAME_BATCHES=N LINERATE_FRAME_ROW=text`: runs the batch rows
/// whose name holds `text` N times each and nothing else, for instruction
/// counts that the load of a shared machine does not change:
/// `valgrind --tool=callgrind` at two values of N, the difference in
/// instructions over the difference in frames (N x 64) is the row's count
/// per frame (set-up cancels out).
fn main() {
    if let Ok(n) = std::env::var("LINERATE_FRAME_BATCHES") {
        let n: usize = n.parse().expect("LINERATE_FRAME_BATCHES: a number");
        let want = std::env::var("LINERATE_FRAME_ROW").unwrap_or_default();
        for (name, mut run) in batch_rows() {
            if name.contains(&want) {
                for _ in 0..n {
                    run();
                }
            }
        }
        return;
    }
    frame_benches();
    Criterion::default().configure_from_args().final_summary();
}
