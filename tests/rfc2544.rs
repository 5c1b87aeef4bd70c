//! `linerate rfc2544` on the lab: a run resumed on real frames, its
//! throughput beside `stream --search-rate`'s, and tests failed on a
//! one-queue veth. (The four tests at every frame size, their report and
//! MLRsearch's accounting run on the loopback engine without root:
//! control/tests/rfc2544_loopback.rs.)

mod common;

use std::{
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use common::*;
use nix::{
    sys::signal::{kill, Signal},
    unistd::Pid,
};
use serde_json::Value;

/// Short trials on a quiet path: receive work in softirq right after each
/// send (no NAPI thread a busy machine could deschedule while veth's queue
/// overflows).
const TRIAL: [&str; 4] = ["--trial", "200ms", "--napi", "softirq"];

fn records(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("whole records"))
        .collect()
}

fn tmpdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
#[ignore = "needs root: RFC 2544 runs on the veth lab"]
fn throughput_and_search_rate_find_a_rate_and_a_resumed_run_skips_finished_tests() {
    require_root("rfc2544 --resume");
    let _turn = serial();
    let lab = Lab::up("lt-rfr", 1500);
    let dir = tmpdir("rfc2544-resume");
    let d = dir.to_str().unwrap();

    // Cut short once its first test (throughput) is written whole.
    let mut args = vec!["rfc2544", "--lab", &lab.name, "--size", "256", "--out", d];
    args.extend(TRIAL);
    let mut child = Command::new(linerate())
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while records(&dir).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    let before = records(&dir);
    assert!(
        !before.is_empty(),
        "the throughput test finished within 2 minutes"
    );
    if before.len() < 4 {
        assert_eq!(status.code(), Some(130), "interrupted: exit 130");
    }
    let out = run(&["rfc2544", "--resume", d, "--json"]);
    assert!(
        out.status.success(),
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
    let found = json(&out)[0]["throughput"]["fps"].as_f64().unwrap();

    // The same search as `stream --search-rate` at the same size finds a
    // rate too. How close the two are is a measurement (2.2x apart once,
    // with other builds on both cores of this shared VM), not asserted
    // here: repeatable rfc2544 figures are issue 25's.
    let s = run(&[
        "stream",
        "--lab",
        &lab.name,
        "--size",
        "256",
        "--search-rate",
        "0",
        "--duration",
        "200ms",
        "--warmup",
        "200ms",
        "--napi",
        "softirq",
        "--json",
    ]);
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    let searched = json(&s)["ndr"]["fps"].as_f64().unwrap();
    let ratio = found / searched;
    eprintln!("rfc2544 throughput {found:.0} frames/s, stream --search-rate {searched:.0}: ratio {ratio:.2}");
    assert!(
        found > 0.0 && searched > 0.0,
        "both found a rate: {found} {searched}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs root: RFC 2544 runs on the veth lab"]
fn a_run_whose_tests_fail_says_how_many_and_exits_4() {
    require_root("rfc2544 failures");
    let _turn = serial();
    let lab = Lab::up("mz2", 1500);
    let dir = tmpdir("rfc2544-failed");
    let d = dir.to_str().unwrap();
    // The lab's veths have one queue, named as interfaces (not the lab,
    // which would be recreated with the queues asked): every test fails.
    let (tx, txns, rx, rxns) = (lab.if_a(), lab.ns_a(), lab.if_b(), lab.ns_b());
    let mut args = vec![
        "rfc2544",
        "--tx-iface",
        &tx,
        "--tx-netns",
        &txns,
        "--rx-iface",
        &rx,
        "--rx-netns",
        &rxns,
        "--size",
        "64",
        "--queues",
        "2",
        "--quick",
        "--out",
        d,
    ];
    args.extend(TRIAL);
    let out = run(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("linerate: error: 4 of 4 test(s) failed (the first: 64 B throughput: ")
            && stderr.contains(&format!(
                "the report shows them as failed; `linerate rfc2544 --resume {d}` runs again those that did not finish"
            )),
        "{stderr}"
    );
    let r = records(&dir);
    assert_eq!(r.len(), 4);
    assert!(r.iter().all(|r| r["error"].is_string()), "{r:?}");
    assert!(
        dir.join("report.md").exists(),
        "the report is written all the same"
    );
    let _ = std::fs::remove_dir_all(dir);
}
