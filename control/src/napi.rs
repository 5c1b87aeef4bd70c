//! Threaded NAPI: veth's receive work (and so the XDP program and the
//! copy into the UMEM) runs in a kernel thread `napi/<iface>-<id>` when
//! NAPI is threaded. Pinning that thread to the receiver's core keeps it
//! off the sender's.

use nix::{
    sched::{sched_getaffinity, sched_setaffinity, CpuSet},
    unistd::Pid,
};

/// Kernel threads doing NAPI for `iface` (matched by name; thread names
/// are cut at 15 characters).
pub fn threads(iface: &str) -> Vec<i32> {
    let prefix: String = format!("napi/{iface}-").chars().take(15).collect();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
        comm.trim_end().starts_with(&prefix).then_some(pid)
    })
    .collect()
}

/// Pins one thread to `core`; false when that fails.
pub fn pin_one(pid: i32, core: usize) -> bool {
    let mut set = CpuSet::new();
    set.set(core).is_ok() && sched_setaffinity(Pid::from_raw(pid), &set).is_ok()
}

/// A thread's CPU affinity, None when it cannot be read (gone).
pub fn affinity(pid: i32) -> Option<CpuSet> {
    sched_getaffinity(Pid::from_raw(pid)).ok()
}

/// Sets a thread's CPU affinity back; a thread that is gone needs nothing.
pub fn set_affinity(pid: i32, set: &CpuSet) {
    let _ = sched_setaffinity(Pid::from_raw(pid), set);
}
