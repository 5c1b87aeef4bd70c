//! What every result is made of, stream or rr, local or two-host: the
//! interfaces' counters, the workers' reports, CPU figures with the one
//! service demand formula, and the live counters an agent reads while a
//! side runs.

use linerate_counters::steer::SteerStats;
use linerate_counters::{socket::XskStats, stats::CounterSnapshot};
use serde::{de::Error as _, Deserialize, Deserializer, Serialize};

use crate::{
    system::IfCounters,
    system::{CoreUse, Host},
};

/// The counter of received frames whose checksum was wrong: measured only
/// where the receiving workers verify checksums (see
/// [`crate::run::RunResult::checks_checksums`]); elsewhere none, not 0.
pub const BAD_CHECKSUM: &str = "bad_checksum";

/// `ip -s link` counters of both ends over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InterfaceCounters {
    /// Sending interface.
    pub tx: IfCounters,
    /// Receiving interface.
    pub rx: IfCounters,
}

/// The roles a worker reports under: stream senders and receivers, rr
/// clients and responders.
pub const WORKER_ROLES: [&str; 4] = ["tx", "rx", "client", "responder"];

/// A name of a closed vocabulary (a result's test, a worker's role): static
/// when built, read back by [`one_of`] as the static name it is. (Behind
/// an alias, serde does not take it for a string borrowed from its input,
/// which would keep results from being read from owned JSON.)
pub type Name = &'static str;

/// One worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerReport {
    /// "tx" or "rx" ("client" or "responder" in rr).
    #[serde(deserialize_with = "worker_role")]
    pub role: Name,
    /// Queue.
    pub queue: u32,
    /// Core it ran on.
    pub core: Option<usize>,
    /// Thread id.
    pub tid: i32,
    /// Counters over the window.
    pub window: CounterSnapshot,
    /// Counters over the whole run.
    pub total: CounterSnapshot,
    /// XDP_STATISTICS.
    pub xsk: XskStats,
}

impl WorkerReport {
    /// The side it works on: tx for senders and rr clients, rx for
    /// receivers and responders.
    pub fn side(&self) -> Host {
        side_of(self.role)
    }
}

/// The side of a worker role ("tx", "client": tx; "rx", "responder": rx).
pub fn side_of(role: &str) -> Host {
    match role {
        "tx" | "client" => Host::Tx,
        _ => Host::Rx,
    }
}

/// Reads a string that must be one of `names`, as the static name (a
/// result's closed vocabularies: its test, its workers' roles).
pub fn one_of<'de, D: Deserializer<'de>>(
    d: D,
    what: &str,
    names: &[&'static str],
) -> Result<&'static str, D::Error> {
    let s = std::borrow::Cow::<str>::deserialize(d)?;
    names
        .iter()
        .copied()
        .find(|n| *n == s)
        .ok_or_else(|| D::Error::custom(format!("{what} {s:?} is none of {names:?}")))
}

fn worker_role<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    one_of(d, "worker role", &WORKER_ROLES)
}

/// CPU use of a set of cores and its service demand.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuFigures {
    /// Cores counted (none in a two-host total: the cores of both hosts).
    pub cores: Vec<usize>,
    /// Mean percent of those cores that linerate used: its own time when
    /// measured ([`CpuSource::Own`]), else the cores' busy share from
    /// /proc/stat ([`CpuSource::Busy`], every result before own time).
    pub cpu_pct: f64,
    /// Milliseconds of CPU per MB (10^6 B) moved, from `cpu_pct`:
    /// `CPU% x nCPU x 10 / (MB/s)`, as in 001.
    pub service_demand_ms_per_mb: Option<f64>,
    /// What `cpu_pct` and the service demand count.
    #[serde(default, skip_serializing_if = "CpuSource::is_busy")]
    pub cpu_source: CpuSource,
    /// The cores' busy share from /proc/stat (whatever ran there, steal
    /// included), when `cpu_pct` is linerate's own time: what `cpu_pct`
    /// was before own time, kept so that earlier results still compare.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_pct: Option<f64>,
    /// The service demand of `busy_pct`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_service_demand_ms_per_mb: Option<f64>,
    /// linerate's own time on those cores, mean percent per core
    /// (`own::own_on`; absent where not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_pct: Option<f64>,
    /// Other tasks' time on those cores, mean percent per core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference_pct: Option<f64>,
    /// Time stolen by the hypervisor on those cores, mean percent per core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_pct: Option<f64>,
}

impl CpuFigures {
    /// Adds linerate's own time, the interference and the steal on these
    /// figures' cores, and makes the own time the headline: `cpu_pct` and
    /// the service demand at `mb_per_s` count it, the busy share moves to
    /// `busy_pct` and `host_service_demand_ms_per_mb`.
    pub fn with_own(mut self, own: crate::own::OwnCpu, mb_per_s: f64) -> Self {
        self.own_pct = Some(own.own_pct);
        self.interference_pct = Some(own.interference_pct);
        self.steal_pct = Some(own.steal_pct);
        if self.cpu_source == CpuSource::Busy {
            self.busy_pct = Some(self.cpu_pct);
            self.host_service_demand_ms_per_mb = self.service_demand_ms_per_mb;
        }
        self.cpu_source = CpuSource::Own;
        self.cpu_pct = own.own_pct;
        self.service_demand_ms_per_mb =
            service_demand(own.own_pct, self.cores.len().max(1), mb_per_s);
        self
    }

    /// linerate's own time on these cores and what else ran there, when
    /// measured.
    pub fn own(&self) -> Option<crate::own::OwnCpu> {
        Some(crate::own::OwnCpu {
            own_pct: self.own_pct?,
            interference_pct: self.interference_pct?,
            steal_pct: self.steal_pct?,
            busy_pct: self.busy(),
        })
    }

    /// The service demand of the cores' busy share, whichever `cpu_pct`
    /// counts.
    pub fn host_service_demand(&self) -> Option<f64> {
        match self.cpu_source {
            CpuSource::Busy => self.service_demand_ms_per_mb,
            CpuSource::Own => self.host_service_demand_ms_per_mb,
        }
    }

    /// The cores' busy share from /proc/stat, whichever `cpu_pct` counts.
    pub fn busy(&self) -> f64 {
        match self.cpu_source {
            CpuSource::Busy => self.cpu_pct,
            CpuSource::Own => self.busy_pct.unwrap_or(self.cpu_pct),
        }
    }
}

/// What a result's `cpu_pct` counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuSource {
    /// The cores' busy share from /proc/stat (steal and other tasks
    /// included): results before linerate measured its own time, and runs
    /// where the kernel's per-thread accounting was not available.
    #[default]
    Busy,
    /// linerate's own time: its threads' run time (schedstat) plus the
    /// network softirq work on its cores not already in it.
    Own,
}

/// How a table names what `cpu_pct` counts.
pub fn source_words(source: CpuSource) -> &'static str {
    match source {
        CpuSource::Busy => "busy (/proc/stat)",
        CpuSource::Own => "linerate's own",
    }
}

impl CpuSource {
    /// Whether the busy share (the default, not written out).
    pub fn is_busy(&self) -> bool {
        *self == Self::Busy
    }
}

/// Figures for `cores` (all cores when empty) at `mb_per_s`.
pub fn figures(uses: &[CoreUse], cores: &[usize], mb_per_s: f64) -> CpuFigures {
    let chosen: Vec<&CoreUse> = uses
        .iter()
        .filter(|u| cores.is_empty() || cores.contains(&u.core))
        .collect();
    let n = chosen.len();
    let cpu_pct = if n > 0 {
        chosen.iter().map(|u| u.busy).sum::<f64>() / n as f64
    } else {
        0.0
    };
    CpuFigures {
        cores: chosen.iter().map(|u| u.core).collect(),
        cpu_pct,
        service_demand_ms_per_mb: service_demand(cpu_pct, n, mb_per_s),
        ..Default::default()
    }
}

/// `CPU% x nCPU x 10 / (MB/s)`: ms of CPU per MB.
pub fn service_demand(cpu_pct: f64, ncpu: usize, mb_per_s: f64) -> Option<f64> {
    (mb_per_s > 0.0).then(|| cpu_pct * ncpu as f64 * 10.0 / mb_per_s)
}

/// Microseconds of CPU per transaction, as netperf's RR service demand:
/// `CPU% / 100 x nCPU / (transactions/s)`.
pub fn us_per_transaction(cpu_pct: f64, ncpu: usize, per_s: f64) -> Option<f64> {
    (per_s > 0.0).then(|| cpu_pct / 100.0 * ncpu as f64 / per_s * 1e6)
}

/// `part` in percent of `whole` (0 when there is no whole).
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole > 0 {
        100.0 * part as f64 / whole as f64
    } else {
        0.0
    }
}

/// `n` per second over a window of `window_s` (0 without a window).
pub fn per_second(n: u64, window_s: f64) -> f64 {
    if window_s > 0.0 {
        n as f64 / window_s
    } else {
        0.0
    }
}

/// A side's live counters, as it writes them for its agent while it runs
/// (`LIVE {json}` lines on stderr) and the agent's /metrics reads them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Live {
    /// Every worker's counters so far.
    pub workers: Vec<LiveWorker>,
    /// The steering program's counters so far (none without one).
    pub xdp: Option<SteerStats>,
}

/// One worker's live counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveWorker {
    /// Its role ("tx", "rx").
    pub role: String,
    /// Queue.
    pub queue: u32,
    /// Counters so far.
    pub counters: CounterSnapshot,
    /// Whether it verifies the checksums of what it receives, so that its
    /// bad_checksum is a measurement (none: a side of an earlier version
    /// did not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksums: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_core_figures_and_service_demand() {
        let uses = [
            CoreUse {
                core: 0,
                busy: 100.0,
                ..Default::default()
            },
            CoreUse {
                core: 1,
                ..Default::default()
            },
        ];
        let f = figures(&uses, &[], 1000.0);
        assert_eq!(f.cores, [0, 1]);
        assert!((f.cpu_pct - 50.0).abs() < 1e-9);
        // 50 % of 2 CPUs for 1000 MB/s: 1 ms per MB.
        assert!((f.service_demand_ms_per_mb.unwrap() - 1.0).abs() < 1e-9);
        let f = figures(&uses, &[1], 1000.0);
        assert_eq!((f.cores, f.cpu_pct), (vec![1], 0.0));
        assert_eq!(figures(&uses, &[], 0.0).service_demand_ms_per_mb, None);
    }

    #[test]
    fn service_demand_matches_document_001() {
        // 001, AB379B single port, 4 KB sequential read: 380 MB/s at
        // 16.8 % of 8 CPUs, printed as 3.5 ms/MB.
        let sd = service_demand(16.8, 8, 380.0).unwrap();
        assert_eq!(format!("{sd:.1}"), "3.5");
        // 1 KB dual port: 204 MB/s at 50.4 % -> 19.8.
        assert_eq!(
            format!("{:.1}", service_demand(50.4, 8, 204.0).unwrap()),
            "19.8"
        );
        assert_eq!(service_demand(50.0, 2, 0.0), None);
    }

    #[test]
    fn rates_and_shares() {
        // 1.5 cores busy for 100,000 transactions/s: 15 us each.
        assert!((us_per_transaction(75.0, 2, 100_000.0).unwrap() - 15.0).abs() < 1e-9);
        assert_eq!(us_per_transaction(75.0, 2, 0.0), None);
        assert_eq!(percent(2, 100), 2.0);
        assert_eq!(percent(2, 0), 0.0);
        assert_eq!(per_second(10, 0.5), 20.0);
        assert_eq!(per_second(10, 0.0), 0.0);
    }

    #[test]
    fn worker_roles_are_checked() {
        let w =
            r#"{"role":"responder","queue":0,"core":1,"tid":7,"window":{},"total":{},"xsk":{}}"#;
        let r: WorkerReport = serde_json::from_str(w).unwrap();
        assert_eq!((r.role, r.side()), ("responder", Host::Rx));
        let e = serde_json::from_str::<WorkerReport>(&w.replace("responder", "boss"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("worker role \"boss\" is none of"), "{e}");
    }

    #[test]
    fn live_lines_parse() {
        let l: Live = serde_json::from_str(
            r#"{"workers":[{"role":"tx","queue":0,"counters":{"frames":5}}],"xdp":null}"#,
        )
        .unwrap();
        assert_eq!(l.workers[0].counters.frames, 5);
        assert_eq!(l.xdp, None);
    }
}
