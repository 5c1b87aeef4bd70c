//! What a run needs from the other host when it runs one side of a
//! two-host run: the agreed start, the other side's "done", and somewhere
//! to report live counters. `remote::role` implements it for an agent's
//! child process; a run on one host has no peer.

use std::time::Instant;

use linerate_datapath::stats::CounterSnapshot;
use linerate_ebpf::SteerStats;

/// The other host of a two-host run, as the side running here sees it.
pub trait Peer {
    /// Whether this host runs the path's tx end (stream: the senders, rr:
    /// the clients); else it runs the rx end (the receivers, responders).
    fn runs_tx(&self) -> bool;

    /// The agreed start: the tx end's workers start then (once the rx
    /// end's are bound), and the warm-up counts from it.
    fn start(&self) -> Instant;

    /// Whether the other host asked this side to finish (it is done).
    fn stop_asked(&self) -> bool;

    /// Offers this side's live counters; `read` takes them, and is called
    /// only when the peer wants them (it decides how often).
    fn live(&self, read: &dyn Fn() -> Live);
}

/// This side's counters at one instant, for a peer's live report.
#[derive(Debug, Clone, Default)]
pub struct Live {
    /// Each tx-end worker's counters (senders, clients).
    pub tx: Vec<CounterSnapshot>,
    /// Each rx-end worker's counters (receivers, responders).
    pub rx: Vec<CounterSnapshot>,
    /// The steering program's counters, when one runs here.
    pub xdp: Option<SteerStats>,
    /// Whether the tx end's workers verify the checksums of what they
    /// receive.
    pub tx_checksums: bool,
    /// Whether the rx end's do.
    pub rx_checksums: bool,
}
