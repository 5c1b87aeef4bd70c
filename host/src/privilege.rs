//! Privilege checks, so that a missing one is named before anything fails
//! half-way.

use anyhow::{bail, Result};

/// Fails unless running as root (AF_XDP, XDP attach and namespaces need
/// CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF and CAP_SYS_ADMIN).
pub fn require_root(what: &str) -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!("{what} needs root (CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF, CAP_SYS_ADMIN): run it with sudo");
    }
    Ok(())
}
