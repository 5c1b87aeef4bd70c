//! The XDP steering program and its loader.
//!
//! [`Steering`] loads the program, attaches it to one interface through a
//! bpf_link (native mode first, generic as fallback), registers AF_XDP
//! sockets per receive queue and reads the program's per-CPU counters.
//! Dropping it (or the process dying) detaches the program.

#![warn(missing_docs, unreachable_pub)]

mod attach;
mod error;
#[cfg(test)]
mod layout;
mod program;
mod stats;

pub use attach::{AttachMode, AttachPolicy};
pub use error::EbpfError;
pub use program::{Steering, SteeringConfig, MAX_QUEUES};
pub use stats::SteerStats;
