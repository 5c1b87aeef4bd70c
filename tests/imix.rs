//! Traffic mixes (`--size imix`, `--size SIZE:WEIGHT,...`): a counted
//! stream of mixed sizes arrives whole, and its bytes, counted by linerate
//! and by the interfaces (`ip -s link`), are the sum over the pattern.

mod common;

use common::*;
use serde_json::Value;

/// (tx bytes, rx bytes) from `ip -s link`.
fn bytes(netns: &str, iface: &str) -> (u64, u64) {
    let l = ip_link(netns, iface);
    (
        l["stats64"]["tx"]["bytes"].as_u64().unwrap(),
        l["stats64"]["rx"]["bytes"].as_u64().unwrap(),
    )
}

/// A counted stream of `size` on a lab of its own: every frame arrives,
/// the senders and the receivers count `want_bytes` (frames without FCS)
/// and both interfaces as many; returns the result.
fn mixed_stream(lab: &Lab, size: &str, count: u64, want_bytes: u64, extra: &[&str]) -> Value {
    let (tx0, _) = bytes(&lab.ns_a(), &lab.if_a());
    let (_, rx0) = bytes(&lab.ns_b(), &lab.if_b());
    let mut args = vec!["--size", size];
    args.extend_from_slice(extra);
    let r = counted_stream(&lab.name, count, &args);
    assert_whole(&r, count, want_bytes);
    let (tx1, _) = bytes(&lab.ns_a(), &lab.if_a());
    let (_, rx1) = bytes(&lab.ns_b(), &lab.if_b());
    // veth counts the frames AF_XDP sends after their 14-byte Ethernet
    // header (a 64-byte frame: 46), on both ends (they pass as skbs); the
    // kernel stack's (--backend udp) and the generator's (xdp_frames
    // through ndo_xdp_xmit) whole.
    let whole = extra.contains(&"udp") || extra.contains(&"generator");
    let header = if whole { 0 } else { 14 };
    let on_veth = want_bytes - header * count;
    assert_eq!(tx1 - tx0, on_veth, "{} sent bytes (ip -s link)", lab.if_a());
    assert_eq!(
        rx1 - rx0,
        on_veth,
        "{} received bytes (ip -s link)",
        lab.if_b()
    );
    r
}

/// The frames of an IMIX stream average the mix's mean, 4342 / 12 bytes
/// (FCS included): over the whole run exactly (the workers' totals, whole
/// cycles), and in the measured window within what one cut cycle at each
/// end of it moves it. (A counted run of a fast sender on a loaded machine
/// may be over before its window's first reading: then the window holds
/// no frame and has no mean, and only the totals are checked.)
fn assert_imix_mean(r: &Value) {
    for (side, role) in [("sender", "tx"), ("receiver", "rx")] {
        let (mut frames, mut bytes) = (0, 0);
        for w in r["workers"].as_array().unwrap() {
            if w["role"] == role {
                frames += w["total"]["frames"].as_u64().unwrap();
                bytes += w["total"]["bytes"].as_u64().unwrap();
            }
        }
        assert_eq!(12 * (bytes + 4 * frames), 4342 * frames, "{side}: {r:#}");
        let frames = r[side]["frames"].as_f64().unwrap();
        if frames > 0.0 {
            let mean = r[side]["avg_frame_size"].as_f64().unwrap();
            let bound = 2.0 * 1518.0 / frames;
            assert!((mean - 4342.0 / 12.0).abs() < bound, "{side}: {r:#}");
        }
    }
}

#[test]
#[ignore = "needs root: streams on the veth lab, counted against ip -s link"]
fn imix_stream_counts_every_frame_and_byte() {
    require_root("imix stream");
    let _turn = serial();
    let lab = Lab::up("mximix", 1500);
    // 100 cycles of 12 frames: 7 x 60 + 4 x 590 + 1 x 1514 bytes each
    // (64, 594 and 1518 with FCS).
    let r = mixed_stream(&lab, "imix", 1200, 100 * 4294, &[]);
    assert_eq!(r["params"]["size_mix"], "64:7,594:4,1518:1", "{r:#}");
    assert_eq!(r["params"]["frame_size"], 1518, "the largest frame");
    // A timed run: the window's frames average the mix's mean, 4342 / 12
    // bytes, within what one cut cycle at each end of the window moves
    // it (under 2 x 1518 / frames).
    let r = run_json(&[
        "stream",
        "--lab",
        &lab.name,
        "--size",
        "imix",
        "--rate",
        "20000",
        "--napi",
        "softirq",
        "--warmup",
        "0s",
        "--duration",
        "1s",
        "--json",
    ]);
    for side in ["sender", "receiver"] {
        let frames = r[side]["frames"].as_f64().unwrap();
        let mean = r[side]["avg_frame_size"].as_f64().unwrap();
        assert!(frames > 1000.0, "{side}: {r:#}");
        let bound = 2.0 * 1518.0 / frames;
        assert!(
            (mean - 4342.0 / 12.0).abs() < bound,
            "{side}: mean {mean} of {frames} frames"
        );
    }
    let table = String::from_utf8_lossy(
        &run(&[
            "stream", "--lab", &lab.name, "--size", "imix", "--count", "12", "--warmup", "0s",
        ])
        .stdout,
    )
    .into_owned();
    assert!(table.contains("traffic mix 64:7,594:4,1518:1"), "{table}");
}

#[test]
#[ignore = "needs root: streams on the veth lab, counted against ip -s link"]
fn listed_mix_with_a_partial_cycle_and_jumbo_frames() {
    require_root("listed mix");
    // 128:3,9018:1 cycles 128, 128, 9018, 128 (interleaved); 1001 frames
    // are 250 cycles and one 128-byte frame: 124 + 124 + 9014 + 124 bytes
    // a cycle. 9018-byte frames span three UMEM chunks (multi-buffer).
    let _turn = serial();
    let lab = Lab::up("mxlist", 9000);
    let r = mixed_stream(
        &lab,
        "128:3,9018:1",
        1001,
        250 * (3 * 124 + 9014) + 124,
        &[],
    );
    assert_eq!(r["params"]["size_mix"], "128:3,9018:1", "{r:#}");
    assert_eq!(r["setup"]["descs_per_frame"], 3, "{r:#}");
}

#[test]
#[ignore = "needs root: streams on the veth lab, counted against ip -s link"]
fn udp_backend_sends_each_datagram_at_its_size_in_the_mix() {
    require_root("imix over udp");
    let _turn = serial();
    let lab = Lab::up("m2udp", 1500);
    // Each datagram's UDP payload is its frame's: 100 cycles of 7 x 18 +
    // 4 x 548 + 1 x 1472 payload bytes, 7 x 60 + 4 x 590 + 1514 frame
    // bytes, on the veth pair as on the sockets.
    let r = mixed_stream(&lab, "imix", 1200, 100 * 4294, &["--backend", "udp"]);
    assert_eq!(r["params"]["size_mix"], "64:7,594:4,1518:1", "{r:#}");
    assert_imix_mean(&r);
    // With GSO a super-datagram is a run of the largest datagrams ended by
    // a shorter one (veth carries it whole, so only the sockets count the
    // datagrams); with GRO the receiver splits coalesced ones back.
    for extra in [&["--gso"][..], &["--gso", "--gro"]] {
        let mut args = vec!["--backend", "udp", "--size", "64:2,594:1,1518:3"];
        args.extend_from_slice(extra);
        // 100 cycles of 2 x 60 + 590 + 3 x 1514 bytes.
        let r = counted_stream(&lab.name, 600, &args);
        assert_whole(&r, 600, 100 * (2 * 60 + 590 + 3 * 1514));
    }
}

#[test]
#[ignore = "needs root: streams on the veth lab, counted against ip -s link"]
fn generator_sends_each_frame_at_its_size_in_the_mix() {
    require_root("imix from the generator");
    let _turn = serial();
    let lab = Lab::up("gxmix", 1500);
    // The in-kernel generator sets each frame's length from the mix's
    // pattern: 100 cycles of 7 x 60 + 4 x 590 + 1514 bytes (veth counts
    // its xdp_frames whole).
    let gen = ["--tx-engine", "generator", "--rate", "50000"];
    let r = mixed_stream(&lab, "imix", 1200, 100 * 4294, &gen);
    assert_eq!(r["setup"]["tx_engine"], "generator", "{r:#}");
    assert_eq!(r["params"]["size_mix"], "64:7,594:4,1518:1", "{r:#}");
    assert_imix_mean(&r);
    // A listed mix with a partial cycle: 128, 128, 1518, 128 (interleaved),
    // 250 cycles and one 128-byte frame.
    let r = mixed_stream(
        &lab,
        "128:3,1518:1",
        1001,
        250 * (3 * 124 + 1514) + 124,
        &gen,
    );
    assert_eq!(r["params"]["size_mix"], "128:3,1518:1", "{r:#}");
}

#[test]
fn mixes_are_refused_where_they_cannot_be_sent() {
    // Exit 2: clap's refusal of the text; 1: the plan's of the engine.
    for (args, code, want) in [
        (
            vec!["--size", "imix", "--backend", "tcp"],
            1,
            "the kernel cuts its segments: frame sizes cannot be chosen",
        ),
        (vec!["--size", "64:0,128:1"], 2, "a weight of 0"),
        (vec!["--size", "64:7;594:4"], 2, "is not SIZE:WEIGHT"),
        (vec!["--size", "64:40,128:40"], 2, "add up to 80"),
    ] {
        let mut argv = vec!["stream", "--lab", "mxnone", "--duration", "1s"];
        argv.extend(&args);
        let out = run(&argv);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
