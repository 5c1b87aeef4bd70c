//! `linerate stream --search-rate`: the highest rate within a loss tolerance.

mod common;

use common::*;

fn search(lab: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "stream",
        "--lab",
        lab,
        "--size",
        "64",
        "--duration",
        "300ms",
        "--warmup",
        "0s",
        "--napi",
        "softirq",
        "--search",
        "binary",
        "--json",
    ];
    args.extend_from_slice(extra);
    run_json(&args)
}

#[test]
#[ignore = "needs root: the rate search runs streams on the veth lab"]
fn search_stops_at_the_first_trial_that_passes_and_reports_none_when_none_does() {
    require_root("--search-rate");
    let _turn = serial();
    let lab = Lab::up("tsrc", 1500);

    // A tolerance nothing exceeds: the unpaced trial passes, and is the result.
    let r = search(&lab.name, &["--search-rate", "99.9"]);
    let trials = r["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 1, "{r}");
    assert!(
        trials[0]["offered_pps"].is_null(),
        "the first trial is unpaced"
    );
    assert_eq!(trials[0]["pass"], true);
    let found = &r["found"];
    assert_eq!(found["test"], "stream");
    assert!(found["receiver"]["frames_per_s"].as_f64().unwrap() > 0.0);

    // 20 % dropped on purpose at every rate (at random: with 5 % the
    // slowest trial's ~110 frames once lost none, p = 0.3 %; with 20 %,
    // p < 1e-10): no rate is within 1 %, and the search narrows the
    // interval (every paced trial slower than the last failed one) before
    // it gives up.
    let r = search(&lab.name, &["--search-rate", "1", "--inject-loss", "20"]);
    let trials = r["trials"].as_array().unwrap();
    assert!(r["found"].is_null(), "{r}");
    assert!(trials.len() >= 5 && trials.len() <= 11, "{}", trials.len());
    assert!(trials
        .iter()
        .all(|t| t["pass"] == false && t["loss_pct"].as_f64().unwrap() > 1.0));
    let offered: Vec<f64> = trials[1..]
        .iter()
        .map(|t| t["offered_pps"].as_f64().unwrap())
        .collect();
    assert!(
        offered.windows(2).all(|w| w[1] < w[0]),
        "halving: {offered:?}"
    );
}

#[test]
fn search_rate_out_of_range_is_refused() {
    let out = run(&["stream", "--search-rate", "100"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("invalid value '100' for '--search-rate <PERCENT>': \"100\" is out of range"),
        "{err}"
    );
    let out = run(&["stream", "--search-rate", "1", "--rate", "5"]);
    assert!(!out.status.success());
}
