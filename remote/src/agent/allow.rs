//! The allow-list: which interfaces and namespaces this agent serves,
//! and the refusal that says how to allow one.

use super::child::Child;
use std::os::unix::fs::MetadataExt;

/// One `--allow-iface`: an interface, in a namespace or in the agent's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedIface {
    /// Interface name.
    pub iface: String,
    /// Its namespace; None: the agent's own.
    pub netns: Option<String>,
}

impl std::fmt::Display for AllowedIface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.netns {
            Some(ns) => write!(f, "{}@{ns}", self.iface),
            None => write!(f, "{}", self.iface),
        }
    }
}

/// An interface name, checked as the kernel checks it.
pub(super) fn check_iface(text: &str) -> Result<(), String> {
    linerate_datapath::names::check_iface(text).map_err(|e| e.to_string())
}

/// A namespace name, checked as `ip netns` checks it.
pub(super) fn check_netns(text: &str) -> Result<(), String> {
    linerate_datapath::names::check_netns(text).map_err(|e| e.to_string())
}

/// IF or IF@NS, both names checked as the kernel and `ip netns` check them.
pub fn parse_allowed_iface(text: &str) -> Result<AllowedIface, String> {
    let (iface, netns) = match text.rsplit_once('@') {
        Some((name, ns)) => (name, Some(ns)),
        None => (text, None),
    };
    check_iface(iface)?;
    if let Some(ns) = netns {
        check_netns(ns)?;
    }
    Ok(AllowedIface {
        iface: iface.to_string(),
        netns: netns.map(str::to_string),
    })
}

/// `s` as a shell word (names may hold any character but '/' and
/// whitespace: `q;id>pw;#` is one).
pub fn quoted(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-@+=,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// A namespace's identity: the (device, inode) of its nsfs file.
pub(super) fn ns_id(path: &std::path::Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// What this agent serves: its interfaces, and whether runs may pass
/// --force.
#[derive(Debug, Clone)]
pub struct Allow {
    /// The interfaces requests may name.
    pub ifaces: Vec<AllowedIface>,
    /// Whether run requests may pass --force.
    pub force: bool,
    /// The agent's own network namespace (device, inode).
    pub own_ns: Option<(u64, u64)>,
}

impl Allow {
    /// `ifaces` and `force`, in this process's namespace.
    pub fn new(ifaces: Vec<AllowedIface>, force: bool) -> Self {
        Self {
            ifaces,
            force,
            own_ns: ns_id(std::path::Path::new("/proc/self/ns/net")),
        }
    }

    fn ns_of(&self, netns: Option<&str>) -> Option<(u64, u64)> {
        match netns {
            None => self.own_ns,
            Some(n) => linerate_datapath::netns::path(n)
                .ok()
                .and_then(|p| ns_id(&p)),
        }
    }

    /// Whether two namespaces (None: the agent's own) are one.
    fn same_ns(&self, a: Option<&str>, b: Option<&str>) -> bool {
        a == b || matches!((self.ns_of(a), self.ns_of(b)), (Some(x), Some(y)) if x == y)
    }

    /// None when `iface` in `netns` (None: the agent's own) is one this
    /// agent serves; else why not and the flag that allows it (the 403's
    /// text).
    pub fn refusal(&self, iface: &str, netns: Option<&str>) -> Option<String> {
        if self
            .ifaces
            .iter()
            .any(|a| a.iface == iface && self.same_ns(a.netns.as_deref(), netns))
        {
            return None;
        }
        let asked = AllowedIface {
            iface: iface.to_string(),
            netns: netns.map(str::to_string),
        };
        let served: Vec<String> = self.ifaces.iter().map(ToString::to_string).collect();
        Some(format!(
            "interface {iface} {} is not one this agent serves (it serves {}): start the agent with --allow-iface {} to allow it",
            match netns {
                Some(n) => format!("in namespace {n}"),
                None => "in the agent's namespace".to_string(),
            },
            served.join(", "),
            quoted(&asked.to_string())
        ))
    }

    /// Why a run the child would be started with is refused (403), if it is.
    pub fn run_refusal(&self, child: &Child) -> Option<String> {
        if child.force && !self.force {
            return Some(
                "--force (replace an XDP program someone else attached) is refused by this agent: start it with --allow-force to allow it"
                    .into(),
            );
        }
        child
            .sides
            .iter()
            .find_map(|(iface, ns)| self.refusal(iface, ns.as_deref()))
    }
}

/// What the agent allows when no --allow-iface is given: the lab's two
/// interfaces in the lab's namespaces.
pub fn default_allowed(lab: &str) -> Vec<AllowedIface> {
    ["a", "b"]
        .iter()
        .map(|side| AllowedIface {
            iface: format!("{lab}-{side}0"),
            netns: Some(format!("{lab}-{side}")),
        })
        .collect()
}
