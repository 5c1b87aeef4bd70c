//! Message streams and one-way latency on the loopback engine, with no
//! root: messages larger than a frame cut into MTU-sized fragments, every
//! message accounted whole, a message with a fragment dropped lost and no
//! other; one latency per received frame. (Twins of the root package's
//! tests/messages.rs and tests/latency.rs, which also count the
//! fragments against the interfaces.)

mod common;

use common::*;
use serde_json::Value;

/// A counted, paced loopback stream's result.
fn counted(count: u64, extra: &[&str]) -> Value {
    let count = count.to_string();
    let mut args = vec![
        "stream",
        "--backend",
        "loopback",
        "--count",
        &count,
        "--warmup",
        "0s",
        "--duration",
        "30s",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = run(&args);
    let r = json(&out);
    // Frames dropped on purpose (--inject-loss) are the loss asked for:
    // exit 0 (a counted run short by anything else exits 4).
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    r
}

#[test]
fn messages_65500_and_1mb_arrive_whole() {
    for (size, count, rate) in [(65_500u64, 300u64, "1000"), (1_048_576, 20, "50")] {
        let s = size.to_string();
        let r = counted(count, &["--message", &s, "--rate", rate]);
        let m = &r["frames"]["messages"];
        assert_eq!(m["sent"], count, "{m}");
        assert_eq!(m["received"], count, "{m}");
        assert_eq!(m["lost"], 0);
        assert_eq!(m["receiver_counted_lost"], 0);
        // MTU 1500 less the headers (62 bytes) a fragment.
        let per_message = size.div_ceil(1500 - 62);
        assert_eq!(m["frames_per_message"], per_message);
        assert_eq!(r["frames"]["sent"], count * per_message);
        assert_eq!(r["frames"]["received"], count * per_message);
        assert_eq!(r["frames"]["bad"], 0);
    }
}

#[test]
fn a_message_with_a_fragment_dropped_is_lost_and_no_other() {
    // 500 messages of 10 fragments; one frame in 100 dropped on the link:
    // 50 frames, each in a message of its own (10 < 100 apart).
    let r = counted(
        500,
        &["--message", "14380", "--inject-loss", "1", "--rate", "5000"],
    );
    let f = &r["frames"];
    assert_eq!(f["sent"], 5000, "{f:#}");
    assert_eq!(f["injected"], 50, "{f:#}");
    assert_eq!(f["received"], 4950, "{f:#}");
    assert_eq!(f["lost"], 50, "{f:#}");
    let m = &f["messages"];
    assert_eq!(m["frames_per_message"], 10, "{m:#}");
    assert_eq!(m["sent"], 500, "{m:#}");
    assert_eq!(m["received"], 450, "{m:#}");
    assert_eq!(m["lost"], 50, "{m:#}");
    assert_eq!(m["receiver_counted_lost"], 50, "{m:#}");
}

#[test]
fn every_frame_has_a_latency() {
    let out = run(&[
        "stream",
        "--backend",
        "loopback",
        "--rate",
        "10000",
        "--duration",
        "1s",
        "--warmup",
        "200ms",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&out);
    let l = &r["latency"];
    // Accounting only: one latency per received frame, percentiles in
    // order (how high they are is the machine's load).
    assert!(r["frames"]["received"].as_u64().unwrap() > 0, "{r:#}");
    assert_eq!(l["count"], r["frames"]["received"], "{l}");
    assert_eq!(l["receive_time"], "per-batch", "{l}");
    let us = |k: &str| l[k].as_f64().unwrap();
    assert!(us("min_us") <= us("p50_us"), "{l}");
    assert!(
        us("p50_us") <= us("p90_us") && us("p90_us") <= us("p99_us"),
        "{l}"
    );
    assert!(
        us("p99_us") <= us("p99_9_us") && us("p99_9_us") <= us("max_us"),
        "{l}"
    );
    // The table shows it too.
    let out = run(&[
        "stream",
        "--backend",
        "loopback",
        "--size",
        "64",
        "--rate",
        "10000",
        "--duration",
        "300ms",
        "--warmup",
        "0s",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("one-way latency"),
        "{text}"
    );
}
