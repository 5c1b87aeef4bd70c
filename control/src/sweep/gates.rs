//! `sweep --expect`: the gates of a CI job held against every point of a
//! finished sweep, each by the median of its repeats (a point that failed
//! every repeat: unmet). Read from results.jsonl, so that a resumed sweep
//! is judged whole.

use std::{collections::BTreeMap, path::Path};

use anyhow::Result;

use linerate_report::sweep::{
    saved::{check_values, Size, RESULTS},
    spec::{Kind, SweepSpec},
    store,
};
use linerate_results::expect::{said_unmet, Expectation, Test};
use linerate_results::stats::median;

fn test_of(kind: Kind) -> Test {
    match kind {
        Kind::Stream => Test::Stream,
        Kind::Rr => Test::Rr,
    }
}

/// Refuses, before anything runs, an expectation no part of the sweep
/// can meet (an rr figure in a sweep of streams).
pub fn check(spec: &SweepSpec, gates: &[Expectation]) -> Result<(), String> {
    for g in gates {
        if !spec.parts.iter().any(|p| g.applies_to(test_of(p.kind))) {
            return Err(format!(
                "--expect '{g}': no part of this sweep has {} (a figure of another command's results): name a metric of its parts (docs/metrics.md)",
                g.name
            ));
        }
    }
    Ok(())
}

/// A point's axis values as text, and each gate's values over its repeats.
type Point = (String, Vec<Vec<f64>>);

/// The points' medians against the gates, printed one line each (stderr);
/// whether every one was met.
pub fn judge(dir: &Path, spec: &SweepSpec, gates: &[Expectation]) -> Result<bool> {
    let mut points: BTreeMap<(usize, usize), Point> = BTreeMap::new();
    let size = Size::of(spec, false)?;
    store::load(
        &dir.join(RESULTS),
        &size.per_part,
        store::Mode::Report,
        |r| check_values(spec, r),
        |r| {
            let entry = points.entry((r.part, r.point)).or_insert_with(|| {
                let label = r
                    .values
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ");
                (label, vec![Vec::new(); gates.len()])
            });
            for (g, values) in gates.iter().zip(entry.1.iter_mut()) {
                // A fleet's run: its aggregate, as `stream --fleet
                // --expect` judges it.
                values.extend(match (&r.result, &r.fleet) {
                    (Some(result), _) => g.value(result),
                    (None, Some(f)) => g.value(&f.aggregate),
                    (None, None) => None,
                });
            }
        },
    )?;
    let mut verdicts = Vec::new();
    for ((part, _), (label, values)) in &points {
        let Some(kind) = spec.parts.get(*part).map(|p| p.kind) else {
            continue;
        };
        for (g, values) in gates.iter().zip(values) {
            if !g.applies_to(test_of(kind)) {
                continue;
            }
            let v = g.judge_value(median(values));
            eprintln!(
                "linerate: part {} {label}: {v}{}",
                part + 1,
                if values.len() > 1 {
                    format!(", the median of {} repeats", values.len())
                } else {
                    String::new()
                }
            );
            verdicts.push(v);
        }
    }
    Ok(said_unmet(&verdicts))
}
