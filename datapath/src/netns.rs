//! Moving the calling thread into a named network namespace, so that a
//! worker's socket and interface index belong to that namespace.

use std::{fs::File, io, path::PathBuf};

use nix::sched::{setns, CloneFlags};

use crate::names;

/// Where `ip netns` keeps named namespaces.
pub const NETNS_DIR: &str = "/run/netns";

/// The path of a named namespace; refused when the name is not a name
/// (a path, "..", empty: see [`names::check_netns`]).
pub fn path(name: &str) -> io::Result<PathBuf> {
    names::check_netns(name).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    Ok(PathBuf::from(NETNS_DIR).join(name))
}

/// Whether a named namespace exists (false for a name that is not one).
pub fn exists(name: &str) -> bool {
    path(name).is_ok_and(|p| p.exists())
}

/// Moves the calling thread (only it) into the named network namespace.
pub fn enter(name: &str) -> io::Result<()> {
    let file = File::open(path(name)?).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "network namespace {name:?} not found ({e}); create it or run `linerate lab up`"
            ),
        )
    })?;
    setns(file, CloneFlags::CLONE_NEWNET).map_err(|e| {
        io::Error::other(format!(
            "entering network namespace {name:?} failed: {e}; this needs root (CAP_SYS_ADMIN)"
        ))
    })
}

/// Runs `f` in a thread of its own inside namespace `netns` (None: this
/// one): entering a namespace is per thread, so the caller's stays as it
/// was. An error entering the namespace, or `f`'s panic, is an `io::Error`.
pub fn in_thread<T: Send + 'static>(
    netns: Option<&str>,
    f: impl FnOnce() -> T + Send + 'static,
) -> io::Result<T> {
    let netns = netns.map(str::to_string);
    std::thread::Builder::new()
        .name("lr-netns".into())
        .spawn(move || {
            if let Some(ns) = &netns {
                enter(ns)?;
            }
            Ok(f())
        })?
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("a thread in the namespace panicked")))
}
