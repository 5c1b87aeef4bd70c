//! `--pcap FILE`: the frames the workers sent and received, as pcapng
//! (written with `pcap-file`). Taps see neither AF_XDP copy-mode sends
//! nor XDP-redirected receives; the workers keep a bounded copy of their
//! first frames ([`Capture`]) and this writes it after the run.
//!
//! The file has one interface per side (0: the sending interface, 1: the
//! receiving one), nanosecond timestamps (when a sender stamped the
//! frame, when a receiver took it from its ring, on the wall clock) and
//! each packet's direction in its flags (outbound, inbound); packets are
//! in the order of their timestamps.

use std::{
    borrow::Cow,
    fs::File,
    io::{BufWriter, Write},
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::{Context, Result};
use linerate_datapath::capture::Capture;
use nix::time::{clock_gettime, ClockId};
use pcap_file::{
    pcapng::{
        blocks::{
            enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption},
            interface_description::{InterfaceDescriptionBlock, InterfaceDescriptionOption},
        },
        PcapNgWriter,
    },
    DataLink,
};

/// EPB flags: the direction bits (pcapng, epb_flags).
const INBOUND: u32 = 1;
const OUTBOUND: u32 = 2;

/// The --pcap files this process created.
static CREATED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// A --pcap file, created before the run (so that a path that cannot be
/// written fails before anything runs).
pub struct PcapFile {
    path: PathBuf,
    file: File,
}

/// What was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Frames the senders sent.
    pub sent: usize,
    /// Frames the receivers received.
    pub received: usize,
}

/// One side of the path as the file names it.
pub struct Side<'a> {
    /// Its interface.
    pub iface: &'a str,
    /// Its workers' captures.
    pub captures: Vec<&'a Capture>,
}

impl PcapFile {
    /// Creates `path`, a new regular file (never through a link; an
    /// existing file, a FIFO or a device is refused, `/dev/null` taken).
    /// A file this process created is written again by its later trials
    /// (`--search-rate`, rfc2544): it then holds the last one's frames.
    pub fn create(path: &Path) -> Result<Self> {
        let mut ours = CREATED.lock().unwrap_or_else(|e| e.into_inner());
        let file = if ours.iter().any(|p| p == path) {
            let f = linerate_host::files::open_existing(path)?;
            f.set_len(0)
                .with_context(|| format!("writing --pcap {}", path.display()))?;
            f
        } else {
            let f = linerate_host::files::create_new(path).map_err(|e| match e {
                linerate_host::files::FileError::Write { error, .. } => anyhow::Error::new(error)
                    .context(format!(
                    "--pcap {}: creating the file failed; give a file in a directory you can write",
                    path.display()
                )),
                refused => anyhow::anyhow!("--pcap {refused}"),
            })?;
            ours.push(path.to_path_buf());
            f
        };
        Ok(Self {
            path: path.to_path_buf(),
            file,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the frames of both sides, flushed to the disk.
    pub fn write(self, tx: &Side<'_>, rx: &Side<'_>) -> Result<Written> {
        let context = || format!("writing --pcap {}", self.path.display());
        // Workers stamp CLOCK_MONOTONIC; the file has the wall clock.
        let offset = wall_minus_monotonic();
        let mut packets = Vec::new();
        for (interface, flags, side) in [(0, OUTBOUND, tx), (1, INBOUND, rx)] {
            for capture in &side.captures {
                packets.extend(capture.frames().map(|(r, bytes)| EnhancedPacketBlock {
                    interface_id: interface,
                    timestamp: Duration::from_nanos(r.ts_ns.saturating_add_signed(offset)),
                    original_len: r.len,
                    data: Cow::Borrowed(bytes),
                    options: vec![EnhancedPacketOption::Flags(flags)],
                }));
            }
        }
        // In time order (stable: a sender's batch shares one stamp).
        packets.sort_by_key(|p| p.timestamp);
        let snaplen = [tx, rx]
            .iter()
            .flat_map(|s| s.captures.iter().map(|c| c.snaplen()))
            .max()
            .unwrap_or(0);
        let mut w = PcapNgWriter::new(BufWriter::new(&self.file)).with_context(context)?;
        for side in [tx, rx] {
            w.write_pcapng_block(InterfaceDescriptionBlock {
                linktype: DataLink::ETHERNET,
                snaplen: snaplen as u32,
                options: vec![
                    InterfaceDescriptionOption::IfName(Cow::Borrowed(side.iface)),
                    // Timestamps in nanoseconds.
                    InterfaceDescriptionOption::IfTsResol(9),
                ],
            })
            .with_context(context)?;
        }
        let mut written = Written {
            sent: 0,
            received: 0,
        };
        for p in packets {
            if p.interface_id == 0 {
                written.sent += 1;
            } else {
                written.received += 1;
            }
            w.write_pcapng_block(p).with_context(context)?;
        }
        w.into_inner().flush().with_context(context)?;
        // (/dev/null has nothing to flush.)
        if self.file.metadata().is_ok_and(|m| m.is_file()) {
            self.file.sync_data().with_context(context)?;
        }
        Ok(written)
    }
}

/// CLOCK_REALTIME minus CLOCK_MONOTONIC, ns.
fn wall_minus_monotonic() -> i64 {
    let ns = |id| {
        clock_gettime(id)
            .map(|t| t.tv_sec() * 1_000_000_000 + t.tv_nsec())
            .unwrap_or(0)
    };
    ns(ClockId::CLOCK_REALTIME) - ns(ClockId::CLOCK_MONOTONIC)
}
