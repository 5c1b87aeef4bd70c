//! The port seam: what the workers' hot loops ([`crate::worker`]'s sender,
//! receiver and request/response loops) do with a port, as smoltcp's
//! `phy::Device` is for its stack. [`Transmit`] prepares frames in place,
//! queues them, kicks and reaps completions; [`Receive`] hands received
//! frames over a batch at a time and waits for more; [`Port`] is what both
//! report at the end.
//!
//! Implemented by the AF_XDP ports ([`crate::xsk::TxPort`],
//! [`crate::xsk::RxPort`], [`crate::xsk::DuplexPort`], in `xsk`
//! by delegation to their own methods), by an in-memory [`loopback`] (no
//! socket, no root), and by [`faults::Faults`], which wraps any port and
//! drops, duplicates, reorders, truncates or corrupts received frames.
//! The loops are generic over the traits (monomorphized): no virtual call,
//! allocation or copy per frame is added on the AF_XDP path.

pub mod faults;
pub mod loopback;
mod xsk;

use crate::binding::{XskError, XskStats};
pub use crate::xsk::{RxFrame, RxTail};

/// One frame being prepared for sending, in its TX slot: the slot keeps
/// the bytes of the last frame sent from it (first the template), so the
/// hot path writes only what changes.
pub trait FrameMut {
    /// The frame's length now.
    fn len(&self) -> usize;
    /// Whether the frame is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Sets the frame's length (clamped to what the slot holds).
    fn set_len(&mut self, len: usize);
    /// The first buffer's bytes (every header), up to the frame's length.
    fn head(&mut self) -> &mut [u8];
}

/// What every port reports.
pub trait Port {
    /// The socket's XDP_STATISTICS (zeros for ports with no socket).
    fn stats(&self) -> Result<XskStats, XskError> {
        Ok(XskStats::default())
    }
}

/// The sending side of a port.
pub trait Transmit: Port {
    /// A frame being prepared in its slot.
    type Frame<'a>: FrameMut
    where
        Self: 'a;

    /// Prepares up to `n` frames with `fill` and queues them; returns the
    /// number queued (fewer when the slots or the ring run out).
    fn send(&mut self, n: usize, fill: impl FnMut(&mut Self::Frame<'_>)) -> usize;
    /// Takes completed frames back; returns how many completed.
    fn reclaim(&mut self) -> usize;
    /// Frames queued and not yet completed.
    fn in_flight_frames(&self) -> usize;
    /// Whether queued frames wait for the other end to take them.
    fn tx_pending(&mut self) -> bool;
    /// Whether the other end asks for a wakeup.
    fn needs_kick(&self) -> bool {
        false
    }
    /// Whether a wakeup is worth its syscall now (see
    /// [`crate::xsk::TxPort::kick_due`]).
    fn kick_due(&mut self) -> bool {
        self.tx_pending()
    }
    /// Tells the other end to take what is queued.
    fn kick(&mut self) -> Result<(), XskError>;
    /// Waits until a slot may be free or `timeout_ms` passes.
    fn wait_writable(&mut self, timeout_ms: i32) -> Result<bool, XskError>;
}

/// The receiving side of a port.
pub trait Receive: Port {
    /// Receives up to one batch and calls `on_frame` for each complete
    /// frame. Returns the number of frames.
    fn recv(&mut self, on_frame: impl FnMut(RxFrame<'_>)) -> usize;
    /// In busy mode: nudges the other end when it asks for it.
    fn wake_if_needed(&mut self) -> Result<(), XskError>;
    /// In a kernel busy-poll mode: lets the kernel poll the NAPI
    /// (recvfrom with MSG_DONTWAIT on an AF_XDP socket, xdpsock's `-B`).
    fn busy_poll(&mut self) -> Result<(), XskError> {
        self.wake_if_needed()
    }
    /// Waits until frames arrive or `timeout_ms` passes.
    fn wait_readable(&mut self, timeout_ms: i32) -> Result<bool, XskError>;
    /// Frames given up on (more buffers than a frame can have).
    fn overlong(&self) -> u64 {
        0
    }
}
