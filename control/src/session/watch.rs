//! Watching a run's path, and its interfaces' own counters.

use std::time::{Duration, Instant};

use crate::path::{PathEnd, PathPlan};
use linerate_host::iface::IfCounters;

/// Watches the path during a run: an interface that disappears, goes down
/// or changes its MTU, or a namespace that is removed or replaced (by
/// identity, not by name: `ip netns del` + `add` makes a new namespace of
/// the same name) ends the run (with the figures so far).
pub struct PathWatch {
    sides: Vec<PathEnd>,
    mtu: u32,
    last: std::cell::Cell<Instant>,
    fault: std::cell::RefCell<Option<String>>,
}

impl PathWatch {
    /// Watches both ends of `path`.
    pub fn new(path: &PathPlan) -> Self {
        Self {
            // A path in memory has no interface to watch.
            sides: if path.in_memory {
                Vec::new()
            } else {
                vec![path.tx.clone(), path.rx.clone()]
            },
            mtu: path.mtu,
            last: std::cell::Cell::new(Instant::now()),
            fault: std::cell::RefCell::new(None),
        }
    }

    fn problem(&self, end: &PathEnd) -> Option<String> {
        let iface = &end.iface;
        if let Some(ns) = &end.netns {
            match crate::path::netns_id(Some(ns)) {
                Err(_) => {
                    return Some(format!(
                        "namespace {ns} was removed during the run (lab down or `ip netns del`?)"
                    ))
                }
                Ok(id) if id != end.ns_id => {
                    return Some(format!(
                        "namespace {ns} was replaced by another of the same name during the run (lab up, or `ip netns del` and `add`?): {iface} is no longer in it"
                    ))
                }
                Ok(_) => {}
            }
        }
        // Read in this process (rtnetlink): an `ip link` spawned every
        // 250 ms took a core from the workers for a millisecond or more.
        // Should netlink fail, `ip` says it.
        let link =
            linerate_datapath::link::state(end.netns.as_deref(), iface).unwrap_or_else(|_| {
                linerate_host::iface::info(end.netns.as_deref(), iface)
                    .ok()
                    .map(|i| linerate_datapath::link::LinkState {
                        ifindex: i.ifindex,
                        up: i.up,
                        mtu: i.mtu,
                        stats: None,
                    })
            });
        match link {
            None => Some(format!("interface {iface} disappeared during the run")),
            Some(l) if l.ifindex != end.info.ifindex => Some(format!(
                "interface {iface} was replaced by another of the same name during the run"
            )),
            Some(l) if !l.up => Some(format!("interface {iface} went down during the run")),
            Some(l) if l.mtu < self.mtu => Some(format!(
                "the MTU of {iface} changed from {} to {} during the run",
                self.mtu, l.mtu
            )),
            Some(_) => None,
        }
    }

    /// Whether the run must end; looks at most every 250 ms.
    pub fn fault(&self) -> bool {
        if self.fault.borrow().is_some() {
            return true;
        }
        if self.last.get().elapsed() < Duration::from_millis(250) {
            return false;
        }
        self.last.set(Instant::now());
        for end in &self.sides {
            if let Some(problem) = self.problem(end) {
                *self.fault.borrow_mut() = Some(problem);
                return true;
            }
        }
        false
    }

    /// Looks now, whenever it last looked (at the end of a run: a worker
    /// that ended because its interface went away leaves the window early).
    pub fn check_now(&self) -> bool {
        if let Some(then) = Instant::now().checked_sub(Duration::from_secs(1)) {
            self.last.set(then);
        }
        self.fault()
    }

    /// What ended the run, if anything did.
    pub fn message(&self) -> Option<String> {
        self.fault.borrow().clone()
    }
}

/// A side's interface counters, or zeros when it is gone (the run's fault
/// says why).
/// Read in this process (rtnetlink's IFLA_STATS64, what `ip -s link`
/// shows): these are taken at the window's edges, where an `ip` spawned
/// would take a core from the workers; `ip` only should netlink fail.
pub fn counters_or_zero(side: &PathEnd) -> IfCounters {
    match linerate_datapath::link::state(side.netns.as_deref(), &side.iface) {
        Ok(None) => IfCounters::default(),
        Ok(Some(linerate_datapath::link::LinkState { stats: Some(s), .. })) => IfCounters {
            rx_packets: s.rx_packets,
            rx_bytes: s.rx_bytes,
            rx_dropped: s.rx_dropped,
            tx_packets: s.tx_packets,
            tx_bytes: s.tx_bytes,
            tx_dropped: s.tx_dropped,
        },
        _ => linerate_host::iface::info(side.netns.as_deref(), &side.iface)
            .map(|info| info.counters)
            .unwrap_or_default(),
    }
}
