//! Gates for CI on the loopback engine, with no root: `--expect 'METRIC
//! OP VALUE'` printed met or unmet with the value measured, exit 4 when
//! any is unmet, 0 when all are met, a bad one refused before anything
//! runs (exit 2); a sweep's gates held against every point; `--json-stream`
//! lines. (Moved from the root package's tests/gates.rs, which keeps the
//! gates of rr and of a --tx-only run, neither of which the loopback
//! runs.)

mod common;

use std::fs;

use common::*;

/// A counted, paced loopback stream of 2,000 frames with these gates.
fn gated_stream(gates: &[&str]) -> std::process::Output {
    let mut args = vec![
        "stream",
        "--backend",
        "loopback",
        "--count",
        "2000",
        "--rate",
        "50000",
        "--warmup",
        "0s",
        "--duration",
        "30s",
        "--json",
    ];
    for g in gates {
        args.extend(["--expect", g]);
    }
    run(&args)
}

#[test]
fn expectations_gate_a_stream() {
    // Met: exactly the frames counted, none lost. stdout stays the JSON.
    let out = gated_stream(&["frames.received == 2000", "frames.lost <= 0"]);
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
    let out = gated_stream(&["frames.received >= 1k", "frames.sent > 2000"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert_eq!(json(&out)["frames"]["sent"], 2000);
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
}

#[test]
fn a_bad_expectation_is_refused_before_the_run() {
    for (gate, why) in [
        (
            "transactions.per_s >= 1",
            "a figure of rr results, not of stream",
        ),
        ("receiver.frames_per_s 5", "has no operator"),
        ("no.such >= 1", "is not a metric linerate knows"),
    ] {
        let out = gated_stream(&[gate]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{gate}: {err}");
        assert!(err.contains(why), "{gate}: {err}");
        assert!(out.stdout.is_empty(), "{gate}: ran anyway");
    }
}

#[test]
fn json_stream_writes_a_line_per_interval_then_the_result() {
    let out = run(&[
        "stream",
        "--backend",
        "loopback",
        "--count",
        "40000",
        "--rate",
        "20000",
        "--warmup",
        "0s",
        "--duration",
        "30s",
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
    assert_eq!(end["data"]["frames"]["sent"], 40000);
    assert_eq!(end["data"]["frames"]["received"], 40000);
    let intervals = &lines[1..lines.len() - 1];
    assert!(!intervals.is_empty(), "{text}");
    let mut rx_frames = 0;
    for i in intervals {
        assert_eq!(i["event"], "interval", "{text}");
        assert_eq!(i["data"]["phase"], "window");
        rx_frames += i["data"]["rx"]["counters"]["frames"].as_u64().unwrap();
    }
    // The intervals count what the receivers counted, never more.
    assert!(rx_frames > 0 && rx_frames <= 40000, "{rx_frames}");
    // With --json, or an interval out of range: refused before the run.
    let out = run(&["stream", "--backend", "loopback", "--json-stream", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let out = run(&[
        "stream",
        "--backend",
        "loopback",
        "--json-stream",
        "--interval",
        "1ms",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("use 100ms to 1h"));
}

/// A sweep of two paced loopback points, one run each.
const TWO_POINTS: &str = r#"
name = "gates"
title = "Two paced points"
kind = "stream"
repeats = 1

[fixed]
backend = "loopback"
warmup = "0.1s"
duration = "0.3s"
rate = 20000

[[axis]]
name = "size"
values = [64, 512]

[[table]]
title = "Frames"
rows = "size"
metrics = ["frames.received"]
"#;

#[test]
fn sweep_expectations_hold_every_points_median() {
    let dir = tmp("gates-sweep");
    fs::create_dir_all(&dir).unwrap();
    let file = dir.join("two.toml");
    fs::write(&file, TWO_POINTS).unwrap();
    let sweep = |out: &str, gate: &str| {
        run(&[
            "sweep",
            file.to_str().unwrap(),
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
    // Unmet at every point: exit 4, each point named, each run recorded.
    let out = sweep("unmet", "frames.received > 1e12");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    for size in [64, 512] {
        assert!(
            err.contains(&format!(
                "part 1 size={size}: expect frames.received > 1000000000000: UNMET (measured "
            )),
            "{err}"
        );
    }
    assert!(
        err.contains("2 of 2 expectation(s) unmet (exit 4)"),
        "{err}"
    );
    let recorded = fs::read_to_string(dir.join("unmet/results.jsonl")).unwrap();
    assert_eq!(recorded.lines().count(), 2);
    // A figure no part has: refused before anything runs.
    let out = sweep("never", "transactions.per_s >= 1");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no part of this sweep has"));
    assert!(!dir.join("never").join("results.jsonl").exists());
    let _ = fs::remove_dir_all(&dir);
}
