//! The controller's side of a two-host run: it checks both agents (token,
//! version, clock), starts each side at one agreed instant, renews their
//! leases while polling them, stops the receiver once the sender is done,
//! and merges both results (printed by the tables a local run prints). An
//! agent that stops answering ends the run within seconds: the other side
//! is stopped and what it measured is reported with the error.
//!
//! One job a module: [`crate::client`] talks to one agent (and
//! [`crate::clock`] estimates its clock offset), `request` is what the run
//! needs of the command line (the binary fills it), `start` connects both
//! and starts the sides, `side` is one side's run, `collect` follows both
//! to their end and merges what they measured; printing is the binary's
//! (the local runs' tables, `results::run::TwoHostResult::table`).

mod collect;
mod request;
mod side;
mod start;

use std::{
    sync::{atomic::AtomicBool, Arc},
    time::{Duration, Instant},
};

use anyhow::Result;

pub use collect::Outcome;
pub use request::Request;

/// Runs `req` on the agents it names: each side on its host.
pub fn run(req: &Request, interrupted: &Arc<AtomicBool>) -> Result<Outcome> {
    let ends = start::connect(req)?;
    let (mut txs, mut rxs) = ends.start(req)?;
    let deadline =
        Instant::now() + start::START_DELAY + req.warmup + req.duration + Duration::from_secs(45);
    collect::follow(&mut txs, &mut rxs, deadline, interrupted);
    Ok(collect::outcome(
        req.test.as_str(),
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
    pub fn connect(req: &Request, tokens: (&str, &str)) -> Result<Self> {
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
        req: &Request,
        start_ns: u64,
        pair: &str,
        interrupted: &Arc<AtomicBool>,
    ) -> Result<PairOutcome> {
        let (mut txs, mut rxs) = self.ends.start_at(req, start_ns, Some(pair))?;
        let armed_unix_ns = unix_ns();
        let ahead = Duration::from_nanos(start_ns.saturating_sub(armed_unix_ns));
        let deadline = Instant::now() + ahead + req.warmup + req.duration + Duration::from_secs(45);
        collect::follow(&mut txs, &mut rxs, deadline, interrupted);
        Ok(PairOutcome {
            outcome: collect::outcome(
                req.test.as_str(),
                &txs,
                &rxs,
                interrupted,
                self.ends.clock(),
            ),
            armed_unix_ns,
        })
    }
}

/// This host's wall clock, ns since the Unix epoch (the clock agreed
/// start instants are given in).
pub fn unix_ns() -> u64 {
    crate::client::unix_ns()
}

/// Time from the start requests to the agreed start of a run.
pub const START_DELAY: Duration = start::START_DELAY;

#[cfg(test)]
mod tests {
    use std::{
        sync::{atomic::AtomicBool, Arc},
        time::Duration,
    };

    use super::{run, Request};
    use crate::api;

    fn request() -> Request {
        Request {
            test: api::Test::Stream,
            args: vec!["--size=64".into()],
            tx_agent: Some("http://198.18.0.1:9".into()),
            rx_agent: Some("http://198.18.0.2:9".into()),
            tx_iface: Some("eth1".into()),
            rx_iface: Some("eth2".into()),
            tx_netns: None,
            rx_netns: None,
            reverse: false,
            pair: None,
            token_file: None,
            warmup: Duration::from_secs(1),
            duration: Duration::from_secs(2),
        }
    }

    /// A run that names too little is refused before any agent is asked,
    /// naming the options to give.
    #[test]
    fn agents_and_interfaces_are_required() {
        let no = Arc::new(AtomicBool::new(false));
        let mut r = request();
        r.rx_agent = None;
        let e = run(&r, &no).err().unwrap();
        assert_eq!(e.to_string(), "give both --tx-agent and --rx-agent");
        let mut r = request();
        r.tx_iface = None;
        let e = run(&r, &no).err().unwrap();
        assert_eq!(
            e.to_string(),
            "with --tx-agent and --rx-agent, give --tx-iface (an interface of the tx agent's host) and --rx-iface (one of the rx agent's host)"
        );
        let mut r = request();
        r.rx_iface = None;
        let e = super::PairRun::connect(&r, ("t", "t")).err().unwrap();
        assert_eq!(
            e.to_string(),
            "with --tx-agent and --rx-agent, give --tx-iface and --rx-iface"
        );
    }
}
