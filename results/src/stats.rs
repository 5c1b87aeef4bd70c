//! The one median of the workspace, and the spread of a figure over a
//! point's repeats: median, min, max and a 95 % confidence interval of the
//! mean (Student's t, as netperf's -I).

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

/// The finite values of `values`, sorted.
fn sorted_finite(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The median of `values`, the one definition every figure of linerate
/// uses (a sweep's report and gates, a search's rates, RFC 2544's
/// latency): the middle value of an odd count, the mean of the two middle
/// values of an even count, as the sweep report has always printed it.
/// Values that are not finite (NaN, infinities) are no measurement and are
/// left out; None when no value is left.
pub fn median(values: &[f64]) -> Option<f64> {
    median_of_sorted(&sorted_finite(values))
}

fn median_of_sorted(v: &[f64]) -> Option<f64> {
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Which of `values` stands for them where one observation must be kept
/// whole (a trial's result, a burst that arrived whole): the index of the
/// largest value not above their [`median`] (the middle one of an odd
/// count, the lower middle one of an even count; the first of equals).
/// None when no value is finite.
pub fn median_observation(values: &[f64]) -> Option<usize> {
    let m = median(values)?;
    values
        .iter()
        .enumerate()
        .filter(|(_, x)| x.is_finite() && **x <= m)
        .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
        .map(|(i, _)| i)
}

impl Spread {
    /// The spread of the finite `values` (None when there are none); its
    /// median is [`median`].
    pub fn of(values: &[f64]) -> Option<Self> {
        let v = sorted_finite(values);
        let n = v.len();
        let median = median_of_sorted(&v)?;
        let ci95 = (n >= 3).then(|| {
            let mean = v.iter().sum::<f64>() / n as f64;
            let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let t = crate::student::Level::P95.t(n - 1);
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
    fn the_median_of_an_odd_count_is_the_middle_of_an_even_the_mean_of_two() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
        // Not finite: no measurement.
        assert_eq!(median(&[f64::NAN, 5.0, f64::INFINITY, 1.0]), Some(3.0));
        assert_eq!(median(&[f64::NAN]), None);
        // Spread's median is the same one.
        let v = [9.0, 2.0, 4.0, 8.0];
        assert_eq!(Spread::of(&v).map(|s| s.median), median(&v));
    }

    #[test]
    fn the_median_observation_is_the_middle_or_the_lower_middle_one() {
        assert_eq!(median_observation(&[5.0, 1.0, 3.0]), Some(2));
        assert_eq!(median_observation(&[4.0, 2.0]), Some(1));
        assert_eq!(median_observation(&[1.0, 4.0, 2.0, 3.0]), Some(2));
        // The first of equals.
        assert_eq!(median_observation(&[2.0, 2.0, 9.0]), Some(0));
        assert_eq!(median_observation(&[f64::NAN, 6.0]), Some(1));
        assert_eq!(median_observation(&[]), None);
    }

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
