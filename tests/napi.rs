//! NAPI mode and NAPI threads: a run checks everything before it changes
//! anything, and puts back what it changed when it ends (normally, on an
//! error, on Ctrl-C). An interface without NAPI gets a clear word.

mod common;

use std::{
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use common::*;

/// /sys/class/net/IF/threaded, read as a test may: through `ip netns exec`.
fn threaded(ns: &str, iface: &str) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "cat"])
        .arg(format!("/sys/class/net/{iface}/threaded"))
        .output()
        .unwrap();
    assert!(out.status.success(), "reading threaded of {iface}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn long_stream(lab: &Lab, napi: &str) -> Child {
    Command::new(linerate())
        .args([
            "stream",
            "--lab",
            &lab.name,
            "--napi",
            napi,
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
        .unwrap()
}

/// Waits until the run moves frames: its set-up (NAPI mode included) is
/// done.
fn wait_attached(lab: &Lab) {
    wait_for_frames(lab, 1_000);
}

/// CPUs a thread may run on (`Cpus_allowed_list`).
fn allowed(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
#[ignore = "needs root: NAPI mode and threads of the veth lab"]
fn a_refused_second_run_leaves_the_first_runs_napi_mode() {
    require_root("second run's NAPI");
    let _turn = serial();
    let lab = Lab::up("hxn1", 1500);
    let first = long_stream(&lab, "threaded");
    wait_attached(&lab);
    // The second asks for softirq: it used to set it on both ends, then
    // fail on the XDP program the first had attached.
    let out = run(&[
        "stream",
        "--lab",
        &lab.name,
        "--napi",
        "softirq",
        "--count",
        "10",
        "--duration",
        "2s",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("is in use by another linerate run")
            && err.contains(&format!("(pid {})", first.id())),
        "{err}"
    );
    for (ns, ifn) in [(lab.ns_a(), lab.if_a()), (lab.ns_b(), lab.if_b())] {
        assert_eq!(
            threaded(&ns, &ifn),
            "1",
            "{ifn}: the first run's mode changed"
        );
    }
    let out = interrupt(first);
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(json(&out)["fault"].is_null(), "the first run was disturbed");
}

#[test]
#[ignore = "needs root: NAPI mode and threads of the veth lab"]
fn a_run_puts_the_napi_mode_and_threads_back() {
    require_root("NAPI restored");
    let _turn = serial();
    // `lab up` makes NAPI threaded.
    let lab = Lab::up("hxn2", 1500);
    let ends = [(lab.ns_a(), lab.if_a()), (lab.ns_b(), lab.if_b())];
    for (ns, ifn) in &ends {
        assert_eq!(threaded(ns, ifn), "1");
    }
    // A softirq run ends: threaded again (it used to stay softirq).
    let r = counted_stream(&lab.name, 1000, &["--napi", "softirq"]);
    assert_eq!(r["frames"]["received"], 1000);
    assert_eq!(r["setup"]["napi"], "softirq");
    for (ns, ifn) in &ends {
        assert_eq!(threaded(ns, ifn), "1", "{ifn} left in softirq");
    }
    // Interrupted (Ctrl-C) too.
    let child = long_stream(&lab, "softirq");
    wait_attached(&lab);
    let end = Instant::now() + Duration::from_secs(20);
    while threaded(&lab.ns_b(), &lab.if_b()) != "0" {
        assert!(Instant::now() < end, "the run never set softirq");
        thread::sleep(Duration::from_millis(100));
    }
    let out = interrupt(child);
    assert_eq!(out.status.code(), Some(130));
    for (ns, ifn) in &ends {
        assert_eq!(threaded(ns, ifn), "1", "{ifn} left in softirq after Ctrl-C");
    }
    // A threaded run pins the receiver's NAPI thread to its core; after
    // the run the thread may run where it could before.
    let threads = napi_threads(&lab.if_b());
    assert!(!threads.is_empty(), "no NAPI thread for {}", lab.if_b());
    let before: Vec<String> = threads.iter().map(|&p| allowed(p)).collect();
    let r = counted_stream(&lab.name, 1000, &["--napi", "threaded", "--rx-cores", "1"]);
    assert_eq!(r["frames"]["received"], 1000);
    assert!(
        r["setup"]["napi_threads"]
            .as_array()
            .is_some_and(|a| !a.is_empty()),
        "the run pinned no NAPI thread: {}",
        r["setup"]
    );
    let after: Vec<String> = threads.iter().map(|&p| allowed(p)).collect();
    assert_eq!(before, after, "NAPI threads left pinned");
}

/// Namespaces of the test's own, removed on drop.
struct Netns(Vec<String>);

impl Drop for Netns {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn ip(args: &[&str]) {
    let st = Command::new("ip").args(args).status().unwrap();
    assert!(st.success(), "ip {args:?}");
}

#[test]
#[ignore = "needs root: NAPI mode and threads of the veth lab"]
fn an_interface_without_napi() {
    require_root("veth without NAPI");
    let _turn = serial();
    // A plain veth pair: GRO off, so no NAPI until XDP is attached.
    let ns = Netns(vec!["hxn3-a".into(), "hxn3-b".into()]);
    for n in &ns.0 {
        let _ = Command::new("ip")
            .args(["netns", "del", n])
            .stderr(Stdio::null())
            .status();
        ip(&["netns", "add", n]);
    }
    ip(&[
        "-n", "hxn3-a", "link", "add", "hxn3-a0", "type", "veth", "peer", "name", "hxn3-b0",
        "netns", "hxn3-b",
    ]);
    ip(&[
        "-n",
        "hxn3-a",
        "addr",
        "add",
        "198.18.3.1/30",
        "dev",
        "hxn3-a0",
    ]);
    ip(&[
        "-n",
        "hxn3-b",
        "addr",
        "add",
        "198.18.3.2/30",
        "dev",
        "hxn3-b0",
    ]);
    ip(&["-n", "hxn3-a", "link", "set", "hxn3-a0", "up"]);
    ip(&["-n", "hxn3-b", "link", "set", "hxn3-b0", "up"]);
    let stream = |napi: &str| {
        run(&[
            "stream",
            "--tx-iface",
            "hxn3-a0",
            "--tx-netns",
            "hxn3-a",
            "--rx-iface",
            "hxn3-b0",
            "--rx-netns",
            "hxn3-b",
            "--napi",
            napi,
            "--count",
            "1000",
            "--rate",
            "50000",
            "--warmup",
            "0s",
            "--duration",
            "30s",
            "--json",
        ])
    };
    // softirq is what an interface without NAPI has: nothing to change.
    // (It used to fail: "sh: 1: echo: echo: I/O error".)
    let out = stream("softirq");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&out);
    assert_eq!(r["frames"]["received"], 1000);
    assert_eq!(r["setup"]["napi"], "softirq");
    // threaded cannot be: the error says why and what to do.
    let out = stream("threaded");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("linerate: error: interface hxn3-a0 has no NAPI to make threaded")
            && err.contains("ethtool -K hxn3-a0 gro on")
            && err.contains("--napi keep"),
        "{err}"
    );
    // Nothing was left changed.
    assert_eq!(threaded("hxn3-b", "hxn3-b0"), "0");
}

/// An interface whose name a shell would read as commands (`q;id>p;#` is
/// a name the kernel takes): the hint to paste quotes it.
#[test]
#[ignore = "needs root: NAPI mode and threads of the veth lab"]
fn the_gro_hint_quotes_a_hostile_interface_name() {
    require_root("veth without NAPI");
    let _turn = serial();
    let (a, b) = ("q;id>p;#", "q;id>p;#b");
    let ns = Netns(vec!["hxq-a".into(), "hxq-b".into()]);
    for n in &ns.0 {
        let _ = Command::new("ip")
            .args(["netns", "del", n])
            .stderr(Stdio::null())
            .status();
        ip(&["netns", "add", n]);
    }
    ip(&[
        "-n", "hxq-a", "link", "add", a, "type", "veth", "peer", "name", b, "netns", "hxq-b",
    ]);
    ip(&["-n", "hxq-a", "addr", "add", "198.18.77.1/30", "dev", a]);
    ip(&["-n", "hxq-b", "addr", "add", "198.18.77.2/30", "dev", b]);
    ip(&["-n", "hxq-a", "link", "set", a, "up"]);
    ip(&["-n", "hxq-b", "link", "set", b, "up"]);
    let out = run(&[
        "stream",
        "--tx-iface",
        a,
        "--tx-netns",
        "hxq-a",
        "--rx-iface",
        b,
        "--rx-netns",
        "hxq-b",
        "--napi",
        "threaded",
        "--count",
        "1000",
        "--duration",
        "30s",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("turn GRO on with `ip netns exec hxq-a ethtool -K 'q;id>p;#' gro on`"),
        "{err}"
    );
}

/// A thread's (policy, real-time priority) from /proc/PID/stat (fields 41
/// and 40).
fn sched(pid: i32) -> (u32, u32) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    // Field 3 (state) is after[0]: field N is after[N - 3].
    (
        after[41 - 3].parse().unwrap(),
        after[40 - 3].parse().unwrap(),
    )
}

/// The NAPI settings of `iface` in `ns`, by NAPI id, from the netdev family.
fn napi_settings(ns: &str, iface: &str) -> Vec<(u32, linerate_datapath::netdev::NapiConfig)> {
    let iface = iface.to_string();
    let mut v: Vec<_> = linerate_datapath::netdev::in_netns(Some(ns), move |nd| {
        let index = linerate_datapath::netdev::ifindex(&iface)?;
        Ok(nd
            .napis(index)?
            .into_iter()
            .map(|n| (n.id, n.config))
            .collect::<Vec<_>>())
    })
    .expect("napi-get");
    v.sort_by_key(|n| n.0);
    v
}

/// SIGKILLs a run (nothing of it can clean up) once `changed` holds.
fn kill_once(mut child: Child, what: &str, changed: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(30);
    while !changed() {
        if Instant::now() > end || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "the run never {what}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
#[ignore = "needs root: NAPI mode and threads of the veth lab"]
fn what_a_killed_run_changed_is_put_back_by_the_next_command() {
    require_root("a killed run's kernel state put back");
    let _turn = serial();
    let lab = Lab::up("hxn5", 1500);
    let threads = napi_threads(&lab.if_b());
    assert!(!threads.is_empty(), "no NAPI thread for {}", lab.if_b());
    let before: Vec<((u32, u32), String)> =
        threads.iter().map(|&p| (sched(p), allowed(p))).collect();
    assert!(before.iter().all(|b| b.0 .0 == 0), "{before:?}");
    // A NAPI thread raised to FIFO and pinned, then SIGKILL.
    let child = Command::new(linerate())
        .args([
            "stream",
            "--lab",
            &lab.name,
            "--napi",
            "threaded",
            "--napi-priority",
            "fifo:10",
            "--rx-cores",
            "1",
            "--rate",
            "1000",
            "--warmup",
            "0s",
            "--duration",
            "20s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    kill_once(child, "raised the NAPI thread", || {
        threads.iter().any(|&p| sched(p) == (1, 10))
    });
    assert!(
        threads.iter().any(|&p| sched(p) == (1, 10)),
        "SIGKILL left the thread as the run set it (what is put back next)"
    );
    // `lab status` says what was left, changing nothing.
    let out = run(&["lab", "status", "--lab", &lab.name]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.contains("did not end cleanly"),
        "{err}"
    );
    assert!(
        threads.iter().any(|&p| sched(p) == (1, 10)),
        "lab status changed it"
    );
    // `lab up` puts it back, and says so.
    let out = run(&["lab", "up", "--lab", &lab.name]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("put back"),
        "lab up says what it put back: {err}"
    );
    let after: Vec<((u32, u32), String)> =
        threads.iter().map(|&p| (sched(p), allowed(p))).collect();
    assert_eq!(before, after, "the NAPI thread's policy and cores");
    // The udp backend's kernel busy polling: per-NAPI settings, SIGKILL.
    let napis = napi_settings(&lab.ns_b(), &lab.if_b());
    assert!(!napis.is_empty());
    let child = Command::new(linerate())
        .args([
            "stream",
            "--lab",
            &lab.name,
            "--backend",
            "udp",
            "--rx-wait",
            "prefer-busy-poll",
            "--rate",
            "1000",
            "--warmup",
            "0s",
            "--duration",
            "20s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (ns, ifn) = (lab.ns_b(), lab.if_b());
    kill_once(child, "set the NAPI settings", || {
        napi_settings(&ns, &ifn) != napis
    });
    assert_ne!(napi_settings(&ns, &ifn), napis, "SIGKILL left them set");
    // `doctor` puts them back and reports it.
    let out = run(&["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("put back"),
        "doctor reports what it put back: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(napi_settings(&ns, &ifn), napis, "the per-NAPI settings");
    // Nothing left to put back: the next command finds nothing.
    let out = run(&["lab", "up", "--lab", &lab.name]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !err.contains("put back"), "{err}");
}
