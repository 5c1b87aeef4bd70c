//! linerate's data path: AF_XDP sockets, frame templates, sequence
//! accounting and the pinned worker threads that move frames.
//!
//! Control plans a run and hands workers their configuration; workers move
//! frames and publish counters ([`stats::WorkerCounters`]) that control
//! samples. Nothing here knows about sweeps, reports or the CLI.

#![warn(missing_docs, unreachable_pub)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod binding;
pub mod capture;
pub mod clock;
pub mod frame;
pub mod fuzzing;
pub mod geometry;
pub mod header;
pub mod kernel;
pub mod latency;
pub mod link;
pub mod message;
pub mod mix;
pub mod names;
pub mod netdev;
pub mod netns;
pub mod noise;
pub mod pacing;
pub mod port;
pub mod priority;
pub mod sequence;
pub mod sys;
pub mod worker;
pub mod xsk;

/// The workers' counters (`linerate_counters::stats`), under the name the
/// crates above have always used.
pub use linerate_counters::stats;
