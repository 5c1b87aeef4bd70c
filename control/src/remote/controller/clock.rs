//! An agent's clock offset, NTP style: of a few request round trips, the
//! one with the lowest round trip bounds the offset best.

/// Clock samples per agent.
pub(super) const SAMPLES: usize = 5;

/// One clock request: when it left and came back (this host's clock) and
/// the agent's clock in its answer, ns since the Unix epoch.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sample {
    pub(super) sent: u64,
    pub(super) theirs: u64,
    pub(super) back: u64,
}

/// (round trip, offset of the agent's clock from ours) of the sample with
/// the lowest round trip; the agent's clock is read at the middle of it.
pub(super) fn offset(samples: &[Sample]) -> (u64, i64) {
    samples
        .iter()
        .map(|s| {
            let rtt = s.back.saturating_sub(s.sent);
            let middle = s.sent / 2 + s.back / 2;
            (rtt, s.theirs as i64 - middle as i64)
        })
        .min_by_key(|(rtt, _)| *rtt)
        .unwrap_or_default()
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
                back: 1_400,
            },
            // 100 ns there and back, the agent 5 µs ahead.
            Sample {
                sent: 2_000,
                theirs: 7_050,
                back: 2_100,
            },
            // A clock behind ours.
            Sample {
                sent: 3_000,
                theirs: 1_000,
                back: 3_200,
            },
        ];
        assert_eq!(offset(&samples), (100, 5_000));
        assert_eq!(offset(&samples[2..]), (200, -2_100));
        assert_eq!(offset(&[]), (0, 0));
    }
}
