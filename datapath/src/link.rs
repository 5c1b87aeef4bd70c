//! A link's state read in this process by rtnetlink (RTM_GETLINK, through
//! neli), in the link's network namespace: what a run's watch looks at every
//! 250 ms. Spawning `ip link` for it took a core from the run's workers for
//! 1-1.5 ms each time (16 times a second with two ends): a paced stream's
//! one-way p99 was 621-775 us with it and 28-116 us without it (spinning
//! receiver, docs/benchmarks.md).

use neli::{
    consts::{
        nl::NlmF,
        rtnl::{Iff, Ifla, RtAddrFamily, Rtm},
        socket::NlFamily,
    },
    nl::NlPayload,
    router::synchronous::NlRouter,
    rtnl::{Ifinfomsg, IfinfomsgBuilder},
    utils::Groups,
};

/// A link as the watch needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkState {
    /// Its index now.
    pub ifindex: u32,
    /// Administratively up (IFF_UP).
    pub up: bool,
    /// Its MTU.
    pub mtu: u32,
    /// Its counters (IFLA_STATS64, what `ip -s link` shows), where the
    /// kernel gave them.
    pub stats: Option<LinkStats>,
}

/// A link's own counters (struct rtnl_link_stats64's first eight).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkStats {
    /// Packets received.
    pub rx_packets: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Receive drops.
    pub rx_dropped: u64,
    /// Send drops.
    pub tx_dropped: u64,
}

impl LinkStats {
    /// From IFLA_STATS64's payload (native-endian u64s: rx_packets,
    /// tx_packets, rx_bytes, tx_bytes, rx_errors, tx_errors, rx_dropped,
    /// tx_dropped, ...); None when it is too short.
    pub fn from_stats64(b: &[u8]) -> Option<Self> {
        let at = |i: usize| -> Option<u64> {
            Some(u64::from_ne_bytes(
                b.get(i * 8..i * 8 + 8)?.try_into().ok()?,
            ))
        };
        Some(Self {
            rx_packets: at(0)?,
            tx_packets: at(1)?,
            rx_bytes: at(2)?,
            tx_bytes: at(3)?,
            rx_dropped: at(6)?,
            tx_dropped: at(7)?,
        })
    }
}

/// Why a link's state could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The namespace could not be entered.
    #[error("namespace {netns}: {detail}")]
    Netns {
        /// The namespace.
        netns: String,
        /// Why.
        detail: String,
    },
    /// The netlink request failed.
    #[error("rtnetlink: {0}")]
    Netlink(String),
}

/// The state of link `name` in namespace `netns` (None: this process's),
/// or None when no link has that name there. Read in a thread of its own
/// (entering a namespace is per thread): no process is spawned.
pub fn state(netns: Option<&str>, name: &str) -> Result<Option<LinkState>, LinkError> {
    let name = name.to_string();
    crate::netns::in_thread(netns, move || {
        // The name's index in this namespace (an ioctl on a socket opened
        // here); no such name: no link.
        match nix::net::if_::if_nametoindex(name.as_str()) {
            Ok(ifindex) => by_index(ifindex),
            Err(_) => Ok(None),
        }
    })
    .map_err(|e| LinkError::Netns {
        netns: netns.unwrap_or("this one").to_string(),
        detail: e.to_string(),
    })?
}

/// RTM_GETLINK of `ifindex` in the calling thread's namespace.
fn by_index(ifindex: u32) -> Result<Option<LinkState>, LinkError> {
    let nl = |e: &dyn std::fmt::Display| LinkError::Netlink(e.to_string());
    let (rtnl, _) =
        NlRouter::connect(NlFamily::Route, None, Groups::empty()).map_err(|e| nl(&e))?;
    let msg = IfinfomsgBuilder::default()
        .ifi_family(RtAddrFamily::Unspecified)
        .ifi_index(ifindex as libc::c_int)
        .build()
        .map_err(|e| nl(&e))?;
    let replies = rtnl
        .send::<_, _, Rtm, Ifinfomsg>(Rtm::Getlink, NlmF::empty(), NlPayload::Payload(msg))
        .map_err(|e| nl(&e))?;
    for reply in replies {
        // The link went away between the name and the request.
        let Ok(reply) = reply else {
            return Ok(None);
        };
        let Some(p) = reply.get_payload() else {
            continue;
        };
        let attrs = p.rtattrs().get_attr_handle();
        let mtu = attrs
            .get_attr_payload_as::<u32>(Ifla::Mtu)
            .map_err(|e| nl(&e))?;
        let stats = attrs
            .get_attribute(Ifla::Stats64)
            .and_then(|a| LinkStats::from_stats64(a.rta_payload().as_ref()));
        return Ok(Some(LinkState {
            ifindex: *p.ifi_index() as u32,
            up: p.ifi_flags().contains(Iff::UP),
            mtu,
            stats,
        }));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_up_with_its_index_and_mtu() {
        let lo = state(None, "lo").unwrap().expect("lo exists");
        assert_eq!(
            lo.ifindex,
            nix::net::if_::if_nametoindex("lo").unwrap(),
            "{lo:?}"
        );
        assert!(lo.up, "{lo:?}");
        let mtu: u32 = std::fs::read_to_string("/sys/class/net/lo/mtu")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(lo.mtu, mtu);
        // The counters as sysfs has them, read around the request (lo
        // may carry a packet of someone else's between the reads).
        let sysfs = |f: &str| -> u64 {
            std::fs::read_to_string(format!("/sys/class/net/lo/statistics/{f}"))
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        };
        let before = sysfs("rx_packets");
        let s = state(None, "lo")
            .unwrap()
            .unwrap()
            .stats
            .expect("IFLA_STATS64");
        let after = sysfs("rx_packets");
        assert!(before <= s.rx_packets && s.rx_packets <= after, "{s:?}");
    }

    #[test]
    fn stats64_is_read_field_by_field() {
        let words: Vec<u64> = (1..=24).collect();
        let b: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let s = LinkStats::from_stats64(&b).unwrap();
        assert_eq!(
            (
                s.rx_packets,
                s.tx_packets,
                s.rx_bytes,
                s.tx_bytes,
                s.rx_dropped,
                s.tx_dropped
            ),
            (1, 2, 3, 4, 7, 8)
        );
        assert_eq!(LinkStats::from_stats64(&b[..63]), None);
    }

    #[test]
    fn a_name_no_link_has_is_none() {
        assert_eq!(state(None, "lr-none0").unwrap(), None);
    }

    #[test]
    fn a_namespace_that_is_not_there_is_an_error_naming_it() {
        let e = state(Some("lr-no-such-ns"), "lo").unwrap_err();
        assert!(e.to_string().contains("lr-no-such-ns"), "{e}");
    }
}
