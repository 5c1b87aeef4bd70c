//! `linerate stream`: on this host, on two hosts through their agents
//! (this process the controller), or one side of a two-host run (the
//! child an agent starts, `--role`); `--search-rate` searches the highest
//! rate within a loss tolerance (MLRsearch, in the configuration
//! `--search` names).

use std::process::ExitCode;

use anyhow::Result;

use super::{mlrsearch, search};
use crate::plan::stream as plan;
use crate::{
    cli::{SearchArg, StreamArgs},
    remote,
    request::RunRequest,
    session,
};
use linerate_host::output;
use linerate_results::{expect, run::RunResult};

/// `linerate stream`.
pub fn command(args: &StreamArgs) -> Result<ExitCode> {
    let gates = match expect::parse_all(&args.run.expect, expect::Test::Stream) {
        Ok(_) if args.search_rate.is_some() && args.run.json_stream => {
            return Ok(expect::usage_error(
                "--json-stream follows one run; --search-rate makes many runs: drop one of them",
            ))
        }
        Ok(_) if args.search_rate.is_some() && !args.run.expect.is_empty() => {
            return Ok(expect::usage_error(
                "--expect holds a run's figures; --search-rate makes many runs: drop one of them",
            ))
        }
        Ok(_) if args.search_rate.is_some() && crate::repeat::rule(&args.repeat) != Ok(None) => {
            return Ok(expect::usage_error(
                "--confidence/--iterations repeat one run; --search-rate makes many runs: drop one of them",
            ))
        }
        Ok(g) => g,
        Err(why) => return Ok(expect::usage_error(&why)),
    };
    let rule = match crate::repeat::rule(&args.repeat) {
        Ok(r) => r,
        Err(why) => return Ok(expect::usage_error(&why)),
    };
    let req = RunRequest::Stream(Box::new(args.clone()));
    if let Some(code) = crate::fleet::run::on_agents(&req, &gates) {
        return code;
    }
    let interrupted = session::on_signal()?;
    if let Some(threshold) = args.search_rate {
        let plan = plan::plan(args)?;
        let settings = match args.search {
            SearchArg::Mlr => search::Settings::stream(threshold),
            SearchArg::Binary => search::Settings::binary(threshold),
        };
        let result = mlrsearch::run(&plan, settings, &interrupted)?;
        let table = || mlrsearch::print_table(&result);
        return output::report(
            &result,
            args.run.json,
            table,
            result.interrupted,
            &result.fault,
        );
    }
    let mut plan = plan::plan(args)?;
    let role = remote::role::Role::for_side(&mut plan.path, &args.run.role, &interrupted)?;
    let peer = role.as_ref().map(|r| r as &dyn session::Peer);
    let result = crate::repeat::run(rule.as_ref(), &args.repeat, || {
        Ok(RunResult::from(super::run::run_side(
            &plan,
            &interrupted,
            peer,
        )?))
    })?;
    crate::printed::finish(&result, crate::plan::run::printed(&args.run), &gates)
}
