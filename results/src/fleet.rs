//! A fleet run's aggregate: a result of the pairs' test (a
//! [`StreamResult`] or an [`RrResult`], the type a single or two-host run
//! gives), built from the pairs that ended well by the functions the
//! two-host merge builds a result with ([`FrameAccounting::count`] over
//! the workers' totals, [`figures`] over the cores, the latency
//! histograms merged with HdrHistogram's add: percentiles of all the
//! samples, not averages of percentiles), plus what only a fleet has: the
//! pairs counted, the slowest pair, the start skew and each pair's hosts'
//! CPU. Every pair started at one instant, so their windows are one window
//! (`window_s` the shortest of them) and rates add up. A metric is looked
//! up in it as in any result ([`crate::metrics::Metric::value`]).
//!
//! Aggregates written before it was a result (frames, bytes, rates,
//! transactions and latency, `cpu.hosts`) still load, into the same type:
//! their figures in their places, what they did not hold left unmeasured
//! (no workers, no cores).

use serde::{de::Error as _, Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::{
    envelope::Envelope,
    latency::Latency,
    parts::{figures, service_demand, us_per_transaction, CpuFigures, CpuSource},
    rr::{transaction_mb_s, RrResult, SideCpu, Transactions},
    run::RunResult,
    stream::{FrameAccounting, SideFigures, StreamResult},
    system::{CoreUse, Host},
    two_host::{HostCpu, HostsCpu},
};

/// One pair's hosts' CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairCpu {
    /// The pair.
    pub pair: String,
    /// Its sending (rr: client's) host.
    pub tx: HostCpu,
    /// Its receiving (rr: responder's) host.
    pub rx: HostCpu,
}

/// The pair with the lowest rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slowest {
    /// Its name.
    pub pair: String,
    /// Its rate (stream: received frames/s; rr: transactions/s).
    pub per_s: f64,
}

/// The aggregate of a fleet run: a result of the pairs' test, its fields
/// in this object, and the fleet's own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Aggregate {
    /// The pairs summed into one result of their test.
    #[serde(flatten)]
    pub result: RunResult,
    /// Pairs summed here (those that ended well).
    pub pairs: usize,
    /// Pairs that failed (left out).
    pub pairs_failed: usize,
    /// The pair with the lowest rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slowest_pair: Option<Slowest>,
    /// The largest start skew bound of the pairs, us.
    pub start_skew_us: f64,
    /// Each pair's hosts' CPU.
    pub pair_cpu: Vec<PairCpu>,
    /// Read from an aggregate written before it was a result: only the
    /// figures it held were measured ([`Aggregate::holds`]).
    #[serde(skip)]
    pub earlier: bool,
}

/// The figures an aggregate written before it was a result held (the
/// rest of its result is left at nothing measured).
const EARLIER_FIGURES: &[&str] = &[
    "window_s",
    "frames.sent",
    "frames.received",
    "frames.lost",
    "frames.loss_pct",
    "frames.bad_checksum",
    "sender.frames",
    "sender.frames_per_s",
    "sender.payload_mb_s",
    "sender.wire_mb_s",
    "sender.wire_gbit_s",
    "receiver.frames",
    "receiver.frames_per_s",
    "receiver.payload_mb_s",
    "receiver.wire_mb_s",
    "receiver.wire_gbit_s",
    "transactions.",
    "latency.",
];

/// The fleet's own fields of an aggregate's JSON.
const FLEET_KEYS: [&str; 5] = [
    "pairs",
    "pairs_failed",
    "slowest_pair",
    "start_skew_us",
    "pair_cpu",
];

impl<'de> Deserialize<'de> for Aggregate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Value::Object(mut o) = Value::deserialize(d)? else {
            return Err(D::Error::custom("a fleet aggregate is a JSON object"));
        };
        let own: Map<String, Value> = FLEET_KEYS
            .iter()
            .filter_map(|k| o.remove(*k).map(|v| (k.to_string(), v)))
            .collect();
        let mut own: Fleet =
            serde_json::from_value(Value::Object(own)).map_err(D::Error::custom)?;
        let earlier = !o.contains_key("params");
        let result = if !earlier {
            serde_json::from_value(Value::Object(o)).map_err(D::Error::custom)?
        } else {
            let old: Earlier =
                serde_json::from_value(Value::Object(o)).map_err(D::Error::custom)?;
            own.pair_cpu = old.cpu.hosts.clone();
            old.into_result()
        };
        Ok(Self {
            result,
            pairs: own.pairs,
            pairs_failed: own.pairs_failed,
            slowest_pair: own.slowest_pair,
            start_skew_us: own.start_skew_us,
            pair_cpu: own.pair_cpu,
            earlier,
        })
    }
}

/// The fleet's own fields, as read.
#[derive(Deserialize)]
struct Fleet {
    pairs: usize,
    pairs_failed: usize,
    slowest_pair: Option<Slowest>,
    start_skew_us: f64,
    #[serde(default)]
    pair_cpu: Vec<PairCpu>,
}

/// An aggregate as written before it was a result.
#[derive(Deserialize)]
struct Earlier {
    test: String,
    window_s: f64,
    frames: Option<EarlierFrames>,
    sender: Option<EarlierRates>,
    receiver: Option<EarlierRates>,
    transactions: Option<Transactions>,
    latency: Option<Latency>,
    cpu: EarlierCpu,
}

#[derive(Deserialize)]
struct EarlierFrames {
    sent: u64,
    received: u64,
    lost: u64,
    loss_pct: f64,
    bad_checksum: Option<u64>,
}

#[derive(Deserialize)]
struct EarlierRates {
    frames: u64,
    frames_per_s: f64,
    payload_mb_s: f64,
    wire_mb_s: f64,
    wire_gbit_s: f64,
}

#[derive(Deserialize)]
struct EarlierCpu {
    hosts: Vec<PairCpu>,
}

impl EarlierRates {
    fn side(self) -> SideFigures {
        SideFigures {
            frames: self.frames,
            frames_per_s: self.frames_per_s,
            payload_mb_s: self.payload_mb_s,
            wire_mb_s: self.wire_mb_s,
            wire_gbit_s: self.wire_gbit_s,
            ..Default::default()
        }
    }
}

impl Earlier {
    /// The figures it held, in a result of its test.
    fn into_result(self) -> RunResult {
        let common = Envelope {
            window_s: self.window_s,
            ..Default::default()
        };
        if self.test == "rr" {
            return RunResult::Rr(RrResult {
                test: "rr",
                common,
                transactions: self.transactions.unwrap_or_default(),
                latency: self.latency.unwrap_or_default(),
                ..Default::default()
            });
        }
        let mut r = StreamResult {
            test: "stream",
            common,
            latency: self.latency,
            sender: self.sender.map(EarlierRates::side).unwrap_or_default(),
            receiver: self.receiver.map(EarlierRates::side).unwrap_or_default(),
            ..Default::default()
        };
        if let Some(f) = self.frames {
            r.frames = FrameAccounting {
                sent: f.sent,
                received: f.received,
                lost: f.lost,
                loss_pct: f.loss_pct,
                ..Default::default()
            };
            r.frames.refused.checksums = f.bad_checksum.is_some();
            r.frames.refused.counts.bad_checksum = f.bad_checksum.unwrap_or(0);
        }
        RunResult::Stream(r)
    }
}

/// Latency of all these, merged (None when none measured any).
fn merged<'a>(all: impl Iterator<Item = &'a Latency>) -> Option<Latency> {
    let hists: Vec<_> = all
        .filter(|l| l.count > 0)
        .filter_map(Latency::histogram)
        .collect();
    Latency::merged(&hists)
}

/// Several hosts' CPU of one side as one: the core-weighted mean busy
/// share and the service demand of all those cores at `mb_s` (no core
/// list: core numbers repeat across hosts), with the number of cores.
fn combined<'a>(
    parts: impl Iterator<Item = &'a CpuFigures> + Clone,
    mb_s: f64,
) -> (CpuFigures, usize) {
    let n: usize = parts.clone().map(|p| p.cores.len()).sum();
    // The core-weighted mean of a figure every part has (none when one
    // lacks it).
    let mean = |read: fn(&CpuFigures) -> Option<f64>| -> Option<f64> {
        let sum = parts
            .clone()
            .map(|p| read(p).map(|x| x * p.cores.len() as f64))
            .sum::<Option<f64>>()?;
        (n > 0).then(|| sum / n as f64)
    };
    // Own time is the headline only when every pair measured it; else
    // every pair's busy share.
    let own = parts.clone().all(|p| p.cpu_source == CpuSource::Own);
    let busy = mean(|p| Some(p.busy())).unwrap_or(0.0);
    let cpu_pct = if own {
        mean(|p| Some(p.cpu_pct)).unwrap_or(0.0)
    } else {
        busy
    };
    let f = CpuFigures {
        cores: Vec::new(),
        cpu_pct,
        service_demand_ms_per_mb: service_demand(cpu_pct, n, mb_s),
        cpu_source: if own { CpuSource::Own } else { CpuSource::Busy },
        busy_pct: own.then_some(busy),
        host_service_demand_ms_per_mb: own.then(|| service_demand(busy, n, mb_s)).flatten(),
        own_pct: mean(|p| p.own_pct),
        interference_pct: mean(|p| p.interference_pct),
        steal_pct: mean(|p| p.steal_pct),
    };
    (f, n)
}

/// Every core of every pair (each labelled with its host).
fn all_cores<'a>(per_core: impl Iterator<Item = &'a [CoreUse]>) -> Vec<CoreUse> {
    per_core.flat_map(|c| c.iter().copied()).collect()
}

/// The envelope of the pairs: the first pair's host and version, the
/// shortest window, every worker, interrupted if any was, the first fault
/// named with its pair (no agents: each pair had its own; no interface
/// counters: each pair's are its own).
fn envelope<'a, I>(pairs: I) -> Envelope
where
    I: Iterator<Item = (&'a str, &'a Envelope)> + Clone,
{
    let first = pairs
        .clone()
        .next()
        .map(|(_, e)| e.clone())
        .unwrap_or_default();
    Envelope {
        window_s: common_window(pairs.clone().map(|(_, e)| e.window_s)),
        interrupted: pairs.clone().any(|(_, e)| e.interrupted),
        fault: pairs
            .clone()
            .find_map(|(p, e)| e.fault.as_ref().map(|f| format!("pair {p}: {f}"))),
        workers: pairs.flat_map(|(_, e)| e.workers.iter().cloned()).collect(),
        interfaces: Default::default(),
        agents: None,
        // Each pair's floor is its own (in its result).
        noise: None,
        ..first
    }
}

fn pair_cpu(pair: &str, hosts: &Option<HostsCpu>) -> Option<PairCpu> {
    hosts.as_ref().map(|h| PairCpu {
        pair: pair.to_string(),
        tx: h.tx.clone(),
        rx: h.rx.clone(),
    })
}

/// `a + b` where either was measured.
fn add(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    }
}

/// A side's rates summed over the pairs, its CPU combined.
fn side<'a>(
    all: impl Iterator<Item = &'a SideFigures> + Clone,
    totals: &linerate_counters::stats::CounterSnapshot,
) -> SideFigures {
    let mut sum = SideFigures::default();
    for s in all.clone() {
        sum.frames += s.frames;
        sum.frames_per_s += s.frames_per_s;
        sum.payload_mb_s += s.payload_mb_s;
        sum.wire_mb_s += s.wire_mb_s;
        sum.wire_gbit_s += s.wire_gbit_s;
        sum.link_packets_per_s += s.link_packets_per_s;
        sum.messages_per_s = add(sum.messages_per_s, s.messages_per_s);
        sum.message_mb_s = add(sum.message_mb_s, s.message_mb_s);
    }
    sum.avg_frame_size =
        (totals.frames > 0).then(|| totals.bytes as f64 / totals.frames as f64 + 4.0);
    sum.cpu = combined(all.map(|s| &s.cpu), sum.counted_mb_s()).0;
    sum
}

/// The stream result of the pairs (pair name, merged two-host result):
/// the first pair's parameters and set-up (every pair ran the same
/// request) without its interfaces and cores (each pair's own).
fn stream_of(results: &[(&str, &StreamResult)]) -> StreamResult {
    let Some((_, first)) = results.first() else {
        return StreamResult {
            test: "stream",
            ..Default::default()
        };
    };
    let mut m = (*first).clone();
    m.common = envelope(results.iter().map(|(p, r)| (*p, &r.common)));
    let (sent, received) = (m.totals(Host::Tx), m.totals(Host::Rx));
    m.sender = side(results.iter().map(|(_, r)| &r.sender), &sent);
    m.receiver = side(results.iter().map(|(_, r)| &r.receiver), &received);
    m.frames = FrameAccounting::count(
        &sent,
        &received,
        results.iter().map(|(_, r)| r.frames.unfinished).sum(),
        first.message_shape(),
        results.iter().any(|(_, r)| r.frames.refused.checksums),
    )
    .with_sender_drops(
        results
            .iter()
            .map(|(_, r)| r.frames.dropped_at_sender)
            .sum(),
    );
    m.frames.resent = results.iter().map(|(_, r)| r.frames.resent).sum();
    m.frames.slipped = results.iter().map(|(_, r)| r.frames.slipped).sum();
    if first.params.count.is_some() {
        m.frames = m.frames.counted();
    }
    m.frames.injected = results
        .iter()
        .filter_map(|(_, r)| r.frames.injected)
        .reduce(|a, b| a + b);
    m.cpu.per_core = all_cores(results.iter().map(|(_, r)| r.cpu.per_core.as_slice()));
    m.cpu.total = figures(&m.cpu.per_core, &[], m.counted_mb_s());
    let own: Option<Vec<_>> = results
        .iter()
        .map(|(_, r)| Some((r.cpu.total.own()?, r.cpu.per_core.len())))
        .collect();
    if let Some(own) = own.and_then(|parts| crate::own::combined(&parts)) {
        m.cpu.total = m.cpu.total.clone().with_own(own, m.counted_mb_s());
    }
    m.cpu.total.cores.clear();
    m.cpu.hosts = None;
    m.xdp = Default::default();
    m.latency = merged(results.iter().filter_map(|(_, r)| r.latency.as_ref()));
    m.receiver_window_s = None;
    let p = &mut m.params;
    (p.tx_iface, p.rx_iface, p.tx_netns, p.rx_netns) = (String::new(), String::new(), None, None);
    (p.tx_cores, p.rx_cores, p.lab) = (Vec::new(), Vec::new(), None);
    m
}

/// The rr result of the pairs (pair name, merged two-host result), with
/// the first pair's parameters and set-up, as [`stream_of`].
fn rr_of(results: &[(&str, &RrResult)]) -> RrResult {
    let Some((_, first)) = results.first() else {
        return RrResult {
            test: "rr",
            ..Default::default()
        };
    };
    let mut m = (*first).clone();
    m.common = envelope(results.iter().map(|(p, r)| (*p, &r.common)));
    let mut t = Transactions::default();
    for (_, r) in results {
        let x = &r.transactions;
        t.completed += x.completed;
        t.per_s += x.per_s;
        t.total += x.total;
        t.timeouts += x.timeouts;
        t.late += x.late;
        t.answered += x.answered;
    }
    let mb_s = transaction_mb_s(t.per_s, m.params.request, m.params.response);
    let side = |(cpu, n): (CpuFigures, usize)| SideCpu {
        us_per_transaction: us_per_transaction(cpu.cpu_pct, n, t.per_s),
        cpu,
    };
    m.cpu.client = side(combined(
        results.iter().map(|(_, r)| &r.cpu.client.cpu),
        mb_s,
    ));
    m.cpu.responder = side(combined(
        results.iter().map(|(_, r)| &r.cpu.responder.cpu),
        mb_s,
    ));
    m.cpu.per_core = all_cores(results.iter().map(|(_, r)| r.cpu.per_core.as_slice()));
    let own: Option<Vec<_>> = results
        .iter()
        .map(|(_, r)| Some((r.cpu.total.cpu.own()?, r.cpu.per_core.len())))
        .collect();
    let own = own.and_then(|parts| crate::own::combined(&parts));
    m.cpu.total = SideCpu::new(&m.cpu.per_core, &[], own, t.per_s, mb_s);
    m.cpu.total.cpu.cores.clear();
    m.cpu.hosts = None;
    m.transactions = t;
    m.latency = merged(results.iter().map(|(_, r)| &r.latency)).unwrap_or_default();
    m.xdp = Default::default();
    let p = &mut m.params;
    (p.client_iface, p.responder_iface) = (String::new(), String::new());
    (p.client_netns, p.responder_netns) = (None, None);
    (p.client_cores, p.responder_cores) = (Vec::new(), Vec::new());
    m
}

/// The aggregate of stream results (pair name, result).
pub fn streams(results: &[(&str, &StreamResult)], failed: usize, skew_us: f64) -> Aggregate {
    let pairs: Vec<_> = results
        .iter()
        .map(|(p, r)| (*p, r.receiver.frames_per_s, &r.cpu.hosts))
        .collect();
    aggregate(
        RunResult::Stream(stream_of(results)),
        &pairs,
        failed,
        skew_us,
    )
}

/// The aggregate of rr results (pair name, result).
pub fn rrs(results: &[(&str, &RrResult)], failed: usize, skew_us: f64) -> Aggregate {
    let pairs: Vec<_> = results
        .iter()
        .map(|(p, r)| (*p, r.transactions.per_s, &r.cpu.hosts))
        .collect();
    aggregate(RunResult::Rr(rr_of(results)), &pairs, failed, skew_us)
}

/// The pairs' `result` with the fleet's own fields, from each pair's
/// (name, rate, hosts' CPU).
fn aggregate(
    result: RunResult,
    pairs: &[(&str, f64, &Option<HostsCpu>)],
    failed: usize,
    skew_us: f64,
) -> Aggregate {
    Aggregate {
        result,
        pairs: pairs.len(),
        pairs_failed: failed,
        slowest_pair: slowest(pairs.iter().map(|(p, rate, _)| (*p, *rate))),
        start_skew_us: skew_us,
        pair_cpu: pairs
            .iter()
            .filter_map(|(p, _, hosts)| pair_cpu(p, hosts))
            .collect(),
        earlier: false,
    }
}

/// The aggregate of whatever results there are (merged two-host ones).
pub fn of(test: &str, results: &[(&str, &RunResult)], failed: usize, skew_us: f64) -> Aggregate {
    let streams_: Vec<(&str, &StreamResult)> = results
        .iter()
        .filter_map(|(p, r)| match r {
            RunResult::Stream(s) => Some((*p, s)),
            RunResult::Rr(_) => None,
        })
        .collect();
    let rrs_: Vec<(&str, &RrResult)> = results
        .iter()
        .filter_map(|(p, r)| match r {
            RunResult::Rr(s) => Some((*p, s)),
            RunResult::Stream(_) => None,
        })
        .collect();
    if test == "rr" {
        rrs(&rrs_, failed, skew_us)
    } else {
        streams(&streams_, failed, skew_us)
    }
}

fn common_window(w: impl Iterator<Item = f64>) -> f64 {
    w.fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.min(x))))
        .unwrap_or(0.0)
}

fn slowest<'a>(rates: impl Iterator<Item = (&'a str, f64)>) -> Option<Slowest> {
    rates
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(pair, per_s)| Slowest {
            pair: pair.to_string(),
            per_s,
        })
}

impl Aggregate {
    /// Whether it holds figure `name` (a figure of its test that an
    /// aggregate written before it was a result did not hold is not
    /// measured there, whatever its default reads).
    pub fn holds(&self, name: &str) -> bool {
        !self.earlier
            || EARLIER_FIGURES.iter().any(|f| match f.strip_suffix('.') {
                Some(prefix) => name.starts_with(prefix) && name[prefix.len()..].starts_with('.'),
                None => name == *f,
            })
    }

    /// "stream" or "rr".
    pub fn test(&self) -> &'static str {
        match &self.result {
            RunResult::Stream(r) => r.test,
            RunResult::Rr(r) => r.test,
        }
    }

    /// The total line of the text output.
    pub fn line(&self) -> String {
        let mut o = format!(
            "fleet {}: {} pair(s) ({} failed)",
            self.test(),
            self.pairs,
            self.pairs_failed
        );
        let latency = match &self.result {
            RunResult::Stream(s) => {
                let (f, r) = (&s.frames, &s.receiver);
                o += &format!(
                    ": received {} frames ({:.0} frames/s, {:.3} Gbit/s wire), lost {} ({:.4} %)",
                    f.received, r.frames_per_s, r.wire_gbit_s, f.lost, f.loss_pct
                );
                s.latency.as_ref()
            }
            RunResult::Rr(r) => {
                let t = &r.transactions;
                o += &format!(
                    ": {} transactions ({:.0}/s), {} timed out",
                    t.completed, t.per_s, t.timeouts
                );
                Some(&r.latency).filter(|l| l.count > 0)
            }
        };
        if let Some(l) = latency {
            o += &format!(
                "; latency p50 {:.1} us, p99 {:.1} us, max {:.1} us",
                l.p50_us, l.p99_us, l.max_us
            );
        }
        if let Some(s) = &self.slowest_pair {
            o += &format!("; slowest {} ({:.0}/s)", s.pair, s.per_s);
        }
        o += &format!("; start skew <= {:.0} us\n", self.start_skew_us);
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> RunResult {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/results")
            .join(name);
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    /// Two pairs: frames, bytes and rates summed, the histograms merged
    /// (the merged count is the sum, its max the larger max), the slower
    /// pair named.
    #[test]
    fn streams_add_up() {
        let RunResult::Stream(a) = fixture("stream-message.json") else {
            panic!()
        };
        let mut b = a.clone();
        b.frames.received -= 10;
        b.frames.lost += 10;
        b.receiver.frames_per_s /= 2.0;
        b.common.window_s += 0.5;
        // b's receivers counted 10 frames fewer (10 lost on the way).
        let rx = b.common.workers.iter_mut().find(|w| w.side() == Host::Rx);
        rx.unwrap().total.frames -= 10;
        let agg = streams(&[("p0", &a), ("p1", &b)], 1, 250.0);
        let RunResult::Stream(s) = &agg.result else {
            panic!("a stream's aggregate is a stream result")
        };
        let f = &s.frames;
        assert_eq!(f.received, a.frames.received + b.frames.received);
        assert_eq!(f.sent, 2 * a.frames.sent);
        assert_eq!(f.lost, a.frames.lost + b.frames.lost);
        assert_eq!(s.totals(Host::Rx).bytes, 2 * a.totals(Host::Rx).bytes);
        assert_eq!(s.common.workers.len(), 2 * a.common.workers.len());
        let r = &s.receiver;
        assert!((r.frames_per_s - 1.5 * a.receiver.frames_per_s).abs() < 1e-6);
        assert_eq!(s.common.window_s, a.common.window_s);
        assert_eq!(agg.slowest_pair.as_ref().unwrap().pair, "p1");
        assert_eq!((agg.pairs, agg.pairs_failed), (2, 1));
        if let Some(l) = &a.latency {
            if l.count > 0 {
                let m = s.latency.as_ref().unwrap();
                assert_eq!(m.count, 2 * l.count);
                assert_eq!(m.max_us, l.max_us);
            }
        }
        // Every core of both pairs, their CPU summed at the summed rate.
        assert_eq!(s.cpu.per_core.len(), 2 * a.cpu.per_core.len());
        let busy: f64 = s.cpu.per_core.iter().map(|c| c.busy).sum();
        let sd = s.cpu.total.service_demand_ms_per_mb.unwrap();
        assert!((sd - busy * 10.0 / s.counted_mb_s()).abs() < 1e-9, "{sd}");
        let j = serde_json::to_value(&agg).unwrap();
        assert_eq!(j["frames"]["received"], f.received);
        assert_eq!(j["test"], "stream");
        assert!(j["receiver"]["frames_per_s"].is_number());
        assert!(j.get("transactions").is_none());
        // Written and read back, the same aggregate.
        let back: Aggregate = serde_json::from_value(j).unwrap();
        assert_eq!(back, agg);
        assert!(agg
            .line()
            .starts_with("fleet stream: 2 pair(s) (1 failed): received "));
    }

    /// Percentiles come from the merged histogram, not from averaging.
    #[test]
    fn latency_is_merged_not_averaged() {
        let RunResult::Rr(a) = fixture("rr.json") else {
            panic!()
        };
        let mut fast = linerate_counters::latency::empty_histogram();
        let mut slow = linerate_counters::latency::empty_histogram();
        fast.record_n(10_000, 99).unwrap();
        slow.record_n(1_000_000, 1).unwrap();
        let (mut x, mut y) = (a.clone(), a.clone());
        x.latency = Latency::from_histogram(&fast);
        y.latency = Latency::from_histogram(&slow);
        let agg = rrs(&[("p0", &x), ("p1", &y)], 0, 0.0);
        let back: Aggregate = serde_json::from_value(serde_json::to_value(&agg).unwrap()).unwrap();
        assert_eq!(back, agg);
        let RunResult::Rr(r) = agg.result else {
            panic!("an rr aggregate is an rr result")
        };
        let l = r.latency;
        assert_eq!(l.count, 100);
        // 99 % of the samples at 10 us: p50 and p90 are 10 us (an average
        // of the two pairs' medians would be some 505 us).
        assert!((l.p50_us - 10.0).abs() < 0.1, "{}", l.p50_us);
        assert!((l.max_us - 1000.0).abs() < 1.0, "{}", l.max_us);
        let t = r.transactions;
        assert_eq!(t.completed, 2 * a.transactions.completed);
        assert_eq!(t.late, 2 * a.transactions.late);
    }

    /// What `stream --fleet --json` and `rr --fleet --json` printed before
    /// the aggregate was a result (recorded on the lab: 2 pairs; stream
    /// 20,000 frames a pair at 20,000/s, rr for 1 s): every pair's result
    /// reads into [`RunResult`] and is written back the same JSON; the
    /// aggregate reads into [`Aggregate`], every figure it held read by
    /// its name as the JSON has it, every pair's CPU kept.
    #[test]
    fn fleet_results_of_earlier_versions_still_load() {
        for name in ["fleet-stream.json", "fleet-rr.json"] {
            let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../tests/fixtures/fleet")
                .join(name);
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            let old = &v["aggregate"];
            let agg: Aggregate = serde_json::from_value(old.clone()).unwrap();
            assert_eq!(agg.test(), v["test"], "{name}");
            assert_eq!(agg.pairs, 2);
            assert_eq!(agg.pair_cpu.len(), 2, "{name}");
            assert_eq!(
                serde_json::to_value(&agg.pair_cpu).unwrap(),
                old["cpu"]["hosts"]
            );
            assert_eq!(agg.start_skew_us, old["start_skew_us"].as_f64().unwrap());
            let figures = [
                "frames.sent",
                "frames.received",
                "frames.lost",
                "frames.loss_pct",
                "receiver.frames_per_s",
                "receiver.wire_gbit_s",
                "sender.payload_mb_s",
                "transactions.per_s",
                "transactions.completed",
                "latency.p50_us",
                "latency.p99_us",
                "latency.max_us",
                "latency.count",
            ];
            let mut read = 0;
            for f in figures {
                let Some(want) = f
                    .split('.')
                    .try_fold(old, |v, k| v.get(k))
                    .and_then(serde_json::Value::as_f64)
                else {
                    continue;
                };
                let m = crate::metrics::Metric::find(f).unwrap();
                let got = m.value(&agg);
                if f.starts_with("latency.") && f != "latency.count" && old["latency"]["count"] == 0
                {
                    assert_eq!(got, None, "{name} {f}");
                    continue;
                }
                assert_eq!(got, Some(want), "{name} {f}");
                read += 1;
            }
            assert!(read >= 5, "{name}: {read} figures read");
            // What it did not hold is not measured there (not 0).
            for f in [
                "cpu.total.cpu_pct",
                "receiver.link_packets_per_s",
                "params.mtu",
            ] {
                let m = crate::metrics::Metric::find(f).unwrap();
                assert_eq!(m.value(&agg), None, "{name} {f}");
            }
            let pairs = v["pairs"].as_array().unwrap();
            assert_eq!(pairs.len(), 2, "{name}");
            for pair in pairs {
                let mut result = pair.clone();
                let o = result.as_object_mut().unwrap();
                assert!(o.remove("pair").is_some() && o.remove("start_skew_us").is_some());
                let r: RunResult = serde_json::from_value(result.clone()).unwrap();
                assert_eq!(r.test(), v["test"], "{name}");
                assert_eq!(serde_json::to_value(&r).unwrap(), result, "{name}");
            }
        }
    }

    /// The aggregate of the pairs of an earlier fleet result, made again
    /// from them today, agrees with the aggregate they printed then on
    /// every figure both hold (the summing did not change).
    #[test]
    fn the_pairs_of_an_earlier_run_sum_to_its_aggregate() {
        for name in ["fleet-stream.json", "fleet-rr.json"] {
            let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../tests/fixtures/fleet")
                .join(name);
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            let then: Aggregate = serde_json::from_value(v["aggregate"].clone()).unwrap();
            let pairs: Vec<(String, RunResult)> = v["pairs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    let mut r = p.clone();
                    let o = r.as_object_mut().unwrap();
                    let pair = o.remove("pair").unwrap().as_str().unwrap().to_string();
                    o.remove("start_skew_us");
                    (pair, serde_json::from_value(r).unwrap())
                })
                .collect();
            let refs: Vec<(&str, &RunResult)> =
                pairs.iter().map(|(p, r)| (p.as_str(), r)).collect();
            let now = of(then.test(), &refs, then.pairs_failed, then.start_skew_us);
            assert_eq!(now.slowest_pair, then.slowest_pair, "{name}");
            assert_eq!(now.pair_cpu, then.pair_cpu, "{name}");
            for m in crate::metrics::all() {
                if let (Some(a), Some(b)) = (m.value(&then), m.value(&now)) {
                    if m.name().starts_with("latency.") || m.name().ends_with("avg_frame_size") {
                        continue;
                    }
                    assert!(
                        (a - b).abs() <= 1e-9 * a.abs().max(1.0),
                        "{name} {}: {a} then, {b} now",
                        m.name()
                    );
                }
            }
        }
    }

    /// The fleet of 3 pairs, each counted to 30,000 frames, whose
    /// senders' links dropped 221 in all: those did not arrive, and the
    /// aggregate's headline loss says so (it read 0.0).
    #[test]
    fn a_counted_fleet_loses_what_its_senders_dropped() {
        let RunResult::Stream(base) = fixture("stream.json") else {
            panic!()
        };
        let pair = |dropped: u64| {
            let mut r = base.clone();
            r.params.count = Some(30_000);
            let mut tx = base
                .common
                .workers
                .iter()
                .find(|w| w.side() == Host::Tx)
                .unwrap()
                .clone();
            let mut rx = base
                .common
                .workers
                .iter()
                .find(|w| w.side() == Host::Rx)
                .unwrap()
                .clone();
            tx.total.frames = 30_000;
            rx.total.frames = 30_000 - dropped;
            (rx.total.lost, rx.total.reordered, rx.total.duplicates) = (0, 0, 0);
            r.common.workers = vec![tx, rx];
            r.frames.dropped_at_sender = dropped;
            r
        };
        let (a, b, c) = (pair(100), pair(121), pair(0));
        let agg = streams(&[("p0", &a), ("p1", &b), ("p2", &c)], 0, 0.0);
        let RunResult::Stream(s) = &agg.result else {
            panic!()
        };
        let f = &s.frames;
        assert_eq!(
            (f.sent, f.received, f.lost, f.dropped_at_sender),
            (90_000 - 221, 90_000 - 221, 0, 221)
        );
        assert!(
            (f.loss_pct - 100.0 * 221.0 / 90_000.0).abs() < 1e-9,
            "{}",
            f.loss_pct
        );
    }

    /// Bad checksums are summed over the pairs whose receivers verified
    /// checksums, and absent (not 0) when none did.
    #[test]
    fn bad_checksums_summed_where_measured_absent_where_not() {
        let RunResult::Stream(mut checked) = fixture("stream.json") else {
            panic!()
        };
        // What each pair's receivers counted: 3 bad where they checked.
        let set_bad = |r: &mut StreamResult, n: u64| {
            for w in r.common.workers.iter_mut().filter(|w| w.side() == Host::Rx) {
                w.total.bad_checksum = 0;
            }
            let w = r
                .common
                .workers
                .iter_mut()
                .find(|w| w.side() == Host::Rx)
                .unwrap();
            w.total.bad_checksum = n;
        };
        checked.frames.refused.checksums = true;
        set_bad(&mut checked, 3);
        let mut unchecked = checked.clone();
        unchecked.frames.refused.checksums = false;
        set_bad(&mut unchecked, 0);
        let bad = |a: &Aggregate| match &a.result {
            RunResult::Stream(s) => s
                .frames
                .refused
                .checksums
                .then_some(s.frames.refused.counts.bad_checksum),
            RunResult::Rr(_) => None,
        };
        let both = streams(
            &[("a", &checked), ("b", &unchecked), ("c", &checked)],
            0,
            0.0,
        );
        assert_eq!(bad(&both), Some(6));
        let metric = crate::metrics::Metric::find("frames.bad_checksum").unwrap();
        assert_eq!(metric.value(&both), Some(6.0));
        let none = streams(&[("b", &unchecked)], 0, 0.0);
        assert_eq!(bad(&none), None);
        assert_eq!(metric.value(&none), None);
        let v = serde_json::to_value(&none).unwrap();
        assert!(v["frames"].get("bad_checksum").is_none(), "{v}");
        // Checked and none bad: 0, a measurement.
        set_bad(&mut checked, 0);
        let zero = streams(&[("a", &checked)], 0, 0.0);
        assert_eq!(metric.value(&zero), Some(0.0));
    }
}
