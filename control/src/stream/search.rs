//! `linerate stream --search-rate LOSS`: the highest frame rate whose loss
//! stays at or below LOSS % (RFC 2544's throughput with a loss tolerance,
//! TRex's NDR), by a binary search over paced trials of `--duration` each.
//! The first trial is unpaced: if it passes, the path carries all the
//! sender offers; otherwise its sent rate bounds the search.

use std::{
    fmt::Write as _,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
};

use anyhow::Result;
use serde::Serialize;

use super::{plan::StreamPlan, result::StreamResult};

/// Trials after the first, at most.
const MAX_TRIALS: usize = 10;
/// The search ends when the interval is this narrow (share of its top).
const RESOLUTION: f64 = 0.01;

/// One trial of the search.
#[derive(Debug, Clone, Serialize)]
pub struct Trial {
    /// Frames per second per queue offered (None: unpaced).
    pub offered_pps: Option<f64>,
    /// Frames per second sent, all queues.
    pub sent_fps: f64,
    /// Frames per second received, all queues.
    pub received_fps: f64,
    /// Frames lost, % of those sent (whole trial).
    pub loss_pct: f64,
    /// Whether the loss stayed within the tolerance.
    pub pass: bool,
}

/// What the search found.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResult {
    /// "stream-search".
    pub test: &'static str,
    /// The loss tolerated, %.
    pub loss_threshold_pct: f64,
    /// The search's resolution, % of the rate.
    pub resolution_pct: f64,
    /// Every trial, in order.
    pub trials: Vec<Trial>,
    /// The fastest trial within the tolerance (None: not even the slowest).
    pub found: Option<StreamResult>,
    /// Whether Ctrl-C/SIGTERM ended the search early.
    pub interrupted: bool,
    /// A fault of the path that ended it, if one did.
    pub fault: Option<String>,
}

/// Runs the search.
pub fn run(
    plan: &StreamPlan,
    threshold: f64,
    interrupted: &Arc<AtomicBool>,
) -> Result<SearchResult> {
    let queues = f64::from(plan.args.run.queues);
    let mut out = SearchResult {
        test: "stream-search",
        loss_threshold_pct: threshold,
        resolution_pct: RESOLUTION * 100.0,
        trials: Vec::new(),
        found: None,
        interrupted: false,
        fault: None,
    };
    let trial = |rate: Option<f64>, out: &mut SearchResult| -> Result<Option<bool>> {
        let mut p = plan.clone();
        p.args.rate = rate;
        let r = super::run(&p, interrupted)?;
        let pass = r.frames.sent > 0 && r.frames.loss_pct <= threshold && r.fault.is_none();
        out.trials.push(Trial {
            offered_pps: rate,
            sent_fps: r.sender.frames_per_s,
            received_fps: r.receiver.frames_per_s,
            loss_pct: r.frames.loss_pct,
            pass,
        });
        out.interrupted = r.interrupted;
        out.fault.clone_from(&r.fault);
        if r.interrupted || r.fault.is_some() {
            return Ok(None);
        }
        if pass {
            out.found = Some(r);
        }
        Ok(Some(pass))
    };
    let Some(pass) = trial(None, &mut out)? else {
        return Ok(out);
    };
    if pass {
        return Ok(out);
    }
    let (mut lo, mut hi) = (0.0, out.trials[0].sent_fps / queues);
    for _ in 0..MAX_TRIALS {
        if hi - lo <= hi * RESOLUTION || interrupted.load(Ordering::Relaxed) {
            break;
        }
        let mid = (lo + hi) / 2.0;
        match trial(Some(mid), &mut out)? {
            None => break,
            Some(true) => lo = mid,
            Some(false) => hi = mid,
        }
    }
    Ok(out)
}

/// The trials as a table, then the run at the rate found.
pub fn print_table(r: &SearchResult) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "linerate stream --search-rate {}: the highest rate with loss <= {} % ({} % resolution)",
        r.loss_threshold_pct, r.loss_threshold_pct, r.resolution_pct
    );
    let _ = writeln!(
        o,
        "  trial  offered/s per queue      sent/s    received/s    loss %  verdict"
    );
    for (i, t) in r.trials.iter().enumerate() {
        let offered = t
            .offered_pps
            .map_or("unpaced".to_string(), |p| format!("{p:.0}"));
        let _ = writeln!(
            o,
            "  {:>5}  {:>19}  {:>10.0}  {:>12.0}  {:>8.4}  {}",
            i + 1,
            offered,
            t.sent_fps,
            t.received_fps,
            t.loss_pct,
            if t.pass { "within" } else { "over" }
        );
    }
    match &r.found {
        Some(f) => {
            let _ = writeln!(
                o,
                "  found: {:.0} frames/s received ({:.1} payload MB/s), loss {:.4} %; that run:",
                f.receiver.frames_per_s, f.receiver.payload_mb_s, f.frames.loss_pct
            );
            o.push_str(&super::print_table(f));
        }
        None => {
            let _ = writeln!(
                o,
                "  found: no rate within {} % loss{}",
                r.loss_threshold_pct,
                if r.interrupted || r.fault.is_some() {
                    " (the search ended early)"
                } else {
                    " (loss does not fall with the rate: injected, or a path that drops)"
                }
            );
        }
    }
    o
}
