//! Turning `linerate stream` arguments into a checked plan: which
//! interfaces, which cores, which frame size, whether multi-buffer is
//! needed. Every refusal names the value, the limit and the fix.

use std::net::Ipv4Addr;

use anyhow::{bail, Context, Result};
use linerate_datapath::{
    frame::{FrameSpec, FCS_LEN, IPV4_LEN, UDP_LEN},
    header::MESSAGE_HEADER_LEN,
    message::Fragmentation,
    xsk::CHUNK_DATA,
};

use crate::{
    cli::StreamArgs,
    cores,
    iface::{self, IfaceInfo},
    lab::Lab,
    privilege,
};

/// Largest ring the workers accept.
pub const MAX_RING: u32 = 16384;

/// One end of the stream.
#[derive(Debug, Clone)]
pub struct Side {
    /// Interface.
    pub iface: String,
    /// Its namespace (None: the current one).
    pub netns: Option<String>,
    /// What `ip link` says about it.
    pub info: IfaceInfo,
    /// Its IPv4 address.
    pub ip: Ipv4Addr,
}

/// A checked stream run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The arguments.
    pub args: StreamArgs,
    /// Sending side.
    pub tx: Side,
    /// Receiving side.
    pub rx: Side,
    /// The lab, when the run uses it.
    pub lab: Option<Lab>,
    /// MTU of the link.
    pub mtu: u32,
    /// Frame size, FCS included.
    pub frame_size: usize,
    /// Sender cores, one per queue.
    pub tx_cores: Vec<usize>,
    /// Receiver cores, one per queue.
    pub rx_cores: Vec<usize>,
    /// Whether frames span several UMEM chunks.
    pub multi_buffer: bool,
    /// How messages are cut, with --message.
    pub message: Option<Fragmentation>,
}

impl Plan {
    /// Descriptors per frame.
    pub fn descs_per_frame(&self) -> usize {
        (self.frame_size - FCS_LEN).div_ceil(CHUNK_DATA)
    }
}

/// Message bytes one frame carries at `mtu`.
pub fn payload_per_fragment(mtu: u32) -> usize {
    mtu as usize - IPV4_LEN - UDP_LEN - MESSAGE_HEADER_LEN
}

/// Checks arguments that need no system access.
pub fn check_args(a: &StreamArgs) -> Result<()> {
    let max_q = linerate_ebpf::MAX_QUEUES;
    if a.queues == 0 || a.queues > max_q {
        bail!("--queues {} is out of range: use 1 to {max_q}", a.queues);
    }
    for (name, ring) in [("--ring", a.ring), ("--rx-ring", a.rx_ring)] {
        if !(64..=MAX_RING).contains(&ring) || !ring.is_power_of_two() {
            bail!("{name} {ring} is invalid: use a power of two from 64 to {MAX_RING}");
        }
    }
    if a.batch == 0 || a.batch > a.ring as usize {
        bail!(
            "--batch {} is out of range: use 1 to --ring ({})",
            a.batch,
            a.ring
        );
    }
    if a.duration.is_zero() && a.count.is_none() {
        bail!("--duration must be longer than 0 (e.g. 5s), or give --count");
    }
    if a.duration.as_secs() > 24 * 3600 || a.warmup.as_secs() > 3600 {
        bail!("--duration is limited to 24h and --warmup to 1h");
    }
    if let Some(r) = a.rate {
        if !(r.is_finite() && r > 0.0 && r <= 1e9) {
            bail!("--rate {r} is out of range: use a frame rate from 1 to 1e9 frames/s");
        }
    }
    if a.count == Some(0) {
        bail!("--count 0 sends nothing: give at least 1");
    }
    if a.tx_iface.is_some() != a.rx_iface.is_some() {
        bail!("give both --tx-iface and --rx-iface, or neither to use the lab");
    }
    if a.port == 0 {
        bail!("--port 0 is invalid: use 1 to 65535");
    }
    Ok(())
}

/// Checks everything and brings up the lab if the run needs it.
pub fn plan(a: &StreamArgs) -> Result<Plan> {
    check_args(a)?;
    privilege::require_root("linerate stream")?;
    let (tx_side, rx_side, lab) = match (&a.tx_iface, &a.rx_iface) {
        (Some(t), Some(r)) => (
            (t.clone(), a.tx_netns.clone()),
            (r.clone(), a.rx_netns.clone()),
            None,
        ),
        _ => {
            let lab = Lab::new(&a.lab.name)?;
            ensure_lab(&lab, a)?;
            (
                (lab.if_a.clone(), Some(lab.ns_a.clone())),
                (lab.if_b.clone(), Some(lab.ns_b.clone())),
                Some(lab),
            )
        }
    };
    for ns in [&tx_side.1, &rx_side.1].into_iter().flatten() {
        if !linerate_datapath::netns::exists(ns) {
            bail!("network namespace {ns:?} not found (see `ip netns list`)");
        }
    }
    let side = |(iface, netns): (String, Option<String>)| -> Result<Side> {
        let info = iface::info(netns.as_deref(), &iface)?;
        if !info.up {
            bail!("interface {iface} is down; bring it up with `ip link set dev {iface} up`");
        }
        let ip = iface::ipv4(netns.as_deref(), &iface)?;
        Ok(Side {
            iface,
            netns,
            info,
            ip,
        })
    };
    let tx = side(tx_side)?;
    let rx = side(rx_side)?;
    if let (Some(want), None) = (a.mtu, &lab) {
        for s in [&tx, &rx] {
            if s.info.mtu != want {
                bail!(
                    "interface {} has MTU {}, not {want}; set it with `ip link set dev {} mtu {want}` (linerate changes MTUs only in its lab)",
                    s.iface, s.info.mtu, s.iface
                );
            }
        }
    }
    let mtu = tx.info.mtu.min(rx.info.mtu);
    let frame_size = a.size.unwrap_or(mtu as usize + 18);
    let message = a
        .message
        .map(|len| Fragmentation::new(len, payload_per_fragment(mtu)))
        .transpose()
        .map_err(|e| anyhow::anyhow!("--message: {e}"))?;
    FrameSpec::check_size(frame_size, mtu as usize).map_err(|e| {
        anyhow::anyhow!("--size: {e}; raise the MTU with --mtu or send smaller frames")
    })?;
    for s in [&tx, &rx] {
        if a.queues > s.info.rx_queues.min(s.info.tx_queues) {
            bail!(
                "--queues {} exceeds the {} queues of {}; use fewer queues{}",
                a.queues,
                s.info.rx_queues.min(s.info.tx_queues),
                s.iface,
                if lab.is_some() {
                    ""
                } else {
                    " or raise them with `ethtool -L`"
                }
            );
        }
    }
    let ncpu = cores::online();
    let q = a.queues as usize;
    let tx_cores = cores::for_queues(a.tx_cores.as_deref(), q, ncpu, 0).context("--tx-cores")?;
    let rx_cores = cores::for_queues(a.rx_cores.as_deref(), q, ncpu, 1).context("--rx-cores")?;
    let multi_buffer = frame_size - FCS_LEN > CHUNK_DATA;
    Ok(Plan {
        args: a.clone(),
        tx,
        rx,
        lab,
        mtu,
        frame_size,
        tx_cores,
        rx_cores,
        multi_buffer,
        message,
    })
}

fn ensure_lab(lab: &Lab, a: &StreamArgs) -> Result<()> {
    if !lab.is_up() {
        eprintln!(
            "linerate: bringing up lab {} ({} <-> {})",
            lab.name, lab.if_a, lab.if_b
        );
        return lab.up(a.mtu.unwrap_or(1500), a.queues.max(1));
    }
    let info = iface::info(Some(&lab.ns_b), &lab.if_b)?;
    if info.rx_queues < a.queues {
        eprintln!(
            "linerate: recreating lab {} with {} queues",
            lab.name, a.queues
        );
        return lab.up(a.mtu.unwrap_or(info.mtu), a.queues);
    }
    if let Some(mtu) = a.mtu {
        if mtu != info.mtu {
            lab.set_mtu(mtu)?;
        }
    }
    Ok(())
}
