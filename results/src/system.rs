//! What a result says of the system it was measured on: the host (kernel,
//! cores, CPU model), each core's use over the window, an interface's own
//! counters. The types only: `linerate-host` reads them from the system.

use serde::{Deserialize, Serialize};

/// The host a result was measured on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// `uname -r`.
    pub kernel: String,
    /// Cores online.
    pub cpus: usize,
    /// CPU model.
    pub cpu_model: String,
}

/// Which host of a two-host run a core is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Host {
    /// The sending (rr: client's) host.
    Tx,
    /// The receiving (rr: responder's) host.
    Rx,
}

/// One core's use over a window, in percent of the window.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct CoreUse {
    /// Core number.
    pub core: usize,
    /// User time (nice included).
    pub user: f64,
    /// System time.
    pub system: f64,
    /// Softirq time.
    pub softirq: f64,
    /// Hard irq time.
    pub irq: f64,
    /// Stolen by the hypervisor.
    pub steal: f64,
    /// Everything but idle and iowait.
    pub busy: f64,
    /// Its host, in a two-host result (none on one host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
}

/// The interface's own counters.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct IfCounters {
    /// Packets received.
    pub rx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Receive drops.
    pub rx_dropped: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Send drops.
    pub tx_dropped: u64,
}

impl IfCounters {
    /// What accumulated between `earlier` and `self`.
    pub fn since(&self, e: &Self) -> Self {
        Self {
            rx_packets: self.rx_packets.saturating_sub(e.rx_packets),
            rx_bytes: self.rx_bytes.saturating_sub(e.rx_bytes),
            rx_dropped: self.rx_dropped.saturating_sub(e.rx_dropped),
            tx_packets: self.tx_packets.saturating_sub(e.tx_packets),
            tx_bytes: self.tx_bytes.saturating_sub(e.tx_bytes),
            tx_dropped: self.tx_dropped.saturating_sub(e.tx_dropped),
        }
    }
}

/// Whether the sender's and the receiver's cores overlap (their CPU
/// figures are then those of the same cores).
pub fn cores_shared(tx_cores: &[usize], rx_cores: &[usize]) -> bool {
    tx_cores.iter().any(|c| rx_cores.contains(c))
}
