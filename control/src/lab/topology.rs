//! The built-in lab: two network namespaces joined by a veth pair, with
//! addresses from 198.18.0.0/15 (RFC 2544's benchmarking range).
//!
//! `<lab>-a` holds `<lab>-a0`, `<lab>-b` holds `<lab>-b0`. IPv6 is off and
//! neighbours are static, so the only frames on the link are the test's
//! own and the interface counters can be checked against linerate's. Each
//! veth has a qdisc, so that a full peer pushes back instead of dropping.

use anyhow::{bail, Context, Result};
use serde::Serialize;

use linerate_host::{
    iface,
    limits::{check_name, IPV6_MIN_MTU, MAX_MTU, MIN_MTU},
    locks::{take, try_exclusive, Held},
    sh,
    sysfs::{self, Attr, Ipv6Conf, NetSysctl},
};

/// Management addresses of side A: (this namespace, inside <lab>-a).
pub const MGMT_A: (&str, &str) = ("198.19.255.1", "198.19.255.2");
/// Management addresses of side B.
pub const MGMT_B: (&str, &str) = ("198.19.255.5", "198.19.255.6");
/// Names and addresses of one lab.
#[derive(Debug, Clone, Serialize)]
pub struct Lab {
    /// The prefix every name starts with.
    pub name: String,
    /// Namespace of side A (the sender by default).
    pub ns_a: String,
    /// Namespace of side B.
    pub ns_b: String,
    /// Interface in A.
    pub if_a: String,
    /// Interface in B.
    pub if_b: String,
    /// Address of A.
    pub ip_a: &'static str,
    /// Address of B.
    pub ip_b: &'static str,
    /// IPv6 address of A (2001:2::/48, RFC 5180's benchmarking range).
    pub ip6_a: &'static str,
    /// IPv6 address of B.
    pub ip6_b: &'static str,
    /// MAC of A.
    pub mac_a: &'static str,
    /// MAC of B.
    pub mac_b: &'static str,
}

/// What `lab status` shows.
#[derive(Debug, Serialize)]
pub struct LabStatus {
    /// The lab.
    pub lab: Lab,
    /// Whether both namespaces and interfaces exist.
    pub up: bool,
    /// MTU of the link.
    pub mtu: Option<u32>,
    /// Queues of side B's interface.
    pub queues: Option<u32>,
    /// XDP programs attached (interface, program id).
    pub xdp: Vec<(String, u32)>,
}

impl Lab {
    /// The lab whose names start with `name` (at most 8 characters, so
    /// interface names fit the kernel's 15).
    pub fn new(name: &str) -> Result<Self> {
        check_name(name).map_err(anyhow::Error::msg)?;
        Ok(Self {
            name: name.to_string(),
            ns_a: format!("{name}-a"),
            ns_b: format!("{name}-b"),
            if_a: format!("{name}-a0"),
            if_b: format!("{name}-b0"),
            ip_a: "198.18.0.1",
            ip_b: "198.18.0.2",
            ip6_a: "2001:2::1",
            ip6_b: "2001:2::2",
            mac_a: "02:00:c6:12:00:01",
            mac_b: "02:00:c6:12:00:02",
        })
    }

    /// Whether both namespaces and both interfaces exist.
    pub fn is_up(&self) -> bool {
        linerate_datapath::netns::exists(&self.ns_a)
            && linerate_datapath::netns::exists(&self.ns_b)
            && iface::exists(Some(&self.ns_a), &self.if_a)
            && iface::exists(Some(&self.ns_b), &self.if_b)
    }

    /// `lab up`: leaves a lab that is up as asked alone (saying so), else
    /// creates it, recreating one that differs (saying how); waits for
    /// another `lab up`/`lab down` of the same lab, and refuses while a run
    /// uses the lab.
    pub fn up(&self, mtu: u32, queues: u32) -> Result<()> {
        check_mtu(mtu)?;
        check_queues(queues)?;
        let _setup = self.setup_lock()?;
        let why = match self.differs(mtu, queues) {
            None => {
                eprintln!(
                    "linerate: lab {} is up with MTU {mtu} and {queues} queue(s); leaving it",
                    self.name
                );
                return Ok(());
            }
            Some(why) => why,
        };
        let was_up = self.exists();
        let _change = self.change_lock("`lab up`")?;
        if was_up {
            eprintln!("linerate: recreating lab {} ({why})", self.name);
        }
        self.create(mtu, queues)
    }

    /// `lab down`: waits for another `lab up`/`lab down`, refuses while a
    /// run uses the lab.
    pub fn down(&self) -> Result<()> {
        let _setup = self.setup_lock()?;
        let _change = match self.change_lock("`lab down`") {
            Ok(held) => held,
            // Of a lab that is not there, not even the lock files this
            // `lab down` made stay behind (say, when it could not write
            // its pid in them).
            Err(e) if !self.exists() => {
                let _ = self.remove_lock_files();
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        self.remove()?;
        self.remove_lock_files()
    }

    /// Whether any of the lab's namespaces exists.
    fn exists(&self) -> bool {
        linerate_datapath::netns::exists(&self.ns_a) || linerate_datapath::netns::exists(&self.ns_b)
    }

    /// The lab's lock files go with it (the caller holds the setup lock
    /// exclusively: whoever waits for them takes the next files of those
    /// names).
    fn remove_lock_files(&self) -> Result<()> {
        linerate_host::locks::remove(&self.use_file())?;
        linerate_host::locks::remove(&self.setup_file())
    }

    /// Creates the lab (removing a broken one first); the caller holds
    /// the locks.
    pub fn create(&self, mtu: u32, queues: u32) -> Result<()> {
        check_mtu(mtu)?;
        check_queues(queues)?;
        self.remove()?;
        let q = queues.to_string();
        sh::ip(None, &["netns", "add", &self.ns_a])?;
        sh::ip(None, &["netns", "add", &self.ns_b])
            .inspect_err(|_| {
                let _ = self.remove();
            })
            .context("creating the lab's namespaces")?;
        let result = (|| -> Result<()> {
            self.add_veth_pair(&q)?;
            let (a, b) = (
                (self.ip_a, self.ip6_a, self.mac_a),
                (self.ip_b, self.ip6_b, self.mac_b),
            );
            for (ns, ifn, mine, peer) in [
                (&self.ns_a, &self.if_a, a, b),
                (&self.ns_b, &self.if_b, b, a),
            ] {
                configure_end(Some(ns.as_str()), ifn, mine, peer, mtu)?;
            }
            Ok(())
        })();
        if let Err(e) = result {
            let _ = self.remove();
            return Err(e.context(format!("bringing up lab {:?}", self.name)));
        }
        Ok(())
    }

    /// Adds the veth pair, one end in each namespace, with `q` queues each
    /// way.
    fn add_veth_pair(&self, q: &str) -> Result<()> {
        sh::ip(
            None,
            &[
                "link",
                "add",
                &self.if_a,
                "netns",
                &self.ns_a,
                "numtxqueues",
                q,
                "numrxqueues",
                q,
                "type",
                "veth",
                "peer",
                "name",
                &self.if_b,
                "netns",
                &self.ns_b,
                "numtxqueues",
                q,
                "numrxqueues",
                q,
            ],
        )?;
        Ok(())
    }

    /// Removes both namespaces (and with them the veth pair and any XDP
    /// program on it). Succeeds when there is nothing to remove. The
    /// caller holds the locks.
    fn remove(&self) -> Result<()> {
        for ns in [&self.ns_a, &self.ns_b] {
            if linerate_datapath::netns::exists(ns) {
                sh::ip(None, &["netns", "del", ns])
                    .with_context(|| format!("removing namespace {ns}"))?;
            }
        }
        // The management links (`lab up --mgmt`) go with the namespaces,
        // but the kernel removes them lazily: remove this side now.
        for link in [format!("{}-ma", self.name), format!("{}-mb", self.name)] {
            if iface::exists(None, &link) {
                let _ = sh::ip(None, &["link", "del", &link]);
            }
        }
        Ok(())
    }

    /// Joins each namespace to the current one by a management veth
    /// (`<lab>-ma`/`<lab>-mb` here, `mgmt0` inside), /30s from
    /// 198.19.255.0/24, so that agents in the namespaces can be reached.
    /// Removing the namespaces removes these pairs too.
    pub fn add_mgmt(&self) -> Result<()> {
        self.add_mgmt_at(MGMT_A, MGMT_B)
    }

    /// [`Lab::add_mgmt`] with these /30 addresses (here, there) for side A
    /// and side B: a fleet gives each of its labs its own.
    pub fn add_mgmt_at(&self, a: (&str, &str), b: (&str, &str)) -> Result<()> {
        for (ns, here, (ip_here, ip_there)) in [
            (&self.ns_a, format!("{}-ma", self.name), a),
            (&self.ns_b, format!("{}-mb", self.name), b),
        ] {
            let n = Some(ns.as_str());
            if iface::exists(None, &here) {
                sh::ip(None, &["link", "del", &here])?;
            }
            sh::ip(
                None,
                &[
                    "link", "add", &here, "type", "veth", "peer", "name", "mgmt0", "netns", ns,
                ],
            )
            .with_context(|| format!("creating the management link of {ns}"))?;
            sh::ip(
                None,
                &["addr", "add", &format!("{ip_here}/30"), "dev", &here],
            )?;
            sh::ip(None, &["link", "set", &here, "up"])?;
            sh::ip(
                n,
                &["addr", "add", &format!("{ip_there}/30"), "dev", "mgmt0"],
            )?;
            sh::ip(n, &["link", "set", "mgmt0", "up"])?;
        }
        Ok(())
    }

    /// Sets the MTU on both ends.
    pub fn set_mtu(&self, mtu: u32) -> Result<()> {
        check_mtu(mtu)?;
        let m = mtu.to_string();
        for (ns, ifn) in [(&self.ns_a, &self.if_a), (&self.ns_b, &self.if_b)] {
            sh::ip(Some(ns), &["link", "set", ifn, "mtu", &m])
                .with_context(|| format!("setting MTU {mtu} on {ifn}"))?;
        }
        Ok(())
    }

    /// The lab's state.
    pub fn status(&self) -> LabStatus {
        let up = self.is_up();
        let info = up
            .then(|| iface::info(Some(&self.ns_b), &self.if_b).ok())
            .flatten();
        let mut xdp = Vec::new();
        if up {
            for (ns, ifn) in [(&self.ns_a, &self.if_a), (&self.ns_b, &self.if_b)] {
                if let Ok(i) = iface::info(Some(ns), ifn) {
                    if let Some(id) = i.xdp_prog_id {
                        xdp.push((ifn.clone(), id));
                    }
                }
            }
        }
        LabStatus {
            lab: self.clone(),
            up,
            mtu: info.as_ref().map(|i| i.mtu),
            queues: info.as_ref().map(|i| i.rx_queues),
            xdp,
        }
    }
}

impl Lab {
    /// Serializes whatever sets the lab up or takes it down (`lab up`,
    /// `lab down`, a run that brings the lab up): a second waits for the
    /// first instead of racing it. Held briefly.
    pub fn setup_lock(&self) -> Result<Held> {
        let f = take(&self.setup_file(), |f| {
            f.lock()
                .with_context(|| format!("locking lab {}", self.name))
        })?;
        Ok(Held::kept(f, &self.setup_file()))
    }

    fn setup_file(&self) -> String {
        format!("lab-{}.lock", self.name)
    }

    fn use_file(&self) -> String {
        format!("lab-{}.run", self.name)
    }

    /// The right to recreate or remove the lab: refused while a run uses
    /// it (every run holds the lab shared for its whole length).
    pub fn change_lock(&self, what: &str) -> Result<Held> {
        let name = self.name.clone();
        let what = what.to_string();
        try_exclusive(&self.use_file(), false, move |pid| {
            format!(
                "lab {name} is in use by a run (pid {pid}): {what} would pull it from under the run; wait for the run to end (or stop it), then try again"
            )
        })
    }

    /// Held by a run for its whole length, so that `lab up`/`lab down`
    /// refuse to change the lab under it. Taken under [`Lab::setup_lock`];
    /// the run [`Held::mark`]s it once it is sure to run.
    pub fn use_lock(&self) -> Result<Held> {
        let f = take(&self.use_file(), |f| {
            f.try_lock_shared()
                .map_err(|e| anyhow::anyhow!("lab {} is being changed ({e}); try again", self.name))
        })?;
        Ok(Held::kept(f, &self.use_file()))
    }

    /// Whether the lab is up as `mtu` and `queues` ask, with nothing of a
    /// run left on it (no XDP program, NAPI threaded as `lab up` sets it):
    /// `None` when so, else what differs.
    pub fn differs(&self, mtu: u32, queues: u32) -> Option<String> {
        if !self.is_up() {
            return Some("it was not whole".into());
        }
        let mut why = Vec::new();
        for (ns, ifn) in [(&self.ns_a, &self.if_a), (&self.ns_b, &self.if_b)] {
            let Ok(i) = iface::info(Some(ns), ifn) else {
                return Some(format!("{ifn} could not be read"));
            };
            if i.mtu != mtu {
                why.push(format!("{ifn} has MTU {}", i.mtu));
            }
            if i.rx_queues != queues || i.tx_queues != queues {
                why.push(format!(
                    "{ifn} has {} queue(s)",
                    i.rx_queues.min(i.tx_queues)
                ));
            }
            if let Some(id) = i.xdp_prog_id {
                why.push(format!("{ifn} has XDP program {id} attached"));
            }
            if sysfs::read(Some(ns), ifn, Attr::Threaded).ok().as_deref() != Some("1") {
                why.push(format!("{ifn} is not in threaded NAPI"));
            }
        }
        (!why.is_empty()).then(|| why.join(", "))
    }
}

fn check_queues(queues: u32) -> Result<()> {
    if queues == 0 || queues > linerate_ebpf::MAX_QUEUES {
        bail!(
            "--queues {queues} is out of range: use 1 to {}",
            linerate_ebpf::MAX_QUEUES
        );
    }
    Ok(())
}

fn check_mtu(mtu: u32) -> Result<()> {
    if !(MIN_MTU..=MAX_MTU).contains(&mtu) {
        bail!("MTU {mtu} is out of range for the lab: use {MIN_MTU} to {MAX_MTU}");
    }
    Ok(())
}

/// An end's addresses: (IPv4, IPv6, MAC).
type EndAddresses = (&'static str, &'static str, &'static str);

/// Configures the lab's end `ifn` in namespace `ns`, with the addresses
/// `mine` and its peer's: addresses, the peer as a neighbour, IPv6 where
/// the MTU allows it, up, and its receive work tuned.
fn configure_end(
    ns: Option<&str>,
    ifn: &str,
    (ip, ip6, mac): EndAddresses,
    (peer_ip, peer_ip6, peer_mac): EndAddresses,
    mtu: u32,
) -> Result<()> {
    let m = mtu.to_string();
    sysfs::set_sysctl(ns, NetSysctl::DisableIpv6All, "1")?;
    sysfs::set_sysctl(ns, NetSysctl::DisableIpv6Default, "1")?;
    // No ARP and no neighbour discovery: the neighbours are
    // written below. NOARP also keeps IPv6 from joining the
    // address's solicited-node group, and so from sending MLD
    // reports, which would add frames to the interfaces'
    // counters that tests compare with linerate's.
    sh::ip(
        ns,
        &["link", "set", ifn, "address", mac, "mtu", &m, "arp", "off"],
    )?;
    sh::ip(ns, &["addr", "add", &format!("{ip}/30"), "dev", ifn])?;
    // Below 1280 bytes the kernel has no IPv6 on a link (RFC 8200's
    // minimum MTU).
    if mtu >= IPV6_MIN_MTU {
        add_ipv6(ns, ifn, ip6)?;
        neighbour(ns, ifn, peer_ip6, peer_mac)?;
    }
    sh::ip(ns, &["link", "set", "lo", "up"])?;
    sh::ip(ns, &["link", "set", ifn, "up"])?;
    neighbour(ns, ifn, peer_ip, peer_mac)?;
    tune_receive(ns, ifn)
}

/// The peer, for ever (`ip` tells IPv4 from IPv6 by the address).
fn neighbour(ns: Option<&str>, ifn: &str, peer: &str, peer_mac: &str) -> Result<()> {
    sh::ip(
        ns,
        &[
            "neigh",
            "replace",
            peer,
            "lladdr",
            peer_mac,
            "dev",
            ifn,
            "nud",
            "permanent",
        ],
    )?;
    Ok(())
}

/// IPv6 on the test interface only, with the lab's address and no
/// link-local one (no router solicitations); nodad: usable at once.
fn add_ipv6(ns: Option<&str>, ifn: &str, ip6: &str) -> Result<()> {
    sysfs::set_ipv6_conf(ns, ifn, Ipv6Conf::AddrGenMode, "1")?;
    sysfs::set_ipv6_conf(ns, ifn, Ipv6Conf::DisableIpv6, "0")?;
    sh::ip(
        ns,
        &[
            "-6",
            "addr",
            "add",
            &format!("{ip6}/64"),
            "dev",
            ifn,
            "nodad",
        ],
    )?;
    Ok(())
}

/// Where the receive work runs and what a full peer queue does.
fn tune_receive(ns: Option<&str>, ifn: &str) -> Result<()> {
    // veth runs NAPI (and so XDP) in a kernel thread of its own
    // when GRO is on and NAPI is threaded: the receive work then
    // leaves the sender's core. See design.md, "Measured".
    sh::in_netns(ns, "ethtool", &["-K", ifn, "gro", "on"])?;
    sysfs::write(ns, ifn, Attr::Threaded, "1")?;
    // With a qdisc (veth's default is none), a veth whose peer's
    // 256-frame queue is full stops its transmit queue instead
    // of dropping: AF_XDP's copy-mode transmit then waits and
    // retries. Measured: 64-byte frames unpaced 8.6 % lost ->
    // none at the same received rate; paced at 506k frames/s
    // 1.4 % -> none.
    sh::in_netns(
        ns,
        "tc",
        &["qdisc", "replace", "dev", ifn, "root", "pfifo_fast"],
    )?;
    Ok(())
}
