//! What every bound endpoint of a worker reports, whatever moves its
//! frames (an AF_XDP socket, a kernel socket, the in-kernel generator, the
//! in-memory loopback): the mode it was bound in, its errors and its
//! XDP_STATISTICS. Generic code (workers, the port seam, kernel sockets)
//! imports these from here, not from [`crate::xsk`], which re-exports them.

use std::io;

/// The mode a socket was bound in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BindMode {
    /// The NIC DMAs straight into the UMEM.
    ZeroCopy,
    /// The kernel copies between its buffers and the UMEM.
    Copy,
    /// Not AF_XDP: an ordinary kernel socket (the udp and tcp backends).
    Kernel,
    /// Not a socket: the in-kernel generator (xdp_frames, no copy).
    Generator,
    /// Not a socket: the XDP-only receiver (frames counted and dropped in
    /// the XDP program, no copy to user space).
    XdpOnly,
    /// Not a socket: an in-memory port ([`crate::port::loopback`]), for
    /// tests and demonstrations (no interface, no root).
    Loopback,
}

impl BindMode {
    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ZeroCopy => "zero-copy",
            Self::Copy => "copy",
            Self::Kernel => "kernel socket",
            Self::Generator => "in-kernel generator",
            Self::XdpOnly => "xdp-only (counted in the program)",
            Self::Loopback => "in-memory loopback",
        }
    }
}

/// Errors of the AF_XDP layer.
#[derive(Debug, thiserror::Error)]
pub enum XskError {
    /// Bad ring or UMEM sizes.
    #[error("invalid AF_XDP configuration: {0}")]
    Config(String),
    /// The UMEM could not be created.
    #[error("creating the UMEM failed: {0}; is the memlock limit high enough (ulimit -l)?")]
    Umem(String),
    /// Binding failed in every allowed mode.
    #[error("binding an AF_XDP socket to {iface} queue {queue} failed: {reason}")]
    Bind {
        /// Interface.
        iface: String,
        /// Queue.
        queue: u32,
        /// What each attempt said.
        reason: String,
    },
    /// Zero-copy was required and refused.
    #[error("zero-copy refused on {iface} queue {queue}: {reason}; drop --zero-copy to run in copy mode")]
    ZeroCopyRefused {
        /// Interface.
        iface: String,
        /// Queue.
        queue: u32,
        /// What the kernel said.
        reason: String,
    },
    /// A ring operation failed.
    #[error("AF_XDP I/O: {0}")]
    Io(#[from] io::Error),
}

pub use linerate_counters::socket::XskStats;
