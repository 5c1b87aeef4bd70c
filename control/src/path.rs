//! The path a run uses, whatever it measures: which interfaces (the lab's
//! by default, swapped with --reverse), their namespaces, addresses and
//! MTU, and which cores each side's workers run on. Every refusal names
//! the value, the limit and the fix.

use std::net::{Ipv4Addr, Ipv6Addr};

use anyhow::{bail, Context, Result};
use linerate_datapath::{frame::Endpoint, worker::WaitMode};

use crate::{
    lab::Lab,
    spec::{Ifaces, PathSpec, Wait},
};
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
    /// Queues: one worker of each end per queue.
    pub queues: u32,
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
    /// Both ends in this process's memory (the loopback engine): no
    /// interface, namespace, steering, NAPI or lock to touch.
    pub in_memory: bool,
    /// Run without root, on kernel sockets over interfaces of this
    /// namespace (`lo` between two agents on 127.0.0.1): linerate reads
    /// the interfaces and changes nothing (no NAPI mode or placement, no
    /// softirq probe, no journal, no lock: it holds nothing another run
    /// could break).
    pub unprivileged: bool,
}

impl PathPlan {
    /// Whether the run may change the system (NAPI, pinning of kernel
    /// threads, steering, the journal of what to put back): a path on
    /// interfaces run as root.
    pub fn changes_system(&self) -> bool {
        !self.in_memory && !self.unprivileged
    }

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
    pub fn tx_wait(&self, wait: &Wait, receivers_here: bool) -> WaitMode {
        match wait.tx {
            Some(wait) => wait,
            None if receivers_here && self.shared_cores() => WaitMode::Wait,
            None => WaitMode::Busy,
        }
    }

    /// How receivers (rr: responders) wait: as given, else a stream's
    /// receivers block, and rr's responders spin on cores of their own
    /// (with the clients spinning too, rr's fastest settings: measured
    /// 4.1x the transactions of sleeping responders, docs/benchmarks.md)
    /// and block when they
    /// share a core with the clients.
    pub fn rx_wait(&self, wait: &Wait) -> WaitMode {
        match wait.rx {
            Some(wait) => wait,
            None if wait.responders && !self.shared_cores() => WaitMode::Busy,
            None => WaitMode::Wait,
        }
    }
}

/// Checks the path and brings up the lab if the run needs it. `what`
/// names the command in the privilege error; `may_cross(mtu)` says whether
/// the default placement may cross the queues over too few cores
/// ([`cores::crossed`]) for this run.
pub fn plan(
    spec: &PathSpec,
    (what, unprivileged_ok): (&str, bool),
    may_cross: impl Fn(u32) -> bool,
) -> Result<PathPlan> {
    let unprivileged = !privilege::is_root();
    if unprivileged {
        check_unprivileged(spec, what, unprivileged_ok)?;
    }
    let mut lab_use = None;
    let (mut tx_side, mut rx_side, lab) = match &spec.ifaces {
        Ifaces::Pair { tx, rx } => (
            (tx.name.clone(), tx.netns.clone()),
            (rx.name.clone(), rx.netns.clone()),
            None,
        ),
        Ifaces::Lab(name) => {
            let lab = Lab::new(name)?;
            // Bringing the lab up (or changing it) waits for any other
            // `lab up`/`lab down`; once it is as the run needs, the run
            // holds it shared, so that neither changes it under the run.
            let setup = lab.setup_lock()?;
            ensure_lab(&lab, spec)?;
            lab_use = Some(lab.use_lock()?);
            drop(setup);
            (
                (lab.if_a.clone(), Some(lab.ns_a.clone())),
                (lab.if_b.clone(), Some(lab.ns_b.clone())),
                Some(lab),
            )
        }
    };
    if spec.reverse {
        std::mem::swap(&mut tx_side, &mut rx_side);
    }
    for ns in [&tx_side.1, &rx_side.1].into_iter().flatten() {
        if !linerate_datapath::netns::exists(ns) {
            bail!("network namespace {ns:?} not found (see `ip netns list`)");
        }
    }
    let tx = path_end(spec.ipv6, tx_side)?;
    let rx = path_end(spec.ipv6, rx_side)?;
    let mut locks = if unprivileged {
        Vec::new()
    } else {
        lock_interfaces(&tx, &rx)?
    };
    if let Some(mut l) = lab_use {
        l.mark()?;
        locks.push(l);
    }
    if lab.is_none() {
        check_mtus(spec.mtu, &tx, &rx)?;
    }
    check_queue_counts(spec.queues, &tx, &rx, lab.is_some())?;
    let ncpu = cores::online();
    let queues = spec.queues as usize;
    let mtu = tx.info.mtu.min(rx.info.mtu);
    let crossed = spec.tx_cores.is_none()
        && spec.rx_cores.is_none()
        && cores::crossed(queues, ncpu)
        && may_cross(mtu);
    let tx_cores = cores::for_queues(spec.tx_cores.as_deref(), queues, ncpu, 0, crossed)
        .context("--tx-cores")?;
    let rx_cores = cores::for_queues(spec.rx_cores.as_deref(), queues, ncpu, 1, crossed)
        .context("--rx-cores")?;
    Ok(PathPlan {
        mtu,
        queues: spec.queues,
        tx,
        rx,
        lab,
        tx_cores,
        rx_cores,
        crossed,
        locks: std::sync::Arc::new(locks),
        in_memory: false,
        unprivileged,
    })
}

/// Without root a run uses kernel sockets over interfaces of this
/// namespace only: a lab or a namespace needs root to enter, AF_XDP and
/// XDP need it to attach.
fn check_unprivileged(spec: &PathSpec, what: &str, engine_ok: bool) -> Result<()> {
    let why = match &spec.ifaces {
        _ if !engine_ok => "its engine attaches XDP programs or maps AF_XDP sockets",
        Ifaces::Lab(_) => "it runs on the lab, whose namespaces only root enters",
        Ifaces::Pair { tx, rx } if tx.netns.is_some() || rx.netns.is_some() => {
            "it enters a network namespace (--tx-netns/--rx-netns)"
        }
        Ifaces::Pair { .. } => return Ok(()),
    };
    bail!(
        "{what} needs root ({}) here: {why}; run it with sudo, or without root use \
         --backend loopback, or --backend udp or tcp on interfaces of this namespace \
         (e.g. --tx-iface lo --rx-iface lo)",
        privilege::CAPABILITIES
    )
}

/// The path of an engine that runs both ends in memory (the loopback):
/// two ends that are names and addresses only (198.18.0.1 to 198.18.0.2),
/// at `--mtu` (1500 by default), the cores as for any path; no root, no
/// system access but the number of cores.
pub fn in_memory(spec: &PathSpec) -> Result<PathPlan> {
    let mtu = spec.mtu.unwrap_or(1500);
    let end = |name: &str, last: u8| PathEnd {
        iface: name.into(),
        netns: None,
        info: IfaceInfo {
            name: name.into(),
            ifindex: 0,
            mtu,
            max_mtu: None,
            mac: [2, 0, 0, 0, 0x10, last],
            rx_queues: spec.queues,
            tx_queues: spec.queues,
            kind: Some("loopback".into()),
            xdp_prog_id: None,
            counters: Default::default(),
            up: true,
        },
        ip: Ipv4Addr::new(198, 18, 0, last),
        ip6: None,
        ns_id: (0, 0),
    };
    let ncpu = cores::online();
    let queues = spec.queues as usize;
    let tx_cores = cores::for_queues(spec.tx_cores.as_deref(), queues, ncpu, 0, false)
        .context("--tx-cores")?;
    let rx_cores = cores::for_queues(spec.rx_cores.as_deref(), queues, ncpu, 1, false)
        .context("--rx-cores")?;
    Ok(PathPlan {
        tx: end("mem-tx", 1),
        rx: end("mem-rx", 2),
        lab: None,
        mtu,
        queues: spec.queues,
        tx_cores,
        rx_cores,
        crossed: false,
        locks: std::sync::Arc::new(Vec::new()),
        in_memory: true,
        unprivileged: false,
    })
}

/// One end of the path: the interface `iface` (in `netns`), which must be up,
/// with its addresses.
fn path_end(ipv6: bool, (iface, netns): (String, Option<String>)) -> Result<PathEnd> {
    let info = iface::info(netns.as_deref(), &iface)?;
    if !info.up {
        bail!(
            "interface {iface} is down; bring it up with `{}`",
            ip_link(netns.as_deref(), &["set", "dev", &iface, "up"])
        );
    }
    let ip = iface::ipv4(netns.as_deref(), &iface)?;
    let ip6 = if ipv6 {
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
fn check_mtus(mtu: Option<u32>, tx: &PathEnd, rx: &PathEnd) -> Result<()> {
    if let Some(want) = mtu {
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
fn check_queue_counts(queues: u32, tx: &PathEnd, rx: &PathEnd, in_lab: bool) -> Result<()> {
    for end in [tx, rx] {
        let have = end.info.rx_queues.min(end.info.tx_queues);
        if queues > have {
            bail!(
                "--queues {queues} exceeds the {have} queues of {}; use fewer queues{}",
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

fn ensure_lab(lab: &Lab, spec: &PathSpec) -> Result<()> {
    if !lab.is_up() {
        let _change = lab.change_lock("bringing it up")?;
        eprintln!(
            "linerate: bringing up lab {} ({} <-> {})",
            lab.name, lab.if_a, lab.if_b
        );
        return lab.create(spec.mtu.unwrap_or(1500), spec.queues.max(1));
    }
    let info = iface::info(Some(&lab.ns_b), &lab.if_b)?;
    if info.rx_queues < spec.queues {
        let _change = lab.change_lock(&format!("recreating it with {} queues", spec.queues))?;
        eprintln!(
            "linerate: recreating lab {} with {} queues",
            lab.name, spec.queues
        );
        return lab.create(spec.mtu.unwrap_or(info.mtu), spec.queues);
    }
    if let Some(mtu) = spec.mtu {
        if mtu != info.mtu {
            let _change = lab.change_lock(&format!("setting its MTU to {mtu}"))?;
            lab.set_mtu(mtu)?;
        }
    }
    Ok(())
}

/// The UMEM chunk for descriptors up to `max_descriptor` bytes (frames
/// without FCS): `--umem-chunk`, or the better one for that size.
pub fn umem_chunk(asked: Option<u32>, max_descriptor: usize) -> Result<u32> {
    linerate_datapath::geometry::Geometry::umem_chunk(max_descriptor, asked).map_err(|e| {
        anyhow::anyhow!(
            "--umem-chunk {} holds frames up to {} bytes and this run's are up to {}: \
             use --umem-chunk {}, or leave it out",
            e.chunk,
            e.holds,
            e.largest,
            e.instead
        )
    })
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
            queues: 1,
            tx_cores: vec![0],
            rx_cores: vec![1],
            crossed: false,
            locks: std::sync::Arc::new(Vec::new()),
            in_memory: false,
            unprivileged: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without root: kernel sockets on interfaces of this namespace only,
    /// every refusal saying why and what runs instead.
    #[test]
    fn without_root_only_kernel_sockets_in_this_namespace() {
        let iface = |name: &str, netns: Option<&str>| crate::spec::Iface {
            name: name.into(),
            netns: netns.map(str::to_string),
        };
        let spec = |ifaces| PathSpec {
            ifaces,
            reverse: false,
            mtu: None,
            queues: 1,
            tx_cores: None,
            rx_cores: None,
            ipv6: false,
        };
        let lo = spec(Ifaces::Pair {
            tx: iface("lo", None),
            rx: iface("lo", None),
        });
        check_unprivileged(&lo, "linerate stream", true).unwrap();
        let refused = |spec: &PathSpec, engine_ok: bool| {
            check_unprivileged(spec, "linerate stream", engine_ok)
                .unwrap_err()
                .to_string()
        };
        let e = refused(&lo, false);
        assert!(e.contains("attaches XDP programs"), "{e}");
        assert!(
            e.contains("--backend udp or tcp on interfaces of this namespace"),
            "{e}"
        );
        let e = refused(&spec(Ifaces::Lab("lr".into())), true);
        assert!(
            e.contains("the lab, whose namespaces only root enters"),
            "{e}"
        );
        let in_ns = spec(Ifaces::Pair {
            tx: iface("lo", None),
            rx: iface("b0", Some("nb")),
        });
        assert!(refused(&in_ns, true).contains("enters a network namespace"));
    }

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

    /// The defaults of the ends' waits: a stream's receivers block, rr's
    /// responders spin on cores of their own and block beside the clients;
    /// senders (clients) spin unless they share a core with receive work;
    /// what is given is kept.
    #[test]
    fn waits_default_by_test_and_placement() {
        let own = PathPlan::for_test(1500);
        let mut shared = PathPlan::for_test(1500);
        shared.rx_cores = vec![0];
        let wait = |rx: Option<WaitMode>, responders: bool| Wait {
            tx: None,
            rx,
            responders,
            tcp: false,
        };
        use WaitMode::{Busy, BusyPoll, Wait as Sleeps};
        assert_eq!(own.rx_wait(&wait(None, false)), Sleeps);
        assert_eq!(own.rx_wait(&wait(None, true)), Busy);
        assert_eq!(shared.rx_wait(&wait(None, true)), Sleeps);
        assert_eq!(own.rx_wait(&wait(Some(Sleeps), true)), Sleeps);
        assert_eq!(shared.rx_wait(&wait(Some(BusyPoll), false)), BusyPoll);
        assert_eq!(own.tx_wait(&wait(None, true), true), Busy);
        assert_eq!(shared.tx_wait(&wait(None, true), true), Sleeps);
        assert_eq!(shared.tx_wait(&wait(None, true), false), Busy);
    }
}
