//! Runs on the loopback engine that end badly, with no root: a result
//! written to /dev/full is an error naming where it was going, a reader
//! that went away is no panic, SIGINT and SIGTERM end a stream (130, its
//! figures printed, marked interrupted) and a sweep (130, every record whole, a
//! report that counts them). (Moved from the root package's
//! tests/output.rs and tests/robustness.rs, which keep what the kernel
//! shows: a real full disk, XDP detached after an interrupted run.)

mod common;

use std::{
    fs,
    process::{Command, Output, Stdio},
    thread,
    time::{Duration, Instant},
};

use common::*;
use nix::{
    sys::signal::{kill, Signal},
    unistd::Pid,
};

/// A counted, paced loopback stream printing its result as JSON.
const STREAM: [&str; 12] = [
    "stream",
    "--backend",
    "loopback",
    "--count",
    "1000",
    "--rate",
    "50000",
    "--warmup",
    "0s",
    "--duration",
    "30s",
    "--json",
];

/// Runs linerate with stdout going to `out`.
fn run_to(args: &[&str], out: impl Into<Stdio>) -> Output {
    Command::new(linerate())
        .args(args)
        .stdout(out)
        .stderr(Stdio::piped())
        .output()
        .expect("running linerate")
}

fn dev_full() -> fs::File {
    fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap()
}

#[test]
fn a_streams_result_to_dev_full_is_an_error_naming_it() {
    let mut text: Vec<&str> = STREAM.to_vec();
    text.pop();
    for args in [&STREAM[..], &text] {
        let out = run_to(args, dev_full());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(
                "linerate: error: writing the result to stdout (/dev/full) failed: No space left on device"
            ),
            "{args:?}: {err}"
        );
    }
    // Somewhere to write: the same run succeeds, every frame accounted.
    let out = run(&STREAM);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&out);
    assert_eq!(
        (&r["frames"]["sent"], &r["frames"]["received"]),
        (&1000.into(), &1000.into())
    );
}

#[test]
fn a_reader_that_goes_away_is_no_panic() {
    let mut child = Command::new(linerate())
        .args(STREAM)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader closes its end before the figures are printed.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

#[test]
fn sigint_ends_a_stream_with_its_figures() {
    stops_with_its_figures_on(Signal::SIGINT);
}

#[test]
fn sigterm_ends_a_stream_with_its_figures() {
    stops_with_its_figures_on(Signal::SIGTERM);
}

/// A minute-long paced loopback stream, sent `signal` two seconds in:
/// exit 130, its result printed and marked interrupted, every frame sent
/// received.
fn stops_with_its_figures_on(signal: Signal) {
    let child = Command::new(linerate())
        .args([
            "stream",
            "--backend",
            "loopback",
            "--rate",
            "20000",
            "--warmup",
            "0.2s",
            "--duration",
            "60s",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Well into the window (the warm-up is 0.2 s).
    thread::sleep(Duration::from_secs(2));
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{signal}: {err}");
    let r = json(&out);
    assert_eq!(r["interrupted"], true, "{r:#}");
    let f = &r["frames"];
    assert!(f["sent"].as_u64().unwrap() > 0, "{f:#}");
    // Nothing lost on the link: what was sent arrived.
    assert_eq!(f["sent"], f["received"], "{f:#}");
    assert_eq!(f["lost"], 0, "{f:#}");
}

#[test]
fn sweep_interrupted_leaves_a_valid_partial_report() {
    let dir = tmp("swint-lo");
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
    let child = Command::new(linerate())
        .args(["sweep", file.to_str().unwrap(), "--out"])
        .arg(&out_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let results = out_dir.join("results.jsonl");
    let recorded = || fs::read_to_string(&results).map_or(0, |t| t.lines().count());
    let end = Instant::now() + Duration::from_secs(60);
    while recorded() < 2 {
        assert!(Instant::now() < end, "the sweep made no progress");
        thread::sleep(Duration::from_millis(20));
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    // Every record whole, each a result or an error, and the report
    // counts them as they are.
    let text = fs::read_to_string(&results).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("whole records"))
        .collect();
    // 6 points x 2 repeats: the interruption cut it short.
    assert!((2..12).contains(&records.len()), "{text}");
    let failed = records.iter().filter(|r| r["error"].is_string()).count();
    let finished = records.iter().filter(|r| r["result"].is_object()).count();
    assert_eq!(finished + failed, records.len(), "{text}");
    assert!(err.contains("--resume"), "says how to resume: {err}");
    let report = fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(
        report.contains(&format!("{finished} run(s) finished, {failed} failed")),
        "{report}"
    );
    let _ = fs::remove_dir_all(dir);
}
