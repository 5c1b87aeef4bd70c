//! Host locks: flock'd files under [`LOCK_DIR`] that keep two runs off
//! one interface and a lab from changing under a run.

use std::{
    fs::{File, OpenOptions},
    io::{Read, Seek, Write},
    path::PathBuf,
};

use anyhow::{bail, Context, Result};

/// Where linerate keeps its lock files.
pub const LOCK_DIR: &str = "/run/linerate";

/// A held lock (flock on a file under [`LOCK_DIR`]); released when dropped,
/// or when the process ends however it ends.
#[derive(Debug)]
pub struct Held {
    pub(crate) file: File,
    /// The lock file, for messages.
    pub(crate) path: PathBuf,
    /// A lock file of one run's (an interface's): removed when released,
    /// so that files of interfaces long gone do not pile up.
    pub(crate) unlink: Option<PathBuf>,
}

impl Held {
    /// The lock `file` (under [`LOCK_DIR`], named `name`) held by its
    /// caller; the file is kept when released.
    pub fn kept(file: File, name: &str) -> Self {
        Self {
            file,
            path: lock_path(name),
            unlink: None,
        }
    }

    /// Writes this process's pid in the lock file, for the message of
    /// whoever finds it taken.
    pub fn mark(&mut self) -> Result<()> {
        mark(&mut self.file, &self.path)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Still locked here: whoever opened the file meanwhile finds, once
        // it has the lock, that the name is no longer its file, and tries
        // again (see `try_exclusive`).
        if let Some(p) = self.unlink.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

pub(crate) fn lock_path(name: &str) -> PathBuf {
    PathBuf::from(LOCK_DIR).join(name)
}

pub fn lock_file(name: &str) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(LOCK_DIR).with_context(|| format!("creating {LOCK_DIR}"))?;
    let p = lock_path(name);
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        // Never through a link, never blocking on a FIFO.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&p)
        .with_context(|| format!("opening the lock file {}", p.display()))
}

/// The pid written in a lock file by its holder, if any.
fn holder(f: &mut File) -> String {
    let mut s = String::new();
    let _ = f.rewind().and_then(|_| f.read_to_string(&mut s));
    match s.trim() {
        "" => "unknown".to_string(),
        p => p.to_string(),
    }
}

/// Writes this process's pid into a lock file it holds.
fn mark(f: &mut File, path: &std::path::Path) -> Result<()> {
    f.set_len(0)
        .and_then(|_| f.rewind())
        .and_then(|_| write!(f, "{}", std::process::id()))
        .with_context(|| format!("writing the lock file {}", path.display()))
}

/// Takes the exclusive, non-blocking lock of `name`; `busy(pid)` says
/// why it cannot be had. With `unlink`, the file goes when the lock is
/// released; a lock taken on a file that went meanwhile is taken again.
pub fn try_exclusive(
    name: &str,
    unlink: bool,
    busy: impl FnOnce(String) -> String,
) -> Result<Held> {
    use std::os::unix::fs::MetadataExt;
    let p = lock_path(name);
    for _ in 0..100 {
        let mut f = lock_file(name)?;
        match f.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => bail!("{}", busy(holder(&mut f))),
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("locking {}", p.display()))
            }
        }
        let same = match (f.metadata(), std::fs::metadata(&p)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
        if same {
            mark(&mut f, &p)?;
            return Ok(Held {
                file: f,
                path: p.clone(),
                unlink: unlink.then(|| p.clone()),
            });
        }
    }
    bail!("could not lock {}: it keeps being replaced", p.display())
}

/// Locks an interface for a run, by identity (its namespace's inode and
/// its ifindex), so that two runs on one interface refuse before either
/// changes anything.
pub fn iface_lock(netns: Option<&str>, iface: &str, identity: (u64, u32)) -> Result<Held> {
    let (ns_ino, ifindex) = identity;
    let iface = iface.to_string();
    let where_ = netns.map_or(String::new(), |n| format!(" (namespace {n})"));
    try_exclusive(&format!("if-{ns_ino}-{ifindex}.lock"), true, move |pid| {
        format!(
            "interface {iface}{where_} is in use by another linerate run (pid {pid}): wait for it to end, or use other interfaces"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interface_lock_is_one_runs_and_its_file_goes_with_it() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("SKIP: {LOCK_DIR} needs root");
            return;
        }
        // An identity no namespace has.
        let id = (u64::MAX - 7, 7);
        let path = lock_path(&format!("if-{}-{}.lock", id.0, id.1));
        let held = iface_lock(Some("hxu-a"), "hxu-a0", id).unwrap();
        // flock conflicts between two opens of one process too.
        let e = iface_lock(Some("hxu-a"), "hxu-a0", id)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("interface hxu-a0 (namespace hxu-a) is in use by another linerate run")
                && e.contains(&format!("(pid {})", std::process::id())),
            "{e}"
        );
        assert!(path.exists());
        drop(held);
        assert!(!path.exists(), "the lock file outlived its lock");
        drop(iface_lock(None, "hxu-a0", id).unwrap());
        assert!(!path.exists());
    }
}
