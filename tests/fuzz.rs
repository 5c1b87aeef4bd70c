//! The fuzz targets' harnesses (`linerate_datapath::fuzzing`) driven by
//! proptest: arbitrary bytes, and structured frames whose linerate and
//! fragment headers are plausible but lie (flows, sequence numbers, kinds,
//! fragment indices, counts and lengths), so that the run reaches the
//! accounting code and not only the parser's first check.
//!
//! CI runs a short run (`LINERATE_FUZZ_CASES`, default 1000 cases per
//! target); a long run by hand: `LINERATE_FUZZ_CASES=1000000 cargo test
//! --release --test fuzz`. Coverage-guided fuzzing of the same harnesses:
//! `fuzz/` (cargo-fuzz), see docs/fuzzing.md.

use linerate_datapath::{
    fuzzing,
    header::{MAGIC, VERSION},
};
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("LINERATE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

/// A linerate header plus fragment header whose fields are near the
/// values real frames carry, each sometimes replaced by anything.
fn plausible_headers() -> impl Strategy<Value = Vec<u8>> {
    (
        prop_oneof![9 => Just(MAGIC), 1 => any::<u16>()],
        prop_oneof![9 => Just(VERSION), 1 => any::<u8>()],
        prop_oneof![9 => 0u8..4, 1 => any::<u8>()],
        prop_oneof![8 => 0u16..4, 1 => 4090u16..4100, 1 => any::<u16>()],
        prop_oneof![8 => 0u64..64, 1 => any::<u64>()],
        (
            prop_oneof![8 => 0u32..8, 1 => any::<u32>()],
            prop_oneof![8 => 0u32..4, 1 => any::<u32>()],
            prop_oneof![8 => 1u32..4, 1 => any::<u32>()],
            prop_oneof![8 => 0u32..8, 1 => any::<u32>()],
        ),
        proptest::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(
            |(magic, version, kind, flow, seq, (id, index, count, len), tail)| {
                let mut b = Vec::with_capacity(34 + tail.len());
                b.extend_from_slice(&magic.to_be_bytes());
                b.push(version);
                b.push(kind);
                b.extend_from_slice(&flow.to_be_bytes());
                b.extend_from_slice(&seq.to_be_bytes()[2..]);
                b.extend_from_slice(&[0; 6]);
                for w in [id, index, count, len] {
                    b.extend_from_slice(&w.to_be_bytes());
                }
                // Sometimes cut short, sometimes followed by message bytes.
                let cut =
                    tail.first().map_or(
                        b.len(),
                        |&t| {
                            if t < 24 {
                                usize::from(t)
                            } else {
                                b.len()
                            }
                        },
                    );
                b.truncate(cut);
                b.extend_from_slice(&tail);
                b
            },
        )
}

/// Records as the harness reads them: `[len_hi, len_lo, bytes...]`.
fn framed(recs: Vec<Vec<u8>>) -> Vec<u8> {
    let mut out = Vec::new();
    for r in recs {
        out.extend_from_slice(&(r.len() as u16).to_be_bytes());
        out.extend_from_slice(&r);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn receive_arbitrary_bytes(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
        fuzzing::receive(&data);
    }

    #[test]
    fn receive_lying_headers(recs in proptest::collection::vec(plausible_headers(), 0..200)) {
        let mut data = vec![1u8];
        data.extend(framed(recs));
        fuzzing::receive(&data);
    }

    #[test]
    fn reassemble_arbitrary_fragments(recs in proptest::collection::vec(plausible_headers(), 0..200)) {
        // The fragment header starts 18 bytes into a plausible header.
        let recs = recs.into_iter().map(|r| r.get(18..).unwrap_or_default().to_vec()).collect();
        fuzzing::reassemble(&framed(recs));
    }

    #[test]
    fn stream_records_cut_anywhere(seed: u8, recs in proptest::collection::vec(plausible_headers(), 0..50)) {
        let mut data = vec![seed];
        for r in recs { data.extend(r); }
        fuzzing::stream_records(&data);
    }
}
