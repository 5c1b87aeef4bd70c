//! Creating a UMEM and binding an AF_XDP socket to it: zero-copy first,
//! copy mode when the driver refuses (veth does), multi-buffer when frames
//! span several chunks.

use std::{error::Error as _, io, num::NonZeroU32, str::FromStr};

use xsk_rs::{
    config::{BindFlags, FrameSize, Interface, LibxdpFlags, QueueSize, SocketConfig, UmemConfig},
    CompQueue, FillQueue, FrameDesc, RxQueue, Socket, TxQueue, Umem,
};

use crate::{
    binding::{BindMode, XskError, XskStats},
    geometry::{CHUNK_SIZE, SMALL_CHUNK_SIZE},
};

/// Whether to use zero-copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZeroCopy {
    /// Zero-copy where the driver allows it, copy mode otherwise.
    #[default]
    Auto,
    /// Zero-copy or fail.
    Require,
    /// Copy mode only.
    Off,
}

/// Where and how to bind one socket.
#[derive(Debug, Clone)]
pub struct SocketOptions {
    /// Interface name, in the calling thread's network namespace.
    pub iface: String,
    /// Queue id on that interface.
    pub queue: u32,
    /// Size of the ring the port uses (TX ring for a sender, RX ring for a
    /// receiver); the UMEM holds twice as many chunks for a receiver.
    pub ring_size: u32,
    /// Zero-copy policy.
    pub zero_copy: ZeroCopy,
    /// Allow frames to span several chunks (XDP_USE_SG).
    pub multi_buffer: bool,
    /// UMEM chunk size: [`SMALL_CHUNK_SIZE`] or [`CHUNK_SIZE`] (which
    /// multi-buffer frames need); [`chunk_size_for`] picks the better one.
    ///
    /// [`chunk_size_for`]: crate::geometry::chunk_size_for
    pub chunk_size: u32,
}

/// A bound socket with its UMEM and all four rings.
pub(super) struct Bound {
    pub(super) tx: TxQueue,
    pub(super) rx: RxQueue,
    pub(super) fill: FillQueue,
    pub(super) comp: CompQueue,
    pub(super) umem: Umem,
    pub(super) frames: Vec<FrameDesc>,
    pub(super) mode: BindMode,
    pub(super) fallback_reason: Option<String>,
    pub(super) tx_size: u32,
    pub(super) huge_pages: bool,
}

impl Bound {
    /// Creates a UMEM of `chunks` chunks and binds a socket to it.
    pub(super) fn new(
        opts: &SocketOptions,
        chunks: u32,
        rx_size: u32,
        tx_size: u32,
    ) -> Result<Self, XskError> {
        if opts.chunk_size != SMALL_CHUNK_SIZE && opts.chunk_size != CHUNK_SIZE {
            return Err(XskError::Config(format!(
                "UMEM chunks of {} bytes: use {SMALL_CHUNK_SIZE} or {CHUNK_SIZE}",
                opts.chunk_size
            )));
        }
        let iface = Interface::from_str(&opts.iface)
            .map_err(|_| XskError::Config(format!("bad interface name {:?}", opts.iface)))?;
        let mut attempts: Vec<(BindMode, BindFlags)> = Vec::new();
        let mut flags = BindFlags::XDP_USE_NEED_WAKEUP;
        if opts.multi_buffer {
            flags |= BindFlags::XDP_USE_SG;
        }
        if opts.zero_copy != ZeroCopy::Off {
            attempts.push((BindMode::ZeroCopy, flags | BindFlags::XDP_ZEROCOPY));
        }
        if opts.zero_copy != ZeroCopy::Require {
            attempts.push((BindMode::Copy, flags | BindFlags::XDP_COPY));
        }
        let mut failures = Vec::new();
        for (mode, flags) in attempts {
            // A UMEM whose first bind failed is not reused: each attempt
            // starts from a fresh one.
            let (umem, frames, huge_pages) =
                new_umem(chunks, rx_size.max(tx_size), opts.chunk_size)?;
            let cfg = SocketConfig::builder()
                .rx_queue_size(queue_size(rx_size)?)
                .tx_queue_size(queue_size(tx_size)?)
                .libxdp_flags(LibxdpFlags::XSK_LIBXDP_FLAGS_INHIBIT_PROG_LOAD)
                .bind_flags(flags)
                .build();
            match bind_retrying_busy(cfg, &umem, &iface, opts.queue) {
                Ok((tx, rx, Some((fill, comp)))) => {
                    let fallback_reason = (!failures.is_empty()).then(|| failures.join("; "));
                    return Ok(Self {
                        tx,
                        rx,
                        fill,
                        comp,
                        umem,
                        frames,
                        mode,
                        fallback_reason,
                        tx_size,
                        huge_pages,
                    });
                }
                Ok((_, _, None)) => {
                    return Err(XskError::Config("UMEM unexpectedly shared".into()));
                }
                Err(e) => {
                    let os = e
                        .source()
                        .and_then(|s| s.downcast_ref::<io::Error>())
                        .and_then(io::Error::raw_os_error);
                    let what = match os {
                        Some(code) => io::Error::from_raw_os_error(code).to_string(),
                        None => e.to_string(),
                    };
                    failures.push(format!("{} bind: {what}{}", mode.as_str(), hint(os)));
                    if os == Some(libc::ENODEV) || os == Some(libc::EPERM) {
                        break;
                    }
                }
            }
        }
        let reason = failures.join("; ");
        if opts.zero_copy == ZeroCopy::Require {
            return Err(XskError::ZeroCopyRefused {
                iface: opts.iface.clone(),
                queue: opts.queue,
                reason,
            });
        }
        Err(XskError::Bind {
            iface: opts.iface.clone(),
            queue: opts.queue,
            reason,
        })
    }

    /// Whether the TX ring holds descriptors the kernel has not taken yet
    /// (in copy mode it takes at most a batch per kick).
    #[inline]
    pub(super) fn tx_pending(&mut self) -> bool {
        self.tx.nb_free_exact() < self.tx_size
    }

    /// Descriptors in the TX ring the kernel has not taken yet.
    #[inline]
    pub(super) fn tx_ring_pending(&mut self) -> usize {
        (self.tx_size - self.tx.nb_free_exact().min(self.tx_size)) as usize
    }

    /// Tells the kernel to transmit, when the TX ring asks for it.
    #[inline]
    pub(super) fn kick(&mut self) -> Result<(), XskError> {
        if self.tx.needs_wakeup() {
            self.tx.wakeup()?;
        }
        Ok(())
    }

    pub(super) fn stats(&self) -> Result<XskStats, XskError> {
        let s = self.rx.fd().xdp_statistics()?;
        Ok(XskStats {
            rx_dropped: s.rx_dropped(),
            rx_invalid_descs: s.rx_invalid_descs(),
            rx_ring_full: s.rx_ring_full(),
            rx_fill_ring_empty: s.rx_fill_ring_empty_descs(),
            tx_invalid_descs: s.tx_invalid_descs(),
            tx_ring_empty: s.tx_ring_empty_descs(),
        })
    }
}

type Queues = (TxQueue, RxQueue, Option<(FillQueue, CompQueue)>);

/// Binds, retrying for a while on EBUSY: a socket closed an instant ago
/// (the previous run's, or a probe's) releases its queue asynchronously.
fn bind_retrying_busy(
    cfg: SocketConfig,
    umem: &Umem,
    iface: &Interface,
    queue: u32,
) -> Result<Queues, xsk_rs::socket::SocketCreateError> {
    let mut tries = 0;
    loop {
        // SAFETY: the UMEM is new and not shared with any other socket,
        // and program loading is inhibited, so xsk-rs's contract for
        // shared UMEMs does not apply.
        let r = unsafe { Socket::new(cfg, umem, iface, queue) };
        let busy = matches!(&r, Err(e) if e
            .source()
            .and_then(|s| s.downcast_ref::<io::Error>())
            .and_then(io::Error::raw_os_error)
            == Some(libc::EBUSY));
        tries += 1;
        if !busy || tries >= 20 {
            return r;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn hint(os: Option<i32>) -> &'static str {
    match os {
        Some(libc::EOPNOTSUPP) => ": the driver has no zero-copy support",
        Some(libc::EPERM) => ": run as root, or grant CAP_NET_RAW and CAP_NET_ADMIN",
        Some(libc::ENODEV) => ": no such interface or queue in this network namespace",
        Some(libc::EINVAL) => ": queue id beyond the interface's queues, or frames too large (check the MTU and --queues)",
        Some(libc::EBUSY) => ": another AF_XDP socket is bound to this queue (is another linerate running?)",
        _ => "",
    }
}

fn queue_size(n: u32) -> Result<QueueSize, XskError> {
    QueueSize::new(n).map_err(|e| XskError::Config(format!("ring size {n}: {e}")))
}

/// Creates a UMEM on 2 MB huge pages when the system has enough free ones
/// (`vm.nr_hugepages`), else on ordinary pages, and says which.
fn new_umem(
    chunks: u32,
    ring: u32,
    chunk_size: u32,
) -> Result<(Umem, Vec<FrameDesc>, bool), XskError> {
    let cfg = UmemConfig::builder()
        .frame_size(FrameSize::new(chunk_size).map_err(|e| XskError::Config(e.to_string()))?)
        // Twice the chunks: the kernel publishes its fill-ring consumer
        // index lazily in copy mode, so a ring exactly as large as the
        // chunks can look full when a chunk comes back.
        .fill_queue_size(queue_size((chunks * 2).next_power_of_two())?)
        .comp_queue_size(queue_size(ring.next_power_of_two())?)
        .frame_headroom(0)
        .build()
        .map_err(|e| XskError::Config(e.to_string()))?;
    let count =
        NonZeroU32::new(chunks).ok_or_else(|| XskError::Config("UMEM of zero chunks".into()))?;
    // Only whole huge pages: a partial one cannot be unmapped (munmap
    // refuses a length that splits a huge page, so the memory would stay
    // mapped until the process ends).
    let len = chunks as usize * chunk_size as usize;
    if huge_pages().is_some_and(|h| h.free > 0 && (len as u64).is_multiple_of(h.size)) {
        if let Ok((umem, frames)) = Umem::new(cfg, count, true) {
            return Ok((umem, frames, true));
        }
    }
    Umem::new(cfg, count, false)
        .map(|(umem, frames)| (umem, frames, false))
        .map_err(|e| {
            let detail = e.source().map(|s| format!(": {s}")).unwrap_or_default();
            XskError::Umem(format!("{e}{detail}"))
        })
}

/// The system's huge pages, from /proc/meminfo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct HugePages {
    /// Free huge pages.
    pub free: u64,
    /// The default huge page size in bytes (what MAP_HUGETLB uses).
    pub size: u64,
}

/// The system's huge pages, when /proc/meminfo tells.
pub fn huge_pages() -> Option<HugePages> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = info.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some(HugePages {
        free: field("HugePages_Free:")?,
        size: field("Hugepagesize:")? * 1024,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_pages_are_read() {
        if let Some(h) = huge_pages() {
            assert!(h.size.is_power_of_two() && h.size >= 2 << 20, "{h:?}");
        }
    }
}
