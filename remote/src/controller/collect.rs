//! Following a two-host run to its end: both leases renewed while polling,
//! the receiver stopped once the sender is done, both stopped when one
//! fails, on Ctrl-C or past the deadline; then both results merged (or
//! what there is) with the errors, the cause first.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    thread,
    time::{Duration, Instant},
};

use super::side::Side;
use linerate_results::merge;
use linerate_results::{
    latency::ClockCorrection,
    run::{Partial, RunResult, TwoHostResult},
    two_host::Agents,
};

/// What a two-host run gave.
pub struct Outcome {
    /// The merged result; with one side missing, what there is.
    pub result: TwoHostResult,
    /// What went wrong.
    pub error: Option<String>,
    /// Whether Ctrl-C cut it short.
    pub interrupted: bool,
}

/// How often the controller polls (and renews the leases).
const POLL: Duration = Duration::from_millis(300);
/// After a side failed (or the deadline), how long the other gets to end.
const GIVE_UP: Duration = Duration::from_secs(10);

/// Polls both sides until both ended (or `deadline` and then [`GIVE_UP`]
/// passed).
pub(super) fn follow(
    txs: &mut Side<'_>,
    rxs: &mut Side<'_>,
    deadline: Instant,
    interrupted: &Arc<AtomicBool>,
) {
    let mut stopping = false;
    let mut give_up: Option<Instant> = None;
    while txs.going() || rxs.going() {
        thread::sleep(POLL);
        txs.poll();
        rxs.poll();
        let now = Instant::now();
        if interrupted.load(Ordering::Relaxed) && !stopping {
            stopping = true;
            txs.stop(true);
            rxs.stop(true);
        }
        // The receiver finishes once the sender is done.
        if txs.end.is_some() && rxs.going() {
            rxs.stop(false);
        }
        // A side lost or failed, or the run past its time: both end now.
        if txs.failed() || rxs.failed() || now > deadline {
            txs.stop(true);
            rxs.stop(true);
            give_up.get_or_insert(now + GIVE_UP);
        }
        if give_up.is_some_and(|g| now > g) {
            break;
        }
    }
}

/// Both sides' results merged (or, with one missing, what there is) and
/// what went wrong.
pub(super) fn outcome(
    test: &str,
    txs: &Side<'_>,
    rxs: &Side<'_>,
    interrupted: &Arc<AtomicBool>,
    clock: Option<ClockCorrection>,
) -> Outcome {
    let agents = Agents {
        tx: txs.remote.describe(),
        rx: rxs.remote.describe(),
    };
    // The cause first: a side the controller stopped because the other
    // failed is no news.
    let mut errors: Vec<String> = [txs, rxs]
        .iter()
        .filter(|s| !s.stopped_by_us())
        .filter_map(|s| s.problem())
        .collect();
    if errors.is_empty() {
        errors = [txs, rxs].iter().filter_map(|s| s.problem()).collect();
    }
    let cut = interrupted.load(Ordering::Relaxed);
    let result = match (txs.result(), rxs.result()) {
        (Some(RunResult::Stream(t)), Some(RunResult::Stream(r))) => {
            let mut merged = merge::stream(t, r, agents);
            if let Some(latency) = merged.latency.as_mut() {
                latency.clock = clock;
            }
            TwoHostResult::Merged(merged.into())
        }
        (Some(RunResult::Rr(t)), Some(RunResult::Rr(r))) => {
            TwoHostResult::Merged(merge::rr(t, r, agents).into())
        }
        (t, r) => TwoHostResult::Partial(Partial {
            test: test.to_string(),
            partial: true,
            agents,
            tx: t.cloned().map(Box::new),
            rx: r.cloned().map(Box::new),
        }),
    };
    Outcome {
        result,
        error: (!errors.is_empty() && !cut).then(|| errors.join("; ")),
        interrupted: cut,
    }
}
