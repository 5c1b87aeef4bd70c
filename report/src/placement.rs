//! Where each repeat of a point ran, and the repeats that ran elsewhere
//! than their point's others: a figure from a run placed differently is
//! not a repeat of the same thing (`results::placement`).

use std::{collections::BTreeMap, fmt::Write as _};

use linerate_results::placement::differs_by;
use serde::Serialize;

use super::{data::Data, md};

/// A repeat placed elsewhere than its point's most common placement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OddRepeat {
    /// Part index.
    pub part: usize,
    /// The point ("message=1024 mtu=1500").
    pub point: String,
    /// The repeat (from 0).
    pub repeat: u32,
    /// Where it ran.
    pub placement: String,
    /// Where the point's other repeats ran (the most common placement).
    pub common: String,
}

/// Each finished run's placement by point: ((part, point), [(repeat,
/// placement)]), in the sweep's order.
fn by_point<'a>(d: &Data<'a>) -> BTreeMap<(usize, usize), Vec<(u32, &'a str)>> {
    let mut by: BTreeMap<(usize, usize), Vec<(u32, &str)>> = BTreeMap::new();
    for r in &d.kept.runs {
        if let (Some(_), Some(p)) = (&r.values, &r.placement) {
            by.entry((r.part, r.point)).or_default().push((r.repeat, p));
        }
    }
    by
}

fn describe(d: &Data, part: usize, point: usize) -> String {
    d.points
        .get(part)
        .and_then(|ps| ps.get(point))
        .map_or_else(|| format!("point {}", point + 1), |p| p.describe())
}

/// The most common of a point's placements and, for each, whether it
/// differs from it (none: no placement).
fn common_of<'a>(runs: &[(u32, &'a str)]) -> Option<(&'a str, Vec<bool>)> {
    let sigs: Vec<&str> = runs.iter().map(|(_, s)| *s).collect();
    let flags = differs_by(&sigs);
    let common = *sigs.iter().zip(&flags).find(|(_, f)| !**f)?.0;
    Some((common, flags))
}

/// Each point's most common placement: ((part, point description),
/// placement).
pub(super) fn common(d: &Data) -> BTreeMap<(usize, String), String> {
    by_point(d)
        .into_iter()
        .filter_map(|((part, point), runs)| {
            let (common, _) = common_of(&runs)?;
            Some(((part, describe(d, part, point)), common.to_string()))
        })
        .collect()
}

/// The repeats whose placement differs from their point's most common
/// one, in the sweep's order.
pub(super) fn odd_repeats(d: &Data) -> Vec<OddRepeat> {
    let mut out = Vec::new();
    for ((part, point), runs) in by_point(d) {
        let Some((common, flags)) = common_of(&runs) else {
            continue;
        };
        for ((repeat, sig), odd) in runs.iter().zip(flags) {
            if odd {
                out.push(OddRepeat {
                    part,
                    point: describe(d, part, point),
                    repeat: *repeat,
                    placement: (*sig).to_string(),
                    common: common.to_string(),
                });
            }
        }
    }
    out
}

/// Markdown lines for `odd` (one per repeat).
pub(super) fn lines(odd: &[OddRepeat]) -> String {
    let mut o = String::new();
    for r in odd {
        let _ = writeln!(
            o,
            "- part {} {}, repeat {}: {} (the others: {})",
            r.part + 1,
            md::text(&r.point),
            r.repeat + 1,
            md::code(&r.placement),
            md::code(&r.common)
        );
    }
    o
}

/// The report's placement section (Markdown; the terminal prints it as
/// is), empty when every point's repeats ran alike.
pub(super) fn section(d: &Data) -> String {
    let odd = odd_repeats(d);
    if odd.is_empty() {
        return String::new();
    }
    let mut o = String::from(
        "## Placement\n\nRepeats that ran elsewhere than their point's other repeats (each thread that ran, with its cores; the cores of the receive softirq): their figures are not repeats of the same placement.\n\n",
    );
    o.push_str(&lines(&odd));
    o.push('\n');
    o
}
