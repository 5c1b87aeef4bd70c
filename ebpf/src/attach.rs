//! Attaching the program to an interface through a bpf_link.
//!
//! libbpf-rs's `Program::attach_xdp` takes no mode flags, so the one call
//! that creates an XDP link in a chosen mode goes straight to libbpf.

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// The XDP mode the program runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachMode {
    /// In the driver, before any socket buffer is allocated.
    Native,
    /// Generic (SKB) mode, after the kernel built a socket buffer: slower, works everywhere.
    Generic,
}

/// Which modes to try.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AttachPolicy {
    /// Native first, generic as fallback.
    #[default]
    Auto,
    /// Native only.
    Native,
    /// Generic only.
    Generic,
}

impl AttachPolicy {
    pub(crate) fn modes(self) -> &'static [AttachMode] {
        match self {
            Self::Auto => &[AttachMode::Native, AttachMode::Generic],
            Self::Native => &[AttachMode::Native],
            Self::Generic => &[AttachMode::Generic],
        }
    }
}

impl AttachMode {
    /// The name used in reports ("native" or "generic").
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Generic => "generic",
        }
    }

    fn flags(self) -> u32 {
        match self {
            Self::Native => libbpf_sys::XDP_FLAGS_DRV_MODE,
            Self::Generic => libbpf_sys::XDP_FLAGS_SKB_MODE,
        }
    }
}

impl std::fmt::Display for AttachMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Creates an XDP bpf_link for `prog` on `ifindex` in `mode`. The program
/// stays attached while the returned descriptor is open.
pub(crate) fn link_xdp(
    prog: BorrowedFd<'_>,
    ifindex: u32,
    mode: AttachMode,
) -> std::io::Result<OwnedFd> {
    let opts = libbpf_sys::bpf_link_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_link_create_opts>() as libbpf_sys::size_t,
        flags: mode.flags(),
        ..Default::default()
    };
    // SAFETY: `opts` is a fully initialised bpf_link_create_opts whose `sz`
    // is its own size, and it outlives the call; the program descriptor is
    // borrowed, so it is open for the duration of the call.
    let fd = unsafe {
        libbpf_sys::bpf_link_create(prog.as_raw_fd(), ifindex as i32, libbpf_sys::BPF_XDP, &opts)
    };
    if fd < 0 {
        return Err(std::io::Error::from_raw_os_error(-fd));
    }
    // SAFETY: libbpf returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
