//! An agent's clock offset, NTP style: of a few request round trips, the
//! one with the lowest round trip bounds the offset best.

/// Clock samples per agent.
pub const SAMPLES: usize = 5;

use linerate_results::latency::ClockCorrection;

/// One clock request: when it left and came back (this host's clock) and
/// the agent's clocks in its answer: its wall clock, ns since the Unix
/// epoch, and its CLOCK_MONOTONIC, ns (0: an agent that does not report
/// it).
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub sent: u64,
    pub theirs: u64,
    pub monotonic: u64,
    pub back: u64,
}

/// Of the sample with the lowest round trip: the round trip, the offset of
/// the agent's wall clock from ours and of its CLOCK_MONOTONIC from our
/// wall clock (None: not reported); the agent's clocks are read at the
/// middle of it.
pub fn offset(samples: &[Sample]) -> (u64, i64, Option<i64>) {
    samples
        .iter()
        .map(|s| {
            let rtt = s.back.saturating_sub(s.sent);
            let middle = (s.sent / 2 + s.back / 2) as i64;
            let monotonic = (s.monotonic != 0).then(|| s.monotonic as i64 - middle);
            (rtt, s.theirs as i64 - middle, monotonic)
        })
        .min_by_key(|(rtt, _, _)| *rtt)
        .unwrap_or_default()
}

/// The receiving host's CLOCK_MONOTONIC minus the sending host's, ns, and
/// the uncertainty of that figure, us: each host's offset is known within
/// half the round trip of its sample. An offset within its uncertainty is
/// no offset that was measured (two namespaces of one host share one
/// clock): it is taken as 0, or every frame faster than the error would
/// have its send time after its receive time.
pub fn monotonic_offset(tx: (Option<i64>, u64), rx: (Option<i64>, u64)) -> Option<ClockCorrection> {
    let offset_ns = rx.0? - tx.0?;
    let uncertainty_ns = (tx.1 + rx.1) / 2;
    Some(ClockCorrection {
        offset_ns: if offset_ns.unsigned_abs() <= uncertainty_ns {
            0
        } else {
            offset_ns
        },
        uncertainty_us: uncertainty_ns as f64 / 1000.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_round_trip_wins() {
        let samples = [
            Sample {
                sent: 1_000,
                theirs: 6_000,
                monotonic: 0,
                back: 1_400,
            },
            // 100 ns there and back, the agent 5 µs ahead.
            Sample {
                sent: 2_000,
                theirs: 7_050,
                monotonic: 9_050,
                back: 2_100,
            },
            // A clock behind ours.
            Sample {
                sent: 3_000,
                theirs: 1_000,
                monotonic: 0,
                back: 3_200,
            },
        ];
        assert_eq!(offset(&samples), (100, 5_000, Some(7_000)));
        assert_eq!(offset(&samples[2..]), (200, -2_100, None));
        assert_eq!(offset(&[]), (0, 0, None));
    }

    #[test]
    fn the_monotonic_offset_is_the_difference_of_the_hosts() {
        // tx's monotonic clock reads 1 s more than our wall clock, rx's
        // 3 s more: rx runs 2 s ahead of tx.
        let c = monotonic_offset(
            (Some(1_000_000_000), 400_000),
            (Some(3_000_000_000), 200_000),
        )
        .unwrap();
        assert_eq!(c.offset_ns, 2_000_000_000);
        assert!(
            (c.uncertainty_us - 300.0).abs() < 1e-9,
            "half of both round trips"
        );
        assert_eq!(
            monotonic_offset((None, 1), (Some(1), 1)),
            None,
            "an older agent"
        );
        // One host seen through two agents: 10 us apart, known within
        // 272 us: no offset (taking 10 us off put fast frames' send times
        // after their receive times: 15,091 of 20,000 left out).
        let one = monotonic_offset((Some(5_000), 300_000), (Some(15_284), 245_000)).unwrap();
        assert_eq!(one.offset_ns, 0);
        assert!((one.uncertainty_us - 272.5).abs() < 1e-9);
    }
}
