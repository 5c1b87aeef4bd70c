//! CPU of linerate's own threads over a window, from the kernel's own
//! accounting of each thread (schedstat: time on a core, time waiting in a
//! run queue, timeslices; the core it was last on; involuntary context
//! switches; migrations). The types and the arithmetic only:
//! `linerate-host` reads the samples from /proc/self/task.

use serde::{Deserialize, Serialize};

use crate::system::Host;

/// One thread's cumulative counters at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadTimes {
    /// The thread's id.
    pub tid: i32,
    /// Its name (comm).
    pub name: String,
    /// Time run on a core, ns (schedstat's first field).
    pub run_ns: u64,
    /// Time waited in a run queue, ns (schedstat's second field).
    pub wait_ns: u64,
    /// Timeslices run (schedstat's third field).
    pub slices: u64,
    /// The core it last ran on (stat's `processor`).
    pub core: usize,
    /// Involuntary context switches (status's `nonvoluntary_ctxt_switches`).
    pub nonvoluntary: u64,
    /// Migrations between cores (sched's `se.nr_migrations`), when readable.
    pub migrations: Option<u64>,
    /// Clock ticks in user mode (stat's `utime`).
    pub user_ticks: u64,
    /// Clock ticks in the kernel (stat's `stime`).
    pub system_ticks: u64,
}

/// What one thread did over a window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadUse {
    /// The thread's id.
    pub tid: i32,
    /// Its name.
    pub name: String,
    /// Time it ran, ms.
    pub run_ms: f64,
    /// Time it ran, percent of the window (of one core).
    pub run_pct: f64,
    /// Time it waited in a run queue, percent of the window.
    pub wait_pct: f64,
    /// Timeslices it ran.
    pub slices: u64,
    /// Involuntary context switches.
    pub nonvoluntary: u64,
    /// Migrations between cores (absent when the kernel does not show them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrations: Option<u64>,
    /// The cores it was seen on at the window's edges, in order, without
    /// repeats.
    pub cores: Vec<usize>,
    /// Share of its run time spent in the kernel (system calls, and the
    /// interrupts and softirqs that came while it ran when the kernel does
    /// not account them apart), percent: stat's stime over utime + stime,
    /// clock ticks, so a sample (absent without a tick in the window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_pct: Option<f64>,
    /// Its host, in a two-host result (none on one host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
}

/// Every thread's use between `start` and `end`, a window of `seconds`,
/// in `end`'s order. A thread born inside the window (absent from
/// `start`) counts from zero: all its time is in the window. A thread
/// that ended inside the window is absent from `end` and so from the
/// answer (the kernel no longer shows its time).
pub fn since(start: &[ThreadTimes], end: &[ThreadTimes], seconds: f64) -> Vec<ThreadUse> {
    end.iter()
        .map(|now| {
            let then = start.iter().find(|t| t.tid == now.tid);
            let zero = ThreadTimes::default();
            let was = then.unwrap_or(&zero);
            let run_ns = now.run_ns.saturating_sub(was.run_ns);
            let wait_ns = now.wait_ns.saturating_sub(was.wait_ns);
            let mut cores = Vec::with_capacity(2);
            if let Some(t) = then {
                cores.push(t.core);
            }
            if !cores.contains(&now.core) {
                cores.push(now.core);
            }
            ThreadUse {
                tid: now.tid,
                name: now.name.clone(),
                run_ms: run_ns as f64 / 1e6,
                run_pct: pct(run_ns, seconds),
                wait_pct: pct(wait_ns, seconds),
                slices: now.slices.saturating_sub(was.slices),
                nonvoluntary: now.nonvoluntary.saturating_sub(was.nonvoluntary),
                migrations: match (then.map(|t| t.migrations), now.migrations) {
                    (Some(Some(a)), Some(b)) => Some(b.saturating_sub(a)),
                    (None, Some(b)) => Some(b),
                    _ => None,
                },
                cores,
                kernel_pct: kernel_pct(
                    now.user_ticks.saturating_sub(was.user_ticks),
                    now.system_ticks.saturating_sub(was.system_ticks),
                ),
                host: None,
            }
        })
        .collect()
}

/// `system` ticks in percent of `user + system` (none without a tick).
fn kernel_pct(user: u64, system: u64) -> Option<f64> {
    let all = user + system;
    (all > 0).then(|| 100.0 * system as f64 / all as f64)
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

/// The text table's lines for the threads that ran at least 0.5 % of the
/// window: where each ran, how much, how much of it in the kernel, how
/// long it waited for a core, its timeslices, involuntary switches and
/// migrations.
pub fn lines(threads: &[ThreadUse]) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let busy: Vec<&ThreadUse> = threads.iter().filter(|t| t.run_pct >= 0.5).collect();
    if busy.is_empty() {
        return o;
    }
    let _ = writeln!(
        o,
        "  threads (run time from schedstat, percent of one core):"
    );
    for t in busy {
        let host = match t.host {
            Some(Host::Tx) => " (tx host)",
            Some(Host::Rx) => " (rx host)",
            None => "",
        };
        let kernel = t
            .kernel_pct
            .map_or(String::new(), |k| format!(" ({k:.0} % in the kernel)"));
        let _ = writeln!(
            o,
            "    {:<12}{host} cores {:?}: ran {:.1} %{kernel}, waited for a core {:.1} %, {} slices, {} involuntary, {} migrations",
            t.name,
            t.cores,
            t.run_pct,
            t.wait_pct,
            t.slices,
            t.nonvoluntary,
            t.migrations.map_or("?".to_string(), |m| m.to_string()),
        );
    }
    o
}

/// The threads' run time together, ms.
pub fn run_ms(threads: &[ThreadUse]) -> f64 {
    threads.iter().map(|t| t.run_ms).sum()
}

/// The threads' run time together, percent of one core over the window
/// (200 for two threads each on a core the whole window).
pub fn run_pct(threads: &[ThreadUse]) -> f64 {
    threads.iter().map(|t| t.run_pct).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn lines_name_the_threads_that_ran() {
        let mut end = at(7, 250_000_000, 50_000_000, 1);
        (end.user_ticks, end.system_ticks) = (1, 3);
        let t = since(&[at(7, 0, 0, 1)], &[end, at(8, 1000, 0, 0)], 1.0);
        let text = lines(&t);
        assert!(
            text.contains("    lr-rx7       cores [1]: ran 25.0 % (75 % in the kernel), waited for a core 5.0 %, 250000 slices, 50000 involuntary, 0 migrations\n"),
            "{text}"
        );
        // The idle one is left out.
        assert!(!text.contains("lr-rx8"), "{text}");
        assert_eq!(lines(&t[1..]), "");
    }

    #[test]
    fn kernel_share_from_ticks() {
        let mut a = at(7, 0, 0, 1);
        let mut b = at(7, 1_000_000, 0, 1);
        (a.user_ticks, a.system_ticks) = (10, 5);
        (b.user_ticks, b.system_ticks) = (13, 14);
        assert_eq!(since(&[a.clone()], &[b], 1.0)[0].kernel_pct, Some(75.0));
        // No tick in the window: not measured, not 0.
        assert_eq!(since(&[a.clone()], &[a], 1.0)[0].kernel_pct, None);
    }

    fn at(tid: i32, run_ns: u64, wait_ns: u64, core: usize) -> ThreadTimes {
        ThreadTimes {
            tid,
            name: format!("lr-rx{tid}"),
            run_ns,
            wait_ns,
            slices: run_ns / 1000,
            core,
            nonvoluntary: wait_ns / 1000,
            migrations: Some(core as u64),
            user_ticks: 0,
            system_ticks: 0,
        }
    }

    #[test]
    fn a_thread_over_a_window() {
        let mut start = [at(7, 1_000_000, 0, 1), at(8, 0, 0, 0)];
        let mut end = [at(7, 251_000_000, 50_000_000, 0), at(8, 0, 0, 0)];
        start[0].migrations = Some(3);
        end[0].migrations = Some(5);
        let u = since(&start, &end, 0.5);
        assert_eq!(u.len(), 2);
        assert_eq!(u[0].tid, 7);
        assert_eq!(u[0].name, "lr-rx7");
        assert_eq!(u[0].run_ms, 250.0);
        assert_eq!(u[0].run_pct, 50.0);
        assert_eq!(u[0].wait_pct, 10.0);
        assert_eq!(u[0].slices, 251_000 - 1000);
        assert_eq!(u[0].nonvoluntary, 50_000);
        assert_eq!(u[0].migrations, Some(2));
        assert_eq!(u[0].cores, vec![1, 0]);
        assert_eq!(u[1].run_pct, 0.0);
        assert_eq!(u[1].cores, vec![0]);
        assert_eq!(run_ms(&u), 250.0);
        assert_eq!(run_pct(&u), 50.0);
    }

    #[test]
    fn a_thread_born_in_the_window_counts_from_zero() {
        let u = since(&[], &[at(9, 2_000_000, 0, 1)], 1.0);
        assert_eq!(u[0].run_ms, 2.0);
        assert_eq!(u[0].migrations, Some(1));
        assert_eq!(u[0].cores, vec![1]);
    }

    #[test]
    fn migrations_unreadable_at_either_edge_are_absent() {
        let mut a = at(7, 0, 0, 0);
        a.migrations = None;
        let b = at(7, 10, 0, 0);
        assert_eq!(
            since(std::slice::from_ref(&a), std::slice::from_ref(&b), 1.0)[0].migrations,
            None
        );
        assert_eq!(since(&[b], &[a], 1.0)[0].migrations, None);
    }

    #[test]
    fn an_empty_window_is_zero_percent() {
        let u = since(&[at(7, 0, 0, 0)], &[at(7, 5, 5, 0)], 0.0);
        assert_eq!(u[0].run_pct, 0.0);
        assert_eq!(u[0].wait_pct, 0.0);
        assert_eq!(u[0].run_ms, 5e-6);
    }

    proptest! {
        /// The run time over the window is the difference of the edges,
        /// its percent that difference over the window, and the sum over
        /// threads is the sum of each.
        #[test]
        fn accounting_is_exact(
            runs in proptest::collection::vec((0u64..1u64 << 40, 0u64..1u64 << 40), 1..8),
            ms in 1u64..100_000,
        ) {
            let seconds = ms as f64 / 1000.0;
            let start: Vec<_> = runs.iter().enumerate()
                .map(|(i, (a, _))| at(i as i32, *a, 0, 0)).collect();
            let end: Vec<_> = runs.iter().enumerate()
                .map(|(i, (a, d))| at(i as i32, a + d, *d, 0)).collect();
            let u = since(&start, &end, seconds);
            prop_assert_eq!(u.len(), runs.len());
            let mut total_ns = 0u64;
            for (t, (_, d)) in u.iter().zip(&runs) {
                prop_assert_eq!(t.run_ms, *d as f64 / 1e6);
                // A share of one core, at most 100 % (counters and clock
                // read apart can put it a hair over).
                prop_assert_eq!(t.run_pct, (100.0 * *d as f64 / (seconds * 1e9)).min(100.0));
                prop_assert_eq!(t.wait_pct, t.run_pct);
                total_ns += d;
            }
            let sum = run_ms(&u);
            prop_assert!((sum - total_ns as f64 / 1e6).abs() <= 1e-9 * sum.max(1.0));
        }

        /// Counters that go backwards (a reused tid) never give a
        /// negative figure.
        #[test]
        fn never_negative(a in any::<u32>(), b in any::<u32>()) {
            let u = since(&[at(1, a.into(), a.into(), 0)], &[at(1, b.into(), b.into(), 0)], 1.0);
            prop_assert!(u[0].run_ms >= 0.0 && u[0].wait_pct >= 0.0);
        }
    }
}
