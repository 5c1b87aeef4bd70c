//! Sending: the UMEM is cut into slots of one frame each (one or more
//! chunks), every slot holds a copy of the frame template, and the hot
//! path patches only the header bytes of the slot it sends next.
//!
//! Slots are used in a cycle and the kernel completes TX descriptors in
//! the order they were queued, so counting completions is enough to know
//! which slots are free again; no completion address is looked up.

use std::{io::Write, os::fd::AsRawFd};

use xsk_rs::FrameDesc;

use super::socket::{BindMode, Bound, SocketOptions, XskError, XskStats, CHUNK_DATA};
use crate::frame::HEADER_OFFSET;
use crate::header::HEADER_LEN;

const XDP_PKT_CONTD: u32 = 1;

/// A sending AF_XDP socket with its frames prepared.
pub struct TxPort {
    b: Bound,
    /// Chunks per frame.
    frags: usize,
    /// Slots (frames) in the UMEM.
    slots: usize,
    /// Next slot to send.
    next: usize,
    /// Descriptors handed to the kernel and not yet completed.
    in_flight: usize,
    scratch: Vec<FrameDesc>,
}

impl std::fmt::Debug for TxPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxPort")
            .field("frags", &self.frags)
            .field("slots", &self.slots)
            .field("in_flight", &self.in_flight)
            .finish()
    }
}

impl TxPort {
    /// Binds a socket and writes `template` into every slot.
    pub fn new(opts: &SocketOptions, template: &[u8]) -> Result<Self, XskError> {
        if template.len() < HEADER_OFFSET + HEADER_LEN {
            return Err(XskError::Config(format!(
                "frame of {} bytes is shorter than its headers",
                template.len()
            )));
        }
        let frags = template.len().div_ceil(CHUNK_DATA);
        if frags > 1 && !opts.multi_buffer {
            return Err(XskError::Config(format!(
                "a {}-byte frame needs {frags} chunks of {CHUNK_DATA} bytes: enable multi-buffer",
                template.len()
            )));
        }
        let ring = opts.ring_size.max(64).next_power_of_two();
        let slots = (ring as usize / frags).max(1);
        let chunks = (slots * frags) as u32;
        let mut b = Bound::new(opts, chunks, 64, ring)?;
        let mut frames = std::mem::take(&mut b.frames);
        frames.truncate(slots * frags);
        for slot in frames.chunks_mut(frags) {
            let n = slot.len();
            for (j, (desc, piece)) in slot.iter_mut().zip(template.chunks(CHUNK_DATA)).enumerate() {
                // SAFETY: the frame belongs to this UMEM and has never been
                // handed to the kernel, so nothing else accesses it.
                let mut data = unsafe { b.umem.data_mut(desc) };
                data.cursor().write_all(piece).map_err(XskError::Io)?;
                desc.set_options(if j + 1 < n { XDP_PKT_CONTD } else { 0 });
            }
        }
        b.frames = frames;
        Ok(Self {
            b,
            frags,
            slots,
            next: 0,
            in_flight: 0,
            scratch: vec![FrameDesc::default(); ring as usize],
        })
    }

    /// How the socket was bound.
    pub fn mode(&self) -> BindMode {
        self.b.mode
    }

    /// Why zero-copy was not used, when it was tried.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.b.fallback_reason.as_deref()
    }

    /// Descriptors (chunks) per frame.
    pub fn frags_per_frame(&self) -> usize {
        self.frags
    }

    /// Frames that can be queued right now.
    pub fn free_frames(&self) -> usize {
        self.slots - self.in_flight / self.frags
    }

    /// Frames queued and not yet completed.
    pub fn in_flight_frames(&self) -> usize {
        self.in_flight / self.frags
    }

    /// Takes completed descriptors back; returns the number of frames
    /// completed.
    #[inline]
    pub fn reclaim(&mut self) -> usize {
        let want = self.in_flight.min(self.scratch.len());
        // SAFETY: the scratch descriptors are only written by the call;
        // the frames they name belong to this socket's UMEM.
        let n = unsafe { self.b.comp.consume(&mut self.scratch[..want]) };
        self.in_flight -= n;
        n / self.frags
    }

    /// Queues up to `n` frames. `patch` gets the 18 header bytes of each
    /// frame, in order, to set its sequence and time. Returns the number
    /// queued (less than `n` when the slots run out).
    #[inline]
    pub fn send(&mut self, n: usize, mut patch: impl FnMut(&mut [u8])) -> usize {
        let n = n.min(self.free_frames());
        let mut done = 0;
        while done < n {
            // Frames up to the end of the slot array go in one produce call.
            let run = (n - done).min(self.slots - self.next);
            let first = self.next * self.frags;
            let last = first + run * self.frags;
            for slot in self.b.frames[first..last].chunks_mut(self.frags) {
                // SAFETY: this slot's descriptors are not in flight
                // (`free_frames` counted it free), so the kernel does not
                // read the frame while it is patched.
                let mut data = unsafe { self.b.umem.data_mut(&mut slot[0]) };
                patch(&mut data.contents_mut()[HEADER_OFFSET..HEADER_OFFSET + HEADER_LEN]);
            }
            // SAFETY: the descriptors name frames of this socket's UMEM.
            let queued = unsafe { self.b.tx.produce(&self.b.frames[first..last]) };
            if queued == 0 {
                break;
            }
            self.in_flight += queued;
            self.next = (self.next + run) % self.slots;
            done += run;
        }
        done
    }

    /// Tells the kernel to transmit what is queued, when it asks to be
    /// told (always in copy mode). EAGAIN and ENOBUFS are normal here.
    #[inline]
    pub fn kick(&mut self) -> Result<(), XskError> {
        if self.b.tx.needs_wakeup() {
            self.b.tx.wakeup()?;
        }
        Ok(())
    }

    /// Whether the TX ring asks for a wakeup.
    pub fn needs_kick(&self) -> bool {
        self.b.tx.needs_wakeup()
    }

    /// Blocks in poll() until the socket is writable or `timeout_ms`
    /// passes.
    pub fn wait_writable(&mut self, timeout_ms: i32) -> Result<bool, XskError> {
        Ok(self.b.tx.poll(timeout_ms)?)
    }

    /// XDP_STATISTICS of the socket.
    pub fn stats(&self) -> Result<XskStats, XskError> {
        self.b.stats()
    }

    /// The socket's descriptor.
    pub fn raw_fd(&self) -> i32 {
        self.b.tx.fd().as_raw_fd()
    }
}
