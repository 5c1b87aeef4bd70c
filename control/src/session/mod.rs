//! The phases every measured run goes through, in one place. A command
//! (`stream`, `rr`) plans its run, then:
//!
//! 1. [`Session::prepare`]: check, then change. The plan locked the
//!    interfaces; the steering programs are attached (each refuses a
//!    foreign one), then the NAPI mode set and the NAPI threads pinned,
//!    all put back when the session ends ([`system::Restore`]); the
//!    interfaces' and programs' counters are read at the start.
//! 2. [`Session::start`]: the rx end's workers, then (on two hosts, at
//!    the agreed instant) the tx end's; one that fails stops them all.
//! 3. and 4. [`Session::measure`]: the warm-up, then the window between two
//!    snapshots ([`Window`]); both end early on Ctrl-C, a fault of the path
//!    ([`watch::PathWatch`]), the other host's stop, or when the command
//!    says it is done (its senders finished).
//! 5. [`Session::await_peer`]: the rx end of a two-host run waits for the
//!    tx host to finish.
//! 6. [`Session::finish`]: the tx end stops first, the rx end drains what
//!    is in flight, then stops; the counters since the start are read.
//!
//! What was measured ([`Measured`]) becomes the command's result by a pure
//! function (`stream::build`, `rr::build`), tested without a network.
//!
//! Vocabulary: the path has a tx end (stream: the senders, rr: the
//! clients) and an rx end (receivers, responders); [`Ends`] holds one
//! thing of each.

mod ends;
mod interval;
mod peer;
mod placement;
mod receive_work;
mod signal;
mod system;
mod wait;
mod watch;
mod window;

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    thread,
    time::{Duration, Instant},
};

use anyhow::{anyhow, Context, Result};
use linerate_datapath::{
    stats::CounterSnapshot,
    worker::{StopSignal, Worker, WorkerError},
    xsk::XskStats,
};
use linerate_ebpf::{SteerStats, Steering, SteeringConfig};

pub use ends::{Ends, WorkerNames};
pub use peer::{Live, Peer};
pub use placement::placement;
pub use receive_work::napi_beside_receivers;
pub use signal::on_signal;
pub use system::steering_config;
pub use wait::sockets;
#[cfg(test)]
pub use window::busy_cores;
pub use window::{Finished, Window};

use crate::{
    path::{PathEnd, PathPlan},
    spec::{Napi, Timing, Wait},
};
use linerate_host::{environment::Environment, iface::IfCounters};
use linerate_results::{
    envelope::Envelope,
    parts::{InterfaceCounters, WorkerReport},
};
use system::{apply_napi, attach_steering, Restore};
use watch::{counters_or_zero, PathWatch};
use window::{counters, Snapshot};

/// How long the rx end of a two-host run waits past its window for the tx
/// host to say it is done.
const PEER_GRACE: Duration = Duration::from_secs(10);
/// How long receivers keep draining after the senders stop, at most.
const DRAIN_MAX: Duration = Duration::from_secs(2);
/// Receivers stop once nothing arrived for this long.
const DRAIN_QUIET: Duration = Duration::from_millis(150);

/// What a command asks of the first phase.
pub struct Prepare<'a> {
    /// How long the run lasts, how often it reports.
    pub timing: Timing,
    /// How the workers wait.
    pub wait: &'a Wait,
    /// The NAPI mode and threads' policy asked for.
    pub napi: &'a Napi,
    /// The planned path.
    pub path: &'a PathPlan,
    /// The ends whose workers run here.
    pub here: Ends<bool>,
    /// The steering program each end needs, if any (attached only on the
    /// ends that run here).
    pub steering: Ends<Option<SteeringConfig>>,
    /// What `--napi auto` means for this kind of run.
    pub threaded_by_default: bool,
    /// Which ends' NAPI threads are pinned beside their workers.
    pub pin_napi: Ends<bool>,
    /// The sockets each end's workers wait on (for the wait modes).
    pub sockets: Ends<wait::Sockets>,
    /// Whether each end's workers verify the checksums of the frames they
    /// receive (their bad_checksum counts are measurements, live too).
    pub checksums: Ends<bool>,
}

/// How the rx end finishes once the tx end has stopped.
#[derive(Debug, Clone, Copy)]
pub enum Drain {
    /// Until nothing arrived for a while (a stream's frames in flight).
    UntilQuiet,
    /// After a pause (the answers to the last requests).
    Pause(Duration),
}

/// The running workers of both ends.
pub struct Crew<T, R> {
    /// The tx end's.
    pub tx: Vec<Worker<T>>,
    /// The rx end's.
    pub rx: Vec<Worker<R>>,
}

impl<T, R> Crew<T, R> {
    /// What the rx end's workers counted so far, together.
    pub fn rx_now(&self) -> CounterSnapshot {
        window::sum(&counters(&self.rx))
    }
}

/// Everything a run measured: what its result is built from.
#[derive(Debug, Clone)]
pub struct Measured<T, R> {
    /// The measured window.
    pub window: Window,
    /// What the tx end's workers left.
    pub tx: Finished<T>,
    /// What the rx end's workers left.
    pub rx: Finished<R>,
    /// The steering programs' counters over the whole run (zeros where
    /// none ran).
    pub steering: Ends<SteerStats>,
    /// The rx end's program's attach mode ("none (kernel stack)": none).
    pub xdp_mode: String,
    /// Why it did not attach natively.
    pub xdp_fallback_reason: Option<String>,
    /// The interfaces' own counters over the whole run.
    pub interfaces: InterfaceCounters,
    /// The host.
    pub environment: Environment,
    /// The NAPI mode set for the run, if any.
    pub napi: Option<&'static str>,
    /// NAPI threads pinned (pid, core).
    pub napi_threads: Vec<(i32, usize)>,
    /// The wait modes and their kernel settings.
    pub wait: linerate_results::wait::WaitSetup,
    /// The ends whose workers ran here.
    pub here: Ends<bool>,
    /// Whether Ctrl-C or SIGTERM cut the run short.
    pub interrupted: bool,
    /// What ended the run early, if anything did.
    pub fault: Option<String>,
}

impl<T, R> Measured<T, R> {
    /// One report per worker, the tx end's then the rx end's, under the
    /// names the command's results give each end (`totals_*`: a worker's
    /// whole-run counters and socket statistics from its summary).
    pub fn worker_reports(
        &self,
        names: Ends<&'static str>,
        totals_tx: impl Fn(&T) -> (CounterSnapshot, XskStats),
        totals_rx: impl Fn(&R) -> (CounterSnapshot, XskStats),
    ) -> Vec<WorkerReport> {
        let window = &self.window;
        let mut reports = self
            .tx
            .reports(names.tx, totals_tx, &window.start.tx, &window.end.tx);
        reports.extend(
            self.rx
                .reports(names.rx, totals_rx, &window.start.rx, &window.end.rx),
        );
        reports
    }

    /// What every result of this run shares: the host, the window, how the
    /// run ended, `workers` (from [`Self::worker_reports`]) and the
    /// interfaces' counters; no agents (a run on one host, or one side).
    pub fn envelope(&self, workers: Vec<WorkerReport>) -> Envelope {
        Envelope {
            version: env!("CARGO_PKG_VERSION").into(),
            environment: self.environment.clone(),
            window_s: self.window.seconds,
            interrupted: self.interrupted,
            fault: self.fault.clone(),
            workers,
            threads: self.window.threads.clone(),
            softirq: self.window.softirq.clone(),
            interfaces: self.interfaces.clone(),
            agents: None,
            confidence: None,
            disturbed: false,
            noise: None,
            window_whole_run: self.window.whole_run,
        }
    }
}

/// A prepared run: the system changed for it (and put back when it is
/// dropped), its counters read at the start.
pub struct Session<'a> {
    timing: Timing,
    path: &'a PathPlan,
    here: Ends<bool>,
    peer: Option<&'a dyn Peer>,
    interrupted: &'a AtomicBool,
    steering: Ends<Option<Arc<Steering>>>,
    napi: Option<&'static str>,
    napi_threads: Vec<(i32, usize)>,
    interfaces_at_start: Ends<IfCounters>,
    steering_at_start: Ends<SteerStats>,
    stop: Ends<StopSignal>,
    in_window: Arc<AtomicBool>,
    watch: PathWatch,
    wait: linerate_results::wait::WaitSetup,
    intervals: Option<interval::Intervals>,
    checksums: Ends<bool>,
    // Counts each core's softirq time while the run lasts (none when it
    // could not be attached: said on stderr).
    softirq: Option<linerate_ebpf::SoftirqClock>,
    // Puts back the NAPI settings of the wait modes.
    _wait_restore: wait::WaitRestore,
    // Dropped last: puts back what prepare changed.
    _restore: Restore,
}

/// The program's counters, or zeros when there is none.
fn steer_stats(program: &Option<Arc<Steering>>) -> Result<SteerStats> {
    Ok(match program {
        Some(program) => program.stats()?,
        None => SteerStats::default(),
    })
}

impl<'a> Session<'a> {
    /// The NAPI mode set for the run ("threaded", "softirq"), if any.
    pub fn napi(&self) -> Option<&'static str> {
        self.napi
    }

    /// Phase 1: attaches the steering programs, sets NAPI, reads the
    /// counters at the start. `peer`: the other host, when this is one
    /// side of a two-host run.
    pub fn prepare(
        asked: Prepare<'a>,
        peer: Option<&'a dyn Peer>,
        interrupted: &'a AtomicBool,
    ) -> Result<Self> {
        let (timing, path, here) = (asked.timing, asked.path, asked.here);
        // What a run killed before it could clean up left (its journal),
        // put back before this one measures, and said (a path in memory
        // changes nothing of the system, and may run without root; so does
        // a run without root on kernel sockets).
        if path.changes_system() {
            linerate_host::putback::replay_all().warn();
        }
        // The wait modes first: a mode the kernel would not honour is
        // refused before anything changes.
        let (wait, wait_restore) = wait::apply(asked.wait, path, here, asked.sockets)?;
        // The rx end first (rr: the responder's program answers requests).
        let attach = |end, cfg: Option<SteeringConfig>, runs_here: bool| {
            cfg.filter(|_| runs_here)
                .map(|c| attach_steering(end, c))
                .transpose()
        };
        let rx = attach(&path.rx, asked.steering.rx, here.rx)?;
        let tx = attach(&path.tx, asked.steering.tx, here.tx)?;
        let steering = Ends { tx, rx };
        // Check, then change: only now the NAPI mode and pinning.
        let mut restore = Restore::default();
        let (napi, napi_threads) = if !path.changes_system() {
            // No interface (or no root): no NAPI to set or place.
            (None, Vec::new())
        } else {
            let own = receive_work::check(asked.napi, path, asked.threaded_by_default)?;
            let napi = apply_napi(asked.napi, path, asked.threaded_by_default, &mut restore)?;
            let threads = receive_work::place_napi(
                (asked.napi, path),
                own.as_deref(),
                here,
                asked.pin_napi,
                &mut restore,
            )?;
            (napi, threads)
        };
        let info = |end: &PathEnd| -> Result<IfCounters> {
            if path.in_memory {
                return Ok(IfCounters::default());
            }
            Ok(linerate_host::iface::info(end.netns.as_deref(), &end.iface)?.counters)
        };
        let interfaces_at_start = Ends {
            tx: info(&path.tx)?,
            rx: info(&path.rx)?,
        };
        let steering_at_start = Ends {
            tx: steer_stats(&steering.tx)?,
            rx: steer_stats(&steering.rx)?,
        };
        // No softirq of a path in memory to count; no BPF without root.
        let softirq = path
            .changes_system()
            .then(|| {
                linerate_ebpf::SoftirqClock::attach(std::process::id())
                    .map_err(|e| eprintln!("linerate: softirq time per core not measured: {e}"))
                    .ok()
            })
            .flatten();
        let started = Instant::now();
        let planned = timing.warmup + timing.duration;
        let stop = |extra_s| StopSignal {
            flag: Arc::new(AtomicBool::new(false)),
            deadline: started + hard_deadline(planned, path.queues, extra_s),
        };
        Ok(Self {
            timing,
            path,
            here,
            peer,
            interrupted,
            steering,
            napi,
            napi_threads,
            interfaces_at_start,
            steering_at_start,
            stop: Ends {
                tx: stop(0),
                rx: stop(5),
            },
            // Set as the window's first counters are taken (with no
            // warm-up too: on two hosts the window opens at the agreed
            // start, after the workers began).
            in_window: Arc::new(AtomicBool::new(false)),
            watch: PathWatch::new(path),
            wait,
            intervals: timing
                .intervals
                .map(|every| interval::Intervals::start(every, path.queues)),
            checksums: asked.checksums,
            softirq,
            _wait_restore: wait_restore,
            _restore: restore,
        })
    }

    /// The ends whose workers run here.
    pub fn here(&self) -> Ends<bool> {
        self.here
    }

    /// The stop signal of each end's workers.
    pub fn stop_signals(&self) -> &Ends<StopSignal> {
        &self.stop
    }

    /// The steering program attached to each end, if any.
    pub fn steering(&self) -> &Ends<Option<Arc<Steering>>> {
        &self.steering
    }

    /// Set while the window is measured (for workers that record only
    /// then: rr's response times).
    pub fn in_window(&self) -> Arc<AtomicBool> {
        self.in_window.clone()
    }

    /// Phase 2: starts worker `q` of the rx end (unless `spawn_rx` is None:
    /// the end answers in its XDP program), then, at the agreed start, of
    /// the tx end, for every queue, on the ends that run here. A worker
    /// that fails to start stops those started.
    pub fn start<T, R>(
        &self,
        names: WorkerNames,
        spawn_rx: Option<&dyn Fn(u32) -> Result<Worker<R>, WorkerError>>,
        spawn_tx: &dyn Fn(u32) -> Result<Worker<T>, WorkerError>,
    ) -> Result<Crew<T, R>> {
        let mut crew = Crew {
            tx: Vec::new(),
            rx: Vec::new(),
        };
        let queues = self.path.queues;
        if let Some(spawn) = spawn_rx.filter(|_| self.here.rx) {
            for q in 0..queues {
                match spawn(q) {
                    Ok(worker) => crew.rx.push(worker),
                    Err(e) => {
                        self.abandon(crew);
                        return Err(anyhow!(e)).with_context(|| {
                            format!("starting {} on {} queue {q}", names.rx, self.path.rx.iface)
                        });
                    }
                }
            }
        }
        if !self.here.tx {
            return Ok(crew);
        }
        if let Some(peer) = self.peer {
            // The tx end starts at the agreed instant, when the rx end's
            // workers on the other host are bound.
            wait_until(peer.start(), &|| {
                self.interrupted.load(Ordering::Relaxed) || peer.stop_asked()
            });
        }
        for q in 0..queues {
            match spawn_tx(q) {
                Ok(worker) => crew.tx.push(worker),
                Err(e) => {
                    self.abandon(crew);
                    return Err(anyhow!(e)).with_context(|| {
                        format!("starting {} on {} queue {q}", names.tx, self.path.tx.iface)
                    });
                }
            }
        }
        Ok(crew)
    }

    /// Stops and joins the workers of a run that cannot go on.
    fn abandon<T, R>(&self, crew: Crew<T, R>) {
        self.stop.tx.flag.store(true, Ordering::Relaxed);
        self.stop.rx.flag.store(true, Ordering::Relaxed);
        for worker in crew.tx {
            let _ = worker.join();
        }
        for worker in crew.rx {
            let _ = worker.join();
        }
    }

    /// Hands the live counters to the peer, if it wants them now.
    fn live<T, R>(&self, crew: &Crew<T, R>) {
        let Some(peer) = self.peer else {
            return;
        };
        let program = self.steering.rx.as_ref().or(self.steering.tx.as_ref());
        peer.live(&|| Live {
            tx: counters(&crew.tx),
            rx: counters(&crew.rx),
            xdp: program.and_then(|s| s.stats().ok()),
            tx_checksums: self.checksums.tx,
            rx_checksums: self.checksums.rx,
        });
    }

    /// Whether the run must end now: Ctrl-C, a fault of the path, or the
    /// other host's stop.
    fn stopped<T, R>(&self, crew: &Crew<T, R>) -> bool {
        self.live(crew);
        if let Some(iv) = &self.intervals {
            iv.offer(self.in_window.load(Ordering::Relaxed), || {
                (
                    self.here.tx.then(|| counters(&crew.tx)),
                    self.here.rx.then(|| counters(&crew.rx)),
                )
            });
        }
        self.interrupted.load(Ordering::Relaxed)
            || self.watch.fault()
            || self.peer.is_some_and(|p| p.stop_asked())
    }

    /// Phases 3 and 4: the warm-up, from when every worker is running (on
    /// two hosts: from the agreed start), then the window. Both end early
    /// when the run is stopped or `done()` (nothing more to measure).
    /// `link_rates`: read the interfaces' own counters at the window's
    /// edges too. `counted`: the run ends by itself (`--count`), perhaps
    /// within its warm-up, and is then measured over the whole run.
    pub fn measure<T, R>(
        &self,
        crew: &Crew<T, R>,
        (link_rates, counted): (bool, bool),
        done: &dyn Fn() -> bool,
    ) -> Result<Window> {
        let end_early = || self.stopped(crew) || done();
        let running = self
            .peer
            .map_or_else(Instant::now, |p| p.start().max(Instant::now()));
        let link = || {
            if link_rates {
                Ends {
                    tx: counters_or_zero(&self.path.tx),
                    rx: counters_or_zero(&self.path.rx),
                }
            } else {
                Ends::default()
            }
        };
        let napi: Vec<i32> = self.napi_threads.iter().map(|(pid, _)| *pid).collect();
        // The counters at the start of the warm-up too: a counted run that
        // sends its count before the warm-up ends has its whole run as its
        // window, not an empty one (0 frames/s for frames that all came).
        let warm = if self.timing.warmup.is_zero() || !counted {
            None
        } else {
            Some((
                link(),
                Snapshot::take(&crew.tx, &crew.rx, &napi, self.softirq.as_ref())?,
            ))
        };
        wait_until(running + self.timing.warmup, &end_early);
        let whole_run = warm.is_some() && done() && Instant::now() < running + self.timing.warmup;
        let (link_start, start, whole_run) = match warm {
            // The workers' counters from their start (the snapshot came a
            // moment after it): every frame of the count in the window.
            Some((link_start, mut start)) if whole_run => {
                for c in start
                    .workers
                    .tx
                    .iter_mut()
                    .chain(start.workers.rx.iter_mut())
                {
                    *c = CounterSnapshot::default();
                }
                (link_start, start, true)
            }
            _ => (
                link(),
                Snapshot::take(&crew.tx, &crew.rx, &napi, self.softirq.as_ref())?,
                false,
            ),
        };
        self.in_window.store(true, Ordering::Relaxed);
        wait_until(start.at + self.timing.duration, &end_early);
        self.in_window.store(false, Ordering::Relaxed);
        let end = Snapshot::take(&crew.tx, &crew.rx, &napi, self.softirq.as_ref())?;
        // A worker that ended because its interface went away ended the
        // window early: look now.
        self.watch.check_now();
        let link_end = link();
        let link = Ends {
            tx: link_end.tx.since(&link_start.tx),
            rx: link_end.rx.since(&link_start.rx),
        };
        Ok(Window {
            whole_run,
            ..Window::between(start, end, link)
        })
    }

    /// Phase 5: on the rx end of a two-host run, waits (at most
    /// [`PEER_GRACE`]) for the tx host to say it is done, or for
    /// `arrived()` (everything a counted run sends is in).
    pub fn await_peer<T, R>(&self, crew: &Crew<T, R>, arrived: &dyn Fn() -> bool) {
        let Some(peer) = self.peer.filter(|_| !self.here.tx) else {
            return;
        };
        wait_until(Instant::now() + PEER_GRACE, &|| {
            self.live(crew);
            self.interrupted.load(Ordering::Relaxed) || peer.stop_asked() || arrived()
        });
    }

    /// Phase 6: stops the tx end, lets the rx end finish as `drain` says,
    /// stops it; reads the counters since the start and puts back what
    /// [`Session::prepare`] changed.
    pub fn finish<T, R>(
        self,
        crew: Crew<T, R>,
        window: Window,
        drain: Drain,
    ) -> Result<Measured<T, R>> {
        self.stop.tx.flag.store(true, Ordering::Relaxed);
        let tx = Finished::join(crew.tx)?;
        match drain {
            Drain::UntilQuiet if !crew.rx.is_empty() => drain_until_quiet(&crew.rx),
            Drain::UntilQuiet => {}
            Drain::Pause(d) => thread::sleep(d),
        }
        self.stop.rx.flag.store(true, Ordering::Relaxed);
        let rx = Finished::join(crew.rx)?;

        let steering = Ends {
            tx: steer_stats(&self.steering.tx)?.since(&self.steering_at_start.tx),
            rx: steer_stats(&self.steering.rx)?.since(&self.steering_at_start.rx),
        };
        let program = self.steering.rx.as_ref();
        let xdp_mode = program.map_or("none (kernel stack)".to_string(), |s| s.mode().to_string());
        let xdp_fallback_reason = program.and_then(|s| s.fallback_reason().map(str::to_string));
        let Self {
            path,
            here,
            interrupted,
            steering: programs,
            napi,
            napi_threads,
            interfaces_at_start,
            watch,
            wait,
            ..
        } = self;
        // Detach before reading the interfaces' counters.
        drop(programs);
        let interfaces = InterfaceCounters {
            tx: counters_or_zero(&path.tx).since(&interfaces_at_start.tx),
            rx: counters_or_zero(&path.rx).since(&interfaces_at_start.rx),
        };
        Ok(Measured {
            window,
            tx,
            rx,
            steering,
            xdp_mode,
            xdp_fallback_reason,
            interfaces,
            environment: linerate_host::environment::describe(),
            napi,
            napi_threads,
            wait,
            here,
            interrupted: interrupted.load(Ordering::Relaxed),
            fault: watch.message(),
        })
    }
}

/// How long past its planned end a worker may run before it stops by
/// itself: the safety net behind the stop flag. Generous, because binding
/// many queues (each with its UMEM) can take seconds on a loaded machine,
/// and the deadline counts from before the binding.
fn hard_deadline(planned: Duration, queues: u32, extra_s: u64) -> Duration {
    planned + Duration::from_secs(30 + extra_s + 2 * u64::from(queues))
}

/// Sleeps until `until`, or until `stop` says so.
fn wait_until(until: Instant, stop: &dyn Fn() -> bool) {
    loop {
        let now = Instant::now();
        if now >= until || stop() {
            return;
        }
        thread::sleep((until - now).min(Duration::from_millis(20)));
    }
}

/// Waits until the receivers have seen nothing new for a while.
fn drain_until_quiet<R>(rx: &[Worker<R>]) {
    let total = || rx.iter().map(|w| w.counters.snapshot().frames).sum::<u64>();
    let end = Instant::now() + DRAIN_MAX;
    let mut last = total();
    let mut quiet_since = Instant::now();
    while Instant::now() < end {
        thread::sleep(Duration::from_millis(10));
        let now = total();
        if now != last {
            last = now;
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= DRAIN_QUIET {
            return;
        }
    }
}

#[cfg(test)]
impl<T, R> Measured<T, R> {
    /// A run measured on one host, with the given window and workers, and
    /// nothing else of note: what the builders' tests start from.
    pub fn for_test(window: Window, tx: Finished<T>, rx: Finished<R>) -> Self {
        Self {
            window,
            tx,
            rx,
            steering: Ends::default(),
            xdp_mode: "native".into(),
            xdp_fallback_reason: None,
            interfaces: InterfaceCounters::default(),
            environment: Environment {
                kernel: "6.18.0".into(),
                cpus: 2,
                cpu_model: "test".into(),
            },
            napi: Some("threaded"),
            napi_threads: Vec::new(),
            wait: Default::default(),
            here: Ends { tx: true, rx: true },
            interrupted: false,
            fault: None,
        }
    }
}
