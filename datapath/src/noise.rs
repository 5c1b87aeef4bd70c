//! The machine's noise floor between two cores (issue 34, item 3): the
//! one-way latency of a stamp handed from one pinned thread to another, both
//! spinning (shared memory) and with the reader asleep (a channel: a futex
//! wake-up), and the share of time a spinning loop on each core loses in
//! gaps over 1 us (as sysjitter and osnoise count them).
//!
//! `/work/shared/tools/floor.c` measures the same three things in C; its
//! figures are the oracle these are held against. Every loop here ends at
//! the plan's deadline, whatever the other thread does.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::clock::monotonic_ns;

/// A gap over this many nanoseconds between two reads of the clock in a
/// spinning loop is time the loop lost (sysjitter's default threshold).
pub const GAP_THRESHOLD_NS: u64 = 1_000;

/// How long past its deadline a reader waits for a writer that
/// has not finished (only a hung writer makes it wait that long).
const WAKE_GRACE: Duration = Duration::from_secs(1);

/// What to measure: between which cores, for how long in all, how often a
/// stamp is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloorPlan {
    /// The core the stamps leave from (the sender's).
    pub from_core: usize,
    /// The core the stamps arrive on (the receiver's).
    pub to_core: usize,
    /// The whole measurement's time: 2/5 spin, 2/5 wake, 1/5 gaps.
    pub budget: Duration,
    /// Stamps sent per second in each hand-off.
    pub rate_per_s: u32,
}

impl FloorPlan {
    /// The default: 100 k stamps/s within `budget`.
    pub fn new(from_core: usize, to_core: usize, budget: Duration) -> Self {
        Self {
            from_core,
            to_core,
            budget,
            rate_per_s: 100_000,
        }
    }
}

/// Why the floor could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum FloorError {
    /// The two cores are the same: a hand-off needs two.
    #[error("the noise floor needs two different cores (got {0} twice)")]
    SameCore(usize),
    /// The rate is zero.
    #[error("the noise floor's stamp rate must be above 0")]
    ZeroRate,
    /// A thread could not be pinned to its core.
    #[error("could not pin a noise-floor thread to core {0}")]
    Pin(usize),
    /// A measuring thread panicked.
    #[error("a noise-floor thread panicked")]
    Panicked,
    /// The histogram could not be made.
    #[error("histogram: {0}")]
    Histogram(#[from] hdrhistogram::CreationError),
}

/// One hand-off's one-way latency, in microseconds, and its accounting.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct HandOff {
    /// Stamps the writer sent.
    pub sent: u64,
    /// Stamps the reader received (the histogram's count).
    pub received: u64,
    /// Median.
    pub p50_us: f64,
    /// 99th percentile: the median of the [`SLICES`] consecutive slices'
    /// 99th percentiles, so that one stall of the host (a few ms, a few
    /// times a second here) in a 100 ms hand-off does not make it the
    /// floor; [`Self::p99_all_us`] is over every stamp.
    pub p99_us: f64,
    /// 99th percentile over every stamp.
    pub p99_all_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest.
    pub max_us: f64,
}

impl HandOff {
    /// The summary of `hist` (values in nanoseconds), its 99th percentile
    /// over every stamp.
    pub fn from_histogram(sent: u64, hist: &Histogram<u64>) -> Self {
        let us = |ns: u64| ns as f64 / 1_000.0;
        if hist.is_empty() {
            return Self {
                sent,
                ..Self::default()
            };
        }
        let p99 = us(hist.value_at_quantile(0.99));
        Self {
            sent,
            received: hist.len(),
            p50_us: us(hist.value_at_quantile(0.50)),
            p99_us: p99,
            p99_all_us: p99,
            p999_us: us(hist.value_at_quantile(0.999)),
            max_us: us(hist.max()),
        }
    }

    /// The summary of a hand-off recorded in slices: its 99th percentile
    /// the median of the slices'.
    fn from_slices(sent: u64, s: &Sliced) -> Self {
        let mut out = Self::from_histogram(sent, &s.all);
        if let Some(p99) = s.median_p99_ns() {
            out.p99_us = p99 as f64 / 1_000.0;
        }
        out
    }
}

/// Slices of a hand-off whose 99th percentiles make its p99.
pub const SLICES: u64 = 10;

/// A hand-off's latencies, in one histogram and in consecutive slices of
/// `per_slice` stamps (the last slice counted when at least half full).
struct Sliced {
    all: Histogram<u64>,
    slice: Histogram<u64>,
    per_slice: u64,
    p99s: Vec<u64>,
}

impl Sliced {
    /// For about `expected` stamps: [`SLICES`] slices of them, at least
    /// 100 stamps each (a p99 of fewer is its largest).
    fn new(expected: u64) -> Result<Self, FloorError> {
        Ok(Self {
            all: histogram()?,
            slice: histogram()?,
            per_slice: (expected / SLICES).max(100),
            p99s: Vec::with_capacity(SLICES as usize + 1),
        })
    }

    fn record(&mut self, ns: u64) {
        self.all.saturating_record(ns);
        self.slice.saturating_record(ns);
        if self.slice.len() >= self.per_slice {
            self.p99s.push(self.slice.value_at_quantile(0.99));
            self.slice.reset();
        }
    }

    /// The median of the slices' 99th percentiles (of the two middle
    /// ones, the larger), None with no slice.
    fn median_p99_ns(&self) -> Option<u64> {
        let mut p99s = self.p99s.clone();
        if self.slice.len() * 2 >= self.per_slice {
            p99s.push(self.slice.value_at_quantile(0.99));
        }
        p99s.sort_unstable();
        p99s.get(p99s.len() / 2).copied()
    }
}

/// Time a spinning loop lost in gaps over [`GAP_THRESHOLD_NS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Gaps {
    /// Nanoseconds from the first to the last read of the clock.
    pub span_ns: u64,
    /// Nanoseconds within gaps over the threshold.
    pub lost_ns: u64,
    /// Gaps over the threshold.
    pub count: u64,
    /// Gaps over 1 ms.
    pub over_1ms: u64,
    /// The largest gap, in nanoseconds.
    pub max_ns: u64,
}

impl Gaps {
    /// Counts the gap between two successive reads of the clock.
    pub fn observe(&mut self, prev_ns: u64, now_ns: u64) {
        let gap = now_ns.saturating_sub(prev_ns);
        self.span_ns += gap;
        self.max_ns = self.max_ns.max(gap);
        if gap > GAP_THRESHOLD_NS {
            self.lost_ns += gap;
            self.count += 1;
        }
        if gap > 1_000_000 {
            self.over_1ms += 1;
        }
    }

    /// Percent of the span lost in gaps (0 for an empty span).
    pub fn pct(&self) -> f64 {
        if self.span_ns == 0 {
            0.0
        } else {
            100.0 * self.lost_ns as f64 / self.span_ns as f64
        }
    }
}

/// The floor between two cores.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Floor {
    /// Both threads spinning on shared memory.
    pub spin: HandOff,
    /// The reader asleep until woken.
    pub wake: HandOff,
    /// Gaps on the sender's core.
    pub from_gaps: Gaps,
    /// Gaps on the receiver's core.
    pub to_gaps: Gaps,
}

impl Floor {
    /// The larger of the two cores' lost shares, in percent.
    pub fn gap_pct(&self) -> f64 {
        self.from_gaps.pct().max(self.to_gaps.pct())
    }
}

/// Measures the floor of `plan`, taking about `plan.budget` and never much
/// longer: every loop ends at its part's deadline.
pub fn measure(plan: &FloorPlan) -> Result<Floor, FloorError> {
    if plan.from_core == plan.to_core {
        return Err(FloorError::SameCore(plan.from_core));
    }
    if plan.rate_per_s == 0 {
        return Err(FloorError::ZeroRate);
    }
    let part = plan.budget / 5;
    let spin = spin_hand_off(plan, part * 2)?;
    let wake = wake_hand_off(plan, part * 2)?;
    let (from_gaps, to_gaps) = gaps_on_both(plan, part)?;
    Ok(Floor {
        spin,
        wake,
        from_gaps,
        to_gaps,
    })
}

fn pin(core: usize) -> Result<(), FloorError> {
    if core_affinity::set_for_current(core_affinity::CoreId { id: core }) {
        Ok(())
    } else {
        Err(FloorError::Pin(core))
    }
}

fn histogram() -> Result<Histogram<u64>, FloorError> {
    // 1 ns to 10 s, 3 significant figures.
    Ok(Histogram::new_with_bounds(1, 10_000_000_000, 3)?)
}

fn interval(plan: &FloorPlan) -> Duration {
    Duration::from_nanos(1_000_000_000 / u64::from(plan.rate_per_s)).max(Duration::from_nanos(1))
}

/// Waits, spinning, until `until` or `deadline`, whichever is first.
/// Returns false when the deadline came first.
fn spin_until(until: Instant, deadline: Instant) -> bool {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        if now >= until {
            return true;
        }
        std::hint::spin_loop();
    }
}

/// Slots of the spinning hand-off's ring (as floor.c's).
const SLOTS: usize = 1 << 16;

/// The writer stores a stamp on schedule into the next slot of a ring
/// (waiting only when the reader is a whole ring behind); the reader spins
/// on its next slot, records now - stamp and empties it. A reader that
/// lost its core finds the stamps queued: their latency counts the wait,
/// as floor.c's does. The reader takes every stamp written (until the
/// writer is done, or [`WAKE_GRACE`] after the deadline).
fn spin_hand_off(plan: &FloorPlan, time: Duration) -> Result<HandOff, FloorError> {
    let ring: Arc<Vec<AtomicU64>> = Arc::new((0..SLOTS).map(|_| AtomicU64::new(0)).collect());
    let ready = Arc::new(AtomicBool::new(false));
    // The writer's count of stamps plus one once it is done; 0 before.
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + time;
    let hard = deadline + WAKE_GRACE;
    let to_core = plan.to_core;
    let expected = expected(plan, time);
    let reader = {
        let (ring, ready, done) = (Arc::clone(&ring), Arc::clone(&ready), Arc::clone(&done));
        thread::Builder::new()
            .name("noise-spin-rx".into())
            .spawn(move || -> Result<Sliced, FloorError> {
                let pinned = pin(to_core);
                ready.store(true, Ordering::Release);
                pinned?;
                let mut hist = Sliced::new(expected)?;
                let mut next = 0u64;
                loop {
                    let slot = &ring[(next as usize) % SLOTS];
                    let stamp = slot.load(Ordering::Acquire);
                    if stamp != 0 {
                        let now = monotonic_ns();
                        slot.store(0, Ordering::Release);
                        hist.record(now.saturating_sub(stamp).max(1));
                        next += 1;
                        continue;
                    }
                    let d = done.load(Ordering::Acquire);
                    if (d != 0 && next + 1 >= d) || Instant::now() >= hard {
                        return Ok(hist);
                    }
                    std::hint::spin_loop();
                }
            })
            .map_err(|_| FloorError::Panicked)?
    };
    // The writer in a thread of its own: the caller's affinity stays as it was.
    let writer = {
        let plan = *plan;
        thread::Builder::new()
            .name("noise-spin-tx".into())
            .spawn(move || {
                let sent = spin_writer(&plan, &ring, &ready, deadline);
                let n = sent.as_ref().map_or(0, |n| *n);
                done.store(n + 1, Ordering::Release);
                sent
            })
            .map_err(|_| FloorError::Panicked)?
    };
    let sent = writer.join().map_err(|_| FloorError::Panicked)?;
    let hist = reader.join().map_err(|_| FloorError::Panicked)??;
    Ok(HandOff::from_slices(sent?, &hist))
}

/// Stamps a hand-off of `time` sends at the plan's rate.
fn expected(plan: &FloorPlan, time: Duration) -> u64 {
    (time.as_secs_f64() * f64::from(plan.rate_per_s)) as u64
}

fn spin_writer(
    plan: &FloorPlan,
    ring: &[AtomicU64],
    ready: &AtomicBool,
    deadline: Instant,
) -> Result<u64, FloorError> {
    pin(plan.from_core)?;
    let step = interval(plan);
    let mut sent = 0u64;
    while !ready.load(Ordering::Acquire) {
        if !spin_until(Instant::now(), deadline) {
            return Ok(0);
        }
    }
    let mut next = Instant::now();
    loop {
        if !spin_until(next, deadline) {
            return Ok(sent);
        }
        let slot = &ring[(sent as usize) % SLOTS];
        // Only when the reader is a whole ring behind.
        while slot.load(Ordering::Acquire) != 0 {
            if Instant::now() >= deadline {
                return Ok(sent);
            }
            std::hint::spin_loop();
        }
        slot.store(monotonic_ns().max(1), Ordering::Release);
        sent += 1;
        next += step;
    }
}

/// The writer sends a stamp through a channel; the reader sleeps in
/// `recv_timeout` until it comes (a futex wake-up, as a pipe read is).
/// The reader takes every stamp until the writer is gone (or, should the
/// writer hang, [`WAKE_GRACE`] after the deadline).
fn wake_hand_off(plan: &FloorPlan, time: Duration) -> Result<HandOff, FloorError> {
    let (tx, rx) = mpsc::sync_channel::<u64>(4096);
    let deadline = Instant::now() + time;
    let hard = deadline + WAKE_GRACE;
    let to_core = plan.to_core;
    let expected = expected(plan, time);
    let reader = thread::Builder::new()
        .name("noise-wake-rx".into())
        .spawn(move || -> Result<Sliced, FloorError> {
            pin(to_core)?;
            let mut hist = Sliced::new(expected)?;
            loop {
                let left = hard.saturating_duration_since(Instant::now());
                match rx.recv_timeout(left) {
                    Ok(stamp) => {
                        let now = monotonic_ns();
                        hist.record(now.saturating_sub(stamp).max(1));
                    }
                    // The writer gone, or the hard deadline.
                    Err(_) => return Ok(hist),
                }
            }
        })
        .map_err(|_| FloorError::Panicked)?;
    let plan = *plan;
    let writer = thread::Builder::new()
        .name("noise-wake-tx".into())
        .spawn(move || -> Result<u64, FloorError> {
            pin(plan.from_core)?;
            let step = interval(&plan);
            let mut sent = 0;
            let mut next = Instant::now();
            while spin_until(next, deadline) {
                match tx.try_send(monotonic_ns()) {
                    Ok(()) => sent += 1,
                    Err(mpsc::TrySendError::Full(_)) => {}
                    Err(mpsc::TrySendError::Disconnected(_)) => break,
                }
                next += step;
            }
            // tx dropped here: the reader ends once it has taken the rest.
            Ok(sent)
        })
        .map_err(|_| FloorError::Panicked)?;
    let sent = writer.join().map_err(|_| FloorError::Panicked)?;
    let hist = reader.join().map_err(|_| FloorError::Panicked)??;
    Ok(HandOff::from_slices(sent?, &hist))
}

fn gaps_on(core: usize, deadline: Instant) -> Result<Gaps, FloorError> {
    pin(core)?;
    let mut gaps = Gaps::default();
    let mut prev = monotonic_ns();
    while Instant::now() < deadline {
        let now = monotonic_ns();
        gaps.observe(prev, now);
        prev = now;
    }
    Ok(gaps)
}

fn gaps_on_both(plan: &FloorPlan, time: Duration) -> Result<(Gaps, Gaps), FloorError> {
    let deadline = Instant::now() + time;
    let to_core = plan.to_core;
    let other = thread::Builder::new()
        .name("noise-gaps".into())
        .spawn(move || gaps_on(to_core, deadline))
        .map_err(|_| FloorError::Panicked)?;
    let from_core = plan.from_core;
    let this = thread::Builder::new()
        .name("noise-gaps".into())
        .spawn(move || gaps_on(from_core, deadline))
        .map_err(|_| FloorError::Panicked)?;
    let from = this.join().map_err(|_| FloorError::Panicked)?;
    let to = other.join().map_err(|_| FloorError::Panicked)?;
    Ok((from?, to?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn gaps_count_only_over_the_threshold() {
        let mut g = Gaps::default();
        g.observe(0, 1_000); // exactly the threshold: not lost
        g.observe(1_000, 2_001); // 1001 ns: lost
        g.observe(2_001, 1_002_002); // 1_000_001 ns: lost, over 1 ms
        g.observe(1_002_002, 1_002_100);
        assert_eq!(g.span_ns, 1_002_100);
        assert_eq!(g.lost_ns, 1_001 + 1_000_001);
        assert_eq!(g.count, 2);
        assert_eq!(g.over_1ms, 1);
        assert_eq!(g.max_ns, 1_000_001);
        assert_eq!(Gaps::default().pct(), 0.0);
        let half = Gaps {
            span_ns: 4_000,
            lost_ns: 2_000,
            ..Gaps::default()
        };
        assert_eq!(half.pct(), 50.0);
    }

    #[test]
    fn a_clock_going_back_is_no_gap() {
        let mut g = Gaps::default();
        g.observe(5_000, 4_000);
        assert_eq!(g, Gaps::default());
    }

    proptest! {
        #[test]
        fn lost_never_exceeds_span(steps in proptest::collection::vec(0u64..5_000_000, 0..200)) {
            let mut g = Gaps::default();
            let mut t = 0u64;
            for s in &steps {
                g.observe(t, t + s);
                t += s;
            }
            prop_assert_eq!(g.span_ns, t);
            prop_assert!(g.lost_ns <= g.span_ns);
            prop_assert_eq!(g.count, steps.iter().filter(|&&s| s > GAP_THRESHOLD_NS).count() as u64);
            prop_assert!((0.0..=100.0).contains(&g.pct()));
        }
    }

    #[test]
    fn the_summary_reads_the_histogram_in_microseconds() {
        let mut h = histogram().unwrap();
        for v in 1..=1000u64 {
            h.record(v * 1_000).unwrap();
        }
        let s = HandOff::from_histogram(1000, &h);
        assert_eq!(s.sent, 1000);
        assert_eq!(s.received, 1000);
        assert_eq!(s.p50_us, h.value_at_quantile(0.5) as f64 / 1e3);
        assert_eq!(s.max_us, h.max() as f64 / 1e3);
        assert!(s.p50_us <= s.p99_us && s.p99_us <= s.p999_us && s.p999_us <= s.max_us);
        let empty = HandOff::from_histogram(3, &histogram().unwrap());
        assert_eq!((empty.sent, empty.received, empty.max_us), (3, 0, 0.0));
    }

    #[test]
    fn one_stall_of_the_host_is_not_the_floor() {
        // 10 slices of 1,000 stamps at 100 ns; a 5 ms stall queues 300
        // stamps behind it in the fourth: 3 % of all, p99 over every stamp
        // in milliseconds, the slices' median where the floor is.
        let mut s = Sliced::new(10_000).unwrap();
        for i in 0..10_000u64 {
            let stalled = (3_000..3_300).contains(&i);
            s.record(if stalled {
                5_000_000 - (i - 3_000) * 10_000
            } else {
                100
            });
        }
        let h = HandOff::from_slices(10_000, &s);
        assert_eq!(h.received, 10_000);
        assert!(h.p99_all_us > 1_000.0, "{h:?}");
        assert!((h.p99_us - 0.1).abs() < 0.001, "{h:?}");
        assert!(h.max_us >= 4_990.0, "{h:?}");
        // Stalls in more than half the slices are the floor.
        let mut s = Sliced::new(1_000).unwrap();
        for i in 0..1_000u64 {
            s.record(if i % 100 < 6 && i < 600 {
                2_000_000
            } else {
                100
            });
        }
        assert!(HandOff::from_slices(1_000, &s).p99_us > 1_000.0);
        // A last slice under half full is left out; no slice at all: every
        // stamp's p99.
        let mut s = Sliced::new(1_000).unwrap();
        for _ in 0..100 {
            s.record(1_000);
        }
        for _ in 0..40 {
            s.record(9_000_000);
        }
        let h = HandOff::from_slices(140, &s);
        assert!((h.p99_us - 1.0).abs() < 0.01, "{h:?}");
        let mut s = Sliced::new(1_000).unwrap();
        for _ in 0..40 {
            s.record(1_000);
        }
        let h = HandOff::from_slices(40, &s);
        assert_eq!(h.p99_us, h.p99_all_us);
    }

    #[test]
    fn one_core_twice_is_refused() {
        let plan = FloorPlan::new(0, 0, Duration::from_millis(10));
        assert!(matches!(measure(&plan), Err(FloorError::SameCore(0))));
        let mut plan = FloorPlan::new(0, 1, Duration::from_millis(10));
        plan.rate_per_s = 0;
        assert!(matches!(measure(&plan), Err(FloorError::ZeroRate)));
    }

    /// Both readers take every stamp their writer placed, exactly. Needs
    /// two cores; skipped on one.
    #[test]
    fn the_hand_offs_account_for_every_stamp() {
        if core_affinity::get_core_ids().map_or(0, |c| c.len()) < 2 {
            return;
        }
        let floor = measure(&FloorPlan::new(0, 1, Duration::from_millis(100))).unwrap();
        let s = floor.spin;
        assert_eq!(s.received, s.sent, "{s:?}");
        let w = floor.wake;
        assert_eq!(w.received, w.sent, "{w:?}");
        assert!(floor.from_gaps.lost_ns <= floor.from_gaps.span_ns);
        assert!(floor.to_gaps.lost_ns <= floor.to_gaps.span_ns);
    }
}
