//! MLRsearch's trial runner: `stream --search-rate` (`--search mlr`, the
//! default) and rfc2544's throughput test. The first trial is unpaced and
//! full-length (the highest rate the sender reaches: the search's maximum
//! load); then [`mlr::Search`] asks for each trial's load and length and
//! this runs it as a paced stream trial. One search finds the NDR (no
//! loss) and the PDR (loss <= the tolerance): each is the relevant lower
//! bound of its goal's final target, backed by full-length trials whose
//! received rates give its figure (their median and range).

use std::{
    fmt::Write as _,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::{
    mlr::{Goal, Search, TrialResult},
    search::{measured, trial_loss, upper_bound, Trial},
};
use crate::plan::stream::StreamPlan;
use linerate_results::{stats::median, stream::StreamResult};

/// The search's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The NDR's loss tolerance, % (RFC 2544: 0).
    pub ndr_loss_pct: f64,
    /// The PDR's loss tolerance, %.
    pub pdr_loss_pct: f64,
    /// Goal Width, relative.
    pub width: f64,
    /// Trials after the unpaced one, at most.
    pub max_trials: usize,
}

impl Settings {
    /// `stream --search-rate`'s: 1 % as the binary search.
    pub fn stream(pdr_loss_pct: f64) -> Self {
        Self {
            ndr_loss_pct: 0.0,
            pdr_loss_pct,
            width: super::search::RESOLUTION,
            max_trials: 40,
        }
    }
}

/// Goal Exceed Ratio: a load is a lower bound when at least half its
/// full-length trial time met the loss (the median trial).
const EXCEED_RATIO: f64 = 0.5;
/// Goal Duration Sum, in full-length trials: one good trial makes a lower
/// bound, an upper bound takes two bad ones (or one, with a bad short one).
const DURATION_SUM_TRIALS: f64 = 2.0;
/// Goal Initial Trial Duration, share of --duration (at least 100 ms,
/// the shortest --duration).
const INITIAL_SHARE: f64 = 0.1;
/// The shortest initial trial, s (the shortest --duration).
const INITIAL_MIN_S: f64 = 0.1;
/// Unpaced trials when the first loses nothing: the figure is their median.
const UNPACED_TRIALS: usize = 3;

/// A rate MLRsearch found for one goal.
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
    /// Frames/s received: the median of its full-length trials.
    pub fps: f64,
    /// The lowest of them.
    pub fps_min: f64,
    /// The highest of them.
    pub fps_max: f64,
    /// Its full-length trials (each meets the loss unless the draft's
    /// exceed ratio let a minority of them not).
    pub trials: Vec<Trial>,
    /// Whether the search met the goal's width (false: its trial budget
    /// ran out first).
    pub within_width: bool,
}

/// What MLRsearch found.
#[derive(Debug, Clone, Serialize)]
pub struct MlrResult {
    /// "stream-mlrsearch".
    pub test: &'static str,
    /// Goal Width, % of the rate.
    pub width_pct: f64,
    /// Goal Final Trial Duration, s.
    pub final_duration_s: f64,
    /// Goal Initial Trial Duration, s.
    pub initial_duration_s: f64,
    /// Goal Duration Sum, s.
    pub duration_sum_s: f64,
    /// Goal Exceed Ratio.
    pub exceed_ratio: f64,
    /// The maximum load: the unpaced trial's rate, per queue.
    pub max_load_pps: f64,
    /// Every trial, in order (the first unpaced).
    pub trials: Vec<Trial>,
    /// The NDR (None: not even the minimum load met it).
    pub ndr: Option<Found>,
    /// The PDR.
    pub pdr: Option<Found>,
    /// Trial time: the sum of every trial's measured length, s.
    pub trial_time_s: f64,
    /// Wall time of the search, s.
    pub wall_s: f64,
    /// The last full-length trial at the NDR, kept whole.
    #[serde(skip)]
    pub kept: Option<StreamResult>,
    /// Whether Ctrl-C/SIGTERM ended the search early.
    pub interrupted: bool,
    /// A fault of the path that ended it, if one did.
    pub fault: Option<String>,
}

/// A goal's rate from its full-length trials at `offered` (None: unpaced).
fn found(
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

/// Runs the search on `plan` (its --duration: the full-length trials).
pub fn run(plan: &StreamPlan, s: Settings, interrupted: &Arc<AtomicBool>) -> Result<MlrResult> {
    let started = Instant::now();
    let queues = f64::from(plan.args.run.queues.max(1));
    let frags = plan.message.as_ref().map_or(1.0, |m| m.count.max(1) as f64);
    let final_s = plan.args.run.duration.as_secs_f64();
    let initial_s = (final_s * INITIAL_SHARE).max(INITIAL_MIN_S).min(final_s);
    let mut out = MlrResult::empty(&s, final_s, initial_s);
    // One trial: its result, or None when the search must end.
    let trial =
        |rate: Option<f64>, secs: f64, out: &mut MlrResult| -> Result<Option<StreamResult>> {
            let mut p = plan.clone();
            p.args.rate = rate;
            p.args.run.duration = Duration::from_secs_f64(secs);
            p.args.run.warmup = p.args.run.warmup.min(p.args.run.duration);
            let r = super::run::run(&p, interrupted)?;
            let ok = measured(&r) && r.common.fault.is_none();
            let pass = ok && trial_loss(&r.frames) <= s.ndr_loss_pct;
            out.trials.push(Trial::of(rate, &r, pass));
            out.trial_time_s += r.params.duration_s;
            out.interrupted = r.common.interrupted;
            out.fault.clone_from(&r.common.fault);
            Ok((!(r.common.interrupted || r.common.fault.is_some())).then_some(r))
        };
    let Some(first) = trial(None, final_s, &mut out)? else {
        out.wall_s = started.elapsed().as_secs_f64();
        return Ok(out);
    };
    let first_loss = trial_loss(&first.frames);
    if measured(&first) && first_loss <= s.ndr_loss_pct {
        // The path carried all the sender offered (a sender with
        // backpressure): the unpaced load, repeated to the goal's
        // duration sum and one more (a median of three), is the rate when
        // at least half its trials meet the loss (the exceed ratio).
        let mut kept = first;
        for _ in 1..UNPACED_TRIALS {
            match trial(None, final_s, &mut out)? {
                Some(r) => kept = r,
                None => {
                    out.wall_s = started.elapsed().as_secs_f64();
                    return Ok(out);
                }
            }
        }
        let rate = |name: &str, pct: f64| {
            let ts: Vec<Trial> = out
                .trials
                .iter()
                .map(|t| Trial {
                    pass: t.loss_pct <= pct && t.received > 0,
                    ..t.clone()
                })
                .collect();
            let met = ts.iter().filter(|t| t.pass).count();
            (2 * met >= ts.len()).then(|| found(name, pct, None, None, ts, true))
        };
        out.ndr = rate("NDR", s.ndr_loss_pct);
        out.pdr = rate("PDR", s.pdr_loss_pct);
        if out.ndr.is_some() {
            out.kept = Some(kept);
            out.wall_s = started.elapsed().as_secs_f64();
            return Ok(out);
        }
        out.pdr = None;
    }
    // The search's top: the unpaced trials' median rate.
    let sent: Vec<f64> = out.trials.iter().map(|t| t.sent_fps).collect();
    let max_load = upper_bound(median(&sent).unwrap_or(0.0), queues, plan.message.as_ref());
    out.max_load_pps = max_load;
    let goal = |pct: f64| Goal {
        loss_ratio: pct / 100.0,
        exceed_ratio: EXCEED_RATIO,
        width: s.width,
        initial_duration: initial_s,
        final_duration: final_s,
        duration_sum: final_s * DURATION_SUM_TRIALS,
        preceding: 2,
    };
    let goals = [goal(s.ndr_loss_pct), goal(s.pdr_loss_pct)];
    let mut search = Search::new(&goals, (max_load / 1000.0).max(1.0), max_load);
    // Each recorded trial's index in `out.trials`.
    let mut index = Vec::new();
    let mut kept = Vec::new();
    for _ in 0..s.max_trials {
        if interrupted.load(Ordering::Relaxed) {
            out.interrupted = true;
            break;
        }
        let Some((load, secs)) = search.next() else {
            break;
        };
        let Some(r) = trial(Some(load), secs, &mut out)? else {
            break;
        };
        let loss_ratio = if measured(&r) {
            trial_loss(&r.frames) / 100.0
        } else {
            1.0
        };
        search.record(TrialResult {
            load,
            duration: secs,
            loss_ratio,
            forwarded: Some(r.receiver.frames_per_s / queues / frags),
        });
        index.push(out.trials.len() - 1);
        if secs >= final_s {
            kept.push((load, r));
        }
    }
    settle(&mut out, &search, &index, kept, &s, final_s);
    out.wall_s = started.elapsed().as_secs_f64();
    Ok(out)
}

/// The NDR and the PDR the search found, each with its full-length trials
/// at its load (judged by its own loss), and the run kept at the NDR.
/// `index`: each recorded trial's place in `out.trials`.
fn settle(
    out: &mut MlrResult,
    search: &Search,
    index: &[usize],
    kept: Vec<(f64, StreamResult)>,
    s: &Settings,
    final_s: f64,
) {
    let results = search.results();
    let full_at = |load: f64| -> Vec<Trial> {
        search
            .trials()
            .iter()
            .zip(index)
            .filter(|(t, _)| t.load == load && t.duration >= final_s)
            .map(|(_, &i)| out.trials[i].clone())
            .collect()
    };
    let mut rates = [("NDR", s.ndr_loss_pct), ("PDR", s.pdr_loss_pct)]
        .into_iter()
        .zip(&results)
        .map(|((name, pct), g)| {
            g.lower.map(|lo| {
                let mut ts = full_at(lo);
                for t in &mut ts {
                    t.pass = t.loss_pct <= pct;
                }
                found(name, pct, Some(lo), g.upper, ts, g.done)
            })
        });
    let (ndr, pdr) = (rates.next().flatten(), rates.next().flatten());
    (out.ndr, out.pdr) = (ndr, pdr);
    if let Some(lo) = out.ndr.as_ref().and_then(|n| n.offered_pps) {
        out.kept = kept.into_iter().rev().find(|(l, _)| *l == lo).map(|k| k.1);
    }
}

impl MlrResult {
    /// A search not yet begun.
    fn empty(s: &Settings, final_s: f64, initial_s: f64) -> Self {
        Self {
            test: "stream-mlrsearch",
            width_pct: s.width * 100.0,
            final_duration_s: final_s,
            initial_duration_s: initial_s,
            duration_sum_s: final_s * DURATION_SUM_TRIALS,
            exceed_ratio: EXCEED_RATIO,
            max_load_pps: 0.0,
            trials: Vec::new(),
            ndr: None,
            pdr: None,
            trial_time_s: 0.0,
            wall_s: 0.0,
            kept: None,
            interrupted: false,
            fault: None,
        }
    }
}

/// The trials as a table, then the NDR and the PDR.
pub fn print_table(m: &MlrResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "linerate stream --search-rate (MLRsearch, draft-ietf-bmwg-mlrsearch): NDR (loss <= {} %) and PDR (loss <= {} %) to {} % width; full-length trials {} s, the first {} s, {} s of trials per load",
        m.ndr.as_ref().map_or(0.0, |n| n.loss_pct),
        m.pdr.as_ref().map_or(f64::NAN, |n| n.loss_pct),
        m.width_pct,
        m.final_duration_s,
        m.initial_duration_s,
        m.duration_sum_s,
    );
    let _ = writeln!(
        out,
        "  trial  length s  offered/s per queue      sent/s    received/s    loss %"
    );
    for (i, t) in m.trials.iter().enumerate() {
        let offered = t
            .offered_pps
            .map_or("unpaced".to_string(), |p| format!("{p:.0}"));
        let _ = writeln!(
            out,
            "  {:>5}  {:>8.3}  {:>19}  {:>10.0}  {:>12.0}  {:>8.4}",
            i + 1,
            t.duration_s,
            offered,
            t.sent_fps,
            t.received_fps,
            t.loss_pct
        );
    }
    for (name, f) in [("NDR", &m.ndr), ("PDR", &m.pdr)] {
        match f {
            Some(f) => {
                let _ = writeln!(
                    out,
                    "  {name}: {:.0} frames/s received (median of {} full-length trial(s), {:.0} to {:.0}), offered {} per queue{}{}",
                    f.fps,
                    f.trials.len(),
                    f.fps_min,
                    f.fps_max,
                    f.offered_pps.map_or("unpaced".into(), |p| format!("{p:.0}")),
                    f.upper_pps.map_or(String::new(), |u| format!(", {u:.0} failed")),
                    if f.within_width { "" } else { " (not within the width: the trial budget ran out)" },
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "  {name}: not found (not even the lowest load met it{})",
                    if m.interrupted || m.fault.is_some() {
                        ", or the search ended early"
                    } else {
                        ""
                    }
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "  {} trials, {:.2} s of trials, {:.1} s wall",
        m.trials.len(),
        m.trial_time_s,
        m.wall_s
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_is_the_median_of_its_trials_with_their_range() {
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
}
