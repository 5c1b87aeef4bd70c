//! The kernel busy-poll wait modes (`busy-poll`, `prefer-busy-poll`,
//! `irq-suspend`): each moves a udp stream and rr with exact accounting;
//! the NAPI settings a run sets are put back when it ends (normally and
//! on Ctrl-C); AF_XDP sockets in copy mode refuse them with the reason.

mod common;

use std::time::{Duration, Instant};

use common::*;
use linerate_datapath::netdev::{self, Napi, NapiConfig};

const MODES: [&str; 3] = ["busy-poll", "prefer-busy-poll", "irq-suspend"];

/// The NAPIs of `iface` in `ns` (napi-get).
fn napis(ns: &str, iface: &str) -> Vec<Napi> {
    let iface = iface.to_string();
    netdev::in_netns(Some(ns), move |nd| nd.napis(netdev::ifindex(&iface)?)).unwrap()
}

/// Sets every NAPI of `iface` in `ns` to `config`.
fn set_all(ns: &str, iface: &str, config: NapiConfig) {
    let ids: Vec<u32> = napis(ns, iface).iter().map(|n| n.id).collect();
    netdev::in_netns(Some(ns), move |nd| {
        ids.iter().try_for_each(|id| nd.set(*id, &config))
    })
    .unwrap();
}

fn configs(ns: &str, iface: &str) -> Vec<NapiConfig> {
    napis(ns, iface).iter().map(|n| n.config).collect()
}

/// A baseline no mode uses, so that "put back" is seen.
const BASELINE: NapiConfig = NapiConfig {
    defer_hard_irqs: 3,
    gro_flush_timeout_ns: 7_000,
    irq_suspend_timeout_ns: Some(0),
};

#[test]
#[ignore = "needs root: kernel busy-poll modes and NAPI settings of the veth lab"]
fn every_mode_moves_a_udp_stream_and_rr_with_exact_accounting() {
    require_root("wait modes");
    let _turn = serial();
    let lab = Lab::up("wmacc", 1500);
    for mode in MODES {
        let (rx0, _) = packets(&lab.ns_b(), &lab.if_b());
        let r = counted_stream(&lab.name, 5000, &["--backend", "udp", "--rx-wait", mode]);
        let f = &r["frames"];
        assert_eq!(f["sent"], 5000, "{mode}: {f}");
        assert_eq!(f["received"], 5000, "{mode}: {f}");
        assert_eq!(f["lost"], 0, "{mode}: {f}");
        let (rx1, _) = packets(&lab.ns_b(), &lab.if_b());
        assert_eq!(rx1 - rx0, 5000, "{mode}: the interface counted each frame");
        assert_eq!(r["interfaces"]["rx"]["rx_packets"], 5000, "{mode}");
        let w = &r["setup"]["wait"];
        assert_eq!(w["rx"], mode, "{w}");
        // IRQ suspension polls once per epoll_wait (usecs 0).
        let usecs = if mode == "irq-suspend" { 0 } else { 50 };
        assert_eq!(w["busy_poll_usecs"], usecs, "{w}");
        assert_eq!(w["napi"][0]["iface"], lab.if_b(), "{w}");
        assert!(w["napi"][0]["ids"][0].as_u64().unwrap() > 0, "{w}");
        assert_eq!(
            w["irq_suspend_timeout_ns"].is_u64(),
            mode == "irq-suspend",
            "{w}"
        );
        assert_eq!(w["defer_hard_irqs"].is_u64(), mode != "busy-poll", "{w}");

        let rr = run_json(&[
            "rr",
            "--lab",
            &lab.name,
            "--backend",
            "udp",
            "--count",
            "2000",
            "--tx-wait",
            mode,
            "--rx-wait",
            mode,
            "--timeout",
            "2s",
            "--warmup",
            "0s",
            "--duration",
            "60s",
            "--json",
        ]);
        rr_accounted(&rr["transactions"], 2000);
        assert_eq!(rr["latency"]["count"], 2000, "{mode}");
        assert_eq!(rr["setup"]["wait"]["tx"], mode);
        assert_eq!(rr["setup"]["wait"]["rx"], mode);
        // Both ends' NAPIs: the client's (responses) and the responder's.
        assert_eq!(rr["setup"]["wait"]["napi"].as_array().unwrap().len(), 2);
    }
}

#[test]
#[ignore = "needs root: kernel busy-poll modes and NAPI settings of the veth lab"]
fn napi_settings_are_put_back_after_a_run_and_after_ctrl_c() {
    require_root("NAPI settings put back");
    let _turn = serial();
    let lab = Lab::up("wmnapi", 1500);
    let (ns, iface) = (lab.ns_b(), lab.if_b());
    set_all(&ns, &iface, BASELINE);
    let before = configs(&ns, &iface);
    assert!(!before.is_empty(), "the lab's veth has a NAPI");
    assert!(before.iter().all(|c| *c == BASELINE));

    // A run to its end.
    let r = counted_stream(
        &lab.name,
        2000,
        &["--backend", "udp", "--rx-wait", "irq-suspend"],
    );
    assert_eq!(r["frames"]["received"], 2000);
    assert_eq!(configs(&ns, &iface), before, "put back after the run");

    // A run cut short by Ctrl-C: its settings hold while it runs.
    let child = spawn(&[
        "stream",
        "--lab",
        &lab.name,
        "--backend",
        "udp",
        "--rx-wait",
        "prefer-busy-poll",
        "--rate",
        "1000",
        "--warmup",
        "0s",
        "--duration",
        "30s",
        "--json",
    ]);
    let (rx0, _) = packets(&ns, &iface);
    let end = Instant::now() + Duration::from_secs(60);
    while packets(&ns, &iface).0 < rx0 + 500 {
        assert!(
            Instant::now() < end,
            "no frames reached the receiver in 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let during = configs(&ns, &iface);
    assert!(
        during
            .iter()
            .all(|c| c.defer_hard_irqs == 100 && c.gro_flush_timeout_ns == 20_000),
        "set for the run: {during:?}"
    );
    let out = interrupt(child);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert_eq!(configs(&ns, &iface), before, "put back after Ctrl-C: {err}");
}

#[test]
#[ignore = "needs root: kernel busy-poll modes and NAPI settings of the veth lab"]
fn af_xdp_in_copy_mode_refuses_the_busy_poll_modes_with_the_reason() {
    require_root("copy-mode refusal");
    let _turn = serial();
    let lab = Lab::up("wmxsk", 1500);
    for (cmd, opt) in [("stream", "--rx-wait"), ("rr", "--tx-wait")] {
        for mode in MODES {
            let out = run(&[
                cmd,
                "--lab",
                &lab.name,
                "--backend",
                "xdp",
                opt,
                mode,
                "--duration",
                "1s",
                "--warmup",
                "0s",
            ]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{cmd} {opt} {mode} ran: {err}");
            let named = format!("{opt} {mode}");
            for needle in [
                named.as_str(),
                "copy mode",
                "reports no NAPI after bind",
                "veth, which refuses zero-copy and links no NAPI to its queues",
                "--backend udp",
            ] {
                assert!(err.contains(needle), "{needle:?} in {err}");
            }
        }
    }
    // And tcp has no kernel busy polling here.
    let out = run(&[
        "stream",
        "--lab",
        &lab.name,
        "--backend",
        "tcp",
        "--rx-wait",
        "busy-poll",
        "--duration",
        "1s",
        "--warmup",
        "0s",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--backend udp"));
}
