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

/// NDR <= PDR (the loads found; the PDR tolerates more), each backed by
/// full-length trials at its load, at least half of whose time met its
/// loss (MLRsearch's exceed ratio 0.5), with the accounting of each.
fn ndr_and_pdr_hold(t: &Value) {
    let (ndr, pdr) = (&t["ndr"], &t["pdr"]);
    assert!(ndr.is_object() && pdr.is_object(), "{t}");
    let load = |r: &Value| r["offered_pps"].as_f64().unwrap_or(f64::INFINITY);
    assert!(load(ndr) <= load(pdr), "NDR <= PDR: {t}");
    assert!(ndr["fps"].as_f64().unwrap() > 0.0);
    let full = t["trials"][0]["duration_s"].as_f64().unwrap();
    for r in [ndr, pdr] {
        let loss = r["loss_pct"].as_f64().unwrap();
        let trials = r["trials"].as_array().unwrap();
        assert!(!trials.is_empty(), "{r}");
        let mut met = 0;
        for x in trials {
            assert_eq!(x["duration_s"].as_f64().unwrap(), full, "full-length: {x}");
            assert_eq!(x["offered_pps"], r["offered_pps"], "at its load: {x}");
            assert!(x["received"].as_u64() <= x["sent"].as_u64(), "{x}");
            let ok = x["loss_pct"].as_f64().unwrap() <= loss;
            assert_eq!(x["pass"].as_bool().unwrap(), ok, "{x}");
            met += usize::from(ok);
        }
        assert!(2 * met >= trials.len(), "at least half met {loss} %: {r}");
        let fps: Vec<f64> = trials
            .iter()
            .map(|x| x["received_fps"].as_f64().unwrap())
            .collect();
        let (lo, hi) = (
            r["fps_min"].as_f64().unwrap(),
            r["fps_max"].as_f64().unwrap(),
        );
        assert_eq!(lo, fps.iter().copied().fold(f64::MAX, f64::min));
        assert_eq!(hi, fps.iter().copied().fold(0.0, f64::max));
        let m = r["fps"].as_f64().unwrap();
        assert!(lo <= m && m <= hi, "the median within its range: {r}");
    }
}

fn tmpdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
#[ignore = "needs root: RFC 2544 runs on the veth lab"]
fn quick_run_reports_all_four_tests_for_every_frame_size() {
    require_root("rfc2544 --quick");
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
    assert!(
        stderr.contains("at most about"),
        "the estimate first: {stderr}"
    );
    let sizes = json(&out);
    let sizes = sizes.as_array().unwrap();
    let want = [64, 128, 256, 512, 1024, 1280, 1518];
    let mut not_reached = 0;
    assert_eq!(
        sizes
            .iter()
            .map(|s| s["frame_size"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        want
    );
    // A test that failed at a size (a machine too busy to carry its
    // trials, after a latency trial's retries) is accounted for as a
    // failure: named in the size's errors, in the report, and by the exit
    // status (4); the others are checked whole.
    let failed = |s: &Value| -> Vec<String> {
        s["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e[0].as_str().unwrap().to_string())
            .collect()
    };
    let failures: usize = sizes.iter().map(|s| failed(s).len()).sum();
    if failures == 0 {
        assert!(out.status.success(), "{stderr}");
    } else {
        assert_eq!(out.status.code(), Some(4), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "linerate: error: {failures} of {} test(s) failed",
                4 * want.len()
            )),
            "{stderr}"
        );
    }
    // All four tests checked whole at some size at least.
    assert!(
        sizes.iter().any(|s| failed(s).is_empty()),
        "every size had a test fail: {stderr}"
    );
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for s in sizes {
        let size = &s["frame_size"];
        let failed = failed(s);
        for test in &failed {
            assert!(s[test.replace(['-', ' '], "_")].is_null(), "{size}: {s}");
            assert!(md.contains(&format!("\n{test} failed: ")), "{test}: {md}");
        }
        let ran = |test: &str| !failed.iter().any(|t| t == test);
        let t = &s["throughput"];
        if ran("throughput") {
            assert!(t["fps"].as_f64().unwrap() > 0.0, "{size}: {t}");
            assert_eq!(t["search"], "mlr");
            assert!(
                t["trials"].as_array().unwrap().len() <= 25,
                "quick: 1 + 24 trials at most"
            );
            ndr_and_pdr_hold(t);
            assert_eq!(t["fps"], t["ndr"]["fps"], "the throughput is the NDR");
        }
        let l = &s["latency"];
        if ran("latency") && ran("throughput") {
            let h = &l["latency"];
            assert!(h["count"].as_u64().unwrap() > 0, "{size}: {l}");
            assert_eq!(l["rfc_us"], h["mean_us"]);
            assert!(h["min_us"].as_f64() <= h["p99_us"].as_f64());
        }
        if ran("frame loss") && ran("throughput") {
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
        }
        if !(ran("back-to-back") && ran("throughput")) {
            continue;
        }
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
        // RFC 9004: searched for several times; when no burst was lost
        // the benchmark is not reached, and says so instead of a number.
        assert_eq!(b["searches"].as_array().unwrap().len(), 3, "{size}: {b}");
        let cap = b["cap_frames"].as_u64().unwrap();
        if bursts.iter().all(|x| x[2] == true) {
            assert_eq!(
                b["not_reached"].as_str().unwrap(),
                format!(
                    "not reached: no loss up to {cap} frames ({:.0} us)",
                    cap as f64 / b["rate_fps"].as_f64().unwrap() * 1e6
                ),
                "{size}: {b}"
            );
            assert!(b["longest_frames"].is_null(), "{size}: {b}");
            not_reached += 1;
        } else {
            assert!(b["not_reached"].is_null(), "{size}: {b}");
        }
        if let Some(longest) = b["longest_frames"].as_u64() {
            // The median of the searches, each a burst that arrived whole.
            let queues = 1;
            assert!(bursts
                .iter()
                .any(|x| x[2] == true && x[0].as_u64().unwrap() * queues == longest));
            assert!(b["longest_s"].as_f64().unwrap() > 0.0);
        }
    }
    // The report: every test's table, a row per size; the figure; the CSV.
    for head in [
        "## Throughput (RFC 2544 26.1): NDR and PDR",
        "## Latency at the throughput rate (RFC 2544 26.2)",
        "## Frame loss rate (RFC 2544 26.3)",
        "## Back-to-back frames (RFC 2544 26.4, RFC 9004)",
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
    assert!(md.contains("| frame size | NDR frames/s | NDR range | NDR Gbit/s | PDR frames/s |"));
    assert_eq!(
        md.matches("not reached: no loss up to").count(),
        not_reached,
        "the table says so where the JSON does"
    );
    assert!(md.contains("Sent by: "), "the engine is named");
    let svg = std::fs::read_to_string(dir.join("rfc2544.svg")).unwrap();
    assert!(svg.contains("10 GbE line rate") && svg.contains("25 GbE line rate"));
    assert!(svg.contains("NDR (no loss)") && svg.contains("PDR"));
    for png in ["rfc2544.png", "rfc2544-gbit.png"] {
        let bytes = std::fs::read(dir.join(png)).unwrap();
        assert!(bytes.starts_with(b"\x89PNG"), "{png}");
    }
    let csv = std::fs::read_to_string(dir.join("rfc2544.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + want.len());
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    for col in [
        "ndr_fps",
        "ndr_gbit_s",
        "ndr_trials_fps",
        "pdr_fps",
        "pdr_gbit_s",
        "pdr_trials_fps",
    ] {
        assert!(head.contains(&col), "{col}: {head:?}");
    }
    for (row, s) in csv.lines().skip(1).zip(sizes) {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells.len(), head.len(), "{row}");
        let cell = |c: &str| cells[head.iter().position(|h| *h == c).unwrap()];
        if let Some(ndr) = s["throughput"]["ndr"]["fps"].as_f64() {
            assert_eq!(cell("ndr_fps"), format!("{ndr:.6}"));
        }
    }
    // rfc2544.json: each size's NDR and PDR with their trials.
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("rfc2544.json")).unwrap()).unwrap();
    let results = saved["results"].as_array().unwrap();
    assert_eq!(results.len(), want.len());
    for (r, s) in results.iter().zip(sizes) {
        assert_eq!(r["frame_size"], s["frame_size"]);
        assert_eq!(r["ndr_fps"], s["throughput"]["ndr"]["fps"]);
        assert_eq!(r["pdr_fps"], s["throughput"]["pdr"]["fps"]);
        assert_eq!(
            r["ndr_trials_fps"].as_array().map_or(0, Vec::len),
            s["throughput"]["ndr"]["trials"]
                .as_array()
                .map_or(0, Vec::len)
        );
    }
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
