//! `GET /metrics`: the agent's run in the Prometheus (OpenMetrics) text
//! format, encoded by prometheus-client: per-worker frames, bytes, losses
//! and XDP socket statistics, the steering program's counters, and every
//! core's CPU time. Live while a run goes (from the child's live lines);
//! after it, the run's final figures.

use prometheus_client::{
    encoding::text::encode,
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};
use serde_json::Value;

type Labels = Vec<(String, String)>;

/// What /metrics shows of the agent's last run.
pub struct RunView {
    /// "stream" or "rr".
    pub test: String,
    /// "tx" or "rx".
    pub role: String,
    /// Whether it is going.
    pub active: bool,
    /// The child's latest live counters.
    pub live: Option<Value>,
    /// Its result, once it ended.
    pub result: Option<Value>,
}

/// Worker counters exported, as (counter field, metric name, help).
const WORKER: [(&str, &str, &str); 8] = [
    (
        "frames",
        "linerate_worker_frames",
        "Frames sent (completed) or received",
    ),
    (
        "bytes",
        "linerate_worker_bytes",
        "Frame bytes (no FCS) sent or received",
    ),
    (
        "payload_bytes",
        "linerate_worker_payload_bytes",
        "UDP payload bytes",
    ),
    (
        "lost",
        "linerate_worker_lost_frames",
        "Sequence numbers missing at the receiver (frames lost)",
    ),
    (
        "bad",
        "linerate_worker_bad_frames",
        "Frames on the test port that were not linerate frames",
    ),
    (
        "messages",
        "linerate_worker_messages",
        "Whole messages sent or received",
    ),
    (
        "transactions",
        "linerate_worker_transactions",
        "Transactions completed (rr client)",
    ),
    (
        "timeouts",
        "linerate_worker_timeouts",
        "Transactions timed out (rr client)",
    ),
];

/// XDP socket statistics (XDP_STATISTICS), known when a worker ends.
const XSK: [&str; 6] = [
    "rx_dropped",
    "rx_invalid_descs",
    "rx_ring_full",
    "rx_fill_ring_empty",
    "tx_invalid_descs",
    "tx_ring_empty",
];

/// Steering program counters.
const XDP: [&str; 7] = [
    "seen",
    "redirected",
    "redirect_failed",
    "passed",
    "malformed",
    "responded",
    "dropped",
];

fn role_label(r: &str) -> &str {
    match r {
        "client" => "tx",
        "responder" => "rx",
        r => r,
    }
}

/// The exposition text.
pub fn render(run: Option<&RunView>) -> Result<String, std::fmt::Error> {
    let mut reg = Registry::default();
    let active = Family::<Labels, Gauge>::default();
    reg.register(
        "linerate_run_active",
        "Whether a run is going on this agent (labels: test, role)",
        active.clone(),
    );
    let workers: Vec<Family<Labels, Counter>> = WORKER
        .iter()
        .map(|(_, name, help)| {
            let f = Family::<Labels, Counter>::default();
            reg.register(*name, *help, f.clone());
            f
        })
        .collect();
    let xsk = Family::<Labels, Counter>::default();
    reg.register(
        "linerate_xsk_events",
        "AF_XDP socket statistics per worker (XDP_STATISTICS; known once the worker ended)",
        xsk.clone(),
    );
    let xdp = Family::<Labels, Counter>::default();
    reg.register(
        "linerate_xdp_frames",
        "Frames the steering program handled, by action",
        xdp.clone(),
    );
    let cpu = Family::<Labels, Counter<f64>>::default();
    reg.register(
        "linerate_cpu_seconds",
        "CPU time per core and mode since boot (/proc/stat)",
        cpu.clone(),
    );

    if let Some(run) = run {
        active
            .get_or_create(&vec![
                ("test".into(), run.test.clone()),
                ("role".into(), run.role.clone()),
            ])
            .set(i64::from(run.active));
        // Final figures once the run ended, live ones while it goes.
        let (list, key) = match (&run.result, &run.live) {
            (Some(r), _) => (r.get("workers"), "total"),
            (None, Some(l)) => (l.get("workers"), "counters"),
            _ => (None, ""),
        };
        for w in list.and_then(Value::as_array).into_iter().flatten() {
            let labels = vec![
                (
                    "role".to_string(),
                    role_label(w["role"].as_str().unwrap_or("?")).to_string(),
                ),
                ("queue".to_string(), w["queue"].to_string()),
            ];
            for ((field, _, _), fam) in WORKER.iter().zip(&workers) {
                if let Some(v) = w[key][*field].as_u64() {
                    fam.get_or_create(&labels).inc_by(v);
                }
            }
            if let Some(x) = w.get("xsk") {
                for k in XSK {
                    let mut l = labels.clone();
                    l.push(("event".into(), k.into()));
                    xsk.get_or_create(&l).inc_by(x[k].as_u64().unwrap_or(0));
                }
            }
        }
        let steer = match (&run.result, &run.live) {
            (Some(r), _) => match (run.test.as_str(), run.role.as_str()) {
                ("rr", "tx") => r["xdp"].get("client").cloned(),
                ("rr", _) => r["xdp"].get("responder").cloned(),
                _ => r.get("xdp").cloned(),
            },
            (None, Some(l)) => l.get("xdp").cloned(),
            _ => None,
        };
        if let Some(s) = steer.filter(Value::is_object) {
            for k in XDP {
                xdp.get_or_create(&vec![("action".into(), k.into())])
                    .inc_by(s[k].as_u64().unwrap_or(0));
            }
        }
    }
    for (core, modes) in proc_stat() {
        for (mode, secs) in modes {
            cpu.get_or_create(&vec![
                ("core".into(), core.to_string()),
                ("mode".into(), mode.into()),
            ])
            .inc_by(secs);
        }
    }
    let mut text = String::new();
    encode(&mut text, &reg)?;
    Ok(text)
}

/// Every core's CPU seconds by mode, from /proc/stat.
fn proc_stat() -> Vec<(usize, Vec<(&'static str, f64)>)> {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    // USER_HZ is 100 on every Linux architecture linerate runs on.
    let hz = 100.0;
    const MODES: [&str; 8] = [
        "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
    ];
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let core = f.next()?.strip_prefix("cpu")?.parse().ok()?;
            let v: Vec<f64> = f.map(|x| x.parse::<f64>().unwrap_or(0.0) / hz).collect();
            Some((core, MODES.iter().zip(v).map(|(m, s)| (*m, s)).collect()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_figures_exported() {
        let result = serde_json::json!({
            "workers": [{"role": "tx", "queue": 0, "total": {"frames": 1234, "bytes": 99},
                         "xsk": {"rx_dropped": 0, "tx_ring_empty": 3}}],
            "xdp": {"seen": 5, "redirected": 4},
        });
        let text = render(Some(&RunView {
            test: "stream".into(),
            role: "tx".into(),
            active: false,
            live: None,
            result: Some(result),
        }))
        .unwrap();
        assert!(
            text.contains("linerate_worker_frames_total{role=\"tx\",queue=\"0\"} 1234"),
            "{text}"
        );
        assert!(text.contains("linerate_xdp_frames_total{action=\"redirected\"} 4"));
        assert!(text.contains("linerate_cpu_seconds_total{core=\"0\",mode=\"user\"}"));
        assert!(text.ends_with("# EOF\n"));
    }
}
