//! Results that could not be written are errors: /dev/full, a full disk and
//! a closed stdout exit non-zero with a message naming where the result was
//! going; a reader that went away on purpose (`| head`) is not an error.

mod common;
#[path = "support/tmpfs.rs"]
mod tmpfs;

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use common::*;

fn sweep_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep-small");
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

#[test]
fn a_closed_stdout_is_an_error() {
    // When fd 1 is closed at exec (`linerate ... >&-`), Rust's runtime opens
    // /dev/null read-write there before main: that is the state this gives
    // the child, without unsafe code in the test to close the descriptor.
    let as_closed = || {
        fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
            .unwrap()
    };
    for args in [
        &["lab", "status", "--json", "--lab", "hr0"][..],
        &["sweep", "--list"],
    ] {
        let out = run_to(args, as_closed());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("writing the result to stdout failed: Bad file descriptor")
                && err.contains("stdout is closed"),
            "{err}"
        );
    }
    // `> /dev/null` (write-only) is a place to write, not a closed stdout.
    let out = run_to(&["lab", "status", "--json", "--lab", "hr0"], Stdio::null());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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

#[test]
#[ignore = "needs root: the run writes its result after a stream on the veth lab"]
fn a_full_disk_fails_naming_the_file() {
    require_root("output on a full disk");
    let fs_ = tmpfs::Tmpfs::mount("hrout", 256 * 1024);
    // Room for one page: a stream's JSON (more than 4 KB) does not fit.
    fs_.fill(4096);
    let _turn = serial();
    let _lab = Lab::up("hr1", 1500);
    let stream = [
        "stream",
        "--lab",
        "hr1",
        "--count",
        "1000",
        "--rate",
        "50000",
        "--napi",
        "softirq",
        "--warmup",
        "0s",
        "--duration",
        "30s",
        "--json",
    ];
    let file = fs_.path("result.json");
    let out = run_to(&stream, fs::File::create(&file).unwrap());
    assert_failed_naming(&out, file.to_str().unwrap(), "No space left on device");
    // What did get written is only the first page: the error is the news.
    assert_eq!(fs::metadata(&file).unwrap().len(), 4096);
    // And the same run to /dev/full.
    let out = run_to(&stream, dev_full());
    assert_failed_naming(&out, "/dev/full", "No space left on device");
    // A report to a disk with no room at all.
    fs_.fill(0);
    let dir = sweep_dir("out-disk");
    let file = fs_.path("report.txt");
    let out = run_to(
        &["report", dir.to_str().unwrap()],
        fs::File::create(&file).unwrap(),
    );
    assert_failed_naming(&out, file.to_str().unwrap(), "No space left on device");
    let _ = fs::remove_dir_all(dir);
}
