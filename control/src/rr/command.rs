//! `linerate rr`: on this host, on two hosts through their agents (this
//! process the controller), or one side of a two-host run (the child an
//! agent starts, `--role`).

use std::process::ExitCode;

use anyhow::Result;

use crate::plan::rr as plan;
use crate::{cli::RrArgs, remote, request::RunRequest, session};
use linerate_results::{expect, run::RunResult};

/// `linerate rr`.
pub fn command(args: &RrArgs) -> Result<ExitCode> {
    let gates = match expect::parse_all(&args.run.expect, expect::Test::Rr) {
        Ok(g) => g,
        Err(why) => return Ok(expect::usage_error(&why)),
    };
    let rule = match crate::repeat::rule(&args.repeat) {
        Ok(r) => r,
        Err(why) => return Ok(expect::usage_error(&why)),
    };
    let req = RunRequest::Rr(Box::new(args.clone()));
    if let Some(code) = crate::fleet::run::on_agents(&req, &gates) {
        return code;
    }
    let interrupted = session::on_signal()?;
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
