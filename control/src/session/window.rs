//! The measured window: every worker's counters, every core's CPU and
//! every thread's run time at its two edges, and what is read from them
//! without I/O.

use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use linerate_datapath::{
    stats::CounterSnapshot,
    worker::{Ready, Worker},
    xsk::XskStats,
};

use super::ends::Ends;
use linerate_ebpf::{SoftirqClock, SoftirqSample};
use linerate_host::{
    cpu::{CoreUse, CpuSample},
    iface::IfCounters,
    threads::{ThreadTimes, ThreadUse},
};
use linerate_results::{parts::WorkerReport, softirq::SoftirqUse};

/// Every worker's counters, every core's CPU and every thread's run time
/// at one instant.
pub struct Snapshot {
    /// When.
    pub at: Instant,
    /// Each worker's counters, by end.
    pub workers: Ends<Vec<CounterSnapshot>>,
    /// CPU.
    pub cpu: CpuSample,
    /// This process's threads, then the NAPI threads the run pinned.
    pub threads: Vec<ThreadTimes>,
    /// Each core's softirq time (none when not counted).
    pub softirq: Option<SoftirqSample>,
}

impl Snapshot {
    /// Takes one; `napi` are the NAPI threads the run pinned (pids),
    /// `softirq` the run's softirq clock.
    pub fn take<T, R>(
        tx: &[Worker<T>],
        rx: &[Worker<R>],
        napi: &[i32],
        softirq: Option<&SoftirqClock>,
    ) -> Result<Self> {
        let softirq = softirq
            .map(SoftirqClock::read)
            .transpose()
            .context("reading the softirq clock")?;
        let mut threads =
            linerate_host::threads::sample().context("reading this process's threads")?;
        for &pid in napi {
            // A NAPI thread gone (its interface reset) is no error: it
            // is left out of the window.
            if let Some(t) = linerate_host::threads::sample_kernel_thread(pid)
                .with_context(|| format!("reading NAPI thread {pid}"))?
            {
                threads.push(t);
            }
        }
        Ok(Self {
            at: Instant::now(),
            workers: Ends {
                tx: counters(tx),
                rx: counters(rx),
            },
            cpu: CpuSample::read()?,
            threads,
            softirq,
        })
    }
}

/// Each worker's counters now.
pub fn counters<S>(workers: &[Worker<S>]) -> Vec<CounterSnapshot> {
    workers.iter().map(|w| w.counters.snapshot()).collect()
}

/// The measured window, as read from its two edges.
#[derive(Debug, Clone, Default)]
pub struct Window {
    /// Its length, seconds.
    pub seconds: f64,
    /// Every core's use over it.
    pub cpu: Vec<CoreUse>,
    /// Every thread's use over it (linerate's own, then the NAPI threads).
    pub threads: Vec<ThreadUse>,
    /// Every core's softirq time over it (empty when not counted).
    pub softirq: Vec<SoftirqUse>,
    /// Each worker's counters at its start, by end.
    pub start: Ends<Vec<CounterSnapshot>>,
    /// Each worker's counters at its end, by end.
    pub end: Ends<Vec<CounterSnapshot>>,
    /// The interfaces' own counters over it (zeros when the run does not
    /// read them at its edges).
    pub link: Ends<IfCounters>,
    /// The window is the whole run, warm-up included: a counted run sent
    /// its count before the warm-up ended (its window would be empty).
    pub whole_run: bool,
}

impl Window {
    /// The window between two snapshots.
    pub fn between(start: Snapshot, end: Snapshot, link: Ends<IfCounters>) -> Self {
        let seconds = (end.at - start.at).as_secs_f64();
        Self {
            seconds,
            cpu: end.cpu.since(&start.cpu),
            threads: linerate_results::threads::since(&start.threads, &end.threads, seconds),
            softirq: match (&start.softirq, &end.softirq) {
                (Some(a), Some(b)) => b.since(a, seconds),
                _ => Vec::new(),
            },
            start: start.workers,
            end: end.workers,
            link,
            whole_run: false,
        }
    }

    /// linerate's own CPU on `cores` (every core for none) over the
    /// window, when its threads' run time was measured.
    pub fn own_on(&self, cores: &[usize]) -> Option<linerate_results::own::OwnCpu> {
        (!self.threads.is_empty()).then(|| {
            linerate_results::own::own_on(
                cores,
                &self.cpu,
                &self.threads,
                &self.softirq,
                linerate_host::threads::irq_time_accounted().unwrap_or(false),
            )
        })
    }

    /// What the tx end's workers counted in the window, together.
    pub fn tx(&self) -> CounterSnapshot {
        sum(&self.end.tx).since(&sum(&self.start.tx))
    }

    /// What the rx end's workers counted in the window, together.
    pub fn rx(&self) -> CounterSnapshot {
        sum(&self.end.rx).since(&sum(&self.start.rx))
    }

    /// `n` per second of the window (0 for an empty one).
    pub fn per_s(&self, n: u64) -> f64 {
        if self.seconds > 0.0 {
            n as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// Field-wise sum of counters.
pub fn sum(each: &[CounterSnapshot]) -> CounterSnapshot {
    each.iter()
        .fold(CounterSnapshot::default(), |a, b| a.add(b))
}

/// What one end's workers left: what each reported when bound, and its
/// summary when it ended.
#[derive(Debug, Clone)]
pub struct Finished<S> {
    /// Each worker's report when bound.
    pub ready: Vec<Ready>,
    /// Each worker's summary.
    pub summaries: Vec<S>,
}

impl<S> Default for Finished<S> {
    fn default() -> Self {
        Self {
            ready: Vec::new(),
            summaries: Vec::new(),
        }
    }
}

impl<S> Finished<S> {
    /// Waits for every worker; the first worker's error, if any.
    pub fn join(workers: Vec<Worker<S>>) -> Result<Self> {
        let ready = workers.iter().map(|w| w.ready.clone()).collect();
        let summaries = workers
            .into_iter()
            .map(|w| w.join().map_err(|e| anyhow!(e)))
            .collect::<Result<_>>()?;
        Ok(Self { ready, summaries })
    }

    /// The whole-run counters of every worker, together.
    pub fn total(&self, counters: impl Fn(&S) -> CounterSnapshot) -> CounterSnapshot {
        self.summaries
            .iter()
            .fold(CounterSnapshot::default(), |a, s| a.add(&counters(s)))
    }

    /// One report per worker: what it reported when bound, its counters
    /// over `window` (`start` to `end`, by queue) and over the whole run.
    pub fn reports(
        &self,
        role: &'static str,
        totals: impl Fn(&S) -> (CounterSnapshot, XskStats),
        start: &[CounterSnapshot],
        end: &[CounterSnapshot],
    ) -> Vec<WorkerReport> {
        self.ready
            .iter()
            .zip(&self.summaries)
            .enumerate()
            .map(|(q, (ready, summary))| {
                let (total, xsk) = totals(summary);
                WorkerReport {
                    role,
                    queue: q as u32,
                    core: ready.core,
                    tid: ready.tid,
                    window: end[q].since(&start[q]),
                    total,
                    xsk,
                }
            })
            .collect()
    }
}

/// Cores 0, 1, ... busy for these percentages of a window (tests).
#[cfg(test)]
pub fn busy_cores(busy: &[f64]) -> Vec<CoreUse> {
    busy.iter()
        .enumerate()
        .map(|(core, &busy)| CoreUse {
            core,
            busy,
            ..Default::default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(count: u64) -> CounterSnapshot {
        CounterSnapshot {
            frames: count,
            bytes: count * 1514,
            ..Default::default()
        }
    }

    #[test]
    fn a_window_from_its_edges() {
        let window = Window {
            seconds: 0.5,
            start: Ends {
                tx: vec![frames(100), frames(200)],
                rx: vec![frames(90)],
            },
            end: Ends {
                tx: vec![frames(600), frames(700)],
                rx: vec![frames(1000)],
            },
            ..Default::default()
        };
        assert_eq!(window.tx().frames, 1000);
        assert_eq!(window.tx().bytes, 1000 * 1514);
        assert_eq!(window.rx().frames, 910);
        assert_eq!(window.per_s(1000), 2000.0);
        assert_eq!(Window::default().per_s(1000), 0.0);
    }
}
