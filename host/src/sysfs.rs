//! Reading and writing an interface's sysfs attributes and a namespace's
//! net sysctls directly, as files: no shell, no `echo`, no `sysctl`.
//!
//! sysfs shows the interfaces of the namespace it was mounted in, so an
//! attribute of an interface in another namespace is reached as
//! `ip netns exec` reaches it, but in one thread of ours: the thread
//! leaves the process's mount namespace (`unshare(CLONE_NEWNS)`, mounts
//! made private so that nothing propagates back), enters the network
//! namespace and mounts a fresh sysfs over /sys, which then shows that
//! namespace's interfaces. The thread, its mounts and its mount namespace
//! end together. Net sysctls under /proc/sys/net follow the network
//! namespace of the thread that opens them, so they need no new mount.

use std::{
    fs,
    path::{Path, PathBuf},
    thread,
};

use anyhow::{anyhow, Context, Result};
use linerate_datapath::{names, netns};
use nix::{
    mount::{mount, umount2, MntFlags, MsFlags},
    sched::{unshare, CloneFlags},
};

/// The attributes linerate touches: a closed list, never a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attr {
    /// `threaded`: NAPI in a kernel thread (1) or in softirq (0).
    Threaded,
}

impl Attr {
    fn file(self) -> &'static str {
        match self {
            Self::Threaded => "threaded",
        }
    }
}

/// A net sysctl linerate sets in its lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetSysctl {
    /// `net.ipv6.conf.all.disable_ipv6`.
    DisableIpv6All,
    /// `net.ipv6.conf.default.disable_ipv6`.
    DisableIpv6Default,
}

impl NetSysctl {
    fn path(self) -> &'static str {
        match self {
            Self::DisableIpv6All => "/proc/sys/net/ipv6/conf/all/disable_ipv6",
            Self::DisableIpv6Default => "/proc/sys/net/ipv6/conf/default/disable_ipv6",
        }
    }
}

fn attr_path(iface: &str, attr: Attr) -> Result<PathBuf> {
    names::check_iface(iface)?;
    Ok(Path::new("/sys/class/net").join(iface).join(attr.file()))
}

/// Runs `f` in a thread that sees `netns`'s sysfs at /sys (or the
/// process's own, without a namespace).
fn in_netns_sysfs<T: Send + 'static>(
    netns: Option<&str>,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let ns = netns.map(str::to_string);
    if let Some(n) = &ns {
        names::check_netns(n)?;
    }
    thread::spawn(move || -> Result<T> {
        if let Some(ns) = &ns {
            unshare(CloneFlags::CLONE_NEWNS)
                .context("leaving the mount namespace to read sysfs (needs CAP_SYS_ADMIN)")?;
            mount(
                None::<&str>,
                "/",
                None::<&str>,
                MsFlags::MS_REC | MsFlags::MS_SLAVE,
                None::<&str>,
            )
            .context("making this thread's mounts private")?;
            netns::enter(ns)?;
            // As `ip netns exec`: the old /sys goes (lazily, in this
            // thread's mount namespace only), a sysfs of the namespace
            // takes its place.
            let _ = umount2("/sys", MntFlags::MNT_DETACH);
            mount(
                Some("sysfs"),
                "/sys",
                Some("sysfs"),
                MsFlags::empty(),
                None::<&str>,
            )
            .with_context(|| format!("mounting the sysfs of namespace {ns:?}"))?;
        }
        f()
    })
    .join()
    .map_err(|_| anyhow!("the sysfs thread panicked"))?
}

/// Reads an interface attribute (trimmed).
pub fn read(netns: Option<&str>, iface: &str, attr: Attr) -> Result<String> {
    let p = attr_path(iface, attr)?;
    in_netns_sysfs(netns, move || {
        fs::read_to_string(&p)
            .map(|s| s.trim().to_string())
            .with_context(|| format!("reading {}", p.display()))
    })
}

/// Writes an interface attribute.
pub fn write(netns: Option<&str>, iface: &str, attr: Attr, value: &str) -> Result<()> {
    let p = attr_path(iface, attr)?;
    let v = value.to_string();
    in_netns_sysfs(netns, move || {
        fs::write(&p, v.as_bytes()).with_context(|| format!("writing {v:?} to {}", p.display()))
    })
}

/// A per-interface IPv6 setting, `net.ipv6.conf.IFACE.KEY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ipv6Conf {
    /// `disable_ipv6`.
    DisableIpv6,
    /// `addr_gen_mode` (1: no link-local address of its own).
    AddrGenMode,
}

impl Ipv6Conf {
    fn file(self) -> &'static str {
        match self {
            Self::DisableIpv6 => "disable_ipv6",
            Self::AddrGenMode => "addr_gen_mode",
        }
    }
}

/// Sets an interface's IPv6 setting in a namespace (or in this one).
pub fn set_ipv6_conf(netns: Option<&str>, iface: &str, key: Ipv6Conf, value: &str) -> Result<()> {
    names::check_iface(iface)?;
    let path = Path::new("/proc/sys/net/ipv6/conf")
        .join(iface)
        .join(key.file());
    write_sysctl(netns, path, value)
}

/// Sets a net sysctl of a namespace (or of this one).
pub fn set_sysctl(netns: Option<&str>, key: NetSysctl, value: &str) -> Result<()> {
    write_sysctl(netns, PathBuf::from(key.path()), value)
}

fn write_sysctl(netns: Option<&str>, path: PathBuf, value: &str) -> Result<()> {
    let ns = netns.map(str::to_string);
    if let Some(n) = &ns {
        names::check_netns(n)?;
    }
    let v = value.to_string();
    thread::spawn(move || -> Result<()> {
        if let Some(ns) = &ns {
            netns::enter(ns)?;
        }
        fs::write(&path, v.as_bytes())
            .with_context(|| format!("writing {v:?} to {}", path.display()))
    })
    .join()
    .map_err(|_| anyhow!("the sysctl thread panicked"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_paths_take_names_only() {
        assert_eq!(
            attr_path("lr-a0", Attr::Threaded).unwrap(),
            Path::new("/sys/class/net/lr-a0/threaded")
        );
        assert!(attr_path("../../kernel", Attr::Threaded).is_err());
        assert!(attr_path("a/b", Attr::Threaded).is_err());
        assert!(read(Some("../x"), "lr-a0", Attr::Threaded).is_err());
    }
}
