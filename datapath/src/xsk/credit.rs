//! The generator's backpressure, shared memory with the kernel like the
//! rings: the generator's `gen_credit` map ([`linerate_ebpf::CreditMap`],
//! created mappable) mapped into this process. Receivers add the frames
//! they took off their rings to their flows' counters with an atomic add,
//! no system call; the generator's program reads them before each frame
//! and waits while a flow has a window's worth unacknowledged. The
//! generator's worker adds what it gives up as lost (frames that never
//! reach a receiver would otherwise hold the window shut).

use std::{
    ptr::NonNull,
    sync::atomic::{AtomicU64, Ordering},
};

use linerate_ebpf::{CreditMap, CREDIT_FLOWS};

use crate::binding::XskError;

/// The acknowledgement counters, one per flow.
#[derive(Debug)]
pub struct Credits {
    map: CreditMap,
    base: NonNull<AtomicU64>,
}

// SAFETY: the mapping is only reached through `&AtomicU64`s, which any
// thread may share; it lives as long as `self`.
unsafe impl Send for Credits {}
// SAFETY: as above: every access is atomic.
unsafe impl Sync for Credits {}

const LEN: usize = CREDIT_FLOWS as usize * std::mem::size_of::<u64>();

impl Credits {
    /// A new map, mapped; every count 0.
    pub fn new() -> Result<Self, XskError> {
        let map = CreditMap::create().map_err(|e| XskError::Config(e.to_string()))?;
        // SAFETY: a fresh shared mapping of the whole map (an array map
        // created with BPF_F_MMAPABLE: CREDIT_FLOWS values of 8 bytes,
        // page-aligned by the kernel); no Rust reference to this memory
        // exists yet, and it is unmapped only in Drop.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                LEN,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::SHARED,
                map.fd(),
                0,
            )
        }
        .map_err(|e| XskError::Config(format!("mapping the generator's credit map: {e}")))?;
        let base = NonNull::new(ptr.cast::<AtomicU64>())
            .ok_or_else(|| XskError::Config("mmap returned NULL".into()))?;
        Ok(Self { map, base })
    }

    /// The map, for the generator to load over.
    pub fn map(&self) -> &CreditMap {
        &self.map
    }

    fn slot(&self, flow: u16) -> Option<&AtomicU64> {
        if u32::from(flow) >= CREDIT_FLOWS {
            return None;
        }
        // SAFETY: `flow` is within the mapping (checked above); its 8-byte
        // values are aligned (the mapping is page-aligned) and, shared with
        // the kernel and other threads, only ever touched atomically.
        Some(unsafe { &*self.base.as_ptr().add(usize::from(flow)) })
    }

    /// Acknowledges `frames` of `flow`.
    #[inline]
    pub fn ack(&self, flow: u16, frames: u64) {
        if let Some(s) = self.slot(flow) {
            s.fetch_add(frames, Ordering::Release);
        }
    }

    /// Frames of `flow` acknowledged so far.
    pub fn acked(&self, flow: u16) -> u64 {
        self.slot(flow).map_or(0, |s| s.load(Ordering::Acquire))
    }
}

impl Drop for Credits {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, of LEN bytes; no reference to
        // it outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), LEN) };
    }
}

/// A receiver's acknowledgements: counted per frame in its own memory and
/// added to the shared counters once per batch (one atomic add per flow
/// seen in the batch, not per frame).
#[derive(Debug)]
pub struct Acks {
    credits: std::sync::Arc<Credits>,
    pending: Vec<u64>,
    seen: Vec<u16>,
}

impl Acks {
    /// Acknowledgements into `credits`.
    pub fn new(credits: std::sync::Arc<Credits>) -> Self {
        Self {
            credits,
            pending: Vec::new(),
            seen: Vec::new(),
        }
    }

    /// Notes one frame of `flow` taken off the ring.
    #[inline]
    pub fn note(&mut self, flow: u16) {
        let i = usize::from(flow);
        if i >= self.pending.len() {
            if u32::from(flow) >= CREDIT_FLOWS {
                return;
            }
            self.pending.resize(i + 1, 0);
        }
        if self.pending[i] == 0 {
            self.seen.push(flow);
        }
        self.pending[i] += 1;
    }

    /// Adds what was noted to the shared counters.
    #[inline]
    pub fn flush(&mut self) {
        for f in self.seen.drain(..) {
            let n = std::mem::take(&mut self.pending[usize::from(f)]);
            self.credits.ack(f, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs CAP_BPF (a map is created); skipped without.
    fn credits() -> Option<std::sync::Arc<Credits>> {
        match Credits::new() {
            Ok(c) => Some(std::sync::Arc::new(c)),
            Err(e) => {
                eprintln!("skipped: creating a BPF map needs root or CAP_BPF ({e})");
                None
            }
        }
    }

    #[test]
    fn acks_reach_the_shared_counters_once_flushed() {
        let Some(c) = credits() else { return };
        let mut a = Acks::new(c.clone());
        for f in [3, 3, 7, 3, 4095] {
            a.note(f);
        }
        a.note(4096); // no such flow: ignored
        assert_eq!(c.acked(3), 0, "nothing before the flush");
        a.flush();
        assert_eq!((c.acked(3), c.acked(7), c.acked(4095)), (3, 1, 1));
        a.note(3);
        a.flush();
        a.flush();
        assert_eq!(c.acked(3), 4);
        c.ack(7, 10);
        assert_eq!(c.acked(7), 11);
    }
}
