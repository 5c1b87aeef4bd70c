//! The documents' figures beside ours: a row per figure and point, each
//! naming the statistic on both sides; a reference at several points
//! shows ours at each; one that takes the best over an axis says at which
//! point. The same figures, as numbers, are the marks on the figures.

use std::fmt::Write as _;

use toml::Value as Tv;

use super::{
    data::{num, Data, Series},
    md,
    scale::tick_label,
    tables::{cell, label_text},
};
use crate::sweep::{
    points::Point,
    spec::{FigureSpec, Reference, Take},
};
use linerate_results::metrics::Metric;
use linerate_results::stats::Spread;

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Document, table or figure.
    pub source: String,
    /// What was measured (and at which point).
    pub case: String,
    /// The document's figure, with its statistic.
    pub document: String,
    /// Ours, with its statistic.
    pub ours: String,
}

/// One point a reference is read at: its axis values, the document's
/// figure there (as stated, as a number).
pub(super) struct At<'a> {
    pub(super) at: toml::Table,
    value: &'a str,
    pub(super) number: Option<f64>,
}

/// The points of `r`: its own, or each of its `[[reference.point]]`s.
pub(super) fn points(r: &Reference) -> Vec<At<'_>> {
    if r.points.is_empty() {
        return vec![At {
            at: r.at.clone(),
            value: &r.value,
            number: r.number,
        }];
    }
    r.points
        .iter()
        .map(|p| {
            let mut at = r.at.clone();
            at.extend(p.at.clone());
            At {
                at,
                value: &p.value,
                number: p.number,
            }
        })
        .collect()
}

fn want(at: &toml::Table) -> Vec<(&str, &Tv)> {
    at.iter().map(|(k, v)| (k.as_str(), v)).collect()
}

/// The first point of any part at `at`.
fn point<'a>(d: &'a Data, at: &toml::Table) -> Option<&'a Point> {
    (0..d.spec.parts.len()).find_map(|pi| d.find(pi, &want(at), &toml::Table::new()))
}

/// What the metric is, as its row names it.
/// (its unit, what it is).
pub(super) fn statistic(metric: &str) -> (&'static str, String) {
    match Metric::find(metric) {
        Some(Metric::Figure(f)) => {
            let mut about = f.about.to_string();
            if let Some(c) = about.get(..1) {
                about.replace_range(..1, &c.to_lowercase());
            }
            (f.unit, about)
        }
        _ => ("", metric.to_string()),
    }
}

/// Ours at `at`: the spread, where it was read when `over` an axis, and
/// the point.
pub(super) fn ours<'a>(
    d: &'a Data,
    r: &Reference,
    metric: &str,
    at: &toml::Table,
) -> Option<(Spread, String, &'a Point)> {
    let Some(over) = &r.over else {
        return point(d, at).and_then(|p| d.spread(p, metric).map(|s| (s, String::new(), p)));
    };
    let mut best: Option<(Spread, String, &Point)> = None;
    for (pi, part) in d.spec.parts.iter().enumerate() {
        let Some(axis) = part.axis(over) else {
            continue;
        };
        for (i, v) in axis.values.iter().enumerate() {
            let mut w = want(at);
            w.retain(|(k, _)| k != over);
            w.push((over.as_str(), v));
            let Some((s, p)) = d
                .find(pi, &w, &toml::Table::new())
                .and_then(|p| d.spread(p, metric).map(|s| (s, p)))
            else {
                continue;
            };
            let better = best.as_ref().is_none_or(|(b, _, _)| match r.take {
                Take::Max => s.median > b.median,
                Take::Min => s.median < b.median,
            });
            if better {
                best = Some((s, format!("{over} = {}", label_text(part, over, i)), p));
            }
        }
        if best.is_some() {
            break;
        }
    }
    best
}

/// The label of a point's axis values beyond the reference's own: "8 KB".
pub(super) fn point_label(d: &Data, r: &Reference, at: &toml::Table) -> String {
    let own: Vec<String> = at
        .iter()
        .filter(|(k, _)| !r.at.contains_key(*k))
        .map(|(k, v)| {
            d.spec
                .parts
                .iter()
                .find_map(|part| {
                    let a = part.axis(k)?;
                    let i = a.values.iter().position(|x| x == v)?;
                    Some(tick_label(part, k, i))
                })
                .unwrap_or_else(|| format!("{k} = {v}"))
        })
        .collect();
    own.join(", ")
}

/// The rows of every reference of the sweep.
pub fn rows(d: &Data) -> Vec<Row> {
    let mut out = Vec::new();
    for r in &d.spec.references {
        for p in points(r) {
            let case = if r.points.is_empty() {
                r.case.clone()
            } else {
                format!("{}: {}", r.case, point_label(d, r, &p.at))
            };
            let document = match &r.statistic {
                Some(s) => format!("{} ({s})", p.value),
                None => p.value.to_string(),
            };
            let ours = r
                .ours
                .as_ref()
                .map_or("–".to_string(), |m| match ours(d, r, m, &p.at) {
                    None => "n/a".into(),
                    Some((s, at, _)) => {
                        let how = match (&r.over, r.take) {
                            (Some(o), Take::Max) => format!("maximum over {o}, at {at}; "),
                            (Some(o), Take::Min) => format!("minimum over {o}, at {at}; "),
                            (None, _) => String::new(),
                        };
                        let (unit, what) = statistic(m);
                        format!("{} {unit} — {how}{what}", cell(Some(s)))
                    }
                });
            out.push(Row {
                source: r.source.clone(),
                case,
                document,
                ours,
            });
        }
    }
    out
}

/// The rows as a Markdown table ("" without any), their text escaped.
pub fn markdown(rows: &[Row]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut o = String::from(
        "| source | case | document (its statistic) | linerate (median of the repeats; its statistic) |\n|---|---|---|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} |",
            md::text(&r.source),
            md::text(&r.case),
            md::text(&r.document),
            md::text(&r.ours)
        );
    }
    o
}

/// The documents' numbers that belong on figure `f` of part `pi`: marks
/// at points of its x axis, and levels for figures over the whole axis.
pub fn on_figure(d: &Data, pi: usize, f: &FigureSpec) -> (Vec<Series>, Vec<(String, f64)>) {
    let part = &d.spec.parts[pi];
    let fits = |at: &toml::Table| {
        at.iter().all(|(k, v)| {
            part.axis(k).is_some_and(|a| a.values.contains(v))
                && f.filter.get(k).is_none_or(|x| x == v)
        })
    };
    let mut marks = Vec::new();
    let mut levels = Vec::new();
    for r in d
        .spec
        .references
        .iter()
        .filter(|r| r.ours.as_ref() == Some(&f.y))
    {
        let name = format!("{} (document)", r.source);
        if r.over.as_ref() == Some(&f.x) {
            if let Some(n) = r.number.filter(|_| fits(&r.at)) {
                levels.push((format!("{}: {} (document)", r.source, r.case), n));
            }
            continue;
        }
        let pts: Vec<(f64, f64, f64, f64)> = points(r)
            .iter()
            .filter(|p| fits(&p.at))
            .filter_map(|p| {
                let x = num(p.at.get(&f.x)?)?;
                let y = p.number?;
                Some((x, y, y, y))
            })
            .collect();
        // Two figures of one source are one entry of the legend.
        match marks.iter_mut().find(|m: &&mut Series| m.name == name) {
            Some(m) => m.points.extend(pts),
            None if !pts.is_empty() => marks.push(Series { name, points: pts }),
            None => {}
        }
    }
    (marks, levels)
}

/// Whether `r` compares like with like: a document's mean beside a mean
/// of ours, a percentile beside that percentile, a maximum or best over
/// an axis taken over an axis.
#[cfg(test)]
pub fn like_with_like(r: &Reference) -> Result<(), String> {
    let stat = r.statistic.as_deref().unwrap_or("").to_lowercase();
    let ours = r.ours.as_deref().unwrap_or("");
    let bad = |why: &str| Err(format!("{} / {}: {why}", r.source, r.case));
    if stat.contains("mean") && !ours.contains("mean") {
        return bad("a document's mean beside something else of ours");
    }
    if stat.contains("p99") && !ours.contains("p99") {
        return bad("a p99 beside something else of ours");
    }
    let extreme = ["maximum", "minimum", "best"]
        .iter()
        .any(|w| stat.contains(w) || r.case.to_lowercase().contains(w));
    if extreme && r.over.is_none() {
        return bad("a maximum or best, but ours is read at one point (give over = AXIS)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::{presets::PRESETS, spec::SweepSpec};

    const BUSY: &str = "mode = { tx_wait = \"busy\", rx_wait = \"wait\" }";

    #[test]
    fn a_reference_at_several_points_shows_ours_at_each() {
        let (spec, kept) = crate::fixture(&format!(
            "[[reference]]\nsource = \"doc\"\ncase = \"one flow\"\nvalue = \"x\"\nours = \"receiver.message_mb_s\"\nat = {{ {BUSY} }}\n\
             [[reference.point]]\nat = {{ message = 1024 }}\nvalue = \"250 MB/s\"\nnumber = 250\n\
             [[reference.point]]\nat = {{ message = 65536 }}\nvalue = \"925 MB/s\"\nnumber = 925\n"
        ));
        let d = Data::new(&spec, &kept);
        let rows = rows(&d);
        // The fixture's own reference, then one row per point.
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert_eq!(rows[1].case, "one flow: 1 KB");
        assert_eq!(rows[1].document, "250 MB/s");
        assert!(
            rows[1].ours.starts_with("988.0 (987.1–988.9) MB/s — "),
            "{rows:?}"
        );
        assert_eq!(rows[2].case, "one flow: 64 KB");
        assert!(
            rows[2].ours.starts_with("999.5 (877.2–1122) MB/s — "),
            "{rows:?}"
        );
        // On the figure of that metric: the two points, named by the document.
        let f = &spec.parts[0].figures[0];
        let (marks, levels) = on_figure(&d, 0, f);
        assert_eq!(
            marks,
            [Series {
                name: "doc (document)".into(),
                points: vec![
                    (1024.0, 250.0, 250.0, 250.0),
                    (65536.0, 925.0, 925.0, 925.0)
                ]
            }]
        );
        assert!(levels.is_empty());
    }

    #[test]
    fn a_maximum_takes_the_maximum_over_its_axis_and_says_where() {
        let (spec, kept) = crate::fixture(&format!(
            "[[reference]]\nsource = \"doc\"\ncase = \"maximum rate\"\nvalue = \"1000 MB/s\"\nstatistic = \"maximum\"\n\
             ours = \"receiver.message_mb_s\"\nover = \"message\"\nnumber = 1000\nat = {{ {BUSY} }}\n\
             [[reference]]\nsource = \"doc\"\ncase = \"best\"\nvalue = \"1 MB/s\"\n\
             ours = \"receiver.message_mb_s\"\nover = \"message\"\ntake = \"min\"\nat = {{ {BUSY} }}\n"
        ));
        let d = Data::new(&spec, &kept);
        let rows = rows(&d);
        // Busy sender: 988.0, 1057, 999.5 at 1 KB, 8 KB, 64 KB.
        assert_eq!(rows[1].document, "1000 MB/s (maximum)");
        assert!(
            rows[1]
                .ours
                .starts_with("1057 (965.8–1147) MB/s — maximum over message, at message = 8192; "),
            "{rows:?}"
        );
        assert!(
            rows[2].ours.starts_with(
                "988.0 (987.1–988.9) MB/s — minimum over message, at message = 1024; "
            ),
            "{rows:?}"
        );
        // Over the figure's x axis: a level, not a point.
        let (marks, levels) = on_figure(&d, 0, &spec.parts[0].figures[0]);
        assert!(marks.is_empty());
        assert_eq!(
            levels,
            [("doc: maximum rate (document)".to_string(), 1000.0)]
        );
    }

    #[test]
    fn every_preset_reference_compares_like_with_like() {
        for (name, _, text) in PRESETS {
            let s = SweepSpec::parse(text, name).unwrap();
            for r in &s.references {
                like_with_like(r).unwrap_or_else(|e| panic!("{name}: {e}"));
                if let Some(o) = &r.over {
                    assert!(
                        s.parts.iter().any(|p| p.axis(o).is_some()),
                        "{name}: over {o:?} is not an axis"
                    );
                }
            }
        }
        // The check catches what issue 17 saw.
        let mut r = Reference {
            source: "002".into(),
            case: "null RPC overall time".into(),
            value: "420 us".into(),
            ours: Some("latency.p99_us".into()),
            at: toml::Table::new(),
            statistic: Some("mean".into()),
            over: None,
            take: Take::Max,
            number: None,
            points: vec![],
        };
        assert!(like_with_like(&r).is_err());
        r.ours = Some("latency.mean_us".into());
        assert!(like_with_like(&r).is_ok());
        r.case = "maximum transaction rate".into();
        assert!(like_with_like(&r).is_err());
    }
}
