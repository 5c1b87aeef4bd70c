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

/// A usage error: clap refused the command line, with the same one-line
/// `linerate: error:` start as every other error, and exit 2.
fn usage_error(args: &[&str], needles: &[&str]) {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{args:?}: exit status; stderr: {err}"
    );
    assert!(
        err.starts_with("linerate: error: "),
        "{args:?}: stderr: {err}"
    );
    assert!(!err.contains("panicked"), "panic: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {n:?} missing from: {err}");
    }
}

#[test]
#[ignore = "needs root: the error comes from a run on the veth lab"]
fn not_root() {
    require_root("not_root (drops to nobody)");
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(linerate())
        .args(["stream", "--lab", "tenr"])
        .output()
        .expect("setpriv");
    fails_with(&out, &["needs root", "sudo"]);
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
fn sizes_and_mtus_out_of_range() {
    require_root("sizes");
    let _turn = serial();
    let lab = Lab::up("tesz", 1500);
    fails_with(
        &run(&[
            "stream",
            "--lab",
            &lab.name,
            "--size",
            "1519",
            "--duration",
            "1s",
        ]),
        &["frame size 1519 is out of range", "1518", "--mtu"],
    );
    // Below 64 bytes on any link: refused where it is parsed.
    usage_error(
        &[
            "stream",
            "--lab",
            &lab.name,
            "--size",
            "63",
            "--duration",
            "1s",
        ],
        &["frame size 63 is out of range", "64"],
    );
    fails_with(
        &run(&[
            "stream",
            "--lab",
            &lab.name,
            "--umem-chunk",
            "2048",
            "--size",
            "1900",
            "--mtu",
            "2000",
            "--duration",
            "1s",
        ]),
        &[
            "--umem-chunk 2048 holds frames up to 1792 bytes",
            "--umem-chunk 4096",
        ],
    );
    usage_error(
        &["lab", "up", "--lab", "tesz2", "--mtu", "10000"],
        &["'10000' for '--mtu", "576 to 9000"],
    );
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
    fails_with(
        &run(&[
            "stream",
            "--lab",
            &lab.name,
            "--tx-cores",
            "64",
            "--duration",
            "1s",
        ]),
        &["core 64 does not exist"],
    );
    assert!(!netns_exists("tesz2-a"));
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

#[test]
#[ignore = "needs root: the error comes from a run on the veth lab"]
fn a_sweep_refuses_a_bad_core_list_before_it_runs_anything() {
    require_root("sweep with a bad core list");
    let dir = std::env::temp_dir().join(format!("linerate-hxsw-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cores.toml");
    std::fs::write(
        &file,
        "name = \"cores\"\nkind = \"stream\"\n[fixed]\ncount = 10\n[[axis]]\nname = \"rx_cores\"\nvalues = [\"0\", \"0-99999999999\"]\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let out = run(&[
        "sweep",
        file.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--lab",
        "hxsw",
    ]);
    // The first point would have run (and brought the lab up) before the
    // second aborted allocating 800 GB.
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("linerate: error: ")
            && err.contains("'0-99999999999' for '--rx-cores")
            && err.contains("does not exist"),
        "{err}"
    );
    assert!(!out_dir.exists(), "the sweep started");
    assert!(!netns_exists("hxsw-a"), "a point ran");
    let _ = run(&["lab", "down", "--lab", "hxsw"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs root: the error comes from a run on the veth lab"]
fn message_frames_times_count_is_bounded() {
    require_root("count x message frames");
    let _turn = serial();
    let lab = Lab::up("hxmc", 1500);
    // 2^48 messages of 69 frames each would wrap the senders' frame count.
    fails_with(
        &run(&[
            "stream",
            "--lab",
            &lab.name,
            "--count",
            "281474976710656",
            "--message",
            "100000",
            "--duration",
            "1s",
        ]),
        &["--count 281474976710656", "more than 2^48", "lower --count"],
    );
}
