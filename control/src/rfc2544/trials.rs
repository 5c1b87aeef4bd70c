//! The four tests of RFC 2544 section 26 at one frame size, each a series
//! of stream trials run by the stream machinery: what each found, as the
//! report reads it back from results.jsonl.

use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::{
    cli::SearchArg,
    plan::stream::StreamPlan,
    results::latency::Latency,
    results::stream::StreamResult,
    stream::{
        self,
        mlrsearch::{self, Found, Settings},
        search,
    },
};

pub use search::Trial;

/// The loss test's steps, percent of the highest rate: 100, 90, ... 10.
const LOSS_STEPS: [f64; 10] = [100.0, 90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 20.0, 10.0];

/// How many trials each test may take.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Paced trials of a binary search after the unpaced one.
    pub search: usize,
    /// MLRsearch's trials after the unpaced one, at most.
    pub mlr_trials: usize,
    /// The throughput search's width (MLRsearch's Goal Width), relative.
    pub width: f64,
    /// Back-to-back trials: doubling steps, then halving steps.
    pub doublings: u32,
    /// Halving steps between the last whole burst and the first cut one.
    pub halvings: u32,
    /// Back-to-back trials (RFC 9004: repeated), each a search of its own.
    pub b2b_trials: usize,
}

impl Budget {
    /// A full run: the search as `stream --search-rate` runs it.
    pub const FULL: Self = Self {
        search: search::MAX_TRIALS,
        mlr_trials: 40,
        width: search::RESOLUTION,
        doublings: 6,
        halvings: 5,
        b2b_trials: 5,
    };
    /// `--quick`: fewer trials (a coarser search).
    pub const QUICK: Self = Self {
        search: 5,
        mlr_trials: 24,
        width: 0.02,
        doublings: 2,
        halvings: 2,
        b2b_trials: 3,
    };

    /// Trials a size takes at most: the search (MLRsearch's, or two binary
    /// searches), one latency trial, the loss steps, and the bursts
    /// (shortest burst down to 1 frame at worst), repeated.
    pub fn trials_per_size(&self) -> usize {
        1 + self.mlr_trials.max(2 * self.search + 1)
            + 1
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
/// the PDR (loss within --pdr-loss), found together by MLRsearch (or by
/// two binary searches, `--search binary`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Loss tolerated (the NDR's), %.
    pub tolerance_pct: f64,
    /// The search: "mlr" or "binary" (empty in results written before
    /// MLRsearch: a binary search).
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

/// A binary search's rate as MLRsearch's: its one full-length trial.
fn binary_found(name: &str, s: &search::SearchResult) -> Option<Found> {
    let f = s.found.as_ref()?;
    let t = s.trials.iter().rev().find(|t| t.pass)?.clone();
    let upper = s
        .trials
        .iter()
        .filter(|t| !t.pass)
        .filter_map(|t| t.offered_pps)
        .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.min(x))));
    Some(Found {
        name: name.into(),
        loss_pct: s.loss_threshold_pct,
        offered_pps: f.params.rate_pps,
        upper_pps: upper,
        fps: t.received_fps,
        fps_min: t.received_fps,
        fps_max: t.received_fps,
        trials: vec![t],
        within_width: true,
    })
}

/// Finds the NDR and the PDR: MLRsearch, or two binary searches of at
/// most `budget.search` paced trials each.
pub fn throughput(
    plan: &StreamPlan,
    (ndr_loss, pdr_loss): (f64, f64),
    budget: &Budget,
    kind: SearchArg,
    interrupted: &Arc<AtomicBool>,
) -> Result<Ran<Throughput>> {
    let engine = |r: &Option<StreamResult>| r.as_ref().map_or(String::new(), |r| r.setup.tx_engine.clone());
    if kind == SearchArg::Mlr {
        let settings = Settings {
            ndr_loss_pct: ndr_loss,
            pdr_loss_pct: pdr_loss,
            width: budget.width,
            max_trials: budget.mlr_trials,
        };
        let m = mlrsearch::run(plan, settings, interrupted)?;
        let outcome = Throughput {
            tolerance_pct: ndr_loss,
            search: "mlr".into(),
            trials: m.trials.clone(),
            highest_fps: m.trials.first().map_or(0.0, |t| t.sent_fps),
            fps: m.ndr.as_ref().map(|f| f.fps),
            offered_pps: m.ndr.as_ref().and_then(|f| f.offered_pps),
            ndr: m.ndr.clone(),
            pdr: m.pdr.clone(),
            trial_time_s: m.trial_time_s,
            tx_engine: engine(&m.kept),
        };
        return Ok(Ran {
            outcome,
            result: m.kept,
            interrupted: m.interrupted || m.fault.is_some(),
        });
    }
    let s = search::run_limited(plan, ndr_loss, budget.search, interrupted)?;
    let mut trials = s.trials.clone();
    let cut = s.interrupted || s.fault.is_some();
    let p = if cut {
        None
    } else {
        Some(search::run_limited(plan, pdr_loss, budget.search, interrupted)?)
    };
    trials.extend(p.iter().flat_map(|p| p.trials.clone()));
    let ndr = binary_found("NDR", &s);
    let outcome = Throughput {
        tolerance_pct: ndr_loss,
        search: "binary".into(),
        highest_fps: s.trials.first().map_or(0.0, |t| t.sent_fps),
        fps: ndr.as_ref().map(|f| f.fps),
        offered_pps: s.found.as_ref().and_then(|f| f.params.rate_pps),
        trial_time_s: trials.iter().map(|t| t.duration_s).sum(),
        trials,
        ndr,
        pdr: p.as_ref().and_then(|p| binary_found("PDR", p)),
        tx_engine: engine(&s.found),
    };
    Ok(Ran {
        outcome,
        result: s.found,
        interrupted: cut || p.is_some_and(|p| p.interrupted || p.fault.is_some()),
    })
}

/// Latency at the throughput rate: every frame's one-way latency.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyAt {
    /// Rate per queue offered (None: unpaced, the path carried all).
    pub offered_pps: Option<f64>,
    /// Frames per second received.
    pub fps: f64,
    /// Every received frame's latency.
    pub latency: Option<Latency>,
    /// The figure RFC 2544 reports (the mean of tagged frames' latencies):
    /// here the mean of every frame's, us.
    pub rfc_us: Option<f64>,
}

/// One trial at the rate the throughput test found.
pub fn latency(
    plan: &StreamPlan,
    found: &Throughput,
    interrupted: &Arc<AtomicBool>,
) -> Result<Ran<LatencyAt>> {
    let r = trial(plan, found.offered_pps, None, interrupted)?;
    if !(r.interrupted || r.fault.is_some() || search::measured(&r)) {
        anyhow::bail!(
            "the latency trial measured nothing ({} frame(s) received in a window of {} s)",
            r.receiver.frames,
            r.window_s
        );
    }
    let latency = r.latency.clone();
    Ok(Ran {
        outcome: LatencyAt {
            offered_pps: found.offered_pps,
            fps: r.receiver.frames_per_s,
            rfc_us: latency.as_ref().map(|l| l.mean_us),
            latency,
        },
        interrupted: r.interrupted || r.fault.is_some(),
        result: Some(r),
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
    let queues = f64::from(plan.args.run.queues);
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
        let stop = r.interrupted || r.fault.is_some();
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

/// Back-to-back: the longest burst at the highest rate that arrives whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BackToBack {
    /// The rate of the bursts: unpaced, frames/s all queues as the
    /// throughput test's unpaced trial sent.
    pub rate_fps: f64,
    /// The longest burst tried: a trial's worth at that rate.
    pub cap_frames: u64,
    /// (burst frames per queue, the trial, whether it arrived whole).
    pub bursts: Vec<(u64, Trial, bool)>,
    /// The longest burst that arrived whole, frames (all queues).
    pub longest_frames: Option<u64>,
    /// Its length in time at the rate, s.
    pub longest_s: Option<f64>,
}

/// Doubles the burst from a trial's worth (the cap) over 2^doublings until
/// one is cut (or the cap arrives whole), then halves the interval between the last whole burst
/// and the first cut one; when the first is cut, halves down.
pub fn back_to_back(
    plan: &StreamPlan,
    rate_fps: f64,
    budget: &Budget,
    interrupted: &Arc<AtomicBool>,
) -> Result<Ran<BackToBack>> {
    let queues = plan.args.run.queues.max(1);
    let secs = plan.args.run.duration.as_secs_f64();
    let cap = ((rate_fps * secs / f64::from(queues)) as u64).max(2);
    let mut out = BackToBack {
        rate_fps,
        cap_frames: cap * u64::from(queues),
        ..Default::default()
    };
    let mut last = None;
    let mut burst = |n: u64, out: &mut BackToBack| -> Result<Option<bool>> {
        let r = trial(plan, None, Some(n), interrupted)?;
        let want = n * u64::from(queues);
        let whole = r.frames.sent == want && r.frames.received == want && r.frames.lost == 0;
        out.bursts.push((n, Trial::of(None, &r, whole), whole));
        let stop = r.interrupted || r.fault.is_some();
        last = Some(r);
        Ok((!stop).then_some(whole))
    };
    let (mut good, mut bad) = (0u64, None::<u64>);
    let mut n = (cap >> budget.doublings).max(1);
    // Up (or down, when the first is cut) by factors of two.
    for _ in 0..=budget.doublings + budget.halvings {
        let Some(whole) = burst(n, &mut out)? else {
            return Ok(stopped(out, last));
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
            match burst(mid, &mut out)? {
                None => return Ok(stopped(out, last)),
                Some(true) => good = mid,
                Some(false) => hi = mid,
            }
        }
    }
    if good > 0 {
        let frames = good * u64::from(queues);
        out.longest_frames = Some(frames);
        out.longest_s = (rate_fps > 0.0).then(|| frames as f64 / rate_fps);
    }
    Ok(Ran {
        outcome: out,
        result: last,
        interrupted: false,
    })
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
    p.args.rate = rate;
    p.args.count = count;
    stream::run(&p, interrupted)
}
