//! Receiving: every RX chunk of the UMEM starts in the fill ring; received
//! descriptors are handed to the caller a whole frame at a time and go
//! straight back to the fill ring. A frame whose descriptors straddle two
//! batches (multi-buffer) is carried over to the next batch.

use std::os::fd::{AsRawFd, BorrowedFd};

use xsk_rs::{FillQueue, FrameDesc, RxQueue, Umem};

use super::socket::{Bound, SocketOptions};
use crate::binding::XskError;

/// Descriptors one frame may span (the kernel's MAX_SKB_FRAGS + 1).
const MAX_FRAGS: usize = 18;

/// One received frame as the caller sees it.
#[derive(Debug, Clone, Copy)]
pub struct RxFrame<'a> {
    /// The first descriptor's bytes (all headers are there).
    pub head: &'a [u8],
    /// Total length of the frame over all its descriptors.
    pub len: usize,
    /// Descriptors the frame spanned.
    pub bufs: usize,
    /// The buffers after the first (a multi-buffer frame's), read only by
    /// a receiver that verifies the whole datagram.
    pub tail: RxTail<'a>,
}

/// The buffers of a received frame after its first, in order: chunks the
/// kernel handed over in the same batch, borrowed no longer than the
/// frame.
#[derive(Clone, Copy)]
pub struct RxTail<'a> {
    umem: Option<&'a Umem>,
    descs: &'a [FrameDesc],
}

impl<'a> RxTail<'a> {
    /// No buffer after the first (a frame in one buffer, or one whose
    /// other buffers are not at hand).
    pub const NONE: RxTail<'static> = RxTail {
        umem: None,
        descs: &[],
    };

    /// The buffers' bytes, in order.
    pub fn bufs(self) -> impl Iterator<Item = &'a [u8]> {
        let umem = self.umem;
        self.descs.iter().filter_map(move |d| {
            // SAFETY: an `RxTail` is only made in `RxRing::recv` of
            // descriptors the RX ring handed over in this batch; their
            // chunks go back to the fill ring only after `on_frame`, and so
            // this borrow, has returned.
            umem.map(|u| unsafe { u.data(d) }.contents())
        })
    }

    /// How many buffers follow the first.
    pub fn len(&self) -> usize {
        self.descs.len()
    }

    /// Whether no buffer follows the first.
    pub fn is_empty(&self) -> bool {
        self.descs.is_empty()
    }
}

impl std::fmt::Debug for RxTail<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RxTail({} buffers)", self.descs.len())
    }
}

/// The RX half of a socket.
pub(super) struct RxRing {
    batch: usize,
    descs: Vec<FrameDesc>,
    /// Leading descriptors of `descs` that belong to an unfinished frame.
    carry: usize,
    /// Chunks the fill ring had no room for yet (retried first next time).
    unfilled: Vec<FrameDesc>,
    /// Frames given up on: more descriptors than a frame can have.
    pub(super) overlong: u64,
}

impl RxRing {
    /// Puts every chunk of `frames` in the fill ring.
    pub(super) fn new(
        fill: &mut FillQueue,
        frames: &[FrameDesc],
        batch: usize,
    ) -> Result<Self, XskError> {
        // SAFETY: every chunk given is ours; none is in any ring.
        let filled = unsafe { fill.produce(frames) };
        if filled != frames.len() {
            return Err(XskError::Config(format!(
                "fill ring took {filled} of {} chunks",
                frames.len()
            )));
        }
        Ok(Self {
            batch,
            descs: vec![FrameDesc::default(); batch + MAX_FRAGS],
            carry: 0,
            unfilled: Vec::with_capacity(batch + MAX_FRAGS),
            overlong: 0,
        })
    }

    /// Receives up to one batch of descriptors and calls `on_frame` for
    /// every complete frame among them. Returns the number of frames.
    #[inline]
    pub(super) fn recv(
        &mut self,
        rx: &mut RxQueue,
        fill: &mut FillQueue,
        umem: &Umem,
        mut on_frame: impl FnMut(RxFrame<'_>),
    ) -> usize {
        if !self.unfilled.is_empty() {
            // SAFETY: these chunks are ours (received earlier and not yet
            // given back); the fill ring takes what it has room for.
            let n = unsafe { fill.produce(&self.unfilled) };
            self.unfilled.drain(..n);
        }
        let carry = self.carry;
        // SAFETY: the descriptors are only written by the call.
        let n = unsafe { rx.consume(&mut self.descs[carry..carry + self.batch]) };
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
                let head = unsafe { umem.data(&self.descs[start]) };
                on_frame(RxFrame {
                    head: head.contents(),
                    len,
                    bufs: i + 1 - start,
                    tail: RxTail {
                        umem: Some(umem),
                        descs: &self.descs[start + 1..=i],
                    },
                });
                frames += 1;
            }
            start = i + 1;
            len = 0;
        }
        // The ring is twice the chunks, but the kernel may not have
        // published its consumer index yet: what does not fit now is kept
        // and given back on the next call.
        let refilled = if self.unfilled.is_empty() {
            // SAFETY: these chunks came from the RX ring and are no longer
            // borrowed.
            unsafe { fill.produce(&self.descs[..start]) }
        } else {
            0
        };
        self.unfilled
            .extend_from_slice(&self.descs[refilled..start]);
        self.descs.copy_within(start..total, 0);
        self.carry = total - start;
        frames
    }
}

/// A receiving AF_XDP socket.
pub struct RxPort {
    b: Bound,
    ring: RxRing,
}

bound_port!(RxPort, receives);

impl std::fmt::Debug for RxPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RxPort")
            .field("batch", &self.ring.batch)
            .finish()
    }
}

impl RxPort {
    /// Binds a socket, its UMEM twice the RX ring, and fills the fill ring
    /// with every chunk before any frame is steered to it.
    pub fn new(opts: &SocketOptions, batch: usize) -> Result<Self, XskError> {
        let ring = opts.ring_size.max(64).next_power_of_two();
        let mut b = Bound::new(opts, ring * 2, ring, 64)?;
        let frames = std::mem::take(&mut b.frames);
        let ring = RxRing::new(&mut b.fill, &frames, batch.clamp(1, ring as usize))?;
        Ok(Self { b, ring })
    }

    /// Frames given up on (more descriptors than a frame can have).
    pub fn overlong(&self) -> u64 {
        self.ring.overlong
    }

    /// Receives up to one batch and calls `on_frame` for each complete
    /// frame. Returns the number of frames.
    #[inline]
    pub fn recv(&mut self, on_frame: impl FnMut(RxFrame<'_>)) -> usize {
        self.ring
            .recv(&mut self.b.rx, &mut self.b.fill, &self.b.umem, on_frame)
    }
}

impl Bound {
    /// The socket's descriptor.
    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the descriptor stays open as long as `self` lives, which
        // outlives the returned borrow.
        unsafe { BorrowedFd::borrow_raw(self.rx.fd().as_raw_fd()) }
    }

    /// Wakes the driver for the fill ring when it asks.
    #[inline]
    pub(super) fn wake_fill(&mut self) -> Result<(), XskError> {
        if self.fill.needs_wakeup() {
            self.fill.wakeup(self.rx.fd_mut(), 0)?;
        }
        Ok(())
    }
}
