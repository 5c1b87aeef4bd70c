//! What a two-host result adds to a local one: the agents (URL, version,
//! clock, each host's environment), every core of both hosts labelled with
//! its host, and CPU per host. `remote::merge` builds it; the tables of
//! `stream_table` and `rr_table` print it.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::parts::{figures, CpuFigures, CpuSource};
use crate::own::OwnCpu;
use crate::{
    system::Environment,
    system::{CoreUse, Host},
};

/// Both agents of a two-host run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agents {
    /// The sending (rr: client's) host's agent.
    pub tx: Agent,
    /// The receiving (rr: responder's) host's agent.
    pub rx: Agent,
}

/// One agent as the controller saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    /// Its URL.
    pub url: String,
    /// Its linerate version.
    pub version: String,
    /// Its API version.
    pub api: u32,
    /// Its clock minus the controller's, ns (NTP style, from the sample
    /// with the shortest round trip).
    pub clock_offset_ns: i64,
    /// That sample's round trip, ns.
    pub clock_rtt_ns: u64,
    /// Its host (in a merged result; `environment` at the top is the
    /// sending host's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<Environment>,
}

/// CPU of each host over all its cores.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostsCpu {
    /// The sending (rr: client's) host.
    pub tx: HostCpu,
    /// The receiving (rr: responder's) host.
    pub rx: HostCpu,
}

/// CPU of one host over all its cores.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostCpu {
    /// Cores counted.
    pub cores: usize,
    /// Mean percent of them linerate used, as `CpuFigures::cpu_pct`.
    pub cpu_pct: f64,
    /// ms of CPU per MB counted, as `CpuFigures`.
    pub service_demand_ms_per_mb: Option<f64>,
    /// What `cpu_pct` counts.
    #[serde(default, skip_serializing_if = "CpuSource::is_busy")]
    pub cpu_source: CpuSource,
    /// The host's busy share from /proc/stat, when `cpu_pct` is own time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_pct: Option<f64>,
}

impl From<CpuFigures> for HostCpu {
    fn from(f: CpuFigures) -> Self {
        Self {
            cores: f.cores.len(),
            cpu_pct: f.cpu_pct,
            service_demand_ms_per_mb: f.service_demand_ms_per_mb,
            cpu_source: f.cpu_source,
            busy_pct: f.busy_pct,
        }
    }
}

/// Every core of both hosts, each labelled with its host.
pub fn label_cores(tx: &[CoreUse], rx: &[CoreUse]) -> Vec<CoreUse> {
    let on = |host, cores: &[CoreUse]| {
        cores
            .iter()
            .map(move |c| CoreUse {
                host: Some(host),
                ..*c
            })
            .collect::<Vec<_>>()
    };
    let mut all = on(Host::Tx, tx);
    all.extend(on(Host::Rx, rx));
    all
}

/// Each host's CPU over all its cores, and both hosts' together (whose
/// core list stays empty: core numbers repeat across hosts), at `mb_s`;
/// linerate's own time the headline where each host measured it over all
/// its cores (`own`: the sending host's, the receiving host's).
pub fn hosts_cpu(
    tx: &[CoreUse],
    rx: &[CoreUse],
    own: (Option<OwnCpu>, Option<OwnCpu>),
    mb_s: f64,
) -> (HostsCpu, CpuFigures) {
    let host = |cores: &[CoreUse], own: Option<OwnCpu>| {
        let f = figures(cores, &[], mb_s);
        match own {
            Some(o) => f.with_own(o, mb_s),
            None => f,
        }
    };
    let hosts = HostsCpu {
        tx: host(tx, own.0).into(),
        rx: host(rx, own.1).into(),
    };
    let mut total = figures(&label_cores(tx, rx), &[], mb_s);
    if let (Some(t), Some(r)) = own {
        if let Some(both) = crate::own::combined(&[(t, tx.len()), (r, rx.len())]) {
            total = total.with_own(both, mb_s);
        }
    }
    total.cores.clear();
    (hosts, total)
}

/// What ended a two-host run early, naming the host: the tx host's fault
/// first.
pub fn fault(tx: &Option<String>, rx: &Option<String>) -> Option<String> {
    match (tx, rx) {
        (Some(t), _) => Some(format!("tx host: {t}")),
        (_, Some(r)) => Some(format!("rx host: {r}")),
        _ => None,
    }
}

/// The first line of a two-host table.
pub fn header(test: &str, a: &Agents) -> String {
    format!(
        "linerate {test} across two hosts: tx {} (clock offset {:.3} ms, rtt {:.3} ms), rx {} (clock offset {:.3} ms, rtt {:.3} ms)\n",
        a.tx.url,
        a.tx.clock_offset_ns as f64 / 1e6,
        a.tx.clock_rtt_ns as f64 / 1e6,
        a.rx.url,
        a.rx.clock_offset_ns as f64 / 1e6,
        a.rx.clock_rtt_ns as f64 / 1e6,
    )
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.3}"))
}

/// The per-host CPU lines of a two-host table.
pub fn hosts_lines(hosts: &HostsCpu, total: &CpuFigures) -> String {
    let mut o = String::new();
    for (h, c) in [("tx", &hosts.tx), ("rx", &hosts.rx)] {
        let _ = writeln!(
            o,
            "  {h} host: {} cores, CPU {:.1} %, {} ms/MB",
            c.cores,
            c.cpu_pct,
            opt(c.service_demand_ms_per_mb)
        );
    }
    let _ = writeln!(
        o,
        "  all cores of both hosts: {} ms/MB",
        opt(total.service_demand_ms_per_mb)
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn busy(core: usize, busy: f64) -> CoreUse {
        CoreUse {
            core,
            busy,
            ..Default::default()
        }
    }

    #[test]
    fn hosts_and_their_total() {
        let tx = [busy(0, 50.0), busy(1, 0.0)];
        let rx = [busy(0, 10.0), busy(1, 30.0)];
        let all = label_cores(&tx, &rx);
        assert_eq!(all.len(), 4);
        assert_eq!((all[0].host, all[3].host), (Some(Host::Tx), Some(Host::Rx)));
        let (hosts, total) = hosts_cpu(&tx, &rx, (None, None), 1.0);
        assert_eq!((hosts.tx.cores, hosts.tx.cpu_pct), (2, 25.0));
        assert_eq!(hosts.rx.cpu_pct, 20.0);
        // (50 + 0 + 10 + 30) % over 4 cores at 1 MB/s: 900 ms/MB.
        assert_eq!(total.service_demand_ms_per_mb, Some(900.0));
        assert!(total.cores.is_empty());
        assert_eq!(total.cpu_source, CpuSource::Busy);
        // Each host's own time (over all its cores): the headline, the
        // busy share kept beside it; both hosts' weighted by their cores.
        let own = |own_pct, busy_pct| OwnCpu {
            own_pct,
            interference_pct: busy_pct - own_pct,
            steal_pct: 0.0,
            busy_pct,
        };
        let (hosts, total) = hosts_cpu(
            &tx,
            &rx,
            (Some(own(20.0, 25.0)), Some(own(10.0, 20.0))),
            1.0,
        );
        assert_eq!((hosts.tx.cpu_pct, hosts.tx.busy_pct), (20.0, Some(25.0)));
        assert_eq!(hosts.rx.cpu_source, CpuSource::Own);
        assert_eq!(total.cpu_pct, 15.0);
        assert_eq!(total.busy_pct, Some(22.5));
        assert_eq!(total.service_demand_ms_per_mb, Some(600.0));
        assert_eq!(total.host_service_demand_ms_per_mb, Some(900.0));
        // One host without its own time: the busy share for both.
        let (_, total) = hosts_cpu(&tx, &rx, (Some(own(20.0, 25.0)), None), 1.0);
        assert_eq!((total.cpu_pct, total.cpu_source), (22.5, CpuSource::Busy));
    }

    #[test]
    fn faults_name_their_host() {
        let down = Some("b0 went down".to_string());
        assert_eq!(fault(&None, &down).unwrap(), "rx host: b0 went down");
        assert_eq!(fault(&down, &down).unwrap(), "tx host: b0 went down");
        assert_eq!(fault(&None, &None), None);
    }
}
