//! Traffic mixes on the loopback engine, with no root: every frame and
//! byte of an IMIX or a listed mix (with a partial last cycle) counted by
//! the senders and the receivers, the window's mean frame size the mix's,
//! the table naming the mix. (Twins of the root package's tests/imix.rs,
//! which also counts the bytes against the interfaces, jumbo frames
//! included.)

mod common;

use common::*;
use serde_json::Value;

/// The workers of `role`: (frames, bytes) over the whole run.
fn totals(r: &Value, role: &str) -> (u64, u64) {
    r["workers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["role"] == role)
        .fold((0, 0), |(f, b), w| {
            (
                f + w["total"]["frames"].as_u64().unwrap(),
                b + w["total"]["bytes"].as_u64().unwrap(),
            )
        })
}

/// A counted loopback stream of `size`: every frame arrives whole, and
/// the senders and the receivers count `want_bytes` (frames without FCS).
fn mixed_stream(size: &str, count: u64, want_bytes: u64) -> Value {
    let c = count.to_string();
    let out = run(&[
        "stream",
        "--backend",
        "loopback",
        "--size",
        size,
        "--count",
        &c,
        "--warmup",
        "0s",
        "--duration",
        "30s",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&out);
    let f = &r["frames"];
    assert_eq!(f["sent"], count, "{r:#}");
    assert_eq!(f["received"], count, "{r:#}");
    for k in ["lost", "bad", "duplicates", "seq_gaps", "unfinished"] {
        assert_eq!(f[k], 0, "{k}: {r:#}");
    }
    for role in ["tx", "rx"] {
        assert_eq!(totals(&r, role), (count, want_bytes), "{role}: {r:#}");
    }
    r
}

#[test]
fn imix_stream_counts_every_frame_and_byte() {
    // 100 cycles of 12 frames: 7 x 60 + 4 x 590 + 1 x 1514 bytes each
    // (64, 594 and 1518 with FCS).
    let r = mixed_stream("imix", 1200, 100 * 4294);
    assert_eq!(r["params"]["size_mix"], "64:7,594:4,1518:1", "{r:#}");
    assert_eq!(r["params"]["frame_size"], 1518, "the largest frame");
    // A timed run: the window's frames average the mix's mean, 4342 / 12
    // bytes, within what one cut cycle at each end of the window moves
    // it (under 2 x 1518 / frames); the whole run's exactly, in whole
    // cycles of 12 frames.
    let out = run(&[
        "stream",
        "--backend",
        "loopback",
        "--size",
        "imix",
        "--rate",
        "20000",
        "--warmup",
        "0s",
        "--duration",
        "1s",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&out);
    for (side, role) in [("sender", "tx"), ("receiver", "rx")] {
        let frames = r[side]["frames"].as_f64().unwrap();
        let mean = r[side]["avg_frame_size"].as_f64().unwrap();
        assert!(frames > 1000.0, "{side}: {r:#}");
        let bound = 2.0 * 1518.0 / frames;
        assert!(
            (mean - 4342.0 / 12.0).abs() < bound,
            "{side}: mean {mean} of {frames} frames"
        );
        let (frames, bytes) = totals(&r, role);
        let (cycles, rest) = (frames / 12, frames % 12);
        // The last cycle cut short: its first frames, in the mix's order.
        assert!(bytes >= cycles * 4294 && bytes <= cycles * 4294 + rest * 1514);
    }
    let out = run(&[
        "stream",
        "--backend",
        "loopback",
        "--size",
        "imix",
        "--count",
        "12",
        "--warmup",
        "0s",
    ]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("traffic mix 64:7,594:4,1518:1"), "{table}");
}

#[test]
fn listed_mix_with_a_partial_cycle() {
    // 128:3,1518:1 cycles 128, 128, 1518, 128 (interleaved); 1001 frames
    // are 250 cycles and one 128-byte frame: 124 + 124 + 1514 + 124 bytes
    // a cycle.
    let r = mixed_stream("128:3,1518:1", 1001, 250 * (3 * 124 + 1514) + 124);
    assert_eq!(r["params"]["size_mix"], "128:3,1518:1", "{r:#}");
    assert_eq!(r["params"]["frame_size"], 1518, "the largest frame");
}
