//! `linerate`: the command-line front end. Plans runs, hands them to the
//! data path, measures and reports.

#![forbid(unsafe_code)]

mod cli;
mod doctor;
mod engine;
mod fleet;
mod floor;
mod lab;
#[cfg(test)]
mod options_doc;
mod overhead;
mod path;
mod pcap;
mod plan;
mod printed;
mod remote;
mod repeat;
mod request;
mod rfc2544;
mod rr;
mod session;
mod spec;
mod stream;
mod sweep;

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use cli::{Cli, Command};
use linerate_host::{output, shown};

/// Before Rust's runtime puts /dev/null on a closed fd 1: whether linerate
/// was started with stdout closed (`>&-`), so that such a run is refused
/// before it starts while a caller's read-write /dev/null is a place to
/// write. `ctor` runs it from .init_array, before main.
#[ctor::ctor]
fn stdout_at_exec() {
    output::note_stdout_at_exec();
}

fn main() -> ExitCode {
    // A write past `ulimit -f` fails with EFBIG, an error naming its file,
    // instead of killing the process: SIGXFSZ is blocked here, before any
    // thread starts (threads inherit the mask), so it is never delivered.
    let _ = nix::sys::signal::SigSet::from(nix::sys::signal::Signal::SIGXFSZ).thread_block();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // Errors quote files, agents and the kernel: no character
            // of theirs reaches the terminal as it is.
            eprintln!("linerate: error: {}", shown::shown_lines(&format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}

/// clap's refusal as every other error: one `linerate: error: ...` line
/// (with clap's usage and hint after it), exit 2; `--help` and `--version`
/// print as clap prints them.
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        // Prints to stdout (help, version) or stderr (help for a missing
        // subcommand) and exits 0 or 2 as clap decides.
        e.exit();
    }
    let text = e.render().to_string();
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    eprint!("linerate: error: {text}");
    ExitCode::from(2)
}

/// Hands each command to its module; nothing else happens here.
fn run(cli: Cli) -> Result<ExitCode> {
    // A result with nowhere to go is refused before anything runs (an
    // agent writes nothing to stdout).
    if !matches!(cli.command, Command::Agent(_)) {
        output::check()?;
    }
    match cli.command {
        Command::Lab { action } => lab::command::command(action),
        Command::Doctor(args) => doctor::command(&args),
        Command::Sweep(args) => sweep::command(*args),
        Command::Report { dir, compare, .. } if compare.is_none() && rfc2544::is_run_dir(&dir) => {
            rfc2544::report_command(&dir)
        }
        Command::Report {
            dir,
            compare,
            json,
            fail_if_worse,
        } => linerate_report::command(&dir, compare.as_deref(), json, fail_if_worse),
        Command::Overhead { files, json } => overhead::command(&files, json),
        Command::Agent(args) => remote::agent::command(&args),
        Command::Fleet { action } => fleet::command::command(action),
        Command::Stream(args) => stream::command(&args),
        Command::Rr(args) => rr::command(&args),
        Command::Rfc2544(args) => rfc2544::command(&args),
    }
}
