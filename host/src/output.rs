//! Results on stdout: written whole and checked, or an error that names
//! where they were going. A reader that went away on purpose (`| head`) is
//! not an error; a full disk, `/dev/full` or a closed stdout are.

use std::{
    fs::File,
    io::{self, Write},
    os::fd::AsFd,
    process::ExitCode,
};

/// A result that could not be written to stdout.
#[derive(Debug, thiserror::Error)]
#[error("writing the result to stdout{} failed: {error}{}", target.as_ref().map(|t| format!(" ({t})")).unwrap_or_default(), hint(error))]
pub struct OutputError {
    /// Where stdout leads (a file's path, `pipe:[N]`), when known.
    pub target: Option<String>,
    /// What the kernel said.
    pub error: io::Error,
}

fn hint(e: &io::Error) -> &'static str {
    use nix::errno::Errno;
    match e.raw_os_error().map(Errno::from_raw) {
        Some(Errno::EBADF) => {
            ": stdout is closed; give the command somewhere to write (e.g. > FILE)"
        }
        Some(Errno::ENOSPC) => ": free some space, or write the result elsewhere",
        _ => "",
    }
}

/// How a write ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Every byte is out.
    All,
    /// The reader went away (EPIPE): the figures had nowhere to go, which
    /// is the reader's choice (`| head`), not an error of the run.
    ReaderGone,
}

/// Where fd 1 leads, as /proc/self/fd/1 tells it.
fn target() -> Option<String> {
    std::fs::read_link("/proc/self/fd/1")
        .ok()
        .map(|p| p.display().to_string())
}

fn fail(error: io::Error) -> OutputError {
    OutputError {
        target: target(),
        error,
    }
}

/// Whether fd 1 was closed when the process was exec'd, as the binary's
/// pre-main check saw it (`note_stdout_at_exec`). Rust's runtime opens
/// /dev/null read-write on a closed fd 1 before main, which looks like a
/// caller's read-write /dev/null (Python's `subprocess.DEVNULL`, systemd's
/// `StandardOutput=null`): only a look before the runtime tells them apart.
static CLOSED_AT_EXEC: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records whether fd 1 was open at exec: called by the binary from a
/// constructor that runs before Rust's runtime (see control's main.rs).
pub fn note_stdout_at_exec() {
    let closed =
        nix::fcntl::fcntl(1, nix::fcntl::FcntlArg::F_GETFD) == Err(nix::errno::Errno::EBADF);
    CLOSED_AT_EXEC.store(closed, std::sync::atomic::Ordering::Relaxed);
}

fn closed_at_start() -> bool {
    CLOSED_AT_EXEC.load(std::sync::atomic::Ordering::Relaxed)
}

/// Our own handle on fd 1: Rust's `stdout()` treats a closed fd 1 (EBADF)
/// as a sink that swallows everything, this one does not.
fn handle() -> Result<File, OutputError> {
    // Anything printed through std's buffer goes first.
    let _ = io::stdout().flush();
    if closed_at_start() {
        return Err(OutputError {
            target: None,
            error: io::Error::from_raw_os_error(nix::errno::Errno::EBADF as i32),
        });
    }
    io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map(File::from)
        .map_err(fail)
}

/// Fails when stdout is closed, before a run whose result would have
/// nowhere to go.
pub fn check() -> Result<(), OutputError> {
    handle().map(drop)
}

/// Writes `text` to stdout whole, then, when stdout is a regular file,
/// flushes it to the disk (so that a full disk shows here, not later).
pub fn print(text: &str) -> Result<Written, OutputError> {
    let mut f = handle()?;
    match f.write_all(text.as_bytes()) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(Written::ReaderGone),
        Err(e) => return Err(fail(e)),
    }
    if f.metadata().is_ok_and(|m| m.file_type().is_file()) {
        f.sync_data().map_err(fail)?;
    }
    Ok(Written::All)
}

/// Writes a result to stdout, whole or with an error naming where it was
/// going. A reader that went away (`| head`, an agent that died) is not an
/// error of the run: the figures had nowhere to go, nothing else changes.
pub fn emit(text: &str) -> anyhow::Result<()> {
    print(text)?;
    Ok(())
}

/// A value as the pretty JSON every command prints, one line feed after.
pub fn emit_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    emit(&(serde_json::to_string_pretty(value)? + "\n"))
}

/// Prints a result as JSON or as its table; an interrupted run exits 130,
/// one ended by a fault of the path 3, after the figures so far.
pub fn report(
    result: &impl serde::Serialize,
    json: bool,
    table: impl FnOnce() -> String,
    interrupted: bool,
    fault: &Option<String>,
) -> anyhow::Result<ExitCode> {
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
    Ok(exit_code(interrupted))
}

/// The exit status of a sweep or an rfc2544 run that finished (its report
/// written) with runs or tests that failed.
pub const FAILED: u8 = 4;

/// Says on stderr how many of `total` runs (or tests) failed, naming the
/// first; 130 when interrupted, [`FAILED`] when any failed, else success.
pub fn failures(
    interrupted: bool,
    failed: u64,
    total: u64,
    what: &str,
    first: Option<&str>,
    rerun: &str,
) -> ExitCode {
    if failed > 0 {
        eprintln!(
            "linerate: error: {failed} of {total} {what} failed{}; the report shows them as failed; {rerun}",
            first.map(|f| format!(" (the first: {f})")).unwrap_or_default()
        );
    }
    if interrupted {
        ExitCode::from(130)
    } else if failed > 0 {
        ExitCode::from(FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

/// 130 for a run ended by Ctrl-C or SIGTERM, else success.
pub fn exit_code(interrupted: bool) -> ExitCode {
    if interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_target_and_the_fix() {
        let e = OutputError {
            target: Some("/dev/full".into()),
            error: io::Error::from_raw_os_error(nix::errno::Errno::ENOSPC as i32),
        };
        let s = e.to_string();
        assert!(
            s.starts_with(
                "writing the result to stdout (/dev/full) failed: No space left on device"
            ),
            "{s}"
        );
        assert!(
            s.ends_with("free some space, or write the result elsewhere"),
            "{s}"
        );
        let e = OutputError {
            target: None,
            error: io::Error::from_raw_os_error(nix::errno::Errno::EBADF as i32),
        };
        assert!(e.to_string().contains("stdout is closed"), "{e}");
    }
}
