//! Sweeps without a lab: reports rendered from fixed results, huge sweeps
//! refused before they are expanded, bad sweep files and bad records
//! refused before anything runs, a resume without its saved options
//! refused, SIGTERM while the points are checked. (Sweeps that run their
//! points on the loopback engine are in sweep_loopback.rs and
//! sweep_resume.rs; the root package's tests/sweep.rs keeps what needs
//! the lab.)

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

/// `spec` (the fixture sweep's) on the loopback engine: a sweep whose
/// points all run in memory needs no root, so what is refused is refused
/// for what it is, also for a user without root.
fn on_loopback(spec: &str) -> String {
    assert_eq!(spec.matches("\nmtu = 1500\n").count(), 1, "{spec}");
    spec.replace("\nmtu = 1500\n", "\nmtu = 1500\nbackend = \"loopback\"\n")
}

/// A copy of the fixture sweep (12 finished runs) to resume or report,
/// its spec on the loopback engine.
fn fixture_copy(name: &str) -> PathBuf {
    let dir = tmp(name);
    fs::create_dir_all(&dir).unwrap();
    for f in ["results.jsonl", "options.json"] {
        fs::copy(fixture("sweep-small").join(f), dir.join(f)).unwrap();
    }
    let spec = fs::read_to_string(fixture("sweep-small/spec.toml")).unwrap();
    fs::write(dir.join("spec.toml"), on_loopback(&spec)).unwrap();
    dir
}

#[test]
fn bad_sweep_files_are_refused_before_running() {
    let spec = on_loopback(&fs::read_to_string(fixture("small-sweep.toml")).unwrap());
    for (bad, needle) in [
        (
            spec.replace("repeats = 2", "repeats = 2\ncolour = 1"),
            "unknown field `colour`",
        ),
        (spec.replace("mtu = 1500", "mtu = \"big\""), "small.toml:"),
        (
            spec.replace("mtu = 1500", "queues = 0"),
            "invalid value '0' for '--queues",
        ),
        (spec.replace("mtu = 1500", "colour = 3"), "--colour"),
        (
            spec.replace("rows = \"message\"", "rows = \"size\""),
            "not an axis",
        ),
        (
            spec.replace(
                "metrics = [\"receiver.message_mb_s\"]",
                "metrics = [\"receiver.mesage_mb_s\"]",
            ),
            "small.toml:25: table \"Message MB/s\": \"receiver.mesage_mb_s\" is not a metric linerate knows. Figures: sender.frames,",
        ),
        (
            spec.replace("y = \"receiver.message_mb_s\"", "y = \"transactions.per_s\""),
            "which `linerate stream` does not measure",
        ),
    ] {
        let dir = tmp("bad");
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("small.toml");
        fs::write(&file, bad).unwrap();
        let out = run(&[
            "sweep",
            file.to_str().unwrap(),
            "--out",
            dir.join("out").to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(needle), "{needle:?} missing from: {err}");
        assert!(err.contains("small.toml"), "the file is named: {err}");
        assert!(!dir.join("out/results.jsonl").exists(), "nothing ran");
        let _ = fs::remove_dir_all(dir);
    }
}

#[test]
fn a_garbage_line_is_reported_not_skipped() {
    let dir = fixture_copy("garbage");
    let results = dir.join("results.jsonl");
    let text = fs::read_to_string(&results).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(4, "garbage");
    let bad = lines.join("\n") + "\n";
    fs::write(&results, &bad).unwrap();
    let out = run(&["sweep", "--resume", dir.to_str().unwrap(), "--lab", "hr6"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{}:5: not a sweep record", results.display())),
        "{err}"
    );
    assert_eq!(
        fs::read_to_string(&results).unwrap(),
        bad,
        "nothing ran or changed"
    );
    assert_eq!(
        fs::read_to_string(dir.join("options.json")).unwrap(),
        fs::read_to_string(fixture("sweep-small/options.json")).unwrap()
    );
    // A report leaves it out, and says so.
    let out = run(&["report", dir.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(":5: not a sweep record"), "{err}");
    let report = fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("12 run(s) finished"), "{report}");
    assert!(
        report.contains("1 line(s) of results.jsonl are not records"),
        "{report}"
    );
    let _ = fs::remove_dir_all(dir);
}

#[test]
fn resume_needs_the_saved_options_and_a_new_sweep_a_new_directory() {
    let dir = fixture_copy("noopts");
    fs::remove_file(dir.join("options.json")).unwrap();
    let results = fs::read_to_string(dir.join("results.jsonl")).unwrap();
    let out = run(&["sweep", "--resume", dir.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("holds spec.toml but no readable options.json")
            && err.contains("not resumed on a default lab"),
        "{err}"
    );
    assert_eq!(
        fs::read_to_string(dir.join("results.jsonl")).unwrap(),
        results
    );
    // A new sweep into a sweep's directory would mix two sweeps' records.
    let file = tmp("noopts.toml");
    fs::write(
        &file,
        on_loopback(&fs::read_to_string(fixture("small-sweep.toml")).unwrap()),
    )
    .unwrap();
    let out = run(&[
        "sweep",
        file.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let _ = fs::remove_file(file);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("already holds a sweep"), "{err}");
    assert_eq!(
        fs::read_to_string(dir.join("results.jsonl")).unwrap(),
        results
    );
    let _ = fs::remove_dir_all(dir);
}

#[test]
fn sigterm_while_the_points_are_checked_exits_130() {
    // 2,000 x 1,000 points: checking them takes minutes, and SIGTERM
    // ends it at once. The points name agents (a controller needs no
    // root), which nothing contacts before the points are checked.
    let dir = tmp("expand-term");
    fs::create_dir_all(&dir).unwrap();
    let file = grid(&dir, 2_000, 1_000);
    let out_dir = dir.join("out");
    let mut child = Command::new(linerate())
        .arg("sweep")
        .arg(&file)
        .args([
            "--max-points",
            "2000000",
            "--tx-agent",
            "http://127.0.0.1:9",
            "--rx-agent",
            "http://127.0.0.1:9",
            "--out",
        ])
        .arg(&out_dir)
        .env("LINERATE_TOKEN", "a-token-for-agents-never-contacted")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read stderr up to the line said once signals are answered.
    let mut err = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !String::from_utf8_lossy(&seen).contains("sweep results go to") {
        use std::io::Read;
        assert_eq!(
            err.read(&mut byte).unwrap(),
            1,
            "stderr ended: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.push(byte[0]);
    }
    let reader = thread::spawn(move || {
        use std::io::Read;
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
        rest
    });
    thread::sleep(Duration::from_millis(300));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    wait_or_kill(
        &mut child,
        Duration::from_secs(60),
        "SIGTERM while checking 2 M points",
    );
    let status = child.wait().unwrap();
    let rest = reader.join().unwrap();
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(
        rest.contains("sweep interrupted while its points were checked (")
            && rest.contains(" of 2000000): nothing ran, nothing was written"),
        "{rest}"
    );
    assert!(!out_dir.exists(), "nothing written");
    let _ = fs::remove_dir_all(dir);
}

#[test]
fn records_of_another_sweep_or_not_measured_are_errors_naming_the_line() {
    let text = fs::read_to_string(fixture("sweep-small/results.jsonl")).unwrap();
    let mut lines3: Vec<String> = text.lines().map(str::to_string).collect();
    // Line 3 (point 1: message 8192) as another sweep wrote it.
    assert!(
        lines3[2].contains(r#""values":{"message":8192,"#),
        "{}",
        lines3[2]
    );
    let other = {
        let mut l = lines3.clone();
        l[2] = l[2].replace(
            r#""values":{"message":8192,"#,
            r#""values":{"message":4096,"#,
        );
        l.join("\n") + "\n"
    };
    // A whole last line that does not parse (a number past f64).
    let huge = {
        let mut l = lines3.clone();
        l[11] = l[11].replacen(r#""frames_per_s":"#, r#""frames_per_s":1e999,"x":"#, 1);
        l.join("\n") + "\n"
    };
    // -1e308 frames/s received.
    let negative = {
        let v: &mut String = &mut lines3[5];
        let mut r: serde_json::Value = serde_json::from_str(v).unwrap();
        r["result"]["receiver"]["frames_per_s"] = (-1e308).into();
        *v = r.to_string();
        lines3.join("\n") + "\n"
    };
    for (name, bad, line, what) in [
        ("other", other, 3, "a record of point 1 of part 1 with the values {\"message\":4096,"),
        ("huge", huge, 12, "not a sweep record (number out of range"),
        (
            "negative",
            negative,
            6,
            "result.receiver.frames_per_s = -1e308 is not a measurement (it is a rate or a duration from 0 to 1e12)",
        ),
    ] {
        let dir = fixture_copy(&format!("records-{name}"));
        let results = dir.join("results.jsonl");
        fs::write(&results, &bad).unwrap();
        let out = run(&["sweep", "--resume", dir.to_str().unwrap(), "--lab", "mzgone"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(
            err.contains(&format!("{}:{line}: {what}", results.display())),
            "{name}: {err}"
        );
        assert_eq!(fs::read_to_string(&results).unwrap(), bad, "{name}: nothing cut or run");
        assert!(!dir.join("results.jsonl.torn-1").exists(), "{name}");
        // A report leaves it out, and says so.
        let out = run(&["report", dir.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {err}");
        assert!(err.contains(&format!("results.jsonl:{line}: {what}")), "{name}: {err}");
        let report = fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(
            report.contains("11 run(s) finished")
                && report.contains("1 line(s) of results.jsonl are not records"),
            "{name}: {report}"
        );
        assert!(!report.contains("0000000000000000000000"), "{name}: a 300-digit number");
        let _ = fs::remove_dir_all(dir);
    }
}
