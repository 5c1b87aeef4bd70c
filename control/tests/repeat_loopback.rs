//! `--confidence`/`--iterations` on the loopback engine, no root: a run
//! repeated under the stop rule ends reached or not with exit 0, records
//! as many values as it counted, and its gates still decide the status.
//! (rr has no loopback engine: its repeats go through the same
//! `repeat::run`, untested here.)

mod common;

use common::{json, run};

/// `test` repeated under `--confidence 95,5 --iterations 3,10`, every run
/// counted (`--disturbed-above 100`: no run is left out), plus `extra`.
fn repeated(test: &str, extra: &[&str]) -> std::process::Output {
    let mut a = vec![
        test,
        "--backend",
        "loopback",
        "--duration",
        "100ms",
        "--warmup",
        "0s",
        "--confidence",
        "95,5",
        "--iterations",
        "3,10",
        "--disturbed-above",
        "100",
        "--json",
    ];
    a.extend_from_slice(extra);
    run(&a)
}

/// The record holds up: 3 to 10 counted runs, a value each, reached
/// exactly when the interval is within 5 %, fewer than MAX only when
/// reached; the result is one of the runs (its headline among the values).
fn check_record(r: &serde_json::Value, headline: f64) {
    let c = &r["confidence"];
    let n = c["iterations"].as_u64().unwrap();
    assert!((3..=10).contains(&n), "{c:#}");
    let values = c["values"].as_array().unwrap();
    assert_eq!(values.len() as u64, n, "{c:#}");
    assert_eq!(c["disturbed_runs"], 0, "{c:#}");
    assert_eq!(c["level"], 95, "{c:#}");
    assert_eq!(c["width_pct"], 5.0, "{c:#}");
    let width = c["interval_pct"].as_f64().unwrap();
    assert_eq!(c["reached"].as_bool().unwrap(), width <= 5.0, "{c:#}");
    if n < 10 {
        assert_eq!(c["reached"], true, "{c:#}");
    }
    assert!(
        values.iter().any(|x| x.as_f64() == Some(headline)),
        "{headline} {c:#}"
    );
}

#[test]
fn a_repeated_stream_ends_reached_or_not_with_exit_0() {
    let out = repeated("stream", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&out);
    check_record(&r, r["receiver"]["frames_per_s"].as_f64().unwrap());
}

#[test]
fn a_gate_of_a_repeated_run_still_exits_4() {
    let out = repeated("stream", &["--expect", "receiver.frames_per_s >= 1000G"]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_record(
        &json(&out),
        json(&out)["receiver"]["frames_per_s"].as_f64().unwrap(),
    );
}

#[test]
fn bad_repeat_options_name_the_problem() {
    for (args, says) in [
        (&["--confidence", "97,5"][..], "90, 95 or 99"),
        (&["--iterations", "10,3"][..], "MIN <= MAX"),
        (&["--confidence", "95"][..], "e.g. 95,5"),
    ] {
        let mut a = vec!["stream", "--backend", "loopback"];
        a.extend_from_slice(args);
        let out = run(&a);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
