//! The control API's messages, shared by the agent and the controller.

use serde::{Deserialize, Serialize};

use linerate_results::run::RunResult;

/// Version of the API; the controller refuses an agent with another.
pub const API_VERSION: u32 = 1;

/// What starts a live-counter line on an agent's child's stderr (the
/// child writes them, the agent reads them for /metrics).
pub const LIVE_PREFIX: &str = "LIVE ";

/// `GET /v1/version`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Version {
    /// linerate's version.
    pub version: String,
    /// API version.
    pub api: u32,
}

impl Version {
    /// This build's.
    pub fn ours() -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION").to_string(),
            api: API_VERSION,
        }
    }
}

/// `GET /v1/clock`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Clock {
    /// The agent's wall clock, ns since the Unix epoch.
    pub unix_ns: u64,
    /// Its CLOCK_MONOTONIC at the same instant, ns (the clock frames are
    /// stamped with; 0 from an agent that does not say).
    #[serde(default)]
    pub monotonic_ns: u64,
}

pub use linerate_host::mac::Mac;

/// The commands a run request may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Test {
    /// `linerate stream`.
    Stream,
    /// `linerate rr`.
    Rr,
}

impl Test {
    /// The command's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stream => "stream",
            Self::Rr => "rr",
        }
    }
}

/// The side a run request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The sender (rr: the client).
    #[serde(alias = "client")]
    Tx,
    /// The receiver (rr: the responder).
    #[serde(alias = "responder")]
    Rx,
}

impl Role {
    /// The name used in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tx => "tx",
            Self::Rx => "rx",
        }
    }
}

/// `GET /v1/ifaces/{name}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Iface {
    /// Name.
    pub name: String,
    /// MAC, aa:bb:cc:dd:ee:ff.
    pub mac: Mac,
    /// IPv4 address.
    pub ipv4: std::net::Ipv4Addr,
    /// MTU.
    pub mtu: u32,
    /// Receive queues.
    pub queues: u32,
}

/// The other host's interface, as a role needs it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Peer {
    /// MAC.
    pub mac: Mac,
    /// IPv4 address.
    pub ip: std::net::Ipv4Addr,
}

/// `POST /v1/runs`. A field the API does not have is refused (400 naming
/// it), as is a value of the wrong form (the field's path named).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// "stream" or "rr".
    pub test: Test,
    /// "tx" (rr: client) or "rx" (rr: responder).
    pub role: Role,
    /// The command's own options, as on the command line (without
    /// interfaces, agents and --json).
    pub args: Vec<String>,
    /// This host's interface.
    pub iface: String,
    /// Its namespace on this host.
    pub netns: Option<String>,
    /// The other host's interface.
    pub peer: Peer,
    /// Start, ns since the Unix epoch on the agent's clock.
    pub start_at_ns: u64,
    /// The run is stopped when no renewal came for this long.
    pub lease_ms: u64,
    /// The receiving side: its CLOCK_MONOTONIC minus the sending host's,
    /// ns, taken off every one-way latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_offset_ns: Option<i64>,
    /// The fleet pair this run belongs to (a name of the inventory's rules:
    /// docs/fleet.md), labelled on the agent's metrics; none for one pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<String>,
}

/// `POST /v1/runs` answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Created {
    /// Run id.
    pub id: String,
}

/// `GET /v1/runs/{id}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunStatus {
    /// Run id.
    pub id: String,
    /// "stream" or "rr".
    pub test: String,
    /// "tx" or "rx".
    pub role: String,
    /// "running", "done", "failed", "stopped".
    pub state: String,
    /// The side's result (the shape of a local run's JSON), when it ended
    /// with one.
    pub result: Option<RunResult>,
    /// Why it failed or was stopped.
    pub error: Option<String>,
    /// Exit status of the side's process.
    pub exit_code: Option<i32>,
    /// The last stop request the agent was sent for this run: from which
    /// address, and whether it ended the run at once ("a stop request from
    /// 198.51.100.1:40022 (at once)"). Any token holder may stop a run: a
    /// controller that sent none knows someone else stopped its run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
}

/// Who holds a busy agent (in a 409 answer).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Holder {
    /// Run id.
    pub id: String,
    /// "stream" or "rr".
    pub test: String,
    /// "tx" or "rx".
    pub role: String,
    /// When the run was started, ns since the Unix epoch (agent's clock).
    pub since_unix_ns: u64,
    /// The address the run request came from.
    pub by: String,
}

/// Error answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApiError {
    /// What went wrong and how to fix it.
    pub error: String,
    /// 409: the run that holds the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<Holder>,
}
