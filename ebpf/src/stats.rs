pub use linerate_counters::steer::SteerStats;

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

/// Decodes one CPU's `struct steer_stats`.
fn from_bytes(b: &[u8]) -> Option<SteerStats> {
    if b.len() < STATS_SIZE {
        return None;
    }
    let word = |i: usize| u64::from_ne_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
    Some(SteerStats {
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
pub(crate) fn sum_per_cpu(values: &[Vec<u8>]) -> SteerStats {
    values
        .iter()
        .filter_map(|v| from_bytes(v))
        .fold(SteerStats::default(), |a, b| a + b)
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
        let s = sum_per_cpu(&[a, b, vec![1, 2]]);
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
