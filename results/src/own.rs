//! linerate's own CPU on a set of cores, and what else ran there: its
//! threads' run time (the kernel's schedstat) plus the network softirq
//! work on those cores not already in that run time, beside the
//! interference (other tasks: /proc/stat's busy share less ours and less
//! steal) and the steal, never added in. Pure arithmetic over the
//! window's figures.

use serde::{Deserialize, Serialize};

use crate::{softirq::SoftirqUse, system::CoreUse, threads::ThreadUse};

/// A set of cores over a window, each figure the mean percent per core.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct OwnCpu {
    /// linerate's own time.
    pub own_pct: f64,
    /// Other tasks' time: busy less own less steal (never below 0).
    pub interference_pct: f64,
    /// Stolen by the hypervisor.
    pub steal_pct: f64,
    /// /proc/stat's busy share (steal included), as before.
    pub busy_pct: f64,
}

/// linerate's own CPU on `cores` (every core in `uses` when empty).
/// A thread counts on the cores it was seen on at the window's edges,
/// evenly when on more than one (exact for a pinned thread).
/// `irq_time_accounted`: whether the kernel keeps softirq time out of the
/// interrupted task's run time (CONFIG_IRQ_TIME_ACCOUNTING); when it does
/// not, network softirq work that interrupted linerate's threads is
/// already in their run time and is not added again.
pub fn own_on(
    cores: &[usize],
    uses: &[CoreUse],
    threads: &[ThreadUse],
    softirq: &[SoftirqUse],
    irq_time_accounted: bool,
) -> OwnCpu {
    let chosen: Vec<&CoreUse> = uses
        .iter()
        .filter(|u| cores.is_empty() || cores.contains(&u.core))
        .collect();
    if chosen.is_empty() {
        return OwnCpu::default();
    }
    let here = |c: usize| chosen.iter().any(|u| u.core == c);
    let threads_pct: f64 = threads
        .iter()
        .filter(|t| !t.cores.is_empty())
        .map(|t| {
            let on = t.cores.iter().filter(|&&c| here(c)).count();
            t.run_pct * on as f64 / t.cores.len() as f64
        })
        .sum();
    let softirq_pct: f64 = softirq
        .iter()
        .filter(|s| here(s.core))
        .map(|s| {
            let net = s.net_rx_pct + s.net_tx_pct;
            if irq_time_accounted {
                net
            } else {
                (net - s.net_in_own_threads_pct).max(0.0)
            }
        })
        .sum();
    let n = chosen.len() as f64;
    let busy_pct = chosen.iter().map(|u| u.busy).sum::<f64>() / n;
    let steal_pct = chosen.iter().map(|u| u.steal).sum::<f64>() / n;
    // At most what the hypervisor left of the cores: the threads' and the
    // cores' counters are read at slightly different instants (a sweep's
    // record holds percentages of 0 to 100 only).
    let own_pct = ((threads_pct + softirq_pct) / n).clamp(0.0, (100.0 - steal_pct).max(0.0));
    OwnCpu {
        own_pct,
        interference_pct: (busy_pct - steal_pct - own_pct).max(0.0),
        steal_pct,
        busy_pct,
    }
}

/// Sets of cores measured apart (hosts, pairs of a fleet), each with its
/// number of cores, as one: each figure the core-weighted mean (none
/// without a core).
pub fn combined(parts: &[(OwnCpu, usize)]) -> Option<OwnCpu> {
    let n: usize = parts.iter().map(|(_, k)| k).sum();
    if n == 0 {
        return None;
    }
    let mean =
        |f: fn(&OwnCpu) -> f64| parts.iter().map(|(o, k)| f(o) * *k as f64).sum::<f64>() / n as f64;
    Some(OwnCpu {
        own_pct: mean(|o| o.own_pct),
        interference_pct: mean(|o| o.interference_pct),
        steal_pct: mean(|o| o.steal_pct),
        busy_pct: mean(|o| o.busy_pct),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parts_combine_weighted_by_their_cores() {
        let a = OwnCpu {
            own_pct: 90.0,
            interference_pct: 10.0,
            steal_pct: 0.0,
            busy_pct: 100.0,
        };
        let b = OwnCpu {
            own_pct: 30.0,
            interference_pct: 0.0,
            steal_pct: 3.0,
            busy_pct: 33.0,
        };
        let c = combined(&[(a, 1), (b, 3)]).unwrap();
        assert_eq!(c.own_pct, (90.0 + 3.0 * 30.0) / 4.0);
        assert_eq!(c.interference_pct, 2.5);
        assert_eq!(c.steal_pct, 2.25);
        assert_eq!(c.busy_pct, (100.0 + 99.0) / 4.0);
        assert_eq!(combined(&[(a, 0)]), None);
        assert_eq!(combined(&[]), None);
    }

    fn core(core: usize, busy: f64, steal: f64) -> CoreUse {
        CoreUse {
            core,
            busy,
            steal,
            ..Default::default()
        }
    }

    fn thread(run_pct: f64, cores: &[usize]) -> ThreadUse {
        ThreadUse {
            run_pct,
            cores: cores.to_vec(),
            ..Default::default()
        }
    }

    fn net(core: usize, rx: f64, in_own: f64) -> SoftirqUse {
        SoftirqUse {
            core,
            net_rx_pct: rx,
            all_pct: rx,
            net_in_own_threads_pct: in_own,
            ..Default::default()
        }
    }

    #[test]
    fn a_receiver_with_a_hog_on_its_core() {
        // Core 1: the receiver 40 %, NET_RX 20 % of which 5 % interrupted
        // it; a hog took the rest but 2 % steal.
        let uses = [core(0, 99.0, 0.0), core(1, 100.0, 2.0)];
        let threads = [thread(40.0, &[1]), thread(90.0, &[0])];
        let softirq = [net(0, 30.0, 30.0), net(1, 20.0, 5.0)];
        let rx = own_on(&[1], &uses, &threads, &softirq, false);
        assert_eq!(rx.own_pct, 55.0);
        assert_eq!(rx.steal_pct, 2.0);
        assert_eq!(rx.busy_pct, 100.0);
        assert_eq!(rx.interference_pct, 43.0);
        // With the kernel keeping softirq time apart, all of it is added.
        assert_eq!(own_on(&[1], &uses, &threads, &softirq, true).own_pct, 60.0);
        // Both cores: the sender's 90 % and none of core 0's softirq (all
        // of it in the sender's time).
        let both = own_on(&[], &uses, &threads, &softirq, false);
        assert_eq!(both.own_pct, (55.0 + 90.0) / 2.0);
        assert_eq!(both.busy_pct, 99.5);
    }

    #[test]
    fn a_thread_seen_on_two_cores_counts_half_on_each() {
        let uses = [core(0, 50.0, 0.0), core(1, 50.0, 0.0)];
        let t = [thread(40.0, &[0, 1])];
        assert_eq!(own_on(&[0], &uses, &t, &[], false).own_pct, 20.0);
        assert_eq!(own_on(&[], &uses, &t, &[], false).own_pct, 20.0);
    }

    /// A core busy with linerate's thread for the whole window reads 100 %
    /// own at most, whatever a hair of sampling skew adds.
    #[test]
    fn own_time_is_at_most_the_core() {
        let uses = [core(0, 100.0, 0.0)];
        let s = own_on(&[0], &uses, &[thread(100.4, &[0])], &[], false);
        assert_eq!((s.own_pct, s.interference_pct), (100.0, 0.0));
        let stolen = own_on(
            &[0],
            &[core(0, 100.0, 3.0)],
            &[thread(100.0, &[0])],
            &[],
            false,
        );
        assert_eq!(stolen.own_pct, 97.0);
    }

    #[test]
    fn no_cores_no_figures() {
        assert_eq!(
            own_on(&[3], &[core(0, 50.0, 0.0)], &[], &[], false),
            OwnCpu::default()
        );
    }

    proptest! {
        /// Own, interference and steal add up to busy whenever own fits in
        /// it, and interference is never negative.
        #[test]
        fn the_split_adds_up(
            busy in 0.0f64..100.0, steal_part in 0.0f64..1.0,
            run in 0.0f64..100.0, rx in 0.0f64..100.0, own_part in 0.0f64..1.0,
        ) {
            let steal = busy * steal_part;
            let uses = [core(0, busy, steal)];
            let s = own_on(&[0], &uses, &[thread(run, &[0])], &[net(0, rx, rx * own_part)], false);
            prop_assert!(s.interference_pct >= 0.0);
            if s.own_pct <= busy - steal {
                prop_assert!((s.own_pct + s.interference_pct + s.steal_pct - busy).abs() < 1e-9);
            }
        }
    }
}
