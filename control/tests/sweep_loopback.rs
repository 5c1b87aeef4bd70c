//! Sweeps on the loopback engine (`backend = "loopback"` in the sweep
//! file), with no root and no network: a sweep whose every point runs in
//! memory needs no privilege, records each run whole, exits 130 when
//! stopped (the cut-short run not recorded) and finishes on `--resume`
//! with every point recorded once; a gate that fails exits 4.

mod common;

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use common::{linerate, run};
use serde_json::Value;

/// An empty directory of this test's own.
fn scratch(name: &str) -> PathBuf {
    let d = common::tmp(&format!("swlo-{name}"));
    fs::create_dir_all(&d).unwrap();
    d
}

/// A sweep file of paced loopback streams over `sizes`, `duration` each.
fn sweep_file(dir: &Path, sizes: &str, duration: &str) -> PathBuf {
    let file = dir.join("lo.toml");
    fs::write(
        &file,
        format!(
            "name = \"lo\"\nkind = \"stream\"\n[fixed]\nbackend = \"loopback\"\nrate = 20000\nwarmup = \"100ms\"\nduration = \"{duration}\"\n[[axis]]\nname = \"size\"\nvalues = [{sizes}]\n"
        ),
    )
    .unwrap();
    file
}

/// The records of results.jsonl.
fn records(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_loopback_sweep_needs_no_root_and_records_every_run_whole() {
    let dir = scratch("whole");
    let file = sweep_file(&dir, "64, 1518", "500ms");
    let out_dir = dir.join("out");
    let out = run(&[
        "sweep",
        file.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--expect",
        "frames.loss_pct == 0",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let recs = records(&out_dir.join("results.jsonl"));
    assert_eq!(recs.len(), 2, "{recs:?}");
    for r in &recs {
        let f = &r["result"]["frames"];
        assert!(f["sent"].as_u64().unwrap() > 0, "{f:#}");
        assert_eq!(f["sent"], f["received"], "{f:#}");
        assert_eq!(r["result"]["params"]["backend"], "loopback");
    }
    assert!(out_dir.join("report.md").exists());
    // A gate that cannot hold: exit 4, the runs recorded all the same.
    let again = dir.join("again");
    let out = run(&[
        "sweep",
        file.to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
        "--expect",
        "receiver.frames_per_s > 1e12",
    ]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(records(&again.join("results.jsonl")).len(), 2);
    let _ = fs::remove_dir_all(dir);
}

#[test]
fn a_stopped_loopback_sweep_exits_130_and_resumes_to_the_end() {
    let dir = scratch("stop");
    // The first point is short, the second longer: stopped in its run.
    let file = dir.join("lo.toml");
    fs::write(
        &file,
        "name = \"lo\"\nkind = \"stream\"\n[fixed]\nbackend = \"loopback\"\nrate = 20000\nwarmup = \"100ms\"\n[[axis]]\nname = \"duration\"\nvalues = [\"300ms\", \"3s\"]\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let results = out_dir.join("results.jsonl");
    let mut child = Command::new(linerate())
        .args(["sweep", file.to_str().unwrap(), "--out"])
        .arg(&out_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(60);
    while records(&results).is_empty() {
        assert!(Instant::now() < end, "the sweep made no progress");
        thread::sleep(Duration::from_millis(50));
    }
    // Into the second point's run, then SIGTERM.
    thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let end = Instant::now() + Duration::from_secs(45);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            panic!("the sweep did not end within 45 s of SIGTERM");
        }
        thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.contains("resume with `linerate sweep --resume"),
        "{err}"
    );
    assert_eq!(
        records(&results).len(),
        1,
        "the cut-short run is not recorded"
    );
    // --resume runs what is missing, and only that.
    let out = run(&["sweep", "--resume", out_dir.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recs = records(&results);
    let mut points: Vec<u64> = recs.iter().map(|r| r["point"].as_u64().unwrap()).collect();
    points.sort_unstable();
    assert_eq!(points, [0, 1], "every point once");
    for r in &recs {
        let f = &r["result"]["frames"];
        assert_eq!(f["sent"], f["received"], "{f:#}");
    }
    let _ = fs::remove_dir_all(dir);
}

/// `--seed N`: the runs go in rounds (every point once a round), each
/// round in the seed's order, the seed recorded in options.json; the same
/// seed replays the same order.
#[test]
fn a_seeded_sweep_runs_its_repeats_in_the_seeds_rounds() {
    let dir = scratch("seed");
    let file = sweep_file(&dir, "64, 128, 256", "100ms");
    let order = |name: &str| -> Vec<(u64, u64, u64)> {
        let out_dir = dir.join(name);
        let out = run(&[
            "sweep",
            file.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
            "--repeats",
            "2",
            "--seed",
            "42",
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let opts: Value =
            serde_json::from_str(&fs::read_to_string(out_dir.join("options.json")).unwrap())
                .unwrap();
        assert_eq!(opts["seed"], 42, "{opts:#}");
        records(&out_dir.join("results.jsonl"))
            .iter()
            .map(|r| {
                let n = |k: &str| r[k].as_u64().unwrap();
                (n("part"), n("point"), n("repeat"))
            })
            .collect()
    };
    let first = order("a");
    // The seed's order (control/src/sweep/rounds.rs, seed 42, 3 points x 2).
    let seeds = vec![
        (0, 1, 0),
        (0, 0, 0),
        (0, 2, 0),
        (0, 1, 1),
        (0, 2, 1),
        (0, 0, 1),
    ];
    assert_eq!(first, seeds);
    assert_eq!(order("b"), first);
}

/// A point that asks for `confidence` is refused before anything runs: a
/// sweep repeats its points with `repeats`.
#[test]
fn a_sweep_point_with_confidence_is_refused() {
    let dir = scratch("confidence");
    let file = dir.join("c.toml");
    fs::write(
        &file,
        "name = \"c\"\nkind = \"stream\"\n[fixed]\nbackend = \"loopback\"\nconfidence = \"95,5\"\nduration = \"100ms\"\n[[axis]]\nname = \"size\"\nvalues = [64]\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let out = run(&[
        "sweep",
        file.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("not with confidence/iterations"), "{err}");
    assert!(!out_dir.join("results.jsonl").exists(), "nothing ran");
}

/// `--confidence 95,1 --iterations 3,5`: each point runs in rounds until
/// the interval of its frames/s is within 1 % (whole width) or 5 repeats
/// ran; a point stops exactly when its values reach it, never below 3.
#[test]
fn a_sweep_with_confidence_stops_each_point_by_the_rule() {
    // Two-sided 95 % Student's t for 1..=4 degrees of freedom.
    const T95: [f64; 4] = [12.706, 4.303, 3.182, 2.776];
    let width = |v: &[f64]| -> f64 {
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        200.0 * T95[v.len() - 2] * (var / n).sqrt() / mean
    };
    let dir = scratch("conf");
    let file = sweep_file(&dir, "64, 128, 256", "100ms");
    let out_dir = dir.join("out");
    let out = run(&[
        "sweep",
        file.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--confidence",
        "95,1",
        "--iterations",
        "3,5",
        "--seed",
        "3",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recs = records(&out_dir.join("results.jsonl"));
    // Rounds in order.
    let repeats: Vec<u64> = recs.iter().map(|r| r["repeat"].as_u64().unwrap()).collect();
    assert!(repeats.windows(2).all(|w| w[0] <= w[1]), "{repeats:?}");
    let report = fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(report.contains("## Repeats of each point"), "{report}");
    for point in 0..3u64 {
        let mine: Vec<&Value> = recs.iter().filter(|r| r["point"] == point).collect();
        let n = mine.len();
        assert!(n <= 5, "point {point}: {n} runs");
        for (i, r) in mine.iter().enumerate() {
            assert_eq!(r["repeat"], i as u64, "repeats of a point go 0, 1, 2...");
        }
        // Counted: the runs not disturbed (on this shared machine some are).
        let counted = |runs: &[&Value]| -> Vec<f64> {
            runs.iter()
                .filter(|r| r["result"]["disturbed"] != true)
                .map(|r| r["result"]["receiver"]["frames_per_s"].as_f64().unwrap())
                .collect()
        };
        let v = counted(&mine);
        if n < 5 {
            assert!(
                v.len() >= 3 && width(&v) <= 1.0,
                "point {point} stopped unreached: {v:?}"
            );
        }
        let before = counted(&mine[..n - 1]);
        if before.len() >= 3 {
            assert!(
                width(&before) > 1.0,
                "point {point} ran past its stop: {before:?}"
            );
        }
        // The report shows each point's counted repeats.
        let size = [64, 128, 256][point as usize];
        let line = format!("- part 1, size={size}: n={}", v.len());
        assert!(report.contains(&line), "{line} missing from {report}");
    }
}
