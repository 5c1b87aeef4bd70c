//! Rate pacing: how many frames a sender may have sent by a given time.
//!
//! Frame k is due at k / rate seconds after the start. A sender that fell
//! behind (descheduled, its ring full) catches up at most [`CATCH_UP`] of
//! the rate at once: what was due before that slips, and every later
//! frame's due time moves by the frames slipped (counted: the run says how
//! many). Unbounded, a 5 ms stall at 1 M frames/s sent 5,000 frames back
//! to back, a burst the rate never asked for, piling up behind the
//! receiver and into every later frame's latency.

use std::time::Duration;

/// The most a paced sender catches up at once: what comes due in this
/// time (at least one batch).
pub const CATCH_UP: Duration = Duration::from_millis(1);

/// Makes the calling thread's sleeps end on time: timer slack 1 ns (the
/// kernel's default, 50 us, lets a 30 us nap last 80 us, and 0 would mean
/// "the default" to prctl). For paced senders, which sleep until their
/// next batch is due; a failure leaves the default (the schedule is still
/// kept, later within a nap).
pub fn precise_timers() {
    let _ = nix::sys::prctl::set_timerslack(1);
}

/// Frames allowed by `elapsed` at `rate` frames per second, capped by
/// `count` when the run sends a fixed number of frames.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pacer {
    rate: Option<f64>,
    count: Option<u64>,
    /// Frames of backlog caught up at once ([`CATCH_UP`] of the rate).
    catch_up: u64,
    /// Frames let slip so far: the schedule runs this many frames late.
    slipped: u64,
}

impl Pacer {
    /// `rate` in frames/s (None: as fast as possible), `count` frames in
    /// all (None: until stopped).
    pub fn new(rate: Option<f64>, count: Option<u64>) -> Self {
        let rate = rate.filter(|r| *r > 0.0);
        Self {
            rate,
            count,
            catch_up: rate.map_or(u64::MAX, |r| (r * CATCH_UP.as_secs_f64()) as u64),
            slipped: 0,
        }
    }

    /// How many of the next `batch` frames may go out now, when `sent`
    /// already went out and `elapsed` passed since the start. A backlog
    /// beyond [`CATCH_UP`] (or `batch`, if more) slips.
    #[inline]
    pub fn allowed(&mut self, sent: u64, elapsed: Duration, batch: usize) -> usize {
        let mut limit = u64::MAX;
        if let Some(rate) = self.rate {
            // One frame is allowed at t = 0, then one every 1/rate s.
            limit = ((elapsed.as_secs_f64() * rate) as u64 + 1).saturating_sub(self.slipped);
            let most = self.catch_up.max(batch as u64);
            let behind = limit.saturating_sub(sent);
            if behind > most {
                self.slipped += behind - most;
                limit = sent + most;
            }
        }
        if let Some(c) = self.count {
            limit = limit.min(c);
        }
        limit.saturating_sub(sent).min(batch as u64) as usize
    }

    /// Frames let slip after stalls so far (0 unpaced).
    pub fn slipped(&self) -> u64 {
        self.slipped
    }

    /// Whether a fixed count has been reached.
    pub fn done(&self, sent: u64) -> bool {
        self.count.is_some_and(|c| sent >= c)
    }

    /// Seconds from the start at which the frame after `sent` (and the
    /// slipped ones) is due.
    fn due(&self, sent: u64, rate: f64) -> f64 {
        (sent + self.slipped) as f64 / rate
    }

    /// For a sender that sleeps: how long to wait before sending, so that
    /// frames go out a whole batch at a time, and none waits more than
    /// `max` past its due time (at low rates, what came due in `max`).
    /// Sending batch by batch costs one kick, and one wake-up of the
    /// receiving side, per batch instead of per frame; a busy sender paces
    /// frame by frame instead.
    pub fn burst_wait(
        &self,
        sent: u64,
        elapsed: Duration,
        batch: usize,
        max: Duration,
    ) -> Option<Duration> {
        let rate = self.rate?;
        let whole = self
            .count
            .map_or(batch as u64, |c| c.saturating_sub(sent).min(batch as u64));
        if whole == 0 {
            return None;
        }
        let first_due = self.due(sent, rate);
        let last_due = self.due(sent + whole - 1, rate);
        let send_at = last_due.min(first_due + max.as_secs_f64());
        let wait = send_at - elapsed.as_secs_f64();
        (wait > 0.0).then(|| Duration::from_secs_f64(wait))
    }

    /// How long until the next frame is due, for a sender that may sleep.
    pub fn until_next(&self, sent: u64, elapsed: Duration) -> Duration {
        match self.rate {
            Some(rate) => {
                let due = self.due(sent, rate);
                Duration::from_secs_f64((due - elapsed.as_secs_f64()).max(0.0))
            }
            None => Duration::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpaced_sends_whole_batches_until_count() {
        let mut p = Pacer::new(None, Some(100));
        assert_eq!(p.allowed(0, Duration::ZERO, 64), 64);
        assert_eq!(p.allowed(64, Duration::ZERO, 64), 36);
        assert_eq!(p.allowed(100, Duration::ZERO, 64), 0);
        assert!(p.done(100));
    }

    #[test]
    fn sleeping_senders_wait_for_whole_batches() {
        let max = Duration::from_millis(1);
        // 64,000 frames/s: a batch of 64 takes 1 ms to come due.
        let mut p = Pacer::new(Some(64_000.0), None);
        assert_eq!(
            p.burst_wait(0, Duration::ZERO, 64, max),
            Some(Duration::from_nanos(984_375))
        );
        assert_eq!(p.burst_wait(0, Duration::from_micros(985), 64, max), None);
        assert_eq!(p.allowed(0, Duration::from_micros(985), 64), 64);
        // A batch takes longer than `max` to come due: what came due in
        // `max` goes.
        assert_eq!(p.burst_wait(0, Duration::ZERO, 128, max), Some(max));
        assert_eq!(p.burst_wait(0, max, 128, max), None);
        assert_eq!(p.allowed(0, max, 128), 65);
        // The last frames of a count are a whole batch.
        let p = Pacer::new(Some(64_000.0), Some(10));
        assert_eq!(
            p.burst_wait(0, Duration::ZERO, 64, max),
            Some(Duration::from_nanos(140_625))
        );
        assert_eq!(p.burst_wait(10, Duration::ZERO, 64, max), None);
        // Unpaced: never.
        assert_eq!(
            Pacer::new(None, None).burst_wait(0, Duration::ZERO, 64, max),
            None
        );
    }

    #[test]
    fn paced_follows_the_clock() {
        let mut p = Pacer::new(Some(1000.0), None);
        assert_eq!(p.allowed(0, Duration::ZERO, 64), 1);
        assert_eq!(p.allowed(1, Duration::from_millis(10), 64), 10);
        assert_eq!(p.slipped(), 0);
        assert_eq!(
            p.until_next(20, Duration::from_millis(10)),
            Duration::from_millis(10)
        );
    }

    /// The slack is the calling thread's, and 1 ns once set.
    #[test]
    fn precise_timers_set_this_threads_slack() {
        std::thread::spawn(|| {
            precise_timers();
            assert_eq!(nix::sys::prctl::get_timerslack().unwrap(), 1);
        })
        .join()
        .unwrap();
    }

    /// After a stall the sender catches up what came due in 1 ms (or one
    /// batch, if more), no more; the rest slips, counted, and the schedule
    /// runs that much later.
    #[test]
    fn a_stall_is_caught_up_to_a_bound_and_the_rest_slips() {
        // 1 M frames/s: 1 ms is 1,000 frames.
        let mut p = Pacer::new(Some(1e6), None);
        // 5 ms behind at 5 ms: 5,001 due, 1,000 caught up, 4,001 slip.
        let t = Duration::from_millis(5);
        assert_eq!(p.allowed(0, t, 64), 64);
        assert_eq!(p.slipped(), 4_001);
        // The 1,000 caught up go out; then nothing is due until the next
        // microsecond: the schedule runs 4,001 frames (4.001 ms) late.
        assert_eq!(p.allowed(936, t, 64), 64);
        assert_eq!(p.allowed(1_000, t, 64), 0);
        assert_eq!(p.until_next(1_000, t), Duration::from_micros(1));
        assert_eq!(p.allowed(1_000, t + Duration::from_micros(1), 64), 1);
        assert_eq!(p.slipped(), 4_001);
        // A slow rate catches up at least one batch: 1 k/s, 1 ms is 1 frame.
        let mut slow = Pacer::new(Some(1000.0), None);
        assert_eq!(slow.allowed(0, Duration::from_secs(1), 64), 64);
        assert_eq!(slow.slipped(), 1_001 - 64);
        // A count still ends at the count.
        let mut counted = Pacer::new(Some(1e6), Some(10));
        assert_eq!(counted.allowed(0, t, 64), 10);
        assert!(counted.done(10));
        // Unpaced: nothing to slip.
        let mut unpaced = Pacer::new(None, None);
        assert_eq!(unpaced.allowed(0, t, 64), 64);
        assert_eq!(unpaced.slipped(), 0);
    }
}
