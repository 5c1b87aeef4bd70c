//! The AF_XDP layer: the only module that sees xsk-rs types, ring
//! descriptors or raw UMEM memory. Above it, workers use [`TxPort`] and
//! [`RxPort`], which move whole frames.

mod socket;
mod rx;
mod tx;

pub use rx::{RxFrame, RxPort};
pub use socket::{BindMode, SocketOptions, XskError, XskStats, ZeroCopy, CHUNK_SIZE, CHUNK_DATA};
pub use tx::TxPort;
