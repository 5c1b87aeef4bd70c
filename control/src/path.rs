//! The path a run uses, whatever it measures: which interfaces (the lab's
//! by default, swapped with --reverse), their namespaces, addresses and
//! MTU, and which cores each side's workers run on. Every refusal names
//! the value, the limit and the fix.

use std::net::{Ipv4Addr, Ipv6Addr};

use anyhow::{bail, Context, Result};
use linerate_datapath::{frame::Endpoint, worker::WaitMode};

use crate::{cli::RunArgs, lab::Lab};
use linerate_host::{
    cores,
    iface::{self, IfaceInfo},
    locks::Held,
    privilege,
};

/// One end of the path.
#[derive(Debug, Clone)]
pub struct PathEnd {
    /// Interface.
    pub iface: String,
    /// Its namespace (None: the current one).
    pub netns: Option<String>,
    /// What `ip link` says about it.
    pub info: IfaceInfo,
    /// Its IPv4 address.
    pub ip: Ipv4Addr,
    /// Its IPv6 address, when the run's test traffic is IPv6 (`--ipv6`):
    /// then test frames use it.
    pub ip6: Option<Ipv6Addr>,
    /// Identity of its namespace (device and inode of the namespace
    /// file), to tell a namespace replaced under the same name.
    pub ns_id: (u64, u64),
}

impl PathEnd {
    /// This end as a test frame's source or destination, on UDP `port`.
    pub fn endpoint(&self, port: u16) -> Endpoint {
        Endpoint {
            mac: self.info.mac,
            ip: self.ip6.map_or(self.ip.into(), Into::into),
            port,
        }
    }
}

/// `ip [-n NS] link ARGS`, to paste.
fn ip_link(netns: Option<&str>, args: &[&str]) -> String {
    let mut words = vec!["ip"];
    if let Some(ns) = netns {
        words.extend(["-n", ns]);
    }
    words.push("link");
    words.extend_from_slice(args);
    linerate_host::sh::shown(&words)
}

/// The identity of a namespace (or of this process's, for None): device
/// and inode of its nsfs file. Two namespaces of one name at two times
/// have different inodes.
pub fn netns_id(netns: Option<&str>) -> Result<(u64, u64)> {
    let file = match netns {
        Some(name) => linerate_datapath::netns::path(name)?,
        None => "/proc/self/ns/net".into(),
    };
    let st = nix::sys::stat::stat(&file).with_context(|| {
        format!(
            "network namespace {:?} not found (see `ip netns list`)",
            netns.unwrap_or("of this process")
        )
    })?;
    Ok((st.st_dev, st.st_ino))
}

/// A checked path.
#[derive(Debug, Clone)]
pub struct PathPlan {
    /// Sending side (rr: the client).
    pub tx: PathEnd,
    /// Receiving side (rr: the responder).
    pub rx: PathEnd,
    /// The lab, when the run uses it.
    pub lab: Option<Lab>,
    /// MTU of the link.
    pub mtu: u32,
    /// Sender cores, one per queue.
    pub tx_cores: Vec<usize>,
    /// Receiver cores, one per queue.
    pub rx_cores: Vec<usize>,
    /// Whether linerate crossed the queues over too few cores
    /// ([`cores::crossed`]).
    pub crossed: bool,
    /// The run's locks (the lab, shared; each interface, exclusive),
    /// held as long as the plan lives.
    #[allow(dead_code)] // held for what dropping it does
    pub locks: std::sync::Arc<Vec<linerate_host::locks::Held>>,
}

impl PathPlan {
    /// Whether a sender shares its core with a receiver (and, in the lab,
    /// the receiver's NAPI thread).
    pub fn shared_cores(&self) -> bool {
        cores::shared(&self.tx_cores, &self.rx_cores)
    }

    /// How senders wait: as given, else busy on cores of their own, and
    /// blocking when they share a core with receive work (a spinning sender
    /// starves the receiver and its NAPI thread: measured 0.4x). A host
    /// that runs no receivers (one side of a run across two hosts) has no
    /// receive work on any core.
    pub fn tx_wait(&self, args: &RunArgs, receivers_here: bool) -> WaitMode {
        match args.tx_wait {
            Some(wait) => wait.into(),
            None if receivers_here && self.shared_cores() => WaitMode::Wait,
            None => WaitMode::Busy,
        }
    }
}

/// Checks the shared arguments that need no system access (those that
/// depend on the engine: `engine::check_run_args`).
pub fn check_args(args: &RunArgs) -> Result<()> {
    // Each value's own range is checked where it is parsed (cli.rs, exit
    // 2); what depends on two options or on the host is checked here.
    if args.batch > args.ring as usize {
        bail!(
            "--batch {} is out of range: use 1 to --ring ({})",
            args.batch,
            args.ring
        );
    }
    // The cores must exist on the host that runs the workers: this one,
    // unless agents run them (a controller's), or this is one side of a
    // two-host run (the agent's child: its plan checks the cores as it
    // places its workers, and fails as that side).
    if args.agents.tx_agent.is_none() && args.role.role.is_none() {
        let ncpu = cores::online();
        for (name, list) in [
            ("--tx-cores", &args.tx_cores),
            ("--rx-cores", &args.rx_cores),
        ] {
            if let Some(list) = list {
                cores::check_list(list, ncpu).with_context(|| name.to_string())?;
            }
        }
    }
    if args.tx_iface.is_some() != args.rx_iface.is_some() {
        bail!("give both --tx-iface and --rx-iface, or neither to use the lab");
    }
    Ok(())
}

/// Checks the path and brings up the lab if the run needs it. `what`
/// names the command in the privilege error; `may_cross(mtu)` says whether
/// the default placement may cross the queues over too few cores
/// ([`cores::crossed`]) for this run.
pub fn plan(args: &RunArgs, what: &str, may_cross: impl Fn(u32) -> bool) -> Result<PathPlan> {
    check_args(args)?;
    privilege::require_root(what)?;
    let mut lab_use = None;
    let (mut tx_side, mut rx_side, lab) = match (&args.tx_iface, &args.rx_iface) {
        (Some(tx), Some(rx)) => (
            (tx.clone(), args.tx_netns.clone()),
            (rx.clone(), args.rx_netns.clone()),
            None,
        ),
        _ => {
            let lab = Lab::new(&args.lab.name)?;
            // Bringing the lab up (or changing it) waits for any other
            // `lab up`/`lab down`; once it is as the run needs, the run
            // holds it shared, so that neither changes it under the run.
            let setup = lab.setup_lock()?;
            ensure_lab(&lab, args)?;
            lab_use = Some(lab.use_lock()?);
            drop(setup);
            (
                (lab.if_a.clone(), Some(lab.ns_a.clone())),
                (lab.if_b.clone(), Some(lab.ns_b.clone())),
                Some(lab),
            )
        }
    };
    if args.reverse {
        std::mem::swap(&mut tx_side, &mut rx_side);
    }
    for ns in [&tx_side.1, &rx_side.1].into_iter().flatten() {
        if !linerate_datapath::netns::exists(ns) {
            bail!("network namespace {ns:?} not found (see `ip netns list`)");
        }
    }
    let tx = path_end(args, tx_side)?;
    let rx = path_end(args, rx_side)?;
    let mut locks = lock_interfaces(&tx, &rx)?;
    if let Some(mut l) = lab_use {
        l.mark()?;
        locks.push(l);
    }
    if lab.is_none() {
        check_mtus(args, &tx, &rx)?;
    }
    check_queue_counts(args, &tx, &rx, lab.is_some())?;
    let ncpu = cores::online();
    let queues = args.queues as usize;
    let mtu = tx.info.mtu.min(rx.info.mtu);
    let crossed = args.tx_cores.is_none()
        && args.rx_cores.is_none()
        && cores::crossed(queues, ncpu)
        && may_cross(mtu);
    let tx_cores = cores::for_queues(args.tx_cores.as_deref(), queues, ncpu, 0, crossed)
        .context("--tx-cores")?;
    let rx_cores = cores::for_queues(args.rx_cores.as_deref(), queues, ncpu, 1, crossed)
        .context("--rx-cores")?;
    Ok(PathPlan {
        mtu,
        tx,
        rx,
        lab,
        tx_cores,
        rx_cores,
        crossed,
        locks: std::sync::Arc::new(locks),
    })
}

/// One end of the path: the interface `iface` (in `netns`), which must be up,
/// with its addresses.
fn path_end(args: &RunArgs, (iface, netns): (String, Option<String>)) -> Result<PathEnd> {
    let info = iface::info(netns.as_deref(), &iface)?;
    if !info.up {
        bail!(
            "interface {iface} is down; bring it up with `{}`",
            ip_link(netns.as_deref(), &["set", "dev", &iface, "up"])
        );
    }
    let ip = iface::ipv4(netns.as_deref(), &iface)?;
    let ip6 = if args.ipv6 {
        Some(iface::ipv6(netns.as_deref(), &iface)?)
    } else {
        None
    };
    let ns_id = netns_id(netns.as_deref())?;
    Ok(PathEnd {
        iface,
        netns,
        info,
        ip,
        ip6,
        ns_id,
    })
}

/// One run per interface: a second is refused here, before it changes
/// anything (NAPI mode, pinning, XDP). One interface may be both ends.
fn lock_interfaces(tx: &PathEnd, rx: &PathEnd) -> Result<Vec<Held>> {
    let mut locks = Vec::new();
    let mut seen = Vec::new();
    for end in [tx, rx] {
        let id = (end.ns_id.1, end.info.ifindex);
        if !seen.contains(&id) {
            seen.push(id);
            locks.push(linerate_host::locks::iface_lock(
                end.netns.as_deref(),
                &end.iface,
                id,
            )?);
        }
    }
    Ok(locks)
}

/// Outside its lab linerate changes no MTU: both ends must already have
/// the `--mtu` asked for.
fn check_mtus(args: &RunArgs, tx: &PathEnd, rx: &PathEnd) -> Result<()> {
    if let Some(want) = args.mtu {
        for end in [tx, rx] {
            if end.info.mtu != want {
                bail!(
                    "interface {} has MTU {}, not {want}; set it with `{}` (linerate changes MTUs only in its lab)",
                    end.iface,
                    end.info.mtu,
                    ip_link(
                        end.netns.as_deref(),
                        &["set", "dev", &end.iface, "mtu", &want.to_string()]
                    )
                );
            }
        }
    }
    Ok(())
}

/// Both ends have the queues `--queues` asks for.
fn check_queue_counts(args: &RunArgs, tx: &PathEnd, rx: &PathEnd, in_lab: bool) -> Result<()> {
    for end in [tx, rx] {
        let have = end.info.rx_queues.min(end.info.tx_queues);
        if args.queues > have {
            bail!(
                "--queues {} exceeds the {have} queues of {}; use fewer queues{}",
                args.queues,
                end.iface,
                if in_lab {
                    ""
                } else {
                    " or raise them with `ethtool -L`"
                }
            );
        }
    }
    Ok(())
}

fn ensure_lab(lab: &Lab, args: &RunArgs) -> Result<()> {
    if !lab.is_up() {
        let _change = lab.change_lock("bringing it up")?;
        eprintln!(
            "linerate: bringing up lab {} ({} <-> {})",
            lab.name, lab.if_a, lab.if_b
        );
        return lab.create(args.mtu.unwrap_or(1500), args.queues.max(1));
    }
    let info = iface::info(Some(&lab.ns_b), &lab.if_b)?;
    if info.rx_queues < args.queues {
        let _change = lab.change_lock(&format!("recreating it with {} queues", args.queues))?;
        eprintln!(
            "linerate: recreating lab {} with {} queues",
            lab.name, args.queues
        );
        return lab.create(args.mtu.unwrap_or(info.mtu), args.queues);
    }
    if let Some(mtu) = args.mtu {
        if mtu != info.mtu {
            let _change = lab.change_lock(&format!("setting its MTU to {mtu}"))?;
            lab.set_mtu(mtu)?;
        }
    }
    Ok(())
}

/// The UMEM chunk for descriptors up to `max_descriptor` bytes (frames
/// without FCS): `--umem-chunk`, or the better one for that size.
pub fn umem_chunk(args: &RunArgs, max_descriptor: usize) -> Result<u32> {
    linerate_datapath::geometry::Geometry::umem_chunk(max_descriptor, args.umem_chunk).map_err(
        |e| {
            anyhow::anyhow!(
                "--umem-chunk {} holds frames up to {} bytes and this run's are up to {}: \
             use --umem-chunk {}, or leave it out",
                e.chunk,
                e.holds,
                e.largest,
                e.instead
            )
        },
    )
}

#[cfg(test)]
impl PathPlan {
    /// The lab's path at `mtu` as a plan (lr-a0 in lr-a sends from core 0,
    /// lr-b0 in lr-b receives on core 1), for tests that need no system.
    pub fn for_test(mtu: u32) -> Self {
        let end = |name: &str, ns: &str, last: u8| PathEnd {
            iface: name.into(),
            netns: Some(ns.into()),
            info: IfaceInfo {
                name: name.into(),
                ifindex: 2,
                mtu,
                max_mtu: None,
                mac: [2, 0, 0, 0, 0, last],
                rx_queues: 1,
                tx_queues: 1,
                kind: Some("veth".into()),
                xdp_prog_id: None,
                counters: Default::default(),
                up: true,
            },
            ip: Ipv4Addr::new(198, 18, 0, last),
            ip6: None,
            ns_id: (0, u64::from(last)),
        };
        Self {
            tx: end("lr-a0", "lr-a", 1),
            rx: end("lr-b0", "lr-b", 2),
            lab: None,
            mtu,
            tx_cores: vec![0],
            rx_cores: vec![1],
            crossed: false,
            locks: std::sync::Arc::new(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_quote_names() {
        assert_eq!(
            ip_link(Some("n s"), &["set", "dev", "q;id>p;#", "up"]),
            "ip -n 'n s' link set dev 'q;id>p;#' up"
        );
        assert_eq!(
            ip_link(None, &["set", "dev", "veth0", "mtu", "9000"]),
            "ip link set dev veth0 mtu 9000"
        );
    }
}
