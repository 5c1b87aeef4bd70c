//! The AF_XDP ports behind the seam: every method delegates to the port's
//! own (inlined, so the loops compile to what they were).

use super::{FrameMut, Port, Receive, RxFrame, Transmit};
use crate::binding::{XskError, XskStats};
use crate::xsk::{DuplexPort, RxPort, TxFrame, TxPort};

impl FrameMut for TxFrame<'_> {
    #[inline]
    fn len(&self) -> usize {
        TxFrame::len(self)
    }

    #[inline]
    fn set_len(&mut self, len: usize) {
        TxFrame::set_len(self, len)
    }

    #[inline]
    fn head(&mut self) -> &mut [u8] {
        TxFrame::head(self)
    }
}

macro_rules! port {
    ($t:ty) => {
        impl Port for $t {
            fn stats(&self) -> Result<XskStats, XskError> {
                <$t>::stats(self)
            }
        }
    };
}

macro_rules! receive {
    ($t:ty) => {
        impl Receive for $t {
            #[inline]
            fn recv(&mut self, on_frame: impl FnMut(RxFrame<'_>)) -> usize {
                <$t>::recv(self, on_frame)
            }

            #[inline]
            fn wake_if_needed(&mut self) -> Result<(), XskError> {
                <$t>::wake_if_needed(self)
            }

            fn busy_poll(&mut self) -> Result<(), XskError> {
                <$t>::busy_poll(self)
            }

            fn wait_readable(&mut self, timeout_ms: i32) -> Result<bool, XskError> {
                <$t>::wait_readable(self, timeout_ms)
            }
        }
    };
}

port!(TxPort);
port!(RxPort);
port!(DuplexPort);
receive!(DuplexPort);

impl Receive for RxPort {
    #[inline]
    fn recv(&mut self, on_frame: impl FnMut(RxFrame<'_>)) -> usize {
        RxPort::recv(self, on_frame)
    }

    #[inline]
    fn wake_if_needed(&mut self) -> Result<(), XskError> {
        RxPort::wake_if_needed(self)
    }

    fn busy_poll(&mut self) -> Result<(), XskError> {
        RxPort::busy_poll(self)
    }

    fn wait_readable(&mut self, timeout_ms: i32) -> Result<bool, XskError> {
        RxPort::wait_readable(self, timeout_ms)
    }

    fn overlong(&self) -> u64 {
        RxPort::overlong(self)
    }
}

impl Transmit for TxPort {
    type Frame<'a> = TxFrame<'a>;

    #[inline]
    fn send(&mut self, n: usize, fill: impl FnMut(&mut TxFrame<'_>)) -> usize {
        TxPort::send(self, n, fill)
    }

    #[inline]
    fn reclaim(&mut self) -> usize {
        TxPort::reclaim(self)
    }

    #[inline]
    fn in_flight_frames(&self) -> usize {
        TxPort::in_flight_frames(self)
    }

    #[inline]
    fn tx_pending(&mut self) -> bool {
        TxPort::tx_pending(self)
    }

    #[inline]
    fn needs_kick(&self) -> bool {
        TxPort::needs_kick(self)
    }

    #[inline]
    fn kick_due(&mut self) -> bool {
        TxPort::kick_due(self)
    }

    #[inline]
    fn kick(&mut self) -> Result<(), XskError> {
        TxPort::kick(self)
    }

    fn wait_writable(&mut self, timeout_ms: i32) -> Result<bool, XskError> {
        TxPort::wait_writable(self, timeout_ms)
    }
}

impl Transmit for DuplexPort {
    type Frame<'a> = TxFrame<'a>;

    #[inline]
    fn send(&mut self, n: usize, fill: impl FnMut(&mut TxFrame<'_>)) -> usize {
        DuplexPort::send(self, n, fill)
    }

    #[inline]
    fn reclaim(&mut self) -> usize {
        DuplexPort::reclaim(self)
    }

    #[inline]
    fn in_flight_frames(&self) -> usize {
        DuplexPort::in_flight_frames(self)
    }

    #[inline]
    fn tx_pending(&mut self) -> bool {
        DuplexPort::tx_pending(self)
    }

    #[inline]
    fn kick(&mut self) -> Result<(), XskError> {
        DuplexPort::kick(self)
    }

    fn wait_writable(&mut self, timeout_ms: i32) -> Result<bool, XskError> {
        // The duplex loops wait on their RX side; a duplex port's TX slots
        // free up as the kernel completes them.
        DuplexPort::wait_readable(self, timeout_ms)
    }
}
