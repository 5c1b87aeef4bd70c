//! The spread of a figure over a point's repeats: median, min, max and a
//! 95 % confidence interval of the mean (Student's t, as netperf's -I).

use serde::Serialize;

/// A figure over repeats.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Repeats.
    pub n: usize,
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Half-width of the 95 % confidence interval of the mean (n >= 3).
    pub ci95: Option<f64>,
}

/// Two-sided 95 % Student's t for 1..=30 degrees of freedom.
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

impl Spread {
    /// The spread of `values` (None when empty).
    pub fn of(values: &[f64]) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        let ci95 = (n >= 3).then(|| {
            let mean = v.iter().sum::<f64>() / n as f64;
            let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let t = T95.get(n - 2).copied().unwrap_or(1.96);
            t * (var / n as f64).sqrt()
        });
        Some(Self {
            n,
            median,
            min: v[0],
            max: v[n - 1],
            ci95,
        })
    }
}

/// How two spreads of the same figure compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The repeats' ranges (min..max) do not overlap: a difference beyond
    /// the spread.
    Differs,
    /// The ranges overlap: within noise ("~").
    Same,
    /// A side has one repeat: no spread to judge by ("?").
    Unknown,
}

impl Spread {
    /// Whether `other` differs from `self` beyond the repeats' spread:
    /// their min..max ranges do not overlap (each needs 2 repeats or more).
    pub fn compare(&self, other: &Self) -> Verdict {
        if self.n < 2 || other.n < 2 {
            Verdict::Unknown
        } else if self.max < other.min || other.max < self.min {
            Verdict::Differs
        } else {
            Verdict::Same
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_range_and_interval() {
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        // mean 2, sd 1, t(2) = 4.303: 4.303 / sqrt(3)
        assert!((s.ci95.unwrap() - 4.303 / 3f64.sqrt()).abs() < 1e-9);
        let s = Spread::of(&[1.0, 2.0]).unwrap();
        assert_eq!(s.median, 1.5);
        assert_eq!(s.ci95, None);
        assert!(Spread::of(&[]).is_none());
    }

    #[test]
    fn two_spreads_differ_when_their_ranges_do_not_overlap() {
        let a = Spread::of(&[10.0, 11.0, 12.0]).unwrap();
        let b = Spread::of(&[12.5, 13.0, 14.0]).unwrap();
        let c = Spread::of(&[11.5, 13.0]).unwrap();
        let one = Spread::of(&[20.0]).unwrap();
        assert_eq!(a.compare(&b), Verdict::Differs);
        assert_eq!(b.compare(&a), Verdict::Differs);
        assert_eq!(a.compare(&c), Verdict::Same);
        assert_eq!(a.compare(&a), Verdict::Same);
        assert_eq!(a.compare(&one), Verdict::Unknown);
    }
}
