//! Where the NAPI threads (veth's receive work in copy mode: the XDP
//! program and the copy into the UMEM) run, and at what priority:
//! `--napi threaded` beside the side's workers, `--napi threaded-own` on
//! cores no worker of the run uses, `--napi-priority` their policy.
//! Everything is recorded in [`Restore`] before it is changed.

use anyhow::{bail, Result};

use super::{
    ends::Ends,
    system::{pin_napi, Restore},
};
use crate::{
    path::PathPlan,
    spec::{Napi, NapiMode},
};

/// Cores no worker of the run uses, of `online`.
pub fn free_cores(path: &PathPlan, online: usize) -> Vec<usize> {
    (0..online)
        .filter(|c| !path.tx_cores.contains(c) && !path.rx_cores.contains(c))
        .collect()
}

/// Checks the placement asked for before anything is changed: a priority
/// needs a NAPI thread (refused where NAPI will run in softirq),
/// `threaded-own` a core no worker uses. Returns those cores for
/// `threaded-own`.
pub fn check(
    args: &Napi,
    path: &PathPlan,
    threaded_by_default: bool,
) -> Result<Option<Vec<usize>>> {
    let softirq = match (args.mode, path.lab.is_some()) {
        (NapiMode::Softirq, _) => true,
        (NapiMode::Auto, true) => !threaded_by_default,
        _ => false,
    };
    if let (Some(priority), true) = (args.priority, softirq) {
        bail!(
            "--napi-priority {priority}: there is no NAPI thread to set (NAPI runs in softirq{}): give --napi threaded or --napi threaded-own",
            if args.mode == NapiMode::Auto { ", as --napi auto means for this run" } else { "" }
        );
    }
    if args.mode != NapiMode::ThreadedOwn {
        return Ok(None);
    }
    let online = linerate_host::cores::online();
    let free = free_cores(path, online);
    if free.is_empty() {
        bail!(
            "--napi threaded-own: no core is left for the NAPI threads (senders on cores {:?}, receivers on {:?}, of {online}): give the workers fewer cores with --tx-cores/--rx-cores, or use --napi threaded (beside the receivers)",
            path.tx_cores,
            path.rx_cores,
        );
    }
    Ok(Some(free))
}

/// Pins the NAPI threads of the ends that ask for it (`pin`) and run here,
/// beside their workers or on `own` cores, then sets their priority;
/// returns (pid, core) of each.
pub fn place_napi(
    (args, path): (&Napi, &PathPlan),
    own: Option<&[usize]>,
    here: Ends<bool>,
    pin: Ends<bool>,
    restore: &mut Restore,
) -> Result<Vec<(i32, usize)>> {
    let mut threads = Vec::new();
    if here.rx && pin.rx {
        let pinned = pin_napi(&path.rx, own.unwrap_or(&path.rx_cores), restore)?;
        threads.extend(pinned.into_iter().map(|(t, c)| (&path.rx, t, c)));
    }
    if here.tx && pin.tx {
        let pinned = pin_napi(&path.tx, own.unwrap_or(&path.tx_cores), restore)?;
        threads.extend(pinned.into_iter().map(|(t, c)| (&path.tx, t, c)));
    }
    if let Some(priority) = args.priority {
        if threads.is_empty() {
            bail!(
                "--napi-priority {priority}: there is no NAPI thread to set (NAPI runs in softirq on {}): give --napi threaded or --napi threaded-own",
                path.rx.iface
            );
        }
        for &(side, thread, _) in &threads {
            restore.set_priority(side, thread, priority)?;
        }
    }
    Ok(threads.into_iter().map(|(_, t, c)| (t.pid, c)).collect())
}

/// Whether a NAPI thread of normal policy (one a spinning receiver must
/// yield to) runs beside the receivers: threaded NAPI pinned beside them
/// (`threaded`, or `auto` meaning threaded) with no real-time
/// `--napi-priority` (a real-time thread preempts the receiver anyway).
pub fn napi_beside_receivers(args: &Napi, napi: Option<&str>) -> bool {
    use linerate_datapath::priority::Priority;
    napi == Some("threaded")
        && args.mode != NapiMode::ThreadedOwn
        && !matches!(args.priority, Some(Priority::Fifo(_) | Priority::Rr(_)))
}
