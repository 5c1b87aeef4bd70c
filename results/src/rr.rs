//! The figures of one request/response run, as printed and as JSON, and
//! the pure functions a local run and the two-host merge build them with.

use linerate_counters::steer::SteerStats;
use serde::{Deserialize, Deserializer, Serialize};

pub use crate::latency::Latency;
use crate::{
    envelope::Envelope,
    system::CoreUse,
    {
        parts::{self, figures, us_per_transaction, CpuFigures},
        two_host::HostsCpu,
    },
};

fn rr_test<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    parts::one_of(d, "test", &["rr"])
}

/// Everything `linerate rr` reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RrResult {
    /// "rr".
    #[serde(deserialize_with = "rr_test")]
    pub test: parts::Name,
    /// What a result of either test holds (version, host, window, how the
    /// run ended, workers, interfaces, agents), its fields in this object.
    #[serde(flatten)]
    pub common: Envelope,
    /// Parameters.
    pub params: RrParams,
    /// Set-up as it happened.
    pub setup: RrSetup,
    /// Transactions.
    pub transactions: Transactions,
    /// Response times over the window.
    pub latency: Latency,
    /// CPU over the window.
    pub cpu: RrCpu,
    /// Steering program counters (client side, responder side).
    pub xdp: XdpCounters,
}

/// Parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RrParams {
    /// Request bytes.
    pub request: usize,
    /// Response bytes.
    pub response: usize,
    /// Transactions in flight per flow.
    pub concurrency: u32,
    /// Flows.
    pub flows: u32,
    /// Queues.
    pub queues: u32,
    /// Timeout, ms.
    pub timeout_ms: f64,
    /// Transactions per flow, when fixed.
    pub count: Option<u64>,
    /// Who answered: "af-xdp", "xdp", "udp socket", "tcp socket".
    pub responder: String,
    /// Data path: "xdp", "udp" or "tcp".
    pub backend: String,
    /// Warm-up, s.
    pub warmup_s: f64,
    /// Duration asked for, s.
    pub duration_s: f64,
    /// MTU.
    pub mtu: u32,
    /// Client wait mode.
    pub client_wait: String,
    /// Responder wait mode.
    pub responder_wait: String,
    /// Client cores.
    pub client_cores: Vec<usize>,
    /// Responder cores.
    pub responder_cores: Vec<usize>,
    /// Client interface.
    pub client_iface: String,
    /// Its namespace.
    pub client_netns: Option<String>,
    /// Responder interface.
    pub responder_iface: String,
    /// Its namespace.
    pub responder_netns: Option<String>,
    /// Roles swapped (-r).
    pub reverse: bool,
}

/// Set-up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RrSetup {
    /// Client sockets' bind mode.
    pub client_bind_mode: String,
    /// Responder sockets' bind mode (none with the XDP responder).
    pub responder_bind_mode: Option<String>,
    /// Why zero-copy was not used.
    pub zero_copy_refused: Option<String>,
    /// XDP attach mode.
    pub xdp_mode: String,
    /// Frames per request.
    pub request_frames: usize,
    /// Frames per response.
    pub response_frames: usize,
    /// NAPI threads pinned (pid, core).
    pub napi_threads: Vec<(i32, usize)>,
    /// NAPI mode set for the run.
    pub napi: Option<String>,
    /// Scheduling set on the pinned NAPI threads (`--napi-priority`,
    /// e.g. "fifo:50"; none: left as it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub napi_priority: Option<String>,
    /// Driver of the receiving interface (veth, ixgbe, ...), as the link reports it.
    pub driver: Option<String>,
    /// Where the workers and NAPI ran, and who chose it (none in results
    /// written before it was reported).
    #[serde(default)]
    pub placement: String,
    /// The wait modes and their kernel busy-poll settings (none in results
    /// written before they were reported).
    #[serde(default, skip_serializing_if = "crate::wait::WaitSetup::is_unset")]
    pub wait: crate::wait::WaitSetup,
}

/// Transaction counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Transactions {
    /// Completed in the window: timed by the clients, one response time
    /// each in `latency` (a counted run that ended within its warm-up:
    /// all the run's, untimed).
    pub completed: u64,
    /// Per second over the window.
    pub per_s: f64,
    /// Completed over the whole run.
    pub total: u64,
    /// Timed out (and retried) over the whole run.
    pub timeouts: u64,
    /// Responses that came after their transaction timed out.
    pub late: u64,
    /// Requests the responders answered.
    pub answered: u64,
}

/// CPU over the window, with the service demand per transaction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RrCpu {
    /// Every core (of both hosts, labelled, in a two-host result).
    pub per_core: Vec<CoreUse>,
    /// Client cores.
    pub client: SideCpu,
    /// Responder cores.
    pub responder: SideCpu,
    /// All cores (of both hosts: its core list then stays empty).
    pub total: SideCpu,
    /// Two hosts: each host's CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<HostsCpu>,
}

/// CPU of a set of cores per transaction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SideCpu {
    /// CPU of those cores (and ms/MB of request+response bytes).
    #[serde(flatten)]
    pub cpu: CpuFigures,
    /// Microseconds of CPU per transaction, as netperf's RR service demand.
    pub us_per_transaction: Option<f64>,
}

impl SideCpu {
    /// From core use, transaction rate and message MB/s; with linerate's
    /// own time on those cores when measured (then the headline: see
    /// [`CpuFigures::with_own`]).
    pub fn new(
        uses: &[CoreUse],
        cores: &[usize],
        own: Option<crate::own::OwnCpu>,
        tps: f64,
        mb_s: f64,
    ) -> Self {
        let mut cpu = figures(uses, cores, mb_s);
        if let Some(own) = own {
            cpu = cpu.with_own(own, mb_s);
        }
        Self {
            us_per_transaction: us_per_transaction(cpu.cpu_pct, cpu.cores.len(), tps),
            cpu,
        }
    }
}

/// MB/s of requests and responses at `tps` transactions/s: what the
/// service demand in ms/MB of an rr run counts.
pub fn transaction_mb_s(tps: f64, request: usize, response: usize) -> f64 {
    tps * (request + response) as f64 / 1e6
}

impl RrResult {
    /// MB/s of requests and responses over the window.
    pub fn mb_s(&self) -> f64 {
        transaction_mb_s(
            self.transactions.per_s,
            self.params.request,
            self.params.response,
        )
    }

    /// Time per message (a transaction), seconds: the transactions in
    /// flight over the transactions per second (when any completed).
    pub fn time_per_message_s(&self) -> Option<f64> {
        let in_flight = f64::from(self.params.concurrency) * f64::from(self.params.flows);
        (self.transactions.per_s > 0.0).then(|| in_flight / self.transactions.per_s)
    }
}

/// Steering counters of both sides over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct XdpCounters {
    /// On the client's interface (responses).
    pub client: SteerStats,
    /// On the responder's interface (requests).
    pub responder: SteerStats,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_demand_per_transaction() {
        let uses = [
            CoreUse {
                core: 0,
                busy: 50.0,
                ..Default::default()
            },
            CoreUse {
                core: 1,
                busy: 100.0,
                ..Default::default()
            },
        ];
        // 1.5 cores busy for 100,000 transactions/s: 15 us each.
        let s = SideCpu::new(&uses, &[], None, 100_000.0, 0.0);
        assert!((s.us_per_transaction.unwrap() - 15.0).abs() < 1e-9);
        let c = SideCpu::new(&uses, &[0], None, 100_000.0, 0.0);
        assert!((c.us_per_transaction.unwrap() - 5.0).abs() < 1e-9);
        assert_eq!(
            SideCpu::new(&uses, &[], None, 0.0, 0.0).us_per_transaction,
            None
        );
    }
}
