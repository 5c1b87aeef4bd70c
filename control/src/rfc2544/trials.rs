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
    plan::stream::StreamPlan,
    results::latency::Latency,
    results::stream::StreamResult,
    stream::{self, search},
};

pub use search::Trial;

/// The loss test's steps, percent of the highest rate: 100, 90, ... 10.
const LOSS_STEPS: [f64; 10] = [100.0, 90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 20.0, 10.0];

/// How many trials each test may take.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Paced trials of the throughput search after the unpaced one.
    pub search: usize,
    /// Back-to-back trials: doubling steps, then halving steps.
    pub doublings: u32,
    /// Halving steps between the last whole burst and the first cut one.
    pub halvings: u32,
}

impl Budget {
    /// A full run: the search as `stream --search-rate` runs it.
    pub const FULL: Self = Self {
        search: search::MAX_TRIALS,
        doublings: 6,
        halvings: 5,
    };
    /// `--quick`: fewer trials (a coarser search).
    pub const QUICK: Self = Self {
        search: 5,
        doublings: 2,
        halvings: 2,
    };

    /// Trials a size takes at most: the search, one latency trial, the
    /// loss steps, and the bursts (shortest burst down to 1 frame at worst).
    pub fn trials_per_size(&self) -> usize {
        1 + self.search + 1 + LOSS_STEPS.len() + 1 + (self.doublings + self.halvings) as usize
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

/// Throughput: the highest rate with loss within the tolerance.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Loss tolerated, %.
    pub tolerance_pct: f64,
    /// Every trial, the first unpaced.
    pub trials: Vec<Trial>,
    /// The highest rate reached: frames/s sent by the unpaced trial.
    pub highest_fps: f64,
    /// The rate found, frames/s received (None: no rate within).
    pub fps: Option<f64>,
    /// The rate found per queue, as offered (None: unpaced).
    pub offered_pps: Option<f64>,
}

/// Runs the search of `stream --search-rate` with at most `budget` paced trials.
pub fn throughput(
    plan: &StreamPlan,
    tolerance: f64,
    budget: usize,
    interrupted: &Arc<AtomicBool>,
) -> Result<Ran<Throughput>> {
    let s = search::run_limited(plan, tolerance, budget, interrupted)?;
    let outcome = Throughput {
        tolerance_pct: tolerance,
        trials: s.trials.clone(),
        highest_fps: s.trials.first().map_or(0.0, |t| t.sent_fps),
        fps: s.found.as_ref().map(|f| f.receiver.frames_per_s),
        offered_pps: s.found.as_ref().and_then(|f| f.params.rate_pps),
    };
    Ok(Ran {
        outcome,
        result: s.found,
        interrupted: s.interrupted || s.fault.is_some(),
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
