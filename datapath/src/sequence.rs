//! Per-flow sequence accounting: how many frames arrived, how many are
//! missing, how many came late (reordered) and how many twice.
//!
//! A frame ahead of the expected sequence opens a gap, counted as lost; a
//! late frame inside the window closes one lost slot and counts as
//! reordered; a frame seen before counts as a duplicate. Frames further
//! behind than the window are counted as reordered (too old to tell).

/// How far behind the newest frame late arrivals are still told apart
/// from duplicates.
pub const WINDOW: u64 = 64;

/// Sequence accounting of one flow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SequenceTracker {
    /// Next sequence number expected.
    next: u64,
    /// Bit i set: sequence `next - 1 - i` has been received.
    seen: u64,
    /// Frames received (duplicates included).
    pub received: u64,
    /// Sequence numbers missing right now.
    pub lost: u64,
    /// Frames that arrived after a later one.
    pub reordered: u64,
    /// Frames received more than once.
    pub duplicates: u64,
}

impl SequenceTracker {
    /// Accounts one received sequence number.
    #[inline]
    pub fn record(&mut self, seq: u64) {
        self.received += 1;
        if seq >= self.next {
            let gap = seq - self.next;
            self.lost += gap;
            self.seen = if gap + 1 >= 64 {
                1
            } else {
                (self.seen << (gap + 1)) | 1
            };
            self.next = seq + 1;
            return;
        }
        let behind = self.next - 1 - seq;
        if behind >= WINDOW {
            self.reordered += 1;
            self.lost = self.lost.saturating_sub(1);
            return;
        }
        let bit = 1u64 << behind;
        if self.seen & bit != 0 {
            self.duplicates += 1;
        } else {
            self.seen |= bit;
            self.reordered += 1;
            self.lost -= 1;
        }
    }

    /// The highest sequence number seen plus one.
    pub fn next_expected(&self) -> u64 {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn in_order_has_no_loss() {
        let mut t = SequenceTracker::default();
        (0..1000).for_each(|s| t.record(s));
        assert_eq!(
            (t.received, t.lost, t.reordered, t.duplicates),
            (1000, 0, 0, 0)
        );
    }

    #[test]
    fn gap_then_late_arrival() {
        let mut t = SequenceTracker::default();
        for s in [0, 1, 4, 2, 3, 3] {
            t.record(s);
        }
        assert_eq!((t.lost, t.reordered, t.duplicates), (0, 2, 1));
    }

    proptest! {
        /// Against a set-based model: within the window, lost is exactly
        /// the number of sequence numbers below the highest seen that never
        /// arrived, and duplicates are exact.
        #[test]
        fn matches_a_set_model(seqs in proptest::collection::vec(0u64..48, 0..200)) {
            let mut t = SequenceTracker::default();
            let mut seen = BTreeSet::new();
            let mut dups = 0;
            for &s in &seqs {
                t.record(s);
                if !seen.insert(s) { dups += 1; }
            }
            let next = seen.iter().next_back().map_or(0, |m| m + 1);
            prop_assert_eq!(t.next_expected(), next);
            prop_assert_eq!(t.lost, next - seen.len() as u64);
            prop_assert_eq!(t.duplicates, dups);
            prop_assert_eq!(t.received, seqs.len() as u64);
        }
    }
}
