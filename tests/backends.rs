//! The kernel-stack backends in the same harness: each moves a fixed number
//! of messages, every one counted, and all backends report the same counts
//! and bytes for the same work.

mod common;

use common::*;
use serde_json::Value;

const SIZES: [u64; 3] = [64, 1472, 65536];

fn stream(lab: &str, backend: &str, size: u64, count: u64, extra: &[&str]) -> Value {
    let s = size.to_string();
    // About 50,000 frames a second whatever the message size.
    let rate = (50_000 / size.div_ceil(1438)).max(1).to_string();
    let mut args = vec!["--backend", backend, "--message", &s, "--rate", &rate];
    args.extend_from_slice(extra);
    counted_stream(lab, count, &args)
}

#[test]
#[ignore = "needs root: kernel sockets between lab namespaces"]
fn stream_messages_counted_by_every_backend() {
    require_root("backends stream");
    let _turn = serial();
    let lab = Lab::up("tbes", 1500);
    for size in SIZES {
        let count = if size > 10_000 { 300 } else { 3000 };
        let mut seen = Vec::new();
        for (backend, extra) in [
            ("xdp", &[][..]),
            ("udp", &[][..]),
            ("udp", &["--gso", "--gro"][..]),
            ("tcp", &[][..]),
        ] {
            let r = stream(&lab.name, backend, size, count, extra);
            let m = &r["frames"]["messages"];
            assert_eq!(m["sent"], count, "{backend} {extra:?} {size}: {m}");
            assert_eq!(m["received"], count, "{backend} {extra:?} {size}: {m}");
            assert_eq!(m["lost"], 0, "{backend} {size}");
            assert_eq!(r["frames"]["bad"], 0, "{backend} {size}");
            assert_eq!(r["params"]["backend"], backend);
            seen.push((backend, m["received"].clone(), m["message_bytes"].clone()));
            // CPU is measured the same way for every backend.
            assert!(r["cpu"]["per_core"].as_array().unwrap().len() >= 2);
        }
        // Same work, same report: messages and their size agree.
        for w in seen.windows(2) {
            assert_eq!(
                (&w[0].1, &w[0].2),
                (&w[1].1, &w[1].2),
                "{:?} vs {:?}",
                w[0].0,
                w[1].0
            );
        }
    }
}

#[test]
#[ignore = "needs root: kernel sockets between lab namespaces"]
fn udp_frames_match_the_interface() {
    require_root("udp frames");
    let _turn = serial();
    let lab = Lab::up("tbeu", 1500);
    // Without --message, UDP datagrams carry what an AF_XDP frame's UDP
    // payload carries: one datagram per 1518-byte frame.
    let r = counted_stream(&lab.name, 5000, &["--backend", "udp"]);
    assert_eq!(r["frames"]["received"], 5000, "{}", r["frames"]);
    assert_eq!(r["interfaces"]["rx"]["rx_packets"], 5000);
    let x = counted_stream(&lab.name, 5000, &[]);
    let rx_bytes = |v: &Value| {
        v["workers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["role"] == "rx")
            .unwrap()["total"]["bytes"]
            .clone()
    };
    assert_eq!(rx_bytes(&r), rx_bytes(&x), "the same frame bytes counted");
    assert_eq!(x["interfaces"]["rx"]["rx_packets"], 5000);
    // A UDP socket gets only what the kernel's checksum check passed: its
    // bad checksums are not measured (absent), AF_XDP's are (0: none bad).
    assert!(r["frames"].get("bad_checksum").is_none(), "{}", r["frames"]);
    assert_eq!(r["frames"]["bad"], 0, "{}", r["frames"]);
    assert_eq!(x["frames"]["bad_checksum"], 0, "{}", x["frames"]);
}

fn rr(lab: &str, backend: &str, size: u64, count: u64, conc: &str) -> Value {
    let s = size.to_string();
    let n = count.to_string();
    let out = run(&[
        "rr",
        "--lab",
        lab,
        "--backend",
        backend,
        "--request",
        &s,
        "--response",
        &s,
        "--count",
        &n,
        "--concurrency",
        conc,
        "--timeout",
        "2s",
        "--warmup",
        "0s",
        "--duration",
        "60s",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{backend}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out)
}

#[test]
#[ignore = "needs root: kernel sockets between lab namespaces"]
fn rr_transactions_counted_by_every_backend() {
    require_root("backends rr");
    let _turn = serial();
    let lab = Lab::up("tber", 1500);
    for size in SIZES {
        let count = if size > 10_000 { 100 } else { 1000 };
        for backend in ["xdp", "udp", "tcp"] {
            for conc in ["1", "4"] {
                let r = rr(&lab.name, backend, size, count, conc);
                let t = &r["transactions"];
                eprintln!("{backend} {size} conc {conc}: {t}");
                rr_accounted(t, count);
                assert_eq!(r["latency"]["count"], count);
                // CPU is accounted per transaction for every backend (a
                // short run may see 0 jiffies of /proc/stat).
                assert!(
                    r["cpu"]["total"]["us_per_transaction"].as_f64().is_some(),
                    "{}",
                    r["cpu"]
                );
            }
        }
    }
}

#[test]
fn backend_options_are_checked() {
    let check = |args: &[&str], needle: &str| {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(needle), "{needle:?} missing from {err}");
    };
    check(&["stream", "--gso"], "--backend udp");
    check(
        &["stream", "--backend", "tcp", "--size", "1518"],
        "--message instead of --size",
    );
    check(
        &["stream", "--backend", "udp", "--inject-loss", "1"],
        "--backend xdp",
    );
    check(
        &["rr", "--backend", "tcp", "--responder", "xdp"],
        "--backend xdp",
    );
}
