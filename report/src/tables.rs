//! The Markdown of a report: its tables laid out as the documents lay
//! them out, the fits, the machine, the parameters and the targets.

use super::{
    data::{Data, Kept, PER_MESSAGE},
    md,
};
use crate::sweep::{
    saved::SweepOptions,
    spec::{show, FitSpec, Part, SweepSpec, TableSpec},
};
use linerate_results::run::RunResult;
use linerate_results::stats::Spread;
use std::fmt::Write as _;
use toml::Value as Tv;

pub(super) fn fmt_num(x: f64) -> String {
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

pub(super) fn cell(s: Option<Spread>) -> String {
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

/// Part `pi`'s heading, as Markdown text.
pub(super) fn part_heading(part: &Part, pi: usize) -> String {
    if part.name.is_empty() {
        format!("Part {}", pi + 1)
    } else {
        md::text(&part.name)
    }
}

/// The label of value `i` of `axis`.
pub(super) fn label_text(part: &Part, axis: &str, i: usize) -> String {
    let a = part.axis(axis).expect("checked axis");
    a.labels
        .get(i)
        .cloned()
        .unwrap_or_else(|| show(&a.values[i]))
}

/// The label of value `i` of `axis`, as Markdown text.
pub(super) fn label(part: &Part, axis: &str, i: usize) -> String {
    md::text(&label_text(part, axis, i))
}

pub(super) fn table(d: &Data, pi: usize, t: &TableSpec) -> String {
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

pub(super) fn fit(d: &Data, pi: usize, f: &FitSpec) -> String {
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
        match linerate_results::fit::fit(&pts) {
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

pub(super) fn machine(kept: &Kept) -> String {
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
    ) + &fleet_row(kept)
}

/// The machine table's row of a fleet's sweep (the rows above are its
/// first pair's).
fn fleet_row(kept: &Kept) -> String {
    if kept.pairs.is_empty() {
        return String::new();
    }
    format!(
        "| fleet | {} pair(s): {} (the rows above are the first pair's) |\n",
        kept.pairs.len(),
        md::text(&kept.pairs.join(", "))
    )
}

pub(super) fn parameters(spec: &SweepSpec, opts: &SweepOptions) -> String {
    let mut o = format!(
        "Repeats per point: {}{}.\n\n",
        opts.repeats(spec),
        if opts.quick {
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
                crate::sweep::spec::Kind::Stream => "stream",
                crate::sweep::spec::Kind::Rr => "rr",
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

pub(super) fn goals(d: &Data) -> String {
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
