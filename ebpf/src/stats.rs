/// The steering program's counters, summed over all CPUs (a counter
/// missing from a result written before it existed reads as 0).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SteerStats {
    /// Frames the program looked at.
    pub seen: u64,
    /// Frames redirected into an AF_XDP socket.
    pub redirected: u64,
    /// Test frames for which no socket was registered on their queue (passed to the kernel).
    pub redirect_failed: u64,
    /// Frames passed to the kernel stack.
    pub passed: u64,
    /// Frames too short for the headers they announce (passed to the kernel).
    pub malformed: u64,
    /// Requests answered by the program itself (XDP_TX responder).
    pub responded: u64,
    /// Test frames dropped on purpose (loss injection).
    pub dropped: u64,
    /// Test frames counted per flow and dropped (the XDP-only receiver).
    pub counted: u64,
    /// Frames on the test ports without a linerate header (XDP-only receiver).
    pub foreign: u64,
}

/// The fields of `struct steer_stats` in the C program, in order, each a
/// `__u64` (a test checks them against the program's BTF).
pub(crate) const STATS_FIELDS: [&str; 9] = [
    "seen",
    "redirected",
    "redirect_failed",
    "passed",
    "malformed",
    "responded",
    "dropped",
    "counted",
    "foreign",
];
/// Size of `struct steer_stats` in the C program.
pub(crate) const STATS_SIZE: usize = STATS_FIELDS.len() * 8;

impl SteerStats {
    /// Decodes one CPU's `struct steer_stats`.
    fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() < STATS_SIZE {
            return None;
        }
        let word = |i: usize| u64::from_ne_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        Some(Self {
            seen: word(0),
            redirected: word(1),
            redirect_failed: word(2),
            passed: word(3),
            malformed: word(4),
            responded: word(5),
            dropped: word(6),
            counted: word(7),
            foreign: word(8),
        })
    }

    /// Sums the per-CPU values of the stats map.
    pub(crate) fn sum_per_cpu(values: &[Vec<u8>]) -> Self {
        values
            .iter()
            .filter_map(|v| Self::from_bytes(v))
            .fold(Self::default(), |a, b| a + b)
    }

    /// Counters accumulated between `earlier` and `self`.
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            seen: self.seen.saturating_sub(earlier.seen),
            redirected: self.redirected.saturating_sub(earlier.redirected),
            redirect_failed: self.redirect_failed.saturating_sub(earlier.redirect_failed),
            passed: self.passed.saturating_sub(earlier.passed),
            malformed: self.malformed.saturating_sub(earlier.malformed),
            responded: self.responded.saturating_sub(earlier.responded),
            dropped: self.dropped.saturating_sub(earlier.dropped),
            counted: self.counted.saturating_sub(earlier.counted),
            foreign: self.foreign.saturating_sub(earlier.foreign),
        }
    }
}

impl std::ops::Add for SteerStats {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self {
            seen: self.seen + o.seen,
            redirected: self.redirected + o.redirected,
            redirect_failed: self.redirect_failed + o.redirect_failed,
            passed: self.passed + o.passed,
            malformed: self.malformed + o.malformed,
            responded: self.responded + o.responded,
            dropped: self.dropped + o.dropped,
            counted: self.counted + o.counted,
            foreign: self.foreign + o.foreign,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_cpus_and_skips_short_values() {
        let mut a = vec![0u8; STATS_SIZE];
        a[0] = 3; // seen
        a[8] = 2; // redirected
        let mut b = vec![0u8; STATS_SIZE];
        b[0] = 4;
        b[24] = 4; // passed
        let s = SteerStats::sum_per_cpu(&[a, b, vec![1, 2]]);
        assert_eq!(
            s,
            SteerStats {
                seen: 7,
                redirected: 2,
                redirect_failed: 0,
                passed: 4,
                malformed: 0,
                responded: 0,
                counted: 0,
                foreign: 0,
                dropped: 0
            }
        );
        assert_eq!(s.since(&s), SteerStats::default());
    }
}
