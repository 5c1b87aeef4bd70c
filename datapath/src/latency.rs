//! One-way latency of received frames: the receiver's clock at the batch
//! a frame came in, minus the send time in its header, into an
//! HdrHistogram per receiver.
//!
//! Every sender stamps CLOCK_MONOTONIC in ns (the AF_XDP and kernel-socket
//! senders with `clock::monotonic_ns`, the in-kernel generator with
//! `bpf_ktime_get_ns`, the same clock), so on one host the difference is
//! the frame's latency. Across two hosts the receiver's clock runs
//! `clock_offset_ns` ahead of the sender's; it is subtracted before the
//! difference is taken.
//!
//! The clock is read once per batch: at the batch's first frame accounted,
//! after the receiver has taken the batch off its ring (or socket), so
//! every frame of the batch is stamped with that one receive time. A
//! receiver calls [`OneWay::start_batch`] before each
//! batch. Recording is an index computation and an increment in a
//! histogram allocated up front: nothing allocates per frame.

use std::sync::atomic::{AtomicI64, Ordering::Relaxed};

use hdrhistogram::Histogram;

use crate::{
    clock::monotonic_ns,
    header::{elapsed48, MASK48},
};

pub use linerate_counters::latency::{empty_histogram, MAX_LATENCY_NS};

/// A receiver's one-way latencies.
#[derive(Debug, Clone)]
pub struct OneWay {
    hist: Histogram<u64>,
    /// Receiver clock minus sender clock, ns.
    offset_ns: i64,
    /// The last receive time in the sender's clock, low 48 bits.
    now48: u64,
    /// A new batch began: the next frame reads the clock.
    stale: bool,
    /// Frames whose send time lies after their receive time or more than
    /// [`MAX_LATENCY_NS`] before it (clocks of two hosts too far apart):
    /// not in the histogram.
    out_of_range: u64,
}

/// The receiver's clock minus the sender's, ns, for receivers made from
/// now on: set once by the receiving side of a two-host run before its
/// workers start (0 on one host).
static CLOCK_OFFSET_NS: AtomicI64 = AtomicI64::new(0);

/// Sets the offset later receivers take off (the receiving side of a
/// two-host run, from the controller's measurement).
pub fn set_clock_offset(ns: i64) {
    CLOCK_OFFSET_NS.store(ns, Relaxed);
}

impl Default for OneWay {
    /// Latencies with the offset [`set_clock_offset`] set (0 by default).
    fn default() -> Self {
        Self::new(CLOCK_OFFSET_NS.load(Relaxed))
    }
}

impl OneWay {
    /// Latencies of frames sent by a host whose clock is `offset_ns`
    /// behind ours (0 on one host).
    pub fn new(offset_ns: i64) -> Self {
        Self {
            hist: empty_histogram(),
            offset_ns,
            now48: 0,
            stale: true,
            out_of_range: 0,
        }
    }

    /// Begins a receive batch: the next frame recorded reads the clock,
    /// and the batch's later frames share its time.
    #[inline]
    pub fn start_batch(&mut self) {
        self.stale = true;
    }

    /// Records the latency of a frame sent at `send_ns` (the header's 48
    /// bits), received in the current batch.
    #[inline]
    pub fn record(&mut self, send_ns: u64) {
        if self.stale {
            self.stale = false;
            self.set_now(monotonic_ns());
        }
        self.record_at(send_ns);
    }

    /// Sets the receive time (our clock, ns) of the frames recorded with
    /// `record_at`.
    #[inline]
    fn set_now(&mut self, now_ns: u64) {
        self.now48 = now_ns.wrapping_sub(self.offset_ns as u64) & MASK48;
    }

    #[inline]
    fn record_at(&mut self, send_ns: u64) {
        let d = elapsed48(self.now48, send_ns);
        if d > MAX_LATENCY_NS {
            self.out_of_range += 1;
        } else {
            // In range by the check above: record cannot fail.
            let _ = self.hist.record(d.max(1));
        }
    }

    /// The histogram, ns.
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// Frames left out of the histogram.
    pub fn out_of_range(&self) -> u64 {
        self.out_of_range
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_the_difference_to_the_batch_time() {
        let mut l = OneWay::new(0);
        l.set_now(10_000);
        l.record_at(9_000);
        l.record_at(4_000);
        let h = l.histogram();
        assert_eq!(h.len(), 2);
        assert!(h.equivalent(h.min(), 1_000) && h.equivalent(h.max(), 6_000));
    }

    #[test]
    fn the_offset_is_taken_off_and_wraps_are_handled() {
        // The receiver's clock is 1 s ahead of the sender's.
        let mut l = OneWay::new(1_000_000_000);
        l.set_now(1_000_000_500);
        l.record_at(0);
        assert!(l.histogram().equivalent(l.histogram().max(), 500));
        // The sender's clock wrapped the 48 bits just before ours.
        let mut l = OneWay::new(0);
        l.set_now((1 << 48) + 100);
        l.record_at(MASK48 - 99);
        assert!(l.histogram().equivalent(l.histogram().max(), 200));
    }

    #[test]
    fn frames_from_the_future_are_counted_apart() {
        let mut l = OneWay::new(0);
        l.set_now(1_000);
        l.record_at(2_000);
        l.record_at(1_000 + MAX_LATENCY_NS);
        assert_eq!((l.histogram().len(), l.out_of_range()), (0, 2));
    }

    #[test]
    fn the_clock_is_read_once_per_batch() {
        let mut l = OneWay::new(0);
        let t = monotonic_ns();
        l.start_batch();
        l.record(t);
        let first = l.now48;
        // Later frames of the batch share its time, however late they come.
        std::thread::sleep(std::time::Duration::from_millis(2));
        l.record(t);
        assert_eq!(l.now48, first);
        l.start_batch();
        l.record(t);
        assert!(l.now48 >= first + 2_000_000, "{} {first}", l.now48);
        let h = l.histogram();
        assert_eq!(h.len(), 3);
        assert!(h.equivalent(h.min(), first.wrapping_sub(t) & MASK48));
        assert!(h.max() >= 2_000_000);
    }
}
