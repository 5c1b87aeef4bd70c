//! Privilege checks, so that a missing one is named before anything fails
//! half-way.

use anyhow::{bail, Result};

/// What AF_XDP, XDP attach and namespaces need.
pub const CAPABILITIES: &str = "CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF, CAP_SYS_ADMIN";

/// Whether linerate runs as root.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Fails unless running as root ([`CAPABILITIES`]).
pub fn require_root(what: &str) -> Result<()> {
    if !is_root() {
        bail!("{what} needs root ({CAPABILITIES}): run it with sudo");
    }
    Ok(())
}
