//! Rate pacing: how many frames a sender may have sent by a given time.

use std::time::Duration;

/// Frames allowed by `elapsed` at `rate` frames per second, capped by
/// `count` when the run sends a fixed number of frames.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pacer {
    rate: Option<f64>,
    count: Option<u64>,
}

impl Pacer {
    /// `rate` in frames/s (None: as fast as possible), `count` frames in
    /// all (None: until stopped).
    pub fn new(rate: Option<f64>, count: Option<u64>) -> Self {
        Self {
            rate: rate.filter(|r| *r > 0.0),
            count,
        }
    }

    /// How many of the next `batch` frames may go out now, when `sent`
    /// already went out and `elapsed` passed since the start.
    #[inline]
    pub fn allowed(&self, sent: u64, elapsed: Duration, batch: usize) -> usize {
        let mut limit = u64::MAX;
        if let Some(rate) = self.rate {
            // One frame is allowed at t = 0, then one every 1/rate s.
            limit = (elapsed.as_secs_f64() * rate) as u64 + 1;
        }
        if let Some(c) = self.count {
            limit = limit.min(c);
        }
        limit.saturating_sub(sent).min(batch as u64) as usize
    }

    /// Whether a fixed count has been reached.
    pub fn done(&self, sent: u64) -> bool {
        self.count.is_some_and(|c| sent >= c)
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
        let first_due = sent as f64 / rate;
        let last_due = (sent + whole - 1) as f64 / rate;
        let send_at = last_due.min(first_due + max.as_secs_f64());
        let wait = send_at - elapsed.as_secs_f64();
        (wait > 0.0).then(|| Duration::from_secs_f64(wait))
    }

    /// How long until the next frame is due, for a sender that may sleep.
    pub fn until_next(&self, sent: u64, elapsed: Duration) -> Duration {
        match self.rate {
            Some(rate) => {
                let due = sent as f64 / rate;
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
        let p = Pacer::new(None, Some(100));
        assert_eq!(p.allowed(0, Duration::ZERO, 64), 64);
        assert_eq!(p.allowed(64, Duration::ZERO, 64), 36);
        assert_eq!(p.allowed(100, Duration::ZERO, 64), 0);
        assert!(p.done(100));
    }

    #[test]
    fn sleeping_senders_wait_for_whole_batches() {
        let max = Duration::from_millis(1);
        // 64,000 frames/s: a batch of 64 takes 1 ms to come due.
        let p = Pacer::new(Some(64_000.0), None);
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
        let p = Pacer::new(Some(1000.0), None);
        assert_eq!(p.allowed(0, Duration::ZERO, 64), 1);
        assert_eq!(p.allowed(1, Duration::from_millis(10), 64), 10);
        assert_eq!(p.allowed(0, Duration::from_secs(1), 64), 64);
        assert_eq!(
            p.until_next(20, Duration::from_millis(10)),
            Duration::from_millis(10)
        );
    }
}
