//! The first minutes on the loopback engine, with no root: durations in
//! bare seconds, a stream's summary line first (and alone with -q), its
//! figures those of --json and its accounting exact. (Moved from the root
//! package's tests/first_minutes.rs, which keeps rr's summary line and
//! `--rx-only`/`--tx-only` on the lab.)

mod common;

use common::*;
use serde_json::Value;

/// The number after `before` in `line` (thousands separators dropped).
fn number_after(line: &str, before: &str) -> f64 {
    let rest = line
        .split_once(before)
        .unwrap_or_else(|| panic!("no {before:?} in {line:?}"))
        .1;
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
        .filter(|c| *c != ',')
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number after {before:?} in {line:?}"))
}

fn stdout(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// A stream's summary line, checked against what --json reports of the
/// same kind of run: every figure it shows is there, `--count` frames
/// were sent, and the loss is sent - received.
fn check_stream_summary(line: &str, r: &Value, count: u64) {
    assert!(line.starts_with("stream: received "), "{line}");
    for (label, path) in [
        ("received ", &["receiver", "frames_per_s"][..]),
        ("frames/s, ", &["receiver", "wire_gbit_s"]),
        ("lost ", &["frames", "lost"]),
        (" of ", &["frames", "sent"]),
        ("frames (", &["frames", "loss_pct"]),
        ("CPU tx ", &["sender", "cpu", "cpu_pct"]),
        (" % rx ", &["receiver", "cpu", "cpu_pct"]),
    ] {
        let shown = number_after(line, label);
        let field = path.iter().fold(r, |v, k| &v[*k]);
        assert!(field.as_f64().is_some(), "--json has no {path:?}: {r}");
        assert!(shown >= 0.0, "{label}: {line}");
    }
    // Service demand: a number, or "-" when nothing was counted in the
    // window (as the JSON's null).
    assert!(
        line.contains("SD - ms/MB") || number_after(line, "SD ") >= 0.0,
        "{line}"
    );
    assert!(
        r["cpu"]["total"]
            .as_object()
            .unwrap()
            .contains_key("service_demand_ms_per_mb"),
        "{r}"
    );
    assert!(line.contains(" Gbit/s, "), "{line}");
    assert!(line.ends_with(" ms/MB"), "{line}");
    // Exact accounting, in the line and in the JSON.
    let (lost, sent) = (number_after(line, "lost "), number_after(line, " of "));
    assert_eq!(sent, count as f64, "{line}");
    assert_eq!(r["frames"]["sent"], count, "{r}");
    let received = r["frames"]["received"].as_u64().unwrap();
    assert_eq!(r["frames"]["lost"], count - received, "{r}");
    assert!(lost <= sent, "{line}");
}

#[test]
fn the_summary_line_comes_first_and_alone_with_quiet() {
    // Bare seconds (--warmup 0, --duration 30) are durations.
    let stream = |extra: &[&str]| {
        let mut args = vec![
            "stream",
            "--backend",
            "loopback",
            "--count",
            "2000",
            "--rate",
            "50000",
            "--warmup",
            "0",
            "--duration",
            "30",
        ];
        args.extend(extra);
        run(&args)
    };
    let r = json(&stream(&["--json"]));
    // Nothing is lost in memory.
    assert_eq!(r["frames"]["received"], 2000, "{r}");
    let quiet = stdout(&stream(&["-q"]));
    let lines: Vec<&str> = quiet.lines().collect();
    assert_eq!(lines.len(), 1, "-q prints one line: {quiet}");
    check_stream_summary(lines[0], &r, 2000);
    assert_eq!(number_after(lines[0], "lost "), 0.0, "{quiet}");
    // The full table starts with the same line.
    let full = stdout(&stream(&[]));
    let first = full.lines().next().unwrap();
    check_stream_summary(first, &r, 2000);
    assert!(full.lines().count() > 10, "{full}");
    assert!(
        full.lines()
            .nth(1)
            .unwrap()
            .starts_with("linerate stream (loopback)"),
        "{full}"
    );
}
