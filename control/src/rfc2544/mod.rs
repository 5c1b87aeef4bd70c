//! `linerate rfc2544`: the four tests of RFC 2544 section 26 (throughput,
//! latency, frame loss rate, back-to-back frames) over the standard frame
//! sizes, each test a series of stream trials run by the stream machinery
//! (the throughput search is `stream --search-rate`'s). Each test of each
//! size is appended whole to results.jsonl as it finishes (the sweep's
//! store), so an interrupted run resumes where it stopped; the report
//! ([`report`]) is written from that file alone.

mod report;
mod trials;

use std::{
    path::Path,
    process::ExitCode,
    sync::{atomic::Ordering, Arc},
    time::Duration,
};

use anyhow::{bail, Context, Result};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use linerate_datapath::{geometry::Geometry, mix::SizeMix};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{
    cli::{Cli, Command, Rfc2544Args, StreamArgs},
    plan::stream::{self as plan, StreamPlan},
    session, sweep,
};
use linerate_host::output;
use linerate_report::sweep::{self as saved, store, Record, RESULTS};
use linerate_results::run::RunResult;
use report::{check_values, Test};
use trials::{Budget, Ran, Throughput};

/// How the run was started, for --resume and `linerate report`.
pub const OPTIONS: &str = "rfc2544.json";
/// RFC 2544's frame sizes for Ethernet (section 9.1), FCS included.
pub const SIZES: [usize; 7] = [64, 128, 256, 512, 1024, 1280, 1518];
/// The jumbo frame size tested when the MTU carries it.
pub const JUMBO: usize = 9018;

/// A quick run's trials: warm-up and duration.
const QUICK_TRIAL: (Duration, Duration) = (Duration::from_millis(100), Duration::from_millis(300));

/// rfc2544.json.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Options {
    /// The command's options as given (after `rfc2544`).
    argv: Vec<String>,
    /// The frame sizes, as the path's MTU decided them.
    sizes: Vec<usize>,
    /// Each size's figures (NDR and PDR with their trials, back-to-back),
    /// as the last report wrote them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    results: Vec<report::Summary>,
}

/// Writes each size's figures into rfc2544.json beside the options.
fn save_results(dir: &Path, reports: &[report::SizeReport]) -> Result<()> {
    let mut o = read_options(dir)?;
    o.results = report::summary(reports);
    store::write_atomic(
        &dir.join(OPTIONS),
        serde_json::to_string_pretty(&o)?.as_bytes(),
    )?;
    Ok(())
}

/// The frame sizes for an MTU: the standard ones that fit, and the jumbo
/// size (or the largest frame, when it lies between 1518 and 9018).
/// With IPv6 the smallest frame that holds linerate's header is larger than
/// 64 B (RFC 5180 moves the smallest size up likewise): it takes 64's place.
pub fn sizes_for(geometry: Geometry) -> Vec<usize> {
    let (smallest, largest) = (geometry.min_frame(), geometry.max_frame());
    let mut s: Vec<usize> = SIZES
        .iter()
        .copied()
        .filter(|&s| (smallest..=largest).contains(&s))
        .collect();
    if SIZES[0] < smallest {
        s.insert(0, smallest);
    }
    if largest > 1518 {
        s.push(largest.min(JUMBO));
    }
    s
}

/// Whether `dir` holds an RFC 2544 run (for `linerate report`).
pub fn is_run_dir(dir: &Path) -> bool {
    // A link there is refused when it is read, not taken for a sweep.
    linerate_host::files::exists(&dir.join(OPTIONS))
}

/// Refuses stream options that the tests set themselves.
fn check(args: &Rfc2544Args) -> Result<()> {
    let s = &args.stream;
    for (given, name, why) in [
        (
            s.count.is_some(),
            "--count",
            "the back-to-back test sets the burst",
        ),
        (
            s.rate.is_some(),
            "--rate",
            "the tests set every trial's rate",
        ),
        (
            s.search_rate.is_some(),
            "--search-rate",
            "use --loss for the throughput test's tolerance",
        ),
        (s.message.is_some(), "--message", "RFC 2544 tests frames"),
        (
            s.rx_only,
            "--rx-only",
            "the tests count what the senders sent",
        ),
        (
            s.run.agents.tx_agent.is_some() || s.run.agents.rx_agent.is_some(),
            "--tx-agent/--rx-agent",
            "rfc2544 runs on one host (the lab, or two interfaces of it)",
        ),
    ] {
        if given {
            bail!("rfc2544 does not take {name}: {why}; remove it");
        }
    }
    if args.pdr_loss < args.loss {
        bail!(
            "--pdr-loss {} is below --loss {}: the PDR tolerates at least the NDR's loss; raise --pdr-loss",
            args.pdr_loss,
            args.loss
        );
    }
    if s.size.as_ref().is_some_and(|m| !m.is_single()) {
        bail!("rfc2544 tests one frame size at a time (RFC 2544 section 9): give --size N, or none for the standard sizes");
    }
    Ok(())
}

/// The stream options of every trial: the command's, with a quick run's
/// (or --trial's) durations.
fn trial_args(args: &Rfc2544Args) -> StreamArgs {
    let mut s = args.stream.clone();
    s.run.json = false;
    if args.quick {
        (s.run.warmup, s.run.duration) = QUICK_TRIAL;
    }
    if let Some(t) = args.trial {
        s.run.duration = t;
        s.run.warmup = s.run.warmup.min(t);
    }
    s
}

/// Says before the first trial what the run will do and how long it may
/// take at most.
fn announce(args: &Rfc2544Args, targs: &StreamArgs, sizes: &[usize], left: usize, budget: &Budget) {
    let per_trial = targs.run.warmup + targs.run.duration;
    let most = sweep::estimate(std::iter::repeat_n(
        per_trial,
        budget.trials_per_size() * left.div_ceil(4),
    ));
    eprintln!(
        "linerate: rfc2544 over {} frame size(s) ({:?}), {left} test(s) to run: at most about {} ({} trials of {} + set-up per size at most; fewer when the tests settle early){}",
        sizes.len(),
        sizes,
        humantime::format_duration(Duration::from_secs(most.as_secs())),
        budget.trials_per_size(),
        humantime::format_duration(per_trial),
        if args.quick { ", quick" } else { "" },
    );
}

/// The run's options, directory and saved options: as given, or as saved
/// in the directory `--resume` names.
fn resolve(given: &Rfc2544Args) -> Result<(Rfc2544Args, std::path::PathBuf, Option<Options>)> {
    Ok(match &given.resume {
        Some(dir) => {
            let saved = read_options(dir)?;
            let mut full = vec!["linerate".to_string(), "rfc2544".to_string()];
            full.extend(saved.argv.iter().cloned());
            let args = match Cli::try_parse_from(&full) {
                Ok(Cli {
                    command: Command::Rfc2544(a),
                }) => *a,
                Ok(_) => bail!(
                    "{}: not the options of an rfc2544 run",
                    dir.join(OPTIONS).display()
                ),
                Err(e) => bail!(
                    "{}: the saved options do not parse: {e}",
                    dir.join(OPTIONS).display()
                ),
            };
            (args, dir.clone(), Some(saved))
        }
        None => (
            given.clone(),
            given
                .out
                .clone()
                .unwrap_or_else(|| saved::default_dir("rfc2544")),
            None,
        ),
    })
}

/// A new run's directory: refused when it holds a run already, else
/// created with the options the run is resumed with.
fn start_dir(dir: &Path, args: &Rfc2544Args, sizes: &[usize]) -> Result<()> {
    // A dangling link is a file of a run too.
    if linerate_host::files::exists(&dir.join(OPTIONS))
        || linerate_host::files::exists(&dir.join(RESULTS))
    {
        bail!(
            "{} already holds a run: resume it with `{}`, or give another --out",
            dir.display(),
            resume_cmd(dir)
        );
    }
    saved::create_dir(dir)?;
    linerate_host::files::check_output_dir(dir)?;
    let o = Options {
        argv: crate::request::rfc2544_argv(args),
        sizes: sizes.to_vec(),
        results: Vec::new(),
    };
    store::write_atomic(
        &dir.join(OPTIONS),
        serde_json::to_string_pretty(&o)?.as_bytes(),
    )?;
    Ok(())
}

/// The record of one test at one size: its outcome and the trial kept
/// whole, or why it failed (said above the bar). None: it was cut short.
fn record_for(
    part: usize,
    point: usize,
    size: usize,
    test: Test,
    ran: Result<Option<Done>>,
    loss: f64,
    bar: &ProgressBar,
) -> Option<Record> {
    let mut values = Map::new();
    values.insert("frame_size".into(), size.into());
    values.insert("test".into(), test.name().into());
    let record = match ran {
        Ok(Some((outcome, result, cut))) => {
            if cut {
                return None;
            }
            values.insert("outcome".into(), outcome);
            Record {
                part,
                point,
                repeat: 0,
                values,
                error: result
                    .is_none()
                    .then(|| format!("no trial within {} % loss to keep whole", loss)),
                result: result.map(RunResult::Stream),
                fleet: None,
            }
        }
        Ok(None) => Record {
            part,
            point,
            repeat: 0,
            values,
            result: None,
            fleet: None,
            error: Some(format!(
                "not run: the throughput test found no rate within {} % loss",
                loss
            )),
        },
        Err(e) => {
            bar.println(format!("linerate: {size} B {} failed: {e:#}", test.name()));
            Record {
                part,
                point,
                repeat: 0,
                values,
                result: None,
                fleet: None,
                error: Some(format!("{e:#}")),
            }
        }
    };
    Some(record)
}

/// `linerate rfc2544`.
pub fn command(given: &Rfc2544Args) -> Result<ExitCode> {
    if crate::repeat::rule(&given.stream.repeat) != Ok(None) {
        return Ok(linerate_results::expect::usage_error(
            "--confidence/--iterations repeat a stream or rr run; rfc2544 searches with trials of its own: drop them",
        ));
    }
    let (args, dir, saved) = resolve(given)?;
    check(&args)?;
    // Captures go into the run's directory, one per test of each size.
    if let Some(name) = &args.stream.pcap {
        sweep::check_capture(name)?;
    }
    let interrupted = session::on_signal()?;
    let targs = trial_args(&args);
    let sizes = match &saved {
        Some(s) => s.sizes.clone(),
        None => match &targs.size {
            Some(one) => vec![one.max_frame()],
            None => sizes_for(Geometry::for_mtu(plan::plan(&targs)?.path.mtu).ipv6(targs.run.ipv6)),
        },
    };
    let budget = if args.quick {
        Budget::QUICK
    } else {
        Budget::FULL
    };
    if saved.is_none() {
        start_dir(&dir, &args, &sizes)?;
    }
    // What finished: kept, not run again (a test that failed runs again).
    // Only its owner writes in it: nothing planted there is followed.
    linerate_host::files::check_output_dir(&dir)?;
    let mut done = vec![[false; 4]; sizes.len()];
    // The tests whose last record is a failure, with their error.
    let mut failures: std::collections::BTreeMap<(usize, usize), String> = Default::default();
    let mut note = |r: &Record| match &r.error {
        Some(e) => {
            failures.insert((r.part, r.point), e.clone());
        }
        None => {
            failures.remove(&(r.part, r.point));
        }
    };
    store::load(
        &dir.join(RESULTS),
        &vec![Test::ALL.len() as u64; sizes.len()],
        store::Mode::Resume,
        |r| check_values(&sizes, r),
        |r| {
            note(&r);
            done[r.part][r.point] |= r.values.contains_key("outcome") || r.result.is_some()
        },
    )?;
    let left: usize = done.iter().flatten().filter(|d| !**d).count();
    announce(&args, &targs, &sizes, left, &budget);
    let mut out = store::Results::open(&dir.join(RESULTS))?;
    let bar = ProgressBar::new((sizes.len() * Test::ALL.len()) as u64).with_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} test {pos}/{len} {msg}",
        )
        .expect("valid template"),
    );
    let mut reports = report::load(&dir, &sizes)?;
    'sizes: for (part, &size) in sizes.iter().enumerate() {
        let mut sargs = targs.clone();
        sargs.size = Some(SizeMix::single(size));
        let plan = plan::plan(&sargs);
        for (point, test) in Test::ALL.into_iter().enumerate() {
            if done[part][point] {
                bar.inc(1);
                continue;
            }
            if interrupted.load(Ordering::Relaxed) {
                break 'sizes;
            }
            bar.set_message(format!("{size} B {}", test.name()));
            let ran = match &plan {
                Ok(p) => with_capture(p, &dir, part, point).and_then(|p| {
                    let losses = (args.loss, args.pdr_loss);
                    let search = args.stream.search;
                    run_test(
                        &p,
                        (test, search),
                        &reports[part],
                        losses,
                        &budget,
                        &interrupted,
                    )
                }),
                Err(e) => Err(anyhow::anyhow!("{e:#}")),
            };
            let Some(record) = record_for(part, point, size, test, ran, args.loss, &bar) else {
                // A cut-short test is not finished: resume runs it again.
                break 'sizes;
            };
            note(&record);
            out.append(&record).with_context(|| {
                format!(
                    "the finished tests are kept whole: `{}` runs the rest",
                    resume_cmd(&dir)
                )
            })?;
            reports = report::load(&dir, &sizes)?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let was_cut = interrupted.load(Ordering::Relaxed);
    let text = report::write(&dir, &head(&args, &dir), &reports)?;
    save_results(&dir, &reports)?;
    if was_cut {
        eprintln!(
            "linerate: rfc2544 interrupted; finished tests are in {}; resume with `{}`",
            dir.display(),
            resume_cmd(&dir)
        );
    }
    // --json as given now (a resumed run: not as saved).
    let code = output::report(&reports, given.stream.run.json, || text, was_cut, &None)?;
    if failures.is_empty() {
        return Ok(code);
    }
    Ok(failed(&failures, &sizes, &dir, was_cut))
}

/// The exit code and the line on stderr of a run with failed tests.
fn failed(
    failures: &std::collections::BTreeMap<(usize, usize), String>,
    sizes: &[usize],
    dir: &Path,
    was_cut: bool,
) -> ExitCode {
    let first = failures
        .iter()
        .next()
        .map(|(&(part, point), e)| format!("{} B {}: {e}", sizes[part], Test::ALL[point].name()));
    output::failures(
        was_cut,
        failures.len() as u64,
        (sizes.len() * Test::ALL.len()) as u64,
        "test(s)",
        first.as_deref(),
        &format!("`{}` runs again those that did not finish", resume_cmd(dir)),
    )
}

/// The command that resumes the run in `dir`, to paste.
fn resume_cmd(dir: &Path) -> String {
    linerate_host::sh::shown(&[
        "linerate",
        "rfc2544",
        "--resume",
        &dir.display().to_string(),
    ])
}

/// The report's first lines.
fn head(args: &Rfc2544Args, dir: &Path) -> String {
    let r = &trial_args(args).run;
    format!(
        "linerate rfc2544 in {}: trials of {} after {} warm-up{}, {} queue(s), loss tolerated {} % (NDR) and {} % (PDR), search {}.",
        dir.display(),
        humantime::format_duration(r.duration),
        humantime::format_duration(r.warmup),
        if args.quick { " (--quick: a coarser throughput search, fewer bursts)" } else { "" },
        r.queues,
        args.loss,
        args.pdr_loss,
        match args.stream.search {
            crate::cli::SearchArg::Mlr => "MLRsearch",
            crate::cli::SearchArg::Binary => "binary",
        }
    )
}

/// A test's plan with its capture (if any) in `dir`: one file per test
/// of each size, the last trial's frames.
fn with_capture(plan: &StreamPlan, dir: &Path, part: usize, point: usize) -> Result<StreamPlan> {
    let mut p = plan.clone();
    if let Some(name) = &plan.pcap {
        p.pcap = Some(sweep::capture_path(dir, name, part, point, 0)?);
    }
    Ok(p)
}

fn read_options(dir: &Path) -> Result<Options> {
    let path = dir.join(OPTIONS);
    // Only the user's own regular file, never through a link.
    let Some(text) = linerate_host::files::read_regular(&path, saved::MAX_OPTIONS, true)? else {
        bail!(
            "{} is not an rfc2544 run directory (no {OPTIONS}): give the --out of an earlier run",
            dir.display()
        );
    };
    let text = String::from_utf8_lossy(&text);
    serde_json::from_str(&text).with_context(|| format!("{} does not hold up", path.display()))
}

type Done = (Value, Option<linerate_results::stream::StreamResult>, bool);

/// Runs one test at one size: its outcome as JSON, the trial kept whole,
/// whether it was cut short. None: it cannot run (no throughput found).
/// `search`: how the throughput test searches (`--search`).
fn run_test(
    plan: &StreamPlan,
    (test, search): (Test, crate::cli::SearchArg),
    so_far: &report::SizeReport,
    losses: (f64, f64),
    budget: &Budget,
    interrupted: &Arc<std::sync::atomic::AtomicBool>,
) -> Result<Option<Done>> {
    fn done<T: Serialize>(r: Ran<T>) -> Result<Option<Done>> {
        Ok(Some((
            serde_json::to_value(&r.outcome)?,
            r.result,
            r.interrupted,
        )))
    }
    let tp: Option<&Throughput> = so_far.throughput.as_ref();
    match test {
        Test::Throughput => done(trials::throughput(
            plan,
            losses,
            budget,
            search,
            interrupted,
        )?),
        Test::Latency => match tp.filter(|t| t.fps.is_some()) {
            Some(t) => done(trials::latency(
                plan,
                t,
                budget.latency_trials,
                interrupted,
            )?),
            None => Ok(None),
        },
        Test::FrameLoss => match tp.filter(|t| t.highest_fps > 0.0) {
            Some(t) => done(trials::frame_loss(plan, t.highest_fps, interrupted)?),
            None => Ok(None),
        },
        Test::BackToBack => match tp.filter(|t| t.highest_fps > 0.0) {
            Some(t) => done(trials::back_to_back(
                plan,
                t.highest_fps,
                budget,
                interrupted,
            )?),
            None => Ok(None),
        },
    }
}

/// `linerate report DIR` of an rfc2544 run.
pub fn report_command(dir: &Path) -> Result<ExitCode> {
    let o = read_options(dir)?;
    let reports = report::load(dir, &o.sizes)?;
    linerate_host::files::check_output_dir(dir)?;
    let text = report::write(
        dir,
        &format!(
            "linerate rfc2544 in {} (rewritten by `linerate report`).",
            dir.display()
        ),
        &reports,
    )?;
    save_results(dir, &reports)?;
    output::emit(&text)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Rfc2544Args {
        let argv = ["linerate", "rfc2544"].iter().chain(args);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Rfc2544(a) => *a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn options_the_tests_set_are_refused_by_name() {
        for (args, want) in [
            (
                &["--rate", "1000"][..],
                "rfc2544 does not take --rate: the tests set every trial's rate; remove it",
            ),
            (&["--count", "5"], "rfc2544 does not take --count"),
            (
                &["--search-rate", "1"],
                "rfc2544 does not take --search-rate: use --loss",
            ),
            (
                &["--tx-agent", "h:1", "--rx-agent", "h:2"],
                "rfc2544 does not take --tx-agent/--rx-agent",
            ),
        ] {
            let e = check(&parse(args)).unwrap_err().to_string();
            assert!(e.starts_with(want), "{args:?}: {e}");
        }
        // A loss of 100 % or more is refused where it is parsed.
        let e = Cli::try_parse_from(["linerate", "rfc2544", "--loss", "100"]).unwrap_err();
        assert!(
            e.to_string()
                .contains("invalid value '100' for '--loss <PERCENT>': \"100\" is out of range"),
            "{e}"
        );
        check(&parse(&["--loss", "0.5", "--size", "64", "--quick"])).unwrap();
        let e = check(&parse(&["--loss", "0.2", "--pdr-loss", "0.1"])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--pdr-loss 0.1 is below --loss 0.2: the PDR tolerates at least the NDR's loss; raise --pdr-loss"
        );
        assert_eq!(trial_args(&parse(&["--quick"])).run.duration, QUICK_TRIAL.1);
    }

    #[test]
    fn a_record_must_hold_the_size_and_test_of_its_place() {
        let rec = |part, point, size: usize, test: &str| {
            let mut values = Map::new();
            values.insert("frame_size".into(), size.into());
            values.insert("test".into(), test.into());
            values.insert("outcome".into(), Value::Null);
            Record {
                part,
                point,
                repeat: 0,
                values,
                result: None,
                fleet: None,
                error: Some("x".into()),
            }
        };
        let sizes = [64, 128];
        check_values(&sizes, &rec(1, 2, 128, "frame loss")).unwrap();
        assert_eq!(
            check_values(&sizes, &rec(1, 2, 1518, "frame loss")).unwrap_err(),
            "a record of part 2 point 2 (the frame loss test at 128 B) that holds frame_size 1518 and test \"frame loss\": a record of another run"
        );
        assert!(check_values(&sizes, &rec(1, 2, 128, "latency")).is_err());
        assert!(check_values(&sizes, &rec(2, 0, 128, "throughput")).is_err());
    }

    #[test]
    fn sizes_follow_the_mtu() {
        let at = |mtu| sizes_for(Geometry::for_mtu(mtu));
        assert_eq!(at(1500), SIZES.to_vec());
        assert_eq!(at(9000), [&SIZES[..], &[9018]].concat());
        assert_eq!(at(3000), [&SIZES[..], &[3018]].concat());
        assert_eq!(at(1000), vec![64, 128, 256, 512]);
        // IPv6 (RFC 5180): the smallest frame holding the header first.
        let v6 = sizes_for(Geometry::for_mtu(1500).ipv6(true));
        assert_eq!(v6, [&[84][..], &SIZES[1..]].concat());
    }
}
