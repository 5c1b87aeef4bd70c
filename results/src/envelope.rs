//! What every result holds whatever its test: the host, the measured
//! window, how the run ended, the workers, the interfaces' counters and,
//! across two hosts, the agents. A [`crate::stream::StreamResult`] and a
//! [`crate::rr::RrResult`] each embed one, flattened: their JSON is the
//! same as before it was one struct (fields are looked up by name; only
//! the order of the keys in an object moved).

use serde::{Deserialize, Serialize};

use crate::{
    parts::{InterfaceCounters, WorkerReport},
    softirq::SoftirqUse,
    system::Environment,
    threads::ThreadUse,
    two_host::Agents,
};

/// The fields a result of either test shares, under the same JSON names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// linerate's version.
    pub version: String,
    /// The (sending, rr: client's) host.
    pub environment: Environment,
    /// Length of the measured window, seconds.
    pub window_s: f64,
    /// Whether Ctrl-C or SIGTERM cut the run short.
    pub interrupted: bool,
    /// What ended the run early (an interface gone, down, or its MTU
    /// changed); the figures are those measured until then.
    pub fault: Option<String>,
    /// Per-worker detail.
    pub workers: Vec<WorkerReport>,
    /// Every thread of the run (linerate's own and the NAPI threads it
    /// pinned) over the window, from the kernel's accounting of each
    /// (none in results from before it was measured).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadUse>,
    /// Each core's softirq time over the window, from the softirq
    /// tracepoints (none when the clock could not be attached, and in
    /// results from before it was measured).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub softirq: Vec<SoftirqUse>,
    /// The interfaces' own counters over the whole run (`ip -s link`).
    pub interfaces: InterfaceCounters,
    /// Two hosts: the agents that ran each side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Agents>,
    /// `--confidence`/`--iterations`: the repeats this result stands for
    /// (it is their median run; none for a single run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<crate::confidence::Record>,
    /// The noise floor between the run's cores, measured just before its
    /// window, or why it was not (`--no-floor`, ...); none for runs
    /// without latency and in results from before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<crate::noise::Floor>,
    /// Other tasks took more than `--disturbed-above` % of this run's
    /// cores' time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disturbed: bool,
    /// The window is the whole run, warm-up included: a counted run sent
    /// its count before its warm-up ended (its window would have been
    /// empty).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub window_whole_run: bool,
}
