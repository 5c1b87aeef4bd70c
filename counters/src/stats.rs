//! Counters a worker publishes and control samples: plain atomics written
//! once per batch by their one worker, read by anyone.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One counter of a family of counters (a worker's, a socket's, the
/// steering program's, an interface's): a field of its snapshot, with what
/// control's list of metrics says of it.
pub struct Counter<T: 'static> {
    /// The field's name, in the result's JSON and on /metrics (the label
    /// value of socket events and steering actions).
    pub name: &'static str,
    /// Worker counters: the name of its /metrics family (others: empty).
    pub exported: &'static str,
    /// Its unit (docs/metrics.md).
    pub unit: &'static str,
    /// What it counts (also the help of its /metrics family).
    pub about: &'static str,
    /// Its value in a snapshot.
    pub read: fn(&T) -> u64,
    /// Worker counters: frames a receiver refused (marked `refused` in
    /// `counters!`). Each is also a figure of a stream result's whole-run
    /// accounting (`frames.NAME`) and a column of its table (others: false).
    pub refused: bool,
}

/// Declares the worker counters once: the live atomics, their snapshot and
/// the list of them with their /metrics name, unit and meaning
/// ([`CounterSnapshot::FIELDS`]). Adding a counter is one entry here (and
/// the line of the worker that counts it); an entry ending in `refused`
/// counts received frames refused (see [`Counter::refused`]).
macro_rules! counters {
    (@refused) => { false };
    (@refused refused) => { true };
    ($(#[$doc:meta] $name:ident: $exported:literal, $unit:literal, $about:literal $(, $refused:ident)?;)*) => {
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
            /// Every counter, with its /metrics name, unit and meaning.
            pub const FIELDS: &'static [Counter<CounterSnapshot>] = &[$(Counter {
                name: stringify!($name),
                exported: $exported,
                unit: $unit,
                about: $about,
                read: |c| c.$name,
                refused: counters!(@refused $($refused)?),
            },)*];

            /// Only the counters of refused frames ([`Counter::refused`]),
            /// the others 0.
            pub fn refused(&self) -> Self {
                Self { $($name: if counters!(@refused $($refused)?) { self.$name } else { 0 },)* }
            }

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
    frames: "linerate_worker_frames", "frames",
        "Frames sent (completed) or received";
    /// Frame bytes (without FCS) of those frames.
    bytes: "linerate_worker_bytes", "bytes",
        "Frame bytes (no FCS) sent or received";
    /// UDP payload bytes of those frames.
    payload_bytes: "linerate_worker_payload_bytes", "bytes",
        "UDP payload bytes";
    /// Frames queued to the TX ring (sender only).
    queued: "linerate_worker_queued_frames", "frames",
        "Frames queued to the TX ring (senders)";
    /// Received frames that were not linerate frames.
    bad: "linerate_worker_bad_frames", "frames",
        "Frames on the test port that were not linerate frames", refused;
    /// Linerate frames with a wrong IPv4 header or UDP checksum (also bad).
    bad_checksum: "linerate_worker_bad_checksum_frames", "frames",
        "Test frames whose IPv4 header or UDP checksum was wrong (also counted bad)", refused;
    /// Sequence numbers missing (receiver).
    lost: "linerate_worker_lost_frames", "frames",
        "Sequence numbers missing at the receiver (frames lost)";
    /// Frames that arrived after a later one (receiver).
    reordered: "linerate_worker_reordered_frames", "frames",
        "Frames that arrived after a later one (receivers)";
    /// Frames received twice (receiver).
    duplicates: "linerate_worker_duplicate_frames", "frames",
        "Frames received twice (receivers)";
    /// Whole messages sent (completed) or received.
    messages: "linerate_worker_messages", "messages",
        "Whole messages sent or received";
    /// Bytes of those messages.
    message_bytes: "linerate_worker_message_bytes", "bytes",
        "Bytes of whole messages sent or received";
    /// Messages lost: abandoned with fragments missing, or never seen.
    messages_lost: "linerate_worker_lost_messages", "messages",
        "Messages lost: abandoned with fragments missing, or never seen";
    /// Frames the kernel completed sending (request/response workers).
    completed: "linerate_worker_completed_frames", "frames",
        "Frames the kernel completed sending (rr workers)";
    /// Transactions completed (rr client).
    transactions: "linerate_worker_transactions", "transactions",
        "Transactions completed (rr client)";
    /// Transactions that timed out and were retried (rr client).
    timeouts: "linerate_worker_timeouts", "transactions",
        "Transactions timed out (rr client)";
    /// Responses that came after their transaction timed out (rr client).
    late: "linerate_worker_late_responses", "responses",
        "Responses that came after their transaction timed out (rr client)";
    /// Wakeup syscalls (sendto kicks, poll calls).
    syscalls: "linerate_worker_syscalls", "calls",
        "Wakeup syscalls (sendto kicks, poll calls)";
    /// Loop turns that found nothing to do.
    idle_loops: "linerate_worker_idle_loops", "loops",
        "Loop turns that found nothing to do";
}
