//! `--confidence`/`--iterations` and `--disturbed-above` on `stream` and
//! `rr` (issue 34, item 4): a run repeated under netperf's stop rule
//! ([`linerate_results::confidence`]), reported as its median run with
//! every run's headline figure and the interval reached.

use anyhow::Result;

use crate::cli::RepeatArgs;
use linerate_results::{
    confidence::{self, Rule},
    run::RunResult,
};

/// The stop rule the run's options ask for: none without `--confidence`
/// and `--iterations`; either alone takes the other's default (95,5 and
/// 3,10). Err is the usage error to print.
pub fn rule(run: &RepeatArgs) -> Result<Option<Rule>, String> {
    if run.confidence.is_none() && run.iterations.is_none() {
        return Ok(None);
    }
    let c = run.confidence.as_deref().unwrap_or("95,5");
    let i = run.iterations.as_deref().unwrap_or("3,10");
    confidence::parse(c, i).map(Some)
}

/// `r` marked disturbed when its interference is above
/// `args.disturbed_above` %.
pub fn mark(mut r: RunResult, args: &RepeatArgs) -> RunResult {
    r.common_mut().disturbed = confidence::disturbed(r.interference_pct(), args.disturbed_above);
    r
}

/// Runs `one` once, or under `rule` until it stops; marks each run
/// disturbed above `run.disturbed_above` % of interference. With a rule,
/// the result is the median of the counted runs with the record of the
/// series; each run's line goes to stderr as it ends.
pub fn run(
    rule: Option<&Rule>,
    args: &RepeatArgs,
    mut one: impl FnMut() -> Result<RunResult>,
) -> Result<RunResult> {
    let mark = |r| mark(r, args);
    let Some(rule) = rule else {
        return one().map(mark);
    };
    let series = confidence::repeat(
        rule,
        |i| {
            let r = mark(one()?);
            eprintln!(
                "linerate: run {} of at most {}: {} {:.0}{}",
                i + 1,
                rule.max,
                r.headline_name(),
                r.headline(),
                if r.common().disturbed {
                    " (disturbed: not counted)"
                } else {
                    ""
                }
            );
            Ok::<_, anyhow::Error>(r)
        },
        RunResult::headline,
        |r| r.common().disturbed,
        |r| {
            let (interrupted, fault) = r.ended();
            interrupted || fault.is_some()
        },
    )?;
    let record = series.record(rule, RunResult::headline, RunResult::figures);
    // A series cut short (interrupted, a fault) reports its last run, so
    // that its exit status says so; else the median run.
    let last_ended = series.runs.last().is_some_and(|r| {
        let (interrupted, fault) = r.ended();
        interrupted || fault.is_some()
    });
    let k = if last_ended {
        series.runs.len() - 1
    } else {
        series.median_run(RunResult::headline)
    };
    let mut result = series
        .runs
        .into_iter()
        .nth(k)
        .expect("a series has at least one run");
    result.common_mut().confidence = Some(record);
    Ok(result)
}
