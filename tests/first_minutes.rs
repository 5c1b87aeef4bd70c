//! The first five minutes on the lab: durations in bare seconds, rr's
//! summary line first (and alone with -q), `--rx-only` with the receiving
//! interface alone. (A stream's summary line is in
//! control/tests/first_minutes_loopback.rs, without root.)

mod common;

use std::{fs, net::UdpSocket, thread, time::Duration};

use common::*;
use nix::sched::{setns, CloneFlags};

/// The number after `before` in `line` (thousands separators dropped).
fn number_after(line: &str, before: &str) -> f64 {
    let rest = line
        .split_once(before)
        .unwrap_or_else(|| panic!("no {before:?} in {line:?}"))
        .1;
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
        .filter(|c| *c != ',')
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number after {before:?} in {line:?}"))
}

fn stdout(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
#[ignore = "needs root: streams on the veth lab"]
fn rr_summary_line_comes_first_and_alone_with_quiet() {
    require_root("rr summary line");
    let _turn = serial();
    let lab = Lab::up("uxq", 1500);
    // Bare seconds (--warmup 0, --duration 30) are durations. (A
    // stream's summary line: control/tests/first_minutes_loopback.rs.)
    // rr: transactions/s, response times, CPU, service demand.
    let rr = |extra: &[&str]| {
        let mut args = vec![
            "rr",
            "--lab",
            &lab.name,
            "--count",
            "300",
            "--warmup",
            "0",
            "--duration",
            "30",
            "--timeout",
            "0.05",
        ];
        args.extend(extra);
        run(&args)
    };
    let r = json(&rr(&["--json"]));
    let quiet = stdout(&rr(&["--quiet"]));
    let lines: Vec<&str> = quiet.lines().collect();
    assert_eq!(lines.len(), 1, "-q prints one line: {quiet}");
    let line = lines[0];
    assert!(line.starts_with("rr: "), "{line}");
    for (label, path) in [
        ("rr: ", &["transactions", "per_s"][..]),
        ("p50 ", &["latency", "p50_us"]),
        ("p99 ", &["latency", "p99_us"]),
        ("timeouts ", &["transactions", "timeouts"]),
        ("CPU client ", &["cpu", "client", "cpu_pct"]),
        ("responder ", &["cpu", "responder", "cpu_pct"]),
    ] {
        number_after(line, label);
        let field = path.iter().fold(&r, |v, k| &v[*k]);
        assert!(field.as_f64().is_some(), "--json has no {path:?}: {r}");
    }
    assert!(line.ends_with(" us/transaction"), "{line}");
    assert!(
        line.contains("SD - us/") || number_after(line, "SD ") >= 0.0,
        "{line}"
    );
    assert!(
        r["cpu"]["total"]
            .as_object()
            .unwrap()
            .contains_key("us_per_transaction"),
        "{r}"
    );
    let full = stdout(&rr(&[]));
    assert!(full.lines().next().unwrap().starts_with("rr: "), "{full}");
}

/// Sends `n` UDP datagrams of 100 bytes from namespace `ns` to `to`.
fn send_udp(ns: &str, to: &str, n: usize) {
    let (ns, to) = (ns.to_string(), to.to_string());
    thread::spawn(move || {
        let f = fs::File::open(format!("/run/netns/{ns}")).unwrap();
        setns(f, CloneFlags::CLONE_NEWNET).unwrap();
        let s = UdpSocket::bind("0.0.0.0:0").unwrap();
        for _ in 0..n {
            s.send_to(&[7u8; 100], &to).unwrap();
            thread::sleep(Duration::from_micros(200));
        }
    })
    .join()
    .unwrap();
}

#[test]
#[ignore = "needs root: streams on the veth lab"]
fn rx_only_takes_the_receiving_interface_alone() {
    require_root("--rx-only --rx-iface");
    let _turn = serial();
    let lab = Lab::up("uxro", 1500);
    let (ns, iface) = (lab.ns_b(), lab.if_b());
    let run = thread::spawn(move || {
        // It used to insist: "give both --tx-iface and --rx-iface".
        run(&[
            "stream",
            "--rx-only",
            "--rx-iface",
            &iface,
            "--rx-netns",
            &ns,
            "--duration",
            "3",
            "--warmup",
            "0",
            "--json",
        ])
    });
    // The receivers are bound and steered well within a second.
    thread::sleep(Duration::from_millis(1000));
    send_udp(&lab.ns_a(), "198.18.0.2:7471", 300);
    let out = run.join().unwrap();
    let r = json(&out);
    assert!(out.status.success(), "{r}");
    assert_eq!(r["frames"]["received"], 300, "{}", r["frames"]);
    assert_eq!(r["frames"]["sent"], 0);
    assert_eq!(r["setup"]["tx_bind_mode"], "none (--rx-only)");
    assert_eq!(r["params"]["rx_iface"], lab.if_b());
}

#[test]
#[ignore = "needs root: streams on the veth lab"]
fn tx_only_sends_to_a_receiver_that_is_not_linerate() {
    require_root("--tx-only");
    let _turn = serial();
    let lab = Lab::up("uxto", 1500);
    // A plain UDP socket on the B side, with room for every datagram.
    let ns = lab.ns_b();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let receiver = thread::spawn(move || {
        let f = fs::File::open(format!("/run/netns/{ns}")).unwrap();
        setns(f, CloneFlags::CLONE_NEWNET).unwrap();
        let s = UdpSocket::bind("0.0.0.0:7471").unwrap();
        nix::sys::socket::setsockopt(&s, nix::sys::socket::sockopt::RcvBufForce, &(64 << 20))
            .unwrap();
        s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        ready_tx.send(()).unwrap();
        let mut buf = [0u8; 2048];
        let (mut n, mut lens) = (0u64, std::collections::BTreeSet::new());
        // Until nothing came for 3 s (the run is over).
        while let Ok((len, _)) = s.recv_from(&mut buf) {
            n += 1;
            lens.insert(len);
        }
        (n, lens)
    });
    ready_rx.recv().unwrap();
    let (rx_before, _) = packets(&lab.ns_b(), &lab.if_b());
    let out = run(&[
        "stream",
        "--lab",
        &lab.name,
        "--tx-only",
        // Receive work right after each send: no NAPI thread to deschedule.
        "--napi",
        "softirq",
        "--size",
        "128",
        "--count",
        "3000",
        "--rate",
        "20000",
        "--warmup",
        "0",
        "--duration",
        "30",
        "--json",
    ]);
    let r = json(&out);
    assert!(out.status.success(), "{r}");
    let (got, lens) = receiver.join().unwrap();
    let (rx_after, _) = packets(&lab.ns_b(), &lab.if_b());
    // Exact accounting: what linerate says it sent, the socket received.
    assert_eq!(r["frames"]["sent"], 3000, "{}", r["frames"]);
    assert_eq!(got, 3000, "datagrams the socket received");
    // 128-byte frames (FCS included): 128 - 4 - 14 - 20 - 8 bytes of UDP payload.
    assert_eq!(lens.into_iter().collect::<Vec<_>>(), [82]);
    assert!(rx_after - rx_before >= 3000, "{rx_before} -> {rx_after}");
    // No receiver figures pretending to be measured.
    assert_eq!(r["setup"]["rx_bind_mode"], "none (--tx-only)");
    assert_eq!(
        (
            r["frames"]["received"].as_u64(),
            r["frames"]["lost"].as_u64()
        ),
        (Some(0), Some(0))
    );
    assert!(
        !has_xdp(&lab.ns_b(), &lab.if_b()),
        "no program on the receiver"
    );
    let quiet = run(&[
        "stream",
        "--lab",
        &lab.name,
        "--tx-only",
        "--count",
        "10",
        "--rate",
        "1000",
        "--warmup",
        "0",
        "--duration",
        "30",
        "-q",
    ]);
    let line = stdout(&quiet);
    assert!(
        line.starts_with("stream: sent ")
            && line.contains("no receiver of ours (--tx-only)")
            && line.contains("CPU tx ")
            && !line.contains(" rx "),
        "{line}"
    );
}
