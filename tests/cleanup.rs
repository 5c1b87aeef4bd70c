//! Nothing is left behind: after Ctrl-C or SIGTERM the figures so far are
//! printed and the program detached; after SIGKILL the kernel drops the
//! program with the process (bpf_link) and `lab down` removes the rest.

mod common;

use std::{
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use common::*;
use nix::{
    sys::signal::{kill, Signal},
    unistd::Pid,
};

fn start(lab: &Lab) -> Child {
    Command::new(linerate())
        .args([
            "stream",
            "--lab",
            &lab.name,
            "--rate",
            "200000",
            "--warmup",
            "0s",
            "--duration",
            "30s",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_bounded(child: Child, limit: Duration) -> std::process::Output {
    let pid = child.id();
    let waiter = thread::spawn(move || child.wait_with_output().unwrap());
    let end = Instant::now() + limit;
    while !waiter.is_finished() {
        if Instant::now() > end {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
            panic!("linerate did not stop within {limit:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
    waiter.join().unwrap()
}

fn stops_cleanly_on(signal: Signal, lab_name: &str) {
    let _turn = serial();
    let lab = Lab::up(lab_name, 1500);
    let child = start(&lab);
    let pid = Pid::from_raw(child.id() as i32);
    wait_for_frames(&lab, 10_000);
    kill(pid, signal).unwrap();
    let out = wait_bounded(child, Duration::from_secs(60));
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&out);
    assert_eq!(r["interrupted"], true);
    assert!(
        r["frames"]["received"].as_u64().unwrap() > 0,
        "figures so far: {r}"
    );
    // Stopped early: the window is shorter than the 30 s asked.
    assert!(r["window_s"].as_f64().unwrap() < 30.0);
    assert!(
        !has_xdp(&lab.ns_b(), &lab.if_b()),
        "XDP program left attached"
    );
}

#[test]
#[ignore = "needs root: signals to runs on the veth lab, XDP programs left attached"]
fn sigint_prints_figures_and_detaches() {
    require_root("SIGINT");
    stops_cleanly_on(Signal::SIGINT, "tcint");
}

#[test]
#[ignore = "needs root: signals to runs on the veth lab, XDP programs left attached"]
fn sigterm_prints_figures_and_detaches() {
    require_root("SIGTERM");
    stops_cleanly_on(Signal::SIGTERM, "tcterm");
}

#[test]
#[ignore = "needs root: signals to runs on the veth lab, XDP programs left attached"]
fn sigkill_leaves_no_program_and_lab_down_recovers() {
    require_root("SIGKILL");
    let _turn = serial();
    let lab = Lab::up("tckill", 1500);
    let child = start(&lab);
    wait_for_frames(&lab, 10_000);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    let _ = wait_bounded(child, Duration::from_secs(60));
    // The bpf_link died with the process.
    // (The deadline only guards against a hang.)
    let end = Instant::now() + Duration::from_secs(60);
    while has_xdp(&lab.ns_b(), &lab.if_b()) {
        assert!(Instant::now() < end, "XDP program outlived its process");
        thread::sleep(Duration::from_millis(50));
    }
    // The next run works without manual steps.
    assert_eq!(
        counted_stream(&lab.name, 1000, &[])["frames"]["received"],
        1000
    );
    // lab down removes everything.
    let name = lab.name.clone();
    let out = run(&["lab", "down", "--lab", &name]);
    assert!(out.status.success());
    assert!(!netns_exists(&format!("{name}-a")) && !netns_exists(&format!("{name}-b")));
    // Its lock files went with it (none piles up in /run/linerate).
    for file in [format!("lab-{name}.lock"), format!("lab-{name}.run")] {
        let p = std::path::Path::new("/run/linerate").join(&file);
        assert!(!p.exists(), "{} outlived its lab", p.display());
    }
    let out = run(&["lab", "status", "--lab", &name]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("down"));
}
