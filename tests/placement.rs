//! Receive work placement and priority (`--napi threaded|threaded-own`,
//! `--napi-priority`, `--gen-priority`): the result says what ran where at
//! what priority, and the NAPI thread's policy, priority and affinity are
//! put back after the run, also after Ctrl-C.

mod common;

use std::{
    thread,
    time::{Duration, Instant},
};

use common::*;

/// A thread's (policy, rt_priority, nice, allowed CPUs), as `chrt` and
/// `taskset` would show them: /proc/PID/stat fields 41, 40, 19 and
/// /proc/PID/status's Cpus_allowed_list.
fn sched(pid: i32) -> (String, String, String, String) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .collect();
    let field = |n: usize| rest[n - 3].to_string();
    let cpus = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string();
    (field(41), field(40), field(19), cpus)
}

#[test]
#[ignore = "needs root: NAPI threads and priorities of the veth lab"]
fn the_napi_threads_priority_and_core_are_reported_and_put_back() {
    require_root("NAPI priority");
    let _turn = serial();
    // `lab up` makes NAPI threaded.
    let lab = Lab::up("plc1", 1500);
    let threads = napi_threads(&lab.if_b());
    assert_eq!(threads.len(), 1, "one NAPI thread for {}", lab.if_b());
    let pid = threads[0];
    let before = sched(pid);
    assert_eq!(before.0, "0", "the NAPI thread starts as SCHED_OTHER");
    // A run with a real-time NAPI thread beside the receiver: every frame
    // arrives, and the result says where and at what priority.
    let r = counted_stream(
        &lab.name,
        1000,
        &[
            "--napi",
            "threaded",
            "--napi-priority",
            "fifo:50",
            "--rx-cores",
            "1",
            "--tx-cores",
            "0",
        ],
    );
    assert_eq!(r["frames"]["received"], 1000);
    assert_eq!(r["setup"]["napi"], "threaded");
    assert_eq!(r["setup"]["napi_priority"], "fifo:50");
    assert_eq!(r["setup"]["napi_threads"], serde_json::json!([[pid, 1]]));
    let placement = r["setup"]["placement"].as_str().unwrap();
    assert!(
        placement.contains(&format!(
            "NAPI threads pinned beside the receiver at fifo:50: {pid} on core 1"
        )),
        "{placement}"
    );
    assert_eq!(sched(pid), before, "the NAPI thread's scheduling was left");
    // A slice of their own (Linux 6.12+) for the NAPI thread and the
    // receiver: every frame, said in the result, and the NAPI thread's
    // slice back to what it was.
    let slice = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/sched"))
            .unwrap()
            .lines()
            .find(|l| l.starts_with("se.slice"))
            .map(|l| l.split(':').nth(1).unwrap().trim().to_string())
    };
    let slice_before = slice(pid);
    assert!(slice_before.is_some(), "Linux 6.12+ reports se.slice");
    let r = counted_stream(
        &lab.name,
        1000,
        &[
            "--napi",
            "threaded",
            "--napi-priority",
            "slice:200",
            "--rx-priority",
            "slice:300",
            "--rx-cores",
            "1",
            "--tx-cores",
            "0",
        ],
    );
    assert_eq!(r["frames"]["received"], 1000);
    assert_eq!(r["setup"]["napi_priority"], "slice:200");
    assert_eq!(r["setup"]["rx_priority"], "slice:300");
    assert_eq!(slice(pid), slice_before, "the NAPI thread's slice was left");
    assert_eq!(sched(pid), before, "the NAPI thread's scheduling was left");
    // On a core of its own: the workers on core 0, the thread on core 1.
    let r = counted_stream(
        &lab.name,
        1000,
        &[
            "--napi",
            "threaded-own",
            "--napi-priority",
            "rr:10",
            "--rx-cores",
            "0",
            "--tx-cores",
            "0",
        ],
    );
    assert_eq!(r["frames"]["received"], 1000);
    assert_eq!(r["setup"]["napi_priority"], "rr:10");
    assert_eq!(r["setup"]["napi_threads"], serde_json::json!([[pid, 1]]));
    assert!(
        r["setup"]["placement"]
            .as_str()
            .unwrap()
            .contains("NAPI threads pinned on cores of their own at rr:10"),
        "{}",
        r["setup"]["placement"]
    );
    assert_eq!(sched(pid), before, "the NAPI thread's scheduling was left");
    // Ctrl-C in the middle of a run: put back too.
    let child = spawn(&[
        "stream",
        "--lab",
        &lab.name,
        "--napi",
        "threaded",
        "--napi-priority",
        "fifo:60",
        "--rx-cores",
        "1",
        "--tx-cores",
        "0",
        "--rate",
        "1000",
        "--warmup",
        "0s",
        "--duration",
        "30s",
        "--json",
    ]);
    let end = Instant::now() + Duration::from_secs(20);
    while sched(pid).0 != "1" {
        assert!(Instant::now() < end, "the run never set SCHED_FIFO");
        thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(sched(pid).1, "60");
    assert_eq!(sched(pid).3, "1");
    let out = interrupt(child);
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(sched(pid), before, "left changed after Ctrl-C");
}

#[test]
#[ignore = "needs root: NAPI threads and priorities of the veth lab"]
fn placements_that_cannot_be_are_refused_before_the_run() {
    require_root("NAPI placement refused");
    let _turn = serial();
    let lab = Lab::up("plc2", 1500);
    let pid = napi_threads(&lab.if_b())[0];
    let before = sched(pid);
    // A priority with no NAPI thread to give it to.
    let out = run(&[
        "stream",
        "--lab",
        &lab.name,
        "--napi",
        "softirq",
        "--napi-priority",
        "fifo:50",
        "--count",
        "10",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--napi-priority fifo:50: there is no NAPI thread to set")
            && err.contains("--napi threaded"),
        "{err}"
    );
    // Every core has a worker (on this two-core machine: the sender on 0,
    // the receiver on 1): no core of its own for the thread.
    if std::thread::available_parallelism().unwrap().get() == 2 {
        let out = run(&[
            "stream",
            "--lab",
            &lab.name,
            "--napi",
            "threaded-own",
            "--tx-cores",
            "0",
            "--rx-cores",
            "1",
            "--count",
            "10",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("--napi threaded-own: no core is left for the NAPI threads (senders on cores [0], receivers on [1], of 2)"),
            "{err}"
        );
    }
    // A priority the parser refuses exits 2 naming it.
    let out = run(&["stream", "--lab", &lab.name, "--napi-priority", "fifo:0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 to 99"));
    // Nothing was left changed.
    assert_eq!(sched(pid), before);
}

/// The generator's runners and the receivers at a given priority: the
/// result says so.
#[test]
#[ignore = "needs root: NAPI threads and priorities of the veth lab"]
fn the_generator_runners_and_receivers_priority_is_reported() {
    require_root("generator priority");
    let _turn = serial();
    let lab = Lab::up("plc3", 1500);
    let r = counted_stream(
        &lab.name,
        1000,
        &[
            "--tx-engine",
            "generator",
            "--gen-priority",
            "other:5",
            "--rx-priority",
            "other:3",
        ],
    );
    assert_eq!(r["frames"]["received"], 1000);
    assert_eq!(r["setup"]["tx_engine"], "generator");
    assert_eq!(r["setup"]["gen_priority"], "other:5");
    assert_eq!(r["setup"]["rx_priority"], "other:3");
    assert!(
        r["setup"]["placement"]
            .as_str()
            .unwrap()
            .contains("its runners at other:5, received by xdp at other:3;"),
        "{}",
        r["setup"]["placement"]
    );
}
