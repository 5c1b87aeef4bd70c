//! `linerate sweep`: runs every point of a sweep file (or a built-in
//! preset) with warm-up and repeats, appends each result as it finishes,
//! resumes an interrupted sweep, and writes the report.

pub mod expand;
pub mod presets;
pub mod report;
pub mod spec;
pub mod stats;

use std::{
    collections::HashSet,
    fs::{self, OpenOptions},
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use expand::{argv, parse, points, PointArgs};
use spec::SweepSpec;

/// Results, one JSON object per line, appended as points finish.
pub const RESULTS: &str = "results.jsonl";
/// The sweep file as run.
pub const SPEC: &str = "spec.toml";
/// How it was run (quick, extra options), for --resume.
pub const OPTIONS: &str = "options.json";

/// How a sweep runs.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SweepOptions {
    /// Short durations and one repeat.
    pub quick: bool,
    /// Options added to every point (--lab, --tx-iface...).
    pub extra: Vec<String>,
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
    pub result: Option<Value>,
    /// Why the run failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Reads the records of a sweep directory (a torn last line is skipped).
pub fn read_records(dir: &Path) -> Result<Vec<Record>> {
    let path = dir.join(RESULTS);
    let Ok(f) = fs::File::open(&path) else {
        return Ok(Vec::new());
    };
    Ok(BufReader::new(f)
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect())
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

/// Runs a sweep into `dir` (new, or an interrupted one to resume); returns
/// the terminal rendering of its report.
pub fn run(
    text: &str,
    file: &str,
    dir: &Path,
    opts: &SweepOptions,
    interrupted: &Arc<AtomicBool>,
) -> Result<String> {
    let spec = SweepSpec::parse(text, file)?;
    let repeats = if opts.quick { 1 } else { spec.repeats };
    // Every point is expanded and checked before anything runs.
    let mut plan = Vec::new();
    for (pi, part) in spec.parts.iter().enumerate() {
        for p in points(pi, part) {
            let a = argv(part, &p, &opts.extra, opts.quick).map_err(|e| {
                anyhow::anyhow!("{file}: part {}, point {}: {e}", pi + 1, p.describe())
            })?;
            let parsed = parse(part.kind, &a).map_err(|e| {
                let key = e
                    .split("'--")
                    .nth(1)
                    .and_then(|k| k.split(['\'', ' ']).next())
                    .unwrap_or("");
                let line =
                    spec::line_of(text, &key.replace('-', "_")).max(spec::line_of(text, key));
                anyhow::anyhow!("{file}:{line}: point {}: {e}", p.describe())
            })?;
            plan.push((p, parsed, a));
        }
    }
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    fs::write(dir.join(SPEC), text)?;
    fs::write(dir.join(OPTIONS), serde_json::to_string_pretty(opts)?)?;
    let done: HashSet<(usize, usize, u32)> = read_records(dir)?
        .into_iter()
        .filter(|r| r.result.is_some())
        .map(|r| (r.part, r.point, r.repeat))
        .collect();
    let total = (plan.len() as u64) * u64::from(repeats);
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise} eta {eta}] {bar:30} point {pos}/{len} {msg}",
        )
        .expect("valid template"),
    );
    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(RESULTS))
        .with_context(|| format!("opening {}", dir.join(RESULTS).display()))?;
    for (p, args, argv) in &plan {
        for repeat in 0..repeats {
            if done.contains(&(p.part, p.index, repeat)) {
                bar.inc(1);
                continue;
            }
            if interrupted.load(Ordering::Relaxed) {
                break;
            }
            bar.set_message(format!("{} #{}", p.describe(), repeat + 1));
            let outcome = run_point(args, argv, interrupted);
            if interrupted.load(Ordering::Relaxed) {
                // A cut-short run is not a finished point: resume reruns it.
                break;
            }
            let values = p
                .values
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or(Value::Null)))
                .collect();
            let record = match outcome {
                Ok(result) => Record {
                    part: p.part,
                    point: p.index,
                    repeat,
                    values,
                    result: Some(result),
                    error: None,
                },
                Err(e) => {
                    bar.println(format!("linerate: point {} failed: {e:#}", p.describe()));
                    Record {
                        part: p.part,
                        point: p.index,
                        repeat,
                        values,
                        result: None,
                        error: Some(format!("{e:#}")),
                    }
                }
            };
            writeln!(out, "{}", serde_json::to_string(&record)?)?;
            out.flush()?;
            // The report (and points.csv) always reflect what finished.
            if let Err(e) = report::write(dir) {
                bar.println(format!("linerate: writing the report failed: {e:#}"));
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let text = report::write(dir)?;
    if interrupted.load(Ordering::Relaxed) {
        eprintln!(
            "linerate: sweep interrupted; finished points are in {}; resume with `linerate sweep --resume {}`",
            dir.display(),
            dir.display()
        );
    }
    Ok(text)
}

fn run_point(args: &PointArgs, argv: &[String], interrupted: &Arc<AtomicBool>) -> Result<Value> {
    // With agents, each side runs on its host.
    let (test, run) = match args {
        PointArgs::Stream(a) => ("stream", &a.run),
        PointArgs::Rr(a) => ("rr", &a.run),
    };
    if run.agents.tx_agent.is_some() {
        let o = crate::remote::controller::run(test, argv, run, interrupted)?;
        if let Some(e) = o.error {
            anyhow::bail!(e);
        }
        return Ok(o.result);
    }
    Ok(match args {
        PointArgs::Stream(a) => {
            let plan = crate::stream::plan::plan(a)?;
            serde_json::to_value(crate::stream::run(&plan, interrupted)?)?
        }
        PointArgs::Rr(a) => {
            let plan = crate::rr::plan::plan(a)?;
            serde_json::to_value(crate::rr::run(&plan, interrupted)?)?
        }
    })
}

/// The sweep file and options of an existing sweep directory.
pub fn resume_inputs(dir: &Path) -> Result<(String, SweepOptions)> {
    let text = fs::read_to_string(dir.join(SPEC)).with_context(|| {
        format!(
            "{} holds no {SPEC}: is it a sweep directory?",
            dir.display()
        )
    })?;
    let opts = match fs::read_to_string(dir.join(OPTIONS)) {
        Ok(o) => serde_json::from_str(&o)?,
        Err(_) => SweepOptions::default(),
    };
    if text.trim().is_empty() {
        bail!("{} is empty", dir.join(SPEC).display());
    }
    Ok((text, opts))
}
