//! Faults of the path mid-run: the interface deleted, taken down, or its
//! MTU changed. Each ends the run within a bounded time with a clear error
//! (exit 3) after the figures measured until then; nothing hangs or panics.

mod common;

use std::process::{Command, Stdio};

use common::*;

/// The run ended early, on the fault: its measured window is shorter than
/// the 20 s asked (a run that missed the fault would measure all of it).
fn ended_early(r: &serde_json::Value) {
    let w = r["window_s"].as_f64().unwrap();
    assert!(w < 20.0, "measured {w} s: the fault did not end the run");
}

fn fault_ends_the_run(lab_name: &str, action: &[&str], needle: &str) {
    let _turn = serial();
    let lab = Lab::up(lab_name, 1500);
    let child = Command::new(linerate())
        .args([
            "stream",
            "--lab",
            &lab.name,
            "--warmup",
            "0s",
            "--duration",
            "20s",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_frames(&lab, 10_000);
    let ns = lab.ns_a();
    let mut args = vec!["-n", ns.as_str()];
    args.extend_from_slice(action);
    let st = Command::new("ip").args(&args).status().unwrap();
    assert!(st.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains(needle), "{needle:?} missing from {err}");
    assert!(!err.contains("panicked"), "{err}");
    let r = json(&out);
    ended_early(&r);
    assert!(r["fault"].as_str().unwrap().contains(needle));
    assert!(
        r["frames"]["received"].as_u64().unwrap() > 0,
        "figures so far"
    );
    // (Deleting one end of a veth pair deletes both.)
    let b_exists = Command::new("ip")
        .args(["-n", &lab.ns_b(), "link", "show", "dev", &lab.if_b()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success();
    if b_exists {
        assert!(!has_xdp(&lab.ns_b(), &lab.if_b()), "program left attached");
    }
}

#[test]
#[ignore = "needs root: faults of the veth lab's interfaces mid-run"]
fn interface_deleted_mid_run() {
    require_root("veth deleted");
    fault_ends_the_run(
        "tfdel",
        &["link", "del", "tfdel-a0"],
        "disappeared during the run",
    );
}

#[test]
#[ignore = "needs root: faults of the veth lab's interfaces mid-run"]
fn link_down_mid_run() {
    require_root("link down");
    fault_ends_the_run(
        "tfdown",
        &["link", "set", "tfdown-a0", "down"],
        "went down during the run",
    );
}

#[test]
#[ignore = "needs root: faults of the veth lab's interfaces mid-run"]
fn mtu_changed_mid_run() {
    require_root("mtu change");
    fault_ends_the_run(
        "tfmtu",
        &["link", "set", "tfmtu-a0", "mtu", "1400"],
        "MTU of tfmtu-a0 changed",
    );
}

#[test]
#[ignore = "needs root: faults of the veth lab's interfaces mid-run"]
fn namespace_replaced_mid_run() {
    require_root("namespace replaced");
    let _turn = serial();
    let lab = Lab::up("hxf1", 1500);
    let child = Command::new(linerate())
        .args([
            "stream",
            "--lab",
            &lab.name,
            "--rate",
            "1000",
            "--warmup",
            "0s",
            "--duration",
            "20s",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_frames(&lab, 200);
    // A new namespace of the same name, with an interface of the same
    // name, up, of the same MTU: by name nothing changed. The run's
    // interfaces live on in the old namespace, held by its threads.
    let ns = lab.ns_a();
    // Held open here so the old namespace outlives its name whatever the
    // run's threads hold: the new one then cannot take its identity
    // (nsfs inode), and what the run sees is a replacement, every time.
    let _old = std::fs::File::open(format!("/run/netns/{ns}")).unwrap();
    for args in [
        &["netns", "del", &ns][..],
        &["netns", "add", &ns],
        &[
            "-n",
            &ns,
            "link",
            "add",
            &lab.if_a(),
            "type",
            "veth",
            "peer",
            "name",
            "hxf1-x",
        ],
        &["-n", &ns, "link", "set", &lab.if_a(), "up"],
    ] {
        assert!(
            Command::new("ip").args(args).status().unwrap().success(),
            "ip {args:?}"
        );
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let needle = "namespace hxf1-a was replaced by another of the same name during the run";
    assert!(err.contains(needle), "{err}");
    let r = json(&out);
    ended_early(&r);
    assert!(r["fault"].as_str().unwrap().contains(needle));
    assert!(
        r["frames"]["received"].as_u64().unwrap() > 0,
        "figures so far"
    );
}
