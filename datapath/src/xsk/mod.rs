//! The AF_XDP layer: the only module that sees xsk-rs types, ring
//! descriptors or raw UMEM memory. Above it, workers use [`TxPort`],
//! [`RxPort`] and [`DuplexPort`], which move whole frames.

/// What every port tells of its bound socket (`self.b`): huge pages,
/// bind mode, why zero-copy was not used, its statistics; and with
/// `receives`, what a receiving port does with its RX ring: its socket for
/// the XSKMAP, the fill ring's wake-up, waiting for frames.
macro_rules! bound_port {
    ($port:ty, receives) => {
        bound_port!($port);

        impl $port {
            /// The socket, for registering in the steering program's XSKMAP.
            pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
                self.b.fd()
            }

            /// In busy mode: gives the kernel a nudge when the fill ring
            /// asks for one (zero-copy drivers with need_wakeup).
            #[inline]
            pub fn wake_if_needed(&mut self) -> Result<(), $crate::binding::XskError> {
                self.b.wake_fill()
            }

            /// In a kernel busy-poll mode (zero-copy): recvfrom with
            /// MSG_DONTWAIT, which busy-polls the NAPI (xdpsock's `-B`).
            #[inline]
            pub fn busy_poll(&mut self) -> Result<(), $crate::xsk::XskError> {
                use std::os::fd::AsRawFd;
                match nix::sys::socket::recv(
                    self.b.fd().as_raw_fd(),
                    &mut [],
                    nix::sys::socket::MsgFlags::MSG_DONTWAIT,
                ) {
                    Ok(_) | Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EBUSY) => Ok(()),
                    Err(e) => Err($crate::xsk::XskError::from(std::io::Error::from(e))),
                }
            }

            /// Blocks in poll() until frames arrive or `timeout_ms` passes.
            pub fn wait_readable(
                &mut self,
                timeout_ms: i32,
            ) -> Result<bool, $crate::binding::XskError> {
                Ok(self.b.rx.poll(timeout_ms)?)
            }
        }
    };
    ($port:ty) => {
        impl $port {
            /// Whether the UMEM is on huge pages.
            pub fn huge_pages(&self) -> bool {
                self.b.huge_pages
            }

            /// How the socket was bound.
            pub fn mode(&self) -> $crate::binding::BindMode {
                self.b.mode
            }

            /// Why zero-copy was not used, when it was tried.
            pub fn fallback_reason(&self) -> Option<&str> {
                self.b.fallback_reason.as_deref()
            }

            /// XDP_STATISTICS of the socket.
            pub fn stats(&self) -> Result<$crate::binding::XskStats, $crate::binding::XskError> {
                self.b.stats()
            }
        }
    };
}

mod credit;
mod duplex;
mod rx;
mod socket;
mod tx;

pub use credit::{Acks, Credits};
pub use duplex::DuplexPort;
pub use rx::{RxFrame, RxPort, RxTail};
pub use socket::{huge_pages, HugePages, SocketOptions, ZeroCopy};
pub use tx::{TxFrame, TxPort, KICK_BATCH, KICK_LOW_WATER};

// Generic notions and the chunk geometry, re-exported for the callers that
// name them through this module.
pub use crate::binding::{BindMode, XskError, XskStats};
pub use crate::geometry::{chunk_data, chunk_size_for, CHUNK_DATA, CHUNK_SIZE, SMALL_CHUNK_SIZE};
