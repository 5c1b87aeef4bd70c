//! The softirq clock (an eBPF program on the softirq tracepoints) agrees
//! with the kernel's own softirq column of /proc/stat over a run's window,
//! and every result records linerate's threads as the kernel accounts
//! them.

mod common;

use common::*;
use serde_json::Value;

fn sum(list: &Value, field: &str) -> f64 {
    list.as_array()
        .unwrap_or_else(|| panic!("no list for {field}"))
        .iter()
        .map(|c| c[field].as_f64().unwrap())
        .sum()
}

#[test]
#[ignore = "needs root: an eBPF program on the softirq tracepoints, real frames on the lab"]
fn softirq_time_agrees_with_proc_stat() {
    require_root("softirq_time_agrees_with_proc_stat");
    let _serial = serial();
    let lab = Lab::up("tsirq", 1500);
    // Receive work in softirq (not a NAPI thread), as much as the lab
    // carries: the kernel's tick-sampled column is then large enough to
    // compare with.
    let out = run(&[
        "stream",
        "--lab",
        &lab.name,
        "--napi",
        "softirq",
        "--tx-engine",
        "backend",
        "--warmup",
        "1s",
        "--duration",
        "4s",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "stream failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&out);
    let clock = sum(&r["softirq"], "all_pct");
    let proc_stat = sum(&r["cpu"]["per_core"], "softirq");
    eprintln!("softirq over the window, % of a core summed over cores: clock {clock:.2}, /proc/stat {proc_stat:.2}");
    assert!(
        proc_stat > 5.0,
        "too little softirq work to compare: {proc_stat:.2} %"
    );
    assert!(
        (clock - proc_stat).abs() <= 0.10 * proc_stat,
        "the softirq clock ({clock:.2} %) is not within 10 % of /proc/stat ({proc_stat:.2} %)"
    );
    // NET_RX is within the whole, and the network work done interrupting
    // linerate's own threads within the network work.
    assert!(sum(&r["softirq"], "net_rx_pct") <= clock);
    let net = sum(&r["softirq"], "net_rx_pct") + sum(&r["softirq"], "net_tx_pct");
    let in_own = sum(&r["softirq"], "net_in_own_threads_pct");
    eprintln!("network softirq {net:.2}, of which interrupting linerate's threads: {in_own:.2}");
    assert!(in_own <= net * (1.0 + 1e-9));
    // The workers are among the threads recorded, by their tids.
    let threads = r["threads"].as_array().expect("threads recorded");
    for w in r["workers"].as_array().unwrap() {
        assert!(
            threads.iter().any(|t| t["tid"] == w["tid"]),
            "worker {} is not among the threads",
            w["tid"]
        );
    }
}
