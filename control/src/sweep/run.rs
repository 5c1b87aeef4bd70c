//! Runs a sweep: every point of every part, repeated, each record appended
//! whole as it finishes; resumable; with its memory and time estimated
//! before it starts.

use crate::request::RunRequest;
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use linerate_results::{
    confidence::{Decision, Rule},
    run::{RunResult, TwoHostResult},
};
use std::{
    collections::HashSet,
    fs,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use super::expand::parse;
use linerate_report::{
    self as report,
    sweep::{
        fleet::FleetRun,
        points::{self, argv},
        saved::{
            check_values, create_dir, record_values, Record, Size, SweepOptions, MAX_OPTIONS,
            OPTIONS, RESULTS, SPEC,
        },
        spec::{self, SweepSpec},
        store,
    },
};

/// The command that resumes the sweep in `dir`, to paste.
fn resume_cmd(dir: &Path) -> String {
    linerate_host::sh::shown(&["linerate", "sweep", "--resume", &dir.display().to_string()])
}

/// Memory each point of `spec` takes while its sweep runs (the largest
/// part's): its warm-up + duration, and the point as the report expands it
/// (each axis' name and value, on the heap, with the allocator's overhead
/// of each allocation).
pub fn bytes_per_point(spec: &SweepSpec) -> u64 {
    const ALLOC: u64 = 32;
    let per_axis = (std::mem::size_of::<(String, toml::Value)>() as u64) + 2 * ALLOC;
    let fixed =
        (std::mem::size_of::<points::Point>() + std::mem::size_of::<Duration>()) as u64 + ALLOC;
    spec.parts
        .iter()
        .map(|p| {
            fixed
                + p.axes
                    .iter()
                    .map(|a| {
                        let heap = a.name.len() as u64
                            + a.values
                                .iter()
                                .map(|v| v.to_string().len() as u64)
                                .max()
                                .unwrap_or(0);
                        per_axis + heap
                    })
                    .sum::<u64>()
        })
        .max()
        .unwrap_or(fixed)
}

/// MemAvailable of /proc/meminfo, bytes (None when it cannot be read).
pub fn available_memory() -> Option<u64> {
    let text = fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

/// Set-up of a run on top of its warm-up and duration: the XDP program,
/// sockets and UMEM, the run's own checks (a quick lab point took 1.3 s
/// for its 0.7 s of warm-up and duration on a 2-core VM).
pub const SETUP: Duration = Duration::from_millis(600);

/// The time runs of these lengths (warm-up + duration each) take, with
/// their set-up.
pub fn estimate(runs: impl IntoIterator<Item = Duration>) -> Duration {
    runs.into_iter().map(|r| r + SETUP).sum()
}

/// "6 points x 2 repeats = 12 runs, about 1m 24s (...)".
pub fn announce(size: &Size, done: u64, time: Duration) -> String {
    let time = humantime::format_duration(Duration::from_secs(time.as_secs_f64().ceil() as u64));
    let runs = size.runs();
    let head = format!(
        "{} point(s) x {} repeat(s) = {runs} run(s)",
        size.points, size.repeats
    );
    let how = format!(
        "warm-up + duration of each run + about {} of set-up",
        humantime::format_duration(SETUP)
    );
    if done == 0 {
        format!("{head}, about {time} ({how})")
    } else {
        format!(
            "{head}, {done} already done; the other {} take about {time} ({how})",
            runs.saturating_sub(done)
        )
    }
}

/// When the report is rewritten during a sweep: after the first point,
/// then at most every few seconds (and never taking more than a tenth of
/// the time), and always at the end.
#[derive(Debug, Default)]
pub struct Pace {
    last: Option<Instant>,
    cost: Duration,
}

impl Pace {
    /// The shortest time between two rewrites.
    pub const EVERY: Duration = Duration::from_secs(5);

    /// Whether a rewrite is due at `now`.
    pub fn due(&self, now: Instant) -> bool {
        self.last
            .is_none_or(|l| now.duration_since(l) >= Self::EVERY.max(self.cost * 10))
    }

    /// A rewrite started at `start` and ended at `end`.
    pub fn done(&mut self, start: Instant, end: Instant) {
        self.last = Some(end);
        self.cost = end.duration_since(start);
    }
}

/// How a sweep ended.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The terminal rendering of its report; None when it was interrupted
    /// while its points were checked (nothing ran, nothing was written).
    pub text: Option<String>,
    /// Runs of the sweep (points x repeats).
    pub runs: u64,
    /// Runs whose record is a failure (none of them measured since).
    pub failed: u64,
    /// The first of them: which run, and its error.
    pub first_failure: Option<String>,
}

/// A point's command line, parsed and checked (no system access); errors
/// name the sweep file and its line.
fn check_point(
    text: &str,
    file: &str,
    part: &spec::Part,
    p: &points::Point,
    opts: &SweepOptions,
) -> Result<RunRequest> {
    let a = argv(part, p, &opts.extra, opts.quick)
        .map_err(|e| anyhow::anyhow!("{file}: part {}, point {}: {e}", p.part + 1, p.describe()))?;
    let parsed = parse(part.kind, &a).map_err(|e| {
        let key = e
            .split("'--")
            .nth(1)
            .and_then(|k| k.split(['\'', ' ']).next())
            .unwrap_or("");
        let line = spec::line_of(text, &key.replace('-', "_")).max(spec::line_of(text, key));
        anyhow::anyhow!("{file}:{line}: point {}: {e}", p.describe())
    })?;
    if parsed.run().agents.fleet.is_some() {
        crate::fleet::run::check(&parsed).map_err(|e| {
            anyhow::anyhow!("{file}: part {}, point {}: {e}", p.part + 1, p.describe())
        })?;
    }
    if repeats_itself(&parsed) {
        anyhow::bail!(
            "{file}: part {}, point {}: a sweep repeats its points with `repeats` (in shuffled rounds), not with confidence/iterations: drop them",
            p.part + 1,
            p.describe()
        );
    }
    // A capture goes into the sweep's directory: a path is refused.
    if let Some(name) = capture(&parsed) {
        check_capture(name).map_err(|e| {
            anyhow::anyhow!("{file}: part {}, point {}: {e}", p.part + 1, p.describe())
        })?;
    }
    Ok(parsed)
}

/// Runs a sweep into `dir` (new, or with `resume` an interrupted one):
/// its report and how many runs failed.
pub fn run(
    text: &str,
    file: &str,
    dir: &Path,
    opts: &SweepOptions,
    resume: bool,
    interrupted: &Arc<AtomicBool>,
) -> Result<Outcome> {
    let spec = SweepSpec::parse(text, file)?;
    let size = Size::run_as(&spec, opts)?;
    let Some(lengths) = check_points(&spec, text, file, opts, &size, interrupted)? else {
        return Ok(Outcome::default());
    };
    let options = serde_json::to_string_pretty(opts)?;
    if !resume {
        start_dir(dir, text, &options)?;
    }
    // Only its owner writes in it: nothing planted there is followed.
    linerate_host::files::check_output_dir(dir)?;
    let mut out = store::Results::open(&dir.join(RESULTS))?;
    let mut kept = report::Kept::new(&spec);
    let mut failures = Failures::default();
    let rule = opts.rule().map_err(anyhow::Error::msg)?;
    let mut headlines = Headlines::default();
    let loaded = store::load(
        &dir.join(RESULTS),
        &size.per_part,
        store::Mode::Resume,
        |r| check_values(&spec, r),
        |r| {
            failures.note(&r);
            headlines.note(&r);
            kept.add(r)
        },
    )?;
    for w in &loaded.warnings {
        eprintln!("linerate: warning: {w}");
    }
    // Options given with --resume replace the saved ones, for the next
    // --resume too.
    let saved = linerate_host::files::read_text(&dir.join(OPTIONS), MAX_OPTIONS, true).ok();
    if saved.as_deref() != Some(options.as_str()) {
        store::write_atomic(&dir.join(OPTIONS), options.as_bytes())?;
    }
    let done: HashSet<(usize, usize, u32)> = kept.finished().collect();
    let left = left_to_run(&spec, &lengths, &done, size.repeats);
    drop(lengths);
    let already = size.runs().saturating_sub(left.len() as u64);
    eprintln!("linerate: {}", announce(&size, already, estimate(left)));
    if let Some(seed) = opts.seed {
        eprintln!("linerate: repeats in rounds, each in an order shuffled from seed {seed} (--seed {seed} replays it)");
    }
    let mut points = Points {
        spec: &spec,
        text,
        file,
        dir,
        opts,
        repeats: size.repeats,
        done: &done,
        interrupted,
        pairs: super::fleet::Pinned::of(kept.pairs()),
        rule,
        headlines,
    };
    points.run(size.runs(), &mut out, &mut kept, &mut failures)?;
    let text = report::render(dir, &spec, &kept, opts, 0)?;
    if interrupted.load(Ordering::Relaxed) {
        eprintln!(
            "linerate: sweep interrupted; finished points are in {}; resume with `{}`",
            dir.display(),
            resume_cmd(dir)
        );
    }
    Ok(Outcome {
        text: Some(text),
        runs: size.runs(),
        failed: failures.0.len() as u64,
        first_failure: failures.first(&spec),
    })
}

/// Every point expanded and checked before anything runs, one at a time:
/// only each point's warm-up + duration is kept (the points are computed
/// again, from their index, as they run). None when interrupted.
fn check_points(
    spec: &SweepSpec,
    text: &str,
    file: &str,
    opts: &SweepOptions,
    size: &Size,
    interrupted: &Arc<AtomicBool>,
) -> Result<Option<Vec<Duration>>> {
    let mut lengths = Vec::new();
    for (pi, part) in spec.parts.iter().enumerate() {
        for p in points::iter(pi, part) {
            if interrupted.load(Ordering::Relaxed) {
                eprintln!(
                    "linerate: sweep interrupted while its points were checked ({} of {}): nothing ran, nothing was written",
                    lengths.len(),
                    size.points
                );
                return Ok(None);
            }
            let args = check_point(text, file, part, &p, opts)?;
            lengths.push(args.run().warmup + args.run().duration);
        }
    }
    Ok(Some(lengths))
}

/// A new sweep's directory: refused when it holds a sweep already, else
/// created and given how the sweep runs, then what it runs, so that it can
/// be resumed as it was started whenever it is stopped.
fn start_dir(dir: &Path, text: &str, options: &str) -> Result<()> {
    // A dangling link is a sweep's file too.
    if let Some(f) = [SPEC, OPTIONS, RESULTS]
        .iter()
        .find(|f| linerate_host::files::exists(&dir.join(f)))
    {
        bail!(
            "{} already holds a sweep ({f}): resume it with `{}`, or give another --out",
            dir.display(),
            resume_cmd(dir)
        );
    }
    create_dir(dir)?;
    linerate_host::files::check_output_dir(dir)?;
    store::write_atomic(&dir.join(OPTIONS), options.as_bytes())?;
    store::write_atomic(&dir.join(SPEC), text.as_bytes())?;
    Ok(())
}

/// The length of every run not done yet, in the order they run.
fn left_to_run(
    spec: &SweepSpec,
    lengths: &[Duration],
    done: &HashSet<(usize, usize, u32)>,
    repeats: u32,
) -> Vec<Duration> {
    let points = spec
        .parts
        .iter()
        .enumerate()
        .flat_map(|(pi, part)| (0..points::count(part)).map(move |index| (pi, index)));
    points
        .zip(lengths)
        .flat_map(|((pi, index), &d)| {
            (0..repeats)
                .filter(move |r| !done.contains(&(pi, index, *r)))
                .map(move |_| d)
        })
        .collect()
}

/// The runs whose last record is a failure, with their error.
#[derive(Default)]
struct Failures(std::collections::BTreeMap<(usize, usize, u32), String>);

impl Failures {
    fn note(&mut self, r: &Record) {
        match (&r.result, &r.error) {
            (None, Some(e)) => {
                self.0.insert((r.part, r.point, r.repeat), e.clone());
            }
            _ => {
                self.0.remove(&(r.part, r.point, r.repeat));
            }
        }
    }

    /// The first failed run, named for a person.
    fn first(&self, spec: &SweepSpec) -> Option<String> {
        self.0.iter().next().map(|(&(part, point, repeat), e)| {
            let which = spec
                .parts
                .get(part)
                .and_then(|pt| points::point(part, pt, point))
                .map_or_else(|| format!("{point}"), |p| p.describe());
            format!(
                "part {}, point {which}, repeat {}: {e}",
                part + 1,
                repeat + 1
            )
        })
    }
}

/// The runs of a sweep, in order, skipping those done.
struct Points<'a> {
    spec: &'a SweepSpec,
    text: &'a str,
    file: &'a str,
    dir: &'a Path,
    opts: &'a SweepOptions,
    repeats: u32,
    done: &'a HashSet<(usize, usize, u32)>,
    interrupted: &'a Arc<AtomicBool>,
    /// A fleet sweep's pairs.
    pairs: super::fleet::Pinned,
    /// `--confidence`: the stop rule of every point.
    rule: Option<Rule>,
    /// Each point's headline values so far, for the rule.
    headlines: Headlines,
}

/// Each point's recorded headline value per repeat (none for a failed,
/// disturbed or fleet run: not counted).
#[derive(Default)]
struct Headlines(
    std::collections::HashMap<(usize, usize), std::collections::BTreeMap<u32, Option<f64>>>,
);

impl Headlines {
    fn note(&mut self, r: &Record) {
        let v = r
            .result
            .as_ref()
            .filter(|x| !x.common().disturbed)
            .map(RunResult::headline);
        self.0
            .entry((r.part, r.point))
            .or_default()
            .insert(r.repeat, v);
    }

    /// Where point `at` stands under `rule` before its repeat `repeat`:
    /// the values of its earlier repeats, counted.
    fn decide(&self, rule: &Rule, at: (usize, usize), repeat: u32) -> Decision {
        let values: Vec<f64> = self
            .0
            .get(&at)
            .map(|m| m.range(..repeat).filter_map(|(_, v)| *v).collect())
            .unwrap_or_default();
        rule.decide(&values)
    }
}

impl Points<'_> {
    /// Every run of the sweep in the order they go: with a seed, repeats
    /// in shuffled rounds ([`super::rounds::order`]); without (a sweep
    /// started before the seed was recorded) point by point, as then.
    fn order(&self) -> Vec<super::rounds::Run> {
        let points: Vec<(usize, usize)> = self
            .spec
            .parts
            .iter()
            .enumerate()
            .flat_map(|(pi, part)| (0..points::count(part)).map(move |index| (pi, index)))
            .collect();
        match self.opts.seed {
            Some(seed) => super::rounds::order(&points, self.repeats, seed),
            None => points
                .into_iter()
                .flat_map(|(pi, index)| (0..self.repeats).map(move |r| (pi, index, r)))
                .collect(),
        }
    }

    fn report(&self, kept: &report::Kept) -> Result<String> {
        report::render(self.dir, self.spec, kept, self.opts, 0)
    }

    /// Runs every run not done, appending each record whole as it
    /// finishes; stops at an interruption (a cut-short run is not a
    /// finished point: resume reruns it) or a record that cannot be
    /// written.
    fn run(
        &mut self,
        runs: u64,
        out: &mut store::Results,
        kept: &mut report::Kept,
        failures: &mut Failures,
    ) -> Result<()> {
        let bar = ProgressBar::new(runs).with_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise} eta {eta}] {bar:30} point {pos}/{len} {msg}",
            )
            .expect("valid template"),
        );
        let mut pace = Pace::default();
        let stop = || self.interrupted.load(Ordering::Relaxed);
        let order = self.order();
        let left = super::rounds::left(&order, self.done);
        bar.inc((order.len() - left.len()) as u64);
        let mut checked: Option<((usize, usize), RunRequest)> = None;
        for (pi, index, repeat) in left {
            if stop() {
                break;
            }
            if let Some(rule) = &self.rule {
                // A point whose interval is reached (or not, at MAX) runs
                // no more repeats.
                if self.headlines.decide(rule, (pi, index), repeat) != Decision::Repeat {
                    bar.inc(1);
                    continue;
                }
            }
            let part = &self.spec.parts[pi];
            let p = points::point(pi, part, index).context("a point of the sweep's order")?;
            let args = match checked.take() {
                Some((at, args)) if at == (pi, index) => args,
                _ => check_point(self.text, self.file, part, &p, self.opts)?,
            };
            bar.set_message(format!("{} #{}", p.describe(), repeat + 1));
            let outcome = captured(&args, self.dir, &p, repeat)
                .and_then(|args| run_point(&args, self.interrupted, &mut self.pairs));
            checked = Some(((pi, index), args));
            if stop() {
                break;
            }
            let record = record_of(&p, repeat, outcome, &bar);
            if let Err(e) = out.append(&record) {
                bar.finish_and_clear();
                // What finished is reported, if there is room for it.
                let _ = self.report(kept);
                bail!(
                    "{e}; the finished points are kept whole: `{}` runs the rest",
                    resume_cmd(self.dir)
                );
            }
            failures.note(&record);
            self.headlines.note(&record);
            if let Some(rule) = &self.rule {
                match self.headlines.decide(rule, (pi, index), repeat + 1) {
                    Decision::Reached(i) | Decision::NotReached(i) => bar.suspend(|| {
                        eprintln!(
                            "linerate: point {}: n={}, +-{:.1} %{}",
                            p.describe(),
                            i.iterations,
                            i.width_pct / 2.0,
                            if i.width_pct <= rule.width_pct {
                                ""
                            } else {
                                " (not reached)"
                            }
                        )
                    }),
                    Decision::Repeat => {}
                }
            }
            kept.add(record);
            // The report (and points.csv) follow what finished, rewritten
            // every few seconds rather than after every point: a rewrite
            // reads every record.
            let now = Instant::now();
            if pace.due(now) {
                if let Err(e) = self.report(kept) {
                    bar.println(format!("linerate: writing the report failed: {e:#}"));
                }
                pace.done(now, Instant::now());
            }
            bar.inc(1);
        }
        bar.finish_and_clear();
        Ok(())
    }
}

/// What a run measured: one result, or a fleet's.
enum Measured {
    One(Box<RunResult>),
    Fleet(Box<FleetRun>),
}

/// The record of one run: its result, or its error (said above the bar).
fn record_of(
    p: &points::Point,
    repeat: u32,
    outcome: Result<Measured>,
    bar: &ProgressBar,
) -> Record {
    let (result, fleet, error) = match outcome {
        Ok(Measured::One(result)) => (Some(*result), None, None),
        Ok(Measured::Fleet(fleet)) => (None, Some(*fleet), None),
        Err(e) => {
            bar.println(format!("linerate: point {} failed: {e:#}", p.describe()));
            (None, None, Some(format!("{e:#}")))
        }
    };
    Record {
        part: p.part,
        point: p.index,
        repeat,
        values: record_values(p),
        result,
        fleet,
        error,
    }
}

/// A result that measured nothing is a failure, not a point of 0/s: a
/// window of 0 s, or a stream that sent nothing in its window; a fleet's
/// run fails when one of its pairs measured nothing.
fn measured(m: &Measured) -> Result<()> {
    match m {
        Measured::One(r) => measured_one(r),
        Measured::Fleet(f) => f
            .pairs
            .iter()
            .try_for_each(|p| measured_one(&p.result).with_context(|| format!("pair {}", p.pair))),
    }
}

fn measured_one(r: &RunResult) -> Result<()> {
    let window = r.common().window_s;
    let what = match r {
        RunResult::Stream(s) => (s.sender.frames == 0 && s.receiver.frames == 0)
            .then_some("no frame was sent or received in the measured window"),
        RunResult::Rr(x) => (x.transactions.completed == 0 && x.transactions.total == 0)
            .then_some("no transaction completed in the whole run"),
    };
    if !(window.is_finite() && window > 0.0) {
        bail!("measured nothing: the measured window was {window} s (a --duration too short to measure)");
    }
    if let Some(what) = what {
        bail!("measured nothing: {what}");
    }
    Ok(())
}

fn run_point(
    args: &RunRequest,
    interrupted: &Arc<AtomicBool>,
    pairs: &mut super::fleet::Pinned,
) -> Result<Measured> {
    run_once(args, interrupted, pairs).and_then(|m| {
        if !interrupted.load(Ordering::Relaxed) {
            measured(&m)?;
        }
        Ok(m)
    })
}

fn run_once(
    args: &RunRequest,
    interrupted: &Arc<AtomicBool>,
    pairs: &mut super::fleet::Pinned,
) -> Result<Measured> {
    // On a fleet, on every pair at once; with agents, each side on its host.
    let run = args.run();
    if let Some(path) = &run.agents.fleet {
        return super::fleet::run(args, path, interrupted, pairs)
            .map(|f| Measured::Fleet(Box::new(f)));
    }
    if run.agents.tx_agent.is_some() {
        let o = crate::remote::controller::run(args, interrupted)?;
        if let Some(e) = o.error {
            anyhow::bail!(e);
        }
        return match o.result {
            TwoHostResult::Merged(r) => Ok(Measured::One(Box::new(r))),
            TwoHostResult::Partial(_) => bail!("a side of the two-host run gave no result"),
        };
    }
    let (repeat, result): (_, RunResult) = match args {
        RunRequest::Stream(a) => {
            let plan = crate::plan::stream::plan(a)?;
            (&a.repeat, crate::stream::run(&plan, interrupted)?.into())
        }
        RunRequest::Rr(a) => {
            let plan = crate::plan::rr::plan(a)?;
            (&a.repeat, crate::rr::run(&plan, interrupted)?.into())
        }
    };
    // Marked disturbed above the point's --disturbed-above.
    Ok(Measured::One(Box::new(crate::repeat::mark(result, repeat))))
}

/// A sweep's point that asks for `confidence` or `iterations`: refused (a
/// sweep repeats its points with `repeats`, in rounds).
fn repeats_itself(args: &RunRequest) -> bool {
    let repeat = match args {
        RunRequest::Stream(a) => &a.repeat,
        RunRequest::Rr(a) => &a.repeat,
    };
    crate::repeat::rule(repeat) != Ok(None)
}

/// The capture file a point asks for (`pcap` in a sweep file, `--pcap`).
fn capture(args: &RunRequest) -> Option<&Path> {
    match args {
        RunRequest::Stream(a) => a.pcap.as_deref(),
        RunRequest::Rr(_) => None,
    }
}

/// A capture of a sweep or an rfc2544 run goes into its own directory:
/// only a plain file name is taken, a path is refused.
pub fn check_capture(name: &Path) -> Result<()> {
    let mut c = name.components();
    if !matches!(
        (c.next(), c.next()),
        (Some(std::path::Component::Normal(_)), None)
    ) || name.as_os_str().as_encoded_bytes().contains(&b'/')
    {
        bail!(
            "pcap {:?}: the captures of a sweep or an rfc2544 run go into its own directory, one file per point and repeat: give a file name (pcap = \"run.pcapng\"), not a path",
            name.display().to_string()
        );
    }
    Ok(())
}

/// Where the capture `name` of a point goes: `DIR/STEM-PART-POINT-REPEAT.EXT`
/// (numbered from 1); whatever an earlier, cut-short run of that point
/// left there is removed first (the directory is the user's own).
pub fn capture_path(
    dir: &Path,
    name: &Path,
    part: usize,
    point: usize,
    repeat: u32,
) -> Result<PathBuf> {
    let stem = name
        .file_stem()
        .unwrap_or(name.as_os_str())
        .to_string_lossy();
    let ext = name
        .extension()
        .map_or_else(String::new, |e| format!(".{}", e.to_string_lossy()));
    let path = dir.join(format!(
        "{stem}-{}-{}-{}{ext}",
        part + 1,
        point + 1,
        repeat + 1
    ));
    match fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing the old capture {}", path.display()))
        }
        _ => Ok(path),
    }
}

/// A point's arguments with its capture (if any) put in `dir`.
fn captured<'a>(
    args: &'a RunRequest,
    dir: &Path,
    p: &points::Point,
    repeat: u32,
) -> Result<std::borrow::Cow<'a, RunRequest>> {
    let Some(name) = capture(args) else {
        return Ok(std::borrow::Cow::Borrowed(args));
    };
    let path = capture_path(dir, name, p.part, p.index, repeat)?;
    let mut args = args.clone();
    if let RunRequest::Stream(a) = &mut args {
        a.pcap = Some(path);
    }
    Ok(std::borrow::Cow::Owned(args))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(axes: &[usize], repeats: u32) -> SweepSpec {
        let mut t = format!("name = \"t\"\nkind = \"stream\"\nrepeats = {repeats}\n");
        for (i, n) in axes.iter().enumerate() {
            let v: Vec<String> = (0..*n).map(|x| (64 + x).to_string()).collect();
            t += &format!("[[axis]]\nname = \"a{i}\"\nvalues = [{}]\n", v.join(","));
        }
        SweepSpec::parse(&t, "t.toml").unwrap()
    }

    /// --repeats replaces the sweep's repeats and --quick's three, and
    /// options.json keeps it for --resume (an older file without it reads
    /// as not given).
    #[test]
    fn repeats_given_replace_the_sweeps_and_are_kept() {
        let s = spec(&[3, 4], 5);
        let given = |quick, repeats| SweepOptions {
            quick,
            extra: Vec::new(),
            repeats,
            seed: None,
            confidence: None,
            iterations: None,
        };
        assert_eq!(Size::run_as(&s, &given(true, None)).unwrap().runs(), 36);
        assert_eq!(Size::run_as(&s, &given(true, Some(1))).unwrap().runs(), 12);
        assert_eq!(Size::run_as(&s, &given(false, Some(7))).unwrap().runs(), 84);
        assert_eq!(Size::run_as(&s, &given(false, None)).unwrap().runs(), 60);
        let saved = serde_json::to_string(&given(true, Some(1))).unwrap();
        let back: SweepOptions = serde_json::from_str(&saved).unwrap();
        assert_eq!((back.quick, back.repeats), (true, Some(1)));
        let old: SweepOptions = serde_json::from_str(r#"{"quick": true, "extra": []}"#).unwrap();
        assert_eq!((old.repeats, old.repeats(&s)), (None, 3));
    }

    #[test]
    fn points_are_counted_without_expanding_and_capped() {
        let s = spec(&[3, 4], 2);
        let n = Size::of(&s, false).unwrap();
        assert_eq!((n.per_part.clone(), n.points, n.runs()), (vec![12], 12, 24));
        // --quick: at most QUICK_REPEATS, never more than the sweep's.
        assert_eq!(Size::of(&s, true).unwrap().runs(), 24);
        assert_eq!(Size::of(&spec(&[3, 4], 5), true).unwrap().runs(), 36);
        n.check("t.toml", 12).unwrap();
        let e = n.check("t.toml", 11).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "t.toml: 12 points (12 per part) x 2 repeat(s) is more than the 11 points"
            ) && e.contains("--max-points 12"),
            "{e}"
        );
        // 10,000 x 1,000 values: counted, not built.
        let big = spec(&[10_000, 1_000], 1);
        let n = Size::of(&big, false).unwrap();
        assert_eq!(n.points, 10_000_000);
        assert!(n.check("big.toml", crate::cli::MAX_POINTS).is_err());
        // Products past u64 are an error, not a wrap.
        let mut huge = spec(&[2], 1);
        let axis = huge.parts[0].axes[0].clone();
        huge.parts[0].axes = (0..70)
            .map(|i| spec::Axis {
                name: format!("x{i}"),
                ..axis.clone()
            })
            .collect();
        assert!(Size::of(&huge, false)
            .unwrap_err()
            .to_string()
            .contains("more than"));
    }

    #[test]
    fn memory_is_estimated_per_point_and_refused_past_what_is_available() {
        let s = spec(&[10_000, 1_000, 1_000], 3);
        let n = Size::of(&s, false).unwrap();
        let per_point = bytes_per_point(&s);
        // Each axis' name and value on the heap: more than the point itself.
        assert!(
            per_point > std::mem::size_of::<points::Point>() as u64 + 3 * 64,
            "{per_point}"
        );
        let e = n
            .check_memory("big.toml", 200, Some(64 << 30))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "big.toml: 10000000000 points x 3 repeat(s) would hold about 9231568 MiB in memory (about 200 bytes per point and 256 per run), more than the 65536 MiB available (MemAvailable in /proc/meminfo): use fewer axis values, or split the sweep into several files"
        );
        // What fits is not refused; an unknown amount is not checked.
        let small = Size::of(&spec(&[100, 100], 3), false).unwrap();
        small.check_memory("s.toml", 200, Some(64 << 30)).unwrap();
        small
            .check_memory("s.toml", 200, Some(10_000 * 968 - 1))
            .unwrap_err();
        small
            .check_memory("s.toml", 200, Some(10_000 * 968))
            .unwrap();
        n.check_memory("big.toml", 200, None).unwrap();
        assert!(available_memory().is_some_and(|m| m > 0));
    }

    #[test]
    fn a_record_must_hold_its_points_values() {
        let s = spec(&[3, 2], 1);
        let p = points::point(0, &s.parts[0], 3).unwrap();
        let mut r = Record {
            part: 0,
            point: 3,
            repeat: 0,
            values: record_values(&p),
            result: None,
            fleet: None,
            error: Some("x".into()),
        };
        check_values(&s, &r).unwrap();
        // Point 3 is a0=65 a1=65; another sweep's point 3 had other values.
        r.values.insert("a1".into(), 64.into());
        assert_eq!(
            check_values(&s, &r).unwrap_err(),
            r#"a record of point 3 of part 1 with the values {"a0":65,"a1":64} but that point has {"a0":65,"a1":65}: a record of another sweep"#
        );
        r.values.remove("a1");
        assert!(check_values(&s, &r).is_err());
        r.values = record_values(&p);
        r.values.insert("extra".into(), 1.into());
        assert!(check_values(&s, &r).is_err());
        r.point = 6;
        assert!(check_values(&s, &r).unwrap_err().contains("does not have"));
    }

    #[test]
    fn the_estimate_adds_set_up_to_each_run() {
        let s = Size::of(&spec(&[6], 2), false).unwrap();
        let runs = vec![Duration::from_secs(6); 12];
        let t = estimate(runs);
        assert_eq!(t, 12 * (Duration::from_secs(6) + SETUP));
        assert_eq!(
            announce(&s, 0, t),
            "6 point(s) x 2 repeat(s) = 12 run(s), about 1m 20s (warm-up + duration of each run + about 600ms of set-up)"
        );
        assert!(announce(&s, 5, estimate(vec![Duration::from_secs(6); 7]))
            .contains("5 already done; the other 7 take about 47s"));
    }

    #[test]
    fn the_report_is_rewritten_at_most_every_few_seconds() {
        let mut p = Pace::default();
        let t0 = Instant::now();
        assert!(p.due(t0), "after the first point");
        p.done(t0, t0 + Duration::from_millis(10));
        assert!(!p.due(t0 + Duration::from_secs(1)));
        assert!(p.due(t0 + Duration::from_secs(6)));
        // A rewrite that takes 2 s waits 20 s.
        p.done(t0, t0 + Duration::from_secs(2));
        assert!(!p.due(t0 + Duration::from_secs(12)));
        assert!(p.due(t0 + Duration::from_secs(23)));
    }

    #[test]
    fn captures_are_plain_names_put_in_the_sweep_directory() {
        for bad in ["/tmp/x", "../x", "a/b", ".", "..", ""] {
            let e = check_capture(Path::new(bad)).unwrap_err().to_string();
            assert!(e.contains("go into its own directory"), "{bad}: {e}");
        }
        check_capture(Path::new("run.pcapng")).unwrap();
        let d = std::env::temp_dir().join(format!("linerate-capture-{}", std::process::id()));
        create_dir(&d).unwrap();
        let p = capture_path(&d, Path::new("run.pcapng"), 0, 4, 1).unwrap();
        assert_eq!(p, d.join("run-1-5-2.pcapng"));
        // What a cut-short run left is removed (a link itself, not its target).
        let victim = d.join("victim");
        fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        assert_eq!(
            capture_path(&d, Path::new("run.pcapng"), 0, 4, 1).unwrap(),
            p
        );
        assert!(!linerate_host::files::exists(&p));
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        let _ = fs::remove_dir_all(d);
    }

    #[test]
    fn path_options_given_on_resume_replace_the_saved_ones() {
        let mut o = SweepOptions {
            quick: true,
            extra: ["--lab", "a", "--tx-agent", "http://x"]
                .map(String::from)
                .to_vec(),
            repeats: None,
            seed: None,
            confidence: None,
            iterations: None,
        };
        let note = o.override_path(&[("--lab", "b".into())]).unwrap();
        assert_eq!(o.extra, ["--tx-agent", "http://x", "--lab", "b"]);
        assert!(
            note.starts_with("resuming with `--lab b` instead of the saved `--lab a`"),
            "{note}"
        );
        let note = o
            .override_path(&[("--tx-iface", "p".into()), ("--rx-iface", "q".into())])
            .unwrap();
        assert_eq!(
            o.extra,
            [
                "--tx-agent",
                "http://x",
                "--tx-iface",
                "p",
                "--rx-iface",
                "q"
            ]
        );
        assert!(note.contains("instead of the saved `--lab b`"), "{note}");
        let mut o = SweepOptions::default();
        let note = o.override_path(&[("--lab", "c".into())]).unwrap();
        assert!(note.contains("instead of the saved default"), "{note}");
        assert_eq!(o.override_path(&[]), None);
    }
}
