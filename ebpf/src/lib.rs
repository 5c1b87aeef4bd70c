//! The XDP steering program and its loader.
//!
//! [`Steering`] loads the program, attaches it to one interface through a
//! bpf_link (native mode first, generic as fallback), registers AF_XDP
//! sockets per receive queue and reads the program's per-CPU counters.
//! Dropping it (or the process dying) detaches the program.
//!
//! [`Generator`] loads the in-kernel frame generator, which `BPF_PROG_RUN`
//! runs in live-frames mode to send frames without an skb or a copy.
//!
//! [`SoftirqClock`] counts each core's time in each softirq vector
//! (NET_RX, NET_TX: network work done outside any thread) from the
//! softirq tracepoints.

#![warn(missing_docs, unreachable_pub)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod attach;
mod error;
mod generator;
#[cfg(test)]
mod layout;
mod program;
mod softirq;
mod stats;
mod values;

pub use attach::{AttachMode, AttachPolicy};
pub use error::EbpfError;
pub use generator::{
    CreditMap, GenFlowCounters, GenMessage, GenRun, Generator, GeneratorConfig, CREDIT_FLOWS,
    MAX_LIVE_FRAME,
};
pub use program::{RxFlowCounters, Steering, SteeringConfig, MAX_QUEUES, RX_MAX_FLOWS};
pub use softirq::{SoftirqClock, SoftirqSample, VectorTime, VECTORS};
pub use stats::SteerStats;
