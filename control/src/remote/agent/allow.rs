//! The allow-list: which interfaces and namespaces this agent serves,
//! and the refusal that says how to allow one.

use super::{runs::run_sides, server::error, state::Shared};
use crate::{
    cli::{parse_iface, parse_netns, AllowedIface},
    request,
};
use axum::{http::StatusCode, response::Response};
use std::os::unix::fs::MetadataExt;

/// `s` as a shell word (names may hold any character but '/' and
/// whitespace: `q;id>pw;#` is one).
pub(super) fn quoted(s: &str) -> String {
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

impl Shared {
    pub(super) fn ns_of(&self, netns: Option<&str>) -> Option<(u64, u64)> {
        match netns {
            None => self.own_ns,
            Some(n) => linerate_datapath::netns::path(n)
                .ok()
                .and_then(|p| ns_id(&p)),
        }
    }

    /// Whether two namespaces (None: the agent's own) are one.
    pub(super) fn same_ns(&self, a: Option<&str>, b: Option<&str>) -> bool {
        a == b || matches!((self.ns_of(a), self.ns_of(b)), (Some(x), Some(y)) if x == y)
    }

    /// None when `iface` in `netns` (None: the agent's own) is one this
    /// agent serves; else why not and the flag that allows it (the 403's
    /// text).
    pub(super) fn refusal(&self, iface: &str, netns: Option<&str>) -> Option<String> {
        if self
            .allow
            .iter()
            .any(|a| a.iface == iface && self.same_ns(a.netns.as_deref(), netns))
        {
            return None;
        }
        let asked = AllowedIface {
            iface: iface.to_string(),
            netns: netns.map(str::to_string),
        };
        let served: Vec<String> = self.allow.iter().map(ToString::to_string).collect();
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
    pub(super) fn run_refusal(&self, req: &request::RunRequest) -> Option<String> {
        let run = req.run();
        if run.force && !self.allow_force {
            return Some(
                "--force (replace an XDP program someone else attached) is refused by this agent: start it with --allow-force to allow it"
                    .into(),
            );
        }
        run_sides(req)
            .iter()
            .find_map(|(iface, ns)| self.refusal(iface, ns.as_deref()))
    }
}

/// What the agent allows when no --allow-iface is given: the lab's two
/// interfaces in the lab's namespaces.
pub(super) fn default_allowed(lab: &str) -> Vec<AllowedIface> {
    ["a", "b"]
        .iter()
        .map(|side| AllowedIface {
            iface: format!("{lab}-{side}0"),
            netns: Some(format!("{lab}-{side}")),
        })
        .collect()
}

/// Checks the names a request gives (400 with the command line's own
/// message) and that the agent serves the interface (403): the refusal, if
/// any.
pub(super) fn refuse_where(
    s: &Shared,
    iface: &str,
    netns: Option<&str>,
    what: &str,
) -> Option<Response> {
    if let Err(e) = parse_iface(iface) {
        return Some(error(StatusCode::BAD_REQUEST, format!("{what}: {e}")));
    }
    if let Some(Err(e)) = netns.map(parse_netns) {
        return Some(error(StatusCode::BAD_REQUEST, format!("?netns=: {e}")));
    }
    s.refusal(iface, netns)
        .map(|why| error(StatusCode::FORBIDDEN, why))
}
