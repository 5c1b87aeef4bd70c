//! The in-kernel generator in a two-host run: the lab's two namespaces
//! each run `linerate agent` on their management address, the controller
//! in this namespace runs `stream --tx-engine generator` across them, and
//! the merged result accounts every frame (and every message) exactly,
//! names the engine that sent, and reports what the sender's link dropped.

#[path = "support/agents.rs"]
mod agents;
mod common;

use std::process::Command;

use agents::{Agent, MgmtLab};
use common::*;
use serde_json::Value;

const LAB: &str = "g2th";
const TOKEN: &str = "g2th-test-token-0123456789abcdef";
const A: &str = "198.19.255.2:7481";
const B: &str = "198.19.255.6:7481";

/// A counted, gently paced stream from the generator on host A to the
/// AF_XDP receiver on host B, with `extra` options: the merged result.
fn two_host_generator(a: &Agent, b: &Agent, count: u64, extra: &[&str]) -> Value {
    let out = Command::new(linerate())
        .args(["stream", "--tx-engine", "generator", "--count"])
        .arg(count.to_string())
        .args(["--rate", "50000", "--napi", "softirq", "--warmup", "0s"])
        .args(["--duration", "30s", "--json"])
        .args(extra)
        .args(["--tx-agent", &a.url, "--rx-agent", &b.url])
        .args(["--tx-iface", &format!("{LAB}-a0")])
        .args(["--rx-iface", &format!("{LAB}-b0")])
        .env("LINERATE_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "two-host stream with the generator failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out)
}

#[test]
#[ignore = "needs root: agents in the lab's namespaces, the in-kernel generator"]
fn two_hosts_with_the_generator_account_every_frame() {
    require_root("two hosts with the generator");
    let _turn = serial();
    let lab = MgmtLab::up(LAB, TOKEN);
    let a = Agent::start(&format!("{LAB}-a"), A, LAB, &lab.token, TOKEN);
    let b = Agent::start(&format!("{LAB}-b"), B, LAB, &lab.token, TOKEN);
    let (ns_a, if_a) = (format!("{LAB}-a"), format!("{LAB}-a0"));
    let (ns_b, if_b) = (format!("{LAB}-b"), format!("{LAB}-b0"));

    // Frames: every one the generator stamped left and arrived, as the
    // receiving interface itself counts.
    let (rx0, _) = packets(&ns_b, &if_b);
    let (_, tx0) = packets(&ns_a, &if_a);
    let r = two_host_generator(&a, &b, 20_000, &["--size", "1518"]);
    let (rx1, _) = packets(&ns_b, &if_b);
    let (_, tx1) = packets(&ns_a, &if_a);
    let f = &r["frames"];
    assert_eq!(f["sent"], 20_000, "{f}");
    assert_eq!(f["received"], 20_000, "{f}");
    assert_eq!(f["lost"], 0, "{f}");
    // Reported apart, and at a gentle rate the peer's ring never filled.
    assert_eq!(f["dropped_at_sender"], 0, "{f}");
    assert_eq!(rx1 - rx0, 20_000, "the receiving interface's own count");
    assert_eq!(tx1 - tx0, 20_000, "the sending interface's own count");
    let s = &r["setup"];
    assert_eq!(s["tx_engine"], "generator", "{s}");
    assert_eq!(s["tx_bind_mode"], "in-kernel generator", "{s}");
    assert_eq!(s["rx_engine"], "xdp", "{s}");
    assert!(
        r["agents"]["tx"]["url"] == a.url.as_str() && r["agents"]["rx"]["url"] == b.url.as_str(),
        "{}",
        r["agents"]
    );
    // The sender's workers are the generator's, on the tx host.
    let tx_frames: u64 = r["workers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["role"] == "tx")
        .map(|w| w["total"]["frames"].as_u64().unwrap())
        .sum();
    assert_eq!(tx_frames, 20_000, "{}", r["workers"]);

    // Messages: fragments stamped in the kernel on one host, reassembled
    // whole on the other.
    let m = two_host_generator(&a, &b, 500, &["--message", "9000"]);
    let mf = &m["frames"]["messages"];
    assert_eq!(mf["sent"], 500, "{mf}");
    assert_eq!(mf["received"], 500, "{mf}");
    assert_eq!(mf["lost"], 0, "{mf}");
    assert_eq!(m["frames"]["dropped_at_sender"], 0, "{}", m["frames"]);
    assert_eq!(m["setup"]["tx_engine"], "generator");

    drop((a, b));
    assert!(!has_xdp(&ns_a, &if_a), "XDP left on {if_a}");
    assert!(!has_xdp(&ns_b, &if_b), "XDP left on {if_b}");
}
