//! `linerate`: the command-line front end. Plans runs, hands them to the
//! data path, measures and reports.

mod cli;
mod cores;
mod cpu;
mod doctor;
mod engine;
mod environment;
mod iface;
mod lab;
mod napi;
mod output;
mod overhead;
mod path;
mod privilege;
mod remote;
mod results;
mod rr;
mod session;
mod sh;
mod stream;
mod sweep;
mod sysfs;

use std::{
    process::ExitCode,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
};

use anyhow::{Context, Result};
use clap::Parser;

use cli::{Cli, Command, LabAction};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("linerate: error: {e:#}");
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

fn run(cli: Cli) -> Result<ExitCode> {
    // A result with nowhere to go is refused before anything runs (an
    // agent writes nothing to stdout).
    if !matches!(cli.command, Command::Agent(_)) {
        output::check()?;
    }
    match cli.command {
        Command::Lab { action } => lab_cmd(action),
        Command::Doctor(a) => {
            let r = doctor::run(&a)?;
            if a.json {
                emit(&(serde_json::to_string_pretty(&r)? + "\n"))?;
            } else {
                emit(&doctor::render(&r))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Sweep(a) => sweep_cmd(a),
        Command::Report { dir } => {
            let text = sweep::report::write(&dir)?;
            emit(&format!(
                "{text}report: {}\n",
                dir.join("report.md").display()
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Overhead { files, json } => {
            let mut points = Vec::new();
            for f in &files {
                let text = std::fs::read_to_string(f)
                    .with_context(|| format!("reading {}", f.display()))?;
                let v: serde_json::Value = serde_json::from_str(&text).with_context(|| {
                    format!("{} is not JSON (save results with --json)", f.display())
                })?;
                points.push(overhead::point(&v).with_context(|| f.display().to_string())?);
            }
            let fit = overhead::fit(&points)
                .context("the fit needs results at two or more different message sizes")?;
            if json {
                emit(&(serde_json::to_string_pretty(&fit)? + "\n"))?;
            } else {
                emit(&format!(
                    "per-message overhead {:.2} us, asymptotic rate {:.1} MB/s (r^2 {:.4}, {} points)\n",
                    fit.overhead_us, fit.asymptotic_mb_s, fit.r_squared, fit.points
                ))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Agent(a) => {
            remote::agent::serve(&a)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Rr(a) if a.run.agents.tx_agent.is_some() => {
            rr::plan::check_args(&a)?;
            let interrupted = on_signal()?;
            let raw: Vec<String> = std::env::args().skip(2).collect();
            let o = remote::controller::run("rr", &raw, &a.run, &interrupted)?;
            remote::controller::report(&o, a.run.json)
        }
        Command::Stream(a) if a.run.agents.tx_agent.is_some() => {
            stream::plan::check_args(&a)?;
            let interrupted = on_signal()?;
            let raw: Vec<String> = std::env::args().skip(2).collect();
            let o = remote::controller::run("stream", &raw, &a.run, &interrupted)?;
            remote::controller::report(&o, a.run.json)
        }
        Command::Rr(a) => {
            let interrupted = on_signal()?;
            let mut plan = rr::plan::plan(&a)?;
            remote::role::patch_path(&mut plan.path, &a.run.role)?;
            let role = remote::role::Role::from_args(&a.run.role, &interrupted)?;
            let peer = role.as_ref().map(|r| r as &dyn session::Peer);
            let result = rr::run_side(&plan, &interrupted, peer)?;
            let table = || rr::print_table(&result);
            report(
                &result,
                a.run.json,
                table,
                result.interrupted,
                &result.fault,
            )
        }
        Command::Stream(a) if a.search_rate.is_some() => {
            let interrupted = on_signal()?;
            let plan = stream::plan::plan(&a)?;
            let threshold = a.search_rate.unwrap_or_default();
            let r = stream::search::run(&plan, threshold, &interrupted)?;
            let table = || stream::search::print_table(&r);
            report(&r, a.run.json, table, r.interrupted, &r.fault)
        }
        Command::Stream(a) => {
            let interrupted = on_signal()?;
            let mut plan = stream::plan::plan(&a)?;
            remote::role::patch_path(&mut plan.path, &a.run.role)?;
            let role = remote::role::Role::from_args(&a.run.role, &interrupted)?;
            let peer = role.as_ref().map(|r| r as &dyn session::Peer);
            let result = stream::run_side(&plan, &interrupted, peer)?;
            let table = || stream::print_table(&result);
            report(
                &result,
                a.run.json,
                table,
                result.interrupted,
                &result.fault,
            )
        }
    }
}

fn sweep_cmd(a: cli::SweepArgs) -> Result<ExitCode> {
    if a.list {
        let mut text = String::new();
        for (name, what, _) in sweep::presets::PRESETS {
            text += &format!("{name:<15} {what}\n");
        }
        emit(&text)?;
        return Ok(ExitCode::SUCCESS);
    }
    // Where points run: given now, or (--resume) saved with the sweep.
    let mut given = Vec::new();
    for (flag, v) in [
        ("--tx-iface", &a.tx_iface),
        ("--rx-iface", &a.rx_iface),
        ("--tx-netns", &a.tx_netns),
        ("--rx-netns", &a.rx_netns),
        ("--lab", &a.lab),
        ("--tx-agent", &a.agents.tx_agent),
        ("--rx-agent", &a.agents.rx_agent),
        (
            "--token-file",
            &a.agents
                .token_file
                .as_ref()
                .map(|p| p.display().to_string()),
        ),
    ] {
        if let Some(v) = v {
            given.push((flag, v.clone()));
        }
    }
    let (text, label, dir, opts) = match &a.resume {
        Some(dir) => {
            let (text, mut opts) = sweep::resume_inputs(dir)?;
            // Never ignored: options given with --resume replace the saved.
            if let Some(note) = opts.override_path(&given) {
                eprintln!("linerate: {note}");
            }
            (
                text,
                dir.join(sweep::SPEC).display().to_string(),
                dir.clone(),
                opts,
            )
        }
        None => {
            let Some(which) = &a.sweep else {
                anyhow::bail!(
                    "name a preset (linerate sweep --list) or a sweep file, or give --resume DIR"
                );
            };
            let (text, label) = match sweep::presets::get(which) {
                Some(t) => (t.to_string(), format!("preset {which}")),
                None => (
                    std::fs::read_to_string(which).with_context(|| {
                        format!("{which:?} is neither a preset (see `linerate sweep --list`) nor a readable file")
                    })?,
                    which.clone(),
                ),
            };
            let name = sweep::spec::SweepSpec::parse(&text, &label)?.name;
            let extra = given
                .iter()
                .flat_map(|(f, v)| [f.to_string(), v.clone()])
                .collect();
            let dir = a.out.clone().unwrap_or_else(|| sweep::default_dir(&name));
            (
                text,
                label,
                dir,
                sweep::SweepOptions {
                    quick: a.quick,
                    extra,
                },
            )
        }
    };
    // Counted from the axes before anything is expanded or run.
    let spec = sweep::spec::SweepSpec::parse(&text, &label)?;
    sweep::Size::of(&spec, opts.quick)?.check(&label, a.max_points)?;
    // A controller of agents needs no privileges of its own.
    if !opts.extra.iter().any(|o| o == "--tx-agent") {
        privilege::require_root("linerate sweep")?;
    }
    eprintln!("linerate: sweep results go to {}", dir.display());
    let interrupted = on_signal()?;
    let text = sweep::run(&text, &label, &dir, &opts, a.resume.is_some(), &interrupted)?;
    emit(&format!(
        "{text}report: {}\n",
        dir.join("report.md").display()
    ))?;
    Ok(if interrupted.load(Ordering::Relaxed) {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// Prints a result as JSON or as its table; an interrupted run exits 130,
/// one ended by a fault of the path 3, after the figures so far.
fn report(
    result: &impl serde::Serialize,
    json: bool,
    table: impl FnOnce() -> String,
    interrupted: bool,
    fault: &Option<String>,
) -> Result<ExitCode> {
    let text = if json {
        serde_json::to_string_pretty(result)? + "\n"
    } else {
        table()
    };
    let written = emit(&text);
    if let Some(f) = fault {
        eprintln!("linerate: error: {f}; the run ended early, the figures above are those measured until then");
        written?;
        return Ok(ExitCode::from(3));
    }
    written?;
    Ok(if interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes a result to stdout, whole or with an error naming where it was
/// going. A reader that went away (`| head`, an agent that died) is not an
/// error of the run: the figures had nowhere to go, nothing else changes.
fn emit(text: &str) -> Result<()> {
    output::print(text)?;
    Ok(())
}

/// Ctrl-C and SIGTERM set the returned flag: the run ends early and
/// reports what it measured.
fn on_signal() -> Result<Arc<AtomicBool>> {
    let interrupted = Arc::new(AtomicBool::new(false));
    let flag = interrupted.clone();
    ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::Relaxed) {
            eprintln!("linerate: interrupted again, still cleaning up");
        } else {
            eprintln!("linerate: interrupted, stopping the run");
        }
    })
    .context("installing the Ctrl-C handler")?;
    Ok(interrupted)
}

fn lab_cmd(action: LabAction) -> Result<ExitCode> {
    match action {
        LabAction::Up {
            mtu,
            queues,
            mgmt,
            lab,
        } => {
            privilege::require_root("linerate lab up")?;
            let l = lab::Lab::new(&lab.name)?;
            l.up(mtu, queues)?;
            if mgmt {
                if let Err(e) = l.add_mgmt() {
                    let _ = l.down();
                    return Err(e);
                }
                emit(&format!(
                    "management: {} <-> {} ({}), {} <-> {} ({})\n",
                    lab::MGMT_A.0,
                    lab::MGMT_A.1,
                    l.ns_a,
                    lab::MGMT_B.0,
                    lab::MGMT_B.1,
                    l.ns_b
                ))?;
            }
            emit(&format!(
                "lab {} up: {} ({}, {}) <-> {} ({}, {}), MTU {mtu}, {queues} queue(s)\n",
                l.name, l.if_a, l.ns_a, l.ip_a, l.if_b, l.ns_b, l.ip_b
            ))?;
        }
        LabAction::Down { lab } => {
            privilege::require_root("linerate lab down")?;
            let l = lab::Lab::new(&lab.name)?;
            l.down()?;
            emit(&format!("lab {} down\n", l.name))?;
        }
        LabAction::Status { lab, json } => {
            let s = lab::Lab::new(&lab.name)?.status();
            if json {
                emit(&(serde_json::to_string_pretty(&s)? + "\n"))?;
            } else if s.up {
                emit(&format!(
                    "lab {} up: {} ({}) <-> {} ({}), MTU {}, {} queue(s), XDP programs: {:?}\n",
                    s.lab.name,
                    s.lab.if_a,
                    s.lab.ns_a,
                    s.lab.if_b,
                    s.lab.ns_b,
                    s.mtu.map_or("?".into(), |m| m.to_string()),
                    s.queues.map_or("?".into(), |m| m.to_string()),
                    s.xdp
                ))?;
            } else {
                emit(&format!("lab {} is down\n", s.lab.name))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
