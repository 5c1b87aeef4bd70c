//! The in-kernel frame generator (ebpf::Generator) on the lab: frames sent
//! by BPF_PROG_RUN in live-frames mode reach the peer interface, each
//! stamped with its flow's sequence, and the generator's own counts agree
//! with the interfaces' counters.

mod common;

use std::{net::Ipv4Addr, thread};

use common::*;
use linerate_datapath::{
    frame::{Endpoint, FrameSpec},
    header::Kind,
    netns,
};
use linerate_ebpf::{GenRun, Generator, GeneratorConfig};

/// A counter summed over the queues from `ethtool -S` (veth's own).
fn ethtool_sum(ns: &str, iface: &str, suffix: &str) -> u64 {
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", ns, "ethtool", "-S", iface])
        .output()
        .expect("running ethtool");
    assert!(out.status.success(), "ethtool -S {iface} failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().split_once(": "))
        .filter(|(k, _)| k.starts_with("tx_queue_") && k.ends_with(suffix))
        .map(|(_, v)| v.trim().parse::<u64>().unwrap())
        .sum()
}

fn ifindex(netns_name: &str, iface: &str) -> u32 {
    ip_link(netns_name, iface)["ifindex"].as_u64().unwrap() as u32
}

/// Runs the generator in `ns` for `repeat` frames of `size` bytes of flow
/// `flow`; returns its counters.
fn generate(ns: &str, iface: &str, size: usize, repeat: u32) -> linerate_ebpf::GenFlowCounters {
    let idx = ifindex(ns, iface);
    let ns = ns.to_string();
    thread::spawn(move || {
        netns::enter(&ns).unwrap();
        let spec = FrameSpec {
            src: Endpoint {
                mac: [2, 0, 0xc6, 0x12, 0, 1],
                ip: Ipv4Addr::new(198, 18, 0, 1),
                port: 7472,
            },
            dst: Endpoint {
                mac: [2, 0, 0xc6, 0x12, 0, 2],
                ip: Ipv4Addr::new(198, 18, 0, 2),
                port: 7471,
            },
            frame_size: size,
            flow: 3,
            kind: Kind::Stream,
        };
        let frame = spec.template().unwrap();
        let mut gen = Generator::load(GeneratorConfig {
            ifindex: idx,
            message: None,
        })
        .unwrap();
        let mut left = repeat;
        while left > 0 {
            let before = gen.flow(3).unwrap().seq;
            let r = gen.run(&frame, idx, left).unwrap();
            let done = (gen.flow(3).unwrap().seq - before) as u32;
            left -= done.min(left);
            assert!(r == GenRun::Done || done > 0 || left > 0);
        }
        gen.flow(3).unwrap()
    })
    .join()
    .unwrap()
}

#[test]
fn generated_frames_reach_the_peer_and_are_counted() {
    if !root_or_skip("generator") {
        return;
    }
    let _g = serial();
    let lab = Lab::up("gen1", 1500);
    let (ns_a, if_a) = (lab.ns_a(), lab.if_a());
    let (rx0, _) = packets(&lab.ns_b(), &lab.if_b());
    let err0 = ethtool_sum(&ns_a, &if_a, "_xdp_xmit_errors");
    let c = generate(&ns_a, &if_a, 64, 20_000);
    let (rx1, _) = packets(&lab.ns_b(), &lab.if_b());
    let errors = ethtool_sum(&ns_a, &if_a, "_xdp_xmit_errors") - err0;
    assert_eq!(c.seq, 20_000, "every repetition stamps one frame");
    assert_eq!(c.redirected + c.redirect_failed, c.seq);
    // No backpressure: what the peer's ring could not take is dropped at
    // the sender and counted by veth (xdp_xmit_errors); everything else
    // arrived. Exact accounting, whatever the split.
    let got = rx1 - rx0;
    eprintln!(
        "generated {}, peer received {got}, dropped at the sender {errors}",
        c.redirected
    );
    assert_eq!(
        got + errors,
        c.redirected,
        "received + dropped = redirected"
    );
}
