//! Softirq time per core and per vector over a window, as an eBPF program
//! on the `irq:softirq_entry`/`softirq_exit` tracepoints counts it (the
//! way bcc's `softirqs` does): the network work the kernel does for a run
//! outside any thread of it (NET_RX, NET_TX). The types and the
//! arithmetic only: `linerate-ebpf` reads the samples.

use serde::{Deserialize, Serialize};

use crate::system::Host;

/// Softirq vectors the kernel has (`NR_SOFTIRQS`).
pub const VECTORS: usize = 10;
/// The NET_TX vector.
pub const NET_TX: usize = 2;
/// The NET_RX vector.
pub const NET_RX: usize = 3;

/// One vector's cumulative time and runs on one core.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VectorTime {
    /// Time in it, ns.
    pub ns: u64,
    /// Times it ran.
    pub count: u64,
    /// Time in it while it interrupted a task of the process it was
    /// measured for, ns: on kernels without CONFIG_IRQ_TIME_ACCOUNTING
    /// that time is in the task's run time too.
    pub owner_ns: u64,
}

/// Every core's vectors at one instant, by core number.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SoftirqSample {
    /// `cores[c][v]`: core `c`, vector `v`.
    pub cores: Vec<[VectorTime; VECTORS]>,
}

/// One core's network softirq work over a window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SoftirqUse {
    /// Core number.
    pub core: usize,
    /// NET_RX time, percent of the window.
    pub net_rx_pct: f64,
    /// NET_TX time, percent of the window.
    pub net_tx_pct: f64,
    /// Every vector's time together, percent of the window.
    pub all_pct: f64,
    /// The part of `net_rx_pct` + `net_tx_pct` spent interrupting
    /// linerate's own threads (without CONFIG_IRQ_TIME_ACCOUNTING, also in
    /// their run time).
    #[serde(default)]
    pub net_in_own_threads_pct: f64,
    /// NET_RX runs.
    pub net_rx_runs: u64,
    /// NET_TX runs.
    pub net_tx_runs: u64,
    /// Its host, in a two-host result (none on one host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
}

impl SoftirqSample {
    /// Each core's use between `earlier` and `self`, a window of
    /// `seconds` (cores absent from `earlier` count from zero).
    pub fn since(&self, earlier: &Self, seconds: f64) -> Vec<SoftirqUse> {
        let zero = [VectorTime::default(); VECTORS];
        self.cores
            .iter()
            .enumerate()
            .map(|(core, now)| {
                let then = earlier.cores.get(core).unwrap_or(&zero);
                let ns = |v: usize| now[v].ns.saturating_sub(then[v].ns);
                let runs = |v: usize| now[v].count.saturating_sub(then[v].count);
                let all: u64 = (0..VECTORS).map(ns).sum();
                let owner: u64 = [NET_RX, NET_TX]
                    .iter()
                    .map(|&v| now[v].owner_ns.saturating_sub(then[v].owner_ns))
                    .sum();
                SoftirqUse {
                    core,
                    net_rx_pct: pct(ns(NET_RX), seconds),
                    net_tx_pct: pct(ns(NET_TX), seconds),
                    all_pct: pct(all, seconds),
                    net_in_own_threads_pct: pct(owner, seconds),
                    net_rx_runs: runs(NET_RX),
                    net_tx_runs: runs(NET_TX),
                    host: None,
                }
            })
            .collect()
    }
}

/// `ns` in percent of a window of `seconds` (0 for an empty window).
/// `ns` in percent of one core over `seconds`, at most 100: the counters
/// and the window's clock are read at slightly different instants, which
/// can put a core's whole window a hair over 100 %.
fn pct(ns: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        (100.0 * ns as f64 / (seconds * 1e9)).min(100.0)
    } else {
        0.0
    }
}

/// The network softirq time (NET_RX + NET_TX) of `cores` together, ms,
/// over a window of `seconds` (every core when `cores` is empty).
pub fn net_ms(uses: &[SoftirqUse], cores: &[usize], seconds: f64) -> f64 {
    uses.iter()
        .filter(|u| cores.is_empty() || cores.contains(&u.core))
        .map(|u| (u.net_rx_pct + u.net_tx_pct) / 100.0 * seconds * 1e3)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn core(rx_ns: u64, tx_ns: u64, timer_ns: u64) -> [VectorTime; VECTORS] {
        let mut c = [VectorTime::default(); VECTORS];
        c[NET_RX] = VectorTime {
            ns: rx_ns,
            count: rx_ns / 1000,
            owner_ns: 0,
        };
        c[NET_TX] = VectorTime {
            ns: tx_ns,
            count: tx_ns / 1000,
            owner_ns: tx_ns,
        };
        c[1] = VectorTime {
            ns: timer_ns,
            count: 1,
            owner_ns: timer_ns / 2,
        };
        c
    }

    #[test]
    fn per_core_over_a_window() {
        let a = SoftirqSample {
            cores: vec![core(1_000_000, 0, 0), core(0, 0, 0)],
        };
        let b = SoftirqSample {
            cores: vec![core(301_000_000, 100_000_000, 50_000_000), core(0, 0, 0)],
        };
        let u = b.since(&a, 2.0);
        assert_eq!(u.len(), 2);
        assert_eq!(u[0].core, 0);
        assert_eq!(u[0].net_rx_pct, 15.0);
        assert_eq!(u[0].net_tx_pct, 5.0);
        assert_eq!(u[0].all_pct, 22.5);
        // NET_TX's, in linerate's threads (the timer's half is not
        // network work).
        assert_eq!(u[0].net_in_own_threads_pct, 5.0);
        assert_eq!(u[0].net_rx_runs, 300_000);
        assert_eq!(u[0].net_tx_runs, 100_000);
        assert_eq!(
            u[1],
            SoftirqUse {
                core: 1,
                ..Default::default()
            }
        );
        assert_eq!(net_ms(&u, &[0], 2.0), 400.0);
        assert_eq!(net_ms(&u, &[1], 2.0), 0.0);
        assert_eq!(net_ms(&u, &[], 2.0), 400.0);
        assert_eq!(b.since(&a, 0.0)[0].all_pct, 0.0);
        // A hair over the window (counters and clock read apart): 100 %.
        assert_eq!(pct(1_000_400_000, 1.0), 100.0);
    }

    proptest! {
        /// Every vector's time is the difference of the edges, and the
        /// network share never exceeds the whole (over a 1 s window, what a
        /// core can hold: up to a third of a second for each of three).
        #[test]
        fn accounting_is_exact(
            start in proptest::collection::vec((0u64..1 << 40, 0u64..1 << 40, 0u64..1 << 40), 1..4),
            add in proptest::collection::vec((0u64..333_000_000, 0u64..333_000_000, 0u64..333_000_000), 4),
        ) {
            let a = SoftirqSample { cores: start.iter().map(|(r, t, o)| core(*r, *t, *o)).collect() };
            let b = SoftirqSample {
                cores: start.iter().zip(&add)
                    .map(|((r, t, o), (dr, dt, d_o))| core(r + dr, t + dt, o + d_o)).collect(),
            };
            let u = b.since(&a, 1.0);
            for (use_, (dr, dt, d_o)) in u.iter().zip(&add) {
                prop_assert_eq!(use_.net_rx_pct, pct(*dr, 1.0));
                prop_assert_eq!(use_.net_tx_pct, pct(*dt, 1.0));
                prop_assert_eq!(use_.all_pct, pct(dr + dt + d_o, 1.0));
                prop_assert!(use_.net_rx_pct + use_.net_tx_pct <= use_.all_pct * (1.0 + 1e-12));
                prop_assert_eq!(use_.net_in_own_threads_pct, pct(*dt, 1.0));
            }
        }
    }
}
