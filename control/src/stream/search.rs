//! The rate search of `stream --search-rate` and of rfc2544's throughput
//! test, as logic alone: no trial runner, no options, no I/O. One
//! implementation, MLRsearch ([`super::mlr::Search`]), in two
//! configurations ([`Settings`]): `mlr` (the NDR and the PDR, short trials
//! then full-length ones, exceed ratio 0.5) and `binary` (one goal per loss
//! tolerance, one full-length trial per load, goal exceed ratio 0: the
//! highest load whose one trial met the loss, to the same 1 % width the
//! bisection it replaces had). [`drive`] decides every trial's load and
//! length from the trials so far and asks its caller to run it: the
//! caller runs stream trials (`mlrsearch::run`), a test a simulated device.

use serde::{Deserialize, Serialize};

use linerate_results::stats::median;

use super::mlr::{Goal, Search, TrialResult};
use linerate_results::stream::{FrameAccounting, StreamResult};

/// `--search binary`'s paced trials after the unpaced one, at most.
pub const MAX_TRIALS: usize = 24;
/// The search's width: it ends when the interval is this narrow (share of
/// its top).
pub const RESOLUTION: f64 = 0.01;

/// Goal Exceed Ratio of `mlr`: a load is a lower bound when at least half
/// its full-length trial time met the loss (the median trial).
const MLR_EXCEED_RATIO: f64 = 0.5;
/// Goal Duration Sum of `mlr`, in full-length trials: one good trial makes
/// a lower bound, an upper bound takes two bad ones (or one, with a bad
/// short one).
const MLR_DURATION_SUM_TRIALS: f64 = 2.0;
/// Goal Initial Trial Duration of `mlr`, share of --duration (at least
/// 100 ms, the shortest --duration).
const MLR_INITIAL_SHARE: f64 = 0.1;
/// The shortest initial trial, s (the shortest --duration).
const MLR_INITIAL_MIN_S: f64 = 0.1;
/// Coarser targets before `mlr`'s final one.
const MLR_PRECEDING: u32 = 2;
/// Unpaced trials of `mlr` when the first loses nothing: the figure is
/// their median.
const MLR_UNPACED_TRIALS: usize = 3;

/// One trial of the search (and of `rfc2544`'s tests).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// Frames per second per queue offered (None: unpaced).
    pub offered_pps: Option<f64>,
    /// Frames sent, all queues, whole trial.
    pub sent: u64,
    /// Frames received, all queues, whole trial.
    pub received: u64,
    /// Frames per second sent, all queues.
    pub sent_fps: f64,
    /// Frames per second received, all queues.
    pub received_fps: f64,
    /// Frames lost, % of those sent (whole trial); with a sender without
    /// backpressure (the generator), what its link dropped counts as lost
    /// and as sent (the peer's ring was full: the receiving side could not
    /// keep up).
    pub loss_pct: f64,
    /// Whether the loss stayed within the tolerance (the search's first
    /// goal's).
    pub pass: bool,
    /// Its measured length as asked (--duration, or MLRsearch's shorter
    /// trials), s (0 in results written before it was kept).
    #[serde(default)]
    pub duration_s: f64,
}

impl Trial {
    /// The trial `result` was, offered `offered_pps` per queue.
    pub fn of(offered_pps: Option<f64>, result: &StreamResult, pass: bool) -> Self {
        Self {
            offered_pps,
            sent: result.frames.sent,
            received: result.frames.received,
            sent_fps: result.sender.frames_per_s,
            received_fps: result.receiver.frames_per_s,
            loss_pct: trial_loss(&result.frames),
            pass,
            duration_s: result.params.duration_s,
        }
    }
}

/// A trial's loss: frames lost on the way and frames the sending link
/// dropped (a generator's peer ring full), in % of all handed over.
pub fn trial_loss(f: &FrameAccounting) -> f64 {
    let handed = f.sent + f.dropped_at_sender;
    linerate_results::parts::percent(f.lost + f.dropped_at_sender, handed)
}

/// Whether a trial measured a rate: frames sent, and frames received
/// over a measured window longer than 0 (not "0 frames/s").
pub fn measured(result: &StreamResult) -> bool {
    result.frames.sent > 0
        && result.common.window_s > 0.0
        && result.receiver.frames > 0
        && result.receiver.frames_per_s > 0.0
}

/// The frames per second, all queues, of one unit of load: the load is
/// per queue, and with `--message` counts messages of `fragments` frames
/// (bounding it by frames would start the search a message's fragment
/// count too high, in effect unpaced).
pub fn frames_per_load(queues: u32, fragments: usize) -> f64 {
    f64::from(queues.max(1)) * fragments.max(1) as f64
}

/// The search's configuration: which goals, how many trials a load takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The first goal's loss tolerance, % (the NDR's; RFC 2544: 0).
    pub ndr_loss_pct: f64,
    /// The second goal's, % (the PDR's; None: one goal).
    pub pdr_loss_pct: Option<f64>,
    /// Goal Width, relative.
    pub width: f64,
    /// Trials after the unpaced one, at most.
    pub max_trials: usize,
    /// One full-length trial per load, goal exceed ratio 0 (`binary`);
    /// false: MLRsearch's short trials, then two full-length ones, the
    /// median (`mlr`).
    pub one_trial_per_load: bool,
}

impl Settings {
    /// `stream --search-rate PERCENT --search mlr`: the NDR (no loss) and
    /// the PDR (loss <= PERCENT) to 1 %.
    pub fn stream(pdr_loss_pct: f64) -> Self {
        Self::mlr(0.0, pdr_loss_pct, RESOLUTION, 40)
    }

    /// `stream --search-rate PERCENT --search binary`: one goal, loss <=
    /// PERCENT, one full-length trial per load, to 1 %.
    pub fn binary(loss_pct: f64) -> Self {
        Self {
            ndr_loss_pct: loss_pct,
            pdr_loss_pct: None,
            width: RESOLUTION,
            max_trials: MAX_TRIALS,
            one_trial_per_load: true,
        }
    }

    /// MLRsearch's own configuration: the NDR and the PDR together.
    pub fn mlr(ndr_loss_pct: f64, pdr_loss_pct: f64, width: f64, max_trials: usize) -> Self {
        Self {
            ndr_loss_pct,
            pdr_loss_pct: Some(pdr_loss_pct),
            width,
            max_trials,
            one_trial_per_load: false,
        }
    }

    /// The configuration's name, as results record it.
    pub fn name(&self) -> &'static str {
        if self.one_trial_per_load {
            "binary"
        } else {
            "mlr"
        }
    }

    /// The goals' names and loss tolerances, %.
    pub fn losses(&self) -> Vec<(&'static str, f64)> {
        std::iter::once(("NDR", self.ndr_loss_pct))
            .chain(self.pdr_loss_pct.map(|p| ("PDR", p)))
            .collect()
    }

    /// Goal Exceed Ratio.
    pub fn exceed_ratio(&self) -> f64 {
        if self.one_trial_per_load {
            0.0
        } else {
            MLR_EXCEED_RATIO
        }
    }

    /// Goal Initial Trial Duration, s, for full-length trials of `final_s`.
    pub fn initial_duration(&self, final_s: f64) -> f64 {
        if self.one_trial_per_load {
            final_s
        } else {
            (final_s * MLR_INITIAL_SHARE)
                .max(MLR_INITIAL_MIN_S)
                .min(final_s)
        }
    }

    /// Goal Duration Sum, s.
    pub fn duration_sum(&self, final_s: f64) -> f64 {
        if self.one_trial_per_load {
            final_s
        } else {
            final_s * MLR_DURATION_SUM_TRIALS
        }
    }

    /// Unpaced trials when the first meets the first goal.
    pub fn unpaced_trials(&self) -> usize {
        if self.one_trial_per_load {
            1
        } else {
            MLR_UNPACED_TRIALS
        }
    }

    /// The goals, in the order of [`Settings::losses`].
    pub fn goals(&self, final_s: f64) -> Vec<Goal> {
        self.losses()
            .into_iter()
            .map(|(_, pct)| Goal {
                loss_ratio: pct / 100.0,
                exceed_ratio: self.exceed_ratio(),
                width: self.width,
                initial_duration: self.initial_duration(final_s),
                final_duration: final_s,
                duration_sum: self.duration_sum(final_s),
                preceding: if self.one_trial_per_load {
                    0
                } else {
                    MLR_PRECEDING
                },
            })
            .collect()
    }
}

/// A rate the search found for one goal.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Found {
    /// "NDR" or "PDR".
    pub name: String,
    /// Loss tolerated, %.
    pub loss_pct: f64,
    /// The load found, frames/s per queue offered (None: unpaced, the
    /// path carried all the sender offered).
    pub offered_pps: Option<f64>,
    /// The lowest load that failed, per queue (None: none failed).
    pub upper_pps: Option<f64>,
    /// Frames/s received: the median of its full-length trials (the
    /// conditional throughput).
    pub fps: f64,
    /// The lowest of them.
    pub fps_min: f64,
    /// The highest of them.
    pub fps_max: f64,
    /// Its full-length trials (each meets the loss unless the goal's
    /// exceed ratio let a minority of them not).
    pub trials: Vec<Trial>,
    /// Whether the search met the goal's width (false: its trial budget
    /// ran out first).
    pub within_width: bool,
}

/// A goal's rate from its full-length trials at `offered` (None: unpaced).
pub fn found(
    name: &str,
    loss_pct: f64,
    offered: Option<f64>,
    upper: Option<f64>,
    trials: Vec<Trial>,
    within_width: bool,
) -> Found {
    let fps: Vec<f64> = trials.iter().map(|t| t.received_fps).collect();
    Found {
        name: name.into(),
        loss_pct,
        offered_pps: offered,
        upper_pps: upper,
        fps: median(&fps).unwrap_or(0.0),
        fps_min: fps.iter().copied().reduce(f64::min).unwrap_or(0.0),
        fps_max: fps.iter().copied().reduce(f64::max).unwrap_or(0.0),
        trials,
        within_width,
    }
}

/// One trial as its runner reports it to [`drive`].
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Its figures (`pass` is the search's to set).
    pub trial: Trial,
    /// Whether it measured a rate ([`measured`]) without a fault.
    pub measured: bool,
    /// Whether the search must end after it (interrupted, a fault).
    pub last: bool,
}

/// What the search found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// Every trial, in order (the first unpaced).
    pub trials: Vec<Trial>,
    /// The maximum load: the unpaced trials' median rate, per load unit
    /// (0 when the unpaced trials met the first goal: no search ran).
    pub max_load: f64,
    /// Each goal's rate, in the order of [`Settings::losses`] (None: not
    /// even the minimum load met it, or the search ended first).
    pub found: Vec<Option<Found>>,
    /// The trial kept whole: the last full-length one at the first goal's
    /// rate (its index in `trials`).
    pub kept: Option<usize>,
    /// Whether a trial ended the search ([`Step::last`], or none ran).
    pub ended: bool,
}

/// Runs the search: `trial(load, seconds)` runs one trial (load None:
/// unpaced) of that length, or returns None when it ran none (the search
/// ends). Full-length trials last `final_s`; `per_load` is
/// [`frames_per_load`]. The first trial is unpaced and full-length: if it
/// meets the first goal, the path carried all the sender offered and the
/// unpaced load (repeated, for `mlr`) is the rate; otherwise its rate is
/// the search's maximum load.
pub fn drive<E>(
    s: &Settings,
    final_s: f64,
    per_load: f64,
    mut trial: impl FnMut(Option<f64>, f64) -> Result<Option<Step>, E>,
) -> Result<Outcome, E> {
    let losses = s.losses();
    let first_loss = losses[0].1;
    let mut out = Outcome {
        found: vec![None; losses.len()],
        ..Outcome::default()
    };
    // One trial recorded in `out`: whether it measured a rate, or None
    // when the search must end.
    let mut run = |load: Option<f64>, secs: f64, out: &mut Outcome| -> Result<Option<bool>, E> {
        let Some(step) = trial(load, secs)? else {
            out.ended = true;
            return Ok(None);
        };
        let pass = step.measured && step.trial.loss_pct <= first_loss;
        out.trials.push(Trial { pass, ..step.trial });
        out.ended = step.last;
        Ok((!step.last).then_some(step.measured))
    };
    let Some(ok) = run(None, final_s, &mut out)? else {
        return Ok(out);
    };
    if ok && out.trials[0].loss_pct <= first_loss {
        for _ in 1..s.unpaced_trials() {
            if run(None, final_s, &mut out)?.is_none() {
                return Ok(out);
            }
        }
        if let Some(f) = unpaced(s, &out.trials) {
            out.found = f;
            out.kept = Some(out.trials.len() - 1);
            return Ok(out);
        }
    }
    let sent: Vec<f64> = out.trials.iter().map(|t| t.sent_fps).collect();
    let max_load = median(&sent).unwrap_or(0.0) / per_load;
    out.max_load = max_load;
    let mut search = Search::new(&s.goals(final_s), (max_load / 1000.0).max(1.0), max_load);
    // Each recorded trial's index in `out.trials`.
    let mut index = Vec::new();
    for _ in 0..s.max_trials {
        let Some((load, secs)) = search.next() else {
            break;
        };
        let Some(ok) = run(Some(load), secs, &mut out)? else {
            break;
        };
        let t = out.trials.last().expect("a trial ran");
        search.record(TrialResult {
            load,
            duration: secs,
            loss_ratio: if ok { t.loss_pct / 100.0 } else { 1.0 },
            forwarded: Some(t.received_fps / per_load),
        });
        index.push(out.trials.len() - 1);
    }
    settle(&mut out, s, &search, &index, final_s);
    Ok(out)
}

/// The unpaced trials' rates when the first met the first goal: each
/// goal's, when its trials meet it within the exceed ratio (None: the
/// first goal's not, the search goes on).
fn unpaced(s: &Settings, trials: &[Trial]) -> Option<Vec<Option<Found>>> {
    let rates: Vec<Option<Found>> = s
        .losses()
        .into_iter()
        .map(|(name, pct)| {
            let ts: Vec<Trial> = trials
                .iter()
                .map(|t| Trial {
                    pass: t.loss_pct <= pct && t.received > 0,
                    ..t.clone()
                })
                .collect();
            let bad = ts.iter().filter(|t| !t.pass).count();
            (bad as f64 <= s.exceed_ratio() * ts.len() as f64)
                .then(|| found(name, pct, None, None, ts, true))
        })
        .collect();
    rates[0].is_some().then_some(rates)
}

/// Each goal's rate, with its full-length trials at its load (judged by
/// its own loss), and the trial kept at the first goal's rate. `index`:
/// each recorded trial's place in `out.trials`.
fn settle(out: &mut Outcome, s: &Settings, search: &Search, index: &[usize], final_s: f64) {
    let full_at = |load: f64| -> Vec<usize> {
        search
            .trials()
            .iter()
            .zip(index)
            .filter(|(t, _)| t.load == load && t.duration >= final_s)
            .map(|(_, &i)| i)
            .collect()
    };
    out.found = s
        .losses()
        .into_iter()
        .zip(search.results())
        .map(|((name, pct), g)| {
            g.lower.map(|lo| {
                let ts = full_at(lo)
                    .into_iter()
                    .map(|i| Trial {
                        pass: out.trials[i].loss_pct <= pct,
                        ..out.trials[i].clone()
                    })
                    .collect();
                found(name, pct, Some(lo), g.upper, ts, g.done)
            })
        })
        .collect();
    let lo = out.found[0].as_ref().and_then(|f| f.offered_pps);
    out.kept = lo.and_then(|lo| full_at(lo).last().copied());
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_results::stream::FrameAccounting;
    use proptest::prelude::*;

    #[test]
    fn a_trial_counts_the_sending_links_drops_as_lost() {
        let f = FrameAccounting {
            sent: 900,
            received: 890,
            lost: 10,
            dropped_at_sender: 100,
            ..Default::default()
        };
        assert!((trial_loss(&f) - 11.0).abs() < 1e-12);
        let none = FrameAccounting::default();
        assert_eq!(trial_loss(&none), 0.0);
    }

    #[test]
    fn a_trial_that_measured_nothing_does_not_pass() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/results/stream.json");
        let r: StreamResult =
            serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
        assert!(measured(&r));
        // --duration 0.0000001: frames counted over the whole run, none
        // in a window of 0 s (the figures of such a window are all 0).
        let mut short = r.clone();
        short.common.window_s = 0.0;
        short.receiver = Default::default();
        assert!(short.frames.received > 0 && !measured(&short));
        let mut none = r.clone();
        none.receiver.frames = 0;
        none.receiver.frames_per_s = 0.0;
        assert!(!measured(&none));
        let mut unsent = r;
        unsent.frames.sent = 0;
        assert!(!measured(&unsent));
    }

    #[test]
    fn a_message_search_is_bounded_in_messages() {
        assert_eq!(1_600_000.0 / frames_per_load(16, 1), 100_000.0);
        // 65536-byte messages in 46 fragments, 2 queues.
        let hi = 4_600_000.0 / frames_per_load(2, 46);
        assert!((hi - 50_000.0).abs() < 1e-9, "{hi}");
        assert_eq!(frames_per_load(0, 0), 1.0);
    }

    #[test]
    fn a_rate_is_the_median_of_its_trials_with_their_range() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        let t = |fps| Trial {
            received_fps: fps,
            ..Default::default()
        };
        let f = found(
            "NDR",
            0.0,
            Some(1.0),
            None,
            vec![t(10.0), t(30.0), t(20.0)],
            true,
        );
        assert_eq!((f.fps, f.fps_min, f.fps_max), (20.0, 10.0, 30.0));
    }

    #[test]
    fn binary_is_one_goal_one_full_length_trial_per_load_exceed_ratio_0() {
        let s = Settings::binary(0.5);
        assert_eq!(s.name(), "binary");
        assert_eq!(s.losses(), vec![("NDR", 0.5)]);
        assert_eq!(s.unpaced_trials(), 1);
        let g = s.goals(2.0);
        assert_eq!(g.len(), 1);
        assert_eq!(
            (g[0].loss_ratio, g[0].exceed_ratio, g[0].width),
            (0.005, 0.0, RESOLUTION)
        );
        assert_eq!(
            (
                g[0].initial_duration,
                g[0].final_duration,
                g[0].duration_sum
            ),
            (2.0, 2.0, 2.0)
        );
        // One target: every trial is full-length.
        assert_eq!(g[0].targets().len(), 1);
        let m = Settings::stream(0.5);
        assert_eq!(m.name(), "mlr");
        assert_eq!(m.losses(), vec![("NDR", 0.0), ("PDR", 0.5)]);
        assert_eq!(m.goals(2.0)[1].targets().len(), 3);
    }

    /// A simulated device: `loss(load)`, a ratio; the sender reaches `max`
    /// unpaced. Every trial's figures follow from its load (2 queues).
    fn simulate(s: &Settings, max: f64, loss: impl Fn(f64) -> f64) -> Outcome {
        let per_load = frames_per_load(2, 1);
        let trial = |load: Option<f64>, secs: f64| -> Result<Option<Step>, ()> {
            let l = load.unwrap_or(max);
            let ratio = loss(l).clamp(0.0, 1.0);
            let sent = (l * per_load * secs).round() as u64;
            let received = (sent as f64 * (1.0 - ratio)).round() as u64;
            let trial = Trial {
                offered_pps: load,
                sent,
                received,
                sent_fps: l * per_load,
                received_fps: l * per_load * (1.0 - ratio),
                loss_pct: ratio * 100.0,
                pass: false,
                duration_s: secs,
            };
            Ok(Some(Step {
                trial,
                measured: received > 0,
                last: false,
            }))
        };
        drive(s, 1.0, per_load, trial).unwrap()
    }

    /// The bisection `--search binary` was until it became MLRsearch's
    /// configuration (its code, on the simulated device): an unpaced
    /// trial, then halving [0, its rate] for at most 10 trials or until
    /// the interval is within 1 % of its top. Its rate (None: unpaced) and
    /// its trials.
    fn old_bisection(max: f64, loss_pct: f64, loss: impl Fn(f64) -> f64) -> (Option<f64>, usize) {
        if loss(max) * 100.0 <= loss_pct {
            return (Some(max), 1);
        }
        let (mut lo, mut hi, mut trials, mut found) = (0.0, max, 1, None);
        for _ in 0..10 {
            if hi - lo <= hi * RESOLUTION {
                break;
            }
            let mid = (lo + hi) / 2.0;
            trials += 1;
            if loss(mid) * 100.0 <= loss_pct {
                (lo, found) = (mid, Some(mid));
            } else {
                hi = mid;
            }
        }
        (found, trials)
    }

    /// Forwards at most `cap`: loses what is over.
    fn capped(cap: f64) -> impl Fn(f64) -> f64 {
        move |l: f64| (1.0 - cap / l).max(0.0)
    }

    #[test]
    fn binary_finds_the_rate_the_old_bisection_found() {
        // A device that forwards 1 M per queue at most, the sender 3 M.
        let dev = capped(1e6);
        let s = Settings::binary(0.0);
        let out = simulate(&s, 3e6, &dev);
        let (old, old_trials) = old_bisection(3e6, 0.0, &dev);
        let ndr = out.found[0].as_ref().unwrap();
        let (lo, hi) = (ndr.offered_pps.unwrap(), ndr.upper_pps.unwrap());
        // The unpaced trial, the maximum, the rate the maximum forwarded
        // (1 M, met), then bisecting [1 M, 3 M] to 1 %: 7 trials.
        assert_eq!(out.trials.len(), 10, "{:#?}", out.trials);
        assert_eq!(old_trials, 10);
        assert_eq!(out.max_load, 3e6);
        assert_eq!(out.trials[1].offered_pps, Some(3e6));
        // (1 M, as the rate the maximum forwarded: to a rounding.)
        assert!((out.trials[2].offered_pps.unwrap() - 1e6).abs() < 1e-3);
        assert_eq!(out.trials[2].offered_pps, Some(lo));
        assert!(
            lo <= 1e6 && hi > 1e6 && hi - lo <= RESOLUTION * hi,
            "{lo} {hi}"
        );
        assert!(ndr.within_width);
        // The same rate as the bisection, within the width.
        let old = old.unwrap();
        assert!((lo - old).abs() <= RESOLUTION * hi, "{lo} vs {old}");
        // Its one full-length trial, kept, met the goal; the trial at the
        // upper bound did not.
        assert_eq!(ndr.trials.len(), 1);
        assert_eq!((ndr.trials[0].loss_pct, ndr.trials[0].pass), (0.0, true));
        assert_eq!(out.trials[out.kept.unwrap()].offered_pps, Some(lo));
        let at_hi = out.trials.iter().find(|t| t.offered_pps == Some(hi));
        assert!(!at_hi.unwrap().pass);
        // Every trial full-length, each load once.
        assert!(out.trials.iter().all(|t| t.duration_s == 1.0));
        let mut loads: Vec<u64> = out.trials[1..]
            .iter()
            .map(|t| t.offered_pps.unwrap().to_bits())
            .collect();
        loads.sort_unstable();
        loads.dedup();
        assert_eq!(loads.len(), out.trials.len() - 1);
    }

    #[test]
    fn binary_with_a_tolerance_finds_the_old_rate() {
        // Loses 0.5 % above 800 k and what is over 1.2 M: within 1 %, the
        // rate is where the loss passes 1 %: 1.2 M / 0.99.
        let dev = |l: f64| {
            if l <= 8e5 {
                0.0
            } else {
                (1.0 - 1.2e6 / l).max(0.005)
            }
        };
        let out = simulate(&Settings::binary(1.0), 2e6, dev);
        let (old, old_trials) = old_bisection(2e6, 1.0, dev);
        let ndr = out.found[0].as_ref().unwrap();
        let (lo, hi) = (ndr.offered_pps.unwrap(), ndr.upper_pps.unwrap());
        let truth = 1.2e6 / 0.99;
        assert!(lo <= truth && truth < hi && hi - lo <= RESOLUTION * hi);
        assert!((lo - old.unwrap()).abs() <= RESOLUTION * hi);
        assert_eq!((out.trials.len(), old_trials), (9, 9));
        // Its one trial lost more than the floor, within the tolerance.
        let kept = ndr.trials[0].loss_pct;
        assert!(kept > 0.5 && kept <= 1.0 && ndr.trials[0].pass, "{kept}");
    }

    #[test]
    fn binary_ends_at_the_unpaced_trial_when_it_meets_the_loss() {
        let out = simulate(&Settings::binary(0.0), 1e6, |_| 0.0);
        assert_eq!(out.trials.len(), 1);
        assert_eq!(old_bisection(1e6, 0.0, |_| 0.0), (Some(1e6), 1));
        let ndr = out.found[0].as_ref().unwrap();
        assert_eq!((ndr.offered_pps, ndr.upper_pps), (None, None));
        assert_eq!(ndr.fps, 2e6);
        assert_eq!(out.kept, Some(0));
        assert!(out.trials[0].pass && out.trials[0].offered_pps.is_none());
    }

    #[test]
    fn binary_finds_none_when_every_load_loses() {
        // 20 % lost at every load: down from the maximum to the minimum,
        // each load lower than the last.
        let out = simulate(&Settings::binary(1.0), 1e6, |_| 0.2);
        let (old, _) = old_bisection(1e6, 1.0, |_| 0.2);
        assert_eq!((&out.found, old), (&vec![None], None));
        assert_eq!(out.kept, None);
        assert_eq!(out.trials.len(), 7, "{:#?}", out.trials);
        assert!(out.trials.iter().all(|t| !t.pass));
        let offered: Vec<f64> = out.trials[1..]
            .iter()
            .map(|t| t.offered_pps.unwrap())
            .collect();
        assert!(offered.windows(2).all(|w| w[1] < w[0]), "{offered:?}");
        assert_eq!(*offered.last().unwrap(), 1e6 / 1000.0);
    }

    #[test]
    fn a_search_ends_at_the_trial_its_runner_ends() {
        let mut n = 0;
        let out = drive(&Settings::binary(0.0), 1.0, 1.0, |load, secs| {
            n += 1;
            Ok::<_, ()>((n <= 2).then(|| Step {
                trial: Trial {
                    offered_pps: load,
                    sent_fps: 1e6,
                    received_fps: 5e5,
                    loss_pct: 50.0,
                    duration_s: secs,
                    ..Trial::default()
                },
                measured: true,
                last: n == 2,
            }))
        })
        .unwrap();
        assert_eq!(out.trials.len(), 2);
        assert!(out.ended && out.found == vec![None]);
    }

    /// A monotone loss curve: nothing lost up to `knee`, then a loss
    /// rising from `floor` with the load (a cap at `cap` >= knee).
    fn curve(knee: f64, floor: f64, cap: f64) -> impl Fn(f64) -> f64 {
        move |l: f64| {
            if l <= knee {
                0.0
            } else {
                (1.0 - cap / l).max(floor)
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn binary_rate_meets_the_goal_and_one_width_above_does_not(
            max in 1e4f64..1e8,
            knee_share in 0.0005f64..1.5,
            gap in 0.0f64..1.0,
            floor in 0.0f64..0.05,
            loss_pct in prop_oneof![Just(0.0), 0.0f64..5.0],
        ) {
            let knee = max * knee_share;
            let dev = curve(knee, floor, knee * (1.0 + gap));
            let out = simulate(&Settings::binary(loss_pct), max, &dev);
            let goal = loss_pct / 100.0;
            prop_assert!(out.trials.len() <= 1 + MAX_TRIALS);
            match &out.found[0] {
                Some(f) => {
                    // The rate's own trial met the goal.
                    prop_assert!(f.trials.iter().all(|t| t.loss_pct / 100.0 <= goal));
                    prop_assert!(!f.trials.is_empty());
                    prop_assert!(f.within_width);
                    let lo = f.offered_pps.unwrap_or(max);
                    prop_assert!(dev(lo) <= goal);
                    match f.upper_pps {
                        // The maximum load met it.
                        None => prop_assert!(lo == max || f.offered_pps.is_none()),
                        // A trial one width above lost more.
                        Some(hi) => {
                            prop_assert!(hi - lo <= RESOLUTION * hi, "{} {}", lo, hi);
                            let t = out.trials.iter().find(|t| t.offered_pps == Some(hi));
                            prop_assert!(t.unwrap().loss_pct / 100.0 > goal);
                        }
                    }
                }
                // Not even the minimum load met it.
                None => {
                    let min = (out.max_load / 1000.0).max(1.0);
                    prop_assert!(dev(min) > goal, "{}", min);
                    let t = out.trials.iter().find(|t| t.offered_pps == Some(min));
                    prop_assert!(t.unwrap().loss_pct / 100.0 > goal);
                }
            }
        }
    }
}
