//! Receiving: every chunk of the UMEM starts in the fill ring; received
//! descriptors are handed to the caller a whole frame at a time and go
//! straight back to the fill ring. A frame whose descriptors straddle two
//! batches (multi-buffer) is carried over to the next batch.

use std::os::fd::{AsRawFd, BorrowedFd};

use xsk_rs::FrameDesc;

use super::socket::{BindMode, Bound, SocketOptions, XskError, XskStats};

/// Descriptors one frame may span (the kernel's MAX_SKB_FRAGS + 1).
const MAX_FRAGS: usize = 18;

/// A receiving AF_XDP socket.
pub struct RxPort {
    b: Bound,
    batch: usize,
    descs: Vec<FrameDesc>,
    /// Leading descriptors of `descs` that belong to an unfinished frame.
    carry: usize,
    /// Frames given up on: more descriptors than a frame can have.
    pub overlong: u64,
}

impl std::fmt::Debug for RxPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RxPort")
            .field("batch", &self.batch)
            .field("carry", &self.carry)
            .finish()
    }
}

/// One received frame as the caller sees it.
#[derive(Debug, Clone, Copy)]
pub struct RxFrame<'a> {
    /// The first descriptor's bytes (all headers are there).
    pub head: &'a [u8],
    /// Total length of the frame over all its descriptors.
    pub len: usize,
    /// Descriptors the frame spanned.
    pub bufs: usize,
}

impl RxPort {
    /// Binds a socket, its UMEM twice the RX ring, and fills the fill ring
    /// with every chunk before any frame is steered to it.
    pub fn new(opts: &SocketOptions, batch: usize) -> Result<Self, XskError> {
        let ring = opts.ring_size.max(64).next_power_of_two();
        let chunks = ring * 2;
        let b = Bound::new(opts, chunks, ring, 64)?;
        let batch = batch.clamp(1, ring as usize);
        let mut port = Self {
            descs: vec![FrameDesc::default(); batch + MAX_FRAGS],
            b,
            batch,
            carry: 0,
            overlong: 0,
        };
        // SAFETY: every chunk of the new UMEM is ours; none is in any ring.
        let filled = unsafe { port.b.fill.produce(&port.b.frames) };
        if filled != port.b.frames.len() {
            return Err(XskError::Config(format!(
                "fill ring took {filled} of {} chunks",
                port.b.frames.len()
            )));
        }
        Ok(port)
    }

    /// How the socket was bound.
    pub fn mode(&self) -> BindMode {
        self.b.mode
    }

    /// Why zero-copy was not used, when it was tried.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.b.fallback_reason.as_deref()
    }

    /// The socket, for registering in the steering program's XSKMAP.
    pub fn fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the descriptor stays open as long as `self.b` lives,
        // which outlives the returned borrow.
        unsafe { BorrowedFd::borrow_raw(self.b.rx.fd().as_raw_fd()) }
    }

    /// Receives up to one batch of descriptors and calls `on_frame` for
    /// every complete frame among them. Returns the number of frames.
    #[inline]
    pub fn recv(&mut self, mut on_frame: impl FnMut(RxFrame<'_>)) -> usize {
        let carry = self.carry;
        // SAFETY: the descriptors are only written by the call.
        let n = unsafe {
            self.b
                .rx
                .consume(&mut self.descs[carry..carry + self.batch])
        };
        if n == 0 {
            return 0;
        }
        let total = carry + n;
        let mut frames = 0;
        let mut start = 0;
        let mut len = 0;
        for i in 0..total {
            let d = &self.descs[i];
            len += d.lengths().data();
            if d.has_more_frames() && i + 1 - start < MAX_FRAGS {
                continue;
            }
            if d.has_more_frames() {
                self.overlong += 1;
            } else {
                // SAFETY: the descriptor came from the RX ring, so the kernel
                // has handed the chunk to us; it goes back to the fill ring
                // only after this borrow ends.
                let head = unsafe { self.b.umem.data(&self.descs[start]) };
                on_frame(RxFrame {
                    head: head.contents(),
                    len,
                    bufs: i + 1 - start,
                });
                frames += 1;
            }
            start = i + 1;
            len = 0;
        }
        // SAFETY: these chunks came from the RX ring and are no longer
        // borrowed; the fill ring holds every chunk, so it has room.
        let refilled = unsafe { self.b.fill.produce(&self.descs[..start]) };
        debug_assert_eq!(refilled, start);
        self.descs.copy_within(start..total, 0);
        self.carry = total - start;
        frames
    }

    /// In busy mode: gives the kernel a nudge when the fill ring asks for
    /// one (zero-copy drivers with need_wakeup).
    #[inline]
    pub fn wake_if_needed(&mut self) -> Result<(), XskError> {
        if self.b.fill.needs_wakeup() {
            self.b.fill.wakeup(self.b.rx.fd_mut(), 0)?;
        }
        Ok(())
    }

    /// Blocks in poll() until frames arrive or `timeout_ms` passes.
    pub fn wait_readable(&mut self, timeout_ms: i32) -> Result<bool, XskError> {
        Ok(self.b.rx.poll(timeout_ms)?)
    }

    /// XDP_STATISTICS of the socket.
    pub fn stats(&self) -> Result<XskStats, XskError> {
        self.b.stats()
    }
}
