//! The two ends of a run's path, and what a command calls their workers.

use super::peer::Peer;

/// One thing for each end of the path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ends<T> {
    /// The tx end's (stream: senders, rr: clients).
    pub tx: T,
    /// The rx end's (receivers, responders).
    pub rx: T,
}

impl Ends<bool> {
    /// The ends whose workers run on this host: both, or the peer's
    /// other one.
    pub fn here(peer: Option<&dyn Peer>) -> Self {
        peer.map_or(Self { tx: true, rx: true }, |p| Self {
            tx: p.runs_tx(),
            rx: !p.runs_tx(),
        })
    }
}

/// What a command calls the workers of each end, in messages.
#[derive(Debug, Clone, Copy)]
pub struct WorkerNames {
    /// "sender", "client".
    pub tx: &'static str,
    /// "receiver", "responder".
    pub rx: &'static str,
}
