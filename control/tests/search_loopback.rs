//! `stream --search-rate` and `rfc2544 --resume` on the loopback engine,
//! with no root. The loopback link has no capacity of its own, so loss
//! injected on it (`--inject-loss`, every Nth frame) is the same at every
//! load: what is asserted is the search's structure and the exact
//! accounting of each trial, not a rate. (Moved from the root package's
//! tests/search.rs and tests/rfc2544.rs; the latter keeps a resumed run on
//! real frames.)

mod common;

use std::{
    path::Path,
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use common::*;
use nix::{
    sys::signal::{kill, Signal},
    unistd::Pid,
};
use serde_json::Value;

fn search(extra: &[&str]) -> Value {
    let mut args = vec![
        "stream",
        "--backend",
        "loopback",
        "--size",
        "64",
        "--duration",
        "300ms",
        "--warmup",
        "0s",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = run(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out)
}

/// Every trial lost exactly one frame in `every` of those it sent (the
/// window may start anywhere in the link's count: rounded either way),
/// and its loss is that share.
fn each_trial_lost_one_in(r: &Value, every: u64) {
    for t in r["trials"].as_array().unwrap() {
        let (sent, received) = (t["sent"].as_u64().unwrap(), t["received"].as_u64().unwrap());
        let lost = sent - received;
        assert!(
            lost == sent / every || lost == sent.div_ceil(every),
            "{lost} of {sent}: {t}"
        );
        let pct = t["loss_pct"].as_f64().unwrap();
        assert!(
            (pct - lost as f64 * 100.0 / sent as f64).abs() < 1e-9,
            "{t}"
        );
    }
}

#[test]
fn binary_search_stops_at_the_first_trial_that_passes_and_reports_none_when_none_does() {
    // A tolerance nothing exceeds: the unpaced trial passes, and is the result.
    let r = search(&["--search", "binary", "--search-rate", "99.9"]);
    let trials = r["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 1, "{r}");
    assert!(
        trials[0]["offered_pps"].is_null(),
        "the first trial is unpaced"
    );
    assert_eq!(trials[0]["pass"], true);
    assert_eq!(trials[0]["sent"], trials[0]["received"]);
    let found = &r["found"];
    assert_eq!(found["test"], "stream");
    assert!(found["receiver"]["frames_per_s"].as_f64().unwrap() > 0.0);

    // One frame in 5 dropped at every rate: no rate is within 1 %, and the
    // search narrows the interval (every paced trial slower than the last
    // failed one) before it gives up.
    let r = search(&[
        "--search",
        "binary",
        "--search-rate",
        "1",
        "--inject-loss",
        "20",
    ]);
    let trials = r["trials"].as_array().unwrap();
    assert!(r["found"].is_null(), "{r}");
    assert!(trials.len() >= 5 && trials.len() <= 11, "{}", trials.len());
    assert!(trials.iter().all(|t| t["pass"] == false), "{r}");
    each_trial_lost_one_in(&r, 5);
    let offered: Vec<f64> = trials[1..]
        .iter()
        .map(|t| t["offered_pps"].as_f64().unwrap())
        .collect();
    assert!(
        offered.windows(2).all(|w| w[1] < w[0]),
        "halving: {offered:?}"
    );
}

#[test]
fn mlrsearch_with_loss_at_every_load_finds_the_pdr_and_no_ndr() {
    // 1 % lost at every load: no load meets 0 % (no NDR), the first
    // (the maximum) meets 2 % (the PDR there).
    let r = search(&["--search-rate", "2", "--inject-loss", "1"]);
    assert_eq!(r["search"], "mlr", "{r}");
    assert_eq!(
        (r["ndr_loss_pct"].as_f64(), r["pdr_loss_pct"].as_f64()),
        (Some(0.0), Some(2.0))
    );
    assert!(r["ndr"].is_null(), "{r}");
    let pdr = &r["pdr"];
    assert_eq!(pdr["loss_pct"], 2.0, "{pdr}");
    assert_eq!(pdr["offered_pps"], r["max_load_pps"], "{pdr}");
    assert_eq!(pdr["within_width"], true, "{pdr}");
    each_trial_lost_one_in(&r, 100);
    let trials = r["trials"].as_array().unwrap();
    // First the unpaced trial (the maximum load), full length; then short
    // trials walking down for the NDR, each load below the last, to the
    // lowest; full-length trials confirm.
    let (first, full) = (
        r["initial_duration_s"].as_f64().unwrap(),
        r["final_duration_s"].as_f64().unwrap(),
    );
    assert!(trials[0]["offered_pps"].is_null());
    assert_eq!(trials[0]["duration_s"].as_f64(), Some(full));
    let short: Vec<f64> = trials
        .iter()
        .skip(1)
        .take_while(|t| t["duration_s"].as_f64() == Some(first))
        .map(|t| t["offered_pps"].as_f64().unwrap())
        .collect();
    assert!(short.len() >= 3, "{r}");
    assert!(short.windows(2).all(|w| w[1] < w[0]), "{short:?}");
    for t in trials {
        let d = t["duration_s"].as_f64().unwrap();
        assert!(first <= d && d <= full, "{t}");
    }
    let last = trials.last().unwrap();
    assert_eq!(last["duration_s"].as_f64(), Some(full), "{last}");
}

fn records(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("whole records"))
        .collect()
}

#[test]
fn a_resumed_rfc2544_run_skips_finished_tests() {
    let dir = tmp("rfc2544-resume-lo");
    let d = dir.to_str().unwrap();
    // Cut short once its first test (throughput) is written whole.
    let mut child = Command::new(linerate())
        .args([
            "rfc2544",
            "--backend",
            "loopback",
            "--size",
            "256",
            "--quick",
            "--trial",
            "200ms",
            "--out",
            d,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while records(&dir).is_empty() {
        assert!(Instant::now() < deadline, "no test finished in 2 minutes");
        thread::sleep(Duration::from_millis(20));
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    let before = records(&dir);
    if before.len() < 4 {
        assert_eq!(status.code(), Some(130), "interrupted: exit 130");
    }
    let out = run(&["rfc2544", "--resume", d, "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = records(&dir);
    assert_eq!(after.len(), 4, "every test once: {after:?}");
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "finished tests kept, not rerun"
    );
    let points: Vec<u64> = after.iter().map(|r| r["point"].as_u64().unwrap()).collect();
    assert_eq!(points, [0, 1, 2, 3]);
    let sizes = json(&out);
    assert_eq!(sizes[0]["frame_size"], 256);
    assert!(sizes[0]["throughput"]["fps"].as_f64().unwrap() > 0.0);
    assert_eq!(sizes[0]["errors"], serde_json::json!([]));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn search_rate_out_of_range_is_refused() {
    let out = run(&["stream", "--search-rate", "100"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("invalid value '100' for '--search-rate <PERCENT>': \"100\" is out of range"),
        "{err}"
    );
    let out = run(&["stream", "--search-rate", "1", "--rate", "5"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
