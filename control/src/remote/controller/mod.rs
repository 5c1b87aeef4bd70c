//! The controller's side of a two-host run: it checks both agents (token,
//! version, clock), starts each side at one agreed instant, renews their
//! leases while polling them, stops the receiver once the sender is done,
//! and merges both results (printed by the tables a local run prints). An
//! agent that stops answering ends the run within seconds: the other side
//! is stopped and what it measured is reported with the error.
//!
//! One job a module: [`client`] talks to one agent (and [`clock`]
//! estimates its clock offset), [`start`] connects both and starts the
//! sides, [`side`] is one side's run, [`collect`] follows both to their
//! end and merges what they measured; printing is the local runs' own
//! (`results::run::TwoHostResult::table`, `output`).

mod collect;
mod side;
mod start;

use std::{
    process::ExitCode,
    sync::{atomic::AtomicBool, Arc},
    time::{Duration, Instant},
};

use anyhow::Result;

pub use collect::Outcome;

use crate::request::RunRequest;
use linerate_results::{expect::Expectation, run::TwoHostResult};

/// A two-host run from the command line: checked, run on the agents,
/// printed.
/// `gates`: the run's `--expect`s, held against the merged result.
pub fn command(req: &RunRequest, gates: &[Expectation]) -> Result<ExitCode> {
    req.check()?;
    let interrupted = crate::session::on_signal()?;
    let outcome = run(req, &interrupted)?;
    let code = report(&outcome, req.run().json, req.run().quiet)?;
    let merged = match &outcome.result {
        TwoHostResult::Merged(r) => Some(r),
        TwoHostResult::Partial(_) => None,
    };
    Ok(linerate_results::expect::gate(code, merged, gates))
}

/// Runs `req` on the agents it names: each side on its host.
pub fn run(req: &RunRequest, interrupted: &Arc<AtomicBool>) -> Result<Outcome> {
    let ends = start::connect(req)?;
    let (mut txs, mut rxs) = ends.start(req)?;
    let run = req.run();
    let deadline =
        Instant::now() + start::START_DELAY + run.warmup + run.duration + Duration::from_secs(45);
    collect::follow(&mut txs, &mut rxs, deadline, interrupted);
    Ok(collect::outcome(
        req.command(),
        &txs,
        &rxs,
        interrupted,
        ends.clock(),
    ))
}

/// One pair of a fleet run: its two agents connected (each with its own
/// token), to be started at an instant the fleet shares.
pub struct PairRun {
    ends: start::Ends,
}

/// What one pair of a fleet run gave.
pub struct PairOutcome {
    /// The run's outcome, as a two-host run's.
    pub outcome: Outcome,
    /// When both sides' runs were created (this host's clock, ns since
    /// the Unix epoch): after the agreed start, the pair started late.
    pub armed_unix_ns: u64,
}

impl PairRun {
    /// Connects to the agents `req` names (tokens: tx's, rx's) and reads
    /// both interfaces.
    pub fn connect(req: &RunRequest, tokens: (&str, &str)) -> Result<Self> {
        Ok(Self {
            ends: start::connect_with(req, tokens)?,
        })
    }

    /// The longer round trip to its agents, ns.
    pub fn rtt_ns(&self) -> u64 {
        self.ends.rtt_ns()
    }

    /// How far from the agreed instant either side may start, ns: each
    /// agent's clock offset is known within half its round trip.
    pub fn skew_bound_ns(&self) -> u64 {
        self.rtt_ns() / 2
    }

    /// Runs `req` on the pair, both sides starting at `start_ns` (this
    /// host's clock), labelled `pair`; followed to its end.
    pub fn run(
        &self,
        req: &RunRequest,
        start_ns: u64,
        pair: &str,
        interrupted: &Arc<AtomicBool>,
    ) -> Result<PairOutcome> {
        let (mut txs, mut rxs) = self.ends.start_at(req, start_ns, Some(pair))?;
        let armed_unix_ns = unix_ns();
        let run = req.run();
        let ahead = Duration::from_nanos(start_ns.saturating_sub(armed_unix_ns));
        let deadline = Instant::now() + ahead + run.warmup + run.duration + Duration::from_secs(45);
        collect::follow(&mut txs, &mut rxs, deadline, interrupted);
        Ok(PairOutcome {
            outcome: collect::outcome(req.command(), &txs, &rxs, interrupted, self.ends.clock()),
            armed_unix_ns,
        })
    }
}

/// This host's wall clock, ns since the Unix epoch (the clock agreed
/// start instants are given in).
pub fn unix_ns() -> u64 {
    linerate_remote::client::unix_ns()
}

/// Time from the start requests to the agreed start of a run.
pub const START_DELAY: Duration = start::START_DELAY;

/// Prints the outcome (JSON, the summary line with `quiet`, or a table)
/// and gives the exit status: 0, 3 when a side failed (the figures there
/// are printed first), 130 when interrupted.
pub fn report(o: &Outcome, json_out: bool, quiet: bool) -> Result<ExitCode> {
    let text = if json_out {
        format!("{}\n", serde_json::to_string_pretty(&o.result)?)
    } else if quiet {
        o.result.summary()
    } else {
        o.result.table()
    };
    linerate_host::output::print(&text)?;
    if let Some(e) = &o.error {
        eprintln!("linerate: error: {e}; figures measured until then are above");
        return Ok(ExitCode::from(3));
    }
    Ok(linerate_host::output::exit_code(o.interrupted))
}

#[cfg(test)]
mod tests {
    #[test]
    fn controller_options_stripped() {
        let line = [
            "--count",
            "5",
            "--tx-agent",
            "http://a",
            "--rx-agent=http://b",
            "--json",
            "--tx-iface",
            "eth1",
            "--rx-iface=eth2",
            "--rx-netns",
            "nb",
            "--token-file",
            "/t",
            "--rate",
            "10",
            "-r",
        ]
        .map(String::from);
        let req = crate::request::RunRequest::stream(&line).unwrap();
        assert_eq!(req.for_agents(), ["--count=5", "--rate=10"]);
    }
}
