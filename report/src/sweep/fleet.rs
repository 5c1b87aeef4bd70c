//! What a fleet run of a sweep (`sweep --fleet`) records: the aggregate,
//! which the report's tables, figures and gates read by the same dotted
//! names as a single result's, and every pair's result, which the report's
//! per-pair section reads.

use serde::{Deserialize, Serialize};

use linerate_results::{fleet::Aggregate, metrics::Metric, run::RunResult};

/// One pair's result in a fleet run of a sweep.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PairResult {
    /// The pair's name (the inventory's).
    pub pair: String,
    /// How far from the shared instant either side may have started, us.
    pub start_skew_us: f64,
    /// Its two-host result, merged (as `--json` prints it).
    pub result: RunResult,
}

/// A fleet run of a sweep: the aggregate and every pair's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FleetRun {
    /// Frames, rates and transactions summed, latency merged, CPU per
    /// host (`stream --fleet --json`'s `aggregate`).
    pub aggregate: Aggregate,
    /// Every pair, in the inventory's order.
    pub pairs: Vec<PairResult>,
}

impl FleetRun {
    /// The value of metric `name` in the aggregate, when measured (no
    /// loss over nothing sent; a name no metric has, none).
    pub fn figure(&self, name: &str) -> Option<f64> {
        Metric::find(name)?.value(&self.aggregate)
    }
}
