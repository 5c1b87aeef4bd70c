//! Ctrl-C and SIGTERM: a flag every run watches.

use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};

use anyhow::{Context, Result};

/// Ctrl-C and SIGTERM set the returned flag: the run ends early and
/// reports what it measured.
pub fn on_signal() -> Result<Arc<AtomicBool>> {
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
