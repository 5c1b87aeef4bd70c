//! Latency statistics of a histogram of ns: rr's response times and a
//! stream's one-way latencies, one type for both.

use base64::{engine::general_purpose::STANDARD, Engine as _};
use hdrhistogram::{
    serialization::{Serializer, V2DeflateSerializer},
    Histogram,
};
use serde::{Deserialize, Serialize};

/// Latency statistics, microseconds, and the histogram in ns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Samples.
    pub count: u64,
    /// Mean, us.
    pub mean_us: f64,
    /// Smallest, us.
    pub min_us: f64,
    /// Median, us.
    pub p50_us: f64,
    /// 90th percentile, us.
    pub p90_us: f64,
    /// 99th percentile, us.
    pub p99_us: f64,
    /// 99.9th percentile, us.
    pub p99_9_us: f64,
    /// Largest, us.
    pub max_us: f64,
    /// The whole histogram of ns in HdrHistogram's compressed V2 form,
    /// base64: what HdrHistogram's own tools read (a few KB, where the
    /// bucket list below took some 50 KB a result); the tests decode it
    /// (`Deserializer`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub histogram: String,
    /// Results written before `histogram`: [value_ns, count] of every
    /// recorded bucket (read, no longer written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histogram_ns: Vec<(u64, u64)>,
    /// One-way latency: frames received but left out of the histogram
    /// (send time after the receive time, or over 60 s before it: the
    /// hosts' clocks too far apart).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub out_of_range: u64,
    /// One-way latency across two hosts: how the clocks were corrected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockCorrection>,
    /// One-way latency: how the receive time of each frame was taken
    /// (absent in results written before it: per frame).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_time: Option<ReceiveTime>,
}

/// How a receiver took the receive time of the frames it accounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReceiveTime {
    /// One clock read per receive batch, at its first frame, shared by
    /// the batch's frames (a frame's latency includes the accounting of
    /// the frames before it in the batch only up to that read).
    PerBatch,
}

/// Whether a count is 0 (a field left out of the JSON when it is).
pub(crate) fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Two hosts: the receiving host's clock minus the sending host's, as the
/// controller measured it, taken off every one-way latency.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockCorrection {
    /// The offset taken off, ns.
    pub offset_ns: i64,
    /// Its uncertainty, +/- us: every latency is uncertain by as much.
    pub uncertainty_us: f64,
}

impl Latency {
    /// Statistics of a histogram of ns.
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Self {
            count: h.len(),
            mean_us: h.mean() / 1000.0,
            min_us: us(h.min()),
            p50_us: us(h.value_at_quantile(0.50)),
            p90_us: us(h.value_at_quantile(0.90)),
            p99_us: us(h.value_at_quantile(0.99)),
            p99_9_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
            histogram: encode(h),
            histogram_ns: Vec::new(),
            out_of_range: 0,
            clock: None,
            receive_time: None,
        }
    }

    /// Several receivers' histograms merged (None when none measured).
    pub fn merged<'a>(hists: impl IntoIterator<Item = &'a Histogram<u64>>) -> Option<Self> {
        let mut all = linerate_counters::latency::empty_histogram();
        let mut any = false;
        for h in hists {
            any = true;
            let _ = all.add(h);
        }
        any.then(|| Self::from_histogram(&all))
    }
}

impl Latency {
    /// The whole histogram, from either form a result holds (None: none
    /// kept, or it does not decode).
    pub fn histogram(&self) -> Option<Histogram<u64>> {
        if !self.histogram.is_empty() {
            let bytes = STANDARD.decode(&self.histogram).ok()?;
            return hdrhistogram::serialization::Deserializer::new()
                .deserialize(&mut std::io::Cursor::new(bytes))
                .ok();
        }
        let mut h = linerate_counters::latency::empty_histogram();
        for &(value, count) in &self.histogram_ns {
            h.record_n(value, count).ok()?;
        }
        (!self.histogram_ns.is_empty()).then_some(h)
    }
}

/// `h` in HdrHistogram's compressed V2 form, base64.
fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    match V2DeflateSerializer::new().serialize(h, &mut bytes) {
        Ok(_) => STANDARD.encode(bytes),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_of_a_histogram_and_merged() {
        let mut h = linerate_counters::latency::empty_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let l = Latency::from_histogram(&h);
        assert_eq!(l.count, 1000);
        assert!((l.p50_us - 500.0).abs() < 1.0, "{}", l.p50_us);
        assert!((l.p99_us - 990.0).abs() < 1.0, "{}", l.p99_us);
        assert!((l.min_us - 1.0).abs() < 0.01 && (l.max_us - 1000.0).abs() < 1.0);
        assert!((l.mean_us - 500.5).abs() < 1.0);
        // The whole histogram comes back, bucket for bucket, from a few KB.
        let back = l.histogram().unwrap();
        assert_eq!(back, h);
        assert!(l.histogram.len() < 4096, "{} bytes", l.histogram.len());
        let json = serde_json::to_string(&l).unwrap();
        assert!(!json.contains("histogram_ns"), "{json}");
        let read: Latency = serde_json::from_str(&json).unwrap();
        assert_eq!(read.histogram().unwrap(), h);
        assert_eq!(
            Latency::from_histogram(&Histogram::new(3).unwrap()).count,
            0
        );
        let two = Latency::merged([&h, &h]).unwrap();
        assert_eq!(two.count, 2000);
        assert_eq!(two.p50_us, l.p50_us);
        assert_eq!(Latency::merged([]), None);
    }

    #[test]
    fn old_results_without_the_new_fields_still_read() {
        let old = r#"{"count":1,"mean_us":1.0,"min_us":1.0,"p50_us":1.0,"p90_us":1.0,
            "p99_us":1.0,"p99_9_us":1.0,"max_us":1.0,"histogram_ns":[[1000,1]]}"#;
        let l: Latency = serde_json::from_str(old).unwrap();
        assert_eq!((l.out_of_range, l.clock), (0, None));
        let h = l.histogram().unwrap();
        assert_eq!((h.len(), h.max()), (1, 1000));
        assert!(!serde_json::to_string(&l).unwrap().contains("clock"));
        assert_eq!(l.receive_time, None);
        assert!(!serde_json::to_string(&l).unwrap().contains("receive_time"));
    }

    #[test]
    fn the_receive_time_is_named_in_the_json() {
        let l = Latency {
            receive_time: Some(ReceiveTime::PerBatch),
            ..Default::default()
        };
        let json = serde_json::to_string(&l).unwrap();
        assert!(json.contains(r#""receive_time":"per-batch""#), "{json}");
        let back: Latency = serde_json::from_str(&json).unwrap();
        assert_eq!(back.receive_time, Some(ReceiveTime::PerBatch));
    }
}
