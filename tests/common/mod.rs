//! Helpers shared by the integration tests: the `linerate` binary, root
//! checks, labs that remove themselves, the interfaces' own counters.
#![allow(dead_code)]

use std::{
    path::PathBuf,
    process::{Command, Output},
    sync::{Mutex, MutexGuard, OnceLock},
};

use serde_json::Value;

/// The `linerate` binary, built once per test binary.
pub fn linerate() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-q", "-p", "linerate"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("running cargo build -p linerate");
        assert!(status.success(), "cargo build -p linerate failed");
        // tests live in target/<profile>/deps/
        let exe = std::env::current_exe().unwrap();
        exe.parent().unwrap().parent().unwrap().join("linerate")
    })
    .clone()
}

/// Fails the test at once without root (network namespaces, XDP, AF_XDP).
/// Every test that calls it is `#[ignore = "needs root: ..."]`: a plain
/// `cargo test` without root counts it as ignored, never as passed;
/// `scripts/test` (as root) runs it (`--include-ignored`), and so does
/// `cargo test -- --ignored` by hand.
pub fn require_root(test: &str) {
    assert!(
        nix::unistd::geteuid().is_root(),
        "{test} needs root (network namespaces, XDP, AF_XDP): run it as root (`sudo scripts/test`, or `cargo test -- --include-ignored` as root)"
    );
}

/// Runs `linerate args...`.
pub fn run(args: &[&str]) -> Output {
    Command::new(linerate())
        .args(args)
        .output()
        .expect("running linerate")
}

/// Starts `linerate args...` with its output piped (read it with
/// [`interrupt`] or `wait_with_output`).
pub fn spawn(args: &[&str]) -> std::process::Child {
    Command::new(linerate())
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starting linerate")
}

/// The pids of `napi/IFACE-*` threads.
pub fn napi_threads(iface: &str) -> Vec<i32> {
    let prefix: String = format!("napi/{iface}-").chars().take(15).collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            comm.starts_with(&prefix).then_some(pid)
        })
        .collect()
}

/// Ctrl-C to a run started by [`spawn`], and what it wrote as it ended.
pub fn interrupt(child: std::process::Child) -> Output {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT to linerate");
    child.wait_with_output().expect("waiting for linerate")
}

/// stdout as JSON, with stderr in the panic message when it is not.
pub fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "linerate printed no JSON ({e}); status {:?}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Tests that move frames take turns: on two cores, concurrent busy
/// loops would measure each other.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A lab of the test's own, removed on drop.
pub struct Lab {
    pub name: String,
}

impl Lab {
    pub fn up(name: &str, mtu: u32) -> Self {
        let out = run(&["lab", "up", "--lab", name, "--mtu", &mtu.to_string()]);
        assert!(
            out.status.success(),
            "lab up failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Self { name: name.into() }
    }

    pub fn ns_a(&self) -> String {
        format!("{}-a", self.name)
    }
    pub fn ns_b(&self) -> String {
        format!("{}-b", self.name)
    }
    pub fn if_a(&self) -> String {
        format!("{}-a0", self.name)
    }
    pub fn if_b(&self) -> String {
        format!("{}-b0", self.name)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = run(&["lab", "down", "--lab", &self.name]);
    }
}

/// An interface's line of `ip -j -s link`.
pub fn ip_link(netns: &str, iface: &str) -> Value {
    let out = Command::new("ip")
        .args(["-n", netns, "-j", "-s", "link", "show", "dev", iface])
        .output()
        .expect("running ip");
    assert!(out.status.success(), "ip link show {iface} failed");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v[0].clone()
}

/// (rx_packets, tx_packets) from `ip -s link`.
pub fn packets(netns: &str, iface: &str) -> (u64, u64) {
    let l = ip_link(netns, iface);
    (
        l["stats64"]["rx"]["packets"].as_u64().unwrap(),
        l["stats64"]["tx"]["packets"].as_u64().unwrap(),
    )
}

/// Whether an XDP program is attached to the interface.
pub fn has_xdp(netns: &str, iface: &str) -> bool {
    ip_link(netns, iface).get("xdp").is_some()
}

/// Waits until the run's frames reach the receiving interface (its own
/// counter), `frames` of them: the run is past its set-up and measuring (warm-up 0). The
/// deadline only guards against a hang; it is not a timing assertion.
pub fn wait_for_frames(lab: &Lab, frames: u64) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let (rx0, _) = packets(&lab.ns_b(), &lab.if_b());
    while !has_xdp(&lab.ns_b(), &lab.if_b()) || packets(&lab.ns_b(), &lab.if_b()).0 < rx0 + frames {
        assert!(
            std::time::Instant::now() < end,
            "no frames reached the receiver in 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// rr's transactions accounted exactly, whatever the scheduler did: every
/// one of `count` completed; a request that timed out (a response slower
/// than `--timeout` on this shared machine) was sent again, so the
/// responder answered each completed one and at most every timed-out one
/// too, and only a timed-out request can be answered late.
pub fn rr_accounted(t: &Value, count: u64) {
    let n = |k: &str| t[k].as_u64().unwrap_or_else(|| panic!("no {k} in {t}"));
    assert_eq!(n("total"), count, "{t}");
    assert!(n("late") <= n("timeouts"), "{t}");
    assert!(
        n("answered") >= count && n("answered") <= count + n("timeouts"),
        "each request answered once: {t}"
    );
}

/// Whether the named namespace exists.
pub fn netns_exists(name: &str) -> bool {
    std::path::Path::new("/run/netns").join(name).exists()
}

/// Runs a short paced stream of `count` frames (messages, with --message)
/// per queue on `lab` (50,000 a second unless `extra` gives --rate),
/// asserts it succeeded and returns its JSON.
pub fn counted_stream(lab: &str, count: u64, extra: &[&str]) -> Value {
    let count = count.to_string();
    let mut args = vec![
        "stream",
        "--lab",
        lab,
        "--count",
        &count,
        "--warmup",
        "0s",
        "--duration",
        "30s",
        "--json",
    ];
    // Paced well below what the lab carries, so that nothing is lost.
    if !extra.contains(&"--rate") {
        args.extend(["--rate", "50000"]);
    }
    // Receive work in softirq right after each send: no NAPI thread that a
    // busy machine could deschedule while veth's 256-frame queue overflows.
    if !extra.contains(&"--napi") {
        args.extend(["--napi", "softirq"]);
    }
    // The AF_XDP sender (the default before `--tx-engine auto`), whatever
    // NAPI does: the generator into threaded NAPI loses a little (docs/guide.md, "Streams");
    // tests of another engine name it.
    if !extra.contains(&"--tx-engine") {
        args.extend(["--tx-engine", "backend"]);
    }
    args.extend_from_slice(extra);
    let out = run(&args);
    assert!(
        finished(&out),
        "stream failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out)
}

/// The first worker of `role` ("tx", "rx") in a stream's result.
pub fn worker<'a>(r: &'a Value, role: &str) -> &'a Value {
    r["workers"]
        .as_array()
        .and_then(|w| w.iter().find(|w| w["role"] == role))
        .unwrap_or_else(|| panic!("no {role} worker: {r:#}"))
}

/// Asserts that a counted stream of `count` frames arrived whole: all
/// sent and received, none lost, bad, duplicated, out of sequence or left
/// unsent, and each side's workers counted `bytes` (frames without FCS).
pub fn assert_whole(r: &Value, count: u64, bytes: u64) {
    let f = &r["frames"];
    assert_eq!(f["sent"], count, "{r:#}");
    assert_eq!(f["received"], count, "every frame counted: {r:#}");
    for k in ["lost", "bad", "duplicates", "seq_gaps", "unfinished"] {
        assert_eq!(f[k], 0, "{k}: {r:#}");
    }
    for role in ["tx", "rx"] {
        let w = worker(r, role);
        assert_eq!(w["total"]["frames"], count, "{role}: {w:#}");
        assert_eq!(w["total"]["bytes"], bytes, "{role} bytes: {w:#}");
    }
}

/// Whether a run finished with its result: exit 0, or exit 4 from a
/// counted stream (`--count`) whose frames did not all arrive (loss the
/// test itself judges from the accounting).
pub fn finished(out: &std::process::Output) -> bool {
    out.status.success()
        || (out.status.code() == Some(4)
            && String::from_utf8_lossy(&out.stderr)
                .contains("a counted run (--count) delivered fewer frames"))
}

/// Runs `linerate args...`, asserts it finished ([`finished`]) and returns
/// its JSON.
pub fn run_json(args: &[&str]) -> Value {
    let out = run(args);
    assert!(
        finished(&out),
        "linerate {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out)
}

/// Stops a daemon a test started: SIGTERM, up to 10 s to end, then
/// SIGKILL.
#[allow(dead_code)]
pub fn terminate(child: &mut std::process::Child) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < end {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}
