//! Sweeps that run their points on the loopback engine, with no root and
//! no network, resumed after what can go wrong: a crash (SIGKILL) part
//! way, a torn last record, failed points (exit 4, the report written all
//! the same) and SIGINT during a run with a failure counted (exit 130).
//! (Moved from the root package's tests/sweep.rs, where they ran on the
//! veth lab; a full disk is in sweep_full_disk.rs.)

mod common;

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use common::*;

/// Lines of a file (0 when it does not exist).
fn lines(p: &Path) -> usize {
    fs::read_to_string(p).map_or(0, |t| t.lines().count())
}

/// The fixture sweep (`tests/fixtures/small-sweep.toml`: 6 points x 2
/// repeats) on the loopback engine, paced.
fn small_loopback_spec() -> String {
    let spec = fs::read_to_string(fixture("small-sweep.toml")).unwrap();
    assert_eq!(spec.matches("\nmtu = 1500\n").count(), 1, "{spec}");
    spec.replace(
        "\nmtu = 1500\n",
        "\nmtu = 1500\nbackend = \"loopback\"\nrate = 20000\n",
    )
}

/// A copy of the fixture sweep's directory (12 finished runs) whose spec
/// runs on the loopback engine: what is resumed runs without root.
fn fixture_copy(name: &str) -> PathBuf {
    let dir = tmp(name);
    fs::create_dir_all(&dir).unwrap();
    for f in ["results.jsonl", "options.json"] {
        fs::copy(fixture("sweep-small").join(f), dir.join(f)).unwrap();
    }
    let spec = fs::read_to_string(fixture("sweep-small/spec.toml")).unwrap();
    assert_eq!(spec.matches("\nmtu = 1500\n").count(), 1, "{spec}");
    fs::write(
        dir.join("spec.toml"),
        spec.replace(
            "\nmtu = 1500\n",
            "\nmtu = 1500\nbackend = \"loopback\"\nrate = 20000\n",
        ),
    )
    .unwrap();
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
    done.sort_unstable();
    done
}

fn all_twelve() -> Vec<(u64, u64)> {
    (0..6).flat_map(|p| (0..2).map(move |r| (p, r))).collect()
}

#[test]
fn an_interrupted_sweep_resumes_without_rerunning() {
    let dir = tmp("sr-resume");
    fs::create_dir_all(&dir).unwrap();
    let file = dir.join("small.toml");
    fs::write(&file, small_loopback_spec()).unwrap();
    let out_dir = dir.join("out");
    let results = out_dir.join("results.jsonl");
    let mut child = Command::new(linerate())
        .args(["sweep", file.to_str().unwrap(), "--out"])
        .arg(&out_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(60);
    while lines(&results) < 3 {
        assert!(Instant::now() < end, "the sweep made no progress");
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the sweep ended ({status}) before it was killed");
        }
        thread::sleep(Duration::from_millis(20));
    }
    // A crash, not a clean stop: nothing gets to tidy up.
    child.kill().unwrap();
    let _ = child.wait();
    let before = fs::read_to_string(&results).unwrap();
    let kept = finished(&results).len();
    assert!((3..12).contains(&kept), "{kept} records");
    let out = run(&["sweep", "--resume", out_dir.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "12 run(s), {kept} already done; the other {} take about",
            12 - kept
        )),
        "{err}"
    );
    let after = fs::read_to_string(&results).unwrap();
    assert!(
        after.starts_with(&before),
        "finished points were kept as they were"
    );
    // Every run exactly once: no point ran twice, none is missing.
    assert_eq!(finished(&results), all_twelve());
    for line in after.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let f = &r["result"]["frames"];
        assert_eq!(r["result"]["params"]["backend"], "loopback", "{r:#}");
        assert_eq!(f["sent"], f["received"], "{f:#}");
    }
    let report = fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(report.contains("12 run(s) finished, 0 failed"), "{report}");
    let _ = fs::remove_dir_all(dir);
}

#[test]
fn a_torn_last_line_is_cut_and_its_point_runs_again() {
    let dir = fixture_copy("sr-torn");
    let results = dir.join("results.jsonl");
    // Saved on another lab, which does not exist: --lab on resume wins
    // (the loopback engine uses none, so the saved one is never reached).
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
    assert_eq!(out.status.code(), Some(0), "{err}");
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
    let after = fs::read_to_string(&results).unwrap();
    assert!(after.starts_with(&text[..last]));
    assert_eq!(finished(&results), all_twelve());
    // The run that ran again is the torn one, on the loopback engine.
    let rerun: serde_json::Value = serde_json::from_str(&after[last..]).unwrap();
    assert_eq!((&rerun["point"], &rerun["repeat"]), (&5.into(), &1.into()));
    assert_eq!(rerun["result"]["params"]["backend"], "loopback");
    let saved = fs::read_to_string(dir.join("options.json")).unwrap();
    assert!(
        saved.contains("hr5") && !saved.contains("hrgone"),
        "{saved}"
    );
    let _ = fs::remove_dir_all(dir);
}

/// A sweep of two points on the loopback engine, no repeats, in the file's
/// order (`--seed 0`, two points): `starved` (one frame a second, which
/// measures nothing in its 0.3 s window, a failed run) and `long`
/// (paced, lossless, `duration` long).
fn cases_sweep(dir: &Path, first: &str, duration: &str) -> PathBuf {
    let file = dir.join("cases.toml");
    // One frame a second: the first at the warm-up's start, the next a
    // second later; the window (0.5 s to 0.8 s) half a second from each.
    let starved = "{ rate = 1, warmup = \"0.5s\", duration = \"0.3s\" }";
    let long = format!("{{ rate = 20000, warmup = \"0.1s\", duration = \"{duration}\" }}");
    let (values, labels) = match first {
        "starved" => (format!("{starved}, {long}"), "\"starved\", \"long\""),
        "both" => (
            format!("{starved}, {starved}"),
            "\"starved\", \"starved too\"",
        ),
        _ => (format!("{long}, {starved}"), "\"long\", \"starved\""),
    };
    fs::write(
        &file,
        format!(
            "name = \"cases\"\nkind = \"stream\"\nrepeats = 1\n[fixed]\nbackend = \"loopback\"\n[[axis]]\nname = \"case\"\nvalues = [{values}]\nlabels = [{labels}]\n"
        ),
    )
    .unwrap();
    file
}

const STARVED: &str = "point case={ duration = \"0.3s\", rate = 1, warmup = \"0.5s\" }, repeat 1: measured nothing: no frame was sent or received in the measured window";

#[test]
fn a_sweep_with_failed_points_says_how_many_and_exits_4() {
    let dir = tmp("sr-failures");
    fs::create_dir_all(&dir).unwrap();
    for (first, failed) in [("both", "2 of 2"), ("long", "1 of 2")] {
        let out_dir = dir.join(format!("out-{first}"));
        let file = cases_sweep(&dir, first, "0.3s");
        let out = run(&[
            "sweep",
            file.to_str().unwrap(),
            "--seed",
            "0",
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{err}");
        assert!(
            err.contains(&format!(
                "linerate: error: {failed} run(s) failed (the first: part 1, {STARVED}); the report shows them as failed; `linerate sweep --resume {}` runs them again",
                out_dir.display()
            )),
            "{err}"
        );
        // The report is written all the same, with every run.
        assert_eq!(lines(&out_dir.join("results.jsonl")), 2);
        let report = fs::read_to_string(out_dir.join("report.md")).unwrap();
        let ok = usize::from(failed == "1 of 2");
        assert!(
            report.contains(&format!("{ok} run(s) finished, {} failed", 2 - ok)),
            "{report}"
        );
    }
    let _ = fs::remove_dir_all(dir);
}

#[test]
fn sigint_during_the_runs_exits_130_and_counts_the_failures() {
    let dir = tmp("sr-run-int");
    fs::create_dir_all(&dir).unwrap();
    // The first point fails (starved), the second runs for a minute.
    let file = cases_sweep(&dir, "starved", "60s");
    let out_dir = dir.join("out");
    let mut child = Command::new(linerate())
        .args(["sweep", file.to_str().unwrap(), "--seed", "0", "--out"])
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
    // Into the second point's run.
    thread::sleep(Duration::from_secs(1));
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
        err.contains(&format!(
            "linerate: error: 1 of 2 run(s) failed (the first: part 1, {STARVED}"
        )),
        "{err}"
    );
    assert!(
        err.contains("resume with `linerate sweep --resume"),
        "{err}"
    );
    assert_eq!(lines(&results), 1, "the cut-short run is not recorded");
    let _ = fs::remove_dir_all(dir);
}

/// (point, repeat) of each record, in the file's order.
fn order(results: &Path) -> Vec<(u64, u64)> {
    fs::read_to_string(results)
        .unwrap()
        .lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            (r["point"].as_u64().unwrap(), r["repeat"].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn a_killed_seeded_sweep_resumes_in_the_seeds_order() {
    let dir = tmp("sr-seed");
    fs::create_dir_all(&dir).unwrap();
    let file = dir.join("seeded.toml");
    fs::write(
        &file,
        "name = \"lo\"\nkind = \"stream\"\n[fixed]\nbackend = \"loopback\"\nrate = 20000\nwarmup = \"100ms\"\nduration = \"200ms\"\n[[axis]]\nname = \"size\"\nvalues = [64, 128, 256]\n",
    )
    .unwrap();
    let args = |out: &Path| {
        vec![
            "sweep".to_string(),
            file.to_str().unwrap().to_string(),
            "--repeats".into(),
            "2".into(),
            "--seed".into(),
            "42".into(),
            "--out".into(),
            out.to_str().unwrap().to_string(),
        ]
    };
    // Uninterrupted: the seed's order.
    let whole = dir.join("whole");
    let a = args(&whole);
    let out = run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = order(&whole.join("results.jsonl"));
    assert_eq!(want.len(), 6, "{want:?}");
    // Killed after two records, then resumed: the same order, the runs
    // done before the crash kept as they were.
    let cut = dir.join("cut");
    let results = cut.join("results.jsonl");
    let mut child = Command::new(linerate())
        .args(args(&cut))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(60);
    while lines(&results) < 2 {
        assert!(Instant::now() < end, "the sweep made no progress");
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the sweep ended ({status}) before it was killed");
        }
        thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    let _ = child.wait();
    let before = fs::read_to_string(&results).unwrap();
    let kept = order(&results);
    assert_eq!(kept[..], want[..kept.len()], "the seed's order so far");
    let out = run(&["sweep", "--resume", cut.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(fs::read_to_string(&results).unwrap().starts_with(&before));
    assert_eq!(order(&results), want);
    let _ = fs::remove_dir_all(dir);
}
