//! `linerate stream|rr ... --fleet INVENTORY`: every pair of the
//! inventory connected (its agents' clock offsets estimated as a two-host
//! run's), all armed with one start instant (each agent given it on its
//! own clock), followed to their ends at once; per-pair results (each a
//! two-host result with its `pair`) and their aggregate. A pair that
//! fails is reported and makes the exit 3; the others' results stand.

use std::{
    process::ExitCode,
    sync::{atomic::AtomicBool, Arc},
    time::Duration,
};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::{
    cli::AgentArgs,
    remote::controller::{self, PairRun},
    request::RunRequest,
};
use linerate_host::inventory::{Inventory, Pair};
use linerate_remote::token;
use linerate_results::{
    expect::Expectation,
    run::{RunResult, TwoHostResult},
};

/// Arming a pair (two run requests, each starting a process on its agent)
/// is given this much before the shared start, per pair.
const ARM_PER_PAIR: Duration = Duration::from_millis(20);

/// One pair's end of a fleet run.
pub struct PairReport {
    /// The pair's name.
    pub pair: String,
    /// Its two-host result, if it got that far.
    pub result: Option<TwoHostResult>,
    /// What went wrong (None: it ended well).
    pub error: Option<String>,
    /// How far from the shared instant either side may have started, us:
    /// half the longer round trip to its agents (their clock offsets'
    /// uncertainty), plus how late it was armed, if it was.
    pub start_skew_us: f64,
}

/// A whole fleet run.
pub struct FleetOutcome {
    /// "stream" or "rr".
    pub test: String,
    /// Every pair, in the inventory's order.
    pub pairs: Vec<PairReport>,
    /// The aggregate of the pairs that ended well.
    pub aggregate: linerate_results::fleet::Aggregate,
    /// Ctrl-C cut it short.
    pub interrupted: bool,
}

/// `stream|rr --fleet`: checked, run on every pair, printed.
/// Runs `req` on agents when it names them: on every pair of `--fleet`,
/// or on `--tx-agent`/`--rx-agent`; None for a run on this host. `gates`:
/// its `--expect`s.
pub fn on_agents(req: &RunRequest, gates: &[Expectation]) -> Option<Result<ExitCode>> {
    let agents = &req.run().agents;
    if req.run().json_stream && (agents.tx_agent.is_some() || agents.fleet.is_some()) {
        return Some(Ok(linerate_results::expect::usage_error(
            "--json-stream runs on one host: across two hosts, watch the agents' /metrics (docs/remote.md)",
        )));
    }
    if agents.fleet.is_some() {
        return Some(command(req, gates));
    }
    if agents.tx_agent.is_some() {
        return Some(controller::command(req, gates));
    }
    None
}

/// `gates`: the run's `--expect`s, held against the aggregate.
pub fn command(req: &RunRequest, gates: &[Expectation]) -> Result<ExitCode> {
    let Some(path) = req.run().agents.fleet.clone() else {
        bail!("give --fleet INVENTORY");
    };
    let run = req.run();
    if let Some(why) = refused(req) {
        return Ok(linerate_results::expect::usage_error(&why));
    }
    check(req)?;
    let inventory = load(&path)?;
    let interrupted = crate::session::on_signal()?;
    let outcome = run_fleet(req, &inventory, &interrupted);
    let code = report(&outcome, run.json, run.quiet)?;
    if gates.is_empty() {
        return Ok(short_of_count(&outcome, code));
    }
    let verdicts: Vec<_> = gates.iter().map(|g| g.judge(&outcome.aggregate)).collect();
    eprintln!("linerate: the fleet's aggregate against --expect:");
    Ok(linerate_results::expect::gate_verdicts(code, &verdicts))
}

/// The options a run on a fleet cannot take, said before anything runs
/// (a command-line error, exit 2): each pair would refuse them (exit 3
/// after connecting every pair).
pub fn refused(req: &RunRequest) -> Option<String> {
    let run = req.run();
    if run.tx_iface.is_some()
        || run.rx_iface.is_some()
        || run.tx_netns.is_some()
        || run.rx_netns.is_some()
    {
        return Some("--fleet takes each pair's interfaces from the inventory: leave out --tx-iface, --rx-iface, --tx-netns and --rx-netns".into());
    }
    if run.agents.tx_agent.is_some() || run.agents.rx_agent.is_some() {
        return Some("--fleet takes each pair's agents from the inventory: leave out --tx-agent and --rx-agent".into());
    }
    if let Some(p) = run.napi_priority.filter(|_| {
        !matches!(
            run.napi,
            crate::cli::NapiArg::Threaded | crate::cli::NapiArg::ThreadedOwn
        )
    }) {
        return Some(format!("--napi-priority {p}: a fleet's pairs run on interfaces of no lab, where NAPI is left as it is (in softirq): there is no NAPI thread to set; give --napi threaded or --napi threaded-own"));
    }
    if let RunRequest::Stream(s) = req {
        if s.search_rate.is_some() {
            return Some("--search-rate is not for --fleet runs: search one pair (--tx-agent/--rx-agent), then run the fleet at that rate".into());
        }
        if s.pcap.is_some() {
            return Some("--pcap writes the frames of a run on this host, and a fleet's pairs run on their own hosts: drop --pcap (or capture one pair's run on its host)".into());
        }
        if s.tx_only {
            return Some("--tx-only runs the senders on this host, and a fleet's pairs run on their own hosts: drop --tx-only".into());
        }
    }
    None
}

/// Refuses, before anything runs, what a run on a fleet cannot take.
pub fn check(req: &RunRequest) -> Result<()> {
    if let Some(why) = refused(req) {
        bail!(why);
    }
    req.check()?;
    Ok(())
}

/// The request for one pair: its agents and interfaces from the inventory.
fn pair_request(req: &RunRequest, pair: &Pair) -> RunRequest {
    let mut r = req.clone();
    let run = r.run_mut();
    run.agents = AgentArgs {
        tx_agent: Some(pair.tx.agent.clone()),
        rx_agent: Some(pair.rx.agent.clone()),
        token_file: None,
        fleet: None,
        // The pair's name goes to its agents with the start (`start_at`).
        pair: None,
    };
    if let Some(port) = pair.port {
        run.port = port;
    }
    run.tx_iface = Some(pair.tx.iface.clone());
    run.rx_iface = Some(pair.rx.iface.clone());
    (run.tx_netns, run.rx_netns) = (None, None);
    r
}

/// Reads the inventory at `path` and every token file it names, before
/// anything is sent: a foreign inventory or token file (another user's,
/// writable by others, too large) refuses the whole fleet, so that no
/// request leaves with a token an inventory chose.
pub fn load(path: &std::path::Path) -> Result<Inventory> {
    let inventory = Inventory::load(path)?;
    let mut seen = std::collections::BTreeSet::new();
    for pair in &inventory.pairs {
        for side in [&pair.tx, &pair.rx] {
            if seen.insert(&side.token_file) {
                token::read(Some(&side.token_file)).with_context(|| {
                    format!(
                        "inventory {}: pair {}: nothing was sent",
                        path.display(),
                        pair.name
                    )
                })?;
            }
        }
    }
    Ok(inventory)
}

/// Connects to a pair's agents with their own tokens.
fn connect(req: &RunRequest, pair: &Pair) -> Result<PairRun> {
    let tx = token::read(Some(&pair.tx.token_file))?;
    let rx = token::read(Some(&pair.rx.token_file))?;
    PairRun::connect(&controller::two_host(req), (&tx, &rx))
}

/// Runs `req` on every pair of `inventory` at one instant.
pub fn run_fleet(
    req: &RunRequest,
    inventory: &Inventory,
    interrupted: &Arc<AtomicBool>,
) -> FleetOutcome {
    let reqs: Vec<RunRequest> = inventory
        .pairs
        .iter()
        .map(|p| pair_request(req, p))
        .collect();
    // Every pair connected at once (each agent's clock sampled).
    let connected: Vec<Result<PairRun>> = std::thread::scope(|s| {
        let hs: Vec<_> = inventory
            .pairs
            .iter()
            .zip(&reqs)
            .map(|(p, r)| s.spawn(move || connect(r, p)))
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("connecting panicked")))
            })
            .collect()
    });
    let up = connected.iter().filter(|c| c.is_ok()).count() as u32;
    let rtt = connected
        .iter()
        .flatten()
        .map(PairRun::rtt_ns)
        .max()
        .unwrap_or(0);
    let start_ns = controller::unix_ns()
        + (controller::START_DELAY + ARM_PER_PAIR * up).as_nanos() as u64
        + rtt;
    // Every pair armed for that instant and followed, at once.
    let pairs: Vec<PairReport> = std::thread::scope(|s| {
        let hs: Vec<_> = inventory
            .pairs
            .iter()
            .zip(&reqs)
            .zip(connected)
            .map(|((p, r), c)| {
                let name = p.name.clone();
                s.spawn(move || one_pair(r, &name, c, start_ns, interrupted))
            })
            .collect();
        hs.into_iter()
            .zip(&inventory.pairs)
            .map(|(h, p)| {
                h.join().unwrap_or_else(|_| PairReport {
                    pair: p.name.clone(),
                    result: None,
                    error: Some("its thread panicked".into()),
                    start_skew_us: 0.0,
                })
            })
            .collect()
    });
    let good: Vec<(&str, &RunResult)> = pairs
        .iter()
        .filter(|p| p.error.is_none())
        .filter_map(|p| match &p.result {
            Some(TwoHostResult::Merged(r)) => Some((p.pair.as_str(), r)),
            _ => None,
        })
        .collect();
    let failed = pairs.len() - good.len();
    let skew = pairs
        .iter()
        .filter(|p| p.error.is_none())
        .map(|p| p.start_skew_us)
        .fold(0.0, f64::max);
    FleetOutcome {
        test: req.command().to_string(),
        aggregate: linerate_results::fleet::of(req.command(), &good, failed, skew),
        pairs,
        interrupted: interrupted.load(std::sync::atomic::Ordering::Relaxed),
    }
}

/// One pair's run, from its connection's outcome.
fn one_pair(
    req: &RunRequest,
    name: &str,
    connected: Result<PairRun>,
    start_ns: u64,
    interrupted: &Arc<AtomicBool>,
) -> PairReport {
    let failed = |e: anyhow::Error| PairReport {
        pair: name.to_string(),
        result: None,
        error: Some(format!("{e:#}")),
        start_skew_us: 0.0,
    };
    let pr = match connected {
        Ok(pr) => pr,
        Err(e) => return failed(e),
    };
    match pr.run(&controller::two_host(req), start_ns, name, interrupted) {
        Ok(o) => {
            let late_ns = o.armed_unix_ns.saturating_sub(start_ns);
            PairReport {
                pair: name.to_string(),
                error: o.outcome.error.clone(),
                result: Some(o.outcome.result),
                start_skew_us: (pr.skew_bound_ns() + late_ns) as f64 / 1000.0,
            }
        }
        Err(e) => failed(e),
    }
}

impl PairReport {
    /// Its JSON: the two-host result's fields with `pair`,
    /// `start_skew_us`, and `error` when it failed.
    pub fn json(&self) -> Value {
        let mut v = match &self.result {
            Some(r) => serde_json::to_value(r).unwrap_or(Value::Null),
            None => json!({}),
        };
        if !v.is_object() {
            v = json!({});
        }
        let o = v.as_object_mut().expect("an object");
        o.insert("pair".into(), json!(self.pair));
        o.insert("start_skew_us".into(), json!(self.start_skew_us));
        if let Some(e) = &self.error {
            o.insert("failed".into(), json!(true));
            o.insert("error".into(), json!(e));
        }
        v
    }

    /// Its line in the text output.
    pub fn line(&self) -> String {
        match (&self.error, &self.result) {
            (Some(e), _) => format!("  {}: FAILED: {e}\n", self.pair),
            (None, Some(r)) => format!(
                "  {}: {} [start skew <= {:.0} us]\n",
                self.pair,
                r.summary().lines().next().unwrap_or(""),
                self.start_skew_us
            ),
            (None, None) => format!("  {}: no result\n", self.pair),
        }
    }
}

impl FleetOutcome {
    /// The JSON document: `test`, `pairs`, `aggregate`.
    pub fn json(&self) -> Value {
        json!({
            "test": self.test,
            "pairs": self.pairs.iter().map(PairReport::json).collect::<Vec<_>>(),
            "aggregate": self.aggregate,
            "interrupted": self.interrupted,
        })
    }

    /// The text: the total line first, then one line per pair.
    pub fn text(&self, quiet: bool) -> String {
        let mut o = self.aggregate.line();
        if !quiet {
            for p in &self.pairs {
                o += &p.line();
            }
        }
        o
    }
}

/// Prints the outcome; exit 0, 3 when a pair failed (its error on
/// stderr, the others' figures printed), 130 when interrupted.
pub fn report(o: &FleetOutcome, json_out: bool, quiet: bool) -> Result<ExitCode> {
    let text = if json_out {
        format!("{}\n", serde_json::to_string_pretty(&o.json())?)
    } else {
        o.text(quiet)
    };
    linerate_host::output::print(&text)?;
    if o.interrupted {
        return Ok(linerate_host::output::exit_code(true));
    }
    let failed: Vec<&PairReport> = o.pairs.iter().filter(|p| p.error.is_some()).collect();
    if !failed.is_empty() {
        for p in &failed {
            eprintln!(
                "linerate: error: pair {}: {}",
                p.pair,
                p.error.as_deref().unwrap_or("")
            );
        }
        eprintln!(
            "linerate: error: {} of {} pair(s) failed; the others' figures are above",
            failed.len(),
            o.pairs.len()
        );
        return Ok(ExitCode::from(3));
    }
    Ok(ExitCode::SUCCESS)
}

/// `code`, or 4 when it is 0 and a pair's counted stream (`--count`)
/// delivered fewer frames than it sent, each such pair named on stderr.
fn short_of_count(o: &FleetOutcome, code: ExitCode) -> ExitCode {
    if code != ExitCode::SUCCESS {
        return code;
    }
    let mut short = 0;
    for p in &o.pairs {
        let Some(TwoHostResult::Merged(RunResult::Stream(s))) = &p.result else {
            continue;
        };
        if let Some((missing, promised)) = s.short_of_count() {
            eprintln!(
                "linerate: error: pair {}: {missing} of {promised} frames did not arrive (lost on the way or dropped at the sender)",
                p.pair
            );
            short += 1;
        }
    }
    if short == 0 {
        return code;
    }
    eprintln!(
        "linerate: error: a counted run (--count) delivered fewer frames than it sent on {short} of {} pair(s); a gate (--expect) judges the run instead when given",
        o.pairs.len()
    );
    ExitCode::from(linerate_results::expect::UNMET)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fleet whose pair's counted stream lost frames exits 4; one that
    /// delivered every frame, or a timed run, keeps its status.
    #[test]
    fn a_counted_fleet_short_of_its_count_exits_4() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/results/two-host-stream.json");
        let r: RunResult = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        let RunResult::Stream(mut s) = r else {
            panic!("a stream fixture")
        };
        s.frames.lost = 0;
        s.frames.dropped_at_sender = 0;
        s.params.count = Some(s.frames.sent);
        let outcome = |s: &linerate_results::stream::StreamResult| {
            let r = RunResult::Stream(s.clone());
            FleetOutcome {
                test: "stream".into(),
                aggregate: linerate_results::fleet::of("stream", &[("a", &r)], 0, 0.0),
                pairs: vec![PairReport {
                    pair: "a".into(),
                    result: Some(TwoHostResult::Merged(r.clone())),
                    error: None,
                    start_skew_us: 0.0,
                }],
                interrupted: false,
            }
        };
        assert_eq!(
            short_of_count(&outcome(&s), ExitCode::SUCCESS),
            ExitCode::SUCCESS
        );
        s.frames.dropped_at_sender = 221;
        assert_eq!(
            short_of_count(&outcome(&s), ExitCode::SUCCESS),
            ExitCode::from(4)
        );
        // A fault's status stays.
        assert_eq!(
            short_of_count(&outcome(&s), ExitCode::from(3)),
            ExitCode::from(3)
        );
        s.params.count = None;
        assert_eq!(
            short_of_count(&outcome(&s), ExitCode::SUCCESS),
            ExitCode::SUCCESS
        );
    }

    fn stream(options: &[&str]) -> RunRequest {
        let mut all = vec!["--fleet", "inv.toml"];
        all.extend(options);
        RunRequest::Stream(Box::new(RunRequest::stream_args(&all)))
    }

    /// What every pair would refuse after the fleet was connected is
    /// refused before: a capture, a NAPI priority with no NAPI thread,
    /// --tx-only; a priority with threaded NAPI is taken.
    #[test]
    fn options_every_pair_would_refuse_are_refused_first() {
        for (options, says) in [
            (&["--pcap", "f.pcapng"][..], "--pcap writes the frames"),
            (
                &["--napi-priority", "fifo:50"][..],
                "there is no NAPI thread to set",
            ),
            (
                &["--napi-priority", "rr:5", "--napi", "softirq"][..],
                "give --napi threaded",
            ),
            (
                &["--tx-only"][..],
                "--tx-only runs the senders on this host",
            ),
            (
                &["--search-rate", "0.1"][..],
                "--search-rate is not for --fleet",
            ),
        ] {
            let why = refused(&stream(options)).unwrap_or_default();
            assert!(why.contains(says), "{options:?}: {why:?}");
            assert!(check(&stream(options)).is_err(), "{options:?}");
        }
        for options in [
            &[][..],
            &["--napi-priority", "fifo:50", "--napi", "threaded"][..],
            &["--napi-priority", "other:5", "--napi", "threaded-own"][..],
        ] {
            assert_eq!(refused(&stream(options)), None, "{options:?}");
        }
    }
}
