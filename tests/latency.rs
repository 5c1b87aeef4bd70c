//! One-way latency on every stream: each received frame's latency from its
//! send time, in the result (`latency`) and the table.

mod common;

use std::process::{Child, Command, Stdio};

use common::*;

fn stream(lab: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["stream", "--lab", lab, "--size", "64", "--json"];
    args.extend_from_slice(extra);
    run_json(&args)
}

fn us(r: &serde_json::Value, what: &str) -> f64 {
    r["latency"][what]
        .as_f64()
        .unwrap_or_else(|| panic!("no latency.{what} in {}", r["latency"]))
}

/// A process that keeps `core` busy until dropped.
struct Hog(Child);

impl Hog {
    fn on(core: usize) -> Self {
        let child = Command::new("taskset")
            .args(["-c", &core.to_string(), "yes"])
            .stdout(Stdio::null())
            .spawn()
            .expect("running taskset -c CORE yes");
        Self(child)
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A stream paced far below what the lab carries (10,000 frames/s):
/// frames never queue, so their latency is the path's plus the receiver's
/// wake-up.
fn calm(lab: &str) -> serde_json::Value {
    stream(
        lab,
        &[
            "--rate",
            "10000",
            "--duration",
            "1s",
            "--warmup",
            "200ms",
            "--napi",
            "softirq",
        ],
    )
}

#[test]
#[ignore = "needs root: streams on the veth lab"]
fn every_frame_has_a_latency() {
    require_root("one-way latency");
    let _turn = serial();
    let lab = Lab::up("lt-lat", 1500);

    // Accounting only: one latency per received frame, percentiles in
    // order. How high they are depends on the load of this shared VM
    // (p99 4.2 ms to 28 ms measured with other builds on both cores), so
    // no bound on them is asserted here; the starved receiver's rise is a
    // measurement by hand (`by_hand_starved_receiver_latency_rises`, below).
    let calm = calm(&lab.name);
    assert_eq!(
        calm["latency"]["count"], calm["frames"]["received"],
        "one latency per received frame: {}",
        calm["latency"]
    );
    assert!(calm["frames"]["received"].as_u64().unwrap() > 0);
    assert_eq!(
        calm["latency"]["receive_time"], "per-batch",
        "the result says how receive times were taken: {}",
        calm["latency"]
    );
    let (p50, p99) = (us(&calm, "p50_us"), us(&calm, "p99_us"));
    assert!(p50 > 0.0 && p50 <= p99, "{}", calm["latency"]);
    assert!(us(&calm, "min_us") <= p50 && p99 <= us(&calm, "max_us"));
    assert!(us(&calm, "p90_us") <= p99 && p99 <= us(&calm, "p99_9_us"));

    // The table shows it too.
    let out = run(&[
        "stream",
        "--lab",
        &lab.name,
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

/// By hand (`cargo test --test latency -- --ignored`): frames that queue
/// behind a starved receiver wait far longer than paced ones. Timing, so
/// not in the suite: with one busy loop beside the receiver p50 4.7-5.4 ms
/// and p99 34-56 ms were measured, where a calm run's median is the
/// wake-up's (15 us-3.2 ms, the highest with other builds on both cores).
#[test]
#[ignore = "a measurement by hand: timing on a shared VM"]
fn by_hand_starved_receiver_latency_rises() {
    require_root("one-way latency");
    let _turn = serial();
    let lab = Lab::up("lt-lat", 1500);
    let calm = calm(&lab.name);
    // Starved: unpaced, the receiver (and its NAPI thread) on a core three
    // busy loops share: frames wait in the deepest RX ring behind it.
    let hogs: Vec<Hog> = (0..3).map(|_| Hog::on(1)).collect();
    let starved = stream(
        &lab.name,
        &[
            "--duration",
            "1s",
            "--warmup",
            "200ms",
            "--tx-cores",
            "0",
            "--rx-cores",
            "1",
            "--rx-wait",
            "wait",
            "--rx-ring",
            "16384",
            "--napi",
            "threaded",
        ],
    );
    drop(hogs);
    assert_eq!(starved["latency"]["count"], starved["frames"]["received"]);
    let (p50, p99) = (us(&calm, "p50_us"), us(&calm, "p99_us"));
    let (s50, s99) = (us(&starved, "p50_us"), us(&starved, "p99_us"));
    eprintln!("paced: p50 {p50} p99 {p99} us; starved: p50 {s50} p99 {s99} us");
    assert!(
        s50 > 2.0 * p50 && s99 > p99,
        "a starved receiver's latency rises: paced p50 {p50} p99 {p99} us, starved p50 {s50} p99 {s99} us"
    );
}
