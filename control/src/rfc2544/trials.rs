//! The four tests of RFC 2544 section 26 at one frame size, each a series
//! of stream trials run by the stream machinery: what each found, as the
//! report reads it back from results.jsonl.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::{
    cli::SearchArg,
    plan::stream::StreamPlan,
    stream::{
        self,
        mlrsearch::{self, Settings},
        search::{self, Found},
    },
};
use linerate_results::{
    latency::Latency,
    stats::{median, median_observation},
    stream::StreamResult,
};

pub use search::Trial;

/// The loss test's steps, percent of the highest rate: 100, 90, ... 10.
const LOSS_STEPS: [f64; 10] = [100.0, 90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 20.0, 10.0];

/// How many trials each test may take.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// The throughput search's trials after the unpaced one, at most
    /// (either configuration: `binary` searches the NDR and the PDR
    /// together too, one full-length trial per load).
    pub mlr_trials: usize,
    /// The throughput search's width (MLRsearch's Goal Width), relative.
    pub width: f64,
    /// Back-to-back trials: doubling steps, then halving steps.
    pub doublings: u32,
    /// Halving steps between the last whole burst and the first cut one.
    pub halvings: u32,
    /// Back-to-back trials (RFC 9004: repeated), each a search of its own.
    pub b2b_trials: usize,
    /// Latency trials (RFC 2544 26.2: repeated).
    pub latency_trials: usize,
}

impl Budget {
    /// A full run: the search as `stream --search-rate` runs it.
    pub const FULL: Self = Self {
        mlr_trials: 40,
        width: search::RESOLUTION,
        doublings: 6,
        halvings: 5,
        b2b_trials: 5,
        latency_trials: 5,
    };
    /// `--quick`: fewer trials (a coarser search).
    pub const QUICK: Self = Self {
        mlr_trials: 24,
        width: 0.02,
        doublings: 2,
        halvings: 2,
        b2b_trials: 3,
        latency_trials: 3,
    };

    /// Trials a size takes at most: the search, the latency trials (each with its retries, in trials of
    /// the run's length), the loss steps, and the bursts
    /// (shortest burst down to 1 frame at worst), repeated.
    pub fn trials_per_size(&self) -> usize {
        1 + self.mlr_trials
            + self.latency_trials * LATENCY_RETRY_LENGTHS
            + LOSS_STEPS.len()
            + self.b2b_trials * (1 + (self.doublings + self.halvings) as usize)
    }
}

/// What a test of one size found, and the trial it keeps whole.
pub struct Ran<T> {
    /// The figures.
    pub outcome: T,
    /// The trial stored whole (the last, or the one the figure comes from).
    pub result: Option<StreamResult>,
    /// Whether Ctrl-C/SIGTERM cut it short (nothing is stored then).
    pub interrupted: bool,
}

/// Throughput: the NDR (loss within --loss, RFC 2544's throughput) and
/// the PDR (loss within --pdr-loss), found together by MLRsearch (in its
/// `binary` configuration with `--search binary`: one full-length trial
/// per load).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Loss tolerated (the NDR's), %.
    pub tolerance_pct: f64,
    /// The search: "mlr" or "binary" (MLRsearch's configurations; empty in
    /// results written before MLRsearch: two binary searches, one per
    /// goal, whose records read the same).
    #[serde(default)]
    pub search: String,
    /// Every trial, the first unpaced.
    pub trials: Vec<Trial>,
    /// The highest rate reached: frames/s sent by the unpaced trial.
    pub highest_fps: f64,
    /// The NDR, frames/s received (None: no rate within).
    pub fps: Option<f64>,
    /// The NDR per queue, as offered (None: unpaced).
    pub offered_pps: Option<f64>,
    /// The NDR with its full-length trials.
    #[serde(default)]
    pub ndr: Option<Found>,
    /// The PDR with its full-length trials.
    #[serde(default)]
    pub pdr: Option<Found>,
    /// Sum of the trials' measured lengths, s.
    #[serde(default)]
    pub trial_time_s: f64,
    /// The engine that sent ("generator", "xdp", ...).
    #[serde(default)]
    pub tx_engine: String,
}

/// The throughput search's configuration: the NDR and the PDR together,
/// to the budget's width and trials; `binary`, one full-length trial per
/// load.
fn search_settings(kind: SearchArg, (ndr_loss, pdr_loss): (f64, f64), budget: &Budget) -> Settings {
    Settings {
        one_trial_per_load: kind == SearchArg::Binary,
        ..Settings::mlr(ndr_loss, pdr_loss, budget.width, budget.mlr_trials)
    }
}

/// Finds the NDR and the PDR together: MLRsearch in the configuration
/// `kind` names, at most `budget.mlr_trials` trials after the unpaced one.
pub fn throughput(
    plan: &StreamPlan,
    (ndr_loss, pdr_loss): (f64, f64),
    budget: &Budget,
    kind: SearchArg,
    interrupted: &Arc<AtomicBool>,
) -> Result<Ran<Throughput>> {
    let settings = search_settings(kind, (ndr_loss, pdr_loss), budget);
    let m = mlrsearch::run(plan, settings, interrupted)?;
    let outcome = Throughput {
        tolerance_pct: ndr_loss,
        search: settings.name().into(),
        trials: m.trials.clone(),
        highest_fps: m.trials.first().map_or(0.0, |t| t.sent_fps),
        fps: m.ndr.as_ref().map(|f| f.fps),
        offered_pps: m.ndr.as_ref().and_then(|f| f.offered_pps),
        ndr: m.ndr.clone(),
        pdr: m.pdr.clone(),
        trial_time_s: m.trial_time_s,
        tx_engine: m
            .kept
            .as_ref()
            .map_or(String::new(), |r| r.setup.tx_engine.clone()),
    };
    Ok(Ran {
        outcome,
        result: m.kept,
        interrupted: m.interrupted || m.fault.is_some(),
    })
}

/// Latency at the throughput rate: every frame's one-way latency, over
/// several trials (RFC 2544 26.2 repeats the test and reports the
/// average; here the median trial, with the range).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyAt {
    /// Rate per queue offered (None: unpaced, the path carried all).
    pub offered_pps: Option<f64>,
    /// Frames per second received (the median trial).
    pub fps: f64,
    /// Every received frame's latency (the median trial).
    pub latency: Option<Latency>,
    /// The figure RFC 2544 reports (the mean of tagged frames' latencies):
    /// here the median over the trials of the mean of every frame's, us.
    pub rfc_us: Option<f64>,
    /// Each trial's mean, us, in order.
    #[serde(default)]
    pub trials_us: Vec<f64>,
    /// The lowest and highest of them.
    #[serde(default)]
    pub range_us: Option<(f64, f64)>,
}

/// How many times a latency trial that received nothing runs again (the
/// throughput test carried its rate: a busy machine, not the path).
pub const LATENCY_RETRIES: u32 = 2;

/// The trial lengths one latency trial takes at most, its retries
/// included: 1 + 2 + 4.
const LATENCY_RETRY_LENGTHS: usize = (1 << (LATENCY_RETRIES + 1)) - 1;

/// A latency trial that received nothing, after `retries_done` retries
/// of a run of `duration`: how long its next try runs (twice, then four
/// times as long), or None when it fails (after [`LATENCY_RETRIES`]).
pub fn latency_retry(duration: Duration, retries_done: u32) -> Option<Duration> {
    (retries_done < LATENCY_RETRIES).then(|| duration * 2u32.pow(retries_done + 1))
}

/// `repeats` trials at the rate the throughput test found; one that
/// received nothing runs again, longer ([`latency_retry`]), at most
/// [`LATENCY_RETRIES`] times before the test fails.
pub fn latency(
    plan: &StreamPlan,
    found: &Throughput,
    repeats: usize,
    interrupted: &Arc<AtomicBool>,
) -> Result<Ran<LatencyAt>> {
    let mut runs: Vec<(f64, StreamResult)> = Vec::new();
    let mut last = None;
    for _ in 0..repeats.max(1) {
        let (mut window, mut retries) = (plan.run.timing.duration, 0);
        let r = loop {
            let mut p = plan.clone();
            p.run.timing.duration = window;
            let r = trial(&p, found.offered_pps, None, interrupted)?;
            if r.common.interrupted || r.common.fault.is_some() || search::measured(&r) {
                break r;
            }
            // The throughput test carried this rate: a trial that received
            // nothing met a busy machine, and runs again, longer.
            let Some(longer) = latency_retry(plan.run.timing.duration, retries) else {
                anyhow::bail!(
                    "the latency trial measured nothing ({} frame(s) received in a window of {} s; {} tries, the last {} long), though the throughput test carried its rate: is something else loading the machine?",
                    r.receiver.frames,
                    r.common.window_s,
                    1 + retries,
                    humantime::format_duration(window)
                );
            };
            (window, retries) = (longer, retries + 1);
        };
        let stop = r.common.interrupted || r.common.fault.is_some();
        if let Some(mean) = r.latency.as_ref().map(|l| l.mean_us) {
            runs.push((mean, r.clone()));
        }
        last = Some(r);
        if stop {
            let r = last.expect("a trial ran");
            return Ok(Ran {
                outcome: LatencyAt {
                    offered_pps: found.offered_pps,
                    fps: r.receiver.frames_per_s,
                    latency: r.latency.clone(),
                    rfc_us: r.latency.as_ref().map(|l| l.mean_us),
                    ..Default::default()
                },
                result: Some(r),
                interrupted: true,
            });
        }
    }
    let trials_us: Vec<f64> = runs.iter().map(|r| r.0).collect();
    // The median trial (the lower middle one of an even count) is kept.
    let kept = median_observation(&trials_us)
        .map(|i| runs[i].1.clone())
        .or(last)
        .expect("a trial ran");
    let range_us = trials_us
        .iter()
        .copied()
        .reduce(f64::min)
        .zip(trials_us.iter().copied().reduce(f64::max));
    Ok(Ran {
        outcome: LatencyAt {
            offered_pps: found.offered_pps,
            fps: kept.receiver.frames_per_s,
            latency: kept.latency.clone(),
            rfc_us: median(&trials_us),
            trials_us,
            range_us,
        },
        interrupted: false,
        result: Some(kept),
    })
}

/// Frame loss rate at 100, 90, 80 ... % of the highest rate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FrameLoss {
    /// 100 %: frames/s, all queues (the highest rate the sender reached;
    /// a veth pair has no line rate).
    pub base_fps: f64,
    /// (percent of the base, the trial), in order.
    pub steps: Vec<(f64, Trial)>,
}

/// Steps down by 10 % until two steps in a row lose nothing.
pub fn frame_loss(
    plan: &StreamPlan,
    base_fps: f64,
    interrupted: &Arc<AtomicBool>,
) -> Result<Ran<FrameLoss>> {
    let queues = f64::from(plan.path.queues);
    let mut out = FrameLoss {
        base_fps,
        steps: Vec::new(),
    };
    let mut last = None;
    let mut clean = 0;
    for pct in LOSS_STEPS {
        let pps = (base_fps * pct / 100.0 / queues).max(1.0);
        let r = trial(plan, Some(pps), None, interrupted)?;
        // What the sender's link dropped is lost too (the generator).
        let lossless = r.frames.sent > 0 && search::trial_loss(&r.frames) == 0.0;
        out.steps.push((pct, Trial::of(Some(pps), &r, lossless)));
        let stop = r.common.interrupted || r.common.fault.is_some();
        clean = if lossless { clean + 1 } else { 0 };
        last = Some(r);
        if stop {
            return Ok(Ran {
                outcome: out,
                result: last,
                interrupted: true,
            });
        }
        if clean == 2 {
            break;
        }
    }
    Ok(Ran {
        outcome: out,
        result: last,
        interrupted: false,
    })
}

/// Back-to-back (RFC 2544 26.4 as RFC 9004 updates it): the longest burst
/// at the highest rate that arrives whole, searched for several times.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BackToBack {
    /// The rate of the bursts: unpaced, frames/s all queues as the
    /// throughput test's unpaced trial sent (a veth pair has no line rate:
    /// RFC 9004's Max Theoretical Frame Rate).
    pub rate_fps: f64,
    /// The longest burst tried: a trial's worth at that rate.
    pub cap_frames: u64,
    /// (burst frames per queue, the trial, whether it arrived whole).
    pub bursts: Vec<(u64, Trial, bool)>,
    /// The Back-to-back Frame benchmark: the median of the searches'
    /// longest whole bursts, frames all queues (None: none arrived whole,
    /// or no burst was lost: see `not_reached`).
    pub longest_frames: Option<u64>,
    /// Its length in time at the rate, s: RFC 9004's Implied DUT Buffer
    /// Time (the benchmark over the Max Theoretical Frame Rate).
    pub longest_s: Option<f64>,
    /// Each search's longest whole burst, frames all queues (None: none
    /// whole), in order.
    #[serde(default)]
    pub searches: Vec<Option<u64>>,
    /// The lowest and highest of them.
    #[serde(default)]
    pub range_frames: Option<(u64, u64)>,
    /// Set when no burst was lost, up to the longest tried: the benchmark
    /// is not reached, and this says so ("not reached: no loss up to N
    /// frames (T us)").
    #[serde(default)]
    pub not_reached: Option<String>,
}

impl BackToBack {
    /// The figure as the table shows it.
    pub fn shown(&self) -> String {
        match (&self.not_reached, self.longest_frames) {
            (Some(n), _) => n.clone(),
            (None, Some(f)) => f.to_string(),
            (None, None) => "none whole".into(),
        }
    }
}

/// The text of a benchmark not reached.
pub fn not_reached(cap_frames: u64, rate_fps: f64) -> String {
    let us = if rate_fps > 0.0 {
        format!(" ({:.0} us)", cap_frames as f64 / rate_fps * 1e6)
    } else {
        String::new()
    };
    format!("not reached: no loss up to {cap_frames} frames{us}")
}

/// The burst that stands for the searches: the median one, or of an even
/// count the lower middle one (a burst that arrived whole, as RFC 9004's
/// figure must be).
fn median_burst(v: &[u64]) -> Option<u64> {
    let f: Vec<f64> = v.iter().map(|&x| x as f64).collect();
    median_observation(&f).map(|i| v[i])
}

/// RFC 9004's search, `budget.b2b_trials` times: the first doubles the
/// burst from a trial's worth (the cap) over 2^doublings until one is cut
/// (or the cap arrives whole), then halves the interval between the last
/// whole burst and the first cut one (when the first is cut, halves
/// down); each next search starts at the longest whole burst found so far.
pub fn back_to_back(
    plan: &StreamPlan,
    rate_fps: f64,
    budget: &Budget,
    interrupted: &Arc<AtomicBool>,
) -> Result<Ran<BackToBack>> {
    let queues = plan.path.queues.max(1);
    let secs = plan.run.timing.duration.as_secs_f64();
    let cap = ((rate_fps * secs / f64::from(queues)) as u64).max(2);
    let mut out = BackToBack {
        rate_fps,
        cap_frames: cap * u64::from(queues),
        ..Default::default()
    };
    let mut last = None;
    let mut cut_any = false;
    let mut start = (cap >> budget.doublings).max(1);
    for _ in 0..budget.b2b_trials.max(1) {
        let Some(good) = b2b_search(
            plan,
            cap,
            start,
            budget,
            interrupted,
            &mut out,
            &mut last,
            &mut cut_any,
        )?
        else {
            return Ok(stopped(out, last));
        };
        out.searches
            .push((good > 0).then(|| good * u64::from(queues)));
        if good > 0 {
            start = good;
        }
    }
    let whole: Vec<u64> = out.searches.iter().flatten().copied().collect();
    if !cut_any {
        out.not_reached = Some(not_reached(out.cap_frames, rate_fps));
    } else if let Some(m) = median_burst(&whole) {
        out.longest_frames = Some(m);
        out.longest_s = (rate_fps > 0.0).then(|| m as f64 / rate_fps);
        out.range_frames = whole
            .iter()
            .min()
            .zip(whole.iter().max())
            .map(|(a, b)| (*a, *b));
    }
    Ok(Ran {
        outcome: out,
        result: last,
        interrupted: false,
    })
}

/// One search for the longest whole burst, from `start` frames per queue:
/// the longest whole one (0: none), or None when the run was cut short.
#[allow(clippy::too_many_arguments)]
fn b2b_search(
    plan: &StreamPlan,
    cap: u64,
    start: u64,
    budget: &Budget,
    interrupted: &Arc<AtomicBool>,
    out: &mut BackToBack,
    last: &mut Option<StreamResult>,
    cut_any: &mut bool,
) -> Result<Option<u64>> {
    let queues = plan.path.queues.max(1);
    let mut burst = |n: u64, out: &mut BackToBack| -> Result<Option<bool>> {
        let r = trial(plan, None, Some(n), interrupted)?;
        let want = n * u64::from(queues);
        let whole = r.frames.sent == want && r.frames.received == want && r.frames.lost == 0;
        out.bursts.push((n, Trial::of(None, &r, whole), whole));
        let stop = r.common.interrupted || r.common.fault.is_some();
        *last = Some(r);
        if !whole {
            *cut_any = true;
        }
        Ok((!stop).then_some(whole))
    };
    let (mut good, mut bad) = (0u64, None::<u64>);
    let mut n = start.clamp(1, cap);
    // Up (or down, when the first is cut) by factors of two.
    for _ in 0..=budget.doublings + budget.halvings {
        let Some(whole) = burst(n, out)? else {
            return Ok(None);
        };
        if whole {
            good = good.max(n);
            if bad.is_some() || n >= cap {
                break;
            }
            n = (n * 2).min(cap);
        } else {
            bad = Some(n);
            if good > 0 || n == 1 {
                break;
            }
            n /= 2;
        }
    }
    // Between the last whole burst and the first cut one.
    if let Some(mut hi) = bad.filter(|_| good > 0) {
        for _ in 0..budget.halvings {
            let mid = good + (hi - good) / 2;
            if mid == good || interrupted.load(Ordering::Relaxed) {
                break;
            }
            match burst(mid, out)? {
                None => return Ok(None),
                Some(true) => good = mid,
                Some(false) => hi = mid,
            }
        }
    }
    Ok(Some(good))
}

fn stopped(out: BackToBack, last: Option<StreamResult>) -> Ran<BackToBack> {
    Ran {
        outcome: out,
        result: last,
        interrupted: true,
    }
}

/// One stream trial: paced at `rate` per queue (None: unpaced), or a burst
/// of `count` frames per queue.
fn trial(
    plan: &StreamPlan,
    rate: Option<f64>,
    count: Option<u64>,
    interrupted: &Arc<AtomicBool>,
) -> Result<StreamResult> {
    let mut p = plan.clone();
    p.rate = rate;
    p.count = count;
    // Trials are many and short: no noise floor before each (the
    // report's latency is RFC 2544's, not held against a floor).
    p.run.timing.floor = false;
    stream::run(&p, interrupted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_throughput_is_one_search_for_both_goals_one_trial_per_load() {
        let b = search_settings(SearchArg::Binary, (0.0, 0.5), &Budget::QUICK);
        assert_eq!(b.name(), "binary");
        assert_eq!(b.losses(), vec![("NDR", 0.0), ("PDR", 0.5)]);
        assert_eq!((b.width, b.max_trials), (0.02, 24));
        assert_eq!((b.exceed_ratio(), b.unpaced_trials()), (0.0, 1));
        assert!(b.goals(1.0).iter().all(|g| g.targets().len() == 1));
        let m = search_settings(SearchArg::Mlr, (0.0, 0.5), &Budget::FULL);
        assert_eq!(m, Settings::mlr(0.0, 0.5, 0.01, 40));
        assert_eq!(Budget::FULL.trials_per_size(), 1 + 40 + 5 * 7 + 10 + 5 * 12);
    }

    #[test]
    fn throughput_records_of_the_old_binary_searches_still_load() {
        // Written by two binary searches (one per goal), and before
        // MLRsearch (no search, no NDR or PDR kept).
        let two = r#"{"tolerance_pct":0.0,"search":"binary","trials":[{"offered_pps":null,"sent":10,"received":9,"sent_fps":100.0,"received_fps":90.0,"loss_pct":10.0,"pass":false,"duration_s":1.0},{"offered_pps":25.0,"sent":5,"received":5,"sent_fps":50.0,"received_fps":50.0,"loss_pct":0.0,"pass":true,"duration_s":1.0}],"highest_fps":100.0,"fps":50.0,"offered_pps":25.0,"ndr":{"name":"NDR","loss_pct":0.0,"offered_pps":25.0,"upper_pps":null,"fps":50.0,"fps_min":50.0,"fps_max":50.0,"trials":[],"within_width":true},"pdr":null,"trial_time_s":2.0,"tx_engine":"xdp"}"#;
        let t: Throughput = serde_json::from_str(two).unwrap();
        assert_eq!(
            (t.search.as_str(), t.fps, t.trials.len()),
            ("binary", Some(50.0), 2)
        );
        assert_eq!(t.ndr.unwrap().offered_pps, Some(25.0));
        let old = r#"{"tolerance_pct":0.0,"trials":[{"offered_pps":null,"sent":10,"received":10,"sent_fps":100.0,"received_fps":100.0,"loss_pct":0.0,"pass":true}],"highest_fps":100.0,"fps":100.0,"offered_pps":null}"#;
        let t: Throughput = serde_json::from_str(old).unwrap();
        assert_eq!((t.search.as_str(), t.fps), ("", Some(100.0)));
        assert_eq!((t.trials[0].duration_s, t.ndr, t.pdr), (0.0, None, None));
    }

    #[test]
    fn a_burst_never_lost_is_not_reached_and_says_so() {
        assert_eq!(
            not_reached(300_000, 1e6),
            "not reached: no loss up to 300000 frames (300000 us)"
        );
        let b = BackToBack {
            cap_frames: 1000,
            not_reached: Some(not_reached(1000, 1e6)),
            ..Default::default()
        };
        assert_eq!(
            b.shown(),
            "not reached: no loss up to 1000 frames (1000 us)"
        );
        let b = BackToBack {
            longest_frames: Some(640),
            ..Default::default()
        };
        assert_eq!(b.shown(), "640");
        assert_eq!(BackToBack::default().shown(), "none whole");
    }

    #[test]
    fn the_benchmark_is_the_median_of_the_searches() {
        assert_eq!(median_burst(&[5, 1, 3]), Some(3));
        assert_eq!(median_burst(&[4, 2]), Some(2));
        assert_eq!(median_burst(&[]), None);
    }

    #[test]
    fn a_latency_trial_that_received_nothing_runs_again_longer_twice() {
        let d = Duration::from_millis(200);
        assert_eq!(latency_retry(d, 0), Some(Duration::from_millis(400)));
        assert_eq!(latency_retry(d, 1), Some(Duration::from_millis(800)));
        assert_eq!(latency_retry(d, 2), None);
        assert_eq!(latency_retry(d, 7), None);
        // At most 1 + 2 + 4 = 7 trial lengths for one latency trial: what
        // the announced estimate counts.
        let tries: Vec<Duration> = std::iter::successors(Some((d, 0)), |&(_, n)| {
            latency_retry(d, n).map(|x| (x, n + 1))
        })
        .map(|t| t.0)
        .collect();
        assert_eq!(tries.len() as u32, 1 + LATENCY_RETRIES);
        assert_eq!(
            tries.iter().sum::<Duration>(),
            d * LATENCY_RETRY_LENGTHS as u32
        );
    }
}
