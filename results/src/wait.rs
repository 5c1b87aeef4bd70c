//! What a run's workers did when they had nothing to do, and the kernel
//! settings that went with it (`setup.wait`).

use serde::{Deserialize, Serialize};

/// What a run's workers did when they had nothing to do, and the kernel
/// settings that went with it (`setup.wait`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WaitSetup {
    /// The tx end's (rr: the clients') mode.
    pub tx: String,
    /// The rx end's (rr: the responders') mode.
    pub rx: String,
    /// µs a receive or epoll_wait busy-polls (kernel busy-poll modes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_poll_usecs: Option<u32>,
    /// Packets per busy poll (SO_BUSY_POLL_BUDGET or the epoll context's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_poll_budget: Option<u16>,
    /// The NAPIs' `defer-hard-irqs` during the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defer_hard_irqs: Option<u32>,
    /// The NAPIs' `gro-flush-timeout` during the run, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gro_flush_timeout_ns: Option<u64>,
    /// The NAPIs' `irq-suspend-timeout` during the run, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_suspend_timeout_ns: Option<u64>,
    /// The NAPIs busy-polled, per interface.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub napi: Vec<NapiUsed>,
}

/// The NAPI instances of one interface a run busy-polled.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NapiUsed {
    /// The interface.
    pub iface: String,
    /// Its NAPI ids.
    pub ids: Vec<u32>,
    /// Whether their settings were changed for the run (and put back).
    pub set: bool,
}

impl WaitSetup {
    /// Whether nothing was recorded (a result written before the wait
    /// modes were reported reads so, and is written back so).
    pub fn is_unset(&self) -> bool {
        *self == Self::default()
    }

    /// One line for the text output: "busy-poll / irq-suspend (50 µs,
    /// budget 64, defer 100, gro-flush 20 µs, irq-suspend 20 ms; NAPI
    /// lr-b0: 8193)".
    pub fn line(&self) -> String {
        let mut s = format!("tx {}, rx {}", self.tx, self.rx);
        let mut parts = Vec::new();
        if let Some(u) = self.busy_poll_usecs {
            parts.push(format!("busy poll {u} us"));
        }
        if let Some(b) = self.busy_poll_budget {
            parts.push(format!("budget {b}"));
        }
        if let Some(d) = self.defer_hard_irqs {
            parts.push(format!("defer-hard-irqs {d}"));
        }
        if let Some(g) = self.gro_flush_timeout_ns {
            parts.push(format!("gro-flush-timeout {g} ns"));
        }
        if let Some(t) = self.irq_suspend_timeout_ns {
            parts.push(format!("irq-suspend-timeout {t} ns"));
        }
        for n in &self.napi {
            let ids: Vec<String> = n.ids.iter().map(u32::to_string).collect();
            parts.push(format!("NAPI {} {}", n.iface, ids.join(",")));
        }
        if !parts.is_empty() {
            s.push_str(&format!(" ({})", parts.join(", ")));
        }
        s
    }
}
