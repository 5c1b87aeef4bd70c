//! Pinned worker threads: one per (interface, queue), each owning its
//! socket and rings. Workers set themselves up in their own thread (the
//! network namespace and core are per thread), say so on a channel, then
//! run until told to stop, their deadline passes, or their frames are
//! all sent.

mod counted;
mod flows;
mod gen;
#[cfg(test)]
mod loopback;
mod outbox;
mod rr;
mod rx;
pub(crate) mod transactions;
mod tx;

use std::{
    sync::{atomic::AtomicBool, Arc},
    thread,
    time::Instant,
};

use crossbeam::channel::{bounded, Receiver};

pub use counted::{spawn_counted, CountedWorkerConfig};
pub use flows::{FlowAccounting, FlowTable, RxSummary, MAX_FLOWS};
pub use gen::{spawn_gen, GenCredit, GenWorkerConfig};
pub use rr::{spawn_client, spawn_responder, RrSummary, RrWorkerConfig};
pub use rx::{spawn_rx, OnBound, RxWorkerConfig};
pub use transactions::{ClientConfig, MAX_LATENCY_NS};
pub use tx::{spawn_tx, TxSummary, TxWorkerConfig};

use crate::{
    stats::WorkerCounters,
    xsk::{BindMode, XskError},
};

/// How a worker waits when its ring has nothing for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitMode {
    /// Spin on the rings (non-blocking, burns the core).
    Busy,
    /// Sleep in poll() on the socket (blocking).
    #[default]
    Wait,
    /// Kernel busy polling (SO_BUSY_POLL): a blocking receive polls the
    /// device queue's NAPI before it sleeps. See [`crate::busy_poll`].
    BusyPoll,
    /// Preferred busy polling (SO_PREFER_BUSY_POLL, SO_BUSY_POLL_BUDGET,
    /// the NAPI's defer-hard-irqs and gro-flush-timeout).
    PreferBusyPoll,
    /// IRQ suspension: epoll busy polling (EPIOCSPARAMS) with the NAPI's
    /// irq-suspend-timeout (Linux 6.13+).
    IrqSuspend,
}

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

/// Why a worker could not start or stopped early.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// Entering the namespace failed.
    #[error("{0}")]
    Netns(std::io::Error),
    /// Pinning to a core failed.
    #[error("pinning to core {0} failed: the core does not exist or is not allowed (see `nproc`)")]
    Pin(usize),
    /// AF_XDP setup or I/O failed.
    #[error(transparent)]
    Xsk(#[from] XskError),
    /// The frame could not be built.
    #[error(transparent)]
    Frame(#[from] crate::frame::FrameError),
    /// The caller's hook after binding failed (e.g. registering in XSKMAP).
    #[error("{0}")]
    Hook(String),
    /// The thread ended without a word.
    #[error("worker thread ended before reporting (panicked?)")]
    Vanished,
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

fn place(p: &Placement) -> Result<Option<usize>, WorkerError> {
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

/// Whether an AF_XDP I/O error means the interface went away (deleted or
/// down): the worker then ends with what it counted, and control reports
/// the fault.
pub(crate) fn device_gone(e: &XskError) -> bool {
    matches!(e, XskError::Io(io) if matches!(io.raw_os_error(), Some(libc::ENXIO | libc::ENODEV | libc::ENETDOWN)))
}

/// `Ok(true)` to go on, `Ok(false)` when the interface is gone, the error
/// otherwise.
pub(crate) fn alive<T>(r: Result<T, XskError>) -> Result<bool, WorkerError> {
    match r {
        Ok(_) => Ok(true),
        Err(e) if device_gone(&e) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// What a worker's set-up yields: its state, the bind mode, why zero-copy
/// was not used, and whether its UMEM is on huge pages.
pub(crate) type Setup<St> = (St, BindMode, Option<String>, bool);

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
