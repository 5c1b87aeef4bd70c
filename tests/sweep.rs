//! Sweeps: bad files refused before anything runs, an interrupted sweep
//! resumed without rerunning finished points, reports rendered from fixed
//! results, and the four presets' quick runs producing complete reports.

mod common;

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use common::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    d
}

fn lines(p: &Path) -> usize {
    fs::read_to_string(p).map_or(0, |t| t.lines().count())
}

#[test]
fn report_renders_fixed_results_exactly() {
    // No root needed: rendering only reads files.
    let dir = tmp("render");
    fs::create_dir_all(&dir).unwrap();
    for f in ["spec.toml", "results.jsonl", "options.json"] {
        fs::copy(fixture("sweep-small").join(f), dir.join(f)).unwrap();
    }
    let out = run(&["report", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = fs::read_to_string(dir.join("report.md")).unwrap();
    let want = fs::read_to_string(fixture("sweep-small/expected-report.md")).unwrap();
    assert_eq!(
        got, want,
        "report.md changed; if on purpose, update tests/fixtures/sweep-small/expected-report.md"
    );
    let csv = fs::read_to_string(dir.join("points.csv")).unwrap();
    assert_eq!(
        csv,
        fs::read_to_string(fixture("sweep-small/expected-points.csv")).unwrap()
    );
    let svg = fs::read_to_string(dir.join("figure-1.svg")).unwrap();
    assert!(
        svg.starts_with("<svg")
            && svg.contains("Message MB/s vs size")
            && svg.contains("busy sender")
    );
    // The terminal gets the same tables.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("| 65536 | 999.5 (877.2–1122) |"), "{text}");
    let _ = fs::remove_dir_all(dir);
}

#[test]
fn bad_sweep_files_are_refused_before_running() {
    if !root_or_skip("sweep bad files") {
        return;
    }
    let spec = fs::read_to_string(fixture("small-sweep.toml")).unwrap();
    for (bad, needle) in [
        (
            spec.replace("repeats = 2", "repeats = 2\ncolour = 1"),
            "unknown field `colour`",
        ),
        (spec.replace("mtu = 1500", "mtu = \"big\""), "small.toml:"),
        (spec.replace("mtu = 1500", "queues = 0"), "--queues 0"),
        (spec.replace("mtu = 1500", "colour = 3"), "--colour"),
        (
            spec.replace("rows = \"message\"", "rows = \"size\""),
            "not an axis",
        ),
    ] {
        let dir = tmp("bad");
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("small.toml");
        fs::write(&file, bad).unwrap();
        let out = run(&[
            "sweep",
            file.to_str().unwrap(),
            "--out",
            dir.join("out").to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(needle), "{needle:?} missing from: {err}");
        assert!(err.contains("small.toml"), "the file is named: {err}");
        assert!(!dir.join("out/results.jsonl").exists(), "nothing ran");
        let _ = fs::remove_dir_all(dir);
    }
}

#[test]
fn an_interrupted_sweep_resumes_without_rerunning() {
    if !root_or_skip("sweep resume") {
        return;
    }
    let _turn = serial();
    let _lab = Lab::up("tsw", 1500);
    let dir = tmp("resume");
    let results = dir.join("results.jsonl");
    let mut child = Command::new(linerate())
        .args([
            "sweep",
            fixture("small-sweep.toml").to_str().unwrap(),
            "--lab",
            "tsw",
            "--out",
        ])
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(60);
    while lines(&results) < 3 {
        assert!(Instant::now() < end, "the sweep made no progress");
        thread::sleep(Duration::from_millis(50));
    }
    // A crash, not a clean stop: nothing gets to tidy up.
    child.kill().unwrap();
    let _ = child.wait();
    let before = fs::read_to_string(&results).unwrap();
    let kept = before.lines().count();
    assert!((3..12).contains(&kept), "{kept} lines");
    let out = run(&["sweep", "--resume", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = fs::read_to_string(&results).unwrap();
    assert!(
        after.starts_with(before.trim_end()),
        "finished points were kept as they were"
    );
    let records: Vec<serde_json::Value> = after
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let mut done: Vec<(u64, u64)> = records
        .iter()
        .filter(|r| r.get("result").is_some())
        .map(|r| (r["point"].as_u64().unwrap(), r["repeat"].as_u64().unwrap()))
        .collect();
    done.sort();
    let n = done.len();
    done.dedup();
    assert_eq!(n, done.len(), "no point ran twice");
    assert_eq!(n, 12, "6 points x 2 repeats");
    let report = fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("12 run(s) finished"), "{report}");
    let _ = fs::remove_dir_all(dir);
}

#[test]
fn quick_presets_produce_complete_reports() {
    if !root_or_skip("sweep presets") {
        return;
    }
    let _turn = serial();
    let _lab = Lab::up("tswp", 1500);
    for preset in ["bs2000", "rpc", "service-demand", "fc-modes"] {
        let dir = tmp(preset);
        let out = run(&[
            "sweep",
            preset,
            "--quick",
            "--lab",
            "tswp",
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{preset}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report = fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(report.contains(" 0 failed"), "{preset}: {report}");
        assert!(
            !report.contains("n/a"),
            "{preset} has empty cells:\n{report}"
        );
        assert!(
            !report.contains("no point has finished"),
            "{preset}: {report}"
        );
        let spec = fs::read_to_string(dir.join("spec.toml")).unwrap();
        let figures = spec.matches("figure]]").count();
        for i in 1..=figures {
            let svg = dir.join(format!("figure-{i}.svg"));
            assert!(svg.exists(), "{preset}: {} missing", svg.display());
            assert!(report.contains(&format!("(figure-{i}.svg)")));
        }
        let tables = spec.matches("table]]").count();
        assert_eq!(
            report.matches("\n**").count() - spec.matches("fit]]").count(),
            tables,
            "{preset}: every table"
        );
        let _ = fs::remove_dir_all(dir);
    }
}
