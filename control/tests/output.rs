//! Results that could not be written are errors: /dev/full, a full disk and
//! a closed stdout exit non-zero with a message naming where the result was
//! going; a reader that went away on purpose (`| head`) is not an error.

mod common;

use std::{
    fs,
    path::PathBuf,
    process::{Command, Output, Stdio},
};

use common::*;

fn sweep_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    let fixture = fixture("sweep-small");
    for f in ["spec.toml", "results.jsonl", "options.json"] {
        fs::copy(fixture.join(f), d.join(f)).unwrap();
    }
    d
}

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

fn assert_failed_naming(out: &Output, target: &str, why: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "linerate: error: writing the result to stdout ({target}) failed: {why}"
        )),
        "{err}"
    );
}

#[test]
fn results_written_to_dev_full_are_errors() {
    // No root, no lab: commands that only read and print.
    let dir = sweep_dir("out-full");
    let d = dir.to_str().unwrap();
    let out = run_to(&["report", d], dev_full());
    assert_failed_naming(&out, "/dev/full", "No space left on device");
    for args in [
        &["lab", "status", "--json", "--lab", "hr0"][..],
        &["lab", "status", "--lab", "hr0"],
        &["sweep", "--list"],
    ] {
        let out = run_to(args, dev_full());
        assert_failed_naming(&out, "/dev/full", "No space left on device");
    }
    // The same commands with somewhere to write succeed.
    assert!(run_to(&["report", d], Stdio::null()).status.success());
    let _ = fs::remove_dir_all(dir);
}

/// linerate with fd 1 closed at exec: sh's `exec ... >&-` closes it (the
/// arguments go as sh's positional parameters, never into the script).
fn run_closed(args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg("exec \"$0\" \"$@\" >&-")
        .arg(linerate())
        .args(args)
        .stderr(Stdio::piped())
        .output()
        .expect("running sh")
}

#[test]
fn a_closed_stdout_is_an_error() {
    for args in [
        &["lab", "status", "--json", "--lab", "hr0"][..],
        &["sweep", "--list"],
        &["stream", "--backend", "loopback", "--count", "100"],
    ] {
        let out = run_closed(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("writing the result to stdout failed: Bad file descriptor")
                && err.contains("stdout is closed"),
            "{err}"
        );
    }
    // `> /dev/null` (write-only) and a caller's read-write /dev/null
    // (Python's subprocess.DEVNULL; Rust's runtime puts the same on a closed
    // fd 1, told apart before main) are places to write.
    let read_write = || {
        fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
            .unwrap()
    };
    for args in [
        &["lab", "status", "--json", "--lab", "hr0"][..],
        &["stream", "--backend", "loopback", "--count", "100"],
    ] {
        for out in [run_to(args, Stdio::null()), run_to(args, read_write())] {
            assert!(
                out.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn a_reader_that_went_away_is_not_an_error() {
    let dir = sweep_dir("out-pipe");
    let mut child = Command::new(linerate())
        .args(["report", dir.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `| head -c 0`: the reader closes before reading anything.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = fs::remove_dir_all(dir);
}
