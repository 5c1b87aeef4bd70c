//! Gates for CI on the lab (root), where the loopback engine cannot run:
//! rr's transactions gated, and a --tx-only run's unmeasured figures
//! unmet. (A stream's gates met, unmet and refused, a sweep's gates and
//! `--json-stream` are in control/tests/gates_loopback.rs, without root;
//! `report --compare --fail-if-worse` in control/tests/report.rs.)

mod common;

use common::*;

#[test]
#[ignore = "needs root: rr runs on the veth lab (the loopback engine runs no rr yet)"]
fn expectations_gate_rr() {
    require_root("rr --expect on the lab");
    let _turn = serial();
    let lab = Lab::up("tgate", 1500);
    // rr: transactions counted. (A stream's gates, met, unmet and refused,
    // are in control/tests/gates_loopback.rs.)
    let out = run(&[
        "rr",
        "--lab",
        &lab.name,
        "--count",
        "500",
        "--warmup",
        "0s",
        "--duration",
        "30s",
        "--expect",
        "transactions.total == 500",
        "--expect",
        "latency.p99_us < 1e9",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("expect transactions.total == 500: met (measured 500)"),
        "{err}"
    );
}

/// A gate on a figure the run did not measure is unmet, never met on the
/// zero its field holds: a --tx-only run has no receiver of ours, so no
/// loss and nothing received (exit 4); what it sent is measured.
#[test]
#[ignore = "needs root: gates judge streams and rr run on the veth lab"]
fn a_tx_only_run_meets_no_gate_on_what_a_receiver_counts() {
    require_root("--tx-only --expect on the lab");
    let _turn = serial();
    let lab = Lab::up("tgtxo", 1500);
    let out = run(&[
        "stream",
        "--lab",
        &lab.name,
        "--tx-only",
        "--count",
        "1000",
        "--rate",
        "50000",
        "--warmup",
        "0s",
        "--duration",
        "30s",
        "--napi",
        "softirq",
        "--tx-engine",
        "backend",
        "--json",
        "--expect",
        "frames.lost == 0",
        "--expect",
        "frames.loss_pct <= 0",
        "--expect",
        "frames.sent == 1000",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    for gate in ["frames.lost == 0", "frames.loss_pct <= 0"] {
        assert!(
            err.contains(&format!("expect {gate}: UNMET (not measured in this run)")),
            "{err}"
        );
    }
    assert!(
        err.contains("expect frames.sent == 1000: met (measured 1000)"),
        "{err}"
    );
    assert!(
        err.contains("2 of 3 expectation(s) unmet (exit 4)"),
        "{err}"
    );
}
