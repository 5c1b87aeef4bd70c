//! A port that damages what it receives, deterministically: one fault at
//! every `every`-th frame received (the frames numbered `first`,
//! `first + every`, ... from 0), so that tests assert exact counts. Sending
//! goes through untouched. Wraps any port; only the faulted frames are
//! copied.

use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc,
};

use super::{Port, Receive, RxFrame, RxTail, Transmit};
use crate::binding::{XskError, XskStats};

/// What happens to a faulted frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Never delivered.
    Drop,
    /// Delivered twice.
    Duplicate,
    /// Delivered after the frame that follows it (a frame that nothing
    /// follows is never delivered: fault one that something follows).
    Reorder,
    /// Cut to this many bytes.
    Truncate(usize),
    /// The first byte of the linerate header (its magic) flipped.
    Corrupt,
}

/// A port whose received frames suffer [`Fault`]s.
#[derive(Debug)]
pub struct Faults<P> {
    inner: P,
    fault: Fault,
    every: u64,
    first: u64,
    seen: u64,
    injected: Arc<AtomicU64>,
    /// A reordered frame waiting for the next one: bytes, length, buffers.
    held: Option<(Vec<u8>, usize, usize)>,
    scratch: Vec<u8>,
}

impl<P> Faults<P> {
    /// `fault` at frames `first`, `first + every`, ... of what `inner`
    /// receives.
    pub fn new(inner: P, fault: Fault, every: u64, first: u64) -> Self {
        Self {
            inner,
            fault,
            every: every.max(1),
            first,
            seen: 0,
            injected: Arc::new(AtomicU64::new(0)),
            held: None,
            scratch: Vec::new(),
        }
    }

    /// Frames faulted so far, readable after the port has moved into a
    /// worker's loop.
    pub fn injected(&self) -> Arc<AtomicU64> {
        self.injected.clone()
    }
}

impl<P: Port> Port for Faults<P> {
    fn stats(&self) -> Result<XskStats, XskError> {
        self.inner.stats()
    }
}

impl<P: Receive> Receive for Faults<P> {
    fn recv(&mut self, mut on_frame: impl FnMut(RxFrame<'_>)) -> usize {
        let Self {
            inner,
            fault,
            every,
            first,
            seen,
            injected,
            held,
            scratch,
        } = self;
        let got = inner.recv(|f| {
            let i = *seen;
            *seen += 1;
            if i < *first || (i - *first) % *every != 0 {
                on_frame(f);
                if let Some((b, len, bufs)) = held.take() {
                    // The held copy is of the first buffer: the others
                    // went back to the kernel with the batch.
                    on_frame(RxFrame {
                        head: &b,
                        len,
                        bufs,
                        tail: RxTail::NONE,
                    });
                }
                return;
            }
            injected.fetch_add(1, Ordering::Relaxed);
            match *fault {
                Fault::Drop => {}
                Fault::Duplicate => {
                    on_frame(f);
                    on_frame(f);
                }
                Fault::Reorder => *held = Some((f.head.to_vec(), f.len, f.bufs)),
                Fault::Truncate(to) => on_frame(RxFrame {
                    head: &f.head[..to.min(f.head.len())],
                    len: to.min(f.len),
                    bufs: f.bufs,
                    tail: RxTail::NONE,
                }),
                Fault::Corrupt => {
                    scratch.clear();
                    scratch.extend_from_slice(f.head);
                    let at = crate::frame::header_offset(scratch);
                    if let Some(b) = scratch.get_mut(at) {
                        *b ^= 0xff;
                    }
                    on_frame(RxFrame {
                        head: scratch,
                        len: f.len,
                        bufs: f.bufs,
                        tail: f.tail,
                    });
                }
            }
        });
        got
    }

    fn wake_if_needed(&mut self) -> Result<(), XskError> {
        self.inner.wake_if_needed()
    }

    fn busy_poll(&mut self) -> Result<(), XskError> {
        self.inner.busy_poll()
    }

    fn wait_readable(&mut self, timeout_ms: i32) -> Result<bool, XskError> {
        self.inner.wait_readable(timeout_ms)
    }

    fn overlong(&self) -> u64 {
        self.inner.overlong()
    }
}

impl<P: Transmit> Transmit for Faults<P> {
    type Frame<'a>
        = P::Frame<'a>
    where
        Self: 'a;

    fn send(&mut self, n: usize, fill: impl FnMut(&mut P::Frame<'_>)) -> usize {
        self.inner.send(n, fill)
    }

    fn reclaim(&mut self) -> usize {
        self.inner.reclaim()
    }

    fn in_flight_frames(&self) -> usize {
        self.inner.in_flight_frames()
    }

    fn tx_pending(&mut self) -> bool {
        self.inner.tx_pending()
    }

    fn needs_kick(&self) -> bool {
        self.inner.needs_kick()
    }

    fn kick_due(&mut self) -> bool {
        self.inner.kick_due()
    }

    fn kick(&mut self) -> Result<(), XskError> {
        self.inner.kick()
    }

    fn wait_writable(&mut self, timeout_ms: i32) -> Result<bool, XskError> {
        self.inner.wait_writable(timeout_ms)
    }
}
