//! A finished run printed as its command line asks (`--json-stream`,
//! `--json`, `-q` or its table) and held against its `--expect` gates.

use std::process::ExitCode;

use linerate_results::{
    expect::{gate, Expectation, UNMET},
    run::RunResult,
};

use linerate_host::output;

/// How a run's result is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asked {
    /// As the last line of a stream of JSON lines (`--json-stream`).
    pub json_stream: bool,
    /// As JSON (`--json`).
    pub json: bool,
    /// One line (`-q`).
    pub quiet: bool,
}

/// Prints `result` as `run` asks and gives the exit status: 130 if
/// interrupted, 3 on a fault (`output::report`), else 4 when a gate is
/// unmet, or, without gates, when a counted stream (`--count`) delivered
/// fewer frames than it promised, else 0.
pub fn finish(result: &RunResult, run: Asked, gates: &[Expectation]) -> anyhow::Result<ExitCode> {
    let (interrupted, fault) = result.ended();
    let code = if run.json_stream {
        // The last line of `--json-stream`: {"event":"end","data":RESULT}.
        let line = serde_json::to_string(&serde_json::json!({"event": "end", "data": result}))?;
        output::report(result, false, || line + "\n", interrupted, fault)?
    } else {
        let text = || {
            if run.quiet {
                result.summary()
            } else {
                result.table()
            }
        };
        output::report(result, run.json, text, interrupted, fault)?
    };
    if gates.is_empty() && code == ExitCode::SUCCESS {
        if let Some((missing, promised)) = short_of_count(result) {
            eprintln!(
                "linerate: error: a counted run (--count) delivered fewer frames than it sent: {missing} of {promised} did not arrive (lost on the way or dropped at the sender); a gate (--expect) judges the run instead when given"
            );
            return Ok(ExitCode::from(UNMET));
        }
    }
    Ok(gate(code, Some(result), gates))
}

/// A counted stream's frames that did not arrive, of those promised.
fn short_of_count(result: &RunResult) -> Option<(u64, u64)> {
    match result {
        RunResult::Stream(s) => s.short_of_count(),
        RunResult::Rr(_) => None,
    }
}
