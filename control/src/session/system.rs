//! What a run changes on the system, and puts back: the steering program
//! attached in the right namespace, the NAPI mode of the interfaces and
//! the CPU affinity of their NAPI threads.

use std::{sync::Arc, thread};

use anyhow::{anyhow, Context, Result};
use linerate_ebpf::{Steering, SteeringConfig};

use crate::{
    path::{PathEnd, PathPlan},
    spec::{Napi, NapiMode, Xdp},
};
use linerate_host::{
    journal::Entry,
    napi,
    putback::{no_napi, Changes},
};

/// The steering configuration for UDP ports `lo..=hi` on a run.
pub fn steering_config(xdp: &Xdp, lo: u16, hi: u16, respond: bool) -> SteeringConfig {
    SteeringConfig {
        port_lo: lo,
        port_hi: hi,
        policy: xdp.policy,
        force: xdp.force,
        respond,
        drop_ppm: (xdp.inject_loss * 10_000.0).round() as u32,
    }
}

/// Loads and attaches the steering program from inside the side's
/// namespace (interface indexes are per namespace).
pub fn attach_steering(side: &PathEnd, cfg: SteeringConfig) -> Result<Arc<Steering>> {
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

/// What a run changed on the system, written down in the run's journal
/// before each change and put back when dropped: at the end of the run,
/// on every error path, after a signal and on a panic; after SIGKILL or a
/// crash, by whoever replays the journal next (`putback`). NAPI threads'
/// scheduling and CPU affinity first (the threads may go with the mode),
/// then each interface's NAPI mode.
#[derive(Debug, Default)]
pub struct Restore {
    changes: Changes,
}

impl Restore {
    /// Sets the scheduling of `thread` (of NAPI `napi` of `side`'s
    /// interface), written down before.
    pub fn set_priority(
        &mut self,
        side: &PathEnd,
        thread: napi::Thread,
        to: linerate_datapath::priority::Priority,
    ) -> Result<()> {
        use linerate_datapath::priority;
        let before = priority::read(thread.pid)?;
        self.changes.record(Entry::Sched {
            netns: side.netns.clone(),
            iface: side.iface.clone(),
            id: thread.napi,
            pid: thread.pid,
            sched: before,
        })?;
        priority::set(thread.pid, to)?;
        Ok(())
    }
}

/// The command that turns GRO on for `iface` (in `netns`), to paste.
fn gro_on(netns: Option<&str>, iface: &str) -> String {
    let mut words = Vec::new();
    if let Some(ns) = netns {
        words.extend(["ip", "netns", "exec", ns]);
    }
    words.extend(["ethtool", "-K", iface, "gro", "on"]);
    linerate_host::sh::shown(&words)
}

/// Pins the side's NAPI threads (napi-get's, for its own interface) to
/// `cores` (round-robin), writing each thread's affinity down first.
/// Returns each thread pinned and its core.
pub fn pin_napi(
    side: &PathEnd,
    cores: &[usize],
    restore: &mut Restore,
) -> Result<Vec<(napi::Thread, usize)>> {
    let threads = napi::threads(side.netns.as_deref(), &side.iface)
        .with_context(|| format!("reading the NAPI threads of {} (napi-get)", side.iface))?;
    let mut pinned = Vec::new();
    for (i, thread) in threads.into_iter().enumerate() {
        let core = cores[i % cores.len()];
        let Some(before) = napi::affinity(thread.pid) else {
            continue;
        };
        restore.changes.record(Entry::Affinity {
            netns: side.netns.clone(),
            iface: side.iface.clone(),
            id: thread.napi,
            pid: thread.pid,
            cores: napi::cores_of(&before),
        })?;
        if napi::pin_one(thread.pid, core) {
            pinned.push((thread, core));
        }
    }
    Ok(pinned)
}

/// Applies the run's NAPI mode to both ends of the path; `threaded_by_default`
/// is what `auto` means for this kind of run. Returns the mode set, if any.
/// Each interface's mode before is recorded in `restore`; an interface
/// already in the mode is left alone. Called once every check of the run
/// has passed (the XDP programs attached, the interfaces locked).
pub fn apply_napi(
    args: &Napi,
    path: &PathPlan,
    threaded_by_default: bool,
    restore: &mut Restore,
) -> Result<Option<&'static str>> {
    use linerate_host::sysfs::{read, write, Attr};
    let threaded = match (args.mode, path.lab.is_some()) {
        (NapiMode::Keep, _) | (NapiMode::Auto, false) => return Ok(None),
        (NapiMode::Auto, true) => threaded_by_default,
        (NapiMode::Threaded | NapiMode::ThreadedOwn, _) => true,
        (NapiMode::Softirq, _) => false,
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
        let mode = before.parse().ok().filter(|m| *m <= 2).ok_or_else(|| {
            anyhow!(
                "the NAPI mode of {} reads {before:?}, not 0, 1 or 2: leave it with --napi keep",
                side.iface
            )
        })?;
        restore.changes.record(Entry::Threaded {
            netns: side.netns.clone(),
            iface: side.iface.clone(),
            mode,
        })?;
        write(ns, &side.iface, Attr::Threaded, want).map_err(|e| {
            if no_napi(&e) {
                anyhow!(
                    "interface {} has no NAPI to make {} (veth gets NAPI when GRO is on or an XDP program is attached): turn GRO on with `{}`, or leave NAPI as it is with --napi keep",
                    side.iface,
                    if threaded { "threaded" } else { "softirq" },
                    gro_on(ns, &side.iface)
                )
            } else {
                e.context(format!("setting NAPI mode on {}", side.iface))
            }
        })?;
    }
    Ok(Some(if threaded { "threaded" } else { "softirq" }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gro_hint_quotes_the_interface() {
        assert_eq!(gro_on(None, "q;id>p;#"), "ethtool -K 'q;id>p;#' gro on");
        assert_eq!(
            gro_on(Some("lr-a"), "lr-a0"),
            "ip netns exec lr-a ethtool -K lr-a0 gro on"
        );
    }
}
