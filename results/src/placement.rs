//! Where a run's work ran, compared between repeats of one point: two
//! runs are placed alike when the cores carrying a share of the work at or
//! above a floor are the same set (shares below it, e.g. a thread's brief
//! visit to another core, are ignored).

use std::collections::BTreeSet;

use crate::{softirq::SoftirqUse, system::Host, threads::ThreadUse};

/// The share (percent of the side's own time) below which a core is not
/// counted in a run's placement.
pub const MIN_SHARE_PCT: f64 = 5.0;

/// The cores carrying at least `min_share_pct` of the time in `shares`
/// (core, time in any one unit); empty when the total is zero.
#[must_use]
pub fn core_set(shares: &[(usize, f64)], min_share_pct: f64) -> BTreeSet<usize> {
    let total: f64 = shares.iter().map(|&(_, t)| t.max(0.0)).sum();
    if total <= 0.0 {
        return BTreeSet::new();
    }
    shares
        .iter()
        .filter(|&&(_, t)| t.max(0.0) * 100.0 / total >= min_share_pct)
        .map(|&(core, _)| core)
        .collect()
}

/// The cores where the run's NAPI work (softirq NET_RX) ran: those
/// carrying at least `min_share_pct` of the window's NET_RX time.
#[must_use]
pub fn napi_cores(uses: &[SoftirqUse], min_share_pct: f64) -> BTreeSet<usize> {
    let shares: Vec<(usize, f64)> = uses.iter().map(|u| (u.core, u.net_rx_pct)).collect();
    core_set(&shares, min_share_pct)
}

/// A run's placement in a few words: each thread that ran more than
/// [`MIN_THREAD_PCT`] of a core with the cores it was seen on
/// (`lr-rx0@1`, `lr-gen0-0@0+1`; a two-host result's threads prefixed
/// with their host), then the cores that carried the NET_RX softirq work
/// (`NET_RX@0`), sorted. None when the run measured no thread.
#[must_use]
pub fn signature(threads: &[ThreadUse], softirq: &[SoftirqUse]) -> Option<String> {
    if threads.is_empty() {
        return None;
    }
    let cores =
        |c: &mut dyn Iterator<Item = usize>| c.map(|c| c.to_string()).collect::<Vec<_>>().join("+");
    let mut words: Vec<String> = threads
        .iter()
        .filter(|t| t.run_pct > MIN_THREAD_PCT)
        .map(|t| {
            let host = match t.host {
                Some(Host::Tx) => "tx:",
                Some(Host::Rx) => "rx:",
                None => "",
            };
            let mut set: Vec<usize> = t.cores.clone();
            set.sort_unstable();
            format!("{host}{}@{}", t.name, cores(&mut set.into_iter()))
        })
        .collect();
    words.sort();
    let napi = napi_cores(softirq, MIN_SHARE_PCT);
    if !napi.is_empty() {
        words.push(format!("NET_RX@{}", cores(&mut napi.into_iter())));
    }
    Some(words.join(" "))
}

/// A thread's run time, percent of one core, at or below which it is left
/// out of a run's [`signature`]: threads that did not run (a threshold
/// above 0 made a worker of 16 that ran 0.9 % in one repeat and 1.1 % in
/// another look placed otherwise).
pub const MIN_THREAD_PCT: f64 = 0.0;

/// For each run of one point (its core set), whether its placement
/// differs from the most common set among the point's runs (ties go to
/// the set seen first). A point with one run flags nothing.
#[must_use]
pub fn differs(runs: &[BTreeSet<usize>]) -> Vec<bool> {
    differs_by(runs)
}

/// [`differs`] for placements of any kind (a [`signature`]).
#[must_use]
pub fn differs_by<T: PartialEq>(runs: &[T]) -> Vec<bool> {
    let mut best: Option<(&T, usize)> = None;
    for set in runs {
        let n = runs.iter().filter(|other| *other == set).count();
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((set, n));
        }
    }
    runs.iter()
        .map(|set| best.is_some_and(|(common, _)| set != common))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(name: &str, run_pct: f64, cores: &[usize]) -> ThreadUse {
        ThreadUse {
            name: name.into(),
            run_pct,
            cores: cores.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn a_signature_names_busy_threads_and_the_napi_cores() {
        let threads = [
            thread("lr-rx0", 27.0, &[1]),
            thread("lr-signals", 0.0, &[0, 1]),
            thread("lr-gen0-0", 48.0, &[1, 0]),
        ];
        let softirq = [
            SoftirqUse {
                core: 0,
                net_rx_pct: 60.0,
                ..Default::default()
            },
            SoftirqUse {
                core: 1,
                net_rx_pct: 1.0,
                ..Default::default()
            },
        ];
        assert_eq!(
            signature(&threads, &softirq).unwrap(),
            "lr-gen0-0@0+1 lr-rx0@1 NET_RX@0"
        );
        assert_eq!(signature(&[], &softirq), None);
        let moved = [
            thread("lr-rx0", 27.0, &[0]),
            thread("lr-gen0-0", 48.0, &[0, 1]),
        ];
        let a = signature(&threads, &softirq);
        let b = signature(&moved, &softirq);
        assert_eq!(differs_by(&[a.clone(), b, a]), [false, true, false]);
    }

    fn set(cores: &[usize]) -> BTreeSet<usize> {
        cores.iter().copied().collect()
    }

    #[test]
    fn small_shares_are_ignored() {
        let shares = [(0, 96.0), (1, 4.0)];
        assert_eq!(core_set(&shares, MIN_SHARE_PCT), set(&[0]));
        let shares = [(0, 95.0), (1, 5.0)];
        assert_eq!(core_set(&shares, MIN_SHARE_PCT), set(&[0, 1]));
    }

    #[test]
    fn no_time_is_no_cores() {
        assert_eq!(core_set(&[(0, 0.0), (1, 0.0)], MIN_SHARE_PCT), set(&[]));
        assert_eq!(core_set(&[], MIN_SHARE_PCT), set(&[]));
    }

    #[test]
    fn napi_cores_are_those_with_net_rx_time() {
        let a = crate::softirq::SoftirqSample {
            cores: vec![[crate::softirq::VectorTime::default(); crate::softirq::VECTORS]; 3],
        };
        let mut b = a.clone();
        b.cores[0][crate::softirq::NET_RX].ns = 990_000;
        b.cores[1][crate::softirq::NET_RX].ns = 10_000;
        b.cores[2][crate::softirq::NET_TX].ns = 500_000;
        let uses = b.since(&a, 1.0);
        assert_eq!(napi_cores(&uses, MIN_SHARE_PCT), set(&[0]));
    }

    #[test]
    fn the_odd_repeat_is_flagged() {
        let runs = [set(&[1]), set(&[0]), set(&[1])];
        assert_eq!(differs(&runs), vec![false, true, false]);
    }

    #[test]
    fn alike_runs_and_a_single_run_flag_nothing() {
        assert_eq!(differs(&[set(&[0, 1]), set(&[0, 1])]), vec![false, false]);
        assert_eq!(differs(&[set(&[0])]), vec![false]);
        assert_eq!(differs(&[]), Vec::<bool>::new());
    }

    #[test]
    fn a_tie_keeps_the_first_set() {
        assert_eq!(differs(&[set(&[0]), set(&[1])]), vec![false, true]);
    }
}
