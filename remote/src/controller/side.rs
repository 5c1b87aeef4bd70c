//! One side's run on its agent: its lease renewed (the answer is its
//! status), stopped when asked, and what went wrong with it.

use crate::api::RunStatus;
use crate::client::{AgentError, Remote};
use linerate_results::run::RunResult;

/// One side's run on its agent.
pub(super) struct Side<'a> {
    pub(super) remote: &'a Remote,
    /// The agent's id of the run, once it was created.
    pub(super) id: Option<String>,
    /// Its status once it ended.
    pub(super) end: Option<RunStatus>,
    /// The agent stopped answering.
    pub(super) lost: Option<AgentError>,
    stop_sent: bool,
    /// This controller asked the side to end at once.
    stopped_now: bool,
}

impl<'a> Side<'a> {
    /// A side not started yet.
    pub(super) fn new(remote: &'a Remote) -> Self {
        Self {
            remote,
            id: None,
            end: None,
            lost: None,
            stop_sent: false,
            stopped_now: false,
        }
    }

    pub(super) fn going(&self) -> bool {
        self.id.is_some() && self.end.is_none() && self.lost.is_none()
    }

    /// Lost, or ended other than done.
    pub(super) fn failed(&self) -> bool {
        self.lost.is_some() || self.end.as_ref().is_some_and(|e| e.state != "done")
    }

    /// Stopped at once by this controller (because the other side failed,
    /// or on Ctrl-C): no news of its own.
    pub(super) fn stopped_by_us(&self) -> bool {
        self.lost.is_none()
            && self.stopped_now
            && self.end.as_ref().is_some_and(|e| e.state == "stopped")
    }

    /// Renews the lease; its answer is the run's status.
    pub(super) fn poll(&mut self) {
        let Some(id) = &self.id else { return };
        if !self.going() {
            return;
        }
        match self
            .remote
            .post_empty::<RunStatus>(&format!("/v1/runs/{id}/lease"), "renewing the lease")
        {
            Ok(st) if st.state == "running" => {}
            Ok(st) => self.end = Some(st),
            Err(e) => self.lost = Some(e),
        }
    }

    /// Asks the side to finish (now: at once).
    pub(super) fn stop(&mut self, now: bool) {
        let Some(id) = &self.id else { return };
        if !self.going() || (self.stop_sent && !now) {
            return;
        }
        self.stop_sent = true;
        self.stopped_now |= now;
        let path = format!("/v1/runs/{id}/stop{}", if now { "?now=true" } else { "" });
        if let Err(e) = self
            .remote
            .post_empty::<RunStatus>(&path, "the stop request")
        {
            self.lost = Some(e);
        }
    }

    pub(super) fn result(&self) -> Option<&RunResult> {
        self.end.as_ref().and_then(|s| s.result.as_ref())
    }

    /// Why the side did not end well, if it did not.
    pub(super) fn problem(&self) -> Option<String> {
        if let Some(e) = &self.lost {
            return Some(format!("{e} (the agent stopped answering during the run)"));
        }
        // Any token holder may stop a run: one this controller did not ask
        // to end says who did.
        let not_ours = match &self.end {
            Some(st) if st.state == "stopped" && !self.stopped_now => st.stopped_by.is_some(),
            Some(st) if st.state == "done" && !self.stop_sent => st.stopped_by.is_some(),
            _ => false,
        };
        match &self.end {
            Some(st) if st.state == "done" && not_ours => Some(format!(
                "{} {}: the {} side was asked to finish early by {}, not by this controller: its figures end there",
                self.remote.name,
                self.remote.url,
                st.role,
                st.stopped_by.clone().unwrap_or_default()
            )),
            Some(st) if st.state == "done" => None,
            Some(st) => Some(format!(
                "{} {}: the {} side {}: {}{}",
                self.remote.name,
                self.remote.url,
                st.role,
                st.state,
                st.error.clone().unwrap_or_default(),
                if not_ours {
                    " (not by this controller: another client holding the token stopped the run)"
                } else {
                    ""
                }
            )),
            None => Some(format!(
                "{} {}: the run did not end in time",
                self.remote.name, self.remote.url
            )),
        }
    }
}
