//! What a sweep keeps in its directory: the sweep file as run, how it was
//! run (options.json), one record per finished run (results.jsonl), and
//! the size of the sweep counted from its axes.

use std::{
    collections::HashSet,
    path::{Path, PathBuf},
};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{fleet::FleetRun, points, spec::SweepSpec};
use linerate_results::run::RunResult;

/// Results, one JSON object per line, appended as points finish.
pub const RESULTS: &str = "results.jsonl";

/// The sweep file as run.
pub const SPEC: &str = "spec.toml";

/// Repeats of each point of a `--quick` sweep (at most the sweep's): the
/// median of three, so that one run disturbed by the machine's other work
/// does not make the point.
pub const QUICK_REPEATS: u32 = 3;

/// How it was run (quick, extra options), for --resume.
pub const OPTIONS: &str = "options.json";

/// The options that say where a sweep's points run: (option, the saved
/// options it replaces on `--resume`).
pub const PATH_OPTIONS: [(&str, &[&str]); 9] = [
    (
        "--lab",
        &[
            "--lab",
            "--tx-iface",
            "--rx-iface",
            "--tx-netns",
            "--rx-netns",
        ],
    ),
    ("--tx-iface", &["--tx-iface", "--lab"]),
    ("--rx-iface", &["--rx-iface", "--lab"]),
    ("--tx-netns", &["--tx-netns", "--lab"]),
    ("--rx-netns", &["--rx-netns", "--lab"]),
    ("--tx-agent", &["--tx-agent"]),
    ("--rx-agent", &["--rx-agent"]),
    ("--token-file", &["--token-file"]),
    ("--fleet", &["--fleet"]),
];

/// How a sweep runs.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SweepOptions {
    /// Short durations and [`QUICK_REPEATS`] repeats.
    pub quick: bool,
    /// Options added to every point (--lab, --tx-iface...).
    pub extra: Vec<String>,
    /// Repeats per point given with --repeats (in place of the sweep's
    /// and --quick's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<u32>,
    /// The seed of the order the runs go in (shuffled rounds; `--seed`
    /// replays it); none in sweeps started before it was recorded, which
    /// run (and resume) point by point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// `--confidence LEVEL,WIDTH`: each point repeated (in rounds) until
    /// the interval of the mean of its headline figure is within WIDTH %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<String>,
    /// `--iterations MIN,MAX` with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<String>,
}

impl SweepOptions {
    /// The stop rule `--confidence`/`--iterations` ask for (either alone
    /// takes the other's default, 95,5 and 3,10); None without them.
    pub fn rule(&self) -> Result<Option<linerate_results::confidence::Rule>, String> {
        if self.confidence.is_none() && self.iterations.is_none() {
            return Ok(None);
        }
        linerate_results::confidence::parse(
            self.confidence.as_deref().unwrap_or("95,5"),
            self.iterations.as_deref().unwrap_or("3,10"),
        )
        .map(Some)
    }

    /// Repeats of each point of `spec` run this way: --repeats, else at
    /// most [`QUICK_REPEATS`] with --quick, else the sweep's.
    pub fn repeats(&self, spec: &SweepSpec) -> u32 {
        if let Ok(Some(rule)) = self.rule() {
            return rule.max as u32;
        }
        match (self.repeats, self.quick) {
            (Some(n), _) => n,
            (None, true) => spec.repeats.min(QUICK_REPEATS),
            (None, false) => spec.repeats,
        }
    }

    /// Puts the path options given with --resume in place of the saved
    /// ones (--lab replaces saved interfaces, an interface a saved --lab);
    /// returns the note saying so, None when none was given.
    pub fn override_path(&mut self, given: &[(&str, String)]) -> Option<String> {
        if given.is_empty() {
            return None;
        }
        let replaced: HashSet<&str> = given
            .iter()
            .flat_map(|(flag, _)| {
                PATH_OPTIONS
                    .iter()
                    .filter(move |(f, _)| f == flag)
                    .flat_map(|(_, r)| r.iter().copied())
            })
            .collect();
        let mut kept = Vec::new();
        let mut dropped = Vec::new();
        let mut it = self.extra.iter();
        while let Some(flag) = it.next() {
            let pair: Vec<String> = std::iter::once(flag.clone())
                .chain(
                    PATH_OPTIONS
                        .iter()
                        .any(|(f, _)| f == flag)
                        .then(|| it.next().cloned())
                        .flatten(),
                )
                .collect();
            if replaced.contains(flag.as_str()) {
                dropped.extend(pair);
            } else {
                kept.extend(pair);
            }
        }
        let now: Vec<String> = given
            .iter()
            .flat_map(|(f, v)| [f.to_string(), v.clone()])
            .collect();
        kept.extend(now.iter().cloned());
        self.extra = kept;
        let saved = if dropped.is_empty() {
            "saved default (the lab lr, when no interface is saved)".to_string()
        } else {
            format!("saved `{}`", linerate_host::sh::shown(&dropped))
        };
        Some(format!(
            "resuming with `{}` instead of the {saved}; {OPTIONS} now says so for the next --resume",
            linerate_host::sh::shown(&now)
        ))
    }
}

/// One line of results.jsonl.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// Part index.
    pub part: usize,
    /// Point index within the part.
    pub point: usize,
    /// Repeat number.
    pub repeat: u32,
    /// The point's axis values.
    pub values: serde_json::Map<String, Value>,
    /// The run's result (the command's --json output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<RunResult>,
    /// A run on a fleet (`sweep --fleet`): its aggregate and every pair's
    /// result, in place of `result`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetRun>,
    /// Why the run failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Record {
    /// Whether it holds a measurement (a result, or a fleet's), not an
    /// error.
    pub fn measured(&self) -> bool {
        self.result.is_some() || self.fleet.is_some()
    }

    /// The result whose set-up and environment stand for the run: its
    /// own, or a fleet's first pair's.
    pub fn first_result(&self) -> Option<&RunResult> {
        self.result.as_ref().or_else(|| {
            self.fleet
                .as_ref()
                .and_then(|f| f.pairs.first())
                .map(|p| &p.result)
        })
    }
}

/// Memory a finished run takes until the sweep ends: the report's figures
/// of it (a dozen metrics), its data path's name, its place in the set of
/// finished runs, and the allocator's overhead.
pub const RUN_BYTES: u64 = 256;

/// A point's axis values as its records hold them.
pub fn record_values(p: &points::Point) -> serde_json::Map<String, Value> {
    p.values
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or(Value::Null)))
        .collect()
}

/// The size of a sweep, counted from its axes' lengths (nothing expanded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Size {
    /// Points of each part.
    pub per_part: Vec<u64>,
    /// Points in all.
    pub points: u64,
    /// Repeats of each point.
    pub repeats: u32,
}

impl Size {
    /// Counts the points of `spec` (at most [`QUICK_REPEATS`] repeats each
    /// with `quick`).
    pub fn of(spec: &SweepSpec, quick: bool) -> Result<Self> {
        Self::run_as(
            spec,
            &SweepOptions {
                quick,
                ..SweepOptions::default()
            },
        )
    }

    /// Counts the points of `spec` run as `opts` says (its repeats).
    pub fn run_as(spec: &SweepSpec, opts: &SweepOptions) -> Result<Self> {
        let too_many = || {
            anyhow::anyhow!(
                "the sweep has more than {} points: use fewer axis values",
                u64::MAX
            )
        };
        let per_part = spec
            .parts
            .iter()
            .map(|part| {
                part.axes
                    .iter()
                    .try_fold(1u64, |n, a| n.checked_mul(a.values.len() as u64))
                    .ok_or_else(too_many)
            })
            .collect::<Result<Vec<u64>>>()?;
        let points = per_part
            .iter()
            .try_fold(0u64, |n, p| n.checked_add(*p))
            .ok_or_else(too_many)?;
        Ok(Self {
            per_part,
            points,
            repeats: opts.repeats(spec),
        })
    }

    /// Refuses more than `max` points, before anything is expanded.
    pub fn check(&self, file: &str, max: u64) -> Result<()> {
        if self.points > max {
            let parts: Vec<String> = self.per_part.iter().map(u64::to_string).collect();
            bail!(
                "{file}: {} points ({} per part) x {} repeat(s) is more than the {max} points a sweep runs without asking: give --max-points {} to run them all, or use fewer axis values",
                self.points,
                parts.join(" + "),
                self.repeats,
                self.points
            );
        }
        Ok(())
    }

    /// Refuses a sweep whose points would not fit in `available` bytes of
    /// memory at `per_point` bytes each (see [`bytes_per_point`]), whatever
    /// --max-points allows; None (not known): not checked.
    pub fn check_memory(&self, file: &str, per_point: u64, available: Option<u64>) -> Result<()> {
        let Some(available) = available else {
            return Ok(());
        };
        let need = self
            .points
            .saturating_mul(per_point)
            .saturating_add(self.runs().saturating_mul(RUN_BYTES));
        if need > available {
            bail!(
                "{file}: {} points x {} repeat(s) would hold about {} MiB in memory (about {per_point} bytes per point and {RUN_BYTES} per run), more than the {} MiB available (MemAvailable in /proc/meminfo): use fewer axis values, or split the sweep into several files",
                self.points,
                self.repeats,
                need.div_ceil(1 << 20),
                available / (1 << 20)
            );
        }
        Ok(())
    }

    /// Runs in all.
    pub fn runs(&self) -> u64 {
        self.points.saturating_mul(u64::from(self.repeats))
    }
}

/// Checks that a record of `spec` holds its point's axis values (a record
/// of another sweep with the same part and point numbers is not this
/// point's).
pub fn check_values(spec: &SweepSpec, r: &Record) -> std::result::Result<(), String> {
    let want = spec
        .parts
        .get(r.part)
        .and_then(|part| points::point(r.part, part, r.point))
        .map(|p| record_values(&p));
    match want {
        Some(want) if want == r.values => Ok(()),
        Some(want) => Err(format!(
            "a record of point {} of part {} with the values {} but that point has {}: a record of another sweep",
            r.point,
            r.part + 1,
            Value::Object(r.values.clone()),
            Value::Object(want)
        )),
        None => Err(format!(
            "a record of point {} of part {}, which the sweep does not have",
            r.point,
            r.part + 1
        )),
    }
}

/// The sweep file and options of an existing sweep directory; one
/// without its options is refused (resuming it on a default lab would run
/// on the wrong path).
pub fn resume_inputs(dir: &Path) -> Result<(String, SweepOptions)> {
    // Only files of the user running linerate, never through a link: a
    // directory someone else prepared chooses nothing.
    let spec = dir.join(SPEC);
    let Some(text) = linerate_host::files::read_regular(&spec, MAX_SPEC, true)? else {
        bail!(
            "{} holds no {SPEC}: is it a sweep directory?",
            dir.display()
        );
    };
    let text =
        String::from_utf8(text).with_context(|| format!("{} is not UTF-8", spec.display()))?;
    if text.trim().is_empty() {
        bail!("{} is empty", spec.display());
    }
    let path = dir.join(OPTIONS);
    let o = match linerate_host::files::read_regular(&path, MAX_OPTIONS, true)? {
        Some(o) => String::from_utf8_lossy(&o).into_owned(),
        None => bail!(
            "{} holds {SPEC} but no readable {OPTIONS}: how the sweep ran (--quick, --lab, interfaces) is unknown, so it is not resumed on a default lab; start it again with `{} --out NEW_DIR` and the options it needs",
            dir.display(),
            linerate_host::sh::shown(&["linerate", "sweep", &spec.display().to_string()])
        ),
    };
    let opts = serde_json::from_str(&o).with_context(|| {
        format!(
            "{} is not the options of a sweep (it is written as the sweep starts)",
            path.display()
        )
    })?;
    Ok((text, opts))
}

/// The most of a sweep file linerate reads.
pub const MAX_SPEC: u64 = 16 << 20;

/// The most of options.json linerate reads.
pub const MAX_OPTIONS: u64 = 1 << 20;

/// Creates an output directory (and its parents) only its owner can
/// write, each beneath its parent opened by descriptor, every folder above
/// it only its user's or root's to write (`files::create_output_dir`):
/// 0755 at most, less with the umask.
pub fn create_dir(dir: &Path) -> Result<()> {
    linerate_host::files::create_output_dir(dir)?;
    Ok(())
}

/// A new output directory name: sweeps/NAME-DATE.
pub fn default_dir(name: &str) -> PathBuf {
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .replace(':', "")
        .trim_end_matches('Z')
        .to_string();
    PathBuf::from("sweeps").join(format!("{name}-{stamp}"))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// A sweep's results.jsonl written by an earlier version reads into
    /// records whose every field but the result (checked field by field in
    /// `linerate_results::run`'s tests) is written back the same.
    #[test]
    fn records_of_earlier_versions_read() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/sweep-small/results.jsonl");
        let text = std::fs::read_to_string(path).unwrap();
        let mut n = 0;
        for (i, line) in text.lines().enumerate() {
            let old: Value = serde_json::from_str(line).unwrap();
            let record: Record = serde_json::from_str(line).unwrap();
            let new = serde_json::to_value(&record).unwrap();
            let (old, new) = (old.as_object().unwrap(), new.as_object().unwrap());
            let keys = |m: &serde_json::Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
            assert_eq!(keys(old), keys(new), "line {}", i + 1);
            for (k, v) in old.iter().filter(|(k, _)| *k != "result") {
                assert_eq!(Some(v), new.get(k), "line {}: {k}", i + 1);
            }
            assert!(matches!(record.result, Some(RunResult::Stream(_))));
            n += 1;
        }
        assert!(n > 0);
    }
}
