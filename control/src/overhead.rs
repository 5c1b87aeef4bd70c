//! Per-message overhead, as document 000 derives it: time per message
//! against message size is a line, `t = overhead + size / rate`; its
//! intercept is the system's overhead per message and its slope the
//! inverse of the asymptotic rate.

use std::{path::PathBuf, process::ExitCode};

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::Value;

use linerate_host::output;
use linerate_results::{fit::fit, run::RunResult};

/// (message size, time per message) from a `stream --message` or `rr`
/// result in JSON (as `--json` prints it).
pub fn point(result: &Value) -> Result<(f64, f64)> {
    let r = RunResult::deserialize(result)?;
    point_of(&r)
}

/// (message size, time per message) of a `stream --message` or `rr`
/// result: the figures a sweep's `derived.us_per_message` reads.
pub fn point_of(r: &RunResult) -> Result<(f64, f64)> {
    let size = r
        .message_size()
        .context("a stream result without --message has no message size")?;
    let time = r.time_per_message_s().context(match r {
        RunResult::Stream(_) => "no messages were received",
        RunResult::Rr(_) => "no transactions completed",
    })?;
    Ok((size as f64, time))
}

/// The most of one saved result read (a run's `--json` is a few KiB).
const MAX_RESULT: u64 = 16 << 20;

/// `linerate overhead FILE...`: the fit through saved results (each read
/// as every input is: a regular file, capped; a FIFO or a device refused).
pub fn command(files: &[PathBuf], json: bool) -> Result<ExitCode> {
    let mut points = Vec::new();
    for file in files {
        let text = linerate_host::files::read_input_text(
            file,
            MAX_RESULT,
            linerate_host::files::Trust::Any,
        )?;
        let value: Value = serde_json::from_str(&text).with_context(|| {
            format!("{} is not JSON (save results with --json)", file.display())
        })?;
        points.push(point(&value).with_context(|| file.display().to_string())?);
    }
    let fit =
        fit(&points).context("the fit needs results at two or more different message sizes")?;
    if json {
        output::emit_json(&fit)?;
    } else {
        output::emit(&format!(
            "per-message overhead {:.2} us, asymptotic rate {:.1} MB/s (r^2 {:.4}, {} points)\n",
            fit.overhead_us, fit.asymptotic_mb_s, fit.r_squared, fit.points
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Value {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/results")
            .join(name);
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    #[test]
    fn points_from_results() {
        let mut s = fixture("stream-message.json");
        s["frames"]["messages"]["message_bytes"] = 1000.into();
        s["receiver"]["messages_per_s"] = 500.0.into();
        assert_eq!(point(&s).unwrap(), (1000.0, 0.002));
        s["receiver"]["messages_per_s"] = 0.0.into();
        let e = point(&s).unwrap_err().to_string();
        assert_eq!(e, "no messages were received");
        let e = point(&fixture("stream.json")).unwrap_err().to_string();
        assert!(e.contains("without --message"), "{e}");
        let mut r = fixture("rr.json");
        for (k, v) in [
            ("request", 100),
            ("response", 100),
            ("concurrency", 2),
            ("flows", 1),
        ] {
            r["params"][k] = v.into();
        }
        r["transactions"]["per_s"] = 1000.0.into();
        assert_eq!(point(&r).unwrap(), (200.0, 0.002));
        let e = point(&serde_json::json!({"test": "x"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("a result of test \"x\""), "{e}");
    }
}
