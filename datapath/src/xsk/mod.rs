//! The AF_XDP layer: the only module that sees xsk-rs types, ring
//! descriptors or raw UMEM memory. Above it, workers use [`TxPort`],
//! [`RxPort`] and [`DuplexPort`], which move whole frames.

mod duplex;
mod rx;
mod socket;
mod tx;

pub use duplex::DuplexPort;
pub use rx::{RxFrame, RxPort};
pub use socket::{
    chunk_data, chunk_size_for, huge_pages, BindMode, HugePages, SocketOptions, XskError, XskStats,
    ZeroCopy, CHUNK_DATA, CHUNK_SIZE, SMALL_CHUNK_SIZE,
};
pub use tx::{TxFrame, TxPort, KICK_BATCH, KICK_LOW_WATER};
