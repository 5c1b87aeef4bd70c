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

#[test]
fn every_frame_has_a_latency_and_a_starved_receiver_shows_it() {
    if !root_or_skip("one-way latency") {
        return;
    }
    let _turn = serial();
    let lab = Lab::up("lt-lat", 1500);

    // Paced far below what the lab carries (10,000 frames/s, where it
    // carries over 100,000 even with a busy loop beside the receiver):
    // frames never queue, so the latency is the path's plus the
    // receiver's wake-up from poll(): p50 15-40 us here when the VM is
    // quiet. The bound on p99 is 50 ms, not 5: with other builds keeping
    // both cores of this shared 2-core VM busy (load average 4-8) the
    // receiver waits for its core, and p99 measured 4.2, 4.4, 5.9, 13.7
    // and once 28 ms. A frame that queued behind a starved receiver waits
    // far longer (below).
    let calm = stream(
        &lab.name,
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
    );
    assert_eq!(
        calm["latency"]["count"], calm["frames"]["received"],
        "one latency per received frame: {}",
        calm["latency"]
    );
    assert!(calm["frames"]["received"].as_u64().unwrap() > 5_000);
    let (p50, p99) = (us(&calm, "p50_us"), us(&calm, "p99_us"));
    assert!(p50 > 0.0 && p50 <= p99, "{}", calm["latency"]);
    assert!(p99 < 50_000.0, "p99 {p99} us paced far below capacity");
    assert!(us(&calm, "min_us") <= p50 && p99 <= us(&calm, "max_us"));

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
    let (s50, s99) = (us(&starved, "p50_us"), us(&starved, "p99_us"));
    eprintln!("paced: p50 {p50} p99 {p99} us; starved: p50 {s50} p99 {s99} us");
    // Compared as ratios, generous: frames queue behind the busy loops
    // (with one loop: p50 4.7-5.4 ms, p99 34-56 ms measured), where a calm
    // run's median is the wake-up's (15 us-3.2 ms measured, the highest
    // with other builds hogging both cores) and its tail the scheduler's.
    assert!(
        s50 > 2.0 * p50 && s99 > p99,
        "a starved receiver's latency rises: paced p50 {p50} p99 {p99} us, starved p50 {s50} p99 {s99} us"
    );

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
