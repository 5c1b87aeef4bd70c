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

/// How far from its point's median a repeat's kernel receive work per
/// frame may lie before the report names it.
const RECEIVE_COST_OFF: f64 = 0.15;

/// A repeat whose kernel receive work per frame lay more than
/// [`RECEIVE_COST_OFF`] from its point's median.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostlyRepeat {
    /// Part index.
    pub part: usize,
    /// The point.
    pub point: String,
    /// The repeat (from 0).
    pub repeat: u32,
    /// Its NET_RX softirq time per frame received, ns.
    pub ns_per_frame: f64,
    /// What it is held against: the point's median of it (3 repeats or
    /// more), or the other repeat's (2).
    pub against: f64,
    /// Whether `against` is the other repeat's (2 repeats).
    pub pair: bool,
}

/// The repeats whose kernel receive work per frame
/// (`receiver.softirq_ns_per_frame`) lay more than 15 % from their
/// point's median (of two repeats: from each other, both named), in the
/// sweep's order: on a VM whose neighbours share
/// its memory that cost moves from run to run with nothing of linerate's
/// changed (measured here: 225 or 300 ns a frame at 64 B, in runs a few
/// seconds apart, same placement), and moves the figures with it.
pub(super) fn costly_repeats(d: &Data) -> Vec<CostlyRepeat> {
    let Some(&i) = d.kept.index.get(super::data::RECEIVE_COST) else {
        return Vec::new();
    };
    let mut by: BTreeMap<(usize, usize), Vec<(u32, f64)>> = BTreeMap::new();
    for r in &d.kept.runs {
        if let Some(v) = r.values.as_ref().and_then(|v| v[i]) {
            by.entry((r.part, r.point)).or_default().push((r.repeat, v));
        }
    }
    let mut out = Vec::new();
    for ((part, point), runs) in by {
        if runs.len() < 2 {
            continue;
        }
        let vals: Vec<f64> = runs.iter().map(|(_, v)| *v).collect();
        let Some(median) = linerate_results::stats::Spread::of(&vals).map(|s| s.median) else {
            continue;
        };
        let pair = runs.len() == 2;
        for (k, &(repeat, v)) in runs.iter().enumerate() {
            // Two repeats: their median lies between them; each is held
            // against the other.
            let against = if pair { runs[1 - k].1 } else { median };
            if against > 0.0 && (v / against - 1.0).abs() > RECEIVE_COST_OFF {
                out.push(CostlyRepeat {
                    part,
                    point: describe(d, part, point),
                    repeat,
                    ns_per_frame: v,
                    against,
                    pair,
                });
            }
        }
    }
    out
}

/// The report's placement section (Markdown; the terminal prints it as
/// is), empty when every point's repeats ran alike: the repeats placed
/// elsewhere than their point's others, and those whose kernel receive
/// work per frame moved.
pub(super) fn section(d: &Data) -> String {
    let odd = odd_repeats(d);
    let costly = costly_repeats(d);
    if odd.is_empty() && costly.is_empty() {
        return String::new();
    }
    let mut o = String::from("## Placement\n\n");
    if !odd.is_empty() {
        o.push_str("Repeats that ran elsewhere than their point's other repeats (each thread that ran, with its cores; the cores of the receive softirq): their figures are not repeats of the same placement.\n\n");
        o.push_str(&lines(&odd));
        o.push('\n');
    }
    if !costly.is_empty() {
        o.push_str("Repeats whose kernel receive work per frame (NET_RX softirq, `receiver.softirq_ns_per_frame`) lay more than 15 % from their point's median (of two repeats, from each other): on a VM that cost moves from run to run with nothing of linerate's changed (the host's memory and caches), and their figures moved with it.\n\n");
        for r in &costly {
            let _ = writeln!(
                o,
                "- part {} {}, repeat {}: {:.0} ns a frame ({}: {:.0} ns)",
                r.part + 1,
                md::text(&r.point),
                r.repeat + 1,
                r.ns_per_frame,
                if r.pair {
                    "the other repeat"
                } else {
                    "the point's median"
                },
                r.against
            );
        }
        o.push('\n');
    }
    o
}
