//! `linerate rfc2544`: the four tests of RFC 2544 at every frame size into
//! a report directory, resumable, its throughput that of `stream
//! --search-rate`.

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
fn quick_run_reports_all_four_tests_for_every_frame_size() {
    if !root_or_skip("rfc2544 --quick") {
        return;
    }
    let _turn = serial();
    let lab = Lab::up("lt-rfc", 1500);
    let dir = tmpdir("rfc2544-quick");
    let d = dir.to_str().unwrap();
    let mut args = vec![
        "rfc2544", "--lab", &lab.name, "--quick", "--out", d, "--json",
    ];
    args.extend(TRIAL);
    let started = Instant::now();
    let out = run(&args);
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("at most about"),
        "the estimate first: {stderr}"
    );
    let sizes = json(&out);
    let sizes = sizes.as_array().unwrap();
    let want = [64, 128, 256, 512, 1024, 1280, 1518];
    assert_eq!(
        sizes
            .iter()
            .map(|s| s["frame_size"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        want
    );
    for s in sizes {
        let size = &s["frame_size"];
        let t = &s["throughput"];
        assert!(t["fps"].as_f64().unwrap() > 0.0, "{size}: {t}");
        assert!(
            t["trials"].as_array().unwrap().len() <= 6,
            "quick: 1 + 5 trials"
        );
        let l = &s["latency"];
        let h = &l["latency"];
        assert!(h["count"].as_u64().unwrap() > 0, "{size}: {l}");
        assert_eq!(l["rfc_us"], h["mean_us"]);
        assert!(h["min_us"].as_f64() <= h["p99_us"].as_f64());
        let steps = s["frame_loss"]["steps"].as_array().unwrap();
        // Until two steps in a row lose nothing (or all ten ran).
        let clean = |st: &Value| st[1]["sent"] == st[1]["received"];
        let n = steps.len();
        assert!(
            n == 10 || (n >= 2 && clean(&steps[n - 1]) && clean(&steps[n - 2])),
            "{size}: {steps:?}"
        );
        assert!(
            n < 3 || !(clean(&steps[n - 2]) && clean(&steps[n - 3])),
            "it stops at the first two"
        );
        assert_eq!(steps[0][0], 100.0);
        let b = &s["back_to_back"];
        let bursts = b["bursts"].as_array().unwrap();
        assert!(!bursts.is_empty(), "{size}: {b}");
        // A whole burst arrived whole: every frame sent was received.
        for burst in bursts {
            if burst[2] == true {
                let per_queue = burst[0].as_u64().unwrap();
                assert_eq!(burst[1]["sent"], per_queue);
                assert_eq!(burst[1]["received"], per_queue);
            }
        }
        if let Some(longest) = b["longest_frames"].as_u64() {
            assert!(bursts.iter().any(|x| x[2] == true && x[0] == longest));
            assert!(b["longest_s"].as_f64().unwrap() > 0.0);
        }
        assert_eq!(s["errors"].as_array().unwrap().len(), 0, "{size}: {s}");
    }
    // The report: every test's table, a row per size; the figure; the CSV.
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for head in [
        "## Throughput (RFC 2544 26.1)",
        "## Latency at the throughput rate (RFC 2544 26.2)",
        "## Frame loss rate (RFC 2544 26.3)",
        "## Back-to-back frames (RFC 2544 26.4)",
    ] {
        assert!(md.contains(head), "{head}");
    }
    for s in want {
        assert_eq!(
            md.matches(&format!("\n| {s} | ")).count(),
            4,
            "{s} B: a row in each table"
        );
    }
    let svg = std::fs::read_to_string(dir.join("rfc2544.svg")).unwrap();
    assert!(svg.contains("10 GbE line rate") && svg.contains("25 GbE line rate"));
    let csv = std::fs::read_to_string(dir.join("rfc2544.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + want.len());
    assert_eq!(
        records(&dir).len(),
        4 * want.len(),
        "one record per test and size"
    );
    // `linerate report` rewrites the same tables from the records alone.
    let again = run(&["report", d]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(String::from_utf8_lossy(&again.stdout).contains("## Back-to-back frames"));
    eprintln!("rfc2544 --quick with 200 ms trials took {took:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn throughput_and_search_rate_find_a_rate_and_a_resumed_run_skips_finished_tests() {
    if !root_or_skip("rfc2544 --resume") {
        return;
    }
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
    let searched = json(&s)["found"]["receiver"]["frames_per_s"]
        .as_f64()
        .unwrap();
    let ratio = found / searched;
    eprintln!("rfc2544 throughput {found:.0} frames/s, stream --search-rate {searched:.0}: ratio {ratio:.2}");
    assert!(
        found > 0.0 && searched > 0.0,
        "both found a rate: {found} {searched}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_whose_tests_fail_says_how_many_and_exits_4() {
    if !root_or_skip("rfc2544 failures") {
        return;
    }
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
