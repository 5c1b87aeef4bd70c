//! `sweep --fleet INVENTORY`: every run of a point on every pair of the
//! inventory at once (as `stream|rr --fleet` runs them). Its record holds
//! the aggregate, which the report's tables, figures and gates read by the
//! same dotted names as a single result's, and every pair's result, which
//! the report's per-pair section reads. A run in which a pair failed is a
//! failed run (its error names the pair): `--resume` runs it again, so
//! that no aggregate of the sweep sums fewer pairs than the others.

use std::{
    path::Path,
    sync::{atomic::AtomicBool, Arc},
};

use anyhow::{bail, Result};

use crate::{fleet::run::run_fleet, request::RunRequest};
use linerate_report::sweep::fleet::{FleetRun, PairResult};
use linerate_results::{fleet::Aggregate, run::TwoHostResult};

/// The pairs a fleet sweep's runs go to: those its inventory named at
/// the first run (on `--resume`, those of its records). A run whose
/// inventory names other pairs fails, naming the change: no aggregate of
/// the sweep sums another fleet than the others.
#[derive(Debug, Default)]
pub struct Pinned(Option<Vec<String>>);

impl Pinned {
    /// Pinned to `pairs` (none yet: the first run's inventory).
    pub fn of(pairs: &[String]) -> Self {
        Self((!pairs.is_empty()).then(|| pairs.to_vec()))
    }

    /// Checks the pairs the inventory at `path` names now (pins them when
    /// nothing is pinned yet).
    fn check(&mut self, path: &Path, now: Vec<String>) -> Result<()> {
        let Some(pinned) = &self.0 else {
            self.0 = Some(now);
            return Ok(());
        };
        let sorted = |v: &[String]| {
            let mut v = v.to_vec();
            v.sort();
            v
        };
        if sorted(pinned) != sorted(&now) {
            bail!(
                "inventory {} now names {} pair(s) ({}), not the {} ({}) this sweep's runs went to: the run counts as failed so that every aggregate sums the same fleet; put the inventory back and `linerate sweep --resume DIR`, or start a new sweep for the new fleet",
                path.display(),
                now.len(),
                linerate_host::shown::shown(&now.join(", ")),
                pinned.len(),
                linerate_host::shown::shown(&pinned.join(", "))
            );
        }
        Ok(())
    }
}

/// Runs `req` on every pair of the inventory at `path` (its `--fleet`),
/// when they are the pairs `pinned` (see [`Pinned`]).
pub fn run(
    req: &RunRequest,
    path: &Path,
    interrupted: &Arc<AtomicBool>,
    pinned: &mut Pinned,
) -> Result<FleetRun> {
    let inventory = crate::fleet::run::load(path)?;
    pinned.check(
        path,
        inventory.pairs.iter().map(|p| p.name.clone()).collect(),
    )?;
    let o = run_fleet(req, &inventory, interrupted);
    of(o.aggregate, o.pairs)
}

/// The record of a fleet run's outcome; an error when a pair failed.
fn of(aggregate: Aggregate, pairs: Vec<crate::fleet::run::PairReport>) -> Result<FleetRun> {
    let failed: Vec<String> = pairs
        .iter()
        .filter_map(|p| p.error.as_ref().map(|e| format!("pair {}: {e}", p.pair)))
        .collect();
    if !failed.is_empty() {
        bail!(
            "{} of {} pair(s) failed ({}); the run counts as failed so that every aggregate sums the whole fleet",
            failed.len(),
            pairs.len(),
            failed.join("; ")
        );
    }
    let pairs = pairs
        .into_iter()
        .map(|p| match p.result {
            Some(TwoHostResult::Merged(result)) => Ok(PairResult {
                pair: p.pair,
                start_skew_us: p.start_skew_us,
                result,
            }),
            _ => bail!("pair {}: a side of its run gave no result", p.pair),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(FleetRun { aggregate, pairs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::run::PairReport;
    use linerate_results::run::RunResult;

    fn stream() -> RunResult {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/results/stream-message.json");
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    fn report(pair: &str, error: Option<&str>) -> PairReport {
        PairReport {
            pair: pair.into(),
            result: error.is_none().then(|| TwoHostResult::Merged(stream())),
            error: error.map(str::to_string),
            start_skew_us: 40.0,
        }
    }

    /// A run whose pairs all ended: the aggregate's figures by their
    /// dotted names, each pair kept whole; it survives a trip through its
    /// JSON (results.jsonl).
    #[test]
    fn a_whole_fleet_run_is_recorded_with_its_aggregate() {
        let r = stream();
        let RunResult::Stream(s) = &r else { panic!() };
        let agg = linerate_results::fleet::of("stream", &[("p0", &r), ("p1", &r)], 0, 40.0);
        let run = of(agg, vec![report("p0", None), report("p1", None)]).unwrap();
        assert_eq!(
            run.figure("frames.received"),
            Some(2.0 * s.frames.received as f64)
        );
        assert_eq!(
            run.figure("receiver.frames_per_s"),
            Some(2.0 * s.receiver.frames_per_s)
        );
        assert_eq!(run.figure("transactions.per_s"), None);
        assert_eq!(run.figure("frames"), None);
        let back: FleetRun = serde_json::from_str(&serde_json::to_string(&run).unwrap()).unwrap();
        assert_eq!(back.aggregate, run.aggregate);
        assert_eq!(
            back.pairs
                .iter()
                .map(|p| p.pair.as_str())
                .collect::<Vec<_>>(),
            ["p0", "p1"]
        );
    }

    /// A run whose inventory names other pairs than the sweep's first
    /// run (2 pairs, then 1) fails, naming both; the same pairs in
    /// another order pass.
    #[test]
    fn a_changed_inventory_fails_the_run_naming_the_change() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let path = Path::new("fleet.toml");
        let mut pinned = Pinned::default();
        pinned.check(path, names(&["p0", "p1"])).unwrap();
        let e = pinned.check(path, names(&["p0"])).unwrap_err().to_string();
        assert!(
            e.starts_with("inventory fleet.toml now names 1 pair(s) (p0), not the 2 (p0, p1) this sweep's runs went to: the run counts as failed"),
            "{e}"
        );
        pinned.check(path, names(&["p1", "p0"])).unwrap();
        // On --resume: pinned to the records' pairs.
        let mut resumed = Pinned::of(&names(&["p0", "p1"]));
        assert!(resumed.check(path, names(&["p0", "p1", "p2"])).is_err());
        assert!(Pinned::of(&[]).check(path, names(&["p0"])).is_ok());
    }

    /// A pair that failed fails the run, named with its error.
    #[test]
    fn a_failed_pair_fails_the_run() {
        let e = of(
            linerate_results::fleet::of("stream", &[], 1, 0.0),
            vec![report("p0", None), report("p1", Some("agent gone"))],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("1 of 2 pair(s) failed (pair p1: agent gone)"),
            "{e}"
        );
    }
}
