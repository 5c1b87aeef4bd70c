//! `linerate report DIR`: report.md with the sweep's parameters, the
//! machine, the reference figures beside ours, tables laid out as the
//! documents lay them out, and figures (SVG and PNG); the same tables for
//! the terminal; points.csv with every point's medians; report.html, the
//! same on one self-contained page. `--compare OTHER` sets two sweeps side
//! by side.

mod compare;
mod csv;
mod data;
pub use data::Series;
mod figure;
pub use figure::{png, svg, Plot};
mod html;
mod load;
pub mod md;
mod pairs;
mod placement;
mod reference;
pub mod scale;
mod summary;
pub mod sweep;
mod tables;
use crate::sweep::{
    saved::{Size, SweepOptions},
    spec::SweepSpec,
    store::write_atomic,
};
use anyhow::Result;
use std::{fmt::Write as _, path::Path, process::ExitCode};

use csv::csv;
use data::Data;
pub use data::Kept;
use load::load;
use tables::{fit, goals, machine, parameters, table};

/// Writes report.md, report.html, the figures and points.csv into `dir`
/// from its files; returns the tables for the terminal.
pub fn write(dir: &Path) -> Result<String> {
    let l = load(dir)?;
    // Only its owner writes in it: nothing planted there is followed.
    linerate_host::files::check_output_dir(dir)?;
    render(dir, &l.spec, &l.kept, &l.opts, l.skipped)
}

/// Writes report.md, report.html, the figures (SVG and PNG) and
/// points.csv of the runs `kept` into `dir`, each file replaced whole;
/// returns the tables for the terminal.
pub fn render(
    dir: &Path,
    spec: &SweepSpec,
    kept: &Kept,
    opts: &SweepOptions,
    skipped: usize,
) -> Result<String> {
    let d = Data::new(spec, kept);
    let view = pairs::view(spec, kept);
    let pd = view.as_ref().map(|(s, k)| Data::new(s, k));
    let finished = kept.runs.iter().filter(|r| r.values.is_some()).count();
    let failed = kept.runs.len() - finished;
    let total = Size::run_as(spec, opts)?.points;
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
        parameters(spec, opts),
        machine(kept)
    );
    md += &repeats_section(spec, kept, opts);
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
        let heading = tables::part_heading(part, pi);
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
    let placed = placement::section(&d);
    md.push_str(&placed);
    term.push_str(&placed);
    let (pair_md, pair_term) = pairs::section(&d, pd.as_ref(), &kept.pairs, dir)?;
    md.push_str(&pair_md);
    term.push_str(&pair_term);
    md.push_str("## Raw results\n\nEvery run: [results.jsonl](results.jsonl) (one JSON object per line, as `--json` prints it). Medians per point: [points.csv](points.csv). The sweep file: [spec.toml](spec.toml). This report on one page: [report.html](report.html).\n");
    write_atomic(&dir.join("report.md"), md.as_bytes())?;
    write_atomic(&dir.join("points.csv"), csv(&d).as_bytes())?;
    if let Some(pd) = &pd {
        write_atomic(
            &dir.join(pairs::CSV),
            pairs::csv(&d, pd, &kept.pairs).as_bytes(),
        )?;
    }
    write_atomic(
        &dir.join(html::FILE),
        html::page(title, &md, dir).as_bytes(),
    )?;
    Ok(term)
}

/// `linerate report DIR [--compare OTHER]`: the report of a sweep
/// directory, rewritten; with OTHER, the two side by side.
/// `fail_if_worse`: with OTHER, exit 4 when a figure got worse by more
/// than this many percent beyond the spread.
pub fn command(
    dir: &Path,
    other: Option<&Path>,
    json: bool,
    fail_if_worse: Option<f64>,
) -> Result<ExitCode> {
    if let Some(other) = other {
        return compare::command(dir, other, json, fail_if_worse);
    }
    let text = write(dir)?;
    linerate_host::output::emit(&format!(
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
    fixture_as(extra, |r| r)
}

/// The fixture sweep with each record changed by `map` first.
#[cfg(test)]
fn fixture_as(
    extra: &str,
    mut map: impl FnMut(crate::sweep::Record) -> crate::sweep::Record,
) -> (SweepSpec, Kept) {
    use crate::sweep::{
        saved::{check_values, RESULTS},
        store,
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/sweep-small");
    let text = std::fs::read_to_string(dir.join("spec.toml")).unwrap() + extra;
    let spec = SweepSpec::parse(&text, "spec.toml").unwrap();
    let mut kept = Kept::new(&spec);
    store::load(
        &dir.join(RESULTS),
        &[6],
        store::Mode::Report,
        |r| check_values(&spec, r),
        |r| kept.add(map(r)),
    )
    .unwrap();
    (spec, kept)
}

/// With `--confidence`: each point's counted repeats and the interval of
/// the mean of its headline figure they reached ("n=5, ±2.1 %", half the
/// whole width), as the sweep decided when to stop; empty without it.
fn repeats_section(spec: &SweepSpec, kept: &Kept, opts: &SweepOptions) -> String {
    let Ok(Some(rule)) = opts.rule() else {
        return String::new();
    };
    let (values, disturbed) = kept.headlines();
    let mut o = format!(
        "## Repeats of each point\n\n{} % confidence interval of the mean of each point's frames/s received (rr: transactions/s), asked within ±{:.1} % ({} to {} repeats); disturbed runs ({disturbed}) and failed ones are not counted.\n\n",
        rule.level.pct(),
        rule.width_pct / 2.0,
        rule.min,
        rule.max
    );
    for ((pi, index), v) in &values {
        let which = spec
            .parts
            .get(*pi)
            .and_then(|part| sweep::points::point(*pi, part, *index))
            .map_or_else(|| format!("{index}"), |p| p.describe());
        let interval = linerate_results::confidence::Interval::of(v, rule.level);
        let text = match interval {
            Some(i) if i.width_pct.is_finite() => format!(
                "n={}, ±{:.1} %{}",
                v.len(),
                i.width_pct / 2.0,
                if i.width_pct <= rule.width_pct {
                    ""
                } else {
                    " (not reached)"
                }
            ),
            _ => format!("n={} (no interval)", v.len()),
        };
        o += &format!("- part {}, {}: {text}\n", pi + 1, md::text(&which));
    }
    o + "\n"
}

#[cfg(test)]
mod tests {
    use super::data::{COLS, PER_MESSAGE};
    use crate::sweep::{
        saved::{check_values, Record, RESULTS},
        store,
    };
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
            |r| check_values(&spec, r),
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
            fleet: None,
            error: Some("no".into()),
        });
        assert_eq!(kept.finished().count(), 12);
    }
}
