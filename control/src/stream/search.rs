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
use linerate_datapath::message::Fragmentation;
use serde::{Deserialize, Serialize};

use crate::plan::stream::StreamPlan;
use linerate_results::stream::StreamResult;

/// Trials after the first, at most.
pub const MAX_TRIALS: usize = 10;
/// The search ends when the interval is this narrow (share of its top).
pub const RESOLUTION: f64 = 0.01;

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
    /// Whether the loss stayed within the tolerance.
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

/// A trial's loss: frames lost on the way and frames the sending link
/// dropped (a generator's peer ring full), in % of all handed over.
pub fn trial_loss(f: &linerate_results::stream::FrameAccounting) -> f64 {
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

/// The search's first upper bound in `--rate`'s unit, per queue: the
/// unpaced trial's frames per second, or with `--message` its messages per
/// second (the rate counts messages: bounding it by frames would start the
/// search a message's fragment count too high, in effect unpaced).
pub(super) fn upper_bound(sent_fps: f64, queues: f64, message: Option<&Fragmentation>) -> f64 {
    sent_fps / queues / message.map_or(1.0, |m| m.count.max(1) as f64)
}

/// Runs the search.
pub fn run(
    plan: &StreamPlan,
    threshold: f64,
    interrupted: &Arc<AtomicBool>,
) -> Result<SearchResult> {
    run_limited(plan, threshold, MAX_TRIALS, interrupted)
}

/// Runs the search with at most `max_trials` paced trials after the
/// unpaced one (`rfc2544 --quick` takes fewer).
pub fn run_limited(
    plan: &StreamPlan,
    threshold: f64,
    max_trials: usize,
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
        let mut paced = plan.clone();
        paced.args.rate = rate;
        let result = super::run::run(&paced, interrupted)?;
        // A trial passes on a measurement: frames received in a window
        // of some length (a window too short to measure counts nothing).
        let pass = measured(&result)
            && trial_loss(&result.frames) <= threshold
            && result.common.fault.is_none();
        out.trials.push(Trial::of(rate, &result, pass));
        out.interrupted = result.common.interrupted;
        out.fault.clone_from(&result.common.fault);
        if result.common.interrupted || result.common.fault.is_some() {
            return Ok(None);
        }
        if pass {
            out.found = Some(result);
        }
        Ok(Some(pass))
    };
    let Some(pass) = trial(None, &mut out)? else {
        return Ok(out);
    };
    if pass {
        return Ok(out);
    }
    let (mut lo, mut hi) = (
        0.0,
        upper_bound(out.trials[0].sent_fps, queues, plan.message.as_ref()),
    );
    for _ in 0..max_trials {
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
pub fn print_table(search: &SearchResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "linerate stream --search-rate {}: the highest rate with loss <= {} % ({} % resolution)",
        search.loss_threshold_pct, search.loss_threshold_pct, search.resolution_pct
    );
    let _ = writeln!(
        out,
        "  trial  offered/s per queue      sent/s    received/s    loss %  verdict"
    );
    for (index, trial) in search.trials.iter().enumerate() {
        let offered = trial
            .offered_pps
            .map_or("unpaced".to_string(), |p| format!("{p:.0}"));
        let _ = writeln!(
            out,
            "  {:>5}  {:>19}  {:>10.0}  {:>12.0}  {:>8.4}  {}",
            index + 1,
            offered,
            trial.sent_fps,
            trial.received_fps,
            trial.loss_pct,
            if trial.pass { "within" } else { "over" }
        );
    }
    match &search.found {
        Some(found) => {
            let _ = writeln!(
                out,
                "  found: {:.0} frames/s received ({:.1} payload MB/s), loss {:.4} %; that run:",
                found.receiver.frames_per_s, found.receiver.payload_mb_s, found.frames.loss_pct
            );
            out.push_str(&linerate_results::stream_table::print_table(found));
        }
        None => {
            let _ = writeln!(
                out,
                "  found: no rate within {} % loss{}",
                search.loss_threshold_pct,
                if search.interrupted || search.fault.is_some() {
                    " (the search ended early)"
                } else {
                    " (loss does not fall with the rate: injected, or a path that drops)"
                }
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_results::stream::FrameAccounting;

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
        assert_eq!(upper_bound(1_600_000.0, 16.0, None), 100_000.0);
        let cut = Fragmentation {
            msg_len: 65536,
            per_fragment: 1448,
            count: 46,
        };
        let hi = upper_bound(4_600_000.0, 2.0, Some(&cut));
        assert!((hi - 50_000.0).abs() < 1e-9, "{hi}");
    }
}
