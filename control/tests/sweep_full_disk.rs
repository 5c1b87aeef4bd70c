//! A sweep on the loopback engine that runs out of room for its results,
//! with no root: the file-size limit (RLIMIT_FSIZE, which linerate meets
//! as a failed write: it blocks SIGXFSZ) stands in for a full disk. No
//! result is lost or torn, the sweep says how to go on, and `--resume`
//! finishes it with every run exactly once. (A real full disk, a tmpfs
//! mounted as root, stays in the root package's tests/sweep.rs.) The only
//! test of its binary: the limit is the whole process's while the sweep
//! is started.

mod common;

use std::{
    fs,
    path::Path,
    process::{Command, Stdio},
};

use common::*;
use nix::sys::resource::{getrlimit, setrlimit, Resource};

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

/// The results file's room.
const LIMIT: u64 = 48 * 1024;

#[test]
fn a_full_file_loses_no_result_and_resume_completes() {
    let dir = tmp("sfd");
    fs::create_dir_all(&dir).unwrap();
    let spec = fs::read_to_string(fixture("small-sweep.toml")).unwrap();
    assert_eq!(spec.matches("\nmtu = 1500\n").count(), 1, "{spec}");
    let file = dir.join("small.toml");
    fs::write(
        &file,
        spec.replace(
            "\nmtu = 1500\n",
            "\nmtu = 1500\nbackend = \"loopback\"\nrate = 20000\n",
        ),
    )
    .unwrap();
    let out_dir = dir.join("out");
    let results = out_dir.join("results.jsonl");
    // 12 records of 6.7-17 KB each (their latency histograms differ in
    // size; seen 117 KB in all) do not fit in 48 KB, and the first two,
    // whichever the shuffled order puts first, do.
    let (soft, hard) = getrlimit(Resource::RLIMIT_FSIZE).unwrap();
    setrlimit(Resource::RLIMIT_FSIZE, LIMIT, hard).unwrap();
    let child = Command::new(linerate())
        .args(["sweep", file.to_str().unwrap(), "--out"])
        .arg(&out_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    setrlimit(Resource::RLIMIT_FSIZE, soft, hard).unwrap();
    let out = child.unwrap().wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("6 point(s) x 2 repeat(s) = 12 run(s), about"),
        "the size and time are said first: {err}"
    );
    assert!(
        err.contains(&format!(
            "writing {} failed: File too large",
            results.display()
        )),
        "{err}"
    );
    assert!(err.contains("--resume"), "{err}");
    // Whole records only: the file ends with '\n' and every line parses.
    let kept = finished(&results);
    assert!(!kept.is_empty() && kept.len() < 12, "{kept:?}");
    let before = fs::read_to_string(&results).unwrap();
    assert!(before.len() as u64 <= LIMIT, "{} bytes", before.len());
    // Room again: the sweep finishes, every run exactly once.
    let out = run(&["sweep", "--resume", out_dir.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("{} already done", kept.len())),
        "{err}"
    );
    let after = fs::read_to_string(&results).unwrap();
    assert!(
        after.starts_with(&before),
        "finished records kept as they were"
    );
    let all: Vec<(u64, u64)> = (0..6).flat_map(|p| (0..2).map(move |r| (p, r))).collect();
    assert_eq!(finished(&results), all);
    let report = fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(report.contains("12 run(s) finished, 0 failed"), "{report}");
    let _ = fs::remove_dir_all(dir);
}
