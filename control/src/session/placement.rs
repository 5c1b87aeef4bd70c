//! The run's placement in words, for its result.

use linerate_datapath::worker::WaitMode;

use super::ends::WorkerNames;
use crate::{
    path::PathPlan,
    spec::{Napi, NapiMode, PathSpec, Wait},
};

/// What the run's placement is, in words: the workers' cores (chosen by
/// linerate or given), the NAPI mode and where its threads were pinned.
/// `asked`: the path, wait modes and NAPI settings the run was given;
/// `tx_wait` is how the tx end's workers waited.
pub fn placement(
    (asked, wait, napi_asked): (&PathSpec, &Wait, &Napi),
    names: WorkerNames,
    path: &PathPlan,
    napi: Option<&str>,
    napi_threads: &[(i32, usize)],
    tx_wait: WaitMode,
) -> String {
    let who = if path.crossed {
        "chosen by linerate: too few cores to keep the names apart, so each core sends one queue and receives another"
    } else if asked.tx_cores.is_none() && asked.rx_cores.is_none() {
        "chosen by linerate: one core per role, apart"
    } else {
        "as given"
    };
    let who = match (wait.tx, tx_wait) {
        (None, WaitMode::Wait) => {
            format!(
                "{who}; {}s block, as they share cores with receive work",
                names.tx
            )
        }
        _ => who.to_string(),
    };
    let napi = match (napi, napi_asked.mode) {
        (None, _) => "NAPI left as configured".to_string(),
        (Some(mode), NapiMode::Auto) => format!("NAPI {mode} (auto)"),
        (Some(mode), _) => format!("NAPI {mode} (as given)"),
    };
    let pinned = if napi_threads.is_empty() {
        String::new()
    } else {
        let cores: Vec<String> = napi_threads
            .iter()
            .map(|(pid, core)| format!("{pid} on core {core}"))
            .collect();
        let place = if napi_asked.mode == NapiMode::ThreadedOwn {
            "on cores of their own".to_string()
        } else {
            format!("beside the {}", names.rx)
        };
        let at = napi_asked
            .priority
            .map(|p| format!(" at {p}"))
            .unwrap_or_default();
        format!(", NAPI threads pinned {place}{at}: {}", cores.join(", "))
    };
    format!(
        "{} cores {:?}, {} cores {:?} ({who}); {napi}{pinned}",
        names.tx, path.tx_cores, names.rx, path.rx_cores
    )
}
