//! The one list of linerate's metrics: every figure of a result and every
//! counter a worker, the steering program, an AF_XDP socket or an
//! interface keeps, each with its name, unit, meaning and how it is read
//! from a typed result.
//!
//! Sweep files name metrics from it (checked before anything runs), the
//! report reads them through it, the agent's /metrics exports the worker
//! counters, socket statistics and steering counters from it, and
//! docs/metrics.md is generated from it (a test checks the page).
//!
//! Adding a counter a worker counts: its entry in `datapath::stats`
//! (name, /metrics name, unit, meaning; [`WORKER_COUNTERS`] is that
//! list), the line of the worker that counts it, and docs/metrics.md
//! regenerated (`LINERATE_WRITE_DOCS=1 cargo test -p
//! linerate-results metrics_page`). It is then in every result's workers, on
//! /metrics, and in sweep files as `counters.tx.NAME`, `counters.rx.NAME`
//! (whole run) and `counters.tx.NAME_per_s`, `counters.rx.NAME_per_s`
//! (over the window).

mod direction;
#[cfg(test)]
mod docs;
mod lists;
mod lookup;
mod measured;

pub use direction::lower_is_better;
pub use lists::{
    CPU_FAMILY, LATENCY_FAMILY, RUN_ACTIVE, STEERING, STEERING_FAMILY, WORKER_COUNTERS, XSK_EVENTS,
    XSK_FAMILY,
};
#[cfg(test)]
pub(crate) use lookup::all;
pub use lookup::{unknown, Metric, Source};

#[cfg(test)]
mod tests {
    use std::{collections::HashSet, path::Path};

    use serde::{de::DeserializeOwned, Serialize};
    use serde_json::Value;

    use linerate_counters::stats::Counter;

    use super::super::run::RunResult;
    use super::{docs::markdown, lists::*, lookup::*};

    fn fixtures() -> Vec<(String, Value, RunResult)> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/results");
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let text = std::fs::read_to_string(&p).unwrap();
            let v: Value = serde_json::from_str(&text).unwrap();
            let r: RunResult = serde_json::from_value(v.clone()).unwrap();
            out.push((p.display().to_string(), v, r));
        }
        assert!(out.len() >= 8);
        out
    }

    #[test]
    fn names_are_unique_and_found() {
        let all = all();
        let names: HashSet<String> = all.iter().map(Metric::name).collect();
        assert_eq!(names.len(), all.len(), "a name twice");
        for m in &all {
            assert_eq!(Metric::find(&m.name()).map(|f| f.name()), Some(m.name()));
        }
        for bad in [
            "receiver.foo",
            "counters.tx",
            "counters.up.frames",
            "xdp.client",
            "xdp.x.seen",
            "",
        ] {
            assert!(Metric::find(bad).is_none(), "{bad}");
        }
        let e = unknown("receiver.foo");
        assert!(
            e.contains("receiver.message_mb_s") && e.contains("idle_loops"),
            "{e}"
        );
    }

    /// A figure's name is the dotted path of its field: read from the
    /// typed result, it is the value at that path in the JSON.
    #[test]
    fn figures_read_the_field_their_name_says() {
        let mut seen = HashSet::new();
        for (file, v, r) in fixtures() {
            for m in all() {
                let name = m.name();
                let got = m.value(&r);
                if !m.tests().has(r.test()) {
                    assert_eq!(got, None, "{name} in {file}");
                    continue;
                }
                if name.starts_with("derived.")
                    || name.starts_with("counters.")
                    || name.starts_with("xsk.")
                {
                    continue;
                }
                let want = v
                    .pointer(&format!("/{}", name.replace('.', "/")))
                    .and_then(Value::as_f64)
                    // A counter of refused frames missing from a result
                    // written before it existed reads as 0, but one of
                    // bad checksums as not measured.
                    .or_else(|| {
                        ((matches!(m, Metric::Refused(_)) && name != "frames.bad_checksum")
                            // Resending and slipping began with them: none
                            // before.
                            || name == "frames.resent"
                            || name == "frames.slipped")
                            .then_some(0.0)
                    })
                    // A result before own time counted the busy share as
                    // its cpu_pct (and its service demand).
                    .or_else(|| {
                        let (parent, last) = name.rsplit_once('.')?;
                        let old = match last {
                            "busy_pct" => "cpu_pct",
                            "host_service_demand_ms_per_mb" => "service_demand_ms_per_mb",
                            _ => return None,
                        };
                        let parent = format!("/{}", parent.replace('.', "/"));
                        let cpu = v.pointer(&parent)?;
                        cpu.get("cpu_source")
                            .is_none()
                            .then(|| cpu.get(old)?.as_f64())
                            .flatten()
                    });
                assert_eq!(got, want, "{name} in {file}");
                seen.insert(name);
            }
        }
        for f in figures().filter(|f| !f.name.starts_with("derived.")) {
            assert!(seen.contains(f.name), "{} read from no fixture", f.name);
        }
    }

    #[test]
    fn counters_sum_the_side_workers() {
        for (file, v, r) in fixtures() {
            let workers = v["workers"].as_array().unwrap();
            for side in ["tx", "rx"] {
                let mine: Vec<&Value> = workers
                    .iter()
                    .filter(|w| {
                        super::super::parts::side_of(w["role"].as_str().unwrap())
                            == side_named(side).unwrap()
                    })
                    .collect();
                let sum = |k: &str, f: &str| {
                    mine.iter().map(|w| w[k][f].as_u64().unwrap()).sum::<u64>() as f64
                };
                let frames = Metric::find(&format!("counters.{side}.frames"))
                    .unwrap()
                    .value(&r);
                let ring = Metric::find(&format!("xsk.{side}.tx_ring_empty"))
                    .unwrap()
                    .value(&r);
                if mine.is_empty() {
                    assert_eq!((frames, ring), (None, None), "{file}");
                } else {
                    assert_eq!(frames, Some(sum("total", "frames")), "{file}");
                    assert_eq!(ring, Some(sum("xsk", "tx_ring_empty")), "{file}");
                    let per_s = Metric::find(&format!("counters.{side}.frames_per_s"))
                        .unwrap()
                        .value(&r);
                    assert!(per_s.unwrap() > 0.0, "{file}");
                }
            }
        }
    }

    #[test]
    fn derived_figures() {
        let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => (a - b).abs() <= 1e-12 * b.abs(),
            (a, b) => a == b,
        };
        for (file, v, r) in fixtures() {
            let us = Metric::find("derived.us_per_message").unwrap().value(&r);
            match r.test() {
                "stream" => {
                    let rate = v["receiver"]["messages_per_s"].as_f64();
                    assert!(close(us, rate.map(|x| 1e6 / x)), "{file}");
                }
                _ => {
                    let p = &v["params"];
                    let tps = v["transactions"]["per_s"].as_f64().unwrap();
                    let in_flight =
                        p["concurrency"].as_f64().unwrap() * p["flows"].as_f64().unwrap();
                    assert!(close(us, Some(1e6 * in_flight / tps)), "{file}");
                    let mb = (p["request"].as_f64().unwrap() + p["response"].as_f64().unwrap())
                        * tps
                        / 1e6;
                    let got = Metric::find("derived.rr_mb_s").unwrap().value(&r).unwrap();
                    assert!((got - mb).abs() < 1e-9, "{file}");
                }
            }
        }
    }

    /// Every field of a counter family is in its list, read from its own
    /// field: a counter added to the snapshot without an entry fails here.
    fn family_is_complete<T: Serialize + DeserializeOwned + Default>(list: &[Counter<T>]) {
        let keys: Vec<String> = match serde_json::to_value(T::default()).unwrap() {
            Value::Object(m) => m.keys().cloned().collect(),
            _ => unreachable!(),
        };
        let listed: HashSet<&str> = list.iter().map(|c| c.name).collect();
        for k in &keys {
            assert!(
                listed.contains(k.as_str()),
                "{k} has no entry in the metric list"
            );
        }
        assert_eq!(listed.len(), keys.len());
        let numbered: serde_json::Map<String, Value> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), Value::from(i as u64 + 1)))
            .collect();
        let snapshot: T = serde_json::from_value(Value::Object(numbered)).unwrap();
        for c in list {
            let i = keys.iter().position(|k| k == c.name).unwrap() as u64 + 1;
            assert_eq!((c.read)(&snapshot), i, "{} reads another field", c.name);
        }
    }

    #[test]
    fn counter_families_are_complete() {
        family_is_complete(WORKER_COUNTERS);
        family_is_complete(XSK_EVENTS);
        family_is_complete(STEERING);
        family_is_complete(INTERFACE);
        let exported: HashSet<&str> = WORKER_COUNTERS.iter().map(|c| c.exported).collect();
        assert_eq!(exported.len(), WORKER_COUNTERS.len());
        assert!(WORKER_COUNTERS
            .iter()
            .all(|c| c.exported.starts_with("linerate_worker_")));
    }

    /// docs/metrics.md is the list's page.
    #[test]
    fn metrics_page() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/metrics.md");
        let want = markdown();
        if std::env::var_os("LINERATE_WRITE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let got = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            got == want,
            "docs/metrics.md is not the metric list's page: run `LINERATE_WRITE_DOCS=1 cargo test -p linerate-results metrics_page`"
        );
        for m in all().iter().filter(|m| matches!(m, Metric::Figure(_))) {
            assert!(got.contains(&format!("`{}`", m.name())), "{}", m.name());
        }
    }
    /// One lookup reads a result and a fleet's aggregate by the same
    /// names: the aggregate of two copies of a stream holds twice its
    /// frames, the same loss, its counters of one host's workers none.
    #[test]
    fn one_lookup_reads_a_result_and_a_fleets_aggregate() {
        let (_, _, r) = fixtures()
            .into_iter()
            .find(|(f, _, _)| f.ends_with("/stream.json"))
            .unwrap();
        let agg = super::super::fleet::of("stream", &[("a", &r), ("b", &r)], 0, 0.0);
        let find = |n: &str| Metric::find(n).unwrap();
        let one = find("frames.received").value(&r).unwrap();
        assert_eq!(find("frames.received").value(&agg), Some(2.0 * one));
        assert_eq!(
            find("frames.loss_pct").value(&agg),
            find("frames.loss_pct").value(&r)
        );
        assert!(find("counters.rx.frames").value(&r).is_some());
        assert_eq!(find("counters.rx.frames").value(&agg), None);
        assert_eq!(find("transactions.per_s").value(&agg), None);
    }

    /// A receiver that verifies no checksum (kernel sockets, the XDP-only
    /// receiver) measured no bad checksum: absent from the JSON and none
    /// by name, never 0; one that does reads 0 for "none bad". A result
    /// written before the counter existed reads as not measured.
    #[test]
    fn unchecked_checksums_are_not_measured() {
        let (_, v, r) = fixtures()
            .into_iter()
            .find(|(f, _, _)| f.ends_with("/stream-udp.json"))
            .unwrap();
        assert!(v["frames"].get("bad_checksum").is_none());
        let RunResult::Stream(mut s) = r else {
            panic!()
        };
        let frames = Metric::find("frames.bad_checksum").unwrap();
        let workers = Metric::find("counters.rx.bad_checksum").unwrap();
        let bad = Metric::find("frames.bad").unwrap();
        let run = RunResult::Stream(s.clone());
        assert!(!run.checks_checksums(super::super::system::Host::Rx));
        assert_eq!((frames.value(&run), workers.value(&run)), (None, None));
        assert_eq!(bad.value(&run), Some(0.0));
        let j = serde_json::to_value(&run).unwrap();
        assert!(j["frames"].get("bad_checksum").is_none(), "{}", j["frames"]);
        assert_eq!(j["frames"]["bad"], 0);
        // Null reads as not measured too.
        let mut null = j.clone();
        null["frames"]["bad_checksum"] = Value::Null;
        let back: RunResult = serde_json::from_value(null).unwrap();
        assert_eq!(frames.value(&back), None);
        // Receivers that verify: 0 is "none bad", and written.
        s.frames.refused.checksums = true;
        let run = RunResult::Stream(s);
        assert_eq!(frames.value(&run), Some(0.0));
        assert_eq!(workers.value(&run), Some(0.0));
        let j = serde_json::to_value(&run).unwrap();
        assert_eq!(j["frames"]["bad_checksum"], 0);
        let back: RunResult = serde_json::from_value(j).unwrap();
        assert_eq!(back, run);
        // rr's clients: over kernel sockets not measured, over AF_XDP
        // measured.
        let clients = Metric::find("counters.tx.bad_checksum").unwrap();
        for (file, _, r) in fixtures() {
            if let RunResult::Rr(x) = &r {
                let checked = x.params.backend == "xdp";
                assert_eq!(clients.value(&r).is_some(), checked, "{file}");
            }
        }
    }
}
