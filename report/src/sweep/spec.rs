//! Sweep files (TOML): what to run, over which axes, and how to lay out
//! tables and figures. Checked whole before anything runs.

use serde::{Deserialize, Serialize};
use toml::Value;

use linerate_results::metrics::{self, Metric};

/// A sweep file: one part, given at the top level, or several `[[part]]`s
/// (a document may measure transactions and streams).
#[derive(Debug, Clone, Serialize)]
pub struct SweepSpec {
    /// Short name (used for the output directory).
    pub name: String,
    /// What the sweep reproduces.
    pub title: String,
    /// Repeats per point (median and spread reported).
    pub repeats: u32,
    /// The parts, run in order.
    pub parts: Vec<Part>,
    /// The reference document's own figures.
    pub references: Vec<Reference>,
    /// Lines saying whether a target was reached, and at what CPU.
    pub goals: Vec<Goal>,
}

/// A target figure: the report says whether it was reached.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Goal {
    /// What the target is.
    pub case: String,
    /// Dotted path of the figure.
    pub metric: String,
    /// Reached when the figure is at least this.
    pub at_least: f64,
    /// CPU figure to state with it.
    #[serde(default)]
    pub cpu: Option<String>,
    /// The point (axis = value) it is read at.
    #[serde(default)]
    pub at: toml::Table,
}

/// One kind of run over a grid of settings, with its tables and figures.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// Heading in the report.
    #[serde(default)]
    pub name: String,
    /// "stream" or "rr".
    pub kind: Kind,
    /// Settings every point shares: any option of the command, by its long
    /// name with `_` or `-` (e.g. `mtu = 9000`, `tx_wait = "busy"`).
    #[serde(default)]
    pub fixed: toml::Table,
    /// The axes, in order: the first varies slowest. A value may be an
    /// inline table setting several options at once.
    #[serde(default, rename = "axis")]
    pub axes: Vec<Axis>,
    /// Tables of the report.
    #[serde(default, rename = "table")]
    pub tables: Vec<TableSpec>,
    /// Figures of the report.
    #[serde(default, rename = "figure")]
    pub figures: Vec<FigureSpec>,
    /// Per-message overhead fits (document 000).
    #[serde(default, rename = "fit")]
    pub fits: Vec<FitSpec>,
    /// Which value of an axis wins where: a sentence each in the summary.
    #[serde(default, rename = "winner")]
    pub winners: Vec<WinnerSpec>,
}

/// Which value of axis `among` has the best median of `metric` at each
/// value of axis `over`: the report's summary says it in words.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WinnerSpec {
    /// What wins, as the sentence opens ("Lowest receiver CPU, 64 B").
    pub what: String,
    /// Dotted path of the metric compared.
    pub metric: String,
    /// Axis whose values compete (the modes).
    pub among: String,
    /// Axis at each of whose values they are compared (the load).
    pub over: String,
    /// The best is the largest (`"max"`) or the smallest (`"min"`) median.
    #[serde(default)]
    pub take: Take,
    /// Only points whose other axes have these values.
    #[serde(default)]
    pub filter: toml::Table,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: String,
    #[serde(default)]
    title: String,
    #[serde(default = "one")]
    repeats: u32,
    #[serde(default)]
    kind: Option<Kind>,
    #[serde(default)]
    fixed: toml::Table,
    #[serde(default, rename = "axis")]
    axes: Vec<Axis>,
    #[serde(default, rename = "table")]
    tables: Vec<TableSpec>,
    #[serde(default, rename = "figure")]
    figures: Vec<FigureSpec>,
    #[serde(default, rename = "fit")]
    fits: Vec<FitSpec>,
    #[serde(default, rename = "winner")]
    winners: Vec<WinnerSpec>,
    #[serde(default, rename = "part")]
    parts: Vec<Part>,
    #[serde(default, rename = "reference")]
    references: Vec<Reference>,
    #[serde(default, rename = "goal")]
    goals: Vec<Goal>,
}

/// A per-message overhead fit: time per message against message size.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FitSpec {
    /// Caption.
    pub title: String,
    /// Axis of message sizes.
    pub x: String,
    /// Axis whose values get a fit each (none: one fit).
    #[serde(default)]
    pub series: Option<String>,
    /// Only points whose other axes have these values.
    #[serde(default)]
    pub filter: toml::Table,
}

/// The most repeats a sweep may ask for.
pub const MAX_REPEATS: u32 = 100;

fn one() -> u32 {
    1
}

/// The command a sweep runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `linerate stream`.
    #[default]
    Stream,
    /// `linerate rr`.
    Rr,
}

/// One axis: an option and its values.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    /// Option name, as in `fixed`.
    pub name: String,
    /// Values, in order.
    pub values: Vec<Value>,
    /// Label per value in tables and legends (default: the value).
    #[serde(default)]
    pub labels: Vec<String>,
}

/// A table: one metric, rows by one axis, columns by another.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    /// Caption.
    pub title: String,
    /// Axis whose values make the rows.
    pub rows: String,
    /// Axis whose values make the columns (none: one column per metric).
    #[serde(default)]
    pub columns: Option<String>,
    /// Figures shown in each cell, by their names in the metric list
    /// (the dotted paths into a result, e.g. `receiver.message_mb_s`,
    /// `cpu.total.cpu_pct`; docs/metrics.md).
    pub metrics: Vec<String>,
    /// Only points whose other axes have these values.
    #[serde(default)]
    pub filter: toml::Table,
}

/// A figure: a metric against an axis, one line per value of another.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FigureSpec {
    /// Caption (and file name).
    pub title: String,
    /// Axis on the x axis (numeric values).
    pub x: String,
    /// Dotted path of the metric on the y axis.
    pub y: String,
    /// Axis whose values make the lines (none: one line).
    #[serde(default)]
    pub series: Option<String>,
    /// Logarithmic x axis.
    #[serde(default)]
    pub log_x: bool,
    /// Logarithmic y axis (for figures spanning decades: latencies);
    /// points at 0 are left out.
    #[serde(default)]
    pub log_y: bool,
    /// y-axis label.
    #[serde(default)]
    pub y_label: String,
    /// Only points whose other axes have these values.
    #[serde(default)]
    pub filter: toml::Table,
}

/// A figure from the reference document, printed beside ours.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// Where it comes from (document, table or figure).
    pub source: String,
    /// What was measured.
    pub case: String,
    /// The document's figure, as it states it.
    pub value: String,
    /// The figure of ours to set beside it: a dotted path, and the axis
    /// values of the point it is read at.
    #[serde(default)]
    pub ours: Option<String>,
    /// The point (axis = value) whose figure is set beside it.
    #[serde(default)]
    pub at: toml::Table,
    /// The statistic the document's figure is (e.g. "mean", "maximum"):
    /// named on both sides of its row.
    #[serde(default)]
    pub statistic: Option<String>,
    /// Ours is the largest (`take = "max"`) or smallest (`"min"`) median
    /// over the values of this axis, the others at `at`.
    #[serde(default)]
    pub over: Option<String>,
    /// What `over` takes.
    #[serde(default)]
    pub take: Take,
    /// The document's figure as a number in the unit of `ours` (drawn on
    /// the figures of `ours`).
    #[serde(default)]
    pub number: Option<f64>,
    /// The document's figure at several points: a row and a mark each.
    #[serde(default, rename = "point")]
    pub points: Vec<ReferencePoint>,
}

/// What a reference `over` an axis takes of our medians.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Take {
    /// The largest.
    #[default]
    Max,
    /// The smallest.
    Min,
}

/// One point of a reference given at several points.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReferencePoint {
    /// Axis values added to the reference's `at`.
    pub at: toml::Table,
    /// The document's figure there, as it states it.
    pub value: String,
    /// The same as a number in the unit of `ours`.
    #[serde(default)]
    pub number: Option<f64>,
}

/// A sweep file that does not hold up.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct SpecError {
    /// The file.
    pub file: String,
    /// 1-based line (0: the file as a whole).
    pub line: usize,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl SweepSpec {
    /// Parses and checks a sweep file.
    pub fn parse(text: &str, file: &str) -> Result<Self, SpecError> {
        let raw: RawSpec = toml::from_str(text).map_err(|e| SpecError {
            file: file.into(),
            line: e
                .span()
                .map(|s| text[..s.start.min(text.len())].lines().count().max(1))
                .unwrap_or(0),
            message: e.message().to_string(),
        })?;
        let err = |key: &str, message: String| SpecError {
            file: file.into(),
            line: line_of(text, key),
            message,
        };
        let top_level = raw.kind.is_some()
            || !raw.axes.is_empty()
            || !raw.fixed.is_empty()
            || !raw.tables.is_empty()
            || !raw.figures.is_empty()
            || !raw.fits.is_empty()
            || !raw.winners.is_empty();
        let parts = match (top_level, raw.parts.is_empty()) {
            (true, false) => {
                return Err(err("[[part]]", "give either one part at the top level (kind, fixed, axis...) or [[part]]s, not both".into()))
            }
            (false, true) => return Err(err("name", "no kind: give kind = \"stream\" or \"rr\" (or [[part]]s)".into())),
            (true, true) => vec![Part {
                name: String::new(),
                kind: raw.kind.ok_or_else(|| err("axis", "no kind: give kind = \"stream\" or \"rr\"".into()))?,
                fixed: raw.fixed,
                axes: raw.axes,
                tables: raw.tables,
                figures: raw.figures,
                fits: raw.fits,
                winners: raw.winners,
            }],
            (false, false) => raw.parts,
        };
        let spec = Self {
            name: raw.name,
            title: raw.title,
            repeats: raw.repeats,
            parts,
            references: raw.references,
            goals: raw.goals,
        };
        if spec.name.is_empty()
            || !spec
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(err(
                "name",
                format!(
                    "name {:?} is invalid: use letters, digits, '-' or '_'",
                    spec.name
                ),
            ));
        }
        if spec.repeats == 0 || spec.repeats > MAX_REPEATS {
            return Err(err(
                "repeats",
                format!(
                    "repeats = {} is out of range: use 1 to {MAX_REPEATS}",
                    spec.repeats
                ),
            ));
        }
        for part in &spec.parts {
            part.check(&err)?;
        }
        for (what, name) in spec
            .references
            .iter()
            .filter_map(|r| {
                r.ours
                    .as_deref()
                    .map(|m| (format!("reference {:?}", r.case), m))
            })
            .chain(spec.goals.iter().flat_map(|g| {
                std::iter::once((format!("goal {:?}", g.case), g.metric.as_str())).chain(
                    g.cpu
                        .as_deref()
                        .map(|c| (format!("goal {:?} (cpu)", g.case), c)),
                )
            }))
        {
            if Metric::find(name).is_none() {
                return Err(err(name, format!("{what}: {}", metrics::unknown(name))));
            }
        }
        Ok(spec)
    }

    /// Every metric name the file uses: tables', figures', references'
    /// and goals'.
    pub fn metric_names(&self) -> impl Iterator<Item = &str> {
        self.parts
            .iter()
            .flat_map(|p| {
                p.tables
                    .iter()
                    .flat_map(|t| t.metrics.iter().map(String::as_str))
                    .chain(p.figures.iter().map(|f| f.y.as_str()))
                    .chain(p.winners.iter().map(|w| w.metric.as_str()))
            })
            .chain(self.references.iter().filter_map(|r| r.ours.as_deref()))
            .chain(
                self.goals
                    .iter()
                    .flat_map(|g| std::iter::once(g.metric.as_str()).chain(g.cpu.as_deref())),
            )
    }
}

/// Options of one run that a sweep's points may not set (in `[fixed]`, as
/// an axis or in an axis' inline table): a sweep would not honour them.
/// (option, why, what to do instead)
const RUN_ONLY: &[(&str, &str)] = &[
    ("expect", "a sweep's gates are held against every point's median: give them to the sweep, `linerate sweep FILE --expect 'METRIC OP VALUE'`"),
    ("json_stream", "a sweep writes every run to DIR/results.jsonl and its report, not a run's event stream: leave it out"),
    ("interval", "it is --json-stream's, which a sweep does not print: leave it out"),
    ("json", "a sweep writes every run's result to DIR/results.jsonl and prints its report: leave it out"),
    ("quiet", "a sweep prints its report, not each run's table: leave it out"),
    ("search_rate", "a sweep runs each point as given and searches no rate: use `linerate rfc2544`, or an axis of `rate`"),
    ("search", "a sweep searches no rate: use `linerate rfc2544`"),
    ("role", "linerate sets it for an agent's side itself: leave it out"),
    ("peer_mac", "linerate sets it for an agent's side itself: leave it out"),
    ("peer_ip", "linerate sets it for an agent's side itself: leave it out"),
    ("start_at", "linerate sets it for an agent's side itself: leave it out"),
    ("clock_offset_ns", "linerate sets it for an agent's side itself: leave it out"),
    ("pair", "linerate sets it for a fleet's pairs itself: leave it out"),
];

/// Every option a table of settings sets (those of inline tables too).
fn keys_of<'a>(key: &'a str, v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Table(t) => {
            for (k, v) in t {
                keys_of(k, v, out);
            }
        }
        _ => out.push(key),
    }
}

impl SweepSpec {
    /// Refuses an option of one run that a sweep would not honour
    /// ([`RUN_ONLY`]: `expect`, `json_stream`, ...) wherever a part sets
    /// it; a command-line error (exit 2), before anything runs.
    pub fn check_run_only(&self, text: &str, file: &str) -> Result<(), SpecError> {
        for part in &self.parts {
            let mut keys = Vec::new();
            for (k, v) in &part.fixed {
                keys_of(k, v, &mut keys);
            }
            for a in &part.axes {
                for v in &a.values {
                    keys_of(&a.name, v, &mut keys);
                }
            }
            for key in keys {
                let option = key.replace('-', "_");
                if let Some((_, why)) = RUN_ONLY.iter().find(|(o, _)| *o == option) {
                    return Err(SpecError {
                        file: file.into(),
                        line: line_of(text, key),
                        message: format!(
                            "{key}: a sweep file may not set this option of one run: {why}"
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}

impl Part {
    /// The axis called `name`.
    pub fn axis(&self, name: &str) -> Option<&Axis> {
        self.axes.iter().find(|a| a.name == name)
    }

    fn check(&self, err: &impl Fn(&str, String) -> SpecError) -> Result<(), SpecError> {
        let names: Vec<&str> = self.axes.iter().map(|a| a.name.as_str()).collect();
        for a in &self.axes {
            if a.values.is_empty() {
                return Err(err(&a.name, format!("axis {:?} has no values", a.name)));
            }
            if !a.labels.is_empty() && a.labels.len() != a.values.len() {
                return Err(err(
                    &a.name,
                    format!(
                        "axis {:?} has {} labels for {} values",
                        a.name,
                        a.labels.len(),
                        a.values.len()
                    ),
                ));
            }
            if self.fixed.contains_key(&a.name) {
                return Err(err(
                    &a.name,
                    format!("{:?} is both fixed and an axis: keep one", a.name),
                ));
            }
            if names.iter().filter(|n| **n == a.name).count() > 1 {
                return Err(err(&a.name, format!("axis {:?} is given twice", a.name)));
            }
        }
        let known = |n: &str| names.contains(&n);
        let unknown = |what: &str, title: &str, ax: &str| {
            err(
                ax,
                format!("{what} {title:?} uses {ax:?}, which is not an axis (axes: {names:?})"),
            )
        };
        for t in &self.tables {
            for ax in std::iter::once(&t.rows).chain(t.columns.as_ref()) {
                if !known(ax) {
                    return Err(unknown("table", &t.title, ax));
                }
            }
            if t.metrics.is_empty() {
                return Err(err(
                    &t.title,
                    format!("table {:?} shows no metric", t.title),
                ));
            }
        }
        for f in &self.figures {
            for ax in std::iter::once(&f.x).chain(f.series.as_ref()) {
                if !known(ax) {
                    return Err(unknown("figure", &f.title, ax));
                }
            }
        }
        for f in &self.fits {
            for ax in std::iter::once(&f.x).chain(f.series.as_ref()) {
                if !known(ax) {
                    return Err(unknown("fit", &f.title, ax));
                }
            }
        }
        for w in &self.winners {
            for ax in [&w.among, &w.over] {
                if !known(ax) {
                    return Err(unknown("winner", &w.what, ax));
                }
            }
        }
        // Metrics: in the list, and measured by this part's command.
        let kind = match self.kind {
            Kind::Stream => "stream",
            Kind::Rr => "rr",
        };
        let used = self
            .tables
            .iter()
            .flat_map(|t| t.metrics.iter().map(move |m| ("table", &t.title, m)))
            .chain(self.figures.iter().map(|f| ("figure", &f.title, &f.y)))
            .chain(self.winners.iter().map(|w| ("winner", &w.what, &w.metric)));
        for (what, title, name) in used {
            let Some(m) = Metric::find(name) else {
                return Err(err(
                    name,
                    format!("{what} {title:?}: {}", metrics::unknown(name)),
                ));
            };
            if !m.tests().has(kind) {
                return Err(err(
                    name,
                    format!(
                        "{what} {title:?} shows {name:?}, which `linerate {kind}` does not measure (it is a figure of {} results): pick a metric of {kind} results (docs/metrics.md)",
                        if kind == "rr" { "stream" } else { "rr" }
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The first line of `text` that mentions `key`, for error messages.
pub fn line_of(text: &str, key: &str) -> usize {
    text.lines()
        .position(|l| l.contains(key))
        .map_or(0, |i| i + 1)
}

/// A value as a table cell or legend shows it.
pub fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Integer(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Boolean(b) => b.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "t"
kind = "stream"
repeats = 3
[fixed]
mtu = 1500
[[axis]]
name = "message"
values = [64, 1024]
[[axis]]
name = "tx_wait"
values = ["busy", "wait"]
[[table]]
title = "MB/s"
rows = "message"
columns = "tx_wait"
metrics = ["receiver.message_mb_s"]
[[figure]]
title = "MB/s vs size"
x = "message"
y = "receiver.message_mb_s"
series = "tx_wait"
[[reference]]
source = "000, figure 7"
case = "C10 sends"
value = "8.5 MB/s"
"#;

    #[test]
    fn good_file() {
        let s = SweepSpec::parse(GOOD, "good.toml").unwrap();
        assert_eq!(s.parts.len(), 1);
        assert_eq!(s.parts[0].kind, Kind::Stream);
        assert_eq!(s.parts[0].axes.len(), 2);
        assert_eq!(s.repeats, 3);
        assert_eq!(s.references.len(), 1);
    }

    #[test]
    fn bad_files_name_file_line_and_key() {
        let e = SweepSpec::parse(
            &GOOD.replace("repeats = 3", "repeats = 3\ncolour = 1"),
            "b.toml",
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("b.toml:"), "{e}");
        assert!(e.message.contains("colour"), "{e}");
        let e = SweepSpec::parse(
            &GOOD.replace("repeats = 3", "repeats = \"three\""),
            "b.toml",
        )
        .unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        let e = SweepSpec::parse(
            &GOOD.replace("rows = \"message\"", "rows = \"size\""),
            "b.toml",
        )
        .unwrap_err();
        assert!(e.message.contains("\"size\", which is not an axis"), "{e}");
        assert!(e.line > 0);
        let e = SweepSpec::parse(&GOOD.replace("mtu = 1500", "message = 5"), "b.toml").unwrap_err();
        assert!(e.message.contains("both fixed and an axis"), "{e}");
        let e =
            SweepSpec::parse(&GOOD.replace("repeats = 3", "repeats = 0"), "b.toml").unwrap_err();
        assert!(e.message.contains("repeats = 0"), "{e}");
        let e = SweepSpec::parse(
            &GOOD.replace("kind = \"stream\"", "kind = \"ping\""),
            "b.toml",
        )
        .unwrap_err();
        assert!(
            e.message.contains("ping") || e.message.contains("variant"),
            "{e}"
        );
    }

    /// An option of one run that a sweep would not honour is refused
    /// where it is set (fixed, axis, inline table; `_` or `-`), with the
    /// line and what to do instead; the options a sweep honours pass.
    #[test]
    fn options_of_one_run_are_refused_in_a_sweep_file() {
        let file = |set: &str| {
            format!(
                "name = \"t\"\nkind = \"stream\"\n[fixed]\nmtu = 1500\n{set}\n[[axis]]\nname = \"message\"\nvalues = [64]\n"
            )
        };
        for (set, key, line, says) in [
            (
                "expect = \"frames.lost == 0\"",
                "expect",
                5,
                "linerate sweep FILE --expect",
            ),
            ("json_stream = true", "json_stream", 5, "event stream"),
            ("json-stream = true", "json-stream", 5, "event stream"),
            ("interval = \"1s\"", "interval", 5, "--json-stream"),
            ("json = true", "json", 5, "results.jsonl"),
            ("quiet = true", "quiet", 5, "report"),
            ("search_rate = 0.1", "search_rate", 5, "rfc2544"),
            ("role = \"tx\"", "role", 5, "agent's side"),
            (
                "mode = { tx_wait = \"busy\", expect = \"x >= 1\" }",
                "expect",
                5,
                "--expect",
            ),
        ] {
            let text = file(set);
            let spec = SweepSpec::parse(&text, "t.toml").unwrap();
            let e = spec
                .check_run_only(&text, "t.toml")
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with(&format!(
                    "t.toml:{line}: {key}: a sweep file may not set this option of one run: "
                )) && e.contains(says),
                "{set}: {e}"
            );
        }
        let axis = "name = \"t\"\nkind = \"stream\"\n[[axis]]\nname = \"expect\"\nvalues = [\"frames.lost == 0\"]\n";
        let spec = SweepSpec::parse(axis, "t.toml").unwrap();
        assert!(spec
            .check_run_only(axis, "t.toml")
            .unwrap_err()
            .to_string()
            .starts_with("t.toml:4: expect: "));
        for set in [
            "pcap = \"run.pcapng\"",
            "reverse = true",
            "tx_wait = \"busy\"",
            "force = true",
        ] {
            let text = file(set);
            let spec = SweepSpec::parse(&text, "t.toml").unwrap();
            spec.check_run_only(&text, "t.toml").unwrap();
        }
    }

    #[test]
    fn metrics_come_from_the_list() {
        let e = SweepSpec::parse(
            &GOOD.replace(
                "metrics = [\"receiver.message_mb_s\"]",
                "metrics = [\"receiver.mesage_mb_s\"]",
            ),
            "b.toml",
        )
        .unwrap_err();
        assert_eq!(e.line, 17, "{e}");
        assert!(
            e.message.starts_with("table \"MB/s\": \"receiver.mesage_mb_s\" is not a metric linerate knows. Figures: ")
                && e.message.contains("receiver.message_mb_s"),
            "{e}"
        );
        let e = SweepSpec::parse(
            &GOOD.replace(
                "y = \"receiver.message_mb_s\"",
                "y = \"transactions.per_s\"",
            ),
            "b.toml",
        )
        .unwrap_err();
        assert!(
            e.message
                .contains("shows \"transactions.per_s\", which `linerate stream` does not measure"),
            "{e}"
        );
        let with_goal = format!(
            "{GOOD}[[goal]]\ncase = \"x\"\nmetric = \"receiver.message_mb_s\"\nat_least = 1\ncpu = \"cpu.totl.cpu_pct\"\n"
        );
        let e = SweepSpec::parse(&with_goal, "b.toml").unwrap_err();
        assert!(
            e.message
                .starts_with("goal \"x\" (cpu): \"cpu.totl.cpu_pct\" is not"),
            "{e}"
        );
        let spec = SweepSpec::parse(GOOD, "good.toml").unwrap();
        assert_eq!(
            spec.metric_names().collect::<Vec<_>>(),
            ["receiver.message_mb_s", "receiver.message_mb_s"]
        );
        // Every preset's metrics are in the list.
        for (name, _, text) in super::super::presets::PRESETS {
            SweepSpec::parse(text, name).unwrap();
        }
    }
}
