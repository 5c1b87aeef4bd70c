//! Running the system's network tools (ip, ethtool) with clear errors.

use std::process::{Command, Output};

use anyhow::{bail, Context, Result};

/// Runs `prog args...`; fails with its stderr when it exits non-zero.
pub fn run(prog: &str, args: &[&str]) -> Result<String> {
    let out = output(prog, args)?;
    if !out.status.success() {
        bail!(
            "`{prog} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `prog args...` and returns its output whatever its status.
pub fn output(prog: &str, args: &[&str]) -> Result<Output> {
    Command::new(prog).args(args).output().with_context(|| {
        format!("running `{prog}` failed: is it installed? (scripts/install-deps installs it)")
    })
}

/// `ip [-n NS] args...`; a namespace that is not a name is refused.
pub fn ip(netns: Option<&str>, args: &[&str]) -> Result<String> {
    let mut full: Vec<&str> = Vec::new();
    if let Some(ns) = netns {
        linerate_datapath::names::check_netns(ns)?;
        full.extend(["-n", ns]);
    }
    full.extend_from_slice(args);
    run("ip", &full)
}

/// Runs a command inside a network namespace (with its own /sys).
pub fn in_netns(netns: Option<&str>, prog: &str, args: &[&str]) -> Result<String> {
    match netns {
        Some(ns) => {
            linerate_datapath::names::check_netns(ns)?;
            let mut full = vec!["netns", "exec", ns, prog];
            full.extend_from_slice(args);
            run("ip", &full)
        }
        None => run(prog, args),
    }
}
