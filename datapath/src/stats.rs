//! Counters a worker publishes and control samples: plain atomics written
//! once per batch by their one worker, read by anyone.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

macro_rules! counters {
    ($(#[$doc:meta] $name:ident),* $(,)?) => {
        /// A worker's live counters.
        #[derive(Debug, Default)]
        pub struct WorkerCounters { $(#[$doc] pub $name: AtomicU64,)* }

        /// A copy of a worker's counters at one instant (a counter missing
        /// from a result written before it existed reads as 0).
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        #[serde(default)]
        pub struct CounterSnapshot { $(#[$doc] pub $name: u64,)* }

        impl WorkerCounters {
            /// Reads every counter.
            pub fn snapshot(&self) -> CounterSnapshot {
                CounterSnapshot { $($name: self.$name.load(Relaxed),)* }
            }

            /// Publishes a worker's local totals.
            #[inline]
            pub fn publish(&self, s: &CounterSnapshot) {
                $(self.$name.store(s.$name, Relaxed);)*
            }
        }

        impl CounterSnapshot {
            /// What accumulated between `earlier` and `self`.
            pub fn since(&self, earlier: &Self) -> Self {
                Self { $($name: self.$name.saturating_sub(earlier.$name),)* }
            }

            /// Field-wise sum.
            pub fn add(&self, o: &Self) -> Self {
                Self { $($name: self.$name + o.$name,)* }
            }
        }
    };
}

counters! {
    /// Frames sent (completed by the kernel) or received (whole frames).
    frames,
    /// Frame bytes (without FCS) of those frames.
    bytes,
    /// UDP payload bytes of those frames.
    payload_bytes,
    /// Frames queued to the TX ring (sender only).
    queued,
    /// Received frames that were not linerate frames.
    bad,
    /// Sequence numbers missing (receiver).
    lost,
    /// Frames that arrived after a later one (receiver).
    reordered,
    /// Frames received twice (receiver).
    duplicates,
    /// Whole messages sent (completed) or received.
    messages,
    /// Bytes of those messages.
    message_bytes,
    /// Messages lost: abandoned with fragments missing, or never seen.
    messages_lost,
    /// Frames the kernel completed sending (request/response workers).
    completed,
    /// Transactions completed (rr client).
    transactions,
    /// Transactions that timed out and were retried (rr client).
    timeouts,
    /// Responses that came after their transaction timed out (rr client).
    late,
    /// Wakeup syscalls (sendto kicks, poll calls).
    syscalls,
    /// Loop turns that found nothing to do.
    idle_loops,
}
