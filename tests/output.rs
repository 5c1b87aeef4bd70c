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
#[ignore = "needs root: mounts a tmpfs to fill (the stream runs on the loopback engine)"]
fn a_full_disk_fails_naming_the_file() {
    require_root("output on a full disk");
    let fs_ = tmpfs::Tmpfs::mount("hrout", 256 * 1024);
    // Room for one page: a stream's JSON (more than 4 KB) does not fit.
    fs_.fill(4096);
    // The kernel's ENOSPC from a real full file system; the stream runs in
    // memory. (The same run to /dev/full is in
    // control/tests/robustness_loopback.rs, without root.)
    let stream = [
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
    let file = fs_.path("result.json");
    let out = run_to(&stream, fs::File::create(&file).unwrap());
    assert_failed_naming(&out, file.to_str().unwrap(), "No space left on device");
    // What did get written is only the first page: the error is the news.
    assert_eq!(fs::metadata(&file).unwrap().len(), 4096);
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
