//! What every measured run does around its workers: attach the steering
//! program in the right namespace, pin NAPI threads, wait for the window,
//! and snapshot counters and CPU at its edges.

use std::{
    sync::Arc,
    thread,
    time::{Duration, Instant},
};

use anyhow::{anyhow, Context, Result};
use linerate_datapath::{
    stats::CounterSnapshot,
    worker::{WaitMode, Worker},
};
use linerate_ebpf::{AttachPolicy, Steering, SteeringConfig};

use crate::{
    cli::{NapiArg, RunArgs, XdpModeArg},
    cpu::CpuSample,
    napi,
    path::Side,
};

/// The steering configuration for UDP ports `lo..=hi` on a run.
pub fn steering_config(a: &RunArgs, lo: u16, hi: u16, respond: bool) -> SteeringConfig {
    SteeringConfig {
        port_lo: lo,
        port_hi: hi,
        policy: match a.xdp_mode {
            XdpModeArg::Auto => AttachPolicy::Auto,
            XdpModeArg::Native => AttachPolicy::Native,
            XdpModeArg::Generic => AttachPolicy::Generic,
        },
        force: a.force,
        respond,
        drop_ppm: (a.inject_loss * 10_000.0).round() as u32,
    }
}

/// Loads and attaches the steering program from inside the side's
/// namespace (interface indexes are per namespace).
pub fn attach_steering(side: &Side, cfg: SteeringConfig) -> Result<Arc<Steering>> {
    let iface = side.iface.clone();
    let netns = side.netns.clone();
    thread::spawn(move || -> Result<Steering> {
        if let Some(ns) = &netns {
            linerate_datapath::netns::enter(ns)?;
        }
        Ok(Steering::attach(&iface, cfg)?)
    })
    .join()
    .map_err(|_| anyhow!("the XDP attach thread panicked"))?
    .map(Arc::new)
}

/// What a run changed on the system, put back when it ends: dropped at
/// the end of the run, on every error path, after Ctrl-C and on a panic.
/// NAPI threads' CPU affinity first (the threads may go with the mode),
/// then each interface's NAPI mode.
#[derive(Default)]
pub struct Restore {
    threaded: Vec<(Option<String>, String, String)>,
    affinity: Vec<(i32, nix::sched::CpuSet)>,
}

impl Drop for Restore {
    fn drop(&mut self) {
        for (pid, set) in self.affinity.drain(..).rev() {
            napi::set_affinity(pid, &set);
        }
        for (ns, iface, v) in self.threaded.drain(..).rev() {
            match crate::sysfs::write(ns.as_deref(), &iface, crate::sysfs::Attr::Threaded, &v) {
                Ok(()) => {}
                // NAPI went with the XDP program: softirq is all there is.
                Err(e) if v == "0" && no_napi(&e) => {}
                Err(e) => {
                    eprintln!(
                        "linerate: warning: could not put NAPI mode {v} back on {iface}: {e:#}"
                    );
                }
            }
        }
    }
}

/// Whether writing `threaded` failed because the interface has no NAPI
/// (the kernel says EOPNOTSUPP, or EIO on some versions).
fn no_napi(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<std::io::Error>())
        .any(|io| {
            matches!(
                io.raw_os_error(),
                Some(nix::libc::EIO | nix::libc::EOPNOTSUPP)
            )
        })
}

/// Pins the side's NAPI threads to `cores` (round-robin), recording each
/// thread's affinity in `restore` first.
pub fn pin_napi(side: &Side, cores: &[usize], restore: &mut Restore) -> Vec<(i32, usize)> {
    let mut threads = napi::threads(&side.iface);
    threads.sort_unstable();
    threads
        .into_iter()
        .enumerate()
        .filter_map(|(i, pid)| {
            let core = cores[i % cores.len()];
            let before = napi::affinity(pid)?;
            napi::pin_one(pid, core).then(|| {
                restore.affinity.push((pid, before));
                (pid, core)
            })
        })
        .collect()
}

/// Applies the run's NAPI mode to both ends of the path; `threaded_by_default`
/// is what `auto` means for this kind of run. Returns the mode set, if any.
/// Each interface's mode before is recorded in `restore`; an interface
/// already in the mode is left alone. Called once every check of the run
/// has passed (the XDP programs attached, the interfaces locked).
pub fn apply_napi(
    a: &RunArgs,
    path: &crate::path::PathPlan,
    threaded_by_default: bool,
    restore: &mut Restore,
) -> Result<Option<&'static str>> {
    use crate::sysfs::{read, write, Attr};
    let threaded = match (a.napi, path.lab.is_some()) {
        (NapiArg::Keep, _) | (NapiArg::Auto, false) => return Ok(None),
        (NapiArg::Auto, true) => threaded_by_default,
        (NapiArg::Threaded, _) => true,
        (NapiArg::Softirq, _) => false,
    };
    let want = if threaded { "1" } else { "0" };
    let mut done: Vec<(&Option<String>, &String)> = Vec::new();
    for side in [&path.tx, &path.rx] {
        // One interface as both ends (one side of a two-host run).
        if done.contains(&(&side.netns, &side.iface)) {
            continue;
        }
        done.push((&side.netns, &side.iface));
        let ns = side.netns.as_deref();
        let before = read(ns, &side.iface, Attr::Threaded)
            .with_context(|| format!("reading the NAPI mode of {}", side.iface))?;
        if before == want {
            continue;
        }
        write(ns, &side.iface, Attr::Threaded, want).map_err(|e| {
            if no_napi(&e) {
                anyhow!(
                    "interface {} has no NAPI to make {} (veth gets NAPI when GRO is on or an XDP program is attached): turn GRO on with `ethtool -K {} gro on`, or leave NAPI as it is with --napi keep",
                    side.iface,
                    if threaded { "threaded" } else { "softirq" },
                    side.iface
                )
            } else {
                e.context(format!("setting NAPI mode on {}", side.iface))
            }
        })?;
        restore
            .threaded
            .push((side.netns.clone(), side.iface.clone(), before));
    }
    Ok(Some(if threaded { "threaded" } else { "softirq" }))
}

/// How long past its planned end a worker may run before it stops by
/// itself: the safety net behind the stop flag. Generous, because binding
/// many queues (each with its UMEM) can take seconds on a loaded machine,
/// and the deadline counts from before the binding.
pub fn hard_deadline(
    planned: std::time::Duration,
    queues: u32,
    extra_s: u64,
) -> std::time::Duration {
    planned + Duration::from_secs(30 + extra_s + 2 * u64::from(queues))
}

/// Watches the path during a run: an interface that disappears, goes down
/// or changes its MTU, or a namespace that is removed or replaced (by
/// identity, not by name: `ip netns del` + `add` makes a new namespace of
/// the same name) ends the run (with the figures so far).
pub struct PathWatch {
    sides: Vec<Side>,
    mtu: u32,
    last: std::cell::Cell<Instant>,
    fault: std::cell::RefCell<Option<String>>,
}

impl PathWatch {
    /// Watches both ends of `path`.
    pub fn new(path: &crate::path::PathPlan) -> Self {
        Self {
            sides: vec![path.tx.clone(), path.rx.clone()],
            mtu: path.mtu,
            last: std::cell::Cell::new(Instant::now()),
            fault: std::cell::RefCell::new(None),
        }
    }

    fn problem(&self, s: &Side) -> Option<String> {
        let iface = &s.iface;
        if let Some(ns) = &s.netns {
            match crate::path::netns_id(Some(ns)) {
                Err(_) => {
                    return Some(format!(
                        "namespace {ns} was removed during the run (lab down or `ip netns del`?)"
                    ))
                }
                Ok(id) if id != s.ns_id => {
                    return Some(format!(
                        "namespace {ns} was replaced by another of the same name during the run (lab up, or `ip netns del` and `add`?): {iface} is no longer in it"
                    ))
                }
                Ok(_) => {}
            }
        }
        match crate::iface::info(s.netns.as_deref(), iface) {
            Err(_) => Some(format!("interface {iface} disappeared during the run")),
            Ok(i) if i.ifindex != s.info.ifindex => Some(format!(
                "interface {iface} was replaced by another of the same name during the run"
            )),
            Ok(i) if !i.up => Some(format!("interface {iface} went down during the run")),
            Ok(i) if i.mtu < self.mtu => Some(format!(
                "the MTU of {iface} changed from {} to {} during the run",
                self.mtu, i.mtu
            )),
            Ok(_) => None,
        }
    }

    /// Whether the run must end; looks at most every 250 ms.
    pub fn fault(&self) -> bool {
        if self.fault.borrow().is_some() {
            return true;
        }
        if self.last.get().elapsed() < Duration::from_millis(250) {
            return false;
        }
        self.last.set(Instant::now());
        for s in &self.sides {
            if let Some(p) = self.problem(s) {
                *self.fault.borrow_mut() = Some(p);
                return true;
            }
        }
        false
    }

    /// Looks now, whenever it last looked (at the end of a run: a worker
    /// that ended because its interface went away leaves the window early).
    pub fn check_now(&self) -> bool {
        if let Some(t) = Instant::now().checked_sub(Duration::from_secs(1)) {
            self.last.set(t);
        }
        self.fault()
    }

    /// What ended the run, if anything did.
    pub fn message(&self) -> Option<String> {
        self.fault.borrow().clone()
    }
}

/// A side's interface counters, or zeros when it is gone (the run's fault
/// says why).
pub fn counters_or_zero(side: &Side) -> crate::iface::IfCounters {
    crate::iface::info(side.netns.as_deref(), &side.iface)
        .map(|i| i.counters)
        .unwrap_or_default()
}

/// Sleeps until `until`, or until `stop` says so.
pub fn wait_until(until: Instant, stop: &dyn Fn() -> bool) {
    loop {
        let now = Instant::now();
        if now >= until || stop() {
            return;
        }
        thread::sleep((until - now).min(Duration::from_millis(20)));
    }
}

/// Counters of two groups of workers and every core's CPU at one instant.
pub struct Snapshot {
    /// When.
    pub at: Instant,
    /// First group (senders, clients).
    pub a: Vec<CounterSnapshot>,
    /// Second group (receivers, responders).
    pub b: Vec<CounterSnapshot>,
    /// CPU.
    pub cpu: CpuSample,
}

impl Snapshot {
    /// Takes one.
    pub fn take<S, T>(a: &[Worker<S>], b: &[Worker<T>]) -> Result<Self> {
        Ok(Self {
            at: Instant::now(),
            a: a.iter().map(|w| w.counters.snapshot()).collect(),
            b: b.iter().map(|w| w.counters.snapshot()).collect(),
            cpu: CpuSample::read()?,
        })
    }
}

/// Field-wise sum of counters.
pub fn sum(v: &[CounterSnapshot]) -> CounterSnapshot {
    v.iter().fold(CounterSnapshot::default(), |a, b| a.add(b))
}

/// Waits for every worker; returns what each reported when bound and its
/// summary, or the first worker's error.
pub fn join_all<S>(
    workers: Vec<Worker<S>>,
) -> Result<(Vec<linerate_datapath::worker::Ready>, Vec<S>)> {
    let ready = workers.iter().map(|w| w.ready.clone()).collect();
    let results = workers
        .into_iter()
        .map(|w| w.join().map_err(|e| anyhow!(e)))
        .collect::<Result<_>>()?;
    Ok((ready, results))
}

/// One report per worker of a group: what it reported when bound, its
/// window (between two snapshots) and its whole-run totals.
pub fn worker_reports(
    role: &'static str,
    ready: &[linerate_datapath::worker::Ready],
    totals: impl Iterator<Item = (CounterSnapshot, linerate_datapath::xsk::XskStats)>,
    start: &[CounterSnapshot],
    end: &[CounterSnapshot],
) -> Vec<crate::results::parts::WorkerReport> {
    ready
        .iter()
        .zip(totals)
        .enumerate()
        .map(
            |(q, (r, (total, xsk)))| crate::results::parts::WorkerReport {
                role,
                queue: q as u32,
                core: r.core,
                tid: r.tid,
                window: end[q].since(&start[q]),
                total,
                xsk,
            },
        )
        .collect()
}

/// What the run's placement is, in words: the workers' cores (chosen by
/// linerate or given), the NAPI mode and where its threads were pinned.
pub fn placement(
    a: &RunArgs,
    roles: (&str, &str),
    path: &crate::path::PathPlan,
    napi: Option<&str>,
    napi_threads: &[(i32, usize)],
    tx_wait: WaitMode,
) -> String {
    let who = if path.crossed {
        "chosen by linerate: too few cores to keep the roles apart, so each core sends one queue and receives another"
    } else if a.tx_cores.is_none() && a.rx_cores.is_none() {
        "chosen by linerate: one core per role, apart"
    } else {
        "as given"
    };
    let who = match (a.tx_wait, tx_wait) {
        (None, WaitMode::Wait) => {
            format!(
                "{who}; {}s block, as they share cores with receive work",
                roles.0
            )
        }
        _ => who.to_string(),
    };
    let napi = match (napi, a.napi) {
        (None, _) => "NAPI left as configured".to_string(),
        (Some(m), crate::cli::NapiArg::Auto) => format!("NAPI {m} (auto)"),
        (Some(m), _) => format!("NAPI {m} (as given)"),
    };
    let pinned = if napi_threads.is_empty() {
        String::new()
    } else {
        let cores: Vec<String> = napi_threads
            .iter()
            .map(|(pid, core)| format!("{pid} on core {core}"))
            .collect();
        format!(
            ", NAPI threads pinned beside the {}: {}",
            roles.1,
            cores.join(", ")
        )
    };
    format!(
        "{} cores {:?}, {} cores {:?} ({who}); {napi}{pinned}",
        roles.0, path.tx_cores, roles.1, path.rx_cores
    )
}
