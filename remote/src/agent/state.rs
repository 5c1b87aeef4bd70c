//! The agent's state: the one run slot, its child and lease, and the
//! limits every server of it keeps.

use super::{allow::Allow, child::Runs};
use crate::api::{Holder, RunStatus};
use std::{
    net::SocketAddr,
    path::PathBuf,
    process::ChildStdin,
    sync::{atomic::AtomicU64, Arc, Mutex, MutexGuard},
    thread,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

/// After SIGTERM, how long a child gets before SIGKILL.
pub(super) const KILL_AFTER: Duration = Duration::from_secs(5);

/// Leases the agent accepts.
pub(super) const LEASE_MS: std::ops::RangeInclusive<u64> = 500..=120_000;

/// Lines of a child's stderr kept for error messages.
pub(super) const TAIL: usize = 20;

/// Largest request body (a run request is well under a kilobyte).
pub const BODY_LIMIT: usize = 64 * 1024;

/// A body over BODY_LIMIT is read (and dropped) up to this before the 413.
pub(super) const DRAIN_LIMIT: usize = 1024 * 1024;

/// Connections over the cap that get a second to read their 503.
pub(super) const LINGERING: usize = 32;

/// Open files kept free of connections: the runs' pipes, the doctor, logs.
pub(super) const FD_RESERVE: u64 = 256 + LINGERING as u64;

/// The agent's state: its token, what it may touch, and the one run it
/// may have.
pub(super) struct Shared {
    pub(super) token: String,
    pub(super) exe: PathBuf,
    pub(super) run: Mutex<Option<Slot>>,
    pub(super) seq: AtomicU64,
    /// The interfaces requests may name, and whether --force.
    pub(super) allow: Allow,
    /// A request's time limit (body and answer).
    pub(super) request_timeout: Duration,
    /// What a run request's options mean (the binary's command line).
    pub(super) runs: Arc<dyn Runs>,
}

/// A run, going or ended (kept until the next one replaces it).
pub(super) struct Slot {
    pub(super) id: String,
    pub(super) test: String,
    pub(super) role: String,
    /// The fleet pair it belongs to (the request's), and this host's
    /// interface: labels of /metrics.
    pub(super) pair: Option<String>,
    pub(super) iface: String,
    /// When it was started, and from which address.
    pub(super) started: SystemTime,
    pub(super) by: SocketAddr,
    /// The last stop request: from where, and how.
    pub(super) stopped_by: Option<String>,
    pub(super) state: &'static str,
    pub(super) pid: i32,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) lease: Duration,
    pub(super) lease_until: Instant,
    /// Why the agent ends the child, once it decided to.
    pub(super) ending: Option<String>,
    pub(super) live: Option<linerate_results::parts::Live>,
    pub(super) result: Option<linerate_results::run::RunResult>,
    pub(super) error: Option<String>,
    pub(super) exit_code: Option<i32>,
    pub(super) tail: Vec<String>,
}

impl Slot {
    pub(super) fn active(&self) -> bool {
        self.state == "running"
    }

    pub(super) fn status(&self) -> RunStatus {
        RunStatus {
            id: self.id.clone(),
            test: self.test.clone(),
            role: self.role.clone(),
            state: self.state.to_string(),
            result: self.result.clone(),
            error: self.error.clone(),
            exit_code: self.exit_code,
            stopped_by: self.stopped_by.clone(),
        }
    }

    pub(super) fn holder(&self) -> Holder {
        Holder {
            id: self.id.clone(),
            test: self.test.clone(),
            role: self.role.clone(),
            since_unix_ns: self
                .started
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
            by: self.by.to_string(),
        }
    }

    /// "run ID (stream rx, started TIME, Ns ago, by ADDR)".
    pub(super) fn describe(&self) -> String {
        let ago = self.started.elapsed().unwrap_or_default().as_secs_f64();
        format!(
            "run {} ({} {}, started {} UTC, {ago:.1} s ago, by {})",
            self.id,
            self.test,
            self.role,
            humantime::format_rfc3339_seconds(self.started)
                .to_string()
                .trim_end_matches('Z')
                .replace('T', " "),
            self.by
        )
    }
}

impl Shared {
    pub(super) fn slot(&self) -> MutexGuard<'_, Option<Slot>> {
        self.run.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Asks the running child, if any, to end now; waits for it, bounded.
    pub(super) fn end_run(&self, why: &str) {
        let active = {
            let mut g = self.slot();
            match g.as_mut().filter(|s| s.active()) {
                Some(s) => {
                    s.ending.get_or_insert_with(|| why.to_string());
                    true
                }
                None => false,
            }
        };
        if !active {
            return;
        }
        let end = Instant::now() + KILL_AFTER + Duration::from_secs(2);
        while Instant::now() < end && self.slot().as_ref().is_some_and(Slot::active) {
            thread::sleep(Duration::from_millis(50));
        }
    }
}
