//! One result from two hosts' results: the sender's (client's) side from
//! the tx host, the receiver's (responder's) from the rx host, in the
//! shape of a local run's result, plus every core of both hosts labelled
//! with its host, CPU per host, and the agents. Loss, rates and service
//! demand come from the functions a local run uses.

use crate::system::Host;
use crate::{
    envelope::Envelope,
    parts::{InterfaceCounters, WorkerReport},
    rr::{transaction_mb_s, RrResult, SideCpu},
    softirq::SoftirqUse,
    stream::{FrameAccounting, StreamResult},
    threads::ThreadUse,
    two_host::{self, Agents},
};

/// The workers of `side` in a side's result.
fn workers(r: &[WorkerReport], side: Host) -> impl Iterator<Item = WorkerReport> + '_ {
    r.iter().filter(move |w| w.side() == side).cloned()
}

/// One host's threads, tagged with it.
fn threads(list: &[ThreadUse], side: Host) -> impl Iterator<Item = ThreadUse> + '_ {
    list.iter().cloned().map(move |t| ThreadUse {
        host: Some(side),
        ..t
    })
}

/// One host's softirq time per core, tagged with it.
fn softirq(list: &[SoftirqUse], side: Host) -> impl Iterator<Item = SoftirqUse> + '_ {
    list.iter().map(move |u| SoftirqUse {
        host: Some(side),
        ..*u
    })
}

/// Both sides' NAPI threads, the tx host's first.
fn napi_threads(tx: &[(i32, usize)], rx: &[(i32, usize)]) -> Vec<(i32, usize)> {
    tx.iter().chain(rx).copied().collect()
}

/// The agents, each with its host's environment (`environment` of the
/// result stays the sending host's, as in a local run).
fn described(
    mut agents: Agents,
    tx: &crate::system::Environment,
    rx: &crate::system::Environment,
) -> Agents {
    agents.tx.environment = Some(tx.clone());
    agents.rx.environment = Some(rx.clone());
    agents
}

/// What both tests merge alike: the tx host's envelope with each host's
/// workers of its side, the rx host's interface, how either ended, and
/// the agents (the window stays the tx host's).
fn common(tx: &Envelope, rx: &Envelope, agents: Agents) -> Envelope {
    Envelope {
        workers: workers(&tx.workers, Host::Tx)
            .chain(workers(&rx.workers, Host::Rx))
            .collect(),
        threads: threads(&tx.threads, Host::Tx)
            .chain(threads(&rx.threads, Host::Rx))
            .collect(),
        softirq: softirq(&tx.softirq, Host::Tx)
            .chain(softirq(&rx.softirq, Host::Rx))
            .collect(),
        interfaces: InterfaceCounters {
            tx: tx.interfaces.tx,
            rx: rx.interfaces.rx,
        },
        interrupted: tx.interrupted || rx.interrupted,
        fault: two_host::fault(&tx.fault, &rx.fault),
        agents: Some(described(agents, &tx.environment, &rx.environment)),
        // The floor is a hand-off between two cores of one host.
        noise: Some(crate::noise::Floor::not_measured(
            crate::noise::ACROSS_HOSTS,
        )),
        ..tx.clone()
    }
}

/// A stream's result from the sender's and the receiver's host.
pub fn stream(tx: &StreamResult, rx: &StreamResult, agents: Agents) -> StreamResult {
    let mut m = tx.clone();
    m.receiver = rx.receiver.clone();
    m.frames = FrameAccounting::count(
        &tx.totals(Host::Tx),
        &rx.totals(Host::Rx),
        tx.frames.unfinished,
        tx.message_shape(),
        rx.frames.refused.checksums,
    )
    .with_sender_drops(tx.frames.dropped_at_sender);
    m.frames.resent = tx.frames.resent;
    m.frames.slipped = tx.frames.slipped;
    if tx.params.count.is_some() {
        m.frames = m.frames.counted();
    }
    m.frames.injected = rx.frames.injected;
    let s = &mut m.setup;
    s.rx_bind_mode = rx.setup.rx_bind_mode.clone();
    s.rx_engine = rx.setup.rx_engine.clone();
    s.xdp_mode = rx.setup.xdp_mode.clone();
    s.xdp_fallback_reason = rx.setup.xdp_fallback_reason.clone();
    s.driver = rx.setup.driver.clone();
    s.napi = rx.setup.napi.clone();
    s.napi_threads = napi_threads(&tx.setup.napi_threads, &rx.setup.napi_threads);
    let p = &mut m.params;
    p.rx_iface = rx.params.rx_iface.clone();
    p.rx_netns = rx.params.rx_netns.clone();
    p.rx_cores = rx.params.rx_cores.clone();
    p.rx_wait = rx.params.rx_wait.clone();
    p.lab = None;
    m.common = common(&tx.common, &rx.common, agents);
    m.xdp = rx.xdp;
    m.latency = rx.latency.clone();
    let (hosts, total) = two_host::hosts_cpu(
        &tx.cpu.per_core,
        &rx.cpu.per_core,
        (tx.cpu.total.own(), rx.cpu.total.own()),
        rx.counted_mb_s(),
    );
    m.cpu.per_core = two_host::label_cores(&tx.cpu.per_core, &rx.cpu.per_core);
    m.cpu.total = total;
    m.cpu.hosts = Some(hosts);
    m.receiver_window_s = Some(rx.common.window_s);
    m
}

/// An rr result from the client's and the responder's host.
pub fn rr(tx: &RrResult, rx: &RrResult, agents: Agents) -> RrResult {
    let mut m = tx.clone();
    let s = &mut m.setup;
    s.responder_bind_mode = rx.setup.responder_bind_mode.clone();
    s.xdp_mode = rx.setup.xdp_mode.clone();
    s.driver = rx.setup.driver.clone();
    s.napi_threads = napi_threads(&tx.setup.napi_threads, &rx.setup.napi_threads);
    let p = &mut m.params;
    p.responder_iface = rx.params.responder_iface.clone();
    p.responder_netns = rx.params.responder_netns.clone();
    p.responder_cores = rx.params.responder_cores.clone();
    p.responder_wait = rx.params.responder_wait.clone();
    m.transactions.answered = rx.transactions.answered;
    m.common = common(&tx.common, &rx.common, agents);
    m.xdp.responder = rx.xdp.responder;
    // The responder's host knows its CPU but not the rate: per
    // transaction figures use the client's.
    let tps = tx.transactions.per_s;
    let mb_s = transaction_mb_s(tps, tx.params.request, tx.params.response);
    m.cpu.responder = SideCpu::new(
        &rx.cpu.per_core,
        &rx.params.responder_cores,
        rx.cpu.responder.cpu.own(),
        tps,
        mb_s,
    );
    let both = two_host::label_cores(&tx.cpu.per_core, &rx.cpu.per_core);
    let own = (tx.cpu.total.cpu.own(), rx.cpu.total.cpu.own());
    let (hosts, total_cpu) = two_host::hosts_cpu(&tx.cpu.per_core, &rx.cpu.per_core, own, mb_s);
    m.cpu.total = SideCpu {
        us_per_transaction: crate::parts::us_per_transaction(total_cpu.cpu_pct, both.len(), tps),
        cpu: total_cpu,
    };
    m.cpu.hosts = Some(hosts);
    m.cpu.per_core = both;
    m
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::system::CoreUse;
    use crate::{
        run::{RunResult, TwoHostResult},
        two_host::Agent,
    };

    fn fixture(name: &str) -> RunResult {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/results")
            .join(name);
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    fn agents() -> Agents {
        let a = |url: &str| Agent {
            url: url.into(),
            version: "0.1.0".into(),
            api: 1,
            clock_offset_ns: -5,
            clock_rtt_ns: 300_000,
            environment: None,
        };
        Agents {
            tx: a("http://a:7480"),
            rx: a("http://b:7480"),
        }
    }

    fn cores(busy: &[f64]) -> Vec<CoreUse> {
        busy.iter()
            .enumerate()
            .map(|(core, b)| CoreUse {
                core,
                busy: *b,
                ..Default::default()
            })
            .collect()
    }

    /// A local result cut into what each host of a two-host run reports:
    /// the tx host's with its senders, the rx host's with its receivers.
    fn sides(whole: &StreamResult) -> (StreamResult, StreamResult) {
        let mut tx = whole.clone();
        tx.common.workers.retain(|w| w.role == "tx");
        tx.frames.received = 0;
        tx.receiver = Default::default();
        tx.cpu.per_core = cores(&[50.0, 0.0]);
        tx.setup.rx_bind_mode = "none (other host)".into();
        let mut rx = whole.clone();
        rx.common.workers.retain(|w| w.role == "rx");
        rx.frames.sent = 0;
        rx.sender = Default::default();
        rx.cpu.per_core = cores(&[10.0, 30.0]);
        rx.setup.tx_bind_mode = "none (other host)".into();
        rx.params.rx_iface = "b-host-if".into();
        rx.common.window_s = whole.common.window_s * 1.01;
        rx.common.fault = Some("interface b0 went down during the run".into());
        (tx, rx)
    }

    #[test]
    fn stream_sides_merge() {
        let RunResult::Stream(whole) = fixture("stream-message.json") else {
            panic!()
        };
        let (tx, mut rx) = sides(&whole);
        // Two frames (one message) lost on the way.
        for w in &mut rx.common.workers {
            w.total.frames -= 2;
            w.total.messages -= 1;
        }
        let m = stream(&tx, &rx, agents());
        assert_eq!(m.frames.sent, whole.frames.sent);
        assert_eq!(m.frames.received, whole.frames.received - 2);
        assert_eq!(m.frames.lost, 2);
        let pct = 100.0 * 2.0 / whole.frames.sent as f64;
        assert!((m.frames.loss_pct - pct).abs() < 1e-12);
        assert_eq!(m.frames.messages.as_ref().unwrap().lost, 1);
        assert_eq!(m.sender, whole.sender);
        assert_eq!(m.receiver, whole.receiver);
        assert_eq!(m.common.workers.len(), 2);
        assert_eq!(m.cpu.per_core.len(), 4);
        assert_eq!(m.cpu.per_core[3].host, Some(Host::Rx));
        // (50 + 0 + 10 + 30) % over 4 cores at the receiver's MB/s.
        let mb = whole.receiver.message_mb_s.unwrap();
        let sd = m.cpu.total.service_demand_ms_per_mb.unwrap();
        assert!((sd - 22.5 * 4.0 * 10.0 / mb).abs() < 1e-9, "{sd}");
        assert!(m.cpu.total.cores.is_empty());
        let hosts = m.cpu.hosts.as_ref().unwrap();
        assert_eq!(
            (hosts.tx.cores, hosts.tx.cpu_pct, hosts.rx.cpu_pct),
            (2, 25.0, 20.0)
        );
        assert_eq!(m.setup.rx_bind_mode, whole.setup.rx_bind_mode);
        assert_eq!(m.setup.tx_bind_mode, whole.setup.tx_bind_mode);
        assert_eq!(m.params.rx_iface, "b-host-if");
        assert_eq!(m.params.lab, None);
        assert_eq!(m.receiver_window_s, Some(rx.common.window_s));
        assert!(m.common.fault.as_deref().unwrap().starts_with("rx host: "));
        let a = m.common.agents.as_ref().unwrap();
        assert_eq!(a.rx.environment.as_ref(), Some(&rx.common.environment));
        // The table is the local one with the two hosts' lines.
        let merged = RunResult::Stream(m);
        let t = merged.table();
        // -q on the controller: the table's first line alone.
        assert_eq!(
            TwoHostResult::Merged(merged.clone()).summary(),
            format!("{}\n", t.lines().next().unwrap())
        );
        assert!(
            t.starts_with("stream: received ")
                && t.contains("\nlinerate stream across two hosts: tx http://a:7480")
                && t.contains("  tx host: 2 cores, CPU 25.0 %")
                && t.contains("core 1 of the rx host")
                && t.contains("all cores of both hosts"),
            "{t}"
        );
    }

    #[test]
    fn rr_sides_merge() {
        let RunResult::Rr(whole) = fixture("rr.json") else {
            panic!()
        };
        let mut tx = whole.clone();
        tx.common.workers.retain(|w| w.role == "client");
        tx.cpu.per_core = cores(&[100.0, 0.0]);
        tx.transactions.answered = 0;
        let mut rx = whole.clone();
        rx.common.workers.retain(|w| w.role == "responder");
        rx.cpu.per_core = cores(&[0.0, 80.0]);
        rx.params.responder_cores = vec![1];
        let m = rr(&tx, &rx, agents());
        assert_eq!(m.transactions.answered, whole.transactions.answered);
        assert_eq!(m.common.workers.len(), whole.common.workers.len());
        let tps = whole.transactions.per_s;
        // The responder's core at 80 %: 0.8 core per tps.
        let per_t = m.cpu.responder.us_per_transaction.unwrap();
        assert!((per_t - 0.8 / tps * 1e6).abs() < 1e-6, "{per_t}");
        assert_eq!(m.cpu.responder.cpu.cores, [1]);
        // 1.8 cores of 4 busy.
        let total = m.cpu.total.us_per_transaction.unwrap();
        assert!((total - 1.8 / tps * 1e6).abs() < 1e-6, "{total}");
        assert!(m.cpu.total.cpu.cores.is_empty());
        assert_eq!(m.cpu.client, whole.cpu.client);
        assert!(m.cpu.hosts.is_some() && m.common.agents.is_some() && m.common.fault.is_none());
        let t = RunResult::Rr(m).table();
        assert!(
            t.starts_with("rr: ")
                && t.contains("\nlinerate rr across two hosts")
                && t.contains("core 1 of the responder's host")
                && t.contains("  rx host: 2 cores, CPU 40.0 %"),
            "{t}"
        );
    }
}
