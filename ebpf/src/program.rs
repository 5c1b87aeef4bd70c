//! Loading the steering program, configuring it and registering sockets.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use libbpf_rs::{MapCore, MapFlags, MapHandle, Object, ObjectBuilder, Xdp, XdpFlags};

use crate::{
    attach::{link_xdp, AttachMode, AttachPolicy},
    stats::SteerStats,
    values, EbpfError,
};

/// Receive queues the program can steer to (entries of its XSKMAP).
pub const MAX_QUEUES: u32 = 64;

const PROG_NAME: &str = "linerate_steer";
pub(crate) static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/steer.bpf.o"));

/// What the program steers and how it attaches.
#[derive(Debug, Clone, Copy)]
pub struct SteeringConfig {
    /// First UDP destination port steered to the sockets (inclusive).
    pub port_lo: u16,
    /// Last UDP destination port steered to the sockets (inclusive).
    pub port_hi: u16,
    /// Which XDP modes to try.
    pub policy: AttachPolicy,
    /// Replace a program someone else attached (netlink-attached ones only).
    pub force: bool,
    /// Answer single-frame requests in the program itself (XDP_TX).
    pub respond: bool,
    /// Drop this many test frames per million (fault injection).
    pub drop_ppm: u32,
}

/// `struct steer_config` in steer.bpf.c: (field, offset, size), in order.
/// A test checks it against the program's BTF.
pub(crate) const CONFIG_LAYOUT: [(&str, usize, usize); 6] = [
    ("port_lo", 0, 2),
    ("port_hi", 2, 2),
    ("enabled", 4, 4),
    ("respond", 8, 4),
    ("drop_ppm", 12, 4),
    ("count_only", 16, 4),
];
/// Size of `struct steer_config`.
pub(crate) const CONFIG_SIZE: usize = 20;
/// `struct rx_flow` in steer.bpf.c: (field, offset, size), in order.
pub(crate) const RX_FLOW_LAYOUT: [(&str, usize, usize); 7] = [
    ("next", 0, 8),
    ("seen", 8, 8),
    ("received", 16, 8),
    ("lost", 24, 8),
    ("reordered", 32, 8),
    ("duplicates", 40, 8),
    ("bytes", 48, 8),
];
/// Size of `struct rx_flow`.
pub(crate) const RX_FLOW_SIZE: usize = 56;
/// Flows the XDP-only receiver accounts (flow ids 0 to 4095).
pub const RX_MAX_FLOWS: u16 = 4096;

/// One flow as the XDP-only receiver accounted it (the rules of
/// datapath's `SequenceTracker`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RxFlowCounters {
    /// Frames received, duplicates included.
    pub received: u64,
    /// Sequence numbers missing.
    pub lost: u64,
    /// Frames that came after a later one.
    pub reordered: u64,
    /// Frames received twice.
    pub duplicates: u64,
    /// Frame bytes (without FCS).
    pub bytes: u64,
    /// The next sequence number the flow expects.
    pub next: u64,
}

impl RxFlowCounters {
    fn decode(b: &[u8]) -> Option<Self> {
        let v = values::decode(&RX_FLOW_LAYOUT, RX_FLOW_SIZE, b)?;
        Some(Self {
            next: v[0],
            received: v[2],
            lost: v[3],
            reordered: v[4],
            duplicates: v[5],
            bytes: v[6],
        })
    }
}

impl SteeringConfig {
    /// The value of the program's `config` map: `struct steer_config`.
    fn encode(&self, count_only: bool) -> Vec<u8> {
        values::encode(
            &CONFIG_LAYOUT,
            CONFIG_SIZE,
            &[
                u64::from(self.port_lo),
                u64::from(self.port_hi),
                1,
                u64::from(self.respond),
                u64::from(self.drop_ppm),
                u64::from(count_only),
            ],
        )
    }
}

/// The steering program attached to one interface. Dropping it detaches
/// the program; so does the death of the process (the link's descriptor
/// closes with it).
#[derive(Debug)]
pub struct Steering {
    // Declared first so it is dropped (detached) before the maps go.
    _link: OwnedFd,
    iface: String,
    ifindex: u32,
    mode: AttachMode,
    fallback_reason: Option<String>,
    cfg: SteeringConfig,
    config: MapHandle,
    xsks: MapHandle,
    stats: MapHandle,
    rx_flows: MapHandle,
    _object: Object,
}

impl Steering {
    /// Loads the program and attaches it to `iface` in the calling thread's
    /// network namespace.
    pub fn attach(iface: &str, cfg: SteeringConfig) -> Result<Self, EbpfError> {
        let ifindex = nix::net::if_::if_nametoindex(iface)
            .map_err(|_| EbpfError::NoSuchInterface(iface.to_string()))?;
        let object = ObjectBuilder::default()
            .open_memory(OBJECT)
            .and_then(|open| open.load())
            .map_err(|e| EbpfError::Load(e.to_string()))?;
        let map = |name| values::map(&object, name);
        let xsks = map("xsks")?;
        let stats = map("stats")?;
        let config = map("config")?;
        let rx_flows = map("rx_flows")?;
        config
            .update(&0u32.to_ne_bytes(), &cfg.encode(false), MapFlags::ANY)
            .map_err(|e| EbpfError::map("config", e))?;

        let prog = object
            .progs()
            .find(|p| p.name() == PROG_NAME)
            .ok_or_else(|| EbpfError::Load(format!("program {PROG_NAME} missing")))?;
        let prog_fd = prog.as_fd();
        refuse_foreign_program(iface, ifindex, prog_fd, cfg.force)?;

        let mut failures = Vec::new();
        for &mode in cfg.policy.modes() {
            match link_xdp(prog_fd, ifindex, mode) {
                Ok(link) => {
                    let fallback_reason = (!failures.is_empty()).then(|| failures.join("; "));
                    return Ok(Self {
                        _link: link,
                        iface: iface.to_string(),
                        ifindex,
                        mode,
                        fallback_reason,
                        cfg,
                        config,
                        xsks,
                        stats,
                        rx_flows,
                        _object: object,
                    });
                }
                Err(e) if matches!(e.raw_os_error(), Some(libc::EBUSY | libc::EEXIST)) => {
                    let prog_id = attached_prog_id(ifindex, prog_fd).unwrap_or(0);
                    return Err(EbpfError::Busy {
                        iface: iface.to_string(),
                        prog_id,
                    });
                }
                Err(e) => failures.push(format!("{mode} mode: {e}{}", hint(mode, &e))),
            }
        }
        Err(EbpfError::Attach {
            iface: iface.to_string(),
            reason: failures.join("; "),
        })
    }

    /// Runs the program once on `frame` without attaching it
    /// (BPF_PROG_RUN), configured as `cfg` says: what it does to a frame
    /// (the XDP action and the frame as it leaves), for tests of what the
    /// responder writes. Needs CAP_BPF.
    pub fn run_once(cfg: SteeringConfig, frame: &[u8]) -> Result<(u32, Vec<u8>), EbpfError> {
        let object = ObjectBuilder::default()
            .open_memory(OBJECT)
            .and_then(|open| open.load())
            .map_err(|e| EbpfError::Load(e.to_string()))?;
        values::map(&object, "config")?
            .update(&0u32.to_ne_bytes(), &cfg.encode(false), MapFlags::ANY)
            .map_err(|e| EbpfError::map("config", e))?;
        let prog = object
            .progs_mut()
            .find(|p| p.name() == PROG_NAME)
            .ok_or_else(|| EbpfError::Load(format!("program {PROG_NAME} missing")))?;
        let mut out = vec![0u8; frame.len()];
        let input = libbpf_rs::ProgramInput {
            data_in: Some(frame),
            data_out: Some(&mut out),
            ..Default::default()
        };
        let action = prog
            .test_run(input)
            .map_err(|e| EbpfError::Load(format!("BPF_PROG_RUN: {e}")))?
            .return_value;
        Ok((action, out))
    }

    /// The interface the program is attached to.
    pub fn iface(&self) -> &str {
        &self.iface
    }

    /// Its index in its network namespace.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// The mode that attached.
    pub fn mode(&self) -> AttachMode {
        self.mode
    }

    /// Why the preferred mode did not attach, when a fallback was used.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.as_deref()
    }

    /// Steers test frames arriving on `queue` to the AF_XDP socket `xsk`.
    pub fn register_socket(&self, queue: u32, xsk: BorrowedFd<'_>) -> Result<(), EbpfError> {
        if queue >= MAX_QUEUES {
            return Err(EbpfError::QueueOutOfRange(queue));
        }
        let fd = xsk.as_raw_fd() as u32;
        self.xsks
            .update(&queue.to_ne_bytes(), &fd.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| EbpfError::map("xsks", e))
    }

    /// Stops steering `queue` (its frames pass to the kernel again).
    pub fn unregister_socket(&self, queue: u32) -> Result<(), EbpfError> {
        self.xsks
            .delete(&queue.to_ne_bytes())
            .map_err(|e| EbpfError::map("xsks", e))
    }

    /// Makes the program the XDP-only receiver (or not): test frames are
    /// accounted per flow in the program and dropped, with no copy to
    /// user space ([`Self::rx_flows`] reads the accounting).
    pub fn set_count_only(&self, on: bool) -> Result<(), EbpfError> {
        self.config
            .update(&0u32.to_ne_bytes(), &self.cfg.encode(on), MapFlags::ANY)
            .map_err(|e| EbpfError::map("config", e))
    }

    /// The XDP-only receiver's accounting of one flow (zeros before its
    /// first frame).
    pub fn rx_flow(&self, flow: u16) -> Result<RxFlowCounters, EbpfError> {
        let v = self
            .rx_flows
            .lookup(&u32::from(flow).to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| EbpfError::map("rx_flows", e))?
            .unwrap_or_default();
        RxFlowCounters::decode(&v)
            .ok_or_else(|| EbpfError::Load("rx_flows value shorter than struct rx_flow".into()))
    }

    /// The XDP-only receiver's accounting of every flow it saw.
    pub fn rx_flows(&self) -> Result<Vec<(u16, RxFlowCounters)>, EbpfError> {
        let mut out = Vec::new();
        for flow in 0..RX_MAX_FLOWS {
            let v = self
                .rx_flows
                .lookup(&u32::from(flow).to_ne_bytes(), MapFlags::ANY)
                .map_err(|e| EbpfError::map("rx_flows", e))?
                .unwrap_or_default();
            if let Some(c) = RxFlowCounters::decode(&v).filter(|c| c.received > 0) {
                out.push((flow, c));
            }
        }
        Ok(out)
    }

    /// The program's counters, summed over CPUs, since it was loaded.
    pub fn stats(&self) -> Result<SteerStats, EbpfError> {
        let per_cpu = self
            .stats
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| EbpfError::map("stats", e))?
            .unwrap_or_default();
        Ok(crate::stats::sum_per_cpu(&per_cpu))
    }
}

/// The id of the XDP program attached to `ifindex` in any mode, 0 if none.
fn attached_prog_id(ifindex: u32, any_prog: BorrowedFd<'_>) -> Option<u32> {
    let xdp = Xdp::new(any_prog);
    [XdpFlags::NONE, XdpFlags::DRV_MODE, XdpFlags::SKB_MODE]
        .into_iter()
        .filter_map(|f| xdp.query_id(ifindex as i32, f).ok())
        .find(|&id| id != 0)
}

fn refuse_foreign_program(
    iface: &str,
    ifindex: u32,
    prog: BorrowedFd<'_>,
    force: bool,
) -> Result<(), EbpfError> {
    let Some(prog_id) = attached_prog_id(ifindex, prog) else {
        return Ok(());
    };
    if !force {
        return Err(EbpfError::Busy {
            iface: iface.to_string(),
            prog_id,
        });
    }
    let xdp = Xdp::new(prog);
    for flags in [XdpFlags::DRV_MODE, XdpFlags::SKB_MODE] {
        let _ = xdp.detach(ifindex as i32, flags);
    }
    match attached_prog_id(ifindex, prog) {
        None => Ok(()),
        Some(prog_id) => Err(EbpfError::Attach {
            iface: iface.to_string(),
            reason: format!(
                "--force could not detach program {prog_id}: it is held by a bpf_link of another process; stop that process"
            ),
        }),
    }
}

fn hint(mode: AttachMode, e: &std::io::Error) -> &'static str {
    match (mode, e.raw_os_error()) {
        (AttachMode::Native, Some(libc::EOPNOTSUPP)) => " (the driver has no native XDP)",
        (_, Some(libc::EPERM)) => " (run as root, or grant CAP_NET_ADMIN and CAP_BPF)",
        (_, Some(libc::EINVAL)) => " (the MTU may be too large for XDP on this driver)",
        _ => "",
    }
}
