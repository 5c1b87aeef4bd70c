//! Sending: the UMEM's TX chunks are cut into slots of one frame each (one
//! or more chunks), every slot holds a copy of the frame template, and the
//! hot path patches only the header bytes (and, for messages, the length)
//! of the slot it sends next.
//!
//! Slots are used in a cycle and the kernel completes TX descriptors in
//! the order they were queued, so counting completed descriptors is enough
//! to know which slots are free again; no completion address is looked up.
//! When every slot is one chunk (frames up to a chunk's data), a completed
//! descriptor is a completed frame and nothing is kept per frame in flight;
//! only multi-buffer slots keep each in-flight frame's descriptor count.
//!
//! Descriptors are copied once, from the slot table into the TX ring, by
//! xsk-rs's `TxQueue::produce` (a slice of `FrameDesc`): xsk-rs 0.11 hands
//! out no slice of the ring itself (its `XskRingProd` and the reserve /
//! submit calls are private to the crate), so the slot's descriptors are
//! passed straight to `produce` (one call per run of consecutive slots)
//! rather than gathered into a scratch buffer first.

use std::{collections::VecDeque, io::Write, os::fd::AsRawFd};

use xsk_rs::{CompQueue, FrameDesc, TxQueue, Umem};

use super::socket::{Bound, SocketOptions};
use crate::binding::XskError;
use crate::frame::HEADER_OFFSET;
use crate::geometry::{chunk_data, CHUNK_DATA, CHUNK_SIZE};
use crate::header::HEADER_LEN;

const XDP_PKT_CONTD: u32 = 1;

/// One frame being prepared for sending: its first chunk's bytes (all the
/// headers) and its length.
pub struct TxFrame<'a> {
    umem: &'a Umem,
    descs: &'a mut [FrameDesc],
    used: usize,
}

impl TxFrame<'_> {
    /// The frame's length now (the template's, or the last one set).
    pub fn len(&self) -> usize {
        self.descs[..self.used]
            .iter()
            .map(|d| d.lengths().data())
            .sum()
    }

    /// Whether the frame is empty (never, once a template is written).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The largest length the slot holds.
    pub fn capacity(&self) -> usize {
        self.descs.len() * CHUNK_DATA
    }

    /// Sets the frame's length (bytes past the template's are whatever the
    /// slot holds). Clamped to [`Self::capacity`].
    pub fn set_len(&mut self, len: usize) {
        let len = len.min(self.capacity());
        let used = len.div_ceil(CHUNK_DATA).max(1);
        for (j, desc) in self.descs[..used].iter_mut().enumerate() {
            let piece = (len - (j * CHUNK_DATA).min(len)).min(CHUNK_DATA);
            // SAFETY: the slot is not in flight (the caller took it from the
            // free slots), so the kernel does not read these chunks.
            let mut data = unsafe { self.umem.data_mut(desc) };
            data.cursor().set_pos(piece);
            desc.set_options(if j + 1 < used { XDP_PKT_CONTD } else { 0 });
        }
        self.used = used;
    }

    /// The first chunk's bytes, up to the frame's length in that chunk.
    pub fn head(&mut self) -> &mut [u8] {
        // SAFETY: as in `set_len`: the slot is ours until it is queued.
        let mut data = unsafe { self.umem.data_mut(&mut self.descs[0]) };
        let contents = data.contents_mut();
        let (ptr, len) = (contents.as_mut_ptr(), contents.len());
        // SAFETY: `ptr..ptr+len` is the chunk's data, valid for the UMEM's
        // lifetime (longer than `self`), and `&mut self` makes this the only
        // access to it while the returned borrow lives.
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    }

    /// The 18 bytes of the linerate header.
    pub fn header(&mut self) -> &mut [u8] {
        &mut self.head()[HEADER_OFFSET..HEADER_OFFSET + HEADER_LEN]
    }
}

/// Descriptors worth a TX wakeup: the kernel's copy-mode transmit takes at
/// most 32 per call (TX_BATCH_SIZE in net/xdp/xsk.c).
pub const KICK_BATCH: usize = 32;
/// Below this many descriptors held by the kernel (handed and not yet
/// completed) a sender kicks whatever it has, so the path never idles.
pub const KICK_LOW_WATER: usize = 64;

/// The TX half of a socket: slots, their use and their completion.
pub(super) struct TxSlots {
    frames: Vec<FrameDesc>,
    frags: usize,
    slots: usize,
    next: usize,
    /// Descriptors in use by each slot's current frame.
    used: Vec<u16>,
    /// Descriptors of each in-flight frame, oldest first (multi-buffer
    /// slots only: with one chunk a slot, a descriptor is a frame).
    pending: VecDeque<u16>,
    /// Frames queued and not completed.
    frames_in_flight: usize,
    /// Completed descriptors not yet adding up to a whole frame.
    completed: usize,
    /// Descriptors handed to the kernel and not completed.
    in_flight: usize,
    scratch: Vec<FrameDesc>,
}

impl TxSlots {
    /// Writes `template` into every slot of `frames` (which must belong to
    /// `umem` and never have been handed to the kernel).
    pub(super) fn new(
        umem: &Umem,
        mut frames: Vec<FrameDesc>,
        template: &[u8],
        max_len: usize,
    ) -> Result<Self, XskError> {
        if template.len() < HEADER_OFFSET + HEADER_LEN {
            return Err(XskError::Config(format!(
                "frame of {} bytes is shorter than its headers",
                template.len()
            )));
        }
        let max_len = max_len.max(template.len());
        let frags = max_len.div_ceil(CHUNK_DATA);
        let slots = frames.len() / frags;
        if slots == 0 {
            return Err(XskError::Config("no UMEM chunk for sending".into()));
        }
        frames.truncate(slots * frags);
        let used = template.len().div_ceil(CHUNK_DATA);
        for slot in frames.chunks_mut(frags) {
            for (desc, piece) in slot.iter_mut().zip(template.chunks(CHUNK_DATA)) {
                // SAFETY: the frame belongs to this UMEM and has never been
                // handed to the kernel, so nothing else accesses it.
                let mut data = unsafe { umem.data_mut(desc) };
                data.cursor().write_all(piece).map_err(XskError::Io)?;
            }
            for (j, desc) in slot[..used].iter_mut().enumerate() {
                desc.set_options(if j + 1 < used { XDP_PKT_CONTD } else { 0 });
            }
        }
        Ok(Self {
            scratch: vec![FrameDesc::default(); frames.len()],
            frames,
            frags,
            slots,
            next: 0,
            used: vec![used as u16; slots],
            pending: VecDeque::with_capacity(if frags > 1 { slots } else { 0 }),
            frames_in_flight: 0,
            completed: 0,
            in_flight: 0,
        })
    }

    pub(super) fn free_frames(&self) -> usize {
        self.slots - self.frames_in_flight
    }

    pub(super) fn in_flight_frames(&self) -> usize {
        self.frames_in_flight
    }

    pub(super) fn max_frags(&self) -> usize {
        self.frags
    }

    /// Takes completed descriptors back; returns the frames completed.
    #[inline]
    pub(super) fn reclaim(&mut self, comp: &mut CompQueue) -> usize {
        let want = self.in_flight.min(self.scratch.len());
        // SAFETY: the scratch descriptors are only written by the call.
        let n = unsafe { comp.consume(&mut self.scratch[..want]) };
        self.in_flight -= n;
        if self.frags == 1 {
            self.frames_in_flight -= n;
            return n;
        }
        self.completed += n;
        let mut frames = 0;
        while let Some(&d) = self.pending.front() {
            if self.completed < d as usize {
                break;
            }
            self.completed -= d as usize;
            self.pending.pop_front();
            frames += 1;
        }
        self.frames_in_flight -= frames;
        frames
    }

    /// Prepares up to `n` frames with `fill` and queues them; returns the
    /// number queued.
    #[inline]
    pub(super) fn send(
        &mut self,
        tx: &mut TxQueue,
        umem: &Umem,
        n: usize,
        fill: impl FnMut(&mut TxFrame<'_>),
    ) -> usize {
        let n = n.min(self.free_frames());
        if n == 0 {
            return 0;
        }
        let queued = if self.frags == 1 {
            self.send_single(tx, umem, n, fill)
        } else {
            self.send_multi(tx, umem, n, fill)
        };
        self.in_flight += queued;
        self.frames_in_flight += n;
        n
    }

    /// One chunk a slot: the slots' descriptors go to the ring from the
    /// slot table itself (one `produce` per run of slots before the table
    /// wraps), with no copy in between; returns the descriptors queued.
    #[inline]
    fn send_single(
        &mut self,
        tx: &mut TxQueue,
        umem: &Umem,
        n: usize,
        mut fill: impl FnMut(&mut TxFrame<'_>),
    ) -> usize {
        let mut queued = 0;
        let mut left = n;
        while left > 0 {
            let start = self.next;
            let run = left.min(self.slots - start);
            for desc in &mut self.frames[start..start + run] {
                let mut frame = TxFrame {
                    umem,
                    descs: std::slice::from_mut(desc),
                    used: 1,
                };
                fill(&mut frame);
            }
            // SAFETY: the descriptors name frames of this socket's UMEM,
            // and the TX ring is as large as the UMEM's TX chunks, so it
            // has room.
            let q = unsafe { tx.produce(&self.frames[start..start + run]) };
            debug_assert_eq!(q, run, "TX ring smaller than the slots");
            queued += q;
            left -= run;
            self.next = if start + run == self.slots {
                0
            } else {
                start + run
            };
        }
        queued
    }

    /// Slots of several chunks: each frame's descriptors in use are
    /// gathered (a frame may use fewer than its slot holds) and queued
    /// once per batch; returns the descriptors queued.
    #[inline]
    fn send_multi(
        &mut self,
        tx: &mut TxQueue,
        umem: &Umem,
        n: usize,
        mut fill: impl FnMut(&mut TxFrame<'_>),
    ) -> usize {
        let mut m = 0;
        for _ in 0..n {
            let slot = self.next;
            let descs = &mut self.frames[slot * self.frags..(slot + 1) * self.frags];
            let mut frame = TxFrame {
                umem,
                descs,
                used: self.used[slot] as usize,
            };
            fill(&mut frame);
            let used = frame.used;
            self.used[slot] = used as u16;
            self.scratch[m..m + used].copy_from_slice(&frame.descs[..used]);
            m += used;
            self.pending.push_back(used as u16);
            self.next = if slot + 1 == self.slots { 0 } else { slot + 1 };
        }
        // SAFETY: the descriptors name frames of this socket's UMEM, and the
        // TX ring is as large as the UMEM's TX chunks, so it has room.
        let queued = unsafe { tx.produce(&self.scratch[..m]) };
        debug_assert_eq!(queued, m, "TX ring smaller than the slots");
        queued
    }
}

/// A sending AF_XDP socket with its frames prepared.
pub struct TxPort {
    b: Bound,
    slots: TxSlots,
    /// The last kick moved nothing: the path is full (veth pushes back).
    stalled: bool,
    /// Descriptors completed since the last kick.
    completed_since_kick: usize,
}

bound_port!(TxPort);

impl std::fmt::Debug for TxPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxPort")
            .field("frags", &self.slots.frags)
            .field("slots", &self.slots.slots)
            .finish()
    }
}

impl TxPort {
    /// Binds a socket and writes `template` into every slot; slots hold
    /// frames up to `max_len` bytes (at least the template's length).
    pub fn new(opts: &SocketOptions, template: &[u8], max_len: usize) -> Result<Self, XskError> {
        let frags = max_len.max(template.len()).div_ceil(CHUNK_DATA);
        check_multi_buffer(opts, frags, max_len)?;
        let ring = opts.ring_size.max(64).next_power_of_two();
        let chunks = ((ring as usize / frags).max(1) * frags) as u32;
        let mut b = Bound::new(opts, chunks, 64, ring.max(chunks.next_power_of_two()))?;
        let frames = std::mem::take(&mut b.frames);
        let slots = TxSlots::new(&b.umem, frames, template, max_len)?;
        Ok(Self {
            b,
            slots,
            stalled: false,
            completed_since_kick: 0,
        })
    }

    /// Descriptors (chunks) a frame may span.
    pub fn frags_per_frame(&self) -> usize {
        self.slots.max_frags()
    }

    /// Frames that can be queued right now.
    pub fn free_frames(&self) -> usize {
        self.slots.free_frames()
    }

    /// Frames queued and not yet completed.
    pub fn in_flight_frames(&self) -> usize {
        self.slots.in_flight_frames()
    }

    /// Takes completed descriptors back; returns the frames completed.
    #[inline]
    pub fn reclaim(&mut self) -> usize {
        let before = self.slots.in_flight;
        let frames = self.slots.reclaim(&mut self.b.comp);
        self.completed_since_kick += before - self.slots.in_flight;
        frames
    }

    /// Queues up to `n` frames, each prepared by `fill`; returns the number
    /// queued (less than `n` when the slots run out).
    #[inline]
    pub fn send(&mut self, n: usize, fill: impl FnMut(&mut TxFrame<'_>)) -> usize {
        self.slots.send(&mut self.b.tx, &self.b.umem, n, fill)
    }

    /// Tells the kernel to transmit what is queued, when it asks to be
    /// told (always in copy mode). EAGAIN and ENOBUFS are normal here.
    #[inline]
    pub fn kick(&mut self) -> Result<(), XskError> {
        let before = self.b.tx_ring_pending();
        let r = self.b.kick();
        self.stalled = before > 0 && self.b.tx_ring_pending() >= before;
        self.completed_since_kick = 0;
        r
    }

    /// Whether frames wait in the TX ring for the kernel to take them.
    #[inline]
    pub fn tx_pending(&mut self) -> bool {
        self.b.tx_pending()
    }

    /// Whether the TX ring asks for a wakeup.
    pub fn needs_kick(&self) -> bool {
        self.b.tx.needs_wakeup()
    }

    /// Whether a wakeup is worth its syscall now: the ring asks for one,
    /// and either a kernel batch ([`KICK_BATCH`] descriptors, what copy mode
    /// sends per call) waits in the TX ring, or the kernel holds fewer than
    /// [`KICK_LOW_WATER`] descriptors and would soon run dry. Without it a
    /// sender that refills as completions trickle in makes one syscall per
    /// frame or two (measured: 1.1 M sendto for 1.28 M frames). After a
    /// kick that moved nothing (the path pushes back) the next waits until
    /// a kernel batch has completed.
    #[inline]
    pub fn kick_due(&mut self) -> bool {
        if !self.b.tx.needs_wakeup() {
            return false;
        }
        let pending = self.b.tx_ring_pending();
        if pending == 0 {
            return false;
        }
        let held = self.slots.in_flight.saturating_sub(pending);
        if self.stalled && held > 0 && self.completed_since_kick < KICK_BATCH {
            // The last kick found the path full: another one now would
            // only contend with the receiver for the completion lock.
            return false;
        }
        pending >= KICK_BATCH || held < KICK_LOW_WATER
    }

    /// Blocks in poll() until the socket is writable or `timeout_ms`
    /// passes.
    pub fn wait_writable(&mut self, timeout_ms: i32) -> Result<bool, XskError> {
        Ok(self.b.tx.poll(timeout_ms)?)
    }

    /// The socket's descriptor.
    pub fn raw_fd(&self) -> i32 {
        self.b.tx.fd().as_raw_fd()
    }
}

pub(super) fn check_multi_buffer(
    opts: &SocketOptions,
    frags: usize,
    len: usize,
) -> Result<(), XskError> {
    if frags > 1 && !opts.multi_buffer {
        return Err(XskError::Config(format!(
            "a {len}-byte frame needs {frags} chunks of {CHUNK_DATA} bytes: enable multi-buffer"
        )));
    }
    if frags > 1 && opts.chunk_size != CHUNK_SIZE {
        return Err(XskError::Config(format!(
            "multi-buffer frames are cut into {CHUNK_SIZE}-byte chunks, not {}",
            opts.chunk_size
        )));
    }
    if frags == 1 && len > chunk_data(opts.chunk_size) {
        return Err(XskError::Config(format!(
            "a {len}-byte frame does not fit a {}-byte UMEM chunk ({} bytes of data): \
             use {CHUNK_SIZE}-byte chunks",
            opts.chunk_size,
            chunk_data(opts.chunk_size)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xsk::{ZeroCopy, SMALL_CHUNK_SIZE};

    fn opts(chunk_size: u32, multi_buffer: bool) -> SocketOptions {
        SocketOptions {
            iface: "x".into(),
            queue: 0,
            ring_size: 64,
            zero_copy: ZeroCopy::Off,
            multi_buffer,
            chunk_size,
        }
    }

    #[test]
    fn frames_must_fit_the_chunks() {
        assert!(check_multi_buffer(&opts(SMALL_CHUNK_SIZE, false), 1, 1514).is_ok());
        assert!(check_multi_buffer(&opts(SMALL_CHUNK_SIZE, false), 1, 1792).is_ok());
        let e = check_multi_buffer(&opts(SMALL_CHUNK_SIZE, false), 1, 1793).unwrap_err();
        assert!(
            e.to_string()
                .contains("does not fit a 2048-byte UMEM chunk"),
            "{e}"
        );
        assert!(check_multi_buffer(&opts(CHUNK_SIZE, false), 1, 3840).is_ok());
        let e = check_multi_buffer(&opts(CHUNK_SIZE, false), 3, 9014).unwrap_err();
        assert!(e.to_string().contains("enable multi-buffer"), "{e}");
        assert!(check_multi_buffer(&opts(CHUNK_SIZE, true), 3, 9014).is_ok());
        let e = check_multi_buffer(&opts(SMALL_CHUNK_SIZE, true), 3, 9014).unwrap_err();
        assert!(e.to_string().contains("4096-byte chunks"), "{e}");
    }
}
