//! The noise floor a run that reports latency measures just before its
//! window (issue 34, item 3): the one-way hand-off between its sender's
//! and its receiver's first cores, spinning and woken, and the gaps a
//! spinning loop loses there ([`linerate_datapath::noise`]), put in the
//! result as `noise` (or why not: `{"not_measured": WHY}`).

use std::time::Duration;

use linerate_datapath::noise::{self, FloorPlan};
use linerate_results::noise::{Floor, Noise};

/// How long a run's floor takes, before its window: 2/5 spinning (10,000
/// stamps at 100 k/s), 2/5 woken, 1/5 gaps.
pub const BUDGET: Duration = Duration::from_millis(250);

/// The floor of a run whose latency this host measures (`latency_here`)
/// from `tx_cores[0]` to `rx_cores[0]`, or why not (`wanted` false:
/// `--no-floor`); None where the latency is not this host's (one side of
/// a run across hosts, `--rx-only`, `--tx-only`).
pub fn before_window(
    tx_cores: &[usize],
    rx_cores: &[usize],
    latency_here: bool,
    wanted: bool,
) -> Option<Floor> {
    if !latency_here {
        return None;
    }
    if !wanted {
        return Some(Floor::not_measured("--no-floor"));
    }
    let (&from, &to) = (tx_cores.first()?, rx_cores.first()?);
    if from == to {
        return Some(Floor::not_measured(format!(
            "the sender and the receiver share core {from}: the floor is a hand-off between two cores"
        )));
    }
    let plan = FloorPlan::new(from, to, BUDGET);
    Some(match noise::measure(&plan) {
        Ok(floor) => Floor::Measured(of_floor(&plan, &floor)),
        Err(e) => Floor::not_measured(e.to_string()),
    })
}

/// The result's figures of a floor measured under `plan`.
pub fn of_floor(plan: &FloorPlan, f: &noise::Floor) -> Noise {
    Noise {
        from_core: plan.from_core,
        to_core: plan.to_core,
        budget_ms: plan.budget.as_millis() as u64,
        stamps: f.spin.received.min(f.wake.received),
        spin_p50_us: f.spin.p50_us,
        spin_p99_us: f.spin.p99_us,
        spin_p99_9_us: f.spin.p999_us,
        spin_max_us: f.spin.max_us,
        wake_p50_us: f.wake.p50_us,
        wake_p99_us: f.wake.p99_us,
        wake_p99_9_us: f.wake.p999_us,
        wake_max_us: f.wake.max_us,
        gap_pct: f.gap_pct(),
        gaps_over_1ms: f.from_gaps.over_1ms + f.to_gaps.over_1ms,
        max_gap_us: f.from_gaps.max_ns.max(f.to_gaps.max_ns) as f64 / 1_000.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_datapath::noise::{Gaps, HandOff};

    #[test]
    fn a_run_without_latency_here_or_asked_not_to_measures_nothing() {
        assert_eq!(before_window(&[0], &[1], false, true), None);
        assert_eq!(
            before_window(&[0], &[1], true, false),
            Some(Floor::not_measured("--no-floor"))
        );
        let Some(Floor::NotMeasured { not_measured: why }) =
            before_window(&[1], &[1, 0], true, true)
        else {
            panic!("one core measured")
        };
        assert!(why.contains("share core 1"), "{why}");
    }

    #[test]
    fn a_floor_becomes_the_results_figures() {
        let plan = FloorPlan::new(0, 1, BUDGET);
        let hand = |p50, p99, n| HandOff {
            sent: n,
            received: n,
            p50_us: p50,
            p99_us: p99,
            p99_all_us: p99 * 1.5,
            p999_us: p99 * 2.0,
            max_us: p99 * 10.0,
        };
        let gaps = |lost_ns, over_1ms, max_ns| Gaps {
            span_ns: 50_000_000,
            lost_ns,
            count: 3,
            over_1ms,
            max_ns,
        };
        let f = noise::Floor {
            spin: hand(0.4, 1.0, 10_000),
            wake: hand(9.0, 30.0, 9_990),
            from_gaps: gaps(500_000, 0, 80_000),
            to_gaps: gaps(250_000, 1, 1_200_000),
        };
        let n = of_floor(&plan, &f);
        assert_eq!((n.from_core, n.to_core, n.budget_ms), (0, 1, 250));
        assert_eq!(n.stamps, 9_990);
        assert_eq!((n.spin_p99_us, n.wake_p99_us), (1.0, 30.0));
        assert_eq!(n.spin_p99_9_us, 2.0);
        // The larger core's share: 0.5 ms of 50 ms.
        assert!((n.gap_pct - 1.0).abs() < 1e-9, "{}", n.gap_pct);
        assert_eq!((n.gaps_over_1ms, n.max_gap_us), (1, 1_200.0));
    }
}
