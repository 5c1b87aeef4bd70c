//! `linerate report DIR`: report.md with the sweep's parameters, the
//! machine, the reference figures beside ours, tables laid out as the
//! documents lay them out, and SVG figures; the same tables for the
//! terminal; points.csv with every point's medians.

use std::{collections::HashMap, fmt::Write as _, fs, path::Path};

use anyhow::{Context, Result};
use plotters::prelude::*;
use serde_json::Value;
use toml::Value as Tv;

use super::{
    expand::{points, Point},
    spec::{show, FigureSpec, FitSpec, Part, SweepSpec, TableSpec},
    stats::Spread,
    store::{self, write_atomic},
    Record, RESULTS, SPEC,
};

/// A figure read from a result by a dotted path; a few are derived.
pub fn metric(r: &Value, path: &str) -> Option<f64> {
    let get = |p: &str| {
        r.pointer(&format!("/{}", p.replace('.', "/")))
            .and_then(Value::as_f64)
    };
    match path {
        // Time per message (000's figures 7-10 and the overhead fit).
        "derived.us_per_message" => match r["test"].as_str()? {
            "rr" => {
                let inflight = get("params.concurrency")? * get("params.flows")?;
                Some(1e6 * inflight / get("transactions.per_s").filter(|x| *x > 0.0)?)
            }
            _ => Some(1e6 / get("receiver.messages_per_s").filter(|x| *x > 0.0)?),
        },
        // Data moved by transactions, MB/s (002's transfer rate).
        "derived.rr_mb_s" => Some(
            (get("params.request")? + get("params.response")?) * get("transactions.per_s")? / 1e6,
        ),
        _ => get(path),
    }
}

/// The figures a report of `spec` reads from a result, as dotted paths.
fn needed(spec: &SweepSpec) -> Vec<String> {
    let derived = [
        "test",
        "params.concurrency",
        "params.flows",
        "params.request",
        "params.response",
        "params.backend",
        "transactions.per_s",
        "receiver.messages_per_s",
    ];
    let mut paths: Vec<String> = derived
        .iter()
        .chain(COLS.iter())
        .map(|p| p.to_string())
        .collect();
    for part in &spec.parts {
        paths.extend(part.tables.iter().flat_map(|t| t.metrics.iter().cloned()));
        paths.extend(part.figures.iter().map(|f| f.y.clone()));
    }
    paths.extend(spec.references.iter().filter_map(|r| r.ours.clone()));
    paths.extend(
        spec.goals
            .iter()
            .flat_map(|g| std::iter::once(g.metric.clone()).chain(g.cpu.clone())),
    );
    paths.sort();
    paths.dedup();
    paths
}

/// Keeps of every result but the first (whose environment and set-up the
/// report shows) only the figures the report reads: a sweep holds its
/// records in memory, and 10,000 of them whole take hundreds of MB.
pub struct Slim {
    paths: Vec<String>,
    first: bool,
}

impl Slim {
    /// For the records of `spec`, in file order.
    pub fn new(spec: &SweepSpec) -> Self {
        Self {
            paths: needed(spec),
            first: true,
        }
    }

    /// Slims the next record.
    pub fn take(&mut self, r: &mut Record) {
        if let Some(v) = &mut r.result {
            if std::mem::take(&mut self.first) {
                return;
            }
            *v = slimmed(v, &self.paths);
        }
    }
}

/// A result with only `paths`.
fn slimmed(v: &Value, paths: &[String]) -> Value {
    let mut out = Value::Object(serde_json::Map::new());
    for p in paths {
        let Some(x) = v.pointer(&format!("/{}", p.replace('.', "/"))) else {
            continue;
        };
        let mut at = &mut out;
        let keys: Vec<&str> = p.split('.').collect();
        for (i, k) in keys.iter().enumerate() {
            let Value::Object(m) = at else { break };
            if i + 1 == keys.len() {
                m.insert((*k).to_string(), x.clone());
                break;
            }
            at = m
                .entry((*k).to_string())
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
        }
    }
    out
}

struct Data<'a> {
    spec: &'a SweepSpec,
    /// Every point of every part, expanded once.
    points: Vec<Vec<Point>>,
    /// The results of each (part, point): one pass over the records, not
    /// one per cell.
    results: HashMap<(usize, usize), Vec<&'a Value>>,
}

impl<'a> Data<'a> {
    fn new(spec: &'a SweepSpec, records: &'a [Record]) -> Self {
        let mut results: HashMap<(usize, usize), Vec<&Value>> = HashMap::new();
        for r in records {
            if let Some(v) = &r.result {
                results.entry((r.part, r.point)).or_default().push(v);
            }
        }
        Self {
            spec,
            points: spec
                .parts
                .iter()
                .enumerate()
                .map(|(i, p)| points(i, p))
                .collect(),
            results,
        }
    }

    fn results(&self, p: &Point) -> &[&Value] {
        self.results
            .get(&(p.part, p.index))
            .map_or(&[], Vec::as_slice)
    }

    fn spread(&self, p: &Point, path: &str) -> Option<Spread> {
        let v: Vec<f64> = self
            .results(p)
            .iter()
            .filter_map(|r| metric(r, path))
            .collect();
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

fn label(part: &Part, axis: &str, i: usize) -> String {
    let a = part.axis(axis).expect("checked axis");
    a.labels
        .get(i)
        .cloned()
        .unwrap_or_else(|| show(&a.values[i]))
}

fn table(d: &Data, pi: usize, t: &TableSpec) -> String {
    let part = &d.spec.parts[pi];
    let rows = part.axis(&t.rows).expect("checked");
    let mut o = format!("**{}** ({})\n\n", t.title, t.metrics.join(" / "));
    let cols: Vec<Option<usize>> = match &t.columns {
        Some(c) => (0..part.axis(c).expect("checked").values.len())
            .map(Some)
            .collect(),
        None => vec![None],
    };
    let _ = write!(o, "| {} |", t.rows);
    for c in &cols {
        let h = match (c, &t.columns) {
            (Some(i), Some(ax)) => label(part, ax, *i),
            _ => t.metrics.join(" / "),
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

/// Draws a figure into `path`; returns whether any point was plotted.
fn figure(d: &Data, pi: usize, f: &FigureSpec, path: &Path) -> Result<bool> {
    let part = &d.spec.parts[pi];
    let xs = part.axis(&f.x).expect("checked");
    let series: Vec<Option<usize>> = match &f.series {
        Some(s) => (0..part.axis(s).expect("checked").values.len())
            .map(Some)
            .collect(),
        None => vec![None],
    };
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for s in &series {
        let mut pts = Vec::new();
        for xv in &xs.values {
            let Some(x) = num(xv) else { continue };
            let mut want = vec![(f.x.as_str(), xv)];
            if let (Some(si), Some(ax)) = (s, &f.series) {
                want.push((ax.as_str(), &part.axis(ax).expect("checked").values[*si]));
            }
            if let Some(y) = d.find(pi, &want, &f.filter).and_then(|p| d.spread(p, &f.y)) {
                pts.push((x, y.median));
            }
        }
        let name = match (s, &f.series) {
            (Some(i), Some(ax)) => label(part, ax, *i),
            _ => f.y.clone(),
        };
        lines.push((name, pts));
    }
    let all: Vec<(f64, f64)> = lines.iter().flat_map(|l| l.1.iter().copied()).collect();
    if all.is_empty() {
        return Ok(false);
    }
    let (x0, x1) = all
        .iter()
        .fold((f64::MAX, f64::MIN), |a, p| (a.0.min(p.0), a.1.max(p.0)));
    let y1 = all.iter().fold(0.0f64, |a, p| a.max(p.1)) * 1.1 + 1e-9;
    let mut svg = String::new();
    let root = SVGBackend::with_string(&mut svg, (800, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut b = ChartBuilder::on(&root);
    b.caption(&f.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60);
    let y_label = if f.y_label.is_empty() {
        f.y.clone()
    } else {
        f.y_label.clone()
    };
    let colors = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK];
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(f.x.clone())
                .y_desc(y_label.clone())
                .draw()?;
            for (i, (name, pts)) in lines.iter().enumerate() {
                let c = colors[i % colors.len()];
                chart
                    .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?
                    .label(name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c));
                chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()?;
        }};
    }
    if f.log_x && x0 > 0.0 {
        draw!(b.build_cartesian_2d((x0 * 0.8..x1 * 1.25).log_scale(), 0.0..y1)?);
    } else {
        draw!(b.build_cartesian_2d(x0..x1 + (x1 - x0).max(1.0) * 0.02, 0.0..y1)?);
    }
    root.present()?;
    drop(root);
    write_atomic(path, svg.as_bytes())?;
    Ok(true)
}

fn fit(d: &Data, pi: usize, f: &FitSpec) -> String {
    let part = &d.spec.parts[pi];
    let xs = part.axis(&f.x).expect("checked");
    let series: Vec<Option<usize>> = match &f.series {
        Some(s) => (0..part.axis(s).expect("checked").values.len())
            .map(Some)
            .collect(),
        None => vec![None],
    };
    let mut o = format!(
        "**{}**: time per message = overhead + size / rate, least squares\n\n| {} | overhead (us) | asymptotic MB/s | r² |\n|---|---|---|---|\n",
        f.title,
        f.series.as_deref().unwrap_or("fit")
    );
    for s in series {
        let mut pts = Vec::new();
        for xv in &xs.values {
            let Some(x) = num(xv) else { continue };
            let mut want = vec![(f.x.as_str(), xv)];
            if let (Some(si), Some(ax)) = (s, &f.series) {
                want.push((ax.as_str(), &part.axis(ax).expect("checked").values[si]));
            }
            if let Some(t) = d
                .find(pi, &want, &f.filter)
                .and_then(|p| d.spread(p, "derived.us_per_message"))
            {
                pts.push((x, t.median / 1e6));
            }
        }
        let name = match (s, &f.series) {
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

fn machine(records: &[Record]) -> String {
    let Some(r) = records.iter().find_map(|r| r.result.as_ref()) else {
        return "No point has finished yet.\n".into();
    };
    let e = &r["environment"];
    let s = &r["setup"];
    let p = &r["params"];
    let mut backends: Vec<String> = records
        .iter()
        .filter_map(|r| {
            r.result.as_ref()?["params"]["backend"]
                .as_str()
                .map(str::to_string)
        })
        .collect();
    backends.sort();
    backends.dedup();
    let iface = |k: &str, n: &str| {
        format!(
            "{}{}",
            p[k].as_str().unwrap_or("?"),
            p[n].as_str().map(|n| format!(" ({n})")).unwrap_or_default()
        )
    };
    let (from, to) = if r["test"] == "rr" {
        (
            iface("client_iface", "client_netns"),
            iface("responder_iface", "responder_netns"),
        )
    } else {
        (iface("tx_iface", "tx_netns"), iface("rx_iface", "rx_netns"))
    };
    format!(
        "| | |\n|---|---|\n| kernel | {} |\n| CPU | {} ({} cores) |\n| path | {from} -> {to} |\n| NIC driver | {} |\n| AF_XDP bind mode | {} |\n| XDP attach mode | {} |\n| backends | {} |\n| NAPI | {} |\n",
        e["kernel"].as_str().unwrap_or("?"),
        e["cpu_model"].as_str().unwrap_or("?"),
        e["cpus"],
        s["driver"].as_str().unwrap_or("?"),
        s.get("rx_bind_mode").or(s.get("client_bind_mode")).and_then(Value::as_str).unwrap_or("?"),
        s["xdp_mode"].as_str().unwrap_or("?"),
        backends.join(", "),
        s["napi"].as_str().unwrap_or("as configured"),
    )
}

fn parameters(spec: &SweepSpec, quick: bool) -> String {
    let mut o = format!(
        "Repeats per point: {}{}.\n\n",
        if quick { 1 } else { spec.repeats },
        if quick {
            " (--quick: 0.2 s warm-up, 0.5 s per point)"
        } else {
            ""
        }
    );
    for (pi, part) in spec.parts.iter().enumerate() {
        let name = if part.name.is_empty() {
            format!("Part {}", pi + 1)
        } else {
            part.name.clone()
        };
        let fixed: Vec<String> = part
            .fixed
            .iter()
            .map(|(k, v)| format!("{k} = {}", show(v)))
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
            let _ = writeln!(o, "  - axis `{}`: {}", a.name, vals.join("; "));
        }
    }
    o
}

fn references(d: &Data) -> String {
    if d.spec.references.is_empty() {
        return String::new();
    }
    let mut o = String::from("| source | case | document | linerate |\n|---|---|---|---|\n");
    for r in &d.spec.references {
        let ours = r.ours.as_ref().map_or("–".to_string(), |path| {
            let want: Vec<(&str, &Tv)> = r.at.iter().map(|(k, v)| (k.as_str(), v)).collect();
            (0..d.spec.parts.len())
                .find_map(|pi| {
                    let p = d.find(pi, &want, &toml::Table::new())?;
                    d.spread(p, path)
                })
                .map_or("n/a".into(), |s| format!("{} ({path})", cell(Some(s))))
        });
        let _ = writeln!(o, "| {} | {} | {} | {} |", r.source, r.case, r.value, ours);
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
                format!("**reached**: {} {}{cpu}", fmt_num(s.median), g.metric)
            }
            Some(s) => format!("**not reached**: {} {}{cpu}", fmt_num(s.median), g.metric),
            None => "not measured".to_string(),
        };
        let _ = writeln!(o, "- {} ({}): {line}", g.case, fmt_num(g.at_least));
    }
    o
}

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

/// Writes report.md, the SVG figures and points.csv into `dir` from its
/// files (lines of results.jsonl that are not records are left out, with
/// a warning); returns the tables for the terminal.
pub fn write(dir: &Path) -> Result<String> {
    let text = fs::read_to_string(dir.join(SPEC)).with_context(|| {
        format!(
            "{} holds no {SPEC}: is it a sweep directory?",
            dir.display()
        )
    })?;
    let spec = SweepSpec::parse(&text, &dir.join(SPEC).display().to_string())?;
    let size = super::Size::of(&spec, false)?;
    let mut slim = Slim::new(&spec);
    let loaded = store::load(
        &dir.join(RESULTS),
        &size.per_part,
        store::Mode::Report,
        |r| slim.take(r),
    )?;
    for w in &loaded.warnings {
        eprintln!("linerate: warning: {w}");
    }
    let quick = fs::read_to_string(dir.join(super::OPTIONS))
        .ok()
        .and_then(|t| serde_json::from_str::<super::SweepOptions>(&t).ok())
        .is_some_and(|o| o.quick);
    render(dir, &spec, &loaded.records, quick, loaded.skipped)
}

/// Writes report.md, the SVG figures and points.csv of `records` into
/// `dir`, each file replaced whole; returns the tables for the terminal.
pub fn render(
    dir: &Path,
    spec: &SweepSpec,
    records: &[Record],
    quick: bool,
    skipped: usize,
) -> Result<String> {
    let d = Data::new(spec, records);
    let finished = records.iter().filter(|r| r.result.is_some()).count();
    let failed = records.iter().filter(|r| r.error.is_some()).count();
    let total = super::Size::of(spec, quick)?.points;
    let skipped = if skipped > 0 {
        format!(" {skipped} line(s) of results.jsonl are not records of this sweep and were left out (see the warnings of `linerate report`).")
    } else {
        String::new()
    };
    let mut md = format!(
        "# {}\n\nSweep `{}`: {} point(s); {finished} run(s) finished, {failed} failed.{skipped} Figures are medians of the repeats, ± the 95 % confidence interval of the mean when there are 3 or more (the range with 2). MB = 10^6 bytes; service demand in ms of CPU per MB.\n\n## Parameters\n\n{}\n## Machine\n\n{}\n",
        if spec.title.is_empty() { &spec.name } else { &spec.title },
        spec.name,
        total,
        parameters(spec, quick),
        machine(records)
    );
    let mut term = String::new();
    let refs = references(&d);
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
            part.name.clone()
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
            let name = format!("figure-{fig_no}.svg");
            if figure(&d, pi, f, &dir.join(&name))? {
                let _ = write!(md, "![{}]({name})\n\n", f.title);
            } else {
                let _ = write!(md, "*{}: no point has finished yet.*\n\n", f.title);
            }
        }
    }
    md.push_str("## Raw results\n\nEvery run: [results.jsonl](results.jsonl) (one JSON object per line, as `--json` prints it). Medians per point: [points.csv](points.csv). The sweep file: [spec.toml](spec.toml).\n");
    write_atomic(&dir.join("report.md"), md.as_bytes())?;
    write_atomic(&dir.join("points.csv"), csv(&d).as_bytes())?;
    Ok(term)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slim_records_render_the_same_report() {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/sweep-small");
        let text = fs::read_to_string(fixture.join("spec.toml")).unwrap();
        let spec = SweepSpec::parse(&text, "spec.toml").unwrap();
        let loaded =
            store::load(&fixture.join(RESULTS), &[6], store::Mode::Report, |_| {}).unwrap();
        let full = loaded.records;
        let mut slim_ = full.clone();
        let mut s = Slim::new(&spec);
        slim_.iter_mut().for_each(|r| s.take(r));
        let size = |r: &[Record]| serde_json::to_string(r).unwrap().len();
        assert!(
            size(&slim_) * 4 < size(&full),
            "{} of {}",
            size(&slim_),
            size(&full)
        );
        let dir = std::env::temp_dir().join(format!("linerate-slim-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let mut out = Vec::new();
        for (i, r) in [&full, &slim_].iter().enumerate() {
            let d = dir.join(i.to_string());
            fs::create_dir_all(&d).unwrap();
            let term = render(&d, &spec, r, false, 0).unwrap();
            out.push((
                term,
                fs::read_to_string(d.join("report.md")).unwrap(),
                fs::read_to_string(d.join("points.csv")).unwrap(),
                fs::read_to_string(d.join("figure-1.svg")).unwrap(),
            ));
        }
        assert_eq!(out[0], out[1]);
        let _ = fs::remove_dir_all(dir);
    }
}
