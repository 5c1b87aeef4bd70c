//! The signals that end a run: a flag every run watches. Ctrl-C
//! (SIGINT), SIGTERM and SIGHUP through `ctrlc`; every other signal whose
//! default is to end the process and that can be caught (SIGQUIT,
//! SIGUSR1, SIGUSR2, SIGALRM, ...) is blocked and taken by a thread of its
//! own with sigwait, so that it too ends the run through its clean-up
//! (what was changed put back) instead of killing the process with the
//! kernel state changed. SIGKILL cannot be caught: the run's journal is
//! replayed by whoever comes next. SIGPIPE is ignored by Rust already.

use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};

use anyhow::{Context, Result};
use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow, Signal};

/// The signals that end a process by default, other than those `ctrlc`
/// handles (SIGINT, SIGTERM, SIGHUP) and those that cannot be caught or
/// report a fault of the program itself (SIGSEGV, SIGBUS, ...).
pub const ALSO_CAUGHT: [Signal; 10] = [
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGALRM,
    Signal::SIGVTALRM,
    Signal::SIGPROF,
    Signal::SIGXCPU,
    Signal::SIGXFSZ,
    Signal::SIGIO,
    Signal::SIGPWR,
];

fn on(flag: &AtomicBool, what: &str) {
    if flag.swap(true, Ordering::Relaxed) {
        eprintln!("linerate: {what} again, still cleaning up");
    } else {
        eprintln!("linerate: {what}, stopping the run");
    }
}

/// Ctrl-C, SIGTERM, SIGHUP and [`ALSO_CAUGHT`] set the returned flag: the
/// run ends early, puts back what it changed and reports what it
/// measured. Called before the run starts its threads (which inherit the
/// blocked signals).
pub fn on_signal() -> Result<Arc<AtomicBool>> {
    let interrupted = Arc::new(AtomicBool::new(false));
    let mut set = SigSet::empty();
    for s in ALSO_CAUGHT {
        set.add(s);
    }
    pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None)
        .context("blocking the signals that end a run")?;
    let flag = interrupted.clone();
    std::thread::Builder::new()
        .name("lr-signals".into())
        .spawn(move || loop {
            match set.wait() {
                Ok(s) => on(&flag, &format!("{} received", s.as_str())),
                Err(_) => return,
            }
        })
        .context("starting the signal thread")?;
    let flag = interrupted.clone();
    ctrlc::set_handler(move || on(&flag, "interrupted"))
        .context("installing the Ctrl-C handler")?;
    Ok(interrupted)
}
