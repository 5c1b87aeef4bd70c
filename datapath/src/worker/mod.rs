//! Pinned worker threads: one per (interface, queue), each owning its
//! socket and rings. Workers set themselves up in their own thread (the
//! network namespace and core are per thread), say so on a channel, then
//! run until told to stop, their deadline passes, or their frames are
//! all sent.

pub mod busy_poll;
mod counted;
mod error;
mod flows;
mod gen;
#[cfg(test)]
mod loopback;
mod outbox;
mod rr;
mod rx;
mod spawn;
pub(crate) mod transactions;
mod tx;
mod wait;

pub use counted::{spawn_counted, CountedWorkerConfig};
pub use error::WorkerError;
pub use flows::{FlowAccounting, FlowTable, RxSummary, MAX_FLOWS};
pub use gen::{spawn_gen, GenCredit, GenWorkerConfig, LinkDrops};
pub use rr::{
    spawn_client, spawn_client_on, spawn_responder, spawn_responder_on, RrSummary, RrWorkerConfig,
};
pub use rx::{spawn_rx, spawn_rx_on, OnBound, RxWorkerConfig};
pub(crate) use spawn::{publish_idle, spawn_with};
pub use spawn::{Placement, Ready, Setup, StopSignal, Worker};
pub use transactions::ClientConfig;
pub use tx::{
    spawn_tx, spawn_tx_on, MessageStamper, MixStamper, PlainStamper, Stamper, Stamping, TxSummary,
    TxWorkerConfig,
};
pub use wait::WaitMode;

pub use crate::latency::MAX_LATENCY_NS;
