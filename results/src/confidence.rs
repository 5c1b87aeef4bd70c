//! The stop rule of runs that repeat (issue 34, item 4), netperf's `-I
//! LEVEL,WIDTH -i MAX,MIN`: repeat until the confidence interval of the
//! mean is within WIDTH % of the mean (the whole interval, as netperf:
//! `-I 99,5` stops at +-2.5 %), at least MIN and at most MAX times.
//!
//! Student's t is the table below, the workspace's only one ([`crate::stats`]'s
//! 95 % interval reads it too; hand-written: no statistics crate is in the
//! workspace's lock file).

use serde::{Deserialize, Serialize};

pub use crate::student::Level;

/// What `--confidence LEVEL,WIDTH --iterations MIN,MAX` ask for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rule {
    /// Confidence level.
    pub level: Level,
    /// Largest width of the whole interval, % of the mean.
    pub width_pct: f64,
    /// Fewest repeats (2 or more: one has no interval).
    pub min: usize,
    /// Most repeats.
    pub max: usize,
}

/// Where a series of repeats stands.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Decision {
    /// Fewer than MIN repeats, or the interval still too wide below MAX.
    Repeat,
    /// The interval is within the width: stop.
    Reached(Interval),
    /// MAX repeats and the interval still too wide: stop and say so.
    NotReached(Interval),
}

/// The interval of the mean of a series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// Repeats.
    pub iterations: usize,
    /// Mean.
    pub mean: f64,
    /// Half-width (mean +- this).
    pub half_width: f64,
    /// The whole width, % of the mean (infinite for a mean of 0).
    pub width_pct: f64,
}

impl Interval {
    /// The interval of the finite `values` at `level` (None below 2).
    pub fn of(values: &[f64], level: Level) -> Option<Self> {
        let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        let n = v.len();
        if n < 2 {
            return None;
        }
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let half_width = level.t(n - 1) * (var / n as f64).sqrt();
        let width_pct = if mean == 0.0 {
            if half_width == 0.0 {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            200.0 * half_width / mean.abs()
        };
        Some(Self {
            iterations: n,
            mean,
            half_width,
            width_pct,
        })
    }
}

impl Rule {
    /// The stop rule: repeat below MIN; stop when the interval is within
    /// the width; at MAX stop and say it was not reached.
    pub fn decide(&self, values: &[f64]) -> Decision {
        let n = values.iter().filter(|x| x.is_finite()).count();
        let Some(i) = Interval::of(values, self.level) else {
            return Decision::Repeat;
        };
        if n < self.min {
            Decision::Repeat
        } else if i.width_pct <= self.width_pct {
            Decision::Reached(i)
        } else if n >= self.max {
            Decision::NotReached(i)
        } else {
            Decision::Repeat
        }
    }
}

/// `--confidence LEVEL,WIDTH` and `--iterations MIN,MAX`, checked.
pub fn parse(confidence: &str, iterations: &str) -> Result<Rule, String> {
    let pair = |s: &str, what: &str| -> Result<(String, String), String> {
        s.split_once(',')
            .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
            .ok_or_else(|| format!("{what} {s:?}: give two numbers, e.g. {}", example(what)))
    };
    let (l, w) = pair(confidence, "--confidence")?;
    let level = match l.as_str() {
        "90" => Level::P90,
        "95" => Level::P95,
        "99" => Level::P99,
        _ => return Err(format!("--confidence level {l:?}: 90, 95 or 99")),
    };
    let width_pct = w
        .parse::<f64>()
        .ok()
        .filter(|w| w.is_finite() && *w > 0.0 && *w <= 100.0)
        .ok_or_else(|| format!("--confidence width {w:?}: a percentage above 0, at most 100"))?;
    let (a, b) = pair(iterations, "--iterations")?;
    let num = |x: &str| {
        x.parse::<usize>()
            .ok()
            .filter(|n| (2..=100).contains(n))
            .ok_or_else(|| format!("--iterations {x:?}: a count from 2 to 100"))
    };
    let (min, max) = (num(&a)?, num(&b)?);
    if min > max {
        return Err(format!(
            "--iterations {iterations:?}: MIN,MAX with MIN <= MAX"
        ));
    }
    Ok(Rule {
        level,
        width_pct,
        min,
        max,
    })
}

fn example(what: &str) -> &'static str {
    if what == "--confidence" {
        "95,5"
    } else {
        "3,10"
    }
}

/// The default of `--disturbed-above`: a run whose cores gave more than
/// this share of their time to other tasks is `disturbed`.
pub const DISTURBED_ABOVE_PCT: f64 = 25.0;

/// Whether a run whose interference (the largest of its sides', percent of
/// its cores' time given to other tasks) is `interference_pct` counts as
/// disturbed at `above_pct`; a run without the measure is not.
pub fn disturbed(interference_pct: Option<f64>, above_pct: f64) -> bool {
    interference_pct.is_some_and(|i| i > above_pct)
}

/// What a result records of its repeats (`confidence` in its JSON): the
/// rule, whether it was reached, every undisturbed repeat's headline value
/// (frames/s received, rr: transactions/s) in the order they ran, and the
/// interval reached. The result's other figures are the repeat whose
/// headline is the median of `values` (the lower middle one of an even
/// count), kept whole; `interval_pct` is the whole width of the interval
/// of the mean, % of the mean, netperf's convention (`-I 95,5` stops at
/// +-2.5 %).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Confidence level, percent.
    pub level: u32,
    /// The widest interval asked for, % of the mean (the whole width).
    pub width_pct: f64,
    /// Whether the interval came within `width_pct`.
    pub reached: bool,
    /// Undisturbed repeats counted (the length of `values`).
    pub iterations: usize,
    /// The whole width of the interval reached, % of the mean (none below
    /// two repeats).
    pub interval_pct: Option<f64>,
    /// Each counted repeat's headline value, in the order they ran.
    pub values: Vec<f64>,
    /// Repeats run and left out as disturbed.
    #[serde(default)]
    pub disturbed_runs: usize,
    /// When not reached: the figures that varied most, widest first, as
    /// (name, (max - min) / median %).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub varied: Vec<(String, f64)>,
}

impl Record {
    /// "n=5, +-2.1 %" (half the whole width, as the table's +-), with
    /// "not reached" when it was not.
    pub fn short(&self) -> String {
        let pm = self.interval_pct.map_or_else(
            || "no interval".to_string(),
            |w| format!("+-{:.1} %", w / 2.0),
        );
        let reached = if self.reached { "" } else { ", not reached" };
        format!("n={}, {pm}{reached}", self.iterations)
    }
}

/// A series of repeats under `rule`, as [`repeat`] ran it.
#[derive(Debug)]
pub struct Series<R> {
    /// Every run, in order.
    pub runs: Vec<R>,
    /// Which of `runs` were disturbed.
    pub disturbed: Vec<bool>,
    /// Where the series ended.
    pub decision: Decision,
}

/// Runs `run(i)` until `rule` stops: a disturbed run (`disturbed`) is left
/// out of the values and so of MIN, and at most `rule.max` runs are made in
/// all; a run that `ended` (interrupted, a fault) ends the series. The
/// closure's error ends it too and is returned.
pub fn repeat<R, E>(
    rule: &Rule,
    mut run: impl FnMut(usize) -> Result<R, E>,
    headline: impl Fn(&R) -> f64,
    disturbed: impl Fn(&R) -> bool,
    ended: impl Fn(&R) -> bool,
) -> Result<Series<R>, E> {
    let mut s = Series {
        runs: Vec::new(),
        disturbed: Vec::new(),
        decision: Decision::Repeat,
    };
    let mut values = Vec::new();
    for i in 0..rule.max {
        let r = run(i)?;
        let d = disturbed(&r);
        if !d {
            values.push(headline(&r));
        }
        let stop = ended(&r);
        s.runs.push(r);
        s.disturbed.push(d);
        s.decision = rule.decide(&values);
        if stop || !matches!(s.decision, Decision::Repeat) {
            break;
        }
    }
    if s.decision == Decision::Repeat {
        // MAX runs with some disturbed, or cut short: not reached.
        if let Some(i) = Interval::of(&values, rule.level) {
            s.decision = Decision::NotReached(i);
        }
    }
    Ok(s)
}

impl<R> Series<R> {
    /// The counted (undisturbed) runs' headline values.
    pub fn values(&self, headline: impl Fn(&R) -> f64) -> Vec<f64> {
        self.runs
            .iter()
            .zip(&self.disturbed)
            .filter(|(_, d)| !**d)
            .map(|(r, _)| headline(r))
            .collect()
    }

    /// The index of the run that stands for the series: the median
    /// observation of the counted runs (of all of them when every run was
    /// disturbed).
    pub fn median_run(&self, headline: impl Fn(&R) -> f64) -> usize {
        let counted: Vec<usize> = (0..self.runs.len())
            .filter(|i| !self.disturbed[*i])
            .collect();
        let pool = if counted.is_empty() {
            (0..self.runs.len()).collect()
        } else {
            counted
        };
        let v: Vec<f64> = pool.iter().map(|i| headline(&self.runs[*i])).collect();
        crate::stats::median_observation(&v).map_or(pool[0], |k| pool[k])
    }

    /// The record of the series under `rule`; `varied` is filled when it
    /// was not reached, from `figures` (name, value) of each counted run.
    pub fn record(
        &self,
        rule: &Rule,
        headline: impl Fn(&R) -> f64,
        figures: impl Fn(&R) -> Vec<(&'static str, f64)>,
    ) -> Record {
        let values = self.values(&headline);
        let (reached, interval) = match self.decision {
            Decision::Reached(i) => (true, Some(i)),
            Decision::NotReached(i) => (false, Some(i)),
            Decision::Repeat => (false, None),
        };
        let varied = if reached {
            Vec::new()
        } else {
            let counted: Vec<&R> = self
                .runs
                .iter()
                .zip(&self.disturbed)
                .filter(|(_, d)| !**d)
                .map(|(r, _)| r)
                .collect();
            widest(&counted.iter().map(|r| figures(r)).collect::<Vec<_>>())
        };
        Record {
            level: rule.level.pct(),
            width_pct: rule.width_pct,
            reached,
            iterations: values.len(),
            interval_pct: interval.map(|i| i.width_pct).filter(|w| w.is_finite()),
            values,
            disturbed_runs: self.disturbed.iter().filter(|d| **d).count(),
            varied,
        }
    }
}

/// The three figures with the widest relative spread ((max - min) /
/// median, %; of a figure in percent, `..._pct`, max - min in points, its
/// share of a core) over `runs`, widest first; figures missing from a run
/// or with a median of 0 are left out.
pub fn widest(runs: &[Vec<(&'static str, f64)>]) -> Vec<(String, f64)> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    let mut out: Vec<(String, f64)> = first
        .iter()
        .filter_map(|(name, _)| {
            let v: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.iter().find(|(n, _)| n == name).map(|(_, x)| *x))
                .collect();
            let sp = crate::stats::Spread::of(&v)?;
            let of = if name.ends_with("_pct") {
                100.0
            } else {
                sp.median.abs()
            };
            (sp.n == runs.len() && sp.median != 0.0)
                .then(|| (name.to_string(), 100.0 * (sp.max - sp.min) / of))
        })
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out.truncate(3);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rule() -> Rule {
        parse("95,5", "3,10").unwrap()
    }

    #[test]
    fn the_interval_is_students() {
        // mean 100, sample sd 1 over 4: half-width t(3) * 1/2.
        let v = [99.0, 99.0, 101.0, 101.0];
        let i = Interval::of(&v, Level::P95).unwrap();
        let sd = (4.0f64 / 3.0).sqrt();
        assert_eq!(i.mean, 100.0);
        assert!((i.half_width - 3.182 * sd / 2.0).abs() < 1e-12);
        assert!((i.width_pct - 2.0 * i.half_width).abs() < 1e-12);
        assert_eq!(Interval::of(&[1.0], Level::P95), None);
        assert_eq!(Level::P99.t(1), 63.657);
        assert_eq!(Level::P95.t(31), 1.96);
    }

    #[test]
    fn it_repeats_below_min_and_stops_at_max() {
        let r = rule();
        assert_eq!(r.decide(&[100.0, 100.0]), Decision::Repeat);
        assert!(matches!(r.decide(&[100.0; 3]), Decision::Reached(i) if i.iterations == 3));
        let wide = [50.0, 150.0, 60.0, 140.0];
        assert_eq!(r.decide(&wide), Decision::Repeat);
        let ten: Vec<f64> = (0..10)
            .map(|i| if i % 2 == 0 { 50.0 } else { 150.0 })
            .collect();
        assert!(matches!(r.decide(&ten), Decision::NotReached(i) if i.iterations == 10));
    }

    #[test]
    fn the_texts_are_checked() {
        let r = rule();
        assert_eq!(
            (r.level, r.width_pct, r.min, r.max),
            (Level::P95, 5.0, 3, 10)
        );
        assert!(parse("97,5", "3,10").is_err());
        assert!(parse("95,0", "3,10").is_err());
        assert!(parse("95", "3,10").is_err());
        assert!(parse("95,5", "1,10").is_err());
        assert!(parse("95,5", "10,3").is_err());
        assert!(parse("95,5", "3,101").is_err());
    }

    /// Runs of `values`; a negative value is a disturbed run.
    fn series(rule: &Rule, values: &[f64]) -> Series<f64> {
        let mut it = values.iter().copied();
        repeat::<f64, ()>(
            rule,
            |_| Ok(it.next().unwrap_or(100.0)),
            |x| x.abs(),
            |x| *x < 0.0,
            |_| false,
        )
        .unwrap()
    }

    #[test]
    fn disturbed_runs_do_not_count_and_max_bounds_all_runs() {
        let r = rule();
        let s = series(&r, &[-100.0, 100.0, 100.0, -100.0, 100.0]);
        assert_eq!(s.runs.len(), 5);
        assert!(matches!(s.decision, Decision::Reached(i) if i.iterations == 3));
        let rec = s.record(&r, |x| x.abs(), |_| Vec::new());
        assert_eq!((rec.iterations, rec.disturbed_runs), (3, 2));
        assert_eq!(rec.values, vec![100.0; 3]);
        assert!(rec.reached && rec.varied.is_empty());
        assert_eq!(s.median_run(|x| x.abs()), 1);
        // Ten runs, five disturbed: MAX reached, the interval too wide.
        let v = [-1.0, 50.0, -1.0, 150.0, -1.0, 50.0, -1.0, 150.0, -1.0, 60.0];
        let s = series(&r, &v);
        assert_eq!(s.runs.len(), 10);
        let rec = s.record(&r, |x| x.abs(), |x| vec![("rate", x.abs()), ("flat", 1.0)]);
        assert!(!rec.reached);
        assert_eq!(rec.values, vec![50.0, 150.0, 50.0, 150.0, 60.0]);
        assert_eq!(rec.varied[0], ("rate".to_string(), 100.0 * 100.0 / 60.0));
        assert_eq!(rec.varied[1], ("flat".to_string(), 0.0));
        let pct = widest(&[vec![("a_pct", 2.0)], vec![("a_pct", 6.0)]]);
        assert_eq!(pct, vec![("a_pct".to_string(), 4.0)]);
        assert_eq!(s.median_run(|x| x.abs()), 9);
        assert_eq!(
            rec.short(),
            format!(
                "n=5, +-{:.1} %, not reached",
                rec.interval_pct.unwrap() / 2.0
            )
        );
    }

    #[test]
    fn a_run_that_ended_ends_the_series() {
        let r = rule();
        let mut n = 0;
        let s = repeat::<f64, ()>(
            &r,
            |_| {
                n += 1;
                Ok(100.0 + n as f64)
            },
            |x| *x,
            |_| false,
            |x| *x >= 102.0,
        )
        .unwrap();
        assert_eq!(s.runs, vec![101.0, 102.0]);
        assert!(matches!(s.decision, Decision::NotReached(i) if i.iterations == 2));
        assert!(
            disturbed(Some(25.1), 25.0) && !disturbed(Some(25.0), 25.0) && !disturbed(None, 0.0)
        );
    }

    proptest! {
        /// Never Repeat at MAX, never a stop below MIN, and a stop is
        /// Reached exactly when the width is within the rule's.
        #[test]
        fn the_rule_always_ends_within_its_bounds(
            v in proptest::collection::vec(1.0f64..1e6, 0..15),
            min in 2usize..6, extra in 0usize..6, width in 0.1f64..50.0,
        ) {
            let r = Rule { level: Level::P95, width_pct: width, min, max: min + extra };
            let d = r.decide(&v);
            let n = v.len();
            if n < min { prop_assert_eq!(d, Decision::Repeat); }
            if n >= r.max { prop_assert!(d != Decision::Repeat); }
            match d {
                Decision::Reached(i) => prop_assert!(i.width_pct <= width && i.iterations == n),
                Decision::NotReached(i) => prop_assert!(i.width_pct > width && n >= r.max),
                Decision::Repeat => {}
            }
        }

        /// The series ends within MAX runs, counts exactly the undisturbed
        /// ones, and reaches MIN counted runs unless MAX stopped it.
        #[test]
        fn a_series_counts_exactly_its_undisturbed_runs(
            v in proptest::collection::vec(-1e3f64..1e3, 0..30),
            min in 2usize..6, extra in 0usize..6,
        ) {
            let r = Rule { level: Level::P95, width_pct: 5.0, min, max: min + extra };
            let s = series(&r, &v);
            prop_assert!(s.runs.len() <= r.max && !s.runs.is_empty());
            let rec = s.record(&r, |x| x.abs(), |_| Vec::new());
            prop_assert_eq!(rec.iterations + rec.disturbed_runs, s.runs.len());
            prop_assert_eq!(rec.values.len(), rec.iterations);
            if s.runs.len() < r.max { prop_assert!(rec.iterations >= min); }
            prop_assert_eq!(rec.reached, matches!(s.decision, Decision::Reached(_)));
        }
    }
}
