//! Threaded NAPI: veth's receive work (and so the XDP program and the
//! copy into the UMEM) runs in a kernel thread when NAPI is threaded.
//! Pinning that thread to the receiver's core keeps it off the sender's.
//! The threads are those napi-get gives for the interface's own NAPIs (its
//! ifindex in its namespace), never threads found by name: another
//! namespace's interface may carry the same name.

use linerate_datapath::netdev;
use nix::{
    sched::{sched_getaffinity, sched_setaffinity, CpuSet},
    unistd::Pid,
};

/// A NAPI of an interface and its kernel thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thread {
    /// The NAPI's id.
    pub napi: u32,
    /// Its thread's pid.
    pub pid: i32,
}

/// The kernel threads of `iface`'s NAPIs (in `netns`), as napi-get gives
/// them, by NAPI id; none when NAPI is not threaded.
pub fn threads(netns: Option<&str>, iface: &str) -> Result<Vec<Thread>, netdev::NetdevError> {
    let iface = iface.to_string();
    let mut threads: Vec<Thread> =
        netdev::in_netns(netns, move |nd| nd.napis(netdev::ifindex(&iface)?))?
            .into_iter()
            .filter_map(|n| {
                Some(Thread {
                    napi: n.id,
                    pid: i32::try_from(n.pid?).ok().filter(|&p| p > 0)?,
                })
            })
            .collect();
    threads.sort_unstable_by_key(|t| t.napi);
    Ok(threads)
}

/// Pins one thread to `core`; false when that fails.
pub fn pin_one(pid: i32, core: usize) -> bool {
    set_cores(pid, &[core])
}

/// Sets a thread's CPU affinity to `cores`; false when that fails.
pub fn set_cores(pid: i32, cores: &[usize]) -> bool {
    let mut set = CpuSet::new();
    cores.iter().all(|&c| set.set(c).is_ok()) && sched_setaffinity(Pid::from_raw(pid), &set).is_ok()
}

/// A thread's CPU affinity, None when it cannot be read (gone).
pub fn affinity(pid: i32) -> Option<CpuSet> {
    sched_getaffinity(Pid::from_raw(pid)).ok()
}

/// The cores of a CPU set, in order.
pub fn cores_of(set: &CpuSet) -> Vec<usize> {
    (0..CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_set_reads_as_its_cores() {
        let mut set = CpuSet::new();
        for c in [0, 3, 1023] {
            set.set(c).unwrap();
        }
        assert_eq!(cores_of(&set), [0, 3, 1023]);
        assert!(cores_of(&CpuSet::new()).is_empty());
    }
}
