//! A result of either test, as `--json` prints it, an agent returns a
//! side's, the controller merges two and a sweep stores each: JSON one way
//! and typed the other, told apart by its `test`.

use serde::{de::Error as _, Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::two_host::{self, Agents};
use crate::{
    envelope::Envelope,
    rr::RrResult,
    rr_table as rr_output,
    stream::StreamResult,
    stream_table as stream_output,
    system::{Environment, Host},
};

/// The result of a `stream` or an `rr` run, local or across two hosts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // a result, built once a run: boxing buys nothing
pub enum RunResult {
    /// `linerate stream`.
    Stream(StreamResult),
    /// `linerate rr`.
    Rr(RrResult),
}

impl<'de> Deserialize<'de> for RunResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        match v.get("test").and_then(Value::as_str) {
            Some("stream") => StreamResult::deserialize(v).map(Self::Stream).map_err(|e| {
                D::Error::custom(format!("a stream result that does not hold up: {e}"))
            }),
            Some("rr") => RrResult::deserialize(v)
                .map(Self::Rr)
                .map_err(|e| D::Error::custom(format!("an rr result that does not hold up: {e}"))),
            Some(other) => Err(D::Error::custom(format!(
                "a result of test {other:?}: linerate reads stream and rr results"
            ))),
            None => Err(D::Error::custom(
                "not a linerate stream or rr result (it names no test)",
            )),
        }
    }
}

impl From<StreamResult> for RunResult {
    fn from(r: StreamResult) -> Self {
        Self::Stream(r)
    }
}

impl From<RrResult> for RunResult {
    fn from(r: RrResult) -> Self {
        Self::Rr(r)
    }
}

impl RunResult {
    /// "stream" or "rr".
    #[cfg(test)]
    pub fn test(&self) -> &'static str {
        match self {
            Self::Stream(r) => r.test,
            Self::Rr(r) => r.test,
        }
    }

    /// What a result of either test holds: version, host, window, how it
    /// ended, workers, interfaces, agents.
    pub fn common(&self) -> &Envelope {
        match self {
            Self::Stream(r) => &r.common,
            Self::Rr(r) => &r.common,
        }
    }

    /// Whether the workers of `side` verified the checksums of the frames
    /// they received, so that their `bad_checksum` is a measurement: a
    /// stream's receivers as the result says ([`crate::stream::Refused`];
    /// its senders receive nothing), rr's clients and responders over
    /// AF_XDP sockets (kernel sockets get only what the kernel passed).
    pub fn checks_checksums(&self, side: Host) -> bool {
        match self {
            Self::Stream(s) => side == Host::Rx && s.frames.refused.checksums,
            Self::Rr(r) => r.params.backend == "xdp",
        }
    }

    /// How it ended: interrupted, and its fault if any.
    pub fn ended(&self) -> (bool, &Option<String>) {
        (self.common().interrupted, &self.common().fault)
    }

    /// The terminal table (with a line for its repeats and one when it
    /// was disturbed).
    pub fn table(&self) -> String {
        let mut t = match self {
            Self::Stream(r) => stream_output::print_table(r),
            Self::Rr(r) => rr_output::print_table(r),
        };
        t.push_str(&self.repeats_lines());
        t
    }

    /// The lines the table ends with: the repeats (`--confidence`) and
    /// whether the run was disturbed.
    fn repeats_lines(&self) -> String {
        let c = self.common();
        let mut out = String::new();
        if let Some(r) = &c.confidence {
            let values: Vec<String> = r.values.iter().map(|v| format!("{v:.0}")).collect();
            out += &format!(
                "repeats     {} ({} % confidence, asked +-{:.1} %; median run; {}: {})\n",
                r.short(),
                r.level,
                r.width_pct / 2.0,
                self.headline_name(),
                values.join(" ")
            );
            if r.disturbed_runs > 0 {
                out += &format!(
                    "            {} disturbed run(s) left out\n",
                    r.disturbed_runs
                );
            }
            if !r.reached {
                let varied: Vec<String> = r
                    .varied
                    .iter()
                    .map(|(n, p)| format!("{n} {p:.1} %"))
                    .collect();
                out += &format!(
                    "            varied most (max-min, % of the median; _pct figures in points): {}\n",
                    varied.join(", ")
                );
            }
        }
        if c.disturbed {
            out += &format!(
                "disturbed   other tasks took {:.1} % of the run's cores\n",
                self.interference_pct().unwrap_or(0.0)
            );
        }
        out
    }

    /// The headline figure `--confidence` repeats on: frames/s received,
    /// rr: transactions/s.
    pub fn headline(&self) -> f64 {
        match self {
            Self::Stream(r) => r.receiver.frames_per_s,
            Self::Rr(r) => r.transactions.per_s,
        }
    }

    /// The headline's metric name.
    pub fn headline_name(&self) -> &'static str {
        match self {
            Self::Stream(_) => "receiver.frames_per_s",
            Self::Rr(_) => "transactions.per_s",
        }
    }

    /// The largest interference of its sides, percent of their cores'
    /// time other tasks took (none where not measured).
    pub fn interference_pct(&self) -> Option<f64> {
        let sides = match self {
            Self::Stream(r) => [&r.receiver.cpu, &r.sender.cpu],
            Self::Rr(r) => [&r.cpu.client.cpu, &r.cpu.responder.cpu],
        };
        sides
            .iter()
            .filter_map(|c| c.interference_pct)
            .max_by(f64::total_cmp)
    }

    /// The figures whose spread over repeats says what varied.
    pub fn figures(&self) -> Vec<(&'static str, f64)> {
        type Side<'a> = (&'a crate::parts::CpuFigures, &'static str, &'static str);
        let mut f = vec![(self.headline_name(), self.headline())];
        let sides: [Side; 2] = match self {
            Self::Stream(r) => {
                f.push(("sender.frames_per_s", r.sender.frames_per_s));
                [
                    (
                        &r.receiver.cpu,
                        "receiver.cpu.cpu_pct",
                        "receiver.cpu.interference_pct",
                    ),
                    (
                        &r.sender.cpu,
                        "sender.cpu.cpu_pct",
                        "sender.cpu.interference_pct",
                    ),
                ]
            }
            Self::Rr(r) => [
                (
                    &r.cpu.client.cpu,
                    "cpu.client.cpu_pct",
                    "cpu.client.interference_pct",
                ),
                (
                    &r.cpu.responder.cpu,
                    "cpu.responder.cpu_pct",
                    "cpu.responder.interference_pct",
                ),
            ],
        };
        for (c, busy, other) in sides {
            f.push((busy, c.cpu_pct));
            if let Some(i) = c.interference_pct {
                f.push((other, i));
            }
        }
        f
    }

    /// The shared fields, to record the repeats and the disturbance on.
    pub fn common_mut(&mut self) -> &mut Envelope {
        match self {
            Self::Stream(r) => &mut r.common,
            Self::Rr(r) => &mut r.common,
        }
    }

    /// The summary line (`-q`), the table's first.
    pub fn summary(&self) -> String {
        match self {
            Self::Stream(r) => stream_output::summary(r),
            Self::Rr(r) => rr_output::summary(r),
        }
    }

    /// The (sending) host.
    pub fn environment(&self) -> &Environment {
        &self.common().environment
    }

    /// The data path: "xdp", "udp" or "tcp".
    pub fn backend(&self) -> &str {
        match self {
            Self::Stream(r) => &r.params.backend,
            Self::Rr(r) => &r.params.backend,
        }
    }

    /// Bytes per message: a message stream's messages, an rr run's request
    /// and response together.
    pub fn message_size(&self) -> Option<usize> {
        match self {
            Self::Stream(r) => r.frames.messages.as_ref().map(|m| m.message_bytes),
            Self::Rr(r) => Some(r.params.request + r.params.response),
        }
    }

    /// Time per message, seconds (document 000's figures 7-10 and the
    /// overhead fit).
    pub fn time_per_message_s(&self) -> Option<f64> {
        match self {
            Self::Stream(r) => r.time_per_message_s(),
            Self::Rr(r) => r.time_per_message_s(),
        }
    }
}

/// What a run across two hosts gave: both sides merged, or, when a side
/// ended without a result, what there is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // one per two-host run, never in bulk
pub enum TwoHostResult {
    /// Both sides' figures as one result (with `agents`).
    Merged(RunResult),
    /// A side is missing.
    Partial(Partial),
}

/// A two-host run with a side missing: each side's own result, if any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Partial {
    /// "stream" or "rr".
    pub test: String,
    /// Always true.
    pub partial: bool,
    /// The agents.
    pub agents: Agents,
    /// The sending (rr: client's) host's result.
    pub tx: Option<Box<RunResult>>,
    /// The receiving (rr: responder's) host's result.
    pub rx: Option<Box<RunResult>>,
}

impl TwoHostResult {
    /// The summary line of the merged result; with a side missing there
    /// is none: the table, each side's own.
    pub fn summary(&self) -> String {
        match self {
            Self::Merged(r) => r.summary(),
            Self::Partial(_) => self.table(),
        }
    }

    /// The terminal table: the merged result's, or each side's own.
    pub fn table(&self) -> String {
        match self {
            Self::Merged(r) => r.table(),
            Self::Partial(p) => {
                let mut o = two_host::header(&p.test, &p.agents);
                for (side, r) in [("tx", &p.tx), ("rx", &p.rx)] {
                    match r {
                        None => o += &format!("  {side} host: no result\n"),
                        Some(r) => {
                            o += &format!("  {side} host's own figures:\n");
                            for line in r.table().lines() {
                                o += &format!("  {line}\n");
                            }
                        }
                    }
                }
                o
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
    }

    fn fixture(name: &str) -> (Value, RunResult) {
        let text = std::fs::read_to_string(fixtures().join("results").join(name)).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let r = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        (v, r)
    }

    /// Results as linerate writes them today (local, two-host; stream,
    /// messages, rr, kernel backends) read into the types and written back
    /// are the same JSON (a counter added since they were written comes
    /// back as 0).
    #[test]
    fn results_of_today_round_trip_exactly() {
        let mut n = 0;
        for e in std::fs::read_dir(fixtures().join("results")).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            let (v, r) = fixture(&name);
            assert_eq!(r.test(), v["test"], "{name}");
            same_but_added(&v, &serde_json::to_value(&r).unwrap(), &name, zero);
            let two: TwoHostResult = serde_json::from_value(v.clone()).unwrap();
            assert!(
                matches!(two, TwoHostResult::Merged(_)) == v.get("partial").is_none(),
                "{name}"
            );
            n += 1;
        }
        assert_eq!(n, 8);
    }

    /// A counter added since a result was written reads as 0.
    fn zero(v: &Value) -> bool {
        v.as_f64() == Some(0.0)
    }

    /// A field added since reads as nothing measured.
    fn empty(v: &Value) -> bool {
        matches!(v, Value::Null | Value::Bool(false)) || zero(v) || v.as_str() == Some("")
    }

    /// Every field `old` has is the same in `new`; each field `new` adds
    /// is `added`.
    fn same_but_added(old: &Value, new: &Value, at: &str, added: fn(&Value) -> bool) {
        match (old, new) {
            (Value::Object(o), Value::Object(n)) => {
                for (k, v) in n {
                    let at = format!("{at}.{k}");
                    match o.get(k) {
                        Some(ov) => same_but_added(ov, v, &at, added),
                        None => assert!(added(v), "{at} added as {v}"),
                    }
                }
                for k in o.keys() {
                    assert!(n.contains_key(k), "{at}.{k} lost");
                }
            }
            (Value::Array(o), Value::Array(n)) => {
                assert_eq!(o.len(), n.len(), "{at}");
                for (i, (o, n)) in o.iter().zip(n).enumerate() {
                    same_but_added(o, n, &format!("{at}[{i}]"), added);
                }
            }
            _ => assert_eq!(old, new, "{at}"),
        }
    }

    /// The results in a sweep's results.jsonl written by an earlier version
    /// (no placement, driver, UMEM or XDP-only counters) read into the
    /// types (the records around them: `sweep::saved`'s tests).
    #[test]
    fn results_of_earlier_versions_read() {
        let text = std::fs::read_to_string(fixtures().join("sweep-small/results.jsonl")).unwrap();
        for (i, line) in text.lines().enumerate() {
            let old: Value = serde_json::from_str(line).unwrap();
            let result: RunResult = serde_json::from_value(old["result"].clone()).unwrap();
            let new = serde_json::to_value(&result).unwrap();
            same_but_added(&old["result"], &new, &format!("line {}", i + 1), empty);
            assert!(matches!(result, RunResult::Stream(_)));
        }
    }

    #[test]
    fn a_partial_two_host_result() {
        let (v, tx) = fixture("stream.json");
        let RunResult::Stream(s) = fixture("two-host-stream.json").1 else {
            panic!()
        };
        let agents = s.common.agents.unwrap();
        let p = TwoHostResult::Partial(Partial {
            test: "stream".into(),
            partial: true,
            agents: agents.clone(),
            tx: Some(Box::new(tx)),
            rx: None,
        });
        let j = serde_json::to_value(&p).unwrap();
        assert_eq!(
            (&j["partial"], &j["rx"]),
            (&Value::Bool(true), &Value::Null)
        );
        same_but_added(&v, &j["tx"], "tx", zero);
        assert_eq!(serde_json::from_value::<TwoHostResult>(j).unwrap(), p);
        let t = p.table();
        assert!(
            t.starts_with("linerate stream across two hosts: tx http://127.0.0.1:7591")
                && t.contains("  tx host's own figures:\n  stream: received ")
                && t.contains("\n  linerate stream (xdp)")
                && t.ends_with("  rx host: no result\n"),
            "{t}"
        );
    }

    #[test]
    fn other_tests_are_refused_by_name() {
        let e = serde_json::from_str::<RunResult>(r#"{"test":"stream-search"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a result of test \"stream-search\""), "{e}");
        let e = serde_json::from_str::<RunResult>(r#"{"x":1}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("names no test"), "{e}");
        let e = serde_json::from_str::<RunResult>(r#"{"test":"rr"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("an rr result that does not hold up: missing field"),
            "{e}"
        );
    }
}
