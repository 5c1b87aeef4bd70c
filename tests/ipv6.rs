//! IPv6 test traffic (`--ipv6`, RFC 5180): the lab's ends have addresses
//! from 2001:2::/48 beside their IPv4 ones, and a counted IPv6 stream
//! arrives whole, steered by the same program, counted exactly by
//! linerate and by the interfaces (which see nothing else: no neighbour
//! discovery, no MLD).

mod common;

use std::process::Command;

use common::*;
use serde_json::Value;

/// The global IPv6 addresses of an interface, from `ip -6 -j addr`.
fn ipv6_addresses(netns: &str, iface: &str) -> Vec<String> {
    let out = Command::new("ip")
        .args([
            "-n", netns, "-j", "-6", "addr", "show", "dev", iface, "scope", "global",
        ])
        .output()
        .expect("running ip");
    assert!(out.status.success(), "ip -6 addr show {iface} failed");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v[0]["addr_info"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|x| format!("{}/{}", x["local"].as_str().unwrap(), x["prefixlen"]))
                .collect()
        })
        .unwrap_or_default()
}

/// (tx packets, tx bytes, rx packets, rx bytes) from `ip -s link`.
fn counters(netns: &str, iface: &str) -> [u64; 4] {
    let s = &ip_link(netns, iface)["stats64"];
    let n = |d: &str, k: &str| s[d][k].as_u64().unwrap();
    [
        n("tx", "packets"),
        n("tx", "bytes"),
        n("rx", "packets"),
        n("rx", "bytes"),
    ]
}

/// A counted IPv6 stream of `size` frames: every one arrives, and linerate
/// and both interfaces count `count` frames of `bytes` bytes in all
/// (without FCS).
fn ipv6_stream_is_exact(lab: &Lab, size: &str, count: u64, bytes: u64) -> Value {
    let a0 = counters(&lab.ns_a(), &lab.if_a());
    let b0 = counters(&lab.ns_b(), &lab.if_b());
    let r = counted_stream(&lab.name, count, &["--ipv6", "--size", size]);
    assert_eq!(r["params"]["ipv6"], true, "{r:#}");
    assert_whole(&r, count, bytes);
    // Steered by the same program as IPv4 frames.
    assert_eq!(r["xdp"]["redirected"], count, "{r:#}");
    assert_eq!(r["xdp"]["malformed"], 0, "{r:#}");
    let a1 = counters(&lab.ns_a(), &lab.if_a());
    let b1 = counters(&lab.ns_b(), &lab.if_b());
    // veth counts a frame's bytes after its 14-byte Ethernet header.
    let on_veth = bytes - 14 * count;
    assert_eq!(a1[0] - a0[0], count, "{} tx packets", lab.if_a());
    assert_eq!(a1[1] - a0[1], on_veth, "{} tx bytes", lab.if_a());
    assert_eq!(b1[2] - b0[2], count, "{} rx packets", lab.if_b());
    assert_eq!(b1[3] - b0[3], on_veth, "{} rx bytes", lab.if_b());
    // Nothing went the other way (no neighbour discovery, no MLD).
    assert_eq!(a1[2] - a0[2], 0, "{} rx packets", lab.if_a());
    assert_eq!(b1[0] - b0[0], 0, "{} tx packets", lab.if_b());
    r
}

#[test]
#[ignore = "needs root: IPv6 streams on the veth lab, counted against ip -s link"]
fn ipv6_streams_are_counted_exactly() {
    require_root("ipv6 stream");
    let _turn = serial();
    let lab = Lab::up("mxv6", 9000);
    assert_eq!(ipv6_addresses(&lab.ns_a(), &lab.if_a()), ["2001:2::1/64"]);
    assert_eq!(ipv6_addresses(&lab.ns_b(), &lab.if_b()), ["2001:2::2/64"]);

    // The smallest IPv6 frame: 14 + 40 + 8 + 18 + FCS = 84 bytes.
    let r = ipv6_stream_is_exact(&lab, "84", 5000, 5000 * 80);
    assert_eq!(r["setup"]["payload_per_frame"], 18, "{r:#}");
    assert_eq!(r["params"]["frame_size"], 84);
    // A mix with jumbo frames (three UMEM chunks each): 128:3,9018:1
    // cycles 128, 128, 9018, 128.
    let r = ipv6_stream_is_exact(&lab, "128:3,9018:1", 1000, 250 * (3 * 124 + 9014));
    assert_eq!(r["setup"]["descs_per_frame"], 3, "{r:#}");
    assert_eq!(r["setup"]["payload_per_frame"], 9018 - 4 - 62, "{r:#}");
    drop(lab);

    // Messages over IPv6 at MTU 1500: 3000 bytes in 3 fragments of at
    // most 1500 - 40 - 8 - 34 = 1418 bytes, each frame's checksum summed.
    let lab = Lab::up("mxv6m", 1500);
    let r = counted_stream(&lab.name, 500, &["--ipv6", "--message", "3000"]);
    let m = &r["frames"]["messages"];
    assert_eq!(m["frames_per_message"], 3, "{r:#}");
    assert_eq!(m["sent"], 500, "{r:#}");
    assert_eq!(m["received"], 500, "{r:#}");
    assert_eq!(m["lost"], 0, "{r:#}");
    assert_eq!(r["frames"]["received"], 1500, "{r:#}");
    // Bytes: two full fragments (62 + 34 + 1418) and the last (62 + 34 + 164).
    assert_whole(&r, 1500, 500 * (2 * 1514 + 260));
}

#[test]
#[ignore = "needs root: IPv6 streams on the veth lab, counted against ip -s link"]
fn ipv6_rr_is_answered_by_both_responders() {
    require_root("ipv6 rr");
    let _turn = serial();
    let lab = Lab::up("mxv6rr", 1500);
    // One-frame messages (the XDP responder answers those), and messages
    // of several frames for the AF_XDP responder.
    for (responder, request, response) in [
        ("xdp", "100", "100"),
        ("af-xdp", "100", "100"),
        ("af-xdp", "3000", "5000"),
    ] {
        let r = run_json(&[
            "rr",
            "--lab",
            &lab.name,
            "--ipv6",
            "--count",
            "2000",
            "--responder",
            responder,
            "--request",
            request,
            "--response",
            response,
            "--warmup",
            "0s",
            "--duration",
            "60s",
            "--json",
        ]);
        let t = &r["transactions"];
        eprintln!("{responder} {request}/{response}: {t}");
        rr_accounted(t, 2000);
        let xdp = &r["xdp"]["responder"];
        assert_eq!(xdp["malformed"], 0, "{r:#}");
        if responder == "xdp" {
            // Every request answered in XDP, none handed to user space.
            assert_eq!(xdp["responded"], t["answered"], "{r:#}");
            assert_eq!(xdp["redirected"], 0, "{r:#}");
        } else {
            assert_eq!(xdp["responded"], 0, "{r:#}");
        }
    }
}

#[test]
#[ignore = "needs root: IPv6 streams on the veth lab, counted against ip -s link"]
fn ipv6_refusals_name_the_fix() {
    require_root("ipv6 refusals");
    let _turn = serial();
    let lab = Lab::up("mxv6r", 1500);
    for (args, want) in [
        (
            vec!["stream", "--size", "64"],
            "between 84 and 1518 bytes (MTU 1500 + 18); IPv6 frames hold a header 20 bytes longer (RFC 5180)",
        ),
        (
            vec!["stream", "--backend", "udp"],
            "--ipv6: the udp engine carries IPv4 test traffic only; use --backend xdp",
        ),
        (
            vec!["stream", "--tx-engine", "generator"],
            "--ipv6: the generator engine sends IPv4 test traffic only",
        ),
        (
            vec!["stream", "--mtu", "9000", "--message", "20000"],
            "--ipv6 --message: message frames over IPv6 fit one UMEM chunk for now",
        ),
        (
            vec!["rr", "--mtu", "9000", "--request", "8000"],
            "--ipv6: rr frames over IPv6 fit one UMEM chunk for now",
        ),
    ] {
        let mut argv = args.clone();
        argv.extend(["--lab", &lab.name, "--ipv6", "--count", "10", "--warmup", "0s"]);
        let out = run(&argv);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // An interface without a global IPv6 address is named, with the fix.
    let st = Command::new("ip")
        .args([
            "-n",
            &lab.ns_b(),
            "-6",
            "addr",
            "flush",
            "dev",
            &lab.if_b(),
            "scope",
            "global",
        ])
        .status()
        .unwrap();
    assert!(st.success());
    let out = run(&["stream", "--lab", &lab.name, "--ipv6", "--count", "10"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // In the interface's namespace, each argument as a shell reads it.
    let fix = format!(
        "has no global IPv6 address for --ipv6; add one with `ip -6 -n {} addr add ADDR/64 dev {} nodad`",
        lab.ns_b(),
        lab.if_b()
    );
    assert!(err.contains(&fix), "{err}");
}

/// The XDP responder's answer to an IPv6 request, run once in the kernel
/// (BPF_PROG_RUN, no interface): addresses and ports swapped, kind set to
/// response, and a UDP checksum that is valid for the new frame.
#[test]
#[ignore = "needs root: IPv6 streams on the veth lab, counted against ip -s link"]
fn the_xdp_responder_keeps_ipv6_checksums_valid() {
    use linerate_datapath::{
        frame::{set_lengths, set_udp6_checksum, Endpoint, FrameSpec, HEADER_OFFSET_V6},
        header::{Fragment, Kind, HEADER_LEN},
    };
    use linerate_ebpf::{AttachPolicy, Steering, SteeringConfig};

    require_root("xdp responder over IPv6");
    let end = |last: u8, ip: &str, port| Endpoint {
        mac: [2, 0, 0, 0, 0, last],
        ip: ip.parse().unwrap(),
        port,
    };
    let (client, responder) = (end(1, "2001:2::1", 7472), end(2, "2001:2::2", 7471));
    let spec = FrameSpec {
        src: client,
        dst: responder,
        frame_size: 200,
        flow: 0,
        kind: Kind::Request,
    };
    let mut request = spec.template().unwrap();
    let len = request.len();
    set_lengths(&mut request, len);
    Fragment {
        msg_id: 7,
        index: 0,
        count: 1,
        msg_len: (len - HEADER_OFFSET_V6 - 34) as u32,
    }
    .write(&mut request[HEADER_OFFSET_V6 + HEADER_LEN..]);
    set_udp6_checksum(&mut request, len);
    let cfg = SteeringConfig {
        port_lo: 7471,
        port_hi: 7471,
        policy: AttachPolicy::Auto,
        force: false,
        respond: true,
        drop_ppm: 0,
    };
    let (action, response) = Steering::run_once(cfg, &request).unwrap();
    assert_eq!(action, 3, "XDP_TX");
    // What the response must be: the request with its ends swapped and its
    // kind a response, its checksum summed whole.
    let mut want = FrameSpec {
        src: responder,
        dst: client,
        kind: Kind::Response,
        ..spec
    }
    .template()
    .unwrap();
    want[HEADER_OFFSET_V6 + HEADER_LEN..]
        .copy_from_slice(&request[HEADER_OFFSET_V6 + HEADER_LEN..]);
    set_udp6_checksum(&mut want, len);
    assert_eq!(response, want);
    assert_ne!(
        &response[60..62],
        &[0, 0],
        "an IPv6 UDP checksum is never zero"
    );
}
