//! The lab and the doctor.

mod common;

use common::*;

#[test]
#[ignore = "needs root: makes network namespaces and veth pairs"]
fn lab_up_status_down() {
    require_root("lab");
    let out = run(&[
        "lab", "up", "--lab", "tlab", "--mtu", "9000", "--queues", "2",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lab = Lab {
        name: "tlab".into(),
    };
    let s = json(&run(&["lab", "status", "--lab", "tlab", "--json"]));
    assert_eq!(s["up"], true);
    assert_eq!(s["mtu"], 9000);
    assert_eq!(s["queues"], 2);
    // Addresses from the RFC 2544 benchmarking range.
    assert!(s["lab"]["ip_a"].as_str().unwrap().starts_with("198.18."));
    let a = ip_link(&lab.ns_a(), &lab.if_a());
    assert_eq!(a["mtu"], 9000);
    // Each veth has a qdisc: a full peer pushes back instead of dropping.
    for (ns, ifn) in [(lab.ns_a(), lab.if_a()), (lab.ns_b(), lab.if_b())] {
        let q = std::process::Command::new("tc")
            .args(["-n", &ns, "qdisc", "show", "dev", &ifn])
            .output()
            .unwrap();
        let q = String::from_utf8_lossy(&q.stdout);
        assert!(q.contains("pfifo_fast"), "{ifn}: {q}");
    }
    // `lab up` again replaces the lab instead of failing.
    assert!(run(&["lab", "up", "--lab", "tlab"]).status.success());
    assert_eq!(
        json(&run(&["lab", "status", "--lab", "tlab", "--json"]))["mtu"],
        1500
    );
    drop(lab);
    assert!(!netns_exists("tlab-a") && !netns_exists("tlab-b"));
    // Down twice is fine.
    assert!(run(&["lab", "down", "--lab", "tlab"]).status.success());
}

#[test]
#[ignore = "needs root: makes network namespaces and veth pairs"]
fn doctor_probes_the_lab() {
    require_root("doctor");
    let _turn = serial();
    let lab = Lab::up("tdoc", 1500);
    let r = json(&run(&["doctor", "--lab", &lab.name, "--json"]));
    assert_eq!(r["driver"], "veth");
    assert_eq!(r["xdp_native"]["ok"], true, "{r:#}");
    assert_eq!(r["xdp_generic"]["ok"], true, "{r:#}");
    assert_eq!(r["zero_copy"]["ok"], false, "veth refuses zero-copy: {r:#}");
    assert_eq!(r["copy_mode"]["ok"], true, "{r:#}");
    assert_eq!(r["multi_buffer"]["ok"], true, "{r:#}");
    assert_eq!(r["run_would_use"], "XDP native mode, AF_XDP copy mode");
    // Free huge pages and their size, as /proc/meminfo has them.
    let hp = &r["huge_pages"];
    assert!(hp["free"].is_u64(), "{r:#}");
    assert!(hp["size"].as_u64().unwrap() >= 2 << 20, "{r:#}");
    assert!(
        !has_xdp(&lab.ns_b(), &lab.if_b()),
        "doctor left a program attached"
    );
}

#[test]
#[ignore = "needs root: makes network namespaces and veth pairs"]
fn two_queues_two_flows_every_frame_counted() {
    require_root("two queues");
    let _turn = serial();
    let out = run(&["lab", "up", "--lab", "tq2", "--queues", "2"]);
    assert!(out.status.success());
    let lab = Lab { name: "tq2".into() };
    let r = counted_stream(&lab.name, 10000, &["--queues", "2"]);
    assert_eq!(r["frames"]["sent"], 20000);
    assert_eq!(r["frames"]["received"], 20000, "{r:#}");
    let rx: Vec<_> = r["workers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["role"] == "rx")
        .collect();
    assert_eq!(rx.len(), 2);
    for w in rx {
        assert_eq!(
            w["total"]["frames"], 10000,
            "each queue gets its own flow: {w}"
        );
    }
    // Placement: apart when there are cores enough (4 for two queues),
    // else crossed, with senders that block.
    let ncpu = std::thread::available_parallelism().unwrap().get();
    let cores = |role: &str| -> Vec<u64> {
        r["workers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["role"] == role)
            .map(|w| w["core"].as_u64().unwrap())
            .collect()
    };
    let placement = r["setup"]["placement"].as_str().unwrap();
    if ncpu < 4 {
        assert_eq!(cores("tx"), [0, 1 % ncpu as u64], "{placement}");
        assert_eq!(cores("rx"), [1 % ncpu as u64, 0], "{placement}");
        assert!(
            placement.contains("each core sends one queue and receives another"),
            "{placement}"
        );
        assert_eq!(r["params"]["tx_wait"], "wait", "{placement}");
    } else {
        assert_eq!(cores("tx"), [0, 2], "{placement}");
        assert_eq!(cores("rx"), [1, 3], "{placement}");
        assert!(placement.contains("apart"), "{placement}");
        assert_eq!(r["params"]["tx_wait"], "busy", "{placement}");
    }
    // Small frames are never crossed (it costs there).
    let r = counted_stream(&lab.name, 2000, &["--queues", "2", "--size", "64"]);
    assert_eq!(r["frames"]["received"], 4000, "{r:#}");
    let placement = r["setup"]["placement"].as_str().unwrap();
    assert!(!placement.contains("each core sends"), "{placement}");
    assert_eq!(r["params"]["tx_wait"], "busy", "{placement}");
}

/// The inode of a named namespace: its identity.
fn netns_ino(name: &str) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/run/netns/{name}"))
        .unwrap()
        .ino()
}

#[test]
#[ignore = "needs root: makes network namespaces and veth pairs"]
fn lab_up_leaves_a_healthy_lab_and_says_why_it_recreates() {
    require_root("lab up twice");
    let lab = Lab::up("hxl1", 1500);
    let ino = netns_ino(&lab.ns_a());
    // Up as asked: left alone, and said so.
    let out = run(&["lab", "up", "--lab", &lab.name]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("lab hxl1 is up with MTU 1500 and 1 queue(s); leaving it"),
        "{err}"
    );
    assert_eq!(netns_ino(&lab.ns_a()), ino, "the lab was recreated");
    // Asked otherwise: recreated, saying what differed.
    let out = run(&["lab", "up", "--lab", &lab.name, "--mtu", "9000"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("recreating lab hxl1 (hxl1-a0 has MTU 1500, hxl1-b0 has MTU 1500)"),
        "{err}"
    );
    assert_ne!(netns_ino(&lab.ns_a()), ino);
    assert_eq!(
        json(&run(&["lab", "status", "--lab", &lab.name, "--json"]))["mtu"],
        9000
    );
}

#[test]
#[ignore = "needs root: makes network namespaces and veth pairs"]
fn lab_ups_at_once_take_turns() {
    require_root("lab up at once");
    let _ = run(&["lab", "down", "--lab", "hxl2"]);
    let lab = Lab {
        name: "hxl2".into(),
    };
    // They used to race: "Cannot remove namespace file", "File exists".
    let children: Vec<_> = (0..4)
        .map(|_| {
            std::process::Command::new(linerate())
                .args(["lab", "up", "--lab", &lab.name])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let s = json(&run(&["lab", "status", "--lab", &lab.name, "--json"]));
    assert_eq!(s["up"], true, "{s}");
}

#[test]
#[ignore = "needs root: makes network namespaces and veth pairs"]
fn lab_up_and_down_refuse_while_a_run_uses_the_lab() {
    require_root("lab up during a run");
    let _turn = serial();
    let lab = Lab::up("hxl3", 1500);
    let child = std::process::Command::new(linerate())
        .args([
            "stream",
            "--lab",
            &lab.name,
            "--rate",
            "1000",
            "--warmup",
            "0s",
            "--duration",
            "30s",
            "--json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !has_xdp(&lab.ns_b(), &lab.if_b()) {
        assert!(std::time::Instant::now() < end, "the run never attached");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let ino = netns_ino(&lab.ns_a());
    // It used to recreate the lab under the run, which went on in the
    // orphaned namespaces and exited 0.
    for (args, what) in [
        (
            &["lab", "up", "--lab", "hxl3", "--mtu", "9000"][..],
            "`lab up`",
        ),
        (&["lab", "down", "--lab", "hxl3"], "`lab down`"),
    ] {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.starts_with(&format!(
                "linerate: error: lab hxl3 is in use by a run (pid {}): {what}",
                child.id()
            )),
            "{err}"
        );
    }
    assert_eq!(netns_ino(&lab.ns_a()), ino, "the lab changed under the run");
    // The run went on undisturbed; Ctrl-C ends it with its figures.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&out);
    assert!(r["fault"].is_null(), "{}", r["fault"]);
    assert!(r["frames"]["received"].as_u64().unwrap() > 0);
    // Free again once the run ended.
    assert!(run(&["lab", "down", "--lab", "hxl3"]).status.success());
}
