//! The rate search's trial runner: `stream --search-rate` and rfc2544's
//! throughput test, in either configuration of the one search
//! ([`search::Settings`]: `mlr`, the default, or `binary`). The first
//! trial is unpaced and full-length (the highest rate the sender reaches:
//! the search's maximum load); then [`search::drive`] asks for each
//! trial's load and length and this runs it as a paced stream trial. With
//! `mlr`, one search finds the NDR (no loss) and the PDR (loss <= the
//! tolerance); with `binary`, the rate within the one tolerance. Each is
//! the relevant lower bound of its goal's final target, backed by
//! full-length trials whose received rates give its figure (their median
//! and range).

use std::{
    fmt::Write as _,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use anyhow::Result;
use serde::Serialize;

use super::search::{self, frames_per_load, measured, Step, Trial};
use crate::plan::stream::StreamPlan;
use linerate_results::stream::StreamResult;

pub use super::search::{Found, Settings};

/// What the search found.
#[derive(Debug, Clone, Serialize)]
pub struct MlrResult {
    /// "stream-mlrsearch".
    pub test: &'static str,
    /// The configuration: "mlr" (MLRsearch's own) or "binary" (one
    /// full-length trial per load, goal exceed ratio 0).
    pub search: &'static str,
    /// The NDR's loss tolerance, % (`binary`: its one goal's).
    pub ndr_loss_pct: f64,
    /// The PDR's (None with `binary`: one goal).
    pub pdr_loss_pct: Option<f64>,
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
    /// Every trial, in order (the first unpaced); `pass`: within the
    /// NDR's loss.
    pub trials: Vec<Trial>,
    /// The NDR (`binary`: the rate within its one loss tolerance; None:
    /// not even the minimum load met it).
    pub ndr: Option<Found>,
    /// The PDR (None with `binary`: one goal).
    pub pdr: Option<Found>,
    /// Trial time: the sum of every trial's measured length, s.
    pub trial_time_s: f64,
    /// Wall time of the search, s.
    pub wall_s: f64,
    /// The last full-length trial at the NDR, whole (None: no rate).
    #[serde(rename = "found")]
    pub kept: Option<StreamResult>,
    /// Whether Ctrl-C/SIGTERM ended the search early.
    pub interrupted: bool,
    /// A fault of the path that ended it, if one did.
    pub fault: Option<String>,
}

/// Runs the search on `plan` (its --duration: the full-length trials):
/// [`search::drive`] decides each trial, this runs it as a stream trial.
pub fn run(plan: &StreamPlan, s: Settings, interrupted: &Arc<AtomicBool>) -> Result<MlrResult> {
    let started = Instant::now();
    let queues = plan.path.queues;
    let per_load = frames_per_load(queues, plan.message.as_ref().map_or(1, |m| m.count));
    let final_s = plan.run.timing.duration.as_secs_f64();
    let mut out = MlrResult::empty(&s, final_s);
    // Every trial's whole result, in order.
    let mut results: Vec<StreamResult> = Vec::new();
    let trial = |rate: Option<f64>, secs: f64| -> Result<Option<Step>> {
        if interrupted.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let mut p = plan.clone();
        p.rate = rate;
        p.run.timing.duration = Duration::from_secs_f64(secs);
        p.run.timing.warmup = p.run.timing.warmup.min(p.run.timing.duration);
        // A trial's figure is its loss: no noise floor before each.
        p.run.timing.floor = false;
        let r = super::run::run(&p, interrupted)?;
        let step = Step {
            trial: Trial::of(rate, &r, false),
            measured: measured(&r) && r.common.fault.is_none(),
            last: r.common.interrupted || r.common.fault.is_some(),
        };
        out.interrupted = r.common.interrupted;
        out.fault.clone_from(&r.common.fault);
        results.push(r);
        Ok(Some(step))
    };
    let o = search::drive(&s, final_s, per_load, trial)?;
    out.interrupted |= o.ended && out.fault.is_none();
    out.max_load_pps = o.max_load;
    out.trial_time_s = o.trials.iter().map(|t| t.duration_s).sum();
    out.trials = o.trials;
    let mut found = o.found.into_iter();
    (out.ndr, out.pdr) = (found.next().flatten(), found.next().flatten());
    out.kept = o.kept.and_then(|i| results.into_iter().nth(i));
    out.wall_s = started.elapsed().as_secs_f64();
    Ok(out)
}

impl MlrResult {
    /// A search not yet begun.
    fn empty(s: &Settings, final_s: f64) -> Self {
        Self {
            test: "stream-mlrsearch",
            search: s.name(),
            ndr_loss_pct: s.ndr_loss_pct,
            pdr_loss_pct: s.pdr_loss_pct,
            width_pct: s.width * 100.0,
            final_duration_s: final_s,
            initial_duration_s: s.initial_duration(final_s),
            duration_sum_s: s.duration_sum(final_s),
            exceed_ratio: s.exceed_ratio(),
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
    if m.search == "binary" {
        let _ = writeln!(
            out,
            "linerate stream --search-rate {} --search binary (MLRsearch, one full-length trial of {} s per load): the highest rate with loss <= {} % to {} % width",
            m.ndr_loss_pct,
            m.final_duration_s,
            m.ndr_loss_pct,
            m.width_pct,
        );
    } else {
        let _ = writeln!(
            out,
            "linerate stream --search-rate (MLRsearch, draft-ietf-bmwg-mlrsearch): NDR (loss <= {} %) and PDR (loss <= {} %) to {} % width; full-length trials {} s, the first {} s, {} s of trials per load",
            m.ndr_loss_pct,
            m.pdr_loss_pct.unwrap_or(f64::NAN),
            m.width_pct,
            m.final_duration_s,
            m.initial_duration_s,
            m.duration_sum_s,
        );
    }
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
    let goals = [
        ("NDR", &m.ndr, true),
        ("PDR", &m.pdr, m.pdr_loss_pct.is_some()),
    ];
    for (name, f, _) in goals.into_iter().filter(|g| g.2) {
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
    if let Some(kept) = m.kept.as_ref().filter(|_| m.search == "binary") {
        out.push_str("  the run at the rate found:\n");
        out.push_str(&linerate_results::stream_table::print_table(kept));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> StreamResult {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/results/stream.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn binary_prints_its_one_goal_and_the_run_found_and_keeps_found_in_json() {
        let s = Settings::binary(1.0);
        let mut m = MlrResult::empty(&s, 0.5);
        let t = Trial {
            received_fps: 1000.0,
            loss_pct: 0.5,
            pass: true,
            duration_s: 0.5,
            ..Trial::default()
        };
        m.trials = vec![t.clone()];
        m.ndr = Some(search::found("NDR", 1.0, None, None, vec![t], true));
        m.kept = Some(fixture());
        let table = print_table(&m);
        assert!(
            table.starts_with("linerate stream --search-rate 1 --search binary (MLRsearch, one full-length trial of 0.5 s per load): the highest rate with loss <= 1 % to 1 % width\n"),
            "{table}"
        );
        assert!(table.contains("\n  NDR: 1000 frames/s received (median of 1 full-length trial(s), 1000 to 1000), offered unpaced per queue\n"), "{table}");
        assert!(!table.contains("PDR"), "{table}");
        assert!(table.contains("  the run at the rate found:\n"), "{table}");
        let j = serde_json::to_value(&m).unwrap();
        assert_eq!(
            (&j["test"], &j["search"]),
            (&"stream-mlrsearch".into(), &"binary".into())
        );
        assert_eq!(j["exceed_ratio"], 0.0);
        assert_eq!(j["found"]["test"], "stream");
        assert_eq!(j["trials"][0]["pass"], true);
        assert!(j["pdr"].is_null() && j["pdr_loss_pct"].is_null());
        // MLRsearch's own prints both goals, and no run.
        let mut m = MlrResult::empty(&Settings::stream(0.5), 1.0);
        m.kept = Some(fixture());
        let table = print_table(&m);
        assert!(table.contains("\n  NDR: not found") && table.contains("\n  PDR: not found"));
        assert!(!table.contains("the run at the rate found"), "{table}");
    }
}
