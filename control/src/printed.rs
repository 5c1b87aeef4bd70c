//! A finished run printed as its command line asks (`--json-stream`,
//! `--json`, `-q` or its table) and held against its `--expect` gates.

use std::process::ExitCode;

use linerate_results::{
    expect::{gate, Expectation},
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
/// unmet, else 0.
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
    Ok(gate(code, Some(result), gates))
}
