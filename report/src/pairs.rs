//! The per-pair section of a fleet sweep's report (`sweep --fleet`): the
//! sweep seen as if the pair were one more axis, each pair's figures read
//! from its own result: a table of each point's rate per pair beside the
//! aggregate's, each figure of a part again with a line per pair, and
//! pairs.csv with every point's medians for each pair.

use std::{fmt::Write as _, path::Path};

use anyhow::Result;
use toml::Value as Tv;

use super::{
    csv::medians,
    data::{Data, Kept, Run, COLS},
    figure::{write_plot, Plot},
    md,
    tables::{cell, part_heading},
};
use crate::sweep::spec::{Axis, FigureSpec, Kind, SweepSpec};

/// The axis of the pairs in the per-pair view.
pub(super) const AXIS: &str = "pair";

/// Per-pair figures drawn for a figure with a series axis: one for each
/// of its first this many values.
const SERIES_SHOWN: usize = 4;

/// The per-pair file of medians.
pub(super) const CSV: &str = "pairs.csv";

/// The sweep seen per pair: each part of `spec` with an axis of the pairs
/// appended (the last axis: a point's index there is its index in the
/// sweep times the number of pairs, plus the pair's), and each pair's
/// runs. None when no run was on a fleet (or an axis is called "pair").
pub(super) fn view(spec: &SweepSpec, kept: &Kept) -> Option<(SweepSpec, Kept)> {
    if kept.pairs.is_empty()
        || spec
            .parts
            .iter()
            .any(|p| p.axes.iter().any(|a| a.name == AXIS))
    {
        return None;
    }
    let n = kept.pairs.len();
    let mut spec = spec.clone();
    for part in &mut spec.parts {
        part.axes.push(Axis {
            name: AXIS.into(),
            values: kept.pairs.iter().map(|p| Tv::String(p.clone())).collect(),
            labels: Vec::new(),
        });
    }
    let runs = kept
        .runs
        .iter()
        .flat_map(|r| {
            r.pairs.iter().map(move |(i, v)| Run {
                part: r.part,
                point: r.point * n + i,
                repeat: r.repeat,
                values: Some(v.clone()),
                backend: None,
                pairs: Box::default(),
                placement: None,
                disturbed: r.disturbed,
            })
        })
        .collect();
    let per_pair = Kept {
        metrics: kept.metrics.clone(),
        index: kept.index.clone(),
        first: None,
        runs,
        pairs: Vec::new(),
    };
    Some((spec, per_pair))
}

/// The rate a part's per-pair table shows.
fn rate(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::Stream => ("receiver.frames_per_s", "received frames/s"),
        Kind::Rr => ("transactions.per_s", "transactions/s"),
    }
}

/// Part `pi`'s table: a row per point, a column per pair and the fleet's.
fn table(d: &Data, pd: &Data, pi: usize, pairs: &[String]) -> String {
    let (metric, what) = rate(d.spec.parts[pi].kind);
    let mut o = format!("**Per pair: {what}** ({})\n\n| point |", md::text(metric));
    for p in pairs {
        let _ = write!(o, " {} |", md::text(p));
    }
    o.push_str(" fleet |\n");
    o.push_str(&"|---".repeat(pairs.len() + 2));
    o.push_str("|\n");
    for p in &d.points[pi] {
        let _ = write!(o, "| {} |", md::text(&p.describe()));
        for j in 0..pairs.len() {
            let at = pd.points[pi].get(p.index * pairs.len() + j);
            let _ = write!(o, " {} |", cell(at.and_then(|q| pd.spread(q, metric))));
        }
        let _ = writeln!(o, " {} |", cell(d.spread(p, metric)));
    }
    o
}

/// Figure `f` again with a line per pair: one figure, or (with a series
/// axis) one for each of its first values.
fn figures(f: &FigureSpec, spec: &SweepSpec, pi: usize) -> Vec<FigureSpec> {
    let per_pair = |mut g: FigureSpec, title: String| {
        g.series = Some(AXIS.into());
        g.title = title;
        g
    };
    let Some(series) = &f.series else {
        return vec![per_pair(f.clone(), format!("{}, per pair", f.title))];
    };
    let Some(axis) = spec.parts[pi].axis(series) else {
        return Vec::new();
    };
    axis.values
        .iter()
        .enumerate()
        .take(SERIES_SHOWN)
        .map(|(i, v)| {
            let mut g = f.clone();
            g.filter.insert(series.clone(), v.clone());
            let label = axis
                .labels
                .get(i)
                .cloned()
                .unwrap_or_else(|| crate::sweep::spec::show(v));
            per_pair(g, format!("{}, per pair, {series} = {label}", f.title))
        })
        .collect()
}

/// The per-pair section of report.md (figures written into `dir` as
/// `figure-N-pair-K`), and its tables for the terminal; empty without a
/// fleet.
pub(super) fn section(
    d: &Data,
    per_pair: Option<&Data>,
    pairs: &[String],
    dir: &Path,
) -> Result<(String, String)> {
    let Some(pd) = per_pair else {
        return Ok((String::new(), String::new()));
    };
    // Records of runs on fleets of different sizes (an inventory changed
    // under a sweep of an older linerate): said, never one fleet's size.
    let sizes = d
        .kept
        .runs
        .iter()
        .filter(|r| r.values.is_some() && !r.pairs.is_empty())
        .map(|r| r.pairs.len());
    let (least, most) = sizes.fold((usize::MAX, 0), |(a, b), n| (a.min(n), b.max(n)));
    let fleet = if least < most {
        format!(
            "fleets of {least} to {most} pair(s) (of {}: runs on different fleets, whose aggregates do not compare; run the sweep again on one fleet)",
            pairs.len()
        )
    } else {
        format!("a fleet of {} pair(s)", pairs.len())
    };
    let mut md = format!(
        "## Per pair\n\nThe runs went to {fleet} ({}) at once: the tables and figures above are the fleet's aggregate (frames and rates summed, latency histograms merged, CPU over every core of every pair's hosts). Here each pair's own, from its result. Medians per pair: [{CSV}]({CSV}).\n\n",
        md::text(&pairs.join(", "))
    );
    let mut term = String::from("Per pair:\n");
    let mut fig_no = 0;
    for (pi, part) in d.spec.parts.iter().enumerate() {
        if d.spec.parts.len() > 1 {
            let heading = part_heading(part, pi);
            let _ = write!(md, "### {heading}\n\n");
            let _ = writeln!(term, "{heading}");
        }
        let t = table(d, pd, pi, pairs);
        let _ = writeln!(md, "{t}");
        let _ = writeln!(term, "{t}");
        for f in &part.figures {
            fig_no += 1;
            for (k, g) in figures(f, pd.spec, pi).iter().enumerate() {
                let mut p = Plot::of(pd, pi, g);
                // The document's figures are the whole system's, not a pair's.
                p.marks.clear();
                p.levels.clear();
                let name = format!("figure-{fig_no}-pair-{}", k + 1);
                md.push_str(&write_plot(&p, &g.title, dir, &name)?);
            }
        }
    }
    Ok((md, term))
}

/// pairs.csv: every point's medians for each pair, a line each.
pub(super) fn csv(d: &Data, pd: &Data, pairs: &[String]) -> String {
    let mut o = format!("part,point,pair,values,repeats,{}\n", COLS.join(","));
    let quoted = |s: &str| {
        s.chars()
            .map(|c| match c {
                '"' => '\'',
                c if c.is_control() => ' ',
                c => c,
            })
            .collect::<String>()
    };
    for (pi, points) in d.points.iter().enumerate() {
        for p in points {
            for (j, pair) in pairs.iter().enumerate() {
                let Some(q) = pd.points[pi].get(p.index * pairs.len() + j) else {
                    continue;
                };
                let _ = writeln!(
                    o,
                    "{pi},{},\"{}\",\"{}\",{},{}",
                    p.index,
                    quoted(pair),
                    quoted(&p.describe()),
                    pd.results(q).len(),
                    medians(pd, q)
                );
            }
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::{
        fleet::{FleetRun, PairResult},
        saved::SweepOptions,
    };
    use linerate_results::run::RunResult;

    /// The fixture sweep (6 points x 2 repeats) as if run on a fleet of
    /// two pairs: p0 measured the fixture's result, p1 half its rates.
    fn fleet_fixture() -> (SweepSpec, Kept) {
        crate::fixture_as("", |mut r| {
            let a = r.result.take().unwrap();
            let mut b = a.clone();
            if let RunResult::Stream(s) = &mut b {
                s.receiver.frames_per_s /= 2.0;
                s.receiver.message_mb_s = s.receiver.message_mb_s.map(|m| m / 2.0);
            }
            r.fleet = Some(FleetRun {
                aggregate: linerate_results::fleet::of(
                    "stream",
                    &[("p0", &a), ("p1", &b)],
                    0,
                    30.0,
                ),
                pairs: [("p0", a), ("p1", b)]
                    .into_iter()
                    .map(|(pair, result)| PairResult {
                        pair: pair.into(),
                        start_skew_us: 30.0,
                        result,
                    })
                    .collect(),
            });
            r
        })
    }

    /// Records of runs on fleets of 2 and then 1 pair(s) (an inventory
    /// changed under an older linerate's sweep): the report says so,
    /// never "a fleet of 2".
    #[test]
    fn runs_on_fleets_of_different_sizes_are_said_to_be() {
        let (spec, kept) = crate::fixture_as("", |mut r| {
            let a = r.result.take().unwrap();
            let pairs: Vec<(&str, RunResult)> = if r.point == 0 {
                vec![("p0", a.clone()), ("p1", a)]
            } else {
                vec![("p0", a)]
            };
            let refs: Vec<(&str, &RunResult)> = pairs.iter().map(|(p, r)| (*p, r)).collect();
            r.fleet = Some(FleetRun {
                aggregate: linerate_results::fleet::of("stream", &refs, 0, 30.0),
                pairs: pairs
                    .iter()
                    .map(|(pair, result)| PairResult {
                        pair: pair.to_string(),
                        start_skew_us: 30.0,
                        result: result.clone(),
                    })
                    .collect(),
            });
            r
        });
        let dir = std::env::temp_dir().join(format!("linerate-pairs-mixed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        crate::sweep::create_dir(&dir).unwrap();
        crate::render(&dir, &spec, &kept, &SweepOptions::default(), 0).unwrap();
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(
            md.contains("## Per pair\n\nThe runs went to fleets of 1 to 2 pair(s) (of 2: runs on different fleets, whose aggregates do not compare; run the sweep again on one fleet) (p0, p1)"),
            "{md}"
        );
        assert!(!md.contains("a fleet of 2"), "{md}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Each pair's runs become the points of one more axis: the point's
    /// index times the pairs plus the pair's; the aggregate stays the
    /// sweep's own values.
    #[test]
    fn a_fleet_sweep_is_seen_per_pair_as_one_more_axis() {
        let (spec, kept) = fleet_fixture();
        assert_eq!(kept.pairs, ["p0", "p1"]);
        let (ps, pk) = view(&spec, &kept).unwrap();
        assert_eq!(ps.parts[0].axes.last().unwrap().name, AXIS);
        assert_eq!(pk.runs.len(), 2 * kept.runs.len());
        let d = Data::new(&spec, &kept);
        let pd = Data::new(&ps, &pk);
        let rate = "receiver.frames_per_s";
        for p in &d.points[0] {
            let fleet = d.spread(p, rate).unwrap().median;
            let p0 = pd.spread(&pd.points[0][p.index * 2], rate).unwrap().median;
            let p1 = pd
                .spread(&pd.points[0][p.index * 2 + 1], rate)
                .unwrap()
                .median;
            assert!((p1 - p0 / 2.0).abs() < 1e-6 * p0, "{p0} {p1}");
            assert!(
                (fleet - (p0 + p1)).abs() < 1e-6 * fleet,
                "{fleet} {p0} {p1}"
            );
            assert_eq!(
                pd.points[0][p.index * 2 + 1].value(AXIS),
                Some(&Tv::String("p1".into()))
            );
        }
        // The aggregate's CPU is over every core of every pair's hosts:
        // between the pairs' own.
        let cpu = "cpu.total.cpu_pct";
        let fleet = d.spread(&d.points[0][0], cpu).unwrap().median;
        let (p0, p1) = (
            pd.spread(&pd.points[0][0], cpu).unwrap().median,
            pd.spread(&pd.points[0][1], cpu).unwrap().median,
        );
        assert!(
            fleet >= p0.min(p1) - 1e-9 && fleet <= p0.max(p1) + 1e-9,
            "{fleet} {p0} {p1}"
        );
        // A sweep not on a fleet has no per-pair view.
        let (spec, kept) = crate::fixture("");
        assert!(view(&spec, &kept).is_none());
    }

    /// The report of a fleet sweep: the per-pair table (a column per pair
    /// and the fleet's), a per-pair figure for each value of the figure's
    /// series, pairs.csv with a line per point and pair.
    #[test]
    fn the_report_of_a_fleet_sweep_has_a_section_per_pair() {
        let (spec, kept) = fleet_fixture();
        let dir = std::env::temp_dir().join(format!("linerate-pairs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        crate::sweep::create_dir(&dir).unwrap();
        let term = crate::render(&dir, &spec, &kept, &SweepOptions::default(), 0).unwrap();
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(
            md.contains("## Per pair\n\nThe runs went to a fleet of 2 pair(s) (p0, p1)"),
            "{md}"
        );
        assert!(md.contains("| point | p0 | p1 | fleet |"), "{md}");
        assert!(
            md.contains("| fleet | 2 pair(s): p0, p1 (the rows above are the first pair's) |"),
            "{md}"
        );
        assert!(
            term.contains("Per pair:\n**Per pair: received frames/s**"),
            "{term}"
        );
        for k in [1, 2] {
            let name = format!("figure-1-pair-{k}");
            assert!(md.contains(&format!("]({name}.svg)")), "{md}");
            let svg = std::fs::read_to_string(dir.join(format!("{name}.svg"))).unwrap();
            assert!(svg.contains("p0") && svg.contains("p1"), "{name}: {svg}");
            assert!(dir.join(format!("{name}.png")).is_file());
        }
        assert!(!dir.join("figure-1-pair-3.svg").exists());
        let csv = std::fs::read_to_string(dir.join(CSV)).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 1 + 6 * 2, "{csv}");
        assert!(lines[0].starts_with("part,point,pair,values,repeats,receiver.payload_mb_s"));
        assert!(lines[1].starts_with("0,0,\"p0\",\"mode="), "{}", lines[1]);
        assert!(lines[2].starts_with("0,0,\"p1\","), "{}", lines[2]);
        let _ = std::fs::remove_dir_all(dir);
    }
}
