//! Bad input gets a one-line error that names the problem and the fix,
//! and a non-zero exit; never a panic.

mod common;

use std::{
    process::{Command, Output, Stdio},
    thread,
    time::Duration,
};

use common::*;

fn fails_with(out: &Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "exit status; stderr: {err}");
    assert!(err.starts_with("linerate: error: "), "stderr: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} missing from: {err}");
    }
}

#[test]
#[ignore = "needs root: the error comes from a run on the veth lab"]
fn unknown_interface_and_namespace() {
    require_root("unknown interface");
    fails_with(
        &run(&["stream", "--tx-iface", "nope0", "--rx-iface", "nope1"]),
        &["interface \"nope0\" not found", "ip link"],
    );
    fails_with(
        &run(&[
            "stream",
            "--tx-iface",
            "nope0",
            "--rx-iface",
            "nope1",
            "--tx-netns",
            "no-such-ns",
        ]),
        &["network namespace \"no-such-ns\" not found"],
    );
}

#[test]
#[ignore = "needs root: the error comes from a run on the veth lab"]
fn mtus_out_of_range() {
    require_root("MTU");
    let _turn = serial();
    let lab = Lab::up("tesz", 1500);
    // (Frame sizes, the UMEM chunk and cores are refused the same way on
    // the loopback engine: control/tests/errors.rs.)
    fails_with(
        &run(&[
            "stream",
            "--lab",
            &lab.name,
            "--mtu",
            "20000",
            "--duration",
            "1s",
        ]),
        &["MTU 20000 is out of range"],
    );
}

#[test]
#[ignore = "needs root: the error comes from a run on the veth lab"]
fn zero_copy_refused_on_veth() {
    require_root("zero-copy refused");
    let _turn = serial();
    let lab = Lab::up("tezc", 1500);
    fails_with(
        &run(&[
            "stream",
            "--lab",
            &lab.name,
            "--zero-copy",
            "--duration",
            "1s",
        ]),
        &["zero-copy refused", "drop --zero-copy"],
    );
    assert!(
        !has_xdp(&lab.ns_b(), &lab.if_b()),
        "XDP left attached after a failed start"
    );
}

/// Compiles a program that passes everything: "someone else's" program.
fn foreign_program() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("linerate-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("pass.bpf.c");
    std::fs::write(
        &src,
        "#include <linux/bpf.h>\n\
         __attribute__((section(\"xdp\"), used)) int pass(struct xdp_md *c) { return XDP_PASS; }\n\
         char LICENSE[] __attribute__((section(\"license\"), used)) = \"GPL\";\n",
    )
    .unwrap();
    let obj = dir.join("pass.o");
    let st = Command::new("clang")
        .args([
            "-O2",
            "-target",
            "bpf",
            "-I/usr/include/x86_64-linux-gnu",
            "-c",
        ])
        .arg(&src)
        .arg("-o")
        .arg(&obj)
        .status()
        .expect("clang");
    assert!(st.success());
    obj
}

#[test]
#[ignore = "needs root: the error comes from a run on the veth lab"]
fn foreign_xdp_program_is_not_replaced_without_force() {
    require_root("foreign XDP program");
    let _turn = serial();
    let lab = Lab::up("tefx", 1500);
    let obj = foreign_program();
    let st = Command::new("ip")
        .args([
            "-n",
            &lab.ns_b(),
            "link",
            "set",
            "dev",
            &lab.if_b(),
            "xdpgeneric",
            "obj",
        ])
        .arg(&obj)
        .args(["sec", "xdp"])
        .status()
        .unwrap();
    assert!(st.success());
    let id = ip_link(&lab.ns_b(), &lab.if_b())["xdp"]["prog"]["id"].clone();
    fails_with(
        &run(&["stream", "--lab", &lab.name, "--duration", "1s"]),
        &["already has an XDP program attached", "--force"],
    );
    // Still there, untouched.
    assert_eq!(ip_link(&lab.ns_b(), &lab.if_b())["xdp"]["prog"]["id"], id);
    // With --force linerate takes the interface and runs.
    assert_eq!(
        counted_stream(&lab.name, 1000, &["--force"])["frames"]["received"],
        1000
    );
}

#[test]
#[ignore = "needs root: the error comes from a run on the veth lab"]
fn second_run_on_the_same_interface_is_refused() {
    require_root("concurrent runs");
    let _turn = serial();
    let lab = Lab::up("tedup", 1500);
    let mut first = Command::new(linerate())
        .args([
            "stream",
            "--lab",
            &lab.name,
            "--rate",
            "1000",
            "--warmup",
            "0s",
            "--duration",
            "4s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut attached = false;
    for _ in 0..100 {
        if has_xdp(&lab.ns_b(), &lab.if_b()) {
            attached = true;
            break;
        }
        thread::sleep(Duration::from_millis(50));
    }
    assert!(attached, "first run never attached");
    // Refused by the interface lock, before it changes anything.
    fails_with(
        &run(&["stream", "--lab", &lab.name, "--duration", "1s"]),
        &[
            "is in use by another linerate run",
            &format!("(pid {})", first.id()),
        ],
    );
    assert!(
        first.wait().unwrap().success(),
        "the first run was disturbed"
    );
}
