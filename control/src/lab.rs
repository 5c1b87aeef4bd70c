//! The built-in lab: two network namespaces joined by a veth pair, with
//! addresses from 198.18.0.0/15 (RFC 2544's benchmarking range).
//!
//! `<lab>-a` holds `<lab>-a0`, `<lab>-b` holds `<lab>-b0`. IPv6 is off and
//! neighbours are static, so the only frames on the link are the test's
//! own and the interface counters can be checked against linerate's. Each
//! veth has a qdisc, so that a full peer pushes back instead of dropping.

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::{
    iface, sh,
    sysfs::{self, Attr, NetSysctl},
};

/// Largest MTU the lab sets (veth's own limit is higher, AF_XDP
/// multi-buffer and the steering program are tested to 9000).
pub const MAX_MTU: u32 = 9000;
/// Management addresses of side A: (this namespace, inside <lab>-a).
pub const MGMT_A: (&str, &str) = ("198.19.255.1", "198.19.255.2");
/// Management addresses of side B.
pub const MGMT_B: (&str, &str) = ("198.19.255.5", "198.19.255.6");
/// Smallest MTU IPv4 allows.
pub const MIN_MTU: u32 = 576;

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
        if name.is_empty()
            || name.len() > 8
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            bail!("lab name {name:?} is invalid: use 1 to 8 letters, digits or '-'");
        }
        Ok(Self {
            name: name.to_string(),
            ns_a: format!("{name}-a"),
            ns_b: format!("{name}-b"),
            if_a: format!("{name}-a0"),
            if_b: format!("{name}-b0"),
            ip_a: "198.18.0.1",
            ip_b: "198.18.0.2",
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

    /// Creates the lab (removing a broken one first).
    pub fn up(&self, mtu: u32, queues: u32) -> Result<()> {
        check_mtu(mtu)?;
        if queues == 0 || queues > linerate_ebpf::MAX_QUEUES {
            bail!(
                "--queues {queues} is out of range: use 1 to {}",
                linerate_ebpf::MAX_QUEUES
            );
        }
        self.down()?;
        let q = queues.to_string();
        let m = mtu.to_string();
        sh::ip(None, &["netns", "add", &self.ns_a])?;
        sh::ip(None, &["netns", "add", &self.ns_b])
            .inspect_err(|_| {
                let _ = self.down();
            })
            .context("creating the lab's namespaces")?;
        let result = (|| -> Result<()> {
            sh::ip(
                None,
                &[
                    "link",
                    "add",
                    &self.if_a,
                    "netns",
                    &self.ns_a,
                    "numtxqueues",
                    &q,
                    "numrxqueues",
                    &q,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    &self.if_b,
                    "netns",
                    &self.ns_b,
                    "numtxqueues",
                    &q,
                    "numrxqueues",
                    &q,
                ],
            )?;
            for (ns, ifn, mac, ip, peer_ip, peer_mac) in [
                (
                    &self.ns_a, &self.if_a, self.mac_a, self.ip_a, self.ip_b, self.mac_b,
                ),
                (
                    &self.ns_b, &self.if_b, self.mac_b, self.ip_b, self.ip_a, self.mac_a,
                ),
            ] {
                let ns = Some(ns.as_str());
                sysfs::set_sysctl(ns, NetSysctl::DisableIpv6All, "1")?;
                sysfs::set_sysctl(ns, NetSysctl::DisableIpv6Default, "1")?;
                sh::ip(ns, &["link", "set", ifn, "address", mac, "mtu", &m])?;
                sh::ip(ns, &["addr", "add", &format!("{ip}/30"), "dev", ifn])?;
                sh::ip(ns, &["link", "set", "lo", "up"])?;
                sh::ip(ns, &["link", "set", ifn, "up"])?;
                sh::ip(
                    ns,
                    &[
                        "neigh",
                        "replace",
                        peer_ip,
                        "lladdr",
                        peer_mac,
                        "dev",
                        ifn,
                        "nud",
                        "permanent",
                    ],
                )?;
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
            }
            Ok(())
        })();
        if let Err(e) = result {
            let _ = self.down();
            return Err(e.context(format!("bringing up lab {:?}", self.name)));
        }
        Ok(())
    }

    /// Removes both namespaces (and with them the veth pair and any XDP
    /// program on it). Succeeds when there is nothing to remove.
    pub fn down(&self) -> Result<()> {
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
        for (ns, here, (ip_here, ip_there)) in [
            (&self.ns_a, format!("{}-ma", self.name), MGMT_A),
            (&self.ns_b, format!("{}-mb", self.name), MGMT_B),
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

fn check_mtu(mtu: u32) -> Result<()> {
    if !(MIN_MTU..=MAX_MTU).contains(&mtu) {
        bail!("MTU {mtu} is out of range for the lab: use {MIN_MTU} to {MAX_MTU}");
    }
    Ok(())
}
