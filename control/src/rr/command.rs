//! `linerate rr`: on this host, on two hosts through their agents (this
//! process the controller), or one side of a two-host run (the child an
//! agent starts, `--role`).

use std::process::ExitCode;

use anyhow::Result;

use crate::plan::rr as plan;
use crate::{cli::RrArgs, remote, request::RunRequest, results::run::RunResult, session};

/// `linerate rr`.
pub fn command(args: &RrArgs) -> Result<ExitCode> {
    if args.run.agents.fleet.is_some() {
        return crate::fleet::run::command(&RunRequest::Rr(Box::new(args.clone())));
    }
    if args.run.agents.tx_agent.is_some() {
        return remote::controller::command(&RunRequest::Rr(Box::new(args.clone())));
    }
    let interrupted = session::on_signal()?;
    let mut plan = plan::plan(args)?;
    let role = remote::role::Role::for_side(&mut plan.path, &args.run.role, &interrupted)?;
    let peer = role.as_ref().map(|r| r as &dyn session::Peer);
    RunResult::from(super::run::run_side(&plan, &interrupted, peer)?)
        .report(args.run.json, args.run.quiet)
}
