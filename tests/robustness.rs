//! Foreign traffic on the steered port, an interrupted rr run and a reader
//! that goes away, on the veth lab: XDP detached after each. (A sweep
//! interrupted, a stream interrupted and a reader that goes away on the
//! loopback engine: control/tests/robustness_loopback.rs.)

mod common;

use std::{
    fs,
    net::UdpSocket,
    process::{Command, Stdio},
    thread,
    time::Duration,
};

use common::*;
use nix::{
    sched::{setns, CloneFlags},
    sys::signal::{kill, Signal},
    unistd::Pid,
};

/// Sends `n` datagrams of garbage from namespace `ns` to `to`.
fn send_garbage(ns: &str, to: &str, n: usize) {
    let ns = ns.to_string();
    let to = to.to_string();
    thread::spawn(move || {
        let f = fs::File::open(format!("/run/netns/{ns}")).unwrap();
        setns(f, CloneFlags::CLONE_NEWNET).unwrap();
        let s = UdpSocket::bind("0.0.0.0:0").unwrap();
        let mut x: u32 = 12345;
        for i in 0..n {
            // Random bytes, truncated headers, our magic with lies after it.
            let mut b: Vec<u8> = (0..(i % 90) + 1)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    (x >> 16) as u8
                })
                .collect();
            if i % 3 == 0 && b.len() >= 4 {
                b[0] = 0x4c;
                b[1] = 0x52;
                b[2] = 1;
                b[3] = (i % 7) as u8;
            }
            s.send_to(&b, &to).unwrap();
            thread::sleep(Duration::from_micros(200));
        }
    })
    .join()
    .unwrap();
}

#[test]
#[ignore = "needs root: foreign traffic and interrupted runs on the veth lab"]
fn foreign_frames_on_the_test_port_are_counted_bad() {
    require_root("foreign frames");
    let _turn = serial();
    let lab = Lab::up("trob", 1500);
    let name = lab.name.clone();
    let run = thread::spawn(move || {
        counted_stream(&name, 60_000, &["--rate", "20000", "--rx-wait", "busy"])
    });
    // Once our frames flow the receivers are bound and steered to: the
    // foreign datagrams land inside the run (3 s of it), whatever the load.
    wait_for_frames(&lab, 2_000);
    send_garbage(&lab.ns_a(), "198.18.0.2:7471", 300);
    let r = run.join().unwrap();
    let f = &r["frames"];
    assert_eq!(f["received"], 60_000, "our frames all counted: {f}");
    assert_eq!(f["sent"], 60_000);
    assert_eq!(f["lost"], 0);
    let bad = f["bad"].as_u64().unwrap();
    assert!(bad >= 250, "foreign datagrams counted bad: {f}");
    assert!(bad <= 300, "{f}");
}

#[test]
#[ignore = "needs root: foreign traffic and interrupted runs on the veth lab"]
fn rx_only_counts_every_frame_another_tool_sends() {
    require_root("--rx-only");
    let _turn = serial();
    let lab = Lab::up("trxo", 1500);
    let name = lab.name.clone();
    let run = thread::spawn(move || {
        let out = run(&[
            "stream",
            "--lab",
            &name,
            "--rx-only",
            "--port",
            "7471",
            "--duration",
            "3s",
            "--warmup",
            "0s",
            "--json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        json(&out)
    });
    // The receivers are bound and steered well within a second.
    thread::sleep(Duration::from_millis(1000));
    send_garbage(&lab.ns_a(), "198.18.0.2:7471", 300);
    let r = run.join().unwrap();
    let f = &r["frames"];
    assert_eq!(f["received"], 300, "every foreign datagram counted: {f}");
    assert_eq!(
        (f["sent"].as_u64(), f["bad"].as_u64()),
        (Some(0), Some(0)),
        "{f}"
    );
    assert_eq!(r["setup"]["tx_bind_mode"], "none (--rx-only)");
    let (rx, _) = packets(&lab.ns_b(), &lab.if_b());
    assert!(rx >= 300, "the interface saw them too: {rx}");
}

fn interrupt_after(mut cmd: Command, wait: Duration) -> std::process::Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    thread::sleep(wait);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
#[ignore = "needs root: foreign traffic and interrupted runs on the veth lab"]
fn rr_interrupted_prints_figures_and_detaches() {
    require_root("rr SIGINT");
    let _turn = serial();
    let lab = Lab::up("trint", 1500);
    let mut cmd = Command::new(linerate());
    cmd.args([
        "rr",
        "--lab",
        &lab.name,
        "--warmup",
        "0.2s",
        "--duration",
        "30s",
        "--json",
    ]);
    let out = interrupt_after(cmd, Duration::from_secs(2));
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&out);
    assert_eq!(r["interrupted"], true);
    assert!(r["transactions"]["total"].as_u64().unwrap() > 0);
    assert!(!has_xdp(&lab.ns_a(), &lab.if_a()) && !has_xdp(&lab.ns_b(), &lab.if_b()));
}

#[test]
#[ignore = "needs root: foreign traffic and interrupted runs on the veth lab"]
fn a_reader_that_goes_away_is_no_panic() {
    require_root("closed stdout");
    let _turn = serial();
    let lab = Lab::up("tpip", 1500);
    let mut child = Command::new(linerate())
        .args([
            "stream",
            "--lab",
            &lab.name,
            "--count",
            "1000",
            "--rate",
            "50000",
            "--warmup",
            "0s",
            "--duration",
            "5s",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader closes its end before the figures are printed.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.status.success(), "{:?}: {err}", out.status);
    assert!(!has_xdp(&lab.ns_b(), &lab.if_b()), "XDP left attached");
}
