//! Sweeps: bad files refused before anything runs, an interrupted sweep
//! resumed without rerunning finished points, reports rendered from fixed
//! results, and the five presets' quick runs producing complete reports;
//! results never lost or torn (a full disk, a torn last line, garbage
//! lines), options given with --resume never ignored, huge sweeps refused
//! before they are expanded.

mod common;
#[path = "support/tmpfs.rs"]
mod tmpfs;

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
#[ignore = "needs root: sweeps run streams on the veth lab (namespaces, XDP, AF_XDP)"]
fn an_interrupted_sweep_resumes_without_rerunning() {
    require_root("sweep resume");
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
#[ignore = "needs root: sweeps run streams on the veth lab (namespaces, XDP, AF_XDP)"]
fn quick_presets_produce_complete_reports() {
    require_root("sweep presets");
    let _turn = serial();
    let _lab = Lab::up("tswp", 1500);
    // wait-modes (57 points; its real run is docs/wait-modes.md) with two
    // of its four offered loads (10 k/s, which the document's figure is
    // read at, and unpaced): 37 points, every part, table, figure, winner
    // and reference of the preset all the same.
    let cut = tmp("wait-modes-cut.toml");
    let text = fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/report/presets/wait-modes.toml"
    ))
    .unwrap();
    let loads = "values = [10000, 100000, 500000, false]";
    assert_eq!(text.matches(loads).count(), 2, "the preset's load axes");
    let labels = r#"labels = ["10 k/s", "100 k/s", "500 k/s", "unpaced"]"#;
    assert_eq!(text.matches(labels).count(), 2, "the preset's load labels");
    let text = text
        .replace(loads, "values = [10000, false]")
        .replace(labels, r#"labels = ["10 k/s", "unpaced"]"#);
    fs::write(&cut, text).unwrap();
    for preset in ["bs2000", "rpc", "service-demand", "fc-modes", "wait-modes"] {
        let dir = tmp(preset);
        let what = if preset == "wait-modes" {
            cut.to_str().unwrap()
        } else {
            preset
        };
        let out = run(&[
            "sweep",
            what,
            "--quick",
            // One run a point: the shortest run of every preset (it is the
            // suite's longest test); the report is complete all the same.
            "--repeats",
            "1",
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
            report.contains("Repeats per point: 1 (--quick"),
            "{preset}: --repeats 1 in place of --quick's 3: {report}"
        );
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
    let _ = fs::remove_file(cut);
}

/// A copy of the fixture sweep (12 finished runs) to resume or report.
fn fixture_copy(name: &str) -> PathBuf {
    let dir = tmp(name);
    fs::create_dir_all(&dir).unwrap();
    for f in ["spec.toml", "results.jsonl", "options.json"] {
        fs::copy(fixture("sweep-small").join(f), dir.join(f)).unwrap();
    }
    dir
}

/// (point, repeat) of every finished run, sorted; every line must parse.
fn finished(results: &Path) -> Vec<(u64, u64)> {
    let text = fs::read_to_string(results).unwrap();
    assert!(text.is_empty() || text.ends_with('\n'), "a torn last line");
    let mut done: Vec<(u64, u64)> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .unwrap_or_else(|e| panic!("a line that is not JSON ({e}): {l}"))
        })
        .filter(|r| r.get("result").is_some())
        .map(|r| (r["point"].as_u64().unwrap(), r["repeat"].as_u64().unwrap()))
        .collect();
    done.sort();
    done
}

fn all_twelve() -> Vec<(u64, u64)> {
    (0..6).flat_map(|p| (0..2).map(move |r| (p, r))).collect()
}

#[test]
#[ignore = "needs root: sweeps run streams on the veth lab (namespaces, XDP, AF_XDP)"]
fn a_full_disk_loses_no_result_and_resume_completes() {
    require_root("sweep on a full disk");
    let _turn = serial();
    let _lab = Lab::up("hr4", 1500);
    // 12 records of about 4 to 10 KB each do not fit in the 32 KB left.
    let disk = tmpfs::Tmpfs::mount("hrdisk", 512 * 1024);
    let filler = disk.fill(32 * 1024);
    let dir = disk.path("sweep");
    let results = dir.join("results.jsonl");
    let out = run(&[
        "sweep",
        fixture("small-sweep.toml").to_str().unwrap(),
        "--lab",
        "hr4",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("6 point(s) x 2 repeat(s) = 12 run(s), about"),
        "the size and time are said first: {err}"
    );
    assert!(
        err.contains(&format!(
            "writing {} failed: No space left on device",
            results.display()
        )),
        "{err}"
    );
    assert!(err.contains("--resume"), "{err}");
    // Whole records only: the file ends with '\n' and every line parses.
    let kept = finished(&results);
    assert!(!kept.is_empty() && kept.len() < 12, "{kept:?}");
    let before = fs::read_to_string(&results).unwrap();
    // Space again: the sweep finishes, every run exactly once.
    fs::remove_file(filler).unwrap();
    let out = run(&["sweep", "--resume", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = fs::read_to_string(&results).unwrap();
    assert!(
        after.starts_with(&before),
        "finished records kept as they were"
    );
    assert_eq!(finished(&results), all_twelve());
    let report = fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("12 run(s) finished"), "{report}");
}

#[test]
#[ignore = "needs root: sweeps run streams on the veth lab (namespaces, XDP, AF_XDP)"]
fn a_torn_last_line_is_cut_and_its_point_runs_again() {
    require_root("sweep torn line");
    let _turn = serial();
    let _lab = Lab::up("hr5", 1500);
    // Should the saved lab ever be used, it goes away with the test.
    let _gone = Lab {
        name: "hrgone".into(),
    };
    let dir = fixture_copy("torn");
    let results = dir.join("results.jsonl");
    // Saved on another lab, which does not exist: --lab on resume wins.
    fs::write(
        dir.join("options.json"),
        r#"{"quick": false, "extra": ["--lab", "hrgone"]}"#,
    )
    .unwrap();
    let text = fs::read_to_string(&results).unwrap();
    let last = text.trim_end().rfind('\n').unwrap() + 1;
    let torn = &text[..last + 100];
    fs::write(&results, torn).unwrap();
    let out = run(&["sweep", "--resume", dir.to_str().unwrap(), "--lab", "hr5"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "{} ends with an incomplete record at byte {last}",
            results.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("resuming with `--lab hr5` instead of the saved `--lab hrgone`"),
        "{err}"
    );
    assert!(
        err.contains("11 already done; the other 1 take about"),
        "{err}"
    );
    assert_eq!(
        fs::read_to_string(dir.join("results.jsonl.torn-1")).unwrap(),
        &torn[last..]
    );
    assert!(fs::read_to_string(&results)
        .unwrap()
        .starts_with(&text[..last]));
    assert_eq!(finished(&results), all_twelve());
    let saved = fs::read_to_string(dir.join("options.json")).unwrap();
    assert!(
        saved.contains("hr5") && !saved.contains("hrgone"),
        "{saved}"
    );
    let _ = fs::remove_dir_all(dir);
}

/// Waits for `child` to end by itself; kills it (and fails) after `limit`.
fn wait_or_kill(child: &mut std::process::Child, limit: Duration, what: &str) {
    let end = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}, killed");
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// The veths of labs mz1 and mz3, named as interfaces.
const IFACES_MZ1: [&str; 8] = [
    "--tx-iface",
    "mz1-a0",
    "--tx-netns",
    "mz1-a",
    "--rx-iface",
    "mz1-b0",
    "--rx-netns",
    "mz1-b",
];
const IFACES_MZ3: [&str; 8] = [
    "--tx-iface",
    "mz3-a0",
    "--tx-netns",
    "mz3-a",
    "--rx-iface",
    "mz3-b0",
    "--rx-netns",
    "mz3-b",
];

/// A sweep of one message size over `queues`, short runs, no repeats.
fn queues_sweep(dir: &Path, queues: &str, duration: &str) -> PathBuf {
    let file = dir.join("queues.toml");
    fs::write(
        &file,
        format!(
            "name = \"queues\"\nkind = \"stream\"\nrepeats = 1\n[fixed]\nmessage = 1024\nwarmup = \"0.1s\"\nduration = \"{duration}\"\n[[axis]]\nname = \"queues\"\nvalues = [{queues}]\n"
        ),
    )
    .unwrap();
    file
}

#[test]
#[ignore = "needs root: sweeps run streams on the veth lab (namespaces, XDP, AF_XDP)"]
fn a_sweep_with_failed_points_says_how_many_and_exits_4() {
    require_root("sweep failures");
    let _turn = serial();
    let _lab = Lab::up("mz1", 1500);
    let dir = tmp("failures");
    fs::create_dir_all(&dir).unwrap();
    // The lab's veths have one queue, named as interfaces (not the lab,
    // which would be recreated with the queues asked): queues = 2 fails.
    for (queues, failed, first) in [
        ("2, 3", "2 of 2", "queues=2"),
        ("1, 2", "1 of 2", "queues=2"),
    ] {
        let out_dir = dir.join(format!("out-{}", failed.replace(' ', "")));
        let file = queues_sweep(&dir, queues, "0.3s");
        // Seed 0 runs two points in the file's order (rounds.rs): the
        // first failure named is then queues=2.
        let mut args = vec!["sweep", file.to_str().unwrap(), "--seed", "0"];
        args.extend(IFACES_MZ1);
        args.extend(["--out", out_dir.to_str().unwrap()]);
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{err}");
        assert!(
            err.contains(&format!(
                "linerate: error: {failed} run(s) failed (the first: part 1, point {first}, repeat 1: "
            )) && err.contains(&format!(
                "; the report shows them as failed; `linerate sweep --resume {}` runs them again",
                out_dir.display()
            )),
            "{err}"
        );
        // The report is written all the same, with every run.
        assert_eq!(lines(&out_dir.join("results.jsonl")), 2);
        let report = fs::read_to_string(out_dir.join("report.md")).unwrap();
        let ok = if failed == "1 of 2" { 1 } else { 0 };
        assert!(
            report.contains(&format!("{ok} run(s) finished, {} failed", 2 - ok)),
            "{report}"
        );
    }
    let _ = fs::remove_dir_all(dir);
}

#[test]
#[ignore = "needs root: sweeps run streams on the veth lab (namespaces, XDP, AF_XDP)"]
fn sigterm_during_the_runs_exits_130_and_counts_the_failures() {
    require_root("sweep SIGTERM while running");
    let _turn = serial();
    let _lab = Lab::up("mz3", 1500);
    let dir = tmp("run-term");
    fs::create_dir_all(&dir).unwrap();
    // The first point fails (one queue), the second runs for a minute.
    let file = queues_sweep(&dir, "2, 1", "60s");
    let out_dir = dir.join("out");
    let mut child = Command::new(linerate())
        // Seed 0 runs two points in the file's order (rounds.rs): the
        // failing point first, then the minute-long one.
        .args(["sweep", file.to_str().unwrap(), "--seed", "0"])
        .args(IFACES_MZ3)
        .arg("--out")
        .arg(&out_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let results = out_dir.join("results.jsonl");
    let end = Instant::now() + Duration::from_secs(60);
    while lines(&results) < 1 {
        assert!(Instant::now() < end, "the sweep made no progress");
        thread::sleep(Duration::from_millis(50));
    }
    // Well into the second point's run.
    thread::sleep(Duration::from_secs(2));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    wait_or_kill(
        &mut child,
        Duration::from_secs(45),
        "SIGINT during a 60 s point",
    );
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.contains(
            "linerate: error: 1 of 2 run(s) failed (the first: part 1, point queues=2, repeat 1: "
        ),
        "{err}"
    );
    assert!(
        err.contains("resume with `linerate sweep --resume"),
        "{err}"
    );
    assert_eq!(lines(&results), 1, "the cut-short run is not recorded");
    let _ = fs::remove_dir_all(dir);
}
