//! An in-memory port: a bounded queue of frames between a sending end and
//! a receiving end, for running the workers' loops without a socket (and
//! without root). A full queue pushes back as a full ring does: the sender
//! queues nothing until the receiver takes frames off.
//!
//! A frame is sent from one of the sender's slots (each keeps the bytes of
//! the last frame it sent, as a UMEM slot does) and copied onto the link in
//! a buffer taken from a pool, so a long run allocates nothing per frame.
//! It completes as soon as it is on the link.

use std::{
    collections::VecDeque,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Condvar, Mutex, MutexGuard,
    },
    time::Duration,
};

use super::{FrameMut, Port, Receive, RxFrame, RxTail, Transmit};
use crate::binding::XskError;

#[derive(Debug, Default)]
struct State {
    frames: VecDeque<Vec<u8>>,
    spare: Vec<Vec<u8>>,
    /// The sending end is gone: nothing more will come.
    closed: bool,
}

#[derive(Debug)]
struct Link {
    state: Mutex<State>,
    changed: Condvar,
    capacity: usize,
}

impl Link {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test thread poisons the lock; the queue is still whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait_until(&self, timeout_ms: i32, ready: impl Fn(&State) -> bool) -> bool {
        let s = self.lock();
        let timeout = Duration::from_millis(timeout_ms.max(0) as u64);
        let (s, _) = self
            .changed
            .wait_timeout_while(s, timeout, |s| !ready(s))
            .unwrap_or_else(|e| e.into_inner());
        ready(&s)
    }
}

/// The sending end of a loopback link.
#[derive(Debug)]
pub struct LoopTx {
    link: Arc<Link>,
    slots: Vec<Vec<u8>>,
    next: usize,
    max_len: usize,
    completed: usize,
    /// Buffers being filled outside the link's lock (the pool's, reused).
    outgoing: Vec<Vec<u8>>,
}

/// The receiving end of a loopback link.
#[derive(Debug)]
pub struct LoopRx {
    link: Arc<Link>,
    batch: usize,
    taken: Vec<Vec<u8>>,
    stop_when_drained: Option<Arc<AtomicBool>>,
}

/// A link holding at most `capacity` frames; the sender's slots hold
/// `template` (frames up to `max_len` bytes, at least the template's);
/// the receiver takes up to `batch` frames a call.
pub fn link(template: &[u8], max_len: usize, capacity: usize, batch: usize) -> (LoopTx, LoopRx) {
    let capacity = capacity.max(1);
    let link = Arc::new(Link {
        state: Mutex::new(State::default()),
        changed: Condvar::new(),
        capacity,
    });
    let slots = 64.min(capacity);
    let tx = LoopTx {
        link: link.clone(),
        slots: vec![template.to_vec(); slots],
        next: 0,
        max_len: max_len.max(template.len()),
        completed: 0,
        outgoing: Vec::with_capacity(slots),
    };
    let rx = LoopRx {
        link,
        batch: batch.max(1),
        taken: Vec::with_capacity(batch.max(1)),
        stop_when_drained: None,
    };
    (tx, rx)
}

impl LoopTx {
    /// The same sending end with its slots holding `template` (frames up
    /// to `max_len` bytes, at least the template's): for a link made
    /// before the sender knew its frames (the receiver's end first).
    pub fn with_template(mut self, template: &[u8], max_len: usize) -> Self {
        for slot in &mut self.slots {
            slot.clear();
            slot.extend_from_slice(template);
        }
        self.max_len = max_len.max(template.len());
        self
    }
}

impl LoopRx {
    /// Sets `flag` once the sending end is gone and every frame it sent
    /// has been received: a worker's stop flag, so its loop ends when the
    /// link is drained.
    pub fn stop_when_drained(mut self, flag: Arc<AtomicBool>) -> Self {
        self.stop_when_drained = Some(flag);
        self
    }
}

impl Drop for LoopTx {
    fn drop(&mut self) {
        self.link.lock().closed = true;
        self.link.changed.notify_all();
    }
}

/// A frame in one of [`LoopTx`]'s slots.
#[derive(Debug)]
pub struct LoopFrame<'a> {
    buf: &'a mut Vec<u8>,
    max_len: usize,
}

impl FrameMut for LoopFrame<'_> {
    fn len(&self) -> usize {
        self.buf.len()
    }

    fn set_len(&mut self, len: usize) {
        self.buf.resize(len.min(self.max_len), 0);
    }

    fn head(&mut self) -> &mut [u8] {
        self.buf
    }
}

impl Port for LoopTx {}
impl Port for LoopRx {}

impl Transmit for LoopTx {
    type Frame<'a> = LoopFrame<'a>;

    fn send(&mut self, n: usize, mut fill: impl FnMut(&mut LoopFrame<'_>)) -> usize {
        // The room and the buffers under the lock; the frames are written
        // and copied outside it, so that a receiver is never held up by a
        // copy (16 senders of 9000-byte frames, copying under the lock, kept
        // their receivers from the links for most of a window). This is the
        // link's only producer: the room only grows until the frames go on.
        let mut s = self.link.lock();
        let n = n
            .min(self.link.capacity - s.frames.len())
            .min(self.slots.len());
        if n == 0 {
            return 0;
        }
        let spare = s.spare.len();
        self.outgoing.extend(s.spare.drain(spare - n.min(spare)..));
        drop(s);
        self.outgoing.resize_with(n, Vec::new);
        for b in &mut self.outgoing {
            let slot = &mut self.slots[self.next];
            fill(&mut LoopFrame {
                buf: slot,
                max_len: self.max_len,
            });
            b.clear();
            b.extend_from_slice(slot);
            self.next = (self.next + 1) % self.slots.len();
        }
        self.link.lock().frames.extend(self.outgoing.drain(..));
        self.link.changed.notify_all();
        self.completed += n;
        n
    }

    fn reclaim(&mut self) -> usize {
        std::mem::take(&mut self.completed)
    }

    fn in_flight_frames(&self) -> usize {
        self.completed
    }

    fn tx_pending(&mut self) -> bool {
        false
    }

    fn kick(&mut self) -> Result<(), XskError> {
        Ok(())
    }

    fn wait_writable(&mut self, timeout_ms: i32) -> Result<bool, XskError> {
        let cap = self.link.capacity;
        Ok(self.link.wait_until(timeout_ms, |s| s.frames.len() < cap))
    }
}

impl Receive for LoopRx {
    fn recv(&mut self, mut on_frame: impl FnMut(RxFrame<'_>)) -> usize {
        let mut s = self.link.lock();
        let n = self.batch.min(s.frames.len());
        self.taken.extend(s.frames.drain(..n));
        if n == 0 && s.closed {
            if let Some(flag) = &self.stop_when_drained {
                flag.store(true, Ordering::Relaxed);
            }
        }
        drop(s);
        for b in &self.taken {
            on_frame(RxFrame {
                head: b,
                len: b.len(),
                bufs: 1,
                tail: RxTail::NONE,
            });
        }
        if n > 0 {
            self.link.lock().spare.append(&mut self.taken);
            self.link.changed.notify_all();
        }
        n
    }

    fn wake_if_needed(&mut self) -> Result<(), XskError> {
        Ok(())
    }

    fn wait_readable(&mut self, timeout_ms: i32) -> Result<bool, XskError> {
        Ok(self
            .link
            .wait_until(timeout_ms, |s| !s.frames.is_empty() || s.closed))
    }
}

/// Both ends of a request/response socket over two loopback links.
#[derive(Debug)]
pub struct LoopDuplex {
    tx: LoopTx,
    rx: LoopRx,
}

/// Two duplex ends joined by two links of `capacity` frames: `a` sends
/// from `a_template`'s slots to `b` and `b` from `b_template`'s to `a`
/// (frames up to `max_len` bytes).
pub fn duplex(
    a_template: &[u8],
    b_template: &[u8],
    max_len: usize,
    capacity: usize,
    batch: usize,
) -> (LoopDuplex, LoopDuplex) {
    let (a_tx, b_rx) = link(a_template, max_len, capacity, batch);
    let (b_tx, a_rx) = link(b_template, max_len, capacity, batch);
    (
        LoopDuplex { tx: a_tx, rx: a_rx },
        LoopDuplex { tx: b_tx, rx: b_rx },
    )
}

impl LoopDuplex {
    /// The same end with its sending slots holding `template` (frames up
    /// to `max_len` bytes): for an end made before its worker knew its
    /// frames (the responder makes both ends, the client takes its own).
    pub fn with_template(self, template: &[u8], max_len: usize) -> Self {
        Self {
            tx: self.tx.with_template(template, max_len),
            rx: self.rx,
        }
    }
}

impl Port for LoopDuplex {}

impl Transmit for LoopDuplex {
    type Frame<'a> = LoopFrame<'a>;

    fn send(&mut self, n: usize, fill: impl FnMut(&mut LoopFrame<'_>)) -> usize {
        self.tx.send(n, fill)
    }

    fn reclaim(&mut self) -> usize {
        self.tx.reclaim()
    }

    fn in_flight_frames(&self) -> usize {
        self.tx.in_flight_frames()
    }

    fn tx_pending(&mut self) -> bool {
        false
    }

    fn kick(&mut self) -> Result<(), XskError> {
        Ok(())
    }

    fn wait_writable(&mut self, timeout_ms: i32) -> Result<bool, XskError> {
        self.tx.wait_writable(timeout_ms)
    }
}

impl Receive for LoopDuplex {
    fn recv(&mut self, on_frame: impl FnMut(RxFrame<'_>)) -> usize {
        self.rx.recv(on_frame)
    }

    fn wake_if_needed(&mut self) -> Result<(), XskError> {
        Ok(())
    }

    fn wait_readable(&mut self, timeout_ms: i32) -> Result<bool, XskError> {
        self.rx.wait_readable(timeout_ms)
    }
}
