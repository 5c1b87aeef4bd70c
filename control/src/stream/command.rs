//! `linerate stream`: on this host, on two hosts through their agents
//! (this process the controller), or one side of a two-host run (the
//! child an agent starts, `--role`); `--search-rate` searches the highest
//! rate without loss.

use std::process::ExitCode;

use anyhow::Result;

use super::{mlrsearch, search};
use crate::plan::stream as plan;
use crate::{
    cli::{SearchArg, StreamArgs},
    output, remote,
    request::RunRequest,
    results::run::RunResult,
    session,
};

/// `linerate stream`.
pub fn command(args: &StreamArgs) -> Result<ExitCode> {
    if args.run.agents.tx_agent.is_some() {
        return remote::controller::command(&RunRequest::Stream(Box::new(args.clone())));
    }
    let interrupted = session::on_signal()?;
    if let Some(threshold) = args.search_rate {
        let plan = plan::plan(args)?;
        if args.search == SearchArg::Mlr {
            let result =
                mlrsearch::run(&plan, mlrsearch::Settings::stream(threshold), &interrupted)?;
            let table = || mlrsearch::print_table(&result);
            return output::report(
                &result,
                args.run.json,
                table,
                result.interrupted,
                &result.fault,
            );
        }
        let result = search::run(&plan, threshold, &interrupted)?;
        let table = || search::print_table(&result);
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
    RunResult::from(super::run::run_side(&plan, &interrupted, peer)?)
        .report(args.run.json, args.run.quiet)
}
