//! Sweeps without a lab: reports rendered from fixed results, huge sweeps
//! refused before they are expanded. (The sweeps that run points on the
//! lab are in the root package's tests/sweep.rs.)

mod common;

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use common::*;

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
fn a_huge_sweep_is_refused_before_it_is_expanded() {
    // 10,000 x 1,000 values: 10 million points, refused from the count.
    let dir = tmp("huge");
    fs::create_dir_all(&dir).unwrap();
    let values = |n: usize| {
        (0..n)
            .map(|i| (64 + i).to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let file = dir.join("huge.toml");
    fs::write(
        &file,
        format!(
            "name = \"huge\"\nkind = \"stream\"\n[[axis]]\nname = \"message\"\nvalues = [{}]\n[[axis]]\nname = \"port\"\nvalues = [{}]\n",
            values(10_000),
            values(1_000)
        ),
    )
    .unwrap();
    let out_dir = dir.join("out");
    let mut child = Command::new(linerate())
        .args(["sweep", file.to_str().unwrap(), "--out"])
        .arg(&out_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Expanding it would take minutes and gigabytes; counting takes none.
    let end = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("a 10-million-point sweep was not refused within 60 s");
        }
        thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "10000000 points (10000000 per part) x 1 repeat(s) is more than the 10000 points"
        ) && err.contains("--max-points 10000000"),
        "{err}"
    );
    assert!(!out_dir.exists(), "nothing written");
    let _ = fs::remove_dir_all(dir);
}

/// A sweep file of `a` x `b` points (message x port), refused or checked
/// long before any runs.
fn grid(dir: &Path, a: usize, b: usize) -> PathBuf {
    let values = |n: usize, from: usize| {
        (0..n)
            .map(|i| (from + i).to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let file = dir.join("grid.toml");
    fs::write(
        &file,
        format!(
            "name = \"grid\"\nkind = \"stream\"\n[[axis]]\nname = \"message\"\nvalues = [{}]\n[[axis]]\nname = \"port\"\nvalues = [{}]\n",
            values(a, 64),
            values(b, 1024)
        ),
    )
    .unwrap();
    file
}

/// Waits for `child` to end by itself; kills it (and fails) after `limit`.
/// `linerate sweep FILE --max-points N --out DIR`, started, stderr piped.
fn spawn_grid_sweep(file: &Path, max_points: &str, out_dir: &Path) -> std::process::Child {
    Command::new(linerate())
        .arg("sweep")
        .arg(file)
        .args(["--max-points", max_points, "--out"])
        .arg(out_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

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

#[test]
fn max_points_does_not_let_a_sweep_past_the_memory() {
    // 100,000 x 10,000 points, allowed by --max-points: refused from the
    // estimate (hundreds of GB), before anything is expanded.
    let dir = tmp("memory");
    fs::create_dir_all(&dir).unwrap();
    let file = grid(&dir, 100_000, 10_000);
    let out_dir = dir.join("out");
    let mut child = spawn_grid_sweep(&file, "1000000000", &out_dir);
    wait_or_kill(
        &mut child,
        Duration::from_secs(60),
        "a sweep past the memory",
    );
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // The available memory changes from run to run: its figure is masked.
    let avail = err
        .split("more than the ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .unwrap_or("");
    assert!(avail.parse::<u64>().is_ok_and(|m| m > 0), "{err}");
    assert_eq!(
        err.replace(&format!("the {avail} MiB"), "the N MiB"),
        format!(
            "linerate: error: {}: 1000000000 points x 1 repeat(s) would hold about 577927 MiB in memory (about 350 bytes per point and 256 per run), more than the N MiB available (MemAvailable in /proc/meminfo): use fewer axis values, or split the sweep into several files\n",
            file.display()
        )
    );
    assert!(!out_dir.exists(), "nothing written");
    let _ = fs::remove_dir_all(dir);
}
