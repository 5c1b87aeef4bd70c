//! Loading the softirq clock (softirq.bpf.c): ns and runs per core and
//! per softirq vector, from the `softirq_entry`/`softirq_exit` raw
//! tracepoints, read at a window's edges. What a window makes of two
//! samples is in `results::softirq`.

use libbpf_rs::{Link, MapCore, MapFlags, MapHandle, Object, ObjectBuilder};
pub use linerate_results::softirq::{SoftirqSample, VectorTime, VECTORS};

use crate::{values, EbpfError};

pub(crate) static SOFTIRQ_OBJECT: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/softirq.bpf.o"));

/// `struct softirq_time` in softirq.bpf.c: (field, offset, size).
pub(crate) const TIME_LAYOUT: [(&str, usize, usize); 3] =
    [("ns", 0, 8), ("count", 8, 8), ("owner_ns", 16, 8)];
/// Size of `struct softirq_time`.
pub(crate) const TIME_SIZE: usize = 24;

/// The softirq clock, attached: counting while it lives, detached when
/// dropped (or when the process dies).
#[derive(Debug)]
pub struct SoftirqClock {
    // Dropped first: detaches the programs before the map goes.
    _links: Vec<Link>,
    times: MapHandle,
    _object: Object,
}

impl SoftirqClock {
    /// Loads the program and attaches it to both tracepoints; the time of
    /// softirqs that interrupt a task of process `owner` (a tgid as the
    /// initial pid namespace sees it) is also counted apart. Needs
    /// CAP_BPF and CAP_PERFMON (root).
    pub fn attach(owner: u32) -> Result<Self, EbpfError> {
        let object = ObjectBuilder::default()
            .open_memory(SOFTIRQ_OBJECT)
            .and_then(|open| open.load())
            .map_err(|e| EbpfError::Load(e.to_string()))?;
        let times = values::map(&object, "softirq_time")?;
        values::map(&object, "owner")?
            .update(&0u32.to_ne_bytes(), &owner.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| EbpfError::map("owner", e))?;
        let mut links = Vec::with_capacity(2);
        for (prog, tracepoint) in [
            ("linerate_softirq_entry", "softirq_entry"),
            ("linerate_softirq_exit", "softirq_exit"),
        ] {
            let p = object
                .progs_mut()
                .find(|p| p.name() == prog)
                .ok_or_else(|| EbpfError::Load(format!("program {prog} missing")))?;
            let link = p.attach_raw_tracepoint(tracepoint).map_err(|e| {
                EbpfError::Load(format!(
                    "attaching {prog} to raw tracepoint {tracepoint}: {e}"
                ))
            })?;
            links.push(link);
        }
        Ok(Self {
            _links: links,
            times,
            _object: object,
        })
    }

    /// Every core's vectors now (cores by number, as the kernel's possible
    /// CPUs).
    pub fn read(&self) -> Result<SoftirqSample, EbpfError> {
        let mut cores: Vec<[VectorTime; VECTORS]> = Vec::new();
        for v in 0..VECTORS {
            let per_cpu = self
                .times
                .lookup_percpu(&(v as u32).to_ne_bytes(), MapFlags::ANY)
                .map_err(|e| EbpfError::map("softirq_time", e))?
                .unwrap_or_default();
            if cores.len() < per_cpu.len() {
                cores.resize(per_cpu.len(), [VectorTime::default(); VECTORS]);
            }
            for (core, bytes) in per_cpu.iter().enumerate() {
                cores[core][v] = decode(bytes);
            }
        }
        Ok(SoftirqSample { cores })
    }
}

/// One CPU's `struct softirq_time` (zeros when too short).
fn decode(bytes: &[u8]) -> VectorTime {
    values::decode(&TIME_LAYOUT, TIME_SIZE, bytes).map_or_else(VectorTime::default, |v| {
        VectorTime {
            ns: v[0],
            count: v[1],
            owner_ns: v[2],
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_value() {
        let mut b = [0u8; TIME_SIZE];
        b[..8].copy_from_slice(&5_000u64.to_ne_bytes());
        b[8..16].copy_from_slice(&3u64.to_ne_bytes());
        b[16..].copy_from_slice(&2_000u64.to_ne_bytes());
        assert_eq!(
            decode(&b),
            VectorTime {
                ns: 5_000,
                count: 3,
                owner_ns: 2_000
            }
        );
        assert_eq!(decode(&b[..16]), VectorTime::default());
    }
}
