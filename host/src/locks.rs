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

/// Opens lock file `name` and takes `how` on it: again on the new file
/// when the name went meanwhile (a lab's lock files go with the lab:
/// [`remove`]), so that no two holders hold two files of one name.
pub fn take(name: &str, how: impl Fn(&File) -> Result<()>) -> Result<File> {
    use std::os::unix::fs::MetadataExt;
    let p = lock_path(name);
    for _ in 0..100 {
        let f = lock_file(name)?;
        how(&f)?;
        match (f.metadata(), std::fs::metadata(&p)) {
            (Ok(a), Ok(b)) if a.dev() == b.dev() && a.ino() == b.ino() => return Ok(f),
            _ => continue,
        }
    }
    bail!("could not lock {}: it keeps being replaced", p.display())
}

/// Removes lock file `name`; its caller holds it exclusively, and whoever
/// opened it meanwhile takes the new file of that name once it has the
/// lock ([`take`], [`try_exclusive`]). Nothing to remove is no error.
pub fn remove(name: &str) -> Result<()> {
    let p = lock_path(name);
    match std::fs::remove_file(&p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing the lock file {}", p.display()))
        }
        _ => Ok(()),
    }
}

/// Removes the interface lock files nobody holds: those of runs killed
/// before they could remove theirs (SIGKILL, a crash). A file is removed
/// only while this process holds its lock; whoever opened it meanwhile
/// finds, once it has the lock, that the name is no longer its file and
/// tries again ([`try_exclusive`]). Returns how many went.
pub fn remove_stale_iface_locks() -> usize {
    let Ok(dir) = std::fs::read_dir(LOCK_DIR) else {
        return 0;
    };
    let mut removed = 0;
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !(name.starts_with("if-") && name.ends_with(".lock")) {
            continue;
        }
        let Ok(f) = lock_file(name) else { continue };
        if f.try_lock().is_ok() && remove(name).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Locks an interface for a run, by identity (its namespace's inode and
/// its ifindex), so that two runs on one interface refuse before either
/// changes anything.
pub fn iface_lock(netns: Option<&str>, iface: &str, identity: (u64, u32)) -> Result<Held> {
    let (ns_ino, ifindex) = identity;
    let iface = iface.to_string();
    let where_ = netns.map_or(String::new(), |n| format!(" (namespace {n})"));
    remove_stale_iface_locks();
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
    #[ignore = "needs root: /run/linerate is root's"]
    fn an_interface_lock_is_one_runs_and_its_file_goes_with_it() {
        assert!(nix::unistd::geteuid().is_root(), "{LOCK_DIR} needs root");
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

    /// The lock file of a killed run (left behind, nobody holding it) goes
    /// when the next interface is locked; a held one stays.
    #[test]
    #[ignore = "needs root: /run/linerate is root's"]
    fn a_killed_runs_interface_lock_file_goes_at_the_next_lock() {
        assert!(nix::unistd::geteuid().is_root(), "{LOCK_DIR} needs root");
        let stale = format!("if-{}-9.lock", u64::MAX - 9);
        let mut left = lock_file(&stale).unwrap();
        mark(&mut left, &lock_path(&stale)).unwrap();
        drop(left);
        let held_id = (u64::MAX - 8, 8);
        let held = iface_lock(None, "hxu-b0", held_id).unwrap();
        assert!(!lock_path(&stale).exists(), "the stale file stayed");
        let other = iface_lock(None, "hxu-b1", (u64::MAX - 10, 10)).unwrap();
        assert!(held.path.exists(), "a held lock's file went");
        drop((held, other));
    }

    /// A lock taken on a file that was removed while it waited is taken
    /// again on the file now of that name: never two holders of one name.
    #[test]
    #[ignore = "needs root: /run/linerate is root's"]
    fn a_lock_whose_file_went_is_taken_on_the_new_one() {
        assert!(nix::unistd::geteuid().is_root(), "{LOCK_DIR} needs root");
        let name = format!("test-take-{}.lock", std::process::id());
        let first = take(&name, |f| Ok(f.lock()?)).unwrap();
        let waiter = std::thread::spawn({
            let name = name.clone();
            move || take(&name, |f| Ok(f.lock()?)).unwrap()
        });
        // The waiter opened the first file (or will open the second):
        // the file goes while the first holder has it, then the lock.
        std::thread::sleep(std::time::Duration::from_millis(50));
        remove(&name).unwrap();
        drop(first);
        let second = waiter.join().unwrap();
        use std::os::unix::fs::MetadataExt;
        let now = std::fs::metadata(lock_path(&name)).unwrap();
        assert_eq!(second.metadata().unwrap().ino(), now.ino());
        // Exclusive on that file: a third cannot have it.
        let third = lock_file(&name).unwrap();
        assert!(third.try_lock().is_err());
        drop(second);
        remove(&name).unwrap();
        remove(&name).unwrap();
        assert!(!lock_path(&name).exists());
    }
}
