//! A socket that both receives and sends on one queue, as a request/response
//! client or responder does: the UMEM's chunks are split between the fill
//! ring and the TX slots.

use super::{
    rx::{RxFrame, RxRing},
    socket::{Bound, SocketOptions},
    tx::{check_multi_buffer, TxFrame, TxSlots},
};
use crate::{binding::XskError, geometry::CHUNK_DATA};

/// A receiving and sending AF_XDP socket.
pub struct DuplexPort {
    b: Bound,
    rx: RxRing,
    tx: TxSlots,
}

bound_port!(DuplexPort, receives);

impl std::fmt::Debug for DuplexPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DuplexPort").finish()
    }
}

impl DuplexPort {
    /// Binds a socket whose RX side has `opts.ring_size` descriptors (and
    /// twice as many chunks) and whose TX side has `tx_ring` descriptors,
    /// with `template` written in every TX slot (frames up to `max_len`).
    pub fn new(
        opts: &SocketOptions,
        tx_ring: u32,
        batch: usize,
        template: &[u8],
        max_len: usize,
    ) -> Result<Self, XskError> {
        let frags = max_len.max(template.len()).div_ceil(CHUNK_DATA);
        check_multi_buffer(opts, frags, max_len)?;
        let rx_ring = opts.ring_size.max(64).next_power_of_two();
        let tx_ring = tx_ring
            .max(64)
            .next_power_of_two()
            .max(frags.next_power_of_two() as u32);
        let rx_chunks = rx_ring * 2;
        let tx_chunks = (tx_ring as usize / frags).max(1) * frags;
        let mut b = Bound::new(opts, rx_chunks + tx_chunks as u32, rx_ring, tx_ring)?;
        let mut frames = std::mem::take(&mut b.frames);
        let tx_frames = frames.split_off(rx_chunks as usize);
        let rx = RxRing::new(&mut b.fill, &frames, batch.clamp(1, rx_ring as usize))?;
        let tx = TxSlots::new(&b.umem, tx_frames, template, max_len)?;
        Ok(Self { b, rx, tx })
    }

    /// Receives up to one batch; see [`super::RxPort::recv`].
    #[inline]
    pub fn recv(&mut self, on_frame: impl FnMut(RxFrame<'_>)) -> usize {
        self.rx
            .recv(&mut self.b.rx, &mut self.b.fill, &self.b.umem, on_frame)
    }

    /// Frames that can be queued right now.
    pub fn free_frames(&self) -> usize {
        self.tx.free_frames()
    }

    /// Frames queued and not yet completed.
    pub fn in_flight_frames(&self) -> usize {
        self.tx.in_flight_frames()
    }

    /// Takes completed TX descriptors back; returns the frames completed.
    #[inline]
    pub fn reclaim(&mut self) -> usize {
        self.tx.reclaim(&mut self.b.comp)
    }

    /// Queues up to `n` frames prepared by `fill`; returns the number queued.
    #[inline]
    pub fn send(&mut self, n: usize, fill: impl FnMut(&mut TxFrame<'_>)) -> usize {
        self.tx.send(&mut self.b.tx, &self.b.umem, n, fill)
    }

    /// Whether frames wait in the TX ring for the kernel to take them.
    #[inline]
    pub fn tx_pending(&mut self) -> bool {
        self.b.tx_pending()
    }

    /// Kicks the kernel to transmit, when it asks.
    #[inline]
    pub fn kick(&mut self) -> Result<(), XskError> {
        self.b.kick()
    }
}
