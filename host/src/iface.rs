//! What the system knows about an interface: MTU, MAC, address, queues,
//! attached XDP program and its own packet counters (`ip -s link`).

use std::net::Ipv4Addr;

use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use serde_json::Value;

use crate::sh;
pub use linerate_results::system::IfCounters;

/// An interface as `ip -d -s link` describes it.
#[derive(Debug, Clone, Serialize)]
pub struct IfaceInfo {
    /// Name.
    pub name: String,
    /// Index in its namespace.
    pub ifindex: u32,
    /// MTU.
    pub mtu: u32,
    /// Largest MTU the driver allows.
    pub max_mtu: Option<u32>,
    /// MAC address.
    pub mac: [u8; 6],
    /// Receive queues.
    pub rx_queues: u32,
    /// Transmit queues.
    pub tx_queues: u32,
    /// Driver kind (veth, ...), when the link reports one.
    pub kind: Option<String>,
    /// Id of the attached XDP program.
    pub xdp_prog_id: Option<u32>,
    /// Counters.
    pub counters: IfCounters,
    /// Whether the link is administratively up.
    pub up: bool,
}

/// Whether `name` exists in `netns`.
/// A name that is not an interface name (or a namespace that is not a
/// name) exists nowhere.
pub fn exists(netns: Option<&str>, name: &str) -> bool {
    if linerate_datapath::names::check_iface(name).is_err()
        || netns.is_some_and(|n| linerate_datapath::names::check_netns(n).is_err())
    {
        return false;
    }
    let mut args = vec![];
    if let Some(ns) = netns {
        args.extend(["-n", ns]);
    }
    args.extend(["link", "show", "dev", name]);
    sh::output("ip", &args).is_ok_and(|o| o.status.success())
}

/// Reads an interface's description.
pub fn info(netns: Option<&str>, name: &str) -> Result<IfaceInfo> {
    linerate_datapath::names::check_iface(name)?;
    if let Some(n) = netns {
        linerate_datapath::names::check_netns(n)?;
    }
    if !exists(netns, name) {
        bail!(
            "interface {name:?} not found{}; check `ip link`{}",
            netns
                .map(|n| format!(" in namespace {n:?}"))
                .unwrap_or_default(),
            if netns.is_none() {
                " or give its namespace with --tx-netns/--rx-netns"
            } else {
                ""
            }
        );
    }
    let out = sh::ip(netns, &["-j", "-d", "-s", "link", "show", "dev", name])?;
    parse_link(&out).with_context(|| format!("reading `ip -j link` for {name}"))
}

/// The first IPv4 address of an interface.
pub fn ipv4(netns: Option<&str>, name: &str) -> Result<Ipv4Addr> {
    let out = sh::ip(netns, &["-j", "-4", "addr", "show", "dev", name])?;
    let v: Value = serde_json::from_str(&out)?;
    v.pointer("/0/addr_info/0/local")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            anyhow!("interface {name:?} has no IPv4 address; add one with `ip addr add`")
        })
}

/// The first global IPv6 address of an interface (test traffic with
/// `--ipv6`).
pub fn ipv6(netns: Option<&str>, name: &str) -> Result<std::net::Ipv6Addr> {
    let out = sh::ip(
        netns,
        &["-j", "-6", "addr", "show", "dev", name, "scope", "global"],
    )?;
    let v: Value = serde_json::from_str(&out)?;
    v.pointer("/0/addr_info/0/local")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            let mut cmd = vec!["ip", "-6"];
            if let Some(ns) = netns {
                cmd.extend(["-n", ns]);
            }
            cmd.extend(["addr", "add", "ADDR/64", "dev", name, "nodad"]);
            anyhow!(
                "interface {name:?} has no global IPv6 address for --ipv6; add one with `{}` (the lab's are 2001:2::1 and 2001:2::2)",
                sh::shown(&cmd)
            )
        })
}

fn parse_link(json: &str) -> Result<IfaceInfo> {
    let v: Value = serde_json::from_str(json)?;
    let l = v.get(0).ok_or_else(|| anyhow!("empty answer"))?;
    let u = |p: &str| l.pointer(p).and_then(Value::as_u64);
    let mac_s = l.get("address").and_then(Value::as_str).unwrap_or("");
    let xdp_prog_id = u("/xdp/prog/id")
        .or_else(|| u("/xdp/attached/0/prog/id"))
        .map(|x| x as u32);
    Ok(IfaceInfo {
        name: l
            .get("ifname")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        ifindex: u("/ifindex").unwrap_or(0) as u32,
        mtu: u("/mtu").ok_or_else(|| anyhow!("no mtu"))? as u32,
        max_mtu: u("/max_mtu").map(|m| m as u32),
        mac: parse_mac(mac_s).ok_or_else(|| anyhow!("bad MAC {mac_s:?}"))?,
        rx_queues: u("/num_rx_queues").unwrap_or(1) as u32,
        tx_queues: u("/num_tx_queues").unwrap_or(1) as u32,
        kind: l
            .pointer("/linkinfo/info_kind")
            .and_then(Value::as_str)
            .map(str::to_string),
        xdp_prog_id,
        counters: IfCounters {
            rx_packets: u("/stats64/rx/packets").unwrap_or(0),
            rx_bytes: u("/stats64/rx/bytes").unwrap_or(0),
            rx_dropped: u("/stats64/rx/dropped").unwrap_or(0),
            tx_packets: u("/stats64/tx/packets").unwrap_or(0),
            tx_bytes: u("/stats64/tx/bytes").unwrap_or(0),
            tx_dropped: u("/stats64/tx/dropped").unwrap_or(0),
        },
        up: l
            .get("flags")
            .and_then(Value::as_array)
            .is_some_and(|f| f.iter().any(|x| x == "UP")),
    })
}

/// Parses "aa:bb:cc:dd:ee:ff".
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = s.split(':');
    for b in mac.iter_mut() {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ip_json() {
        let j = r#"[{"ifindex":3,"ifname":"lr-b0","flags":["BROADCAST","UP"],"mtu":9000,"max_mtu":65535,
            "address":"02:00:c6:12:00:02","linkinfo":{"info_kind":"veth"},"num_tx_queues":2,"num_rx_queues":2,
            "xdp":{"mode":1,"prog":{"id":42}},
            "stats64":{"rx":{"bytes":10,"packets":1,"dropped":0},"tx":{"bytes":20,"packets":2,"dropped":3}}}]"#;
        let i = parse_link(j).unwrap();
        assert_eq!(i.mtu, 9000);
        assert_eq!(i.mac, [2, 0, 0xc6, 0x12, 0, 2]);
        assert_eq!(i.xdp_prog_id, Some(42));
        assert_eq!(i.rx_queues, 2);
        assert!(i.up);
        assert_eq!(i.counters.tx_dropped, 3);
    }

    #[test]
    fn mac_parsing() {
        assert_eq!(parse_mac("02:00:00:00:00:0a"), Some([2, 0, 0, 0, 0, 10]));
        assert_eq!(parse_mac("02:00:00:00:00"), None);
        assert_eq!(parse_mac("02:00:00:00:00:00:01"), None);
        assert_eq!(parse_mac("zz:00:00:00:00:00"), None);
    }
}
