//! Gates for CI: `--expect 'METRIC OP VALUE'` on stream and rr, on the lab
//! (root): each expectation printed met or unmet with the value measured,
//! exit 4 when any is unmet, 0 when all are met; a bad one refused before
//! anything runs (exit 2). (`report --compare --fail-if-worse` is in
//! control/tests/report.rs.)

mod common;

use common::*;

/// A counted, paced stream of 2,000 frames with these gates.
fn gated_stream(lab: &str, gates: &[&str]) -> std::process::Output {
    let mut args = vec![
        "stream",
        "--lab",
        lab,
        "--count",
        "2000",
        "--rate",
        "50000",
        "--warmup",
        "0s",
        "--duration",
        "30s",
        "--napi",
        "softirq",
        "--tx-engine",
        "backend",
        "--json",
    ];
    for g in gates {
        args.extend(["--expect", g]);
    }
    run(&args)
}

#[test]
#[ignore = "needs root: gates judge streams and rr run on the veth lab"]
fn expectations_gate_stream_and_rr() {
    require_root("--expect on the lab");
    let _turn = serial();
    let lab = Lab::up("tgate", 1500);
    // Met: exactly the frames counted, none lost. stdout stays the JSON.
    let out = gated_stream(&lab.name, &["frames.received == 2000", "frames.lost <= 0"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(json(&out)["frames"]["received"], 2000);
    assert!(
        err.contains("expect frames.received == 2000: met (measured 2000)"),
        "{err}"
    );
    assert!(
        err.contains("expect frames.lost <= 0: met (measured 0)"),
        "{err}"
    );
    // One unmet of two: exit 4, the value measured named.
    let out = gated_stream(&lab.name, &["frames.received >= 1k", "frames.sent > 2000"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains("expect frames.received >= 1000: met (measured 2000)"),
        "{err}"
    );
    assert!(
        err.contains("expect frames.sent > 2000: UNMET (measured 2000)"),
        "{err}"
    );
    assert!(
        err.contains("1 of 2 expectation(s) unmet (exit 4)"),
        "{err}"
    );
    // rr: transactions counted; an rr figure on a stream refused first.
    let out = run(&[
        "rr",
        "--lab",
        &lab.name,
        "--count",
        "500",
        "--warmup",
        "0s",
        "--duration",
        "30s",
        "--expect",
        "transactions.total == 500",
        "--expect",
        "latency.p99_us < 1e9",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("expect transactions.total == 500: met (measured 500)"),
        "{err}"
    );
    for (gate, why) in [
        (
            "transactions.per_s >= 1",
            "a figure of rr results, not of stream",
        ),
        ("receiver.frames_per_s 5", "has no operator"),
        ("no.such >= 1", "is not a metric linerate knows"),
    ] {
        let out = gated_stream(&lab.name, &[gate]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{gate}: {err}");
        assert!(err.contains(why), "{gate}: {err}");
        assert!(out.stdout.is_empty(), "{gate}: ran anyway");
    }
}

/// A gate on a figure the run did not measure is unmet, never met on the
/// zero its field holds: a --tx-only run has no receiver of ours, so no
/// loss and nothing received (exit 4); what it sent is measured.
#[test]
#[ignore = "needs root: gates judge streams and rr run on the veth lab"]
fn a_tx_only_run_meets_no_gate_on_what_a_receiver_counts() {
    require_root("--tx-only --expect on the lab");
    let _turn = serial();
    let lab = Lab::up("tgtxo", 1500);
    let out = run(&[
        "stream",
        "--lab",
        &lab.name,
        "--tx-only",
        "--count",
        "1000",
        "--rate",
        "50000",
        "--warmup",
        "0s",
        "--duration",
        "30s",
        "--napi",
        "softirq",
        "--tx-engine",
        "backend",
        "--json",
        "--expect",
        "frames.lost == 0",
        "--expect",
        "frames.loss_pct <= 0",
        "--expect",
        "frames.sent == 1000",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    for gate in ["frames.lost == 0", "frames.loss_pct <= 0"] {
        assert!(
            err.contains(&format!("expect {gate}: UNMET (not measured in this run)")),
            "{err}"
        );
    }
    assert!(
        err.contains("expect frames.sent == 1000: met (measured 1000)"),
        "{err}"
    );
    assert!(
        err.contains("2 of 3 expectation(s) unmet (exit 4)"),
        "{err}"
    );
}

#[test]
#[ignore = "needs root: gates judge streams and rr run on the veth lab"]
fn json_stream_writes_a_line_per_interval_then_the_result() {
    require_root("--json-stream on the lab");
    let _turn = serial();
    let lab = Lab::up("tjstr", 1500);
    let out = run(&[
        "stream",
        "--lab",
        &lab.name,
        "--count",
        "40000",
        "--rate",
        "20000",
        "--warmup",
        "0s",
        "--duration",
        "30s",
        "--napi",
        "softirq",
        "--tx-engine",
        "backend",
        "--json-stream",
        "--interval",
        "200ms",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lines.first().unwrap()["event"], "start", "{text}");
    assert_eq!(lines[0]["data"]["interval_s"], 0.2);
    let end = lines.last().unwrap();
    assert_eq!(end["event"], "end", "{text}");
    assert_eq!(end["data"]["frames"]["received"], 40000);
    let intervals: Vec<&serde_json::Value> = lines[1..lines.len() - 1].iter().collect();
    assert!(!intervals.is_empty(), "{text}");
    let mut rx_frames = 0;
    for i in &intervals {
        assert_eq!(i["event"], "interval", "{text}");
        assert_eq!(i["data"]["phase"], "window");
        rx_frames += i["data"]["rx"]["counters"]["frames"].as_u64().unwrap();
    }
    // The intervals count what the receivers counted, never more.
    assert!(rx_frames > 0 && rx_frames <= 40000, "{rx_frames}");
    // With --json, or across two hosts: refused before the run.
    let out = run(&["stream", "--lab", &lab.name, "--json-stream", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&[
        "stream",
        "--lab",
        &lab.name,
        "--json-stream",
        "--interval",
        "1ms",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("use 100ms to 1h"));
}

/// A sweep of two paced points, one run each (a window of its own: a
/// counted point's frames may all be sent before its window opens).
const TWO_POINTS: &str = r#"
name = "gates"
title = "Two paced points"
kind = "stream"
repeats = 1

[fixed]
warmup = "0.2s"
duration = "1s"
rate = 20000
napi = "softirq"
tx_engine = "backend"

[[axis]]
name = "size"
values = [64, 512]

[[table]]
title = "Frames"
rows = "size"
metrics = ["frames.received"]
"#;

#[test]
#[ignore = "needs root: gates judge streams and rr run on the veth lab"]
fn sweep_expectations_hold_every_points_median() {
    require_root("sweep --expect on the lab");
    let _turn = serial();
    let lab = Lab::up("tgswp", 1500);
    let dir = std::env::temp_dir().join(format!("linerate-gates-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("two.toml");
    std::fs::write(&file, TWO_POINTS).unwrap();
    let sweep = |out: &str, gate: &str| {
        run(&[
            "sweep",
            file.to_str().unwrap(),
            "--lab",
            &lab.name,
            "--out",
            dir.join(out).to_str().unwrap(),
            "--expect",
            gate,
        ])
    };
    let out = sweep("met", "params.rate_pps == 20k");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    for size in [64, 512] {
        let line =
            format!("part 1 size={size}: expect params.rate_pps == 20000: met (measured 20000)");
        assert!(err.contains(&line), "{err}");
    }
    // Unmet at every point: exit 4, each point named.
    let out = sweep("unmet", "frames.received > 1e12");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains("2 of 2 expectation(s) unmet (exit 4)"),
        "{err}"
    );
    // A figure no part has: refused before anything runs.
    let out = sweep("never", "transactions.per_s >= 1");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no part of this sweep has"));
    assert!(!dir.join("never").join("results.jsonl").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
