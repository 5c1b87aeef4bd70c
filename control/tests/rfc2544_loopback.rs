//! `linerate rfc2544` on the loopback engine, with no root: the four
//! tests of RFC 2544 at every frame size into a report directory (tables,
//! figure, CSV, JSON, records), MLRsearch's NDR and PDR each backed by
//! its trials' accounting, and `report` rewriting the same tables.
//! (Moved from the root package's tests/rfc2544.rs, which keeps a
//! resumed run on real frames and failed tests on a one-queue veth.)

mod common;

use std::{path::Path, time::Instant};

use common::*;
use serde_json::Value;

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

#[test]
fn quick_run_reports_all_four_tests_for_every_frame_size() {
    let dir = tmp("rfc2544-quick");
    let d = dir.to_str().unwrap();
    let args = [
        "rfc2544",
        "--backend",
        "loopback",
        "--quick",
        "--trial",
        "200ms",
        "--out",
        d,
        "--json",
    ];
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
    assert_eq!(
        sizes
            .iter()
            .map(|s| s["frame_size"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        want
    );
    // In memory nothing is too busy to carry its trials: every test of
    // every size finishes (exit 0), none named in a size's errors.
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for s in sizes {
        assert_eq!(s["errors"], serde_json::json!([]), "{s}");
    }
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let not_reached = sizes.iter().filter(|s| check_size(s)).count();
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
    eprintln!(
        "rfc2544 --quick on the loopback engine with 200 ms trials took {took:?} (not asserted)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// One size's four tests checked whole; whether its back-to-back
/// benchmark was not reached (no burst lost).
fn check_size(s: &Value) -> bool {
    let size = &s["frame_size"];
    let t = &s["throughput"];
    {
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
    {
        let h = &l["latency"];
        assert!(h["count"].as_u64().unwrap() > 0, "{size}: {l}");
        assert_eq!(l["rfc_us"], h["mean_us"]);
        assert!(h["min_us"].as_f64() <= h["p99_us"].as_f64());
    }
    {
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
    let not_reached = bursts.iter().all(|x| x[2] == true);
    if not_reached {
        assert_eq!(
            b["not_reached"].as_str().unwrap(),
            format!(
                "not reached: no loss up to {cap} frames ({:.0} us)",
                cap as f64 / b["rate_fps"].as_f64().unwrap() * 1e6
            ),
            "{size}: {b}"
        );
        assert!(b["longest_frames"].is_null(), "{size}: {b}");
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
    not_reached
}
