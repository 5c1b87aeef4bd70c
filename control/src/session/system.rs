//! What a run changes on the system, and puts back: the steering program
//! attached in the right namespace, the NAPI mode of the interfaces and
//! the CPU affinity of their NAPI threads.

use std::{sync::Arc, thread};

use anyhow::{anyhow, Context, Result};
use linerate_ebpf::{AttachPolicy, Steering, SteeringConfig};

use crate::{
    cli::{NapiArg, RunArgs, XdpModeArg},
    napi,
    path::{PathEnd, PathPlan},
};

/// The steering configuration for UDP ports `lo..=hi` on a run.
pub fn steering_config(args: &RunArgs, lo: u16, hi: u16, respond: bool) -> SteeringConfig {
    SteeringConfig {
        port_lo: lo,
        port_hi: hi,
        policy: match args.xdp_mode {
            XdpModeArg::Auto => AttachPolicy::Auto,
            XdpModeArg::Native => AttachPolicy::Native,
            XdpModeArg::Generic => AttachPolicy::Generic,
        },
        force: args.force,
        respond,
        drop_ppm: (args.inject_loss * 10_000.0).round() as u32,
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

/// What a run changed on the system, put back when it ends: dropped at
/// the end of the run, on every error path, after Ctrl-C and on a panic.
/// NAPI threads' CPU affinity first (the threads may go with the mode),
/// then each interface's NAPI mode.
#[derive(Default)]
pub struct Restore {
    threaded: Vec<(Option<String>, String, String)>,
    affinity: Vec<(i32, nix::sched::CpuSet)>,
    sched: Vec<(i32, linerate_datapath::priority::Sched)>,
}

impl Restore {
    /// Sets thread `pid`'s scheduling, recording it before.
    pub fn set_priority(
        &mut self,
        pid: i32,
        to: linerate_datapath::priority::Priority,
    ) -> Result<()> {
        use linerate_datapath::priority;
        let before = priority::read(pid)?;
        priority::set(pid, to)?;
        self.sched.push((pid, before));
        Ok(())
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        for (pid, before) in self.sched.drain(..).rev() {
            if let Err(e) = linerate_datapath::priority::restore(pid, &before) {
                eprintln!("linerate: warning: could not put a NAPI thread's scheduling back: {e}");
            }
        }
        for (pid, set) in self.affinity.drain(..).rev() {
            napi::set_affinity(pid, &set);
        }
        for (ns, iface, value) in self.threaded.drain(..).rev() {
            match crate::sysfs::write(ns.as_deref(), &iface, crate::sysfs::Attr::Threaded, &value) {
                Ok(()) => {}
                // NAPI went with the XDP program: softirq is all there is.
                Err(e) if value == "0" && no_napi(&e) => {}
                Err(e) => {
                    eprintln!(
                        "linerate: warning: could not put NAPI mode {value} back on {iface}: {e:#}"
                    );
                }
            }
        }
    }
}

/// The command that turns GRO on for `iface` (in `netns`), to paste.
fn gro_on(netns: Option<&str>, iface: &str) -> String {
    let mut words = Vec::new();
    if let Some(ns) = netns {
        words.extend(["ip", "netns", "exec", ns]);
    }
    words.extend(["ethtool", "-K", iface, "gro", "on"]);
    crate::sh::shown(&words)
}

/// Whether writing `threaded` failed because the interface has no NAPI
/// (the kernel says EOPNOTSUPP, or EIO on some versions).
fn no_napi(error: &anyhow::Error) -> bool {
    error
        .chain()
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
pub fn pin_napi(side: &PathEnd, cores: &[usize], restore: &mut Restore) -> Vec<(i32, usize)> {
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
    args: &RunArgs,
    path: &PathPlan,
    threaded_by_default: bool,
    restore: &mut Restore,
) -> Result<Option<&'static str>> {
    use crate::sysfs::{read, write, Attr};
    let threaded = match (args.napi, path.lab.is_some()) {
        (NapiArg::Keep, _) | (NapiArg::Auto, false) => return Ok(None),
        (NapiArg::Auto, true) => threaded_by_default,
        (NapiArg::Threaded | NapiArg::ThreadedOwn, _) => true,
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
                    "interface {} has no NAPI to make {} (veth gets NAPI when GRO is on or an XDP program is attached): turn GRO on with `{}`, or leave NAPI as it is with --napi keep",
                    side.iface,
                    if threaded { "threaded" } else { "softirq" },
                    gro_on(ns, &side.iface)
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
