//! The latency histograms' shape: every histogram of latencies linerate
//! records or merges has these bounds.

use hdrhistogram::Histogram;

/// Largest response time the histogram holds: 60 s, in ns.
pub const MAX_LATENCY_NS: u64 = 60_000_000_000;

/// An empty histogram of latencies in ns, 3 significant digits.
pub fn empty_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid bounds")
}
