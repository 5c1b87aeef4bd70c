//! The AF_XDP layer: the only module that sees xsk-rs types, ring
//! descriptors or raw UMEM memory. Above it, workers use [`TxPort`] and
//! [`RxPort`], which move whole frames.

mod rx;
mod socket;
mod tx;

pub use rx::{RxFrame, RxPort};
pub use socket::{BindMode, SocketOptions, XskError, XskStats, ZeroCopy, CHUNK_DATA, CHUNK_SIZE};
pub use tx::TxPort;
