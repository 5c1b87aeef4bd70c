//! `--expect 'METRIC OP VALUE'`: the gates of a CI job. Each expectation
//! names a metric of the list (docs/metrics.md), an operator and a
//! number; a finished run prints each met or unmet with the measured
//! value, and the exit status is 4 when any is unmet (docs/errors.md).

use std::{fmt, process::ExitCode, str::FromStr};

use serde::Serialize;

use super::{
    metrics::{Metric, Source},
    run::RunResult,
};

/// How a measured value is held against the expected one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Op {
    /// `>=`
    #[serde(rename = ">=")]
    Ge,
    /// `<=`
    #[serde(rename = "<=")]
    Le,
    /// `>`
    #[serde(rename = ">")]
    Gt,
    /// `<`
    #[serde(rename = "<")]
    Lt,
    /// `==`
    #[serde(rename = "==")]
    Eq,
}

impl Op {
    /// The operators, two-character ones first (so `>=` is not read as `>`).
    const ALL: [(&'static str, Op); 5] = [
        (">=", Op::Ge),
        ("<=", Op::Le),
        ("==", Op::Eq),
        (">", Op::Gt),
        ("<", Op::Lt),
    ];

    fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, o)| *o == self)
            .map_or("?", |(s, _)| s)
    }

    /// Whether `got OP want`.
    pub fn holds(self, got: f64, want: f64) -> bool {
        match self {
            Op::Ge => got >= want,
            Op::Le => got <= want,
            Op::Gt => got > want,
            Op::Lt => got < want,
            Op::Eq => got == want,
        }
    }
}

/// One `--expect`.
#[derive(Clone)]
pub struct Expectation {
    /// The metric's name, as given.
    pub name: String,
    metric: Metric,
    /// The operator.
    pub op: Op,
    /// The number it is held against.
    pub value: f64,
}

impl fmt::Debug for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.name, self.op.as_str(), self.value)
    }
}

/// A finite number, with an optional SI multiplier (k, M, G: 1.5M =
/// 1,500,000).
fn number(text: &str) -> Option<f64> {
    let t = text.trim();
    let (digits, scale) = match t.chars().last()? {
        'k' => (&t[..t.len() - 1], 1e3),
        'M' => (&t[..t.len() - 1], 1e6),
        'G' => (&t[..t.len() - 1], 1e9),
        _ => (t, 1.0),
    };
    let v: f64 = digits.trim().parse().ok()?;
    // Finite after its multiplier too: 1e308G is no threshold.
    Some(v * scale).filter(|v| v.is_finite())
}

impl FromStr for Expectation {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let form = "write METRIC OP VALUE, e.g. 'receiver.frames_per_s >= 1M' or 'latency.p99_us < 50' (OP one of >= <= > < ==; metric names as in docs/metrics.md)";
        let Some((at, op_text, op)) = Op::ALL
            .iter()
            .filter_map(|(s, o)| text.find(s).map(|i| (i, *s, *o)))
            .min_by_key(|(i, s, _)| (*i, std::cmp::Reverse(s.len())))
        else {
            return Err(format!("{text:?} has no operator: {form}"));
        };
        let name = text[..at].trim();
        let rest = &text[at + op_text.len()..];
        if name.is_empty() {
            return Err(format!("{text:?} names no metric: {form}"));
        }
        let metric = Metric::find(name).ok_or_else(|| super::metrics::unknown(name))?;
        let value = number(rest)
            .ok_or_else(|| format!("{text:?}: {:?} is not a finite number: {form}", rest.trim()))?;
        Ok(Self {
            name: name.to_string(),
            metric,
            op,
            value,
        })
    }
}

/// Which command's results an expectation is held against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// `stream`.
    Stream,
    /// `rr`.
    Rr,
}

impl Expectation {
    /// Refuses, before anything runs, an expectation of a metric the
    /// command's results never have (an rr figure on a stream).
    pub fn check_for(list: &[Self], test: Test) -> Result<(), String> {
        for e in list {
            if !e.applies_to(test) {
                let (here, there) = match test {
                    Test::Stream => ("stream", "rr"),
                    Test::Rr => ("rr", "stream"),
                };
                return Err(format!(
                    "--expect '{e}': {} is a figure of {there} results, not of {here}: name a metric of {here} (docs/metrics.md)",
                    e.name
                ));
            }
        }
        Ok(())
    }

    /// Whether `test`'s results have this expectation's metric.
    pub fn applies_to(&self, test: Test) -> bool {
        let t = self.metric.tests();
        match test {
            Test::Stream => t.stream,
            Test::Rr => t.rr,
        }
    }

    /// The metric's value in a result or a fleet's aggregate (None: not
    /// measured there; in an aggregate, a counter family computed over one
    /// host's workers is not there either).
    pub fn value<'a>(&self, from: impl Into<Source<'a>>) -> Option<f64> {
        self.metric.value(from).filter(|v| v.is_finite())
    }

    /// This expectation against a result or a fleet's aggregate.
    pub fn judge<'a>(&self, from: impl Into<Source<'a>>) -> Verdict {
        self.judge_value(self.value(from))
    }

    /// This expectation against a value measured (none: unmet).
    pub fn judge_value(&self, measured: Option<f64>) -> Verdict {
        Verdict {
            expect: self.to_string(),
            metric: self.name.clone(),
            op: self.op,
            value: self.value,
            measured,
            met: measured.is_some_and(|m| self.op.holds(m, self.value)),
        }
    }
}

/// Every `--expect` of a command, parsed and checked for `test`'s results:
/// a bad one is a command-line error (the caller exits 2, before the run).
pub fn parse_all(list: &[String], test: Test) -> Result<Vec<Expectation>, String> {
    let parsed = parse(list)?;
    Expectation::check_for(&parsed, test)?;
    Ok(parsed)
}

/// Every `--expect` parsed (the first bad one named), not yet checked
/// against a command's results.
pub fn parse(list: &[String]) -> Result<Vec<Expectation>, String> {
    list.iter()
        .map(|e| e.parse().map_err(|why| format!("--expect '{e}': {why}")))
        .collect()
}

/// The command-line error of a bad `--expect` (exit 2, as clap's).
pub fn usage_error(why: &str) -> ExitCode {
    eprintln!("linerate: error: {why}");
    ExitCode::from(2)
}

/// The exit status of a finished run held against its expectations: the
/// run's own when it is not 0 (a fault, an interruption), 4 when one is
/// unmet (none measured: every one unmet), else 0. Prints every verdict.
pub fn gate(code: ExitCode, result: Option<&RunResult>, list: &[Expectation]) -> ExitCode {
    let verdicts: Vec<Verdict> = list
        .iter()
        .map(|e| match result {
            Some(r) => e.judge(r),
            None => e.judge_value(None),
        })
        .collect();
    gate_verdicts(code, &verdicts)
}

/// The exit status of a run whose expectations were judged: printed, then
/// the run's own status when it is not 0, 4 when one is unmet, else 0.
pub fn gate_verdicts(code: ExitCode, verdicts: &[Verdict]) -> ExitCode {
    if verdicts.is_empty() {
        return code;
    }
    let met = all_met(verdicts);
    if met || code != ExitCode::SUCCESS {
        code
    } else {
        ExitCode::from(UNMET)
    }
}

/// The exit status when an expectation is unmet.
pub const UNMET: u8 = 4;

/// An expectation judged.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// As given (normalised).
    pub expect: String,
    /// The metric.
    pub metric: String,
    /// The operator.
    pub op: Op,
    /// The expected number.
    pub value: f64,
    /// What the run measured (none: the run has no such figure, e.g. no
    /// latency without stamps): unmet.
    pub measured: Option<f64>,
    /// Whether it holds.
    pub met: bool,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.measured {
            Some(m) => write!(
                f,
                "expect {}: {} (measured {})",
                self.expect,
                if self.met { "met" } else { "UNMET" },
                shown(m)
            ),
            None => write!(
                f,
                "expect {}: UNMET (not measured in this run)",
                self.expect
            ),
        }
    }
}

fn shown(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}")
    }
}

/// Prints every verdict (stderr: stdout stays the result, JSON or table)
/// and says whether all were met.
pub fn all_met(verdicts: &[Verdict]) -> bool {
    for v in verdicts {
        eprintln!("linerate: {v}");
    }
    said_unmet(verdicts)
}

/// Says how many were unmet, if any; whether all were met.
pub fn said_unmet(verdicts: &[Verdict]) -> bool {
    let unmet = verdicts.iter().filter(|v| !v.met).count();
    if unmet > 0 {
        eprintln!(
            "linerate: {unmet} of {} expectation(s) unmet (exit 4)",
            verdicts.len()
        );
    }
    unmet == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expectations_parse_with_or_without_spaces() {
        let e: Expectation = "receiver.frames_per_s >= 1.5M".parse().unwrap();
        assert_eq!(
            (e.name.as_str(), e.op, e.value),
            ("receiver.frames_per_s", Op::Ge, 1.5e6)
        );
        let e: Expectation = "latency.p99_us<50".parse().unwrap();
        assert_eq!((e.op, e.value), (Op::Lt, 50.0));
        let e: Expectation = "frames.lost == 0".parse().unwrap();
        assert_eq!(e.op, Op::Eq);
        let e: Expectation = "frames.loss_pct <= 0.1".parse().unwrap();
        assert_eq!((e.op, e.value), (Op::Le, 0.1));
        assert_eq!(e.to_string(), "frames.loss_pct <= 0.1");
    }

    #[test]
    fn bad_expectations_say_what_is_wrong() {
        for (text, want) in [
            ("receiver.frames_per_s 5", "no operator"),
            (">= 5", "names no metric"),
            ("no.such.metric >= 5", "not a metric linerate knows"),
            ("frames.lost <= many", "\"many\" is not a finite number"),
            ("frames.lost <= inf", "is not a finite number"),
            ("frames.lost <= 1e308G", "\"1e308G\" is not a finite number"),
            ("frames.lost <= -1e305G", "is not a finite number"),
        ] {
            let e = text.parse::<Expectation>().unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn a_figure_of_the_other_test_is_refused_before_the_run() {
        let e: Vec<Expectation> = vec!["transactions.per_s >= 1".parse().unwrap()];
        let why = Expectation::check_for(&e, Test::Stream).unwrap_err();
        assert!(why.contains("rr results"), "{why}");
        Expectation::check_for(&e, Test::Rr).unwrap();
    }

    /// The fixture stream, changed by `edit` as a run of another kind
    /// would have written it.
    fn stream(edit: impl FnOnce(&mut serde_json::Value)) -> RunResult {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/results/stream.json");
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        edit(&mut v);
        serde_json::from_value(v).unwrap()
    }

    fn verdict(gate: &str, r: &RunResult) -> String {
        gate.parse::<Expectation>().unwrap().judge(r).to_string()
    }

    /// A gate on a figure the run did not measure is unmet, "not
    /// measured", never met on the zero its field holds.
    #[test]
    fn a_gate_on_what_was_not_measured_is_unmet() {
        let tx_only = stream(|v| {
            v["setup"]["rx_bind_mode"] = crate::stream_table::TX_ONLY.into();
            v["frames"]["received"] = 0.into();
            v["frames"]["lost"] = 0.into();
            v["frames"]["loss_pct"] = 0.0.into();
        });
        for gate in [
            "frames.lost == 0",
            "frames.loss_pct <= 0",
            "frames.seq_gaps == 0",
            "receiver.frames_per_s >= 0",
        ] {
            assert_eq!(
                verdict(gate, &tx_only),
                format!("expect {gate}: UNMET (not measured in this run)")
            );
        }
        assert!(verdict("sender.frames_per_s >= 1", &tx_only).contains(": met (measured "));
        let rx_only_nothing = stream(|v| {
            v["setup"]["tx_bind_mode"] = crate::stream_table::RX_ONLY.into();
            for f in ["sent", "received", "lost", "seq_gaps"] {
                v["frames"][f] = 0.into();
            }
            v["frames"]["loss_pct"] = 0.0.into();
        });
        for gate in [
            "frames.loss_pct <= 0",
            "frames.lost == 0",
            "frames.seq_gaps == 0",
        ] {
            assert_eq!(
                verdict(gate, &rx_only_nothing),
                format!("expect {gate}: UNMET (not measured in this run)")
            );
        }
        // A latency over no sample (its fields read 0).
        let no_samples = stream(|v| {
            v["latency"] = serde_json::json!({"count": 0, "mean_us": 0.0, "min_us": 0.0, "p50_us": 0.0, "p90_us": 0.0, "p99_us": 0.0, "p99_9_us": 0.0, "max_us": 0.0});
        });
        assert_eq!(
            verdict("latency.p99_us < 50", &no_samples),
            "expect latency.p99_us < 50: UNMET (not measured in this run)"
        );
        // Both sides ran: the loss is measured.
        let whole = stream(|_| {});
        assert!(verdict("frames.loss_pct <= 100", &whole).contains(": met (measured "));
    }

    #[test]
    fn operators_hold_as_written() {
        assert!(Op::Ge.holds(2.0, 2.0) && !Op::Gt.holds(2.0, 2.0));
        assert!(Op::Le.holds(2.0, 2.0) && !Op::Lt.holds(2.0, 2.0));
        assert!(Op::Eq.holds(0.0, 0.0) && !Op::Eq.holds(0.1, 0.0));
    }
}
