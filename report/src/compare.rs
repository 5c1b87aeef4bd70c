//! `linerate report DIR --compare OTHER`: two sweeps side by side. Per
//! point and figure: both medians, their ratio (DIR / OTHER) and whether
//! the difference is beyond the repeats' spread — the repeats' ranges
//! (min..max) do not overlap; "~" when they overlap, "?" when a side has
//! one repeat; every point (or figure) OTHER measured that DIR did not is
//! listed as missing, and `--fail-if-worse` finds it worse. (Not a rank test: with the presets' 3 repeats a side, the
//! smallest two-sided p of a Mann-Whitney U test is 0.1, so it could
//! never say a difference is real.)

use std::{collections::HashMap, fmt::Write as _, path::Path, process::ExitCode};

use anyhow::{bail, Result};
use serde::Serialize;

use super::{
    data::{Data, COLS},
    load::load,
    md,
    placement::{self, OddRepeat},
    tables::fmt_num,
};
use crate::sweep::{spec::SweepSpec, store::write_atomic};
use linerate_results::metrics::lower_is_better;
use linerate_results::stats::{median, Spread, Verdict};

/// The comparison, as compare.json holds it.
#[derive(Debug, Serialize)]
pub struct Comparison {
    /// The sweep directory compared (the numerator of the ratios).
    pub dir: String,
    /// The one it is compared with (the denominator).
    pub other: String,
    /// How a difference is judged.
    pub rule: &'static str,
    /// Every point and figure measured in both.
    pub rows: Vec<Row>,
    /// Every point and figure OTHER measured and DIR did not: a gate
    /// finds each worse (nothing is never as good).
    pub missing: Vec<Missing>,
    /// Where the runs ran: what differs between the sweeps and within
    /// each.
    pub placement: Placement,
}

/// Placements that differ: a figure from a run placed otherwise is not a
/// repeat of the same thing.
#[derive(Debug, Default, Serialize)]
pub struct Placement {
    /// Points whose most common placement differs between DIR and OTHER.
    pub between: Vec<PlacedApart>,
    /// DIR's repeats placed elsewhere than their point's others.
    pub dir: Vec<OddRepeat>,
    /// OTHER's.
    pub other: Vec<OddRepeat>,
}

/// A point placed one way in DIR and another in OTHER.
#[derive(Debug, Serialize)]
pub struct PlacedApart {
    /// Part index.
    pub part: usize,
    /// The point.
    pub point: String,
    /// Where DIR's repeats ran (the most common).
    pub dir: String,
    /// Where OTHER's ran.
    pub other: String,
}

/// The placements of `dir` and `other` that differ.
fn placement(a: &Data, b: &Data) -> Placement {
    let theirs = placement::common(b);
    let between = placement::common(a)
        .into_iter()
        .filter_map(|((part, point), ours)| {
            let t = theirs.get(&(part, point.clone()))?;
            (*t != ours).then(|| PlacedApart {
                part,
                point,
                dir: ours,
                other: t.clone(),
            })
        })
        .collect();
    Placement {
        between,
        dir: placement::odd_repeats(a),
        other: placement::odd_repeats(b),
    }
}

/// The Markdown of the placements that differ (empty: none).
fn placement_markdown(c: &Comparison) -> String {
    let (dir, other) = (md::text(&c.dir), md::text(&c.other));
    let p = &c.placement;
    let mut o = String::new();
    if !p.between.is_empty() {
        let _ = write!(
            o,
            "\n**Placed otherwise in {dir} than in {other}** (each thread that ran, with its cores; the cores of the receive softirq)\n\n| part | point | {other} | {dir} |\n|---|---|---|---|\n"
        );
        for x in &p.between {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} |",
                x.part + 1,
                md::text(&x.point),
                md::code(&x.other),
                md::code(&x.dir)
            );
        }
    }
    for (name, odd) in [(&dir, &p.dir), (&other, &p.other)] {
        if !odd.is_empty() {
            let _ = write!(
                o,
                "\n**Repeats of {name} placed otherwise than their point's others**\n\n{}",
                placement::lines(odd)
            );
        }
    }
    o
}

/// A point, or a figure of one, that OTHER measured and DIR did not.
#[derive(Debug, Serialize)]
pub struct Missing {
    /// Part index.
    pub part: usize,
    /// The point, as OTHER describes it.
    pub point: String,
    /// The figure, when DIR measured the point but not it (none: the
    /// whole point).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// Why DIR has no value.
    pub why: Why,
}

/// Why DIR lacks what OTHER measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// DIR's sweep file has no such point (no part of that kind there,
    /// or other axis values).
    NotInSweep,
    /// Every run of the point in DIR failed (how many).
    Failed(usize),
    /// DIR holds no record of the point (an interrupted sweep).
    NotRun,
    /// DIR measured the point but not this figure.
    NotMeasured,
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotInSweep => write!(f, "not a point of its sweep file"),
            Self::Failed(n) => write!(f, "every run of it failed ({n} of {n})"),
            Self::NotRun => write!(f, "no run of it recorded"),
            Self::NotMeasured => write!(f, "not measured"),
        }
    }
}

impl Missing {
    fn describe(&self) -> String {
        match &self.metric {
            Some(m) => format!("part {} {} {m}", self.part + 1, self.point),
            None => format!("part {} {}", self.part + 1, self.point),
        }
    }
}

/// One figure at one point, in both sweeps.
#[derive(Debug, Serialize)]
pub struct Row {
    /// Part index.
    pub part: usize,
    /// The point ("message=1024 mtu=1500").
    pub point: String,
    /// The figure's name in the metric list.
    pub metric: String,
    /// In OTHER.
    pub other: Spread,
    /// In DIR.
    pub dir: Spread,
    /// DIR's median / OTHER's (none when OTHER's is 0).
    pub ratio: Option<f64>,
    /// Whether the difference is beyond the spread.
    pub verdict: Verdict,
}

/// How a difference is judged, as the outputs say it.
const RULE: &str = "A difference is beyond the spread when the repeats' ranges (min–max) do not overlap; ~: they overlap (within noise); ?: a side has one repeat";

/// The rows of `dir` against `other`: every point of `dir` whose part
/// (by position and kind) and axis values `other` has too.
fn rows(a: &Data, b: &Data) -> Vec<Row> {
    let names = names(a.spec);
    let mut out = Vec::new();
    for (pi, points) in a.points.iter().enumerate() {
        let (Some(pa), Some(pb)) = (a.spec.parts.get(pi), b.spec.parts.get(pi)) else {
            continue;
        };
        if pa.kind != pb.kind {
            continue;
        }
        let theirs: HashMap<String, _> = b.points[pi].iter().map(|p| (p.describe(), p)).collect();
        for p in points {
            let point = p.describe();
            let Some(q) = theirs.get(&point) else {
                continue;
            };
            for m in &names {
                let (Some(x), Some(y)) = (a.spread(p, m), b.spread(q, m)) else {
                    continue;
                };
                out.push(Row {
                    part: pi,
                    point: point.clone(),
                    metric: m.to_string(),
                    ratio: (y.median != 0.0).then(|| x.median / y.median),
                    verdict: y.compare(&x),
                    other: y,
                    dir: x,
                });
            }
        }
    }
    out
}

/// The figures compared: points.csv's and those `dir`'s sweep file names.
fn names(spec: &SweepSpec) -> Vec<&str> {
    let mut names: Vec<&str> = COLS.to_vec();
    for m in spec.metric_names() {
        if !names.contains(&m) {
            names.push(m);
        }
    }
    names
}

/// Every point of `other` with a finished run, and every figure measured
/// there, that `dir` has no value of (the same part, by position and
/// kind, and axis values as for the rows).
fn missing(a: &Data, b: &Data) -> Vec<Missing> {
    let names = names(a.spec);
    let mut out = Vec::new();
    for (pi, points) in b.points.iter().enumerate() {
        let ours: HashMap<String, _> = match (a.spec.parts.get(pi), b.spec.parts.get(pi)) {
            (Some(pa), Some(pb)) if pa.kind == pb.kind => {
                a.points[pi].iter().map(|p| (p.describe(), p)).collect()
            }
            _ => HashMap::new(),
        };
        for q in points.iter().filter(|q| !b.results(q).is_empty()) {
            let point = q.describe();
            let mut miss = |metric: Option<&str>, why| {
                out.push(Missing {
                    part: pi,
                    point: point.clone(),
                    metric: metric.map(str::to_string),
                    why,
                })
            };
            let Some(p) = ours.get(&point) else {
                miss(None, Why::NotInSweep);
                continue;
            };
            if a.results(p).is_empty() {
                let failed = a
                    .kept
                    .runs
                    .iter()
                    .filter(|r| (r.part, r.point) == (pi, p.index))
                    .count();
                miss(
                    None,
                    if failed > 0 {
                        Why::Failed(failed)
                    } else {
                        Why::NotRun
                    },
                );
                continue;
            }
            for m in &names {
                if b.spread(q, m).is_some() && a.spread(p, m).is_none() {
                    miss(Some(m), Why::NotMeasured);
                }
            }
        }
    }
    out
}

/// A median with the range the verdict reads (not the interval of the
/// mean the report's tables show).
fn range(s: &Spread) -> String {
    if s.n == 1 {
        fmt_num(s.median)
    } else {
        format!(
            "{} ({}–{})",
            fmt_num(s.median),
            fmt_num(s.min),
            fmt_num(s.max)
        )
    }
}

fn verdict(r: &Row) -> String {
    match (r.verdict, r.ratio) {
        (Verdict::Differs, Some(q)) => format!("{:+.1} %", (q - 1.0) * 100.0),
        (Verdict::Differs, None) => "differs".into(),
        (Verdict::Same, _) => "~".into(),
        (Verdict::Unknown, _) => "?".into(),
    }
}

/// The comparison as Markdown: a table per figure (the directories'
/// names and the points as text).
fn markdown(c: &Comparison) -> String {
    let (dir, other) = (md::text(&c.dir), md::text(&c.other));
    let mut o = format!(
        "# {dir} compared with {other}\n\nMedians of the repeats (their min–max). Ratio: {dir} / {other}. {RULE}.\n"
    );
    let mut metrics: Vec<&str> = Vec::new();
    for r in &c.rows {
        if !metrics.contains(&r.metric.as_str()) {
            metrics.push(&r.metric);
        }
    }
    for m in metrics {
        let _ = write!(
            o,
            "\n**{}**\n\n| point | {other} | {dir} | ratio | beyond the spread |\n|---|---|---|---|---|\n",
            md::text(m)
        );
        for r in c.rows.iter().filter(|r| r.metric == m) {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} |",
                md::text(&r.point),
                range(&r.other),
                range(&r.dir),
                r.ratio.map_or("n/a".into(), |q| format!("{q:.3}")),
                verdict(r)
            );
        }
    }
    if !c.missing.is_empty() {
        let _ = write!(
            o,
            "\n**Measured in {other}, not in {dir}**\n\n| part | point | figure | why |\n|---|---|---|---|\n"
        );
        for m in &c.missing {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} |",
                m.part + 1,
                md::text(&m.point),
                m.metric.as_deref().map_or("all".into(), md::text),
                m.why
            );
        }
    }
    o
}

fn name(p: &Path) -> String {
    p.file_name()
        .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into())
}

/// `linerate report DIR --compare OTHER [--json]`: prints the comparison
/// and writes it to DIR/compare.md and DIR/compare.json.
pub fn command(
    dir: &Path,
    other: &Path,
    json: bool,
    fail_if_worse: Option<f64>,
) -> Result<ExitCode> {
    let a = load(dir)?;
    let b = load(other)?;
    // Each sweep's points and runs, expanded once for every part of the
    // comparison.
    let (data_a, data_b) = (Data::new(&a.spec, &a.kept), Data::new(&b.spec, &b.kept));
    let rows = rows(&data_a, &data_b);
    let missing = missing(&data_a, &data_b);
    if rows.is_empty() && missing.iter().all(|m| m.why == Why::NotInSweep) {
        bail!(
            "{} and {} have no point measured in both (same part, same axis values): compare two runs of the same sweep file or preset",
            dir.display(),
            other.display()
        );
    }
    let (mut da, mut db) = (name(dir), name(other));
    if da == db {
        (da, db) = (dir.display().to_string(), other.display().to_string());
    }
    let c = Comparison {
        dir: da,
        other: db,
        rule: RULE,
        rows,
        missing,
        placement: placement(&data_a, &data_b),
    };
    let md = markdown(&c) + &placement_markdown(&c);
    let js = serde_json::to_string_pretty(&c)? + "\n";
    linerate_host::files::check_output_dir(dir)?;
    write_atomic(&dir.join("compare.md"), md.as_bytes())?;
    write_atomic(&dir.join("compare.json"), js.as_bytes())?;
    let differs = c
        .rows
        .iter()
        .filter(|r| r.verdict == Verdict::Differs)
        .count();
    let lacks = if c.missing.is_empty() {
        String::new()
    } else {
        format!(
            "{} point(s) or figure(s) measured in {} are not measured in {} (listed above).\n",
            c.missing.len(),
            c.other,
            c.dir
        )
    };
    linerate_host::output::emit(&if json {
        js
    } else {
        format!(
            "{md}\n{differs} of {} figures differ beyond the spread (median ratio {}).\n{lacks}compare: {}\n",
            c.rows.len(),
            Some(median_ratio(&c.rows))
                .filter(|q| q.is_finite())
                .map_or("n/a".into(), fmt_num),
            dir.join("compare.md").display()
        )
    })?;
    let Some(pct) = fail_if_worse else {
        return Ok(ExitCode::SUCCESS);
    };
    let worse = worse_rows(&c.rows, pct);
    for (r, by) in &worse {
        eprintln!(
            "linerate: worse: part {} {} {}: {} -> {} ({}){}",
            r.part + 1,
            r.point,
            r.metric,
            range(&r.other),
            range(&r.dir),
            by.map_or("from 0".into(), |b| format!("{b:+.1} %")),
            if r.verdict == Verdict::Unknown {
                ", one repeat: judged by the percentage alone"
            } else {
                ", beyond the spread"
            }
        );
    }
    for m in &c.missing {
        eprintln!(
            "linerate: missing: {}: measured in {}, not in {} ({})",
            m.describe(),
            c.other,
            c.dir,
            m.why
        );
    }
    if worse.is_empty() && c.missing.is_empty() {
        eprintln!("linerate: no figure worse by more than {pct} % beyond the spread");
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "linerate: {} figure(s) worse by more than {pct} % beyond the spread, {} point(s) or figure(s) of {} not measured (exit 4)",
            worse.len(),
            c.missing.len(),
            c.other
        );
        Ok(ExitCode::from(linerate_results::expect::UNMET))
    }
}

/// The rows where DIR is worse than OTHER by more than `pct` percent and
/// beyond the spread (or with one repeat a side, by the percentage alone),
/// with the change in percent (none: OTHER's median was 0). Which way is
/// worse comes from the metric list; the run's own parameters never are.
fn worse_rows(rows: &[Row], pct: f64) -> Vec<(&Row, Option<f64>)> {
    rows.iter()
        .filter(|r| r.verdict != Verdict::Same)
        .filter_map(|r| {
            let lower = lower_is_better(&r.metric)?;
            match r.ratio {
                Some(q) => {
                    let change = (q - 1.0) * 100.0;
                    let worse = if lower { change > pct } else { -change > pct };
                    worse.then_some((r, Some(change)))
                }
                // From 0: worse when a cost or a loss appeared.
                None => (lower && r.dir.median > 0.0).then_some((r, None)),
            }
        })
        .collect()
}

/// The median of the rows' ratios (a summary of the drift).
fn median_ratio(rows: &[Row]) -> f64 {
    let v: Vec<f64> = rows.iter().filter_map(|r| r.ratio).collect();
    median(&v).unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(metric: &str, other: &[f64], dir: &[f64]) -> Row {
        let (o, d) = (Spread::of(other).unwrap(), Spread::of(dir).unwrap());
        Row {
            part: 0,
            point: "size=64".into(),
            metric: metric.into(),
            ratio: (o.median != 0.0).then(|| d.median / o.median),
            verdict: o.compare(&d),
            other: o,
            dir: d,
        }
    }

    #[test]
    fn worse_is_beyond_the_spread_by_more_than_the_percentage_the_right_way() {
        let rows = [
            // A rate down 20 %, ranges apart: worse.
            row(
                "receiver.frames_per_s",
                &[100.0, 101.0, 99.0],
                &[80.0, 81.0, 79.0],
            ),
            // A rate down 20 % but the ranges overlap: noise.
            row(
                "transactions.per_s",
                &[100.0, 60.0, 140.0],
                &[80.0, 70.0, 90.0],
            ),
            // A rate up: better.
            row(
                "receiver.message_mb_s",
                &[100.0, 101.0, 99.0],
                &[150.0, 151.0, 149.0],
            ),
            // A latency up 50 %: worse.
            row("latency.p99_us", &[10.0, 11.0, 9.0], &[15.0, 16.0, 14.0]),
            // A latency down: better.
            row("latency.p50_us", &[10.0, 11.0, 9.0], &[5.0, 6.0, 4.0]),
            // Down 5 %: within the 10 %.
            row(
                "frames.received",
                &[100.0, 100.5, 99.5],
                &[95.0, 95.5, 94.5],
            ),
            // Loss from 0: worse whatever the percentage.
            row("frames.loss_pct", &[0.0, 0.0], &[0.5, 0.6]),
            // A parameter is never judged.
            row("params.mtu", &[1500.0, 1500.0], &[9000.0, 9000.0]),
            // One repeat a side: by the percentage alone.
            row("cpu.total.cpu_pct", &[40.0], &[60.0]),
        ];
        let worse: Vec<&str> = worse_rows(&rows, 10.0)
            .iter()
            .map(|(r, _)| r.metric.as_str())
            .collect();
        assert_eq!(
            worse,
            [
                "receiver.frames_per_s",
                "latency.p99_us",
                "frames.loss_pct",
                "cpu.total.cpu_pct"
            ]
        );
        assert!(worse_rows(&rows, 60.0)
            .iter()
            .all(|(r, _)| r.metric == "frames.loss_pct"));
    }
}
