//! Student's t for the confidence levels linerate offers: the one table
//! the statistics ([`crate::stats`]) and the stop rule
//! ([`crate::confidence`]) read (hand-written: no statistics crate in the
//! lock file).

use serde::Serialize;

/// Two-sided Student's t for 1..=30 degrees of freedom, per level.
const T90: [f64; 30] = [
    6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771,
    1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706,
    1.703, 1.701, 1.699, 1.697,
];
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];
const T99: [f64; 30] = [
    63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055, 3.012,
    2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797, 2.787, 2.779,
    2.771, 2.763, 2.756, 2.750,
];

/// A confidence level the table knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Level {
    /// 90 %.
    P90,
    /// 95 %.
    P95,
    /// 99 %.
    P99,
}

impl Level {
    /// The level in percent.
    pub fn pct(self) -> u32 {
        match self {
            Self::P90 => 90,
            Self::P95 => 95,
            Self::P99 => 99,
        }
    }

    /// Two-sided t for `df` degrees of freedom (the normal's z past 30).
    pub fn t(self, df: usize) -> f64 {
        let (table, z) = match self {
            Self::P90 => (&T90, 1.645),
            Self::P95 => (&T95, 1.960),
            Self::P99 => (&T99, 2.576),
        };
        match df {
            0 => f64::INFINITY,
            d => table.get(d - 1).copied().unwrap_or(z),
        }
    }
}
