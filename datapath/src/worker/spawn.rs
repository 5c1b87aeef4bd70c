//! Starting a worker thread: where it runs, what it reports once bound,
//! the stop signal it obeys, and the handle control joins.

use std::{
    sync::{atomic::AtomicBool, Arc},
    thread,
    time::Instant,
};

use crossbeam::channel::{bounded, Receiver};

use super::error::WorkerError;
use crate::binding::BindMode;
use linerate_counters::stats::WorkerCounters;

/// Where a worker runs.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    /// Core to pin the thread to.
    pub core: Option<usize>,
    /// Named network namespace to enter before binding.
    pub netns: Option<String>,
}

/// What a worker reports once its socket is bound.
#[derive(Debug, Clone)]
pub struct Ready {
    /// Mode the socket was bound in.
    pub mode: BindMode,
    /// Why zero-copy was not used.
    pub fallback_reason: Option<String>,
    /// Whether the socket's UMEM is on huge pages.
    pub huge_pages: bool,
    /// Core the thread is pinned to, if pinning worked.
    pub core: Option<usize>,
    /// Kernel thread id of the worker.
    pub tid: i32,
}

/// A running worker.
#[derive(Debug)]
pub struct Worker<S> {
    /// Its live counters.
    pub counters: Arc<WorkerCounters>,
    /// What it reported when bound.
    pub ready: Ready,
    handle: thread::JoinHandle<Result<S, WorkerError>>,
}

impl<S> Worker<S> {
    /// Waits for the worker to finish and returns its summary.
    pub fn join(self) -> Result<S, WorkerError> {
        self.handle.join().map_err(|_| WorkerError::Vanished)?
    }

    /// Whether it has finished.
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }
}

/// The shared stop flag and the hard deadline every worker obeys.
#[derive(Debug, Clone)]
pub struct StopSignal {
    /// Set to stop.
    pub flag: Arc<AtomicBool>,
    /// Nobody runs past this.
    pub deadline: Instant,
}

impl StopSignal {
    /// Whether to stop now.
    #[inline]
    pub fn should_stop(&self, now: Instant) -> bool {
        self.flag.load(std::sync::atomic::Ordering::Relaxed) || now >= self.deadline
    }
}

pub(crate) fn place(p: &Placement) -> Result<Option<usize>, WorkerError> {
    if let Some(ns) = &p.netns {
        crate::netns::enter(ns).map_err(WorkerError::Netns)?;
    }
    match p.core {
        Some(core) => {
            if core_affinity::set_for_current(core_affinity::CoreId { id: core }) {
                Ok(Some(core))
            } else {
                Err(WorkerError::Pin(core))
            }
        }
        None => Ok(None),
    }
}

/// What a worker's set-up yields: its state (its port), the bind mode, why
/// zero-copy was not used, and whether its UMEM is on huge pages.
pub type Setup<St> = (St, BindMode, Option<String>, bool);

/// Spawns a worker: `setup` runs in the new thread after placement and
/// returns the bound state and its `Ready`; `run` then loops. Returns once
/// `setup` is done.
pub(crate) fn spawn_with<St, S>(
    name: String,
    placement: Placement,
    setup: impl FnOnce() -> Result<Setup<St>, WorkerError> + Send + 'static,
    run: impl FnOnce(St, &WorkerCounters) -> Result<S, WorkerError> + Send + 'static,
) -> Result<Worker<S>, WorkerError>
where
    S: Send + 'static,
{
    let counters = Arc::new(WorkerCounters::default());
    let (tx, rx): (_, Receiver<Result<Ready, WorkerError>>) = bounded(1);
    let c = counters.clone();
    let handle = thread::Builder::new()
        .name(name)
        .spawn(move || {
            let bound = place(&placement).and_then(|core| {
                let (st, mode, fallback_reason, huge_pages) = setup()?;
                Ok((st, mode, fallback_reason, huge_pages, core))
            });
            match bound {
                Ok((st, mode, fallback_reason, huge_pages, core)) => {
                    let _ = tx.send(Ok(Ready {
                        mode,
                        fallback_reason,
                        huge_pages,
                        core,
                        tid: nix::unistd::gettid().as_raw(),
                    }));
                    run(st, &c)
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                    Err(WorkerError::Vanished)
                }
            }
        })
        .map_err(|e| WorkerError::Hook(format!("spawning a worker thread failed: {e}")))?;
    match rx.recv() {
        Ok(Ok(ready)) => Ok(Worker {
            counters,
            ready,
            handle,
        }),
        Ok(Err(e)) => {
            let _ = handle.join();
            Err(e)
        }
        Err(_) => {
            let _ = handle.join();
            Err(WorkerError::Vanished)
        }
    }
}

/// Publishes what a turn that moved no frame changed: the idle turns and
/// syscalls (two stores, not one per counter).
#[inline]
pub(crate) fn publish_idle(
    counters: &linerate_counters::stats::WorkerCounters,
    c: &linerate_counters::stats::CounterSnapshot,
) {
    use std::sync::atomic::Ordering::Relaxed;
    counters.idle_loops.store(c.idle_loops, Relaxed);
    counters.syscalls.store(c.syscalls, Relaxed);
}
