//! Request/response transactions between two lab namespaces: every
//! transaction completed and counted once, at sizes from the null RPC to
//! 1 MB, synchronous and with 16 in flight; losses counted exactly.

mod common;

use common::*;
use serde_json::Value;

fn rr(lab: &str, args: &[&str]) -> Value {
    let mut all = vec![
        "rr",
        "--lab",
        lab,
        "--warmup",
        "0s",
        "--duration",
        "60s",
        "--json",
    ];
    all.extend_from_slice(args);
    let out = run(&all);
    assert!(
        out.status.success(),
        "rr failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out)
}

fn exact(r: &Value, transactions: u64) {
    rr_accounted(&r["transactions"], transactions);
    assert_eq!(
        r["latency"]["count"], transactions,
        "one response time each"
    );
    assert!(r["latency"]["p50_us"].as_f64().unwrap() > 0.0);
    for w in r["workers"].as_array().unwrap() {
        assert_eq!(w["total"]["bad"], 0, "{w}");
        assert_eq!(w["total"]["duplicates"], 0, "{w}");
    }
}

#[test]
#[ignore = "needs root: request/response between lab namespaces"]
fn every_size_synchronous() {
    require_root("rr sizes");
    let _turn = serial();
    let lab = Lab::up("trr1", 1500);
    for (size, count) in [
        (0, 2000),
        (1, 2000),
        (1500, 1000),
        (65500, 200),
        (1_048_576, 10),
    ] {
        let s = size.to_string();
        let n = count.to_string();
        let r = rr(
            &lab.name,
            &[
                "--request",
                &s,
                "--response",
                &s,
                "--count",
                &n,
                "--timeout",
                "2s",
            ],
        );
        exact(&r, count);
        let frames = (size.max(1) as u64).div_ceil(1500 - 62);
        assert_eq!(r["setup"]["request_frames"], frames.max(1), "size {size}");
    }
}

#[test]
#[ignore = "needs root: request/response between lab namespaces"]
fn sixteen_in_flight_and_sixteen_flows() {
    require_root("rr concurrency");
    let _turn = serial();
    let lab = Lab::up("trr16", 1500);
    let r = rr(
        &lab.name,
        &["--concurrency", "16", "--count", "2000", "--timeout", "1s"],
    );
    exact(&r, 2000);
    let r = rr(
        &lab.name,
        &[
            "--flows",
            "16",
            "--request",
            "1500",
            "--response",
            "65500",
            "--count",
            "50",
            "--timeout",
            "2s",
        ],
    );
    exact(&r, 16 * 50);
}

#[test]
#[ignore = "needs root: request/response between lab namespaces"]
fn xdp_responder_answers_the_null_rpc() {
    require_root("xdp responder");
    let _turn = serial();
    let lab = Lab::up("trrx", 1500);
    let r = rr(
        &lab.name,
        &[
            "--responder",
            "xdp",
            "--request",
            "0",
            "--response",
            "0",
            "--count",
            "5000",
            "--timeout",
            "1s",
        ],
    );
    let t = &r["transactions"];
    rr_accounted(t, 5000);
    assert_eq!(r["xdp"]["responder"]["responded"], t["answered"]);
    assert!(r["setup"]["responder_bind_mode"].is_null());
}

#[test]
#[ignore = "needs root: request/response between lab namespaces"]
fn injected_loss_is_counted_exactly() {
    require_root("rr loss");
    let _turn = serial();
    let lab = Lab::up("trrl", 1500);
    let r = rr(
        &lab.name,
        &[
            "--count",
            "3000",
            "--inject-loss",
            "2",
            "--timeout",
            "5ms",
            "--tx-wait",
            "busy",
            "--rx-wait",
            "busy",
        ],
    );
    let t = &r["transactions"];
    // Every transaction still completes: each lost request or response is
    // one timeout and one retry. (A response merely slower than the
    // timeout is one timeout and one late answer.)
    assert_eq!(t["total"], 3000, "{t}");
    let dropped = r["xdp"]["client"]["dropped"].as_u64().unwrap()
        + r["xdp"]["responder"]["dropped"].as_u64().unwrap();
    assert!(dropped > 0, "no loss injected: {}", r["xdp"]);
    let late = t["late"].as_u64().unwrap();
    assert_eq!(
        t["timeouts"].as_u64().unwrap(),
        dropped + late,
        "{t} {}",
        r["xdp"]
    );
}

#[test]
#[ignore = "needs root: request/response between lab namespaces"]
fn reverse_swaps_the_roles() {
    require_root("rr reverse");
    let _turn = serial();
    let lab = Lab::up("trrr", 1500);
    let r = rr(&lab.name, &["-r", "--count", "500", "--timeout", "1s"]);
    exact(&r, 500);
    assert_eq!(r["params"]["client_iface"], lab.if_b());
    assert_eq!(r["params"]["responder_iface"], lab.if_a());
}

#[test]
#[ignore = "needs root: request/response between lab namespaces"]
fn bad_rr_input() {
    let check = |args: &[&str], needle: &str| {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(needle), "{needle:?} missing from {err}");
    };
    // One value out of its range: refused where it is parsed, exit 2.
    for (args, needle) in [
        (&["rr", "--flows", "0"][..], "'0' for '--flows"),
        (&["rr", "--concurrency", "0"], "'0' for '--concurrency"),
        (&["rr", "--timeout", "0s"], "'0s' for '--timeout"),
        (
            &["rr", "--request", "300000000"],
            "'300000000' for '--request <REQUEST>': 300000000 is too large",
        ),
    ] {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(needle), "{needle:?} missing from {err}");
    }
    require_root("rr ring check");
    let _turn = serial();
    let lab = Lab::up("trrb", 1500);
    check(
        &[
            "rr",
            "--lab",
            &lab.name,
            "--concurrency",
            "64",
            "--request",
            "1048576",
        ],
        "more than --rx-ring",
    );
    check(
        &[
            "rr",
            "--lab",
            &lab.name,
            "--responder",
            "xdp",
            "--request",
            "10",
            "--response",
            "20",
        ],
        "--responder xdp echoes single-frame requests",
    );
}

#[test]
#[ignore = "needs root: request/response between lab namespaces"]
fn a_responder_that_never_answers_ends_in_bounded_time() {
    require_root("rr silent responder");
    let _turn = serial();
    let lab = Lab::up("trrs", 1500);
    // Every request is dropped before the responder sees it: as if it died.
    // The run ends at its duration (none of the 1,000 completes).
    let out = run(&[
        "rr",
        "--lab",
        &lab.name,
        "--inject-loss",
        "100",
        "--warmup",
        "0.2s",
        "--duration",
        "1s",
        "--count",
        "1000",
        "--timeout",
        "20ms",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&out);
    assert_eq!(r["transactions"]["total"], 0);
    assert!(
        r["transactions"]["timeouts"].as_u64().unwrap() > 10,
        "{}",
        r["transactions"]
    );
}

/// `--confidence`/`--iterations` on rr between lab namespaces: exactly
/// three counted runs (`--iterations 3,3`), each of 500 transactions
/// counted exactly; the result is one of them (its rate among the values)
/// and its record says whether the interval was reached.
#[test]
#[ignore = "needs root: request/response between lab namespaces"]
fn a_repeated_rr_counts_each_run_and_reports_one_of_them() {
    require_root("rr --confidence");
    let _turn = serial();
    let lab = Lab::up("trr7", 1500);
    let r = rr(
        &lab.name,
        &[
            "--count",
            "500",
            "--timeout",
            "2s",
            "--confidence",
            "99,50",
            "--iterations",
            "3,3",
            "--disturbed-above",
            "100",
        ],
    );
    exact(&r, 500);
    let c = &r["confidence"];
    assert_eq!(c["iterations"], 3, "{c:#}");
    assert_eq!(c["level"], 99, "{c:#}");
    assert_eq!(c["disturbed_runs"], 0, "{c:#}");
    let values: Vec<f64> = c["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(values.len(), 3, "{c:#}");
    assert!(values.iter().all(|&v| v > 0.0), "{c:#}");
    let rate = r["transactions"]["per_s"].as_f64().unwrap();
    assert!(values.contains(&rate), "{rate} {c:#}");
    // The median run is reported: as many values below it as above.
    let below = values.iter().filter(|&&v| v < rate).count();
    let above = values.iter().filter(|&&v| v > rate).count();
    assert_eq!(below, above, "{rate} {c:#}");
    let width = c["interval_pct"].as_f64().unwrap();
    assert_eq!(c["reached"].as_bool().unwrap(), width <= 50.0, "{c:#}");
}
