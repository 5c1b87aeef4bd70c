//! `linerate sweep`: a preset, a sweep file or a sweep to resume, checked
//! and counted, then run.

use std::{process::ExitCode, sync::atomic::Ordering};

use anyhow::{Context, Result};

use super::{
    gates,
    run::{available_memory, bytes_per_point, run},
};
use crate::{cli::SweepArgs, request, session};
use linerate_host::{output, privilege};
use linerate_report::sweep::{
    presets,
    saved::{default_dir, resume_inputs, Size, SweepOptions, SPEC},
    spec::SweepSpec,
};
use linerate_results::expect;

/// Whether every point of `spec` runs both ends in memory (the loopback
/// engine), so that the sweep needs no root. A point whose options do not
/// parse runs nowhere: the points' checks refuse it, naming the file and
/// line, before anything runs, so it asks for no root of its own (a user
/// is told what is wrong with the file, not to use sudo).
fn all_in_memory(spec: &SweepSpec, opts: &SweepOptions) -> bool {
    use linerate_report::sweep::points::{argv, points};
    spec.parts.iter().enumerate().all(|(i, part)| {
        points(i, part).iter().all(|p| {
            argv(part, p, &opts.extra, opts.quick)
                .ok()
                .and_then(|a| super::expand::parse(part.kind, &a).ok())
                .is_none_or(|r| crate::engine::backend(r.run().backend).can().in_memory)
        })
    })
}

/// `linerate sweep`.
pub fn command(args: SweepArgs) -> Result<ExitCode> {
    if args.list {
        let mut text = String::new();
        for (name, what, _) in presets::PRESETS {
            text += &format!("{name:<15} {what}\n");
        }
        output::emit(&text)?;
        return Ok(ExitCode::SUCCESS);
    }
    let (text, label, dir, opts) = inputs(&args)?;
    // Counted from the axes before anything is expanded or run.
    let spec = SweepSpec::parse(&text, &label)?;
    // An option of one run the sweep would not honour: a usage error.
    if let Err(e) = spec.check_run_only(&text, &label) {
        return Ok(expect::usage_error(&e.to_string()));
    }
    let gates = match expect::parse(&args.expect).and_then(|g| gates::check(&spec, &g).map(|()| g))
    {
        Ok(g) => g,
        Err(why) => return Ok(expect::usage_error(&why)),
    };
    let size = Size::run_as(&spec, &opts)?;
    size.check(&label, args.max_points)?;
    size.check_memory(&label, bytes_per_point(&spec), available_memory())?;
    // A fleet's inventory is read before anything runs (each run reads it
    // again: a sweep of hours follows an edited inventory's agents and
    // interfaces, while a run whose inventory names other pairs than the
    // sweep's first run fails: sweep::fleet::Pinned).
    if let Some(path) = &args.agents.fleet {
        crate::fleet::run::load(path)?;
    }
    // A controller of agents needs no privileges of its own, nor does a
    // sweep whose every point runs in memory (the loopback engine).
    if !request::names_agents(&opts.extra) && !all_in_memory(&spec, &opts) {
        privilege::require_root("linerate sweep")?;
    }
    // Ctrl-C and SIGTERM are answered from here on, the points' checks
    // included.
    let interrupted = session::on_signal()?;
    eprintln!("linerate: sweep results go to {}", dir.display());
    let outcome = run(
        &text,
        &label,
        &dir,
        &opts,
        args.resume.is_some(),
        &interrupted,
    )?;
    let Some(text) = outcome.text else {
        // Interrupted before anything ran.
        return Ok(output::exit_code(true));
    };
    output::emit(&format!(
        "{text}report: {}\n",
        dir.join("report.md").display()
    ))?;
    let code = output::failures(
        interrupted.load(Ordering::Relaxed),
        outcome.failed,
        outcome.runs,
        "run(s)",
        outcome.first_failure.as_deref(),
        &format!(
            "`linerate sweep --resume {}` runs them again",
            dir.display()
        ),
    );
    if gates.is_empty() || code != ExitCode::SUCCESS || gates::judge(&dir, &spec, &gates)? {
        return Ok(code);
    }
    Ok(ExitCode::from(expect::UNMET))
}

/// The sweep's text, its label, its directory and its options: given now,
/// or (`--resume`) saved with the sweep.
fn inputs(args: &SweepArgs) -> Result<(String, String, std::path::PathBuf, SweepOptions)> {
    // Where points run: given now, or (--resume) saved with the sweep.
    let given = request::given_path(args);
    Ok(match &args.resume {
        Some(dir) => {
            let (text, mut opts) = resume_inputs(dir)?;
            // Never ignored: options given with --resume replace the saved.
            if let Some(note) = opts.override_path(&given) {
                eprintln!("linerate: {note}");
            }
            (
                text,
                dir.join(SPEC).display().to_string(),
                dir.clone(),
                opts,
            )
        }
        None => {
            let Some(which) = &args.sweep else {
                anyhow::bail!(
                    "name a preset (linerate sweep --list) or a sweep file, or give --resume DIR"
                );
            };
            let (text, label) = match presets::get(which) {
                Some(t) => (t.to_string(), format!("preset {which}")),
                None => (
                    linerate_host::files::read_input_text(
                        std::path::Path::new(which),
                        linerate_report::sweep::saved::MAX_SPEC,
                        linerate_host::files::Trust::Any,
                    )
                    .with_context(|| {
                        format!("{which:?} is neither a preset (see `linerate sweep --list`) nor a readable file")
                    })?,
                    which.clone(),
                ),
            };
            let name = SweepSpec::parse(&text, &label)?.name;
            let extra = given
                .iter()
                .flat_map(|(flag, value)| [flag.to_string(), value.clone()])
                .collect();
            let dir = args.out.clone().unwrap_or_else(|| default_dir(&name));
            let opts = SweepOptions {
                quick: args.quick,
                extra,
                repeats: args.repeats,
                seed: Some(args.seed.unwrap_or_else(clock_seed)),
                confidence: args.confidence.clone(),
                iterations: args.iterations.clone(),
            };
            opts.rule().map_err(anyhow::Error::msg)?;
            (text, label, dir, opts)
        }
    })
}

/// A seed for a sweep's order when none is given: the clock's nanoseconds.
fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(fixed: &str, values: &str) -> SweepSpec {
        SweepSpec::parse(
            &format!(
                "name = \"t\"\nkind = \"stream\"\n[fixed]\n{fixed}\n[[axis]]\nname = \"size\"\nvalues = [{values}]\n"
            ),
            "t.toml",
        )
        .unwrap()
    }

    #[test]
    fn a_sweep_needs_root_unless_every_point_that_parses_runs_in_memory() {
        let opts = SweepOptions::default();
        let lo = "backend = \"loopback\"";
        assert!(all_in_memory(&spec(lo, "64, 128"), &opts));
        // The default engine (AF_XDP) needs root.
        assert!(!all_in_memory(&spec("", "64, 128"), &opts));
        assert!(!all_in_memory(&spec("backend = \"xdp\"", "64"), &opts));
        // A point that does not parse (63 bytes) is refused by the points'
        // checks before anything runs: it asks for no root, the others do.
        assert!(all_in_memory(&spec(lo, "64, 63"), &opts));
        assert!(!all_in_memory(&spec("", "64, 63"), &opts));
    }
}
