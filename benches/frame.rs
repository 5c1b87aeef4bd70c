//! Micro-benchmarks of the per-frame work: patching the header on send,
//! parsing it on receive, sequence accounting.

use std::{hint::black_box, net::Ipv4Addr};

use criterion::{criterion_group, criterion_main, Criterion};
use linerate_datapath::{
    frame::{parse, Endpoint, FrameSpec, HEADER_OFFSET},
    header::{Header, Kind},
    sequence::SequenceTracker,
};

fn spec(size: usize) -> FrameSpec {
    FrameSpec {
        src: Endpoint {
            mac: [2, 0, 0, 0, 0, 1],
            ip: Ipv4Addr::new(198, 18, 0, 1),
            port: 7472,
        },
        dst: Endpoint {
            mac: [2, 0, 0, 0, 0, 2],
            ip: Ipv4Addr::new(198, 18, 0, 2),
            port: 7471,
        },
        frame_size: size,
        flow: 0,
        kind: Kind::Stream,
    }
}

fn benches(c: &mut Criterion) {
    let mut frame = spec(1518).template().unwrap();
    let mut seq = 0u64;
    c.bench_function("patch header", |b| {
        b.iter(|| {
            seq += 1;
            Header::patch(black_box(&mut frame[HEADER_OFFSET..]), seq, seq * 7);
        })
    });
    let frame = spec(64).template().unwrap();
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
}

criterion_group!(frame_benches, benches);
criterion_main!(frame_benches);
