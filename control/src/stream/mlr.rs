//! MLRsearch (draft-ietf-bmwg-mlrsearch-12, the search FD.io CSIT runs
//! for its NDR and PDR): the logic alone, with no trial runner, so it is
//! tested against a simulated device. Several Search Goals (NDR: loss
//! ratio 0; PDR: loss ratio <= 0.5 %) are searched at once over the same
//! trials: each goal has a chain of targets, from coarse (short trials,
//! wide intervals) to its final one (full-length trials, the goal's width
//! and duration sum), and a load is classified for a target from every
//! trial at that load as the draft's Load Classification defines it
//! (the sums of good and bad trial durations, long and short, against
//! the Goal Exceed Ratio and the Goal Duration Sum). The reference
//! implementation is CSIT's (the MLRsearch package on PyPI): target
//! scaling, the relevant bounds and the refine / extend / bisect steps
//! here follow it, simplified (no load rounding, one candidate per step).

use std::collections::BTreeMap;

/// A Search Goal (draft section 4.6.2).
#[derive(Debug, Clone, PartialEq)]
pub struct Goal {
    /// Goal Loss Ratio: a trial whose loss ratio is above it is bad.
    pub loss_ratio: f64,
    /// Goal Exceed Ratio: the share of the duration sum bad trials may take
    /// while the load is still a lower bound (0.5: the median trial).
    pub exceed_ratio: f64,
    /// Goal Width: the final interval's width, relative to its top.
    pub width: f64,
    /// Goal Initial Trial Duration, s (the coarsest target's trials).
    pub initial_duration: f64,
    /// Goal Final Trial Duration, s (full-length trials).
    pub final_duration: f64,
    /// Goal Duration Sum, s: trial time at a load that classifies it for
    /// the final target.
    pub duration_sum: f64,
    /// Coarser targets before the final one (CSIT's preceding targets).
    pub preceding: u32,
}

/// One target of a goal's chain: a goal's loss and exceed ratios with a
/// trial duration, a duration sum and a width of its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Loss ratio (the goal's).
    pub loss_ratio: f64,
    /// Exceed ratio (the goal's).
    pub exceed_ratio: f64,
    /// Width, relative to the interval's top.
    pub width: f64,
    /// Trials at least this long count as long, s.
    pub trial_duration: f64,
    /// Duration sum, s.
    pub duration_sum: f64,
}

impl Goal {
    /// The goal's targets, coarsest first, its final one last (CSIT's
    /// TargetScaling: each coarser target halves the duration sum's ratio
    /// to the initial duration geometrically and doubles the width).
    pub fn targets(&self) -> Vec<Target> {
        let mut out = vec![Target {
            loss_ratio: self.loss_ratio,
            exceed_ratio: self.exceed_ratio,
            width: self.width,
            trial_duration: self.final_duration,
            duration_sum: self.duration_sum,
        }];
        let n = self.preceding;
        if n > 0 {
            let mult = (self.initial_duration / self.duration_sum).powf(1.0 / f64::from(n));
            let mut width = self.width;
            for count in 1..=n {
                let sum = if count == n {
                    self.initial_duration
                } else {
                    self.duration_sum * mult.powi(count as i32)
                };
                width *= 2.0;
                out.push(Target {
                    loss_ratio: self.loss_ratio,
                    exceed_ratio: self.exceed_ratio,
                    width,
                    trial_duration: self.final_duration.min(sum),
                    duration_sum: sum,
                });
            }
        }
        out.reverse();
        out
    }
}

/// One trial: its load, its intended duration and the loss ratio it
/// measured (and the rate it forwarded, a guess for the next load).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrialResult {
    /// Offered load.
    pub load: f64,
    /// Intended duration, s.
    pub duration: f64,
    /// Trial Loss Ratio, 0 to 1.
    pub loss_ratio: f64,
    /// Forwarding rate (load units), if measured.
    pub forwarded: Option<f64>,
}

/// A load's class for a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Lower bound: the load meets the target.
    Lower,
    /// Upper bound: it does not.
    Upper,
    /// More trials are needed.
    Undecided,
}

/// The draft's Load Classification of the trials at one load for `t`:
/// long trials (at least the target's trial duration) count whole, short
/// bad trials only as far as short good ones do not balance them; the
/// missing duration sum is assumed all good (optimistic) or all bad
/// (pessimistic); both estimates agreeing decide.
pub fn classify<'a>(t: &Target, trials: impl IntoIterator<Item = &'a TrialResult>) -> Class {
    let (mut good_long, mut bad_long, mut good_short, mut bad_short) = (0.0, 0.0, 0.0, 0.0);
    for r in trials {
        let bad = r.loss_ratio > t.loss_ratio;
        let long = r.duration >= t.trial_duration;
        *match (long, bad) {
            (true, false) => &mut good_long,
            (true, true) => &mut bad_long,
            (false, false) => &mut good_short,
            (false, true) => &mut bad_short,
        } += r.duration;
    }
    let coeff = t.exceed_ratio;
    let balancing = good_short * coeff / (1.0 - coeff);
    let excess = bad_long + f64::max(0.0, bad_short - balancing);
    let dursum = f64::max(good_long + excess, t.duration_sum);
    let limit = dursum * coeff;
    // Rounding of sums of durations must not undecide a tie.
    let eps = 1e-9 * dursum;
    let optimistic = excess <= limit + eps;
    let pessimistic = dursum - good_long <= limit + eps;
    match (optimistic, pessimistic) {
        (true, true) => Class::Lower,
        (false, false) => Class::Upper,
        _ => Class::Undecided,
    }
}

/// Where a target stands: its relevant bounds and whether it is met.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Bounds {
    /// Relevant lower bound: the highest lower bound below every upper one.
    pub lower: Option<f64>,
    /// Relevant upper bound: the lowest upper bound.
    pub upper: Option<f64>,
}

/// What the search found for a goal: its final target's relevant bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GoalResult {
    /// The relevant lower bound (None: not even the minimum load meets it).
    pub lower: Option<f64>,
    /// The relevant upper bound (None: the maximum load meets it).
    pub upper: Option<f64>,
    /// Whether the final target is met (the bounds within its width, or a
    /// bound at the minimum or maximum load); false when the search was
    /// cut short by its trial budget.
    pub done: bool,
}

/// The search's state: goals, the load range and every trial so far.
#[derive(Debug, Clone)]
pub struct Search {
    targets: Vec<Vec<Target>>,
    min_load: f64,
    max_load: f64,
    trials: Vec<TrialResult>,
}

/// The key of a load (its bits: loads are proposed and recorded exactly).
fn key(load: f64) -> u64 {
    load.to_bits()
}

impl Search {
    /// A search for `goals` between `min_load` and `max_load`.
    pub fn new(goals: &[Goal], min_load: f64, max_load: f64) -> Self {
        Self {
            targets: goals.iter().map(Goal::targets).collect(),
            min_load: min_load.min(max_load),
            max_load,
            trials: Vec::new(),
        }
    }

    /// Adds a trial's result.
    pub fn record(&mut self, r: TrialResult) {
        self.trials.push(r);
    }

    /// Every trial so far, in order.
    pub fn trials(&self) -> &[TrialResult] {
        &self.trials
    }

    /// The trials grouped by load, loads ascending.
    fn by_load(&self) -> BTreeMap<u64, Vec<&TrialResult>> {
        // Loads are positive: their bits order as they do.
        let mut m: BTreeMap<u64, Vec<&TrialResult>> = BTreeMap::new();
        for r in &self.trials {
            m.entry(key(r.load)).or_default().push(r);
        }
        m
    }

    /// Each measured load with its class for `t`, ascending.
    fn classes(&self, t: &Target) -> Vec<(f64, Class)> {
        self.by_load()
            .values()
            .map(|rs| (rs[0].load, classify(t, rs.iter().copied())))
            .collect()
    }

    /// A target's relevant bounds.
    pub fn bounds(&self, t: &Target) -> Bounds {
        let classes = self.classes(t);
        let upper = classes
            .iter()
            .find(|(_, c)| *c == Class::Upper)
            .map(|(l, _)| *l);
        let lower = classes
            .iter()
            .rev()
            .filter(|(l, _)| upper.is_none_or(|u| *l < u))
            .find(|(_, c)| *c == Class::Lower)
            .map(|(l, _)| *l);
        Bounds { lower, upper }
    }

    /// Whether bounds meet a target.
    fn met(&self, t: &Target, b: Bounds) -> bool {
        match (b.lower, b.upper) {
            (Some(lo), _) if lo >= self.max_load => true,
            (_, Some(hi)) if hi <= self.min_load => true,
            (Some(lo), Some(hi)) => hi - lo <= t.width * hi || next_between(lo, hi).is_none(),
            _ => false,
        }
    }

    /// The load a target measures next, or None when it is met.
    fn propose(&self, t: &Target, preceding: Option<Bounds>) -> Option<f64> {
        let b = self.bounds(t);
        if self.met(t, b) {
            return None;
        }
        let inside = |l: f64| b.lower.is_none_or(|lo| l > lo) && b.upper.is_none_or(|hi| l < hi);
        let classes = self.classes(t);
        let class_of = |l: f64| classes.iter().find(|(x, _)| key(*x) == key(l)).map(|c| c.1);
        // A load this target started measuring and has not decided yet.
        let started = self.by_load().into_values().rev().find_map(|rs| {
            let l = rs[0].load;
            let long = rs.iter().any(|r| r.duration >= t.trial_duration);
            (long && inside(l) && class_of(l) == Some(Class::Undecided)).then_some(l)
        });
        if started.is_some() {
            return started;
        }
        // Refine: the coarser target's bounds, measured at this one's length.
        if let Some(p) = preceding {
            for l in [p.lower, p.upper].into_iter().flatten() {
                if inside(l)
                    && class_of(l) != Some(Class::Lower)
                    && class_of(l) != Some(Class::Upper)
                {
                    return Some(l);
                }
            }
        }
        match (b.lower, b.upper) {
            (None, None) => Some(self.max_load),
            // Extend up, doubling the step (in log space) each time.
            (Some(lo), None) => {
                let below = classes
                    .iter()
                    .rev()
                    .find(|(l, c)| *l < lo && *c == Class::Lower)
                    .map(|c| c.0);
                let step = below.map_or(1.0 / (1.0 - t.width), |b| {
                    (lo / b).max(1.0 / (1.0 - t.width))
                });
                Some((lo * step * step).min(self.max_load))
            }
            // Extend down: first to the rate the upper bound forwarded,
            // then doubling the step.
            (None, Some(hi)) => {
                let above = classes
                    .iter()
                    .find(|(l, c)| *l > hi && *c == Class::Upper)
                    .map(|c| c.0);
                let forwarded = self
                    .trials
                    .iter()
                    .filter(|r| key(r.load) == key(hi))
                    .filter_map(|r| r.forwarded)
                    .fold(f64::MAX, f64::min);
                let first = 1.0 - t.width;
                let next = match above {
                    None if forwarded < hi * first && forwarded > 0.0 => forwarded,
                    None => hi * first,
                    Some(a) => {
                        let step = (hi / a).min(first);
                        hi * step * step
                    }
                };
                Some(next.max(self.min_load))
            }
            // Bisect, in log space.
            (Some(lo), Some(hi)) => next_between(lo, hi),
        }
    }

    /// The next trial: its load and duration, or None when every goal is
    /// met. The target with the shortest trials goes first (the coarse
    /// targets of all goals before any final one), then goal order.
    pub fn next(&self) -> Option<(f64, f64)> {
        let mut best: Option<(f64, f64)> = None;
        for chain in &self.targets {
            let mut preceding = None;
            for t in chain {
                if let Some(load) = self.propose(t, preceding) {
                    if best.is_none_or(|b| t.trial_duration < b.1) {
                        best = Some((load, t.trial_duration));
                    }
                    break;
                }
                preceding = Some(self.bounds(t));
            }
        }
        best
    }

    /// Each goal's result (its final target's bounds).
    pub fn results(&self) -> Vec<GoalResult> {
        self.targets
            .iter()
            .map(|chain| {
                let t = chain.last().expect("a goal has a final target");
                let b = self.bounds(t);
                GoalResult {
                    lower: b.lower,
                    upper: b.upper,
                    done: self.met(t, b),
                }
            })
            .collect()
    }
}

/// The geometric mean of two loads, if it lies strictly between them.
fn next_between(lo: f64, hi: f64) -> Option<f64> {
    let mid = (lo * hi).sqrt();
    (mid > lo && mid < hi).then_some(mid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn goal(loss_ratio: f64, width: f64) -> Goal {
        Goal {
            loss_ratio,
            exceed_ratio: 0.5,
            width,
            initial_duration: 0.1,
            final_duration: 1.0,
            duration_sum: 2.0,
            preceding: 2,
        }
    }

    fn t(duration: f64, loss_ratio: f64) -> TrialResult {
        TrialResult {
            load: 1.0,
            duration,
            loss_ratio,
            forwarded: None,
        }
    }

    #[test]
    fn targets_go_from_short_and_wide_to_the_goals_own() {
        let ts = goal(0.0, 0.01).targets();
        assert_eq!(ts.len(), 3);
        assert_eq!(ts[2].trial_duration, 1.0);
        assert_eq!(ts[2].duration_sum, 2.0);
        assert_eq!(ts[2].width, 0.01);
        assert!((ts[1].duration_sum - (2.0f64 * 0.1).sqrt()).abs() < 1e-12);
        assert!((ts[1].width - 0.02).abs() < 1e-12);
        assert_eq!(ts[0].duration_sum, 0.1);
        assert_eq!(ts[0].trial_duration, 0.1);
        assert!((ts[0].width - 0.04).abs() < 1e-12);
    }

    #[test]
    fn a_load_is_classified_from_its_trials_as_the_draft_does() {
        let fin = &goal(0.0, 0.01).targets()[2];
        // Exceed ratio 0.5, duration sum two full trials: one good full
        // trial makes a lower bound; one bad one is undecided; two bad
        // ones an upper bound; a good and a bad one a lower bound.
        assert_eq!(classify(fin, &[t(1.0, 0.0)]), Class::Lower);
        assert_eq!(classify(fin, &[t(1.0, 0.1)]), Class::Undecided);
        assert_eq!(classify(fin, &[t(1.0, 0.1), t(1.0, 0.1)]), Class::Upper);
        assert_eq!(classify(fin, &[t(1.0, 0.1), t(1.0, 0.0)]), Class::Lower);
        // Short trials: good ones never decide a full-length target; a bad
        // one beside a bad full trial tips it (nothing balances it).
        assert_eq!(classify(fin, &[t(0.1, 0.0); 5]), Class::Undecided);
        assert_eq!(classify(fin, &[t(1.0, 0.1), t(0.1, 0.1)]), Class::Upper);
        // ... unless a good short trial balances it.
        assert_eq!(
            classify(fin, &[t(1.0, 0.1), t(0.1, 0.1), t(0.1, 0.0)]),
            Class::Undecided
        );
        // Nothing measured: undecided.
        assert_eq!(classify(fin, &[]), Class::Undecided);
        // The PDR's loss ratio: 0.4 % loss is good, 0.6 % bad.
        let pdr = &goal(0.005, 0.01).targets()[2];
        assert_eq!(classify(pdr, &[t(1.0, 0.004)]), Class::Lower);
        assert_eq!(classify(pdr, &[t(1.0, 0.006); 2]), Class::Upper);
    }

    /// A device that forwards at most `cap` and, between `soft` and
    /// `cap`, loses `soft_loss` (a small loss, within the PDR's).
    fn device(load: f64, soft: f64, soft_loss: f64, cap: f64) -> f64 {
        if load <= soft {
            0.0
        } else if load <= cap {
            soft_loss
        } else {
            (1.0 - cap / load).max(soft_loss)
        }
    }

    struct Run {
        results: Vec<GoalResult>,
        trials: Vec<TrialResult>,
    }

    fn search(max: f64, width: f64, pdr: f64, dev: impl Fn(f64) -> f64) -> Run {
        let goals = [goal(0.0, width), goal(pdr, width)];
        let mut s = Search::new(&goals, max / 1000.0, max);
        for _ in 0..200 {
            let Some((load, duration)) = s.next() else {
                break;
            };
            let loss_ratio = dev(load);
            s.record(TrialResult {
                load,
                duration,
                loss_ratio,
                forwarded: Some(load * (1.0 - loss_ratio)),
            });
        }
        assert!(s.next().is_none(), "the search ends within 200 trials");
        Run {
            results: s.results(),
            trials: s.trials().to_vec(),
        }
    }

    /// Checks that a goal's bounds hold the true threshold `truth` within
    /// the width, and that full-length trials back the lower bound.
    fn holds(r: &GoalResult, run: &Run, truth: f64, max: f64, width: f64, loss: f64) {
        assert!(r.done);
        if truth >= max {
            assert_eq!(r.lower, Some(max));
            return;
        }
        let (lo, hi) = (r.lower.unwrap(), r.upper.unwrap());
        assert!(lo <= truth && truth < hi, "{lo} <= {truth} < {hi}");
        assert!(hi - lo <= width * hi, "{lo}..{hi} wider than {width}");
        let full = run
            .trials
            .iter()
            .filter(|x| x.load == lo && x.duration >= 1.0)
            .collect::<Vec<_>>();
        assert!(!full.is_empty() && full.iter().all(|x| x.loss_ratio <= loss));
    }

    #[test]
    fn a_capped_device_gives_ndr_and_pdr_within_the_width() {
        // Forwards 1 M at most: NDR 1 M, PDR 1 M / 0.995.
        let run = search(3e6, 0.01, 0.005, |l| device(l, 1e6, 0.0, 1e6));
        holds(&run.results[0], &run, 1e6, 3e6, 0.01, 0.0);
        holds(&run.results[1], &run, 1e6 / 0.995, 3e6, 0.01, 0.005);
        // Fewer full-length trials than two binary searches to 1 % take.
        let full = run.trials.iter().filter(|x| x.duration >= 1.0).count();
        assert!(full <= 12, "{full} full-length trials");
    }

    #[test]
    fn a_lossless_path_is_a_lower_bound_at_the_maximum() {
        let run = search(2e6, 0.01, 0.005, |_| 0.0);
        assert_eq!(run.results[0].lower, Some(2e6));
        assert_eq!(run.results[1].lower, Some(2e6));
        assert!(run.results.iter().all(|r| r.done && r.upper.is_none()));
        assert_eq!(run.trials.last().unwrap().duration, 1.0);
    }

    #[test]
    fn a_path_that_always_loses_has_no_lower_bound() {
        let run = search(2e6, 0.01, 0.005, |_| 0.5);
        assert!(run
            .results
            .iter()
            .all(|r| r.done && r.lower.is_none() && r.upper == Some(2e3)));
    }

    /// The bisection `stream --search-rate --search binary` ran before it
    /// became this search's configuration, on the same device: an unpaced full-length trial at the maximum, then
    /// halving to 1 % (at most 10 trials); its trial time, in full trials.
    fn binary_time(max: f64, loss: f64, dev: impl Fn(f64) -> f64) -> (f64, f64) {
        let (mut lo, mut hi, mut n) = (0.0, max, 1.0);
        if dev(max) <= loss {
            return (max, n);
        }
        for _ in 0..10 {
            if hi - lo <= hi * 0.01 {
                break;
            }
            let mid = (lo + hi) / 2.0;
            n += 1.0;
            if dev(mid) <= loss {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        (lo, n)
    }

    #[test]
    fn mlrsearch_takes_under_60_percent_of_two_binary_searches_trial_time() {
        for (max, cap, width) in [(3e6, 1e6, 0.01), (2e6, 1.5e6, 0.01), (1.4e6, 1.2e6, 0.01)] {
            let dev = |l: f64| device(l, cap, 0.0, cap);
            let run = search(max, width, 0.005, dev);
            // The unpaced first trial (full-length) counts too.
            let mlr: f64 = 1.0 + run.trials.iter().map(|t| t.duration).sum::<f64>();
            let (ndr, a) = binary_time(max, 0.0, dev);
            let (pdr, b) = binary_time(max, 0.005, dev);
            // The same precision: both within 1 % of the truth.
            let (lo_n, lo_p) = (run.results[0].lower.unwrap(), run.results[1].lower.unwrap());
            assert!((cap - lo_n) / cap <= 0.01 && (cap - ndr) / cap <= 0.011);
            assert!((cap / 0.995 - lo_p) / cap <= 0.011 && (cap / 0.995 - pdr) / cap <= 0.011);
            eprintln!(
                "max {max} cap {cap}: MLRsearch {} trials, {mlr:.2} trial-lengths; binary {a} + {b}",
                run.trials.len() + 1
            );
            assert!(mlr <= 0.6 * (a + b), "{mlr} vs {}", a + b);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn ndr_and_pdr_hold_the_true_thresholds(
            max in 1e5f64..1e8,
            soft_share in 0.001f64..1.2,
            gap in 0.0f64..0.5,
            soft_loss in 0.0f64..0.01,
            width in 0.005f64..0.05,
        ) {
            let soft = max * soft_share;
            let cap = soft * (1.0 + gap);
            let pdr = 0.005;
            let dev = |l: f64| device(l, soft, soft_loss, cap);
            let run = search(max, width, pdr, dev);
            // The true NDR: the soft threshold. The true PDR: where the
            // loss passes 0.5 %.
            let ndr_true = soft.min(max);
            let pdr_true = if soft_loss > pdr { soft } else { cap / (1.0 - pdr) }.min(max);
            let (ndr, pdr_r) = (&run.results[0], &run.results[1]);
            if soft > max / 1000.0 {
                holds(ndr, &run, ndr_true, max, width, 0.0);
                holds(pdr_r, &run, pdr_true, max, width, pdr);
                prop_assert!(ndr.lower.unwrap() <= pdr_r.lower.unwrap());
            }
        }
    }
}
