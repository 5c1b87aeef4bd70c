//! `linerate report DIR`: report.md with the sweep's parameters, the
//! machine, the reference figures beside ours, tables laid out as the
//! documents lay them out, and figures (SVG and PNG); the same tables for
//! the terminal; points.csv with every point's medians; report.html, the
//! same on one self-contained page. `--compare OTHER` sets two sweeps side
//! by side.

mod compare;
mod figure;
pub(crate) use figure::font;
mod html;
pub(crate) mod md;
mod reference;
mod scale;
mod summary;

use std::{collections::HashMap, fmt::Write as _, path::Path, process::ExitCode};

use anyhow::{Context, Result};
use toml::Value as Tv;

use super::{
    expand::{points, Point},
    spec::{show, FitSpec, Part, SweepSpec, TableSpec},
    stats::Spread,
    store::{self, write_atomic},
    Record, RESULTS, SPEC,
};
use crate::results::{metrics::Metric, run::RunResult};

/// The figures of points.csv.
const COLS: [&str; 10] = [
    "receiver.payload_mb_s",
    "receiver.message_mb_s",
    "receiver.frames_per_s",
    "frames.loss_pct",
    "cpu.total.cpu_pct",
    "cpu.total.service_demand_ms_per_mb",
    "transactions.per_s",
    "latency.mean_us",
    "latency.p99_us",
    "cpu.total.us_per_transaction",
];

/// What the fits read.
const PER_MESSAGE: &str = "derived.us_per_message";

/// One run as the report keeps it.
struct Run {
    part: usize,
    point: usize,
    repeat: u32,
    /// The metrics' values (in `Kept::metrics` order); none: it failed.
    values: Option<Box<[Option<f64>]>>,
    /// Its data path.
    backend: Option<Box<str>>,
}

/// What a report of a sweep reads of its records: each run's metrics
/// (read once, through the metric list, from its typed result) and the
/// first result whole (the machine section shows its environment and
/// set-up). A sweep holds its records in memory: 10,000 results whole
/// take hundreds of MB, their figures a few.
pub struct Kept {
    metrics: Vec<Metric>,
    index: HashMap<String, usize>,
    first: Option<RunResult>,
    runs: Vec<Run>,
}

impl Kept {
    /// For the records of `spec` (its metric names checked by the spec).
    pub fn new(spec: &SweepSpec) -> Self {
        let mut names: Vec<String> = COLS.iter().map(|c| c.to_string()).collect();
        names.push(PER_MESSAGE.into());
        names.extend(spec.metric_names().map(str::to_string));
        let mut metrics = Vec::new();
        let mut index = HashMap::new();
        for n in names {
            if index.contains_key(&n) {
                continue;
            }
            let Some(m) = Metric::find(&n) else {
                continue;
            };
            index.insert(n, metrics.len());
            metrics.push(m);
        }
        Self {
            metrics,
            index,
            first: None,
            runs: Vec::new(),
        }
    }

    /// Keeps what the report reads of the next record.
    pub fn add(&mut self, r: Record) {
        let values = r
            .result
            .as_ref()
            .map(|res| self.metrics.iter().map(|m| m.value(res)).collect());
        let backend = r.result.as_ref().map(|res| match res {
            // Which engine sent and received, where not the backend's.
            RunResult::Stream(s)
                if !s.setup.tx_engine.is_empty()
                    && (s.setup.tx_engine != s.params.backend
                        || s.setup.rx_engine != s.params.backend) =>
            {
                format!(
                    "{} (sent by {}, received by {})",
                    s.params.backend, s.setup.tx_engine, s.setup.rx_engine
                )
                .into()
            }
            _ => res.backend().into(),
        });
        if self.first.is_none() {
            self.first = r.result;
        }
        self.runs.push(Run {
            part: r.part,
            point: r.point,
            repeat: r.repeat,
            values,
            backend,
        });
    }

    /// (part, point, repeat) of every finished run.
    pub fn finished(&self) -> impl Iterator<Item = (usize, usize, u32)> + '_ {
        self.runs
            .iter()
            .filter(|r| r.values.is_some())
            .map(|r| (r.part, r.point, r.repeat))
    }
}

struct Data<'a> {
    spec: &'a SweepSpec,
    kept: &'a Kept,
    /// Every point of every part, expanded once.
    points: Vec<Vec<Point>>,
    /// The runs of each (part, point): one pass over the records, not
    /// one per cell.
    runs: HashMap<(usize, usize), Vec<&'a [Option<f64>]>>,
}

impl<'a> Data<'a> {
    fn new(spec: &'a SweepSpec, kept: &'a Kept) -> Self {
        let mut runs: HashMap<(usize, usize), Vec<&[Option<f64>]>> = HashMap::new();
        for r in &kept.runs {
            if let Some(v) = &r.values {
                runs.entry((r.part, r.point)).or_default().push(v);
            }
        }
        Self {
            spec,
            kept,
            points: spec
                .parts
                .iter()
                .enumerate()
                .map(|(i, p)| points(i, p))
                .collect(),
            runs,
        }
    }

    fn results(&self, p: &Point) -> &[&[Option<f64>]] {
        self.runs.get(&(p.part, p.index)).map_or(&[], Vec::as_slice)
    }

    fn spread(&self, p: &Point, metric: &str) -> Option<Spread> {
        let i = *self.kept.index.get(metric)?;
        let v: Vec<f64> = self.results(p).iter().filter_map(|r| r[i]).collect();
        Spread::of(&v)
    }

    fn find(&self, part: usize, want: &[(&str, &Tv)], filter: &toml::Table) -> Option<&Point> {
        // Every axis given a value: the point's index, without a search
        // (a table of a 10,000-point sweep looks up 10,000 cells).
        let axes = &self.spec.parts[part].axes;
        if want.iter().all(|(a, _)| axes.iter().any(|x| x.name == *a)) {
            let mut index = Some(0usize);
            for axis in axes {
                let w = want.iter().find(|(a, _)| *a == axis.name).map(|(_, v)| *v);
                let f = filter.get(&axis.name);
                let v = match (w, f) {
                    (Some(w), Some(f)) if w != f => return None,
                    (w, f) => w.or(f),
                };
                index = index
                    .zip(v.and_then(|v| axis.values.iter().position(|x| x == v)))
                    .map(|(i, pos)| i * axis.values.len() + pos);
            }
            if let Some(i) = index {
                return self.points[part].get(i);
            }
        }
        self.points[part].iter().find(|p| {
            want.iter().all(|(a, v)| p.value(a) == Some(v))
                && filter
                    .iter()
                    .all(|(a, v)| p.value(a).is_none_or(|x| x == v))
        })
    }

    /// The spread of `metric` at each numeric value of axis `x`, one line
    /// per value of axis `series` (one line without), the other axes as
    /// `filter` says: what a figure draws and a fit reads.
    fn lines(
        &self,
        pi: usize,
        x: &str,
        series: Option<&str>,
        filter: &toml::Table,
        metric: &str,
    ) -> Vec<Line> {
        let part = &self.spec.parts[pi];
        let xs = part.axis(x).expect("checked");
        let axis = series.map(|s| part.axis(s).expect("checked"));
        let series: Vec<Option<usize>> = match axis {
            Some(a) => (0..a.values.len()).map(Some).collect(),
            None => vec![None],
        };
        series
            .into_iter()
            .map(|s| {
                let mut points = Vec::new();
                for xv in &xs.values {
                    let Some(xn) = num(xv) else { continue };
                    let mut want = vec![(x, xv)];
                    if let (Some(si), Some(a)) = (s, axis) {
                        want.push((a.name.as_str(), &a.values[si]));
                    }
                    if let Some(y) = self
                        .find(pi, &want, filter)
                        .and_then(|p| self.spread(p, metric))
                    {
                        points.push((xn, y));
                    }
                }
                Line { series: s, points }
            })
            .collect()
    }
}

/// One line or set of marks, with its legend.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Its legend entry.
    pub name: String,
    /// (x, y, y's smallest and largest over the repeats).
    pub points: Vec<(f64, f64, f64, f64)>,
}

/// One line of a figure or a fit.
struct Line {
    /// The value (index) of the series axis it is drawn for.
    series: Option<usize>,
    /// (x, the spread of the metric there).
    points: Vec<(f64, Spread)>,
}

fn fmt_num(x: f64) -> String {
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

fn cell(s: Option<Spread>) -> String {
    match s {
        None => "n/a".into(),
        Some(s) if s.n == 1 => fmt_num(s.median),
        Some(s) => match s.ci95 {
            Some(ci) => format!("{} ±{}", fmt_num(s.median), fmt_num(ci)),
            None => format!(
                "{} ({}–{})",
                fmt_num(s.median),
                fmt_num(s.min),
                fmt_num(s.max)
            ),
        },
    }
}

/// The label of value `i` of `axis`.
fn label_text(part: &Part, axis: &str, i: usize) -> String {
    let a = part.axis(axis).expect("checked axis");
    a.labels
        .get(i)
        .cloned()
        .unwrap_or_else(|| show(&a.values[i]))
}

/// The label of value `i` of `axis`, as Markdown text.
fn label(part: &Part, axis: &str, i: usize) -> String {
    md::text(&label_text(part, axis, i))
}

fn table(d: &Data, pi: usize, t: &TableSpec) -> String {
    let part = &d.spec.parts[pi];
    let rows = part.axis(&t.rows).expect("checked");
    let metrics = md::text(&t.metrics.join(" / "));
    let mut o = format!("**{}** ({metrics})\n\n", md::text(&t.title));
    let cols: Vec<Option<usize>> = match &t.columns {
        Some(c) => (0..part.axis(c).expect("checked").values.len())
            .map(Some)
            .collect(),
        None => vec![None],
    };
    let _ = write!(o, "| {} |", md::text(&t.rows));
    for c in &cols {
        let h = match (c, &t.columns) {
            (Some(i), Some(ax)) => label(part, ax, *i),
            _ => metrics.clone(),
        };
        let _ = write!(o, " {h} |");
    }
    o.push('\n');
    o.push_str(&"|---".repeat(cols.len() + 1));
    o.push_str("|\n");
    for (ri, rv) in rows.values.iter().enumerate() {
        let _ = write!(o, "| {} |", label(part, &t.rows, ri));
        for c in &cols {
            let mut want = vec![(t.rows.as_str(), rv)];
            if let (Some(ci), Some(ax)) = (c, &t.columns) {
                want.push((ax.as_str(), &part.axis(ax).expect("checked").values[*ci]));
            }
            let text = match d.find(pi, &want, &t.filter) {
                Some(p) => t
                    .metrics
                    .iter()
                    .map(|m| cell(d.spread(p, m)))
                    .collect::<Vec<_>>()
                    .join(" / "),
                None => "n/a".into(),
            };
            let _ = write!(o, " {text} |");
        }
        o.push('\n');
    }
    o
}

fn num(v: &Tv) -> Option<f64> {
    match v {
        Tv::Integer(i) => Some(*i as f64),
        Tv::Float(f) => Some(*f),
        _ => None,
    }
}

fn fit(d: &Data, pi: usize, f: &FitSpec) -> String {
    let part = &d.spec.parts[pi];
    let mut o = format!(
        "**{}**: time per message = overhead + size / rate, least squares\n\n| {} | overhead (us) | asymptotic MB/s | r² |\n|---|---|---|---|\n",
        md::text(&f.title),
        md::text(f.series.as_deref().unwrap_or("fit"))
    );
    for line in d.lines(pi, &f.x, f.series.as_deref(), &f.filter, PER_MESSAGE) {
        let pts: Vec<(f64, f64)> = line
            .points
            .iter()
            .map(|(x, t)| (*x, t.median / 1e6))
            .collect();
        let name = match (line.series, &f.series) {
            (Some(i), Some(ax)) => label(part, ax, i),
            _ => "all".into(),
        };
        match crate::overhead::fit(&pts) {
            Some(r) => {
                let _ = writeln!(
                    o,
                    "| {name} | {} | {} | {:.4} |",
                    fmt_num(r.overhead_us),
                    fmt_num(r.asymptotic_mb_s),
                    r.r_squared
                );
            }
            None => {
                let _ = writeln!(o, "| {name} | n/a | n/a | n/a |");
            }
        }
    }
    o
}

fn machine(kept: &Kept) -> String {
    let Some(r) = &kept.first else {
        return "No point has finished yet.\n".into();
    };
    let e = r.environment();
    let mut backends: Vec<&str> = kept
        .runs
        .iter()
        .filter_map(|r| r.backend.as_deref())
        .collect();
    backends.sort();
    backends.dedup();
    let backends: Vec<String> = backends.into_iter().map(md::text).collect();
    let iface = |i: &str, n: &Option<String>| {
        md::text(&format!(
            "{i}{}",
            n.as_ref().map(|n| format!(" ({n})")).unwrap_or_default()
        ))
    };
    // The sides as each kind of run names them.
    let (from, to, bind) = match r {
        RunResult::Stream(s) => (
            iface(&s.params.tx_iface, &s.params.tx_netns),
            iface(&s.params.rx_iface, &s.params.rx_netns),
            &s.setup.rx_bind_mode,
        ),
        RunResult::Rr(s) => (
            iface(&s.params.client_iface, &s.params.client_netns),
            iface(&s.params.responder_iface, &s.params.responder_netns),
            &s.setup.client_bind_mode,
        ),
    };
    let (driver, xdp, napi) = match r {
        RunResult::Stream(s) => (&s.setup.driver, &s.setup.xdp_mode, &s.setup.napi),
        RunResult::Rr(s) => (&s.setup.driver, &s.setup.xdp_mode, &s.setup.napi),
    };
    format!(
        "| | |\n|---|---|\n| kernel | {} |\n| CPU | {} ({} cores) |\n| path | {from} -> {to} |\n| NIC driver | {} |\n| AF_XDP bind mode | {} |\n| XDP attach mode | {} |\n| backends | {} |\n| NAPI | {} |\n",
        md::text(&e.kernel),
        md::text(&e.cpu_model),
        e.cpus,
        md::text(driver.as_deref().unwrap_or("?")),
        md::text(bind),
        md::text(xdp),
        backends.join(", "),
        md::text(napi.as_deref().unwrap_or("as configured")),
    )
}

fn parameters(spec: &SweepSpec, quick: bool) -> String {
    let mut o = format!(
        "Repeats per point: {}{}.\n\n",
        if quick {
            spec.repeats.min(super::QUICK_REPEATS)
        } else {
            spec.repeats
        },
        if quick {
            " (--quick: 0.5 s warm-up, 1 s per run)"
        } else {
            ""
        }
    );
    for (pi, part) in spec.parts.iter().enumerate() {
        let name = if part.name.is_empty() {
            format!("Part {}", pi + 1)
        } else {
            md::text(&part.name)
        };
        let fixed: Vec<String> = part
            .fixed
            .iter()
            .map(|(k, v)| md::text(&format!("{k} = {}", show(v))))
            .collect();
        let _ = writeln!(
            o,
            "- {name} (`linerate {}`): {}",
            match part.kind {
                super::spec::Kind::Stream => "stream",
                super::spec::Kind::Rr => "rr",
            },
            fixed.join(", ")
        );
        for a in &part.axes {
            let vals: Vec<String> = (0..a.values.len())
                .map(|i| label(part, &a.name, i))
                .collect();
            let _ = writeln!(o, "  - axis {}: {}", md::code(&a.name), vals.join("; "));
        }
    }
    o
}

fn goals(d: &Data) -> String {
    let mut o = String::new();
    for g in &d.spec.goals {
        let want: Vec<(&str, &Tv)> = g.at.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let p = (0..d.spec.parts.len()).find_map(|pi| d.find(pi, &want, &toml::Table::new()));
        let got = p.as_ref().and_then(|p| d.spread(p, &g.metric));
        let cpu = p
            .as_ref()
            .zip(g.cpu.as_ref())
            .and_then(|(p, c)| d.spread(p, c))
            .map(|c| format!(" at {} % CPU", fmt_num(c.median)))
            .unwrap_or_default();
        let line = match got {
            Some(s) if s.median >= g.at_least => {
                format!(
                    "**reached**: {} {}{cpu}",
                    fmt_num(s.median),
                    md::text(&g.metric)
                )
            }
            Some(s) => format!(
                "**not reached**: {} {}{cpu}",
                fmt_num(s.median),
                md::text(&g.metric)
            ),
            None => "not measured".to_string(),
        };
        let _ = writeln!(
            o,
            "- {} ({}): {line}",
            md::text(&g.case),
            fmt_num(g.at_least)
        );
    }
    o
}

fn csv(d: &Data) -> String {
    let mut o = format!("part,point,values,repeats,{}\n", COLS.join(","));
    for (pi, points) in d.points.iter().enumerate() {
        for p in points {
            let n = d.results(p).len();
            let cells: Vec<String> = COLS
                .iter()
                .map(|c| {
                    d.spread(p, c)
                        .map_or(String::new(), |s| format!("{:.6}", s.median))
                })
                .collect();
            let _ = writeln!(
                o,
                "{},{},\"{}\",{n},{}",
                pi,
                p.index,
                p.describe().replace('"', "'"),
                cells.join(",")
            );
        }
    }
    o
}

/// A sweep directory as a report reads it.
struct Loaded {
    spec: SweepSpec,
    kept: Kept,
    quick: bool,
    /// Lines of results.jsonl that are not records of the sweep.
    skipped: usize,
}

/// Reads the sweep file and the records of `dir` (lines of results.jsonl
/// that are not records are left out, with a warning).
fn load(dir: &Path) -> Result<Loaded> {
    // Regular files only, never through a link.
    let Some(text) = crate::files::read_regular(&dir.join(SPEC), super::MAX_SPEC, false)? else {
        anyhow::bail!(
            "{} holds no {SPEC}: is it a sweep directory?",
            dir.display()
        );
    };
    let text = String::from_utf8(text)
        .with_context(|| format!("{} is not UTF-8", dir.join(SPEC).display()))?;
    let spec = SweepSpec::parse(&text, &dir.join(SPEC).display().to_string())?;
    let size = super::Size::of(&spec, false)?;
    let mut kept = Kept::new(&spec);
    let loaded = store::load(
        &dir.join(RESULTS),
        &size.per_part,
        store::Mode::Report,
        |r| super::check_values(&spec, r),
        |r| kept.add(r),
    )?;
    for w in &loaded.warnings {
        eprintln!("linerate: warning: {w}");
    }
    let quick = crate::files::read_text(&dir.join(super::OPTIONS), super::MAX_OPTIONS, false)
        .ok()
        .and_then(|t| serde_json::from_str::<super::SweepOptions>(&t).ok())
        .is_some_and(|o| o.quick);
    Ok(Loaded {
        spec,
        kept,
        quick,
        skipped: loaded.skipped,
    })
}

/// Writes report.md, report.html, the figures and points.csv into `dir`
/// from its files; returns the tables for the terminal.
pub fn write(dir: &Path) -> Result<String> {
    let l = load(dir)?;
    // Only its owner writes in it: nothing planted there is followed.
    crate::files::check_output_dir(dir)?;
    render(dir, &l.spec, &l.kept, l.quick, l.skipped)
}

/// Writes report.md, report.html, the figures (SVG and PNG) and
/// points.csv of the runs `kept` into `dir`, each file replaced whole;
/// returns the tables for the terminal.
pub fn render(
    dir: &Path,
    spec: &SweepSpec,
    kept: &Kept,
    quick: bool,
    skipped: usize,
) -> Result<String> {
    let d = Data::new(spec, kept);
    let finished = kept.runs.iter().filter(|r| r.values.is_some()).count();
    let failed = kept.runs.len() - finished;
    let total = super::Size::of(spec, quick)?.points;
    let skipped = if skipped > 0 {
        format!(" {skipped} line(s) of results.jsonl are not records of this sweep and were left out (see the warnings of `linerate report`).")
    } else {
        String::new()
    };
    let title = if spec.title.is_empty() {
        &spec.name
    } else {
        &spec.title
    };
    let summary = summary::markdown(&d);
    let opening = if summary.is_empty() {
        String::new()
    } else {
        format!("## Summary\n\n{summary}\n")
    };
    let mut md = format!(
        "# {}\n\nSweep {}: {} point(s); {finished} run(s) finished, {failed} failed.{skipped} Figures are medians of the repeats, ± the 95 % confidence interval of the mean when there are 3 or more (the range with 2). MB = 10^6 bytes; service demand in ms of CPU per MB.\n\n{opening}## Parameters\n\n{}\n## Machine\n\n{}\n",
        md::text(title),
        md::code(&spec.name),
        total,
        parameters(spec, quick),
        machine(kept)
    );
    let mut term = if summary.is_empty() {
        String::new()
    } else {
        format!("Summary: {summary}\n")
    };
    let refs = reference::markdown(&reference::rows(&d));
    if !refs.is_empty() {
        let _ = write!(
            md,
            "## The document's figures beside linerate's\n\n{refs}\n"
        );
        let _ = write!(term, "Reference figures:\n{refs}\n");
    }
    let gl = goals(&d);
    if !gl.is_empty() {
        let _ = write!(md, "## Targets\n\n{gl}\n");
        let _ = write!(term, "Targets:\n{gl}\n");
    }
    let mut fig_no = 0;
    for (pi, part) in spec.parts.iter().enumerate() {
        let heading = if part.name.is_empty() {
            format!("Part {}", pi + 1)
        } else {
            md::text(&part.name)
        };
        let _ = write!(md, "## {heading}\n\n");
        let _ = writeln!(term, "{heading}");
        for t in &part.tables {
            let tb = table(&d, pi, t);
            let _ = writeln!(md, "{tb}");
            let _ = writeln!(term, "{tb}");
        }
        for f in &part.fits {
            let ft = fit(&d, pi, f);
            let _ = writeln!(md, "{ft}");
            let _ = writeln!(term, "{ft}");
        }
        for f in &part.figures {
            fig_no += 1;
            let name = format!("figure-{fig_no}");
            md.push_str(&figure::write(&d, pi, f, dir, &name)?);
        }
    }
    md.push_str("## Raw results\n\nEvery run: [results.jsonl](results.jsonl) (one JSON object per line, as `--json` prints it). Medians per point: [points.csv](points.csv). The sweep file: [spec.toml](spec.toml). This report on one page: [report.html](report.html).\n");
    write_atomic(&dir.join("report.md"), md.as_bytes())?;
    write_atomic(&dir.join("points.csv"), csv(&d).as_bytes())?;
    write_atomic(
        &dir.join(html::FILE),
        html::page(title, &md, dir).as_bytes(),
    )?;
    Ok(term)
}

/// `linerate report DIR [--compare OTHER]`: the report of a sweep
/// directory, rewritten; with OTHER, the two side by side.
pub fn command(dir: &Path, other: Option<&Path>, json: bool) -> Result<ExitCode> {
    if let Some(other) = other {
        return compare::command(dir, other, json);
    }
    let text = write(dir)?;
    crate::output::emit(&format!(
        "{text}report: {}\nreport: {}\n",
        dir.join("report.md").display(),
        dir.join(html::FILE).display()
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// The fixture sweep (tests/fixtures/sweep-small: 6 points, 2 repeats)
/// with `extra` added to its sweep file, and its records.
#[cfg(test)]
fn fixture(extra: &str) -> (SweepSpec, Kept) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/sweep-small");
    let text = std::fs::read_to_string(dir.join("spec.toml")).unwrap() + extra;
    let spec = SweepSpec::parse(&text, "spec.toml").unwrap();
    let mut kept = Kept::new(&spec);
    store::load(
        &dir.join(RESULTS),
        &[6],
        store::Mode::Report,
        |r| super::check_values(&spec, r),
        |r| kept.add(r),
    )
    .unwrap();
    (spec, kept)
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    /// The report keeps a few figures of each run, not its result: a
    /// sweep's records in memory stay small.
    #[test]
    fn runs_are_kept_small() {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/sweep-small");
        let text = fs::read_to_string(fixture.join("spec.toml")).unwrap();
        let spec = SweepSpec::parse(&text, "spec.toml").unwrap();
        let mut kept = Kept::new(&spec);
        let mut whole = 0;
        let loaded = store::load(
            &fixture.join(RESULTS),
            &[6],
            store::Mode::Report,
            |r| crate::sweep::check_values(&spec, r),
            |r| {
                whole += serde_json::to_string(&r).unwrap().len();
                kept.add(r)
            },
        )
        .unwrap();
        assert_eq!((loaded.records, kept.runs.len()), (12, 12));
        let small: usize = kept
            .runs
            .iter()
            .map(|r| r.values.as_ref().map_or(0, |v| v.len() * 16))
            .sum();
        assert!(small * 20 < whole, "{small} of {whole}");
        assert_eq!(kept.finished().count(), 12);
        // points.csv and the fits read metrics of the list.
        for name in COLS.iter().chain([&PER_MESSAGE]) {
            assert!(kept.index.contains_key(*name), "{name}");
        }
        // A failed run is counted, not read.
        kept.add(Record {
            part: 0,
            point: 1,
            repeat: 2,
            values: serde_json::Map::new(),
            result: None,
            error: Some("no".into()),
        });
        assert_eq!(kept.finished().count(), 12);
    }
}
