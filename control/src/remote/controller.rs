//! A two-host run from the command line: its options made the plain
//! `linerate_remote::controller::Request` (each agent's options from
//! `RunRequest::for_agents`), run by `linerate_remote::controller` (both
//! agents connected, each side started at one agreed instant, followed to
//! its end, both results merged), and printed here as a local run's.

use std::{
    process::ExitCode,
    sync::{atomic::AtomicBool, Arc},
};

use anyhow::Result;

pub use linerate_remote::controller::{unix_ns, Outcome, PairRun, START_DELAY};

use crate::request::RunRequest;
use linerate_remote::{api, controller};
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
    controller::run(&two_host(req), interrupted)
}

/// What the controller needs of `req`: each agent's options, the agents,
/// the interfaces and namespaces, --reverse, --pair, the token, the run's
/// time.
pub fn two_host(req: &RunRequest) -> controller::Request {
    let run = req.run();
    controller::Request {
        test: match req {
            RunRequest::Stream(_) => api::Test::Stream,
            RunRequest::Rr(_) => api::Test::Rr,
        },
        args: req.for_agents(),
        tx_agent: run.agents.tx_agent.clone(),
        rx_agent: run.agents.rx_agent.clone(),
        tx_iface: run.tx_iface.clone(),
        rx_iface: run.rx_iface.clone(),
        tx_netns: run.tx_netns.clone(),
        rx_netns: run.rx_netns.clone(),
        reverse: run.reverse,
        pair: run.agents.pair.clone(),
        token_file: run.agents.token_file.clone(),
        warmup: run.warmup,
        duration: run.duration,
    }
}

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
        // What the controller is given: the agents' options, and the
        // controller's own as fields.
        let two = super::two_host(&req);
        assert_eq!(two.test, linerate_remote::api::Test::Stream);
        assert_eq!(two.args, ["--count=5", "--rate=10"]);
        assert_eq!(two.tx_agent.as_deref(), Some("http://a"));
        assert_eq!(two.rx_agent.as_deref(), Some("http://b"));
        assert_eq!(two.tx_iface.as_deref(), Some("eth1"));
        assert_eq!(two.rx_iface.as_deref(), Some("eth2"));
        assert_eq!(two.tx_netns, None);
        assert_eq!(two.rx_netns.as_deref(), Some("nb"));
        assert_eq!(two.token_file.as_deref(), Some(std::path::Path::new("/t")));
        // -r: --reverse.
        assert!(two.reverse);
        assert_eq!(two.pair, None);
        assert_eq!(two.duration, req.run().duration);
        assert_eq!(two.warmup, req.run().warmup);
    }

    #[test]
    fn reverse_pair_and_rr_reach_the_controller() {
        let line = [
            "--reverse",
            "--pair",
            "fl1",
            "--tx-agent",
            "http://a",
            "--rx-agent",
            "http://b",
        ]
        .map(String::from);
        let two = super::two_host(&crate::request::RunRequest::rr(&line).unwrap());
        assert_eq!(two.test, linerate_remote::api::Test::Rr);
        assert!(two.reverse);
        assert_eq!(two.pair.as_deref(), Some("fl1"));
        assert!(two.args.is_empty(), "{:?}", two.args);
    }
}
