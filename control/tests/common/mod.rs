//! Helpers shared by the `linerate` package's integration tests: the
//! binary cargo built for them (`CARGO_BIN_EXE_linerate`: no build per
//! test binary), its runs and its JSON. These tests need no root and no
//! network: what needs the kernel stays in the root package's `tests/`.
#![allow(dead_code)]

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::Value;

/// The `linerate` binary.
pub fn linerate() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_linerate"))
}

/// The workspace's shared test fixtures (`tests/fixtures/NAME`).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(name)
}

/// A path of this test process's own under the system's temporary
/// directory, emptied (not created).
pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Runs `linerate args...`.
pub fn run(args: &[&str]) -> Output {
    Command::new(linerate())
        .args(args)
        .output()
        .expect("running linerate")
}

/// stdout as JSON, with stderr in the panic message when it is not.
pub fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "linerate printed no JSON ({e}); status {:?}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Waits for `child` to end by itself; kills it (and fails) after `limit`.
pub fn wait_or_kill(child: &mut std::process::Child, limit: std::time::Duration, what: &str) {
    let end = std::time::Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}, killed");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Runs `linerate args...`, which must succeed (its stderr in the panic).
pub fn run_ok(args: &[&str]) -> Output {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
