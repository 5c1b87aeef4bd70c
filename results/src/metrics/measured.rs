//! Which figures of a stream were measured at all, whatever its result's
//! fields hold: a side that did not run (`--tx-only`: no receiver of
//! ours; `--rx-only`: another tool sent), a loss over nothing sent, and
//! what receivers count over nothing received are not measured (their
//! fields read 0, which no gate may take for a measurement).

use super::super::stream::StreamResult;
use crate::stream_table::{receivers_ran, senders_ran};

/// Figures only a receiver of ours measures (prefixes end with '.').
const RECEIVER_SIDE: &[&str] = &[
    "receiver.",
    "latency.",
    "receiver_window_s",
    "derived.us_per_message",
    "frames.received",
    "frames.seq_gaps",
    "frames.reordered",
    "frames.duplicates",
    "frames.messages.received",
    "frames.messages.receiver_counted_lost",
];

/// Figures only a sender of ours measures.
const SENDER_SIDE: &[&str] = &[
    "sender.",
    "frames.sent",
    "frames.unfinished",
    "frames.dropped_at_sender",
    "frames.messages.sent",
];

/// Sent minus received: needs both sides, and something sent.
const LOSS: &[&str] = &["frames.lost", "frames.loss_pct"];

/// The same for messages.
const MESSAGE_LOSS: &[&str] = &["frames.messages.lost", "frames.messages.loss_pct"];

/// What the receivers count of the frames they received: nothing to
/// count in nothing received.
const OF_RECEIVED: &[&str] = &[
    "frames.seq_gaps",
    "frames.reordered",
    "frames.duplicates",
    "frames.messages.receiver_counted_lost",
];

/// What a run measured: which sides ran, and the frames (messages) sent
/// and received.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    /// Senders of ours ran.
    pub senders: bool,
    /// Receivers of ours ran.
    pub receivers: bool,
    /// Frames sent.
    pub sent: u64,
    /// Frames received.
    pub received: u64,
    /// Messages sent (message streams).
    pub messages_sent: Option<u64>,
}

fn named(list: &[&str], name: &str) -> bool {
    list.iter().any(|p| {
        if p.ends_with('.') {
            name.starts_with(p)
        } else {
            name == *p
        }
    })
}

impl Measured {
    /// What the stream `s` measured.
    pub fn of(s: &StreamResult) -> Self {
        Self {
            senders: senders_ran(s),
            receivers: receivers_ran(s),
            sent: s.frames.sent,
            received: s.frames.received,
            messages_sent: s.frames.messages.as_ref().map(|m| m.sent),
        }
    }

    /// Whether the figure (or counter of refused frames, `frames.NAME`)
    /// called `name` was measured.
    pub fn has(&self, name: &str) -> bool {
        let both = named(LOSS, name) || named(MESSAGE_LOSS, name);
        if (!self.receivers && (both || named(RECEIVER_SIDE, name)))
            || (!self.senders && (both || named(SENDER_SIDE, name)))
        {
            return false;
        }
        if named(LOSS, name) && self.sent == 0 {
            return false;
        }
        if named(MESSAGE_LOSS, name) && self.messages_sent.unwrap_or(0) == 0 {
            return false;
        }
        !(named(OF_RECEIVED, name) && self.received == 0)
    }
}

/// Whether figure `name` was measured by a run whose latency histogram
/// holds `samples`: every latency over no sample reads 0, which no gate
/// may take for a measurement (the clock's uncertainty is no sample's).
pub fn of_samples(name: &str, samples: u64) -> bool {
    samples > 0
        || !name.starts_with("latency.")
        || name == "latency.count"
        || name.starts_with("latency.clock.")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(senders: bool, receivers: bool, sent: u64, received: u64) -> Measured {
        Measured {
            senders,
            receivers,
            sent,
            received,
            messages_sent: Some(sent / 2),
        }
    }

    #[test]
    fn a_tx_only_run_measured_nothing_a_receiver_counts() {
        let m = ran(true, false, 1000, 0);
        for name in [
            "frames.lost",
            "frames.loss_pct",
            "frames.received",
            "frames.seq_gaps",
            "frames.messages.lost",
            "frames.messages.loss_pct",
            "receiver.frames_per_s",
            "latency.p99_us",
        ] {
            assert!(!m.has(name), "{name}");
        }
        for name in ["frames.sent", "sender.frames_per_s", "cpu.total.cpu_pct"] {
            assert!(m.has(name), "{name}");
        }
    }

    #[test]
    fn an_rx_only_run_measured_no_loss_and_nothing_of_nothing_received() {
        let got = ran(false, true, 0, 500);
        for name in [
            "frames.lost",
            "frames.loss_pct",
            "frames.sent",
            "sender.frames",
        ] {
            assert!(!got.has(name), "{name}");
        }
        for name in [
            "frames.received",
            "frames.seq_gaps",
            "receiver.frames_per_s",
        ] {
            assert!(got.has(name), "{name}");
        }
        let none = ran(false, true, 0, 0);
        for name in ["frames.loss_pct", "frames.seq_gaps", "frames.duplicates"] {
            assert!(!none.has(name), "{name}");
        }
    }

    #[test]
    fn a_loss_needs_frames_sent() {
        let m = ran(true, true, 0, 0);
        assert!(!m.has("frames.loss_pct") && !m.has("frames.lost"));
        assert!(m.has("frames.sent") && m.has("frames.received"));
        let m = ran(true, true, 10, 10);
        assert!(m.has("frames.loss_pct") && m.has("frames.messages.loss_pct"));
        assert!(!ran(true, true, 1, 1).has("frames.messages.loss_pct"));
    }

    #[test]
    fn a_latency_of_no_sample_is_not_measured() {
        assert!(!of_samples("latency.p99_us", 0) && !of_samples("latency.max_us", 0));
        assert!(of_samples("latency.count", 0) && of_samples("latency.clock.uncertainty_us", 0));
        assert!(of_samples("latency.p99_us", 1) && of_samples("frames.lost", 0));
    }
}
