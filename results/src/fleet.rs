//! A fleet run's aggregate over the pairs that ended well, with the field
//! names of a single result (`frames.received`, `receiver.frames_per_s`,
//! `transactions.per_s`, `latency.p99_us`): frames, bytes and
//! transactions summed, rates summed (every pair started at one instant:
//! their windows are one window, `window_s` the shortest of them),
//! latency histograms merged (HdrHistogram's add: percentiles of all the
//! samples, not averages of percentiles), CPU per host, the slowest pair.

use serde::{Deserialize, Serialize};

use linerate_counters::stats::{Counter, CounterSnapshot};

use crate::parts::BAD_CHECKSUM;
use crate::system::Host;
use crate::{
    latency::Latency,
    rr::{RrResult, Transactions},
    run::RunResult,
    stream::StreamResult,
    two_host::{HostCpu, HostsCpu},
};

/// Frames of all pairs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Frames {
    /// Sent, all pairs.
    pub sent: u64,
    /// Received, all pairs.
    pub received: u64,
    /// Lost, all pairs.
    pub lost: u64,
    /// Dropped at the senders' links, all pairs (`frames.dropped_at_sender`;
    /// absent when none, as in results before it was summed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_at_sender: u64,
    /// lost / sent, percent; when the pairs' runs were counted (`--count`),
    /// (lost + dropped_at_sender) / (sent + dropped_at_sender), as each
    /// pair's.
    pub loss_pct: f64,
    /// Frames whose checksum was wrong, summed over the pairs whose
    /// receivers verified checksums; absent when none did (not measured,
    /// never 0 for "not checked").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bad_checksum: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Frame bytes (no FCS) of all pairs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Bytes {
    /// Sent.
    pub sent: u64,
    /// Received.
    pub received: u64,
}

/// One side's rates, summed over the pairs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// Frames in the pairs' windows.
    pub frames: u64,
    /// Frames per second.
    pub frames_per_s: f64,
    /// UDP payload MB/s.
    pub payload_mb_s: f64,
    /// Wire MB/s.
    pub wire_mb_s: f64,
    /// Wire Gbit/s.
    pub wire_gbit_s: f64,
}

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

/// CPU per host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cpu {
    /// Every pair's two hosts.
    pub hosts: Vec<PairCpu>,
}

/// The pair with the lowest rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slowest {
    /// Its name.
    pub pair: String,
    /// Its rate (stream: received frames/s; rr: transactions/s).
    pub per_s: f64,
}

/// The aggregate of a fleet run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    /// "stream" or "rr".
    pub test: String,
    /// Pairs summed here (those that ended well).
    pub pairs: usize,
    /// Pairs that failed (left out).
    pub pairs_failed: usize,
    /// The common window: the shortest of the pairs' windows, s.
    pub window_s: f64,
    /// Stream: frames.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames: Option<Frames>,
    /// Stream: frame bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<Bytes>,
    /// Stream: the senders.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender: Option<Rates>,
    /// Stream: the receivers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receiver: Option<Rates>,
    /// Rr: transactions, summed (a single result's fields).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transactions: Option<Transactions>,
    /// Latency of every sample of every pair (one histogram).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    /// CPU per host.
    pub cpu: Cpu,
    /// The pair with the lowest rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slowest_pair: Option<Slowest>,
    /// The largest start skew bound of the pairs, us.
    pub start_skew_us: f64,
}

/// The counter of frames with a wrong checksum.
fn bad_checksum() -> &'static Counter<CounterSnapshot> {
    CounterSnapshot::FIELDS
        .iter()
        .find(|c| c.name == BAD_CHECKSUM)
        .expect("datapath counts bad checksums")
}

fn add_rates(sum: &mut Rates, s: &crate::stream::SideFigures) {
    sum.frames += s.frames;
    sum.frames_per_s += s.frames_per_s;
    sum.payload_mb_s += s.payload_mb_s;
    sum.wire_mb_s += s.wire_mb_s;
    sum.wire_gbit_s += s.wire_gbit_s;
}

fn hosts(pair: &str, h: &Option<HostsCpu>) -> Option<PairCpu> {
    h.as_ref().map(|h| PairCpu {
        pair: pair.to_string(),
        tx: h.tx.clone(),
        rx: h.rx.clone(),
    })
}

/// Latency of all these, merged (None when none measured any).
fn merged<'a>(all: impl Iterator<Item = &'a Latency>) -> Option<Latency> {
    let hists: Vec<_> = all
        .filter(|l| l.count > 0)
        .filter_map(Latency::histogram)
        .collect();
    Latency::merged(&hists)
}

/// The aggregate of stream results (pair name, result).
pub fn streams(results: &[(&str, &StreamResult)], failed: usize, skew_us: f64) -> Aggregate {
    let mut frames = Frames::default();
    let mut bytes = Bytes::default();
    let (mut sender, mut receiver) = (Rates::default(), Rates::default());
    let mut cpu = Cpu::default();
    for (pair, r) in results {
        frames.sent += r.frames.sent;
        frames.received += r.frames.received;
        frames.lost += r.frames.lost;
        frames.dropped_at_sender += r.frames.dropped_at_sender;
        if let Some(n) = r.frames.refused.get(bad_checksum()) {
            *frames.bad_checksum.get_or_insert(0) += n;
        }
        bytes.sent += r.totals(Host::Tx).bytes;
        bytes.received += r.totals(Host::Rx).bytes;
        add_rates(&mut sender, &r.sender);
        add_rates(&mut receiver, &r.receiver);
        cpu.hosts.extend(hosts(pair, &r.cpu.hosts));
    }
    let counted = results.iter().any(|(_, r)| r.params.count.is_some());
    frames.loss_pct = if counted {
        crate::parts::percent(
            frames.lost + frames.dropped_at_sender,
            frames.sent + frames.dropped_at_sender,
        )
    } else {
        crate::parts::percent(frames.lost, frames.sent)
    };
    Aggregate {
        test: "stream".into(),
        pairs: results.len(),
        pairs_failed: failed,
        window_s: common_window(results.iter().map(|(_, r)| r.common.window_s)),
        frames: Some(frames),
        bytes: Some(bytes),
        sender: Some(sender),
        receiver: Some(receiver),
        latency: merged(results.iter().filter_map(|(_, r)| r.latency.as_ref())),
        cpu,
        slowest_pair: slowest(results.iter().map(|(p, r)| (*p, r.receiver.frames_per_s))),
        start_skew_us: skew_us,
        ..Default::default()
    }
}

/// The aggregate of rr results (pair name, result).
pub fn rrs(results: &[(&str, &RrResult)], failed: usize, skew_us: f64) -> Aggregate {
    let mut t = Transactions::default();
    let mut cpu = Cpu::default();
    for (pair, r) in results {
        let x = &r.transactions;
        t.completed += x.completed;
        t.per_s += x.per_s;
        t.total += x.total;
        t.timeouts += x.timeouts;
        t.late += x.late;
        t.answered += x.answered;
        cpu.hosts.extend(hosts(pair, &r.cpu.hosts));
    }
    Aggregate {
        test: "rr".into(),
        pairs: results.len(),
        pairs_failed: failed,
        window_s: common_window(results.iter().map(|(_, r)| r.common.window_s)),
        transactions: Some(t),
        latency: merged(results.iter().map(|(_, r)| &r.latency)),
        cpu,
        slowest_pair: slowest(results.iter().map(|(p, r)| (*p, r.transactions.per_s))),
        start_skew_us: skew_us,
        ..Default::default()
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
    /// The total line of the text output.
    pub fn line(&self) -> String {
        let mut o = format!(
            "fleet {}: {} pair(s) ({} failed)",
            self.test, self.pairs, self.pairs_failed
        );
        if let (Some(f), Some(r)) = (&self.frames, &self.receiver) {
            o += &format!(
                ": received {} frames ({:.0} frames/s, {:.3} Gbit/s wire), lost {} ({:.4} %)",
                f.received, r.frames_per_s, r.wire_gbit_s, f.lost, f.loss_pct
            );
        }
        if let Some(t) = &self.transactions {
            o += &format!(
                ": {} transactions ({:.0}/s), {} timed out",
                t.completed, t.per_s, t.timeouts
            );
        }
        if let Some(l) = &self.latency {
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

    /// Three counted pairs of 30,000 (issue 34's fleet): one pair's
    /// generator dropped 221 at its link; the aggregate's loss says so.
    #[test]
    fn a_counted_fleet_counts_what_its_senders_dropped() {
        let RunResult::Stream(mut a) = fixture("stream-message.json") else {
            panic!()
        };
        a.params.count = Some(30_000);
        a.frames.sent = 30_000;
        a.frames.received = 30_000;
        a.frames.lost = 0;
        a.frames.dropped_at_sender = 0;
        let mut b = a.clone();
        b.frames.sent = 29_779;
        b.frames.received = 29_779;
        b.frames.dropped_at_sender = 221;
        let agg = streams(&[("p0", &a), ("p1", &b), ("p2", &a)], 0, 0.0);
        let f = agg.frames.as_ref().unwrap();
        assert_eq!((f.sent, f.received, f.lost), (89_779, 89_779, 0));
        assert_eq!(f.dropped_at_sender, 221);
        assert_eq!(f.loss_pct, crate::parts::percent(221, 90_000));
        // Not counted: the loss is of what left the links, as before.
        a.params.count = None;
        b.params.count = None;
        let agg = streams(&[("p0", &a), ("p1", &b)], 0, 0.0);
        assert_eq!(agg.frames.as_ref().unwrap().loss_pct, 0.0);
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
        let agg = streams(&[("p0", &a), ("p1", &b)], 1, 250.0);
        let f = agg.frames.as_ref().unwrap();
        assert_eq!(f.received, a.frames.received + b.frames.received);
        assert_eq!(f.sent, 2 * a.frames.sent);
        assert_eq!(f.lost, a.frames.lost + b.frames.lost);
        assert_eq!(
            agg.bytes.as_ref().unwrap().received,
            2 * a.totals(Host::Rx).bytes
        );
        let r = agg.receiver.as_ref().unwrap();
        assert!((r.frames_per_s - 1.5 * a.receiver.frames_per_s).abs() < 1e-6);
        assert_eq!(agg.window_s, a.common.window_s);
        assert_eq!(agg.slowest_pair.as_ref().unwrap().pair, "p1");
        assert_eq!((agg.pairs, agg.pairs_failed), (2, 1));
        if let Some(l) = &a.latency {
            if l.count > 0 {
                let m = agg.latency.as_ref().unwrap();
                assert_eq!(m.count, 2 * l.count);
                assert_eq!(m.max_us, l.max_us);
            }
        }
        let j = serde_json::to_value(&agg).unwrap();
        assert_eq!(j["frames"]["received"], f.received);
        assert!(j["receiver"]["frames_per_s"].is_number());
        assert!(j.get("transactions").is_none());
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
        let l = agg.latency.unwrap();
        assert_eq!(l.count, 100);
        // 99 % of the samples at 10 us: p50 and p90 are 10 us (an average
        // of the two pairs' medians would be some 505 us).
        assert!((l.p50_us - 10.0).abs() < 0.1, "{}", l.p50_us);
        assert!((l.max_us - 1000.0).abs() < 1.0, "{}", l.max_us);
        let t = agg.transactions.unwrap();
        assert_eq!(t.completed, 2 * a.transactions.completed);
        assert_eq!(t.late, 2 * a.transactions.late);
    }

    /// What `stream --fleet --json` and `rr --fleet --json` printed before
    /// issue 33's result model (recorded on the lab: 2 pairs; stream 20,000
    /// frames a pair at 20,000/s, rr for 1 s): the aggregate reads into
    /// [`Aggregate`] and every pair's result into [`RunResult`], and each
    /// is written back the same JSON.
    #[test]
    fn fleet_results_of_earlier_versions_round_trip_exactly() {
        for name in ["fleet-stream.json", "fleet-rr.json"] {
            let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../tests/fixtures/fleet")
                .join(name);
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            let agg: Aggregate = serde_json::from_value(v["aggregate"].clone()).unwrap();
            assert_eq!(
                serde_json::to_value(&agg).unwrap(),
                v["aggregate"],
                "{name}"
            );
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

    /// Bad checksums are summed over the pairs whose receivers verified
    /// checksums, and absent (not 0) when none did.
    #[test]
    fn bad_checksums_summed_where_measured_absent_where_not() {
        let RunResult::Stream(mut checked) = fixture("stream.json") else {
            panic!()
        };
        checked.frames.refused.checksums = true;
        checked.frames.refused.counts.bad_checksum = 3;
        let mut unchecked = checked.clone();
        unchecked.frames.refused.checksums = false;
        unchecked.frames.refused.counts.bad_checksum = 0;
        let bad = |a: &Aggregate| a.frames.as_ref().unwrap().bad_checksum;
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
        checked.frames.refused.counts.bad_checksum = 0;
        let zero = streams(&[("a", &checked)], 0, 0.0);
        assert_eq!(metric.value(&zero), Some(0.0));
    }
}
