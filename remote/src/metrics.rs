//! `GET /metrics`: the agent's run in the Prometheus (OpenMetrics) text
//! format, encoded by prometheus-client: every worker counter, the XDP
//! socket statistics and the steering program's counters of the metric
//! list (`results::metrics`), and every core's CPU time. Live while a run
//! goes (from the child's live lines); after it, the run's final figures.
//!
//! Once the agent had a run, every series carries the run's labels: `run`
//! (the agent's run id), `pair` (the fleet pair the request named; no
//! such label for a one-pair run, which Prometheus reads as `pair=""`),
//! `role` (tx or rx) and `interface` (this host's), then `queue` (worker
//! series) or `core` (CPU series). Before its first run, an agent serves
//! only its cores.

use std::sync::atomic::AtomicU64;

use linerate_counters::steer::SteerStats;
use linerate_counters::{socket::XskStats, stats::CounterSnapshot};
use prometheus_client::{
    encoding::text::encode,
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};

use linerate_results::{
    latency::Latency,
    metrics::{
        CPU_FAMILY, LATENCY_FAMILY, RUN_ACTIVE, STEERING, STEERING_FAMILY, WORKER_COUNTERS,
        XSK_EVENTS, XSK_FAMILY,
    },
    parts::{side_of, Live, BAD_CHECKSUM},
    run::RunResult,
};

type Labels = Vec<(String, String)>;

/// What /metrics shows of the agent's last run.
pub struct RunView {
    /// The agent's run id.
    pub run: String,
    /// The fleet pair the run request named.
    pub pair: Option<String>,
    /// This host's interface.
    pub interface: String,
    /// "stream" or "rr".
    pub test: String,
    /// "tx" or "rx".
    pub role: String,
    /// Whether it is going.
    pub active: bool,
    /// The child's latest live counters.
    pub live: Option<Live>,
    /// Its result, once it ended.
    pub result: Option<RunResult>,
}

/// A worker as /metrics labels it: (role "tx" or "rx", queue), its
/// counters, and its socket's statistics once it ended.
/// A worker's side, queue, counters, socket statistics and whether it
/// verifies checksums (none: not said).
type WorkerView = (
    &'static str,
    u32,
    CounterSnapshot,
    Option<XskStats>,
    Option<bool>,
);

fn side_label(role: &str) -> &'static str {
    match side_of(role) {
        linerate_host::cpu::Host::Tx => "tx",
        linerate_host::cpu::Host::Rx => "rx",
    }
}

/// A label as the exposition writes it: its value escaped
/// ([`linerate_host::shown::prometheus_label`]; prometheus-client writes values as
/// they are given, and an interface may be named `hx"q0`).
fn label(name: &str, value: &str) -> (String, String) {
    (
        name.to_string(),
        linerate_host::shown::prometheus_label(value).into_owned(),
    )
}

/// Final figures once the run ended, live ones while it goes.
fn workers_and_steering(run: &RunView) -> (Vec<WorkerView>, Option<SteerStats>) {
    match (&run.result, &run.live) {
        (Some(r), _) => {
            let steer = match r {
                RunResult::Stream(s) => s.xdp,
                RunResult::Rr(s) if run.role == "tx" => s.xdp.client,
                RunResult::Rr(s) => s.xdp.responder,
            };
            let w = r
                .common()
                .workers
                .iter()
                .map(|w| {
                    let checks = r.checks_checksums(side_of(w.role));
                    (
                        side_label(w.role),
                        w.queue,
                        w.total,
                        Some(w.xsk),
                        Some(checks),
                    )
                })
                .collect();
            (w, Some(steer))
        }
        (None, Some(l)) => {
            let w = l
                .workers
                .iter()
                .map(|w| (side_label(&w.role), w.queue, w.counters, None, w.checksums))
                .collect();
            (w, l.xdp)
        }
        _ => (Vec::new(), None),
    }
}

/// A latency's figures by quantile label, us.
fn quantiles(l: &Latency) -> Vec<(&'static str, f64)> {
    if l.count == 0 {
        return Vec::new();
    }
    vec![
        ("0", l.min_us),
        ("0.5", l.p50_us),
        ("0.9", l.p90_us),
        ("0.99", l.p99_us),
        ("0.999", l.p99_9_us),
        ("1", l.max_us),
        ("mean", l.mean_us),
    ]
}

/// The exposition text.
pub fn render(run: Option<&RunView>) -> Result<String, std::fmt::Error> {
    let mut reg = Registry::default();
    let active = Family::<Labels, Gauge>::default();
    reg.register(RUN_ACTIVE.0, RUN_ACTIVE.1, active.clone());
    let workers: Vec<Family<Labels, Counter>> = WORKER_COUNTERS
        .iter()
        .map(|c| {
            let f = Family::<Labels, Counter>::default();
            reg.register(c.exported, c.about, f.clone());
            f
        })
        .collect();
    let xsk = Family::<Labels, Counter>::default();
    reg.register(XSK_FAMILY.0, XSK_FAMILY.1, xsk.clone());
    let xdp = Family::<Labels, Counter>::default();
    reg.register(STEERING_FAMILY.0, STEERING_FAMILY.1, xdp.clone());
    let cpu = Family::<Labels, Counter<f64>>::default();
    reg.register(CPU_FAMILY.0, CPU_FAMILY.1, cpu.clone());
    let latency = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    reg.register(LATENCY_FAMILY.0, LATENCY_FAMILY.1, latency.clone());

    // The run's labels, on every series; the role is the run's (a worker's
    // own for worker series).
    let base = |role: &str| -> Labels {
        let Some(run) = run else {
            return Vec::new();
        };
        let mut l = vec![label("run", &run.run)];
        if let Some(p) = &run.pair {
            l.push(label("pair", p));
        }
        l.push(label("role", role));
        l.push(label("interface", &run.interface));
        l
    };
    let with = |mut l: Labels, more: &[(&str, String)]| -> Labels {
        l.extend(more.iter().map(|(k, v)| label(k, v)));
        l
    };
    if let Some(run) = run {
        let own = base(&run.role);
        active
            .get_or_create(&with(own.clone(), &[("test", run.test.clone())]))
            .set(i64::from(run.active));
        let (list, steer) = workers_and_steering(run);
        for (role, queue, counters, sock, checks) in list {
            let labels = with(base(role), &[("queue", queue.to_string())]);
            // Workers that verify no checksum counted no bad one: no
            // series rather than a 0 (their side says so live, and the
            // result at the end).
            let unchecked = checks == Some(false);
            for (c, fam) in WORKER_COUNTERS.iter().zip(&workers) {
                if unchecked && c.name == BAD_CHECKSUM {
                    continue;
                }
                fam.get_or_create(&labels).inc_by((c.read)(&counters));
            }
            if let Some(x) = sock {
                for c in XSK_EVENTS {
                    let l = with(labels.clone(), &[("event", c.name.into())]);
                    xsk.get_or_create(&l).inc_by((c.read)(&x));
                }
            }
        }
        let measured = match &run.result {
            Some(RunResult::Stream(s)) => s.latency.as_ref(),
            Some(RunResult::Rr(r)) if run.role == "tx" => Some(&r.latency),
            _ => None,
        };
        for (q, us) in measured.map(quantiles).unwrap_or_default() {
            latency
                .get_or_create(&with(own.clone(), &[("quantile", q.into())]))
                .set(us / 1e6);
        }
        if let Some(s) = steer {
            for c in STEERING {
                xdp.get_or_create(&with(own.clone(), &[("action", c.name.into())]))
                    .inc_by((c.read)(&s));
            }
        }
    }
    let host = base(run.map_or("", |r| r.role.as_str()));
    for (core, modes) in proc_stat() {
        for (mode, secs) in modes {
            cpu.get_or_create(&with(
                host.clone(),
                &[("core", core.to_string()), ("mode", mode.into())],
            ))
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
    use std::path::Path;

    use super::*;

    fn fixture(name: &str) -> RunResult {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/results")
            .join(name);
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    fn view(test: &str, role: &str, live: Option<Live>, result: Option<RunResult>) -> String {
        paired(None, test, role, live, result)
    }

    fn paired(
        pair: Option<&str>,
        test: &str,
        role: &str,
        live: Option<Live>,
        result: Option<RunResult>,
    ) -> String {
        render(Some(&RunView {
            run: "r3-77".into(),
            pair: pair.map(String::from),
            interface: "lr-b0".into(),
            test: test.into(),
            role: role.into(),
            active: live.is_some(),
            live,
            result,
        }))
        .unwrap()
    }

    #[test]
    fn final_figures_exported() {
        let r = fixture("stream.json");
        let RunResult::Stream(s) = &r else { panic!() };
        let (tx, rx) = (s.common.workers[0].total, s.common.workers[1].total);
        let text = view("stream", "rx", None, Some(r.clone()));
        for (line, want) in [
            (
                r#"linerate_worker_frames_total{run="r3-77",role="tx",interface="lr-b0",queue="0"}"#,
                tx.frames,
            ),
            (
                r#"linerate_worker_frames_total{run="r3-77",role="rx",interface="lr-b0",queue="0"}"#,
                rx.frames,
            ),
            (
                r#"linerate_worker_idle_loops_total{run="r3-77",role="rx",interface="lr-b0",queue="0"}"#,
                rx.idle_loops,
            ),
            (
                r#"linerate_xdp_frames_total{run="r3-77",role="rx",interface="lr-b0",action="redirected"}"#,
                s.xdp.redirected,
            ),
            (
                r#"linerate_xsk_events_total{run="r3-77",role="tx",interface="lr-b0",queue="0",event="tx_ring_empty"}"#,
                s.common.workers[0].xsk.tx_ring_empty,
            ),
        ] {
            assert!(
                text.contains(&format!("{line} {want}\n")),
                "{line} {want}: {text}"
            );
        }
        // Every worker counter of the list has its family.
        for c in WORKER_COUNTERS {
            assert!(
                text.contains(&format!("# HELP {} {}.", c.exported, c.about)),
                "{}",
                c.exported
            );
        }
        assert!(text.contains("linerate_cpu_seconds_total{run=\"r3-77\",role=\"rx\",interface=\"lr-b0\",core=\"0\",mode=\"user\"}"));
        assert!(text.contains(
            r#"linerate_run_active{run="r3-77",role="rx",interface="lr-b0",test="stream"} 0"#
        ));
        assert!(text.ends_with("# EOF\n"));
    }

    /// A bad checksum is exported only for workers that verify checksums:
    /// AF_XDP receivers 0 ("none bad"), a UDP socket's and a sender's none.
    #[test]
    fn bad_checksums_exported_only_where_checked() {
        let series = |role: &str| {
            format!(
                r#"linerate_worker_bad_checksum_frames_total{{run="r3-77",role="{role}",interface="lr-b0",queue="0"}}"#
            )
        };
        let mut r = fixture("stream.json");
        let RunResult::Stream(s) = &mut r else {
            panic!()
        };
        s.frames.refused.checksums = true;
        let text = view("stream", "rx", None, Some(r.clone()));
        assert!(text.contains(&format!("{} 0\n", series("rx"))), "{text}");
        assert!(!text.contains(&series("tx")), "{text}");
        let udp = view("stream", "rx", None, Some(fixture("stream-udp.json")));
        assert!(!udp.contains(&series("rx")), "{udp}");
        assert!(udp.contains("linerate_worker_bad_frames_total{"), "{udp}");
        let rr = view("rr", "tx", None, Some(fixture("rr.json")));
        assert!(rr.contains(&format!("{} 0\n", series("tx"))), "{rr}");
    }

    #[test]
    fn rr_sides_export_their_own_program() {
        let r = fixture("rr-xdp.json");
        let RunResult::Rr(s) = &r else { panic!() };
        let text = view("rr", "rx", None, Some(r.clone()));
        let line = format!(
            "linerate_xdp_frames_total{{run=\"r3-77\",role=\"rx\",interface=\"lr-b0\",action=\"responded\"}} {}\n",
            s.xdp.responder.responded
        );
        assert!(
            s.xdp.responder.responded > 0 && text.contains(&line),
            "{text}"
        );
        // Clients and responders are labelled by their side.
        assert!(text.contains(r#"linerate_worker_transactions_total{run="r3-77",role="tx",interface="lr-b0",queue="0"}"#));
    }

    #[test]
    fn a_streams_one_way_latency_exported_by_quantile() {
        let mut r = fixture("stream.json");
        let RunResult::Stream(s) = &mut r else {
            panic!()
        };
        let plain = view("stream", "rx", None, Some(RunResult::Stream(s.clone())));
        assert!(
            !plain.contains("linerate_latency_seconds{"),
            "none measured: {plain}"
        );
        s.latency = Some(Latency {
            count: 10,
            min_us: 2.0,
            p50_us: 5.0,
            p99_us: 1500.0,
            max_us: 2000.0,
            mean_us: 7.5,
            ..Default::default()
        });
        let text = view("stream", "rx", None, Some(r));
        for line in [
            r#"linerate_latency_seconds{run="r3-77",role="rx",interface="lr-b0",quantile="0"} 0.000002"#,
            r#"linerate_latency_seconds{run="r3-77",role="rx",interface="lr-b0",quantile="0.5"} 0.000005"#,
            r#"linerate_latency_seconds{run="r3-77",role="rx",interface="lr-b0",quantile="0.99"} 0.0015"#,
            r#"linerate_latency_seconds{run="r3-77",role="rx",interface="lr-b0",quantile="1"} 0.002"#,
            r#"linerate_latency_seconds{run="r3-77",role="rx",interface="lr-b0",quantile="mean"} 0.0000075"#,
        ] {
            assert!(text.contains(&format!("{line}\n")), "{line}: {text}");
        }
    }

    #[test]
    fn live_counters_exported() {
        let live: Live = serde_json::from_str(
            r#"{"workers":[{"role":"rx","queue":1,"counters":{"frames":77}}],"xdp":{"seen":80}}"#,
        )
        .unwrap();
        let text = view("stream", "rx", Some(live), None);
        assert!(
            text.contains(r#"linerate_worker_frames_total{run="r3-77",role="rx",interface="lr-b0",queue="1"} 77"#),
            "{text}"
        );
        assert!(
            text.contains(r#"linerate_xdp_frames_total{run="r3-77",role="rx",interface="lr-b0",action="seen"} 80"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"linerate_run_active{run="r3-77",role="rx",interface="lr-b0",test="stream"} 1"#
            ),
            "{text}"
        );
        assert!(!text.contains("linerate_xsk_events_total{"), "{text}");
        // A side that did not say whether it checks: its bad checksums
        // as counted.
        assert!(
            text.contains("linerate_worker_bad_checksum_frames_total{"),
            "{text}"
        );
    }

    /// Live, a worker that says it verifies no checksum exports no bad
    /// checksum series (not a 0); one that verifies them does.
    #[test]
    fn live_bad_checksums_only_where_checked() {
        for (checks, exported) in [(false, false), (true, true)] {
            let live: Live = serde_json::from_str(&format!(
                r#"{{"workers":[{{"role":"rx","queue":0,"counters":{{"frames":5}},"checksums":{checks}}}]}}"#
            ))
            .unwrap();
            let text = view("stream", "rx", Some(live), None);
            assert_eq!(
                text.contains("linerate_worker_bad_checksum_frames_total{"),
                exported,
                "{text}"
            );
            assert!(text.contains("linerate_worker_frames_total{"), "{text}");
        }
    }

    /// The sample lines of an exposition: (name, labels as written).
    fn samples(text: &str) -> Vec<(&str, &str)> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                let (name, rest) = l.split_once('{').unwrap_or_else(|| panic!("{l}"));
                (name, rest.rsplit_once('}').unwrap().0)
            })
            .collect()
    }

    /// A sample line of the text exposition read strictly: (name, labels
    /// with their values unescaped, value); None: not a valid line.
    /// A sample: its name, its labels (unescaped) and its value.
    type Sample = (String, Vec<(String, String)>, f64);

    fn strict(line: &str) -> Option<Sample> {
        let name_end = line.find(['{', ' '])?;
        let name = &line[..name_end];
        let ok_name = |n: &str, colon: bool| {
            let mut cs = n.chars();
            cs.next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || (colon && c == ':'))
                && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':'))
        };
        if !ok_name(name, true) {
            return None;
        }
        let mut rest = &line[name_end..];
        let mut labels = Vec::new();
        if let Some(r) = rest.strip_prefix('{') {
            rest = r;
            loop {
                let (k, r) = rest.split_once("=\"")?;
                if !ok_name(k, false) {
                    return None;
                }
                let mut v = String::new();
                let mut cs = r.char_indices();
                let end = loop {
                    match cs.next()? {
                        (i, '"') => break i,
                        (_, '\\') => match cs.next()?.1 {
                            '\\' => v.push('\\'),
                            '"' => v.push('"'),
                            'n' => v.push('\n'),
                            _ => return None,
                        },
                        (_, '\n') => return None,
                        (_, c) => v.push(c),
                    }
                };
                labels.push((k.to_string(), v));
                rest = &r[end + 1..];
                if let Some(r) = rest.strip_prefix(',') {
                    rest = r;
                } else {
                    rest = rest.strip_prefix('}')?;
                    break;
                }
            }
        }
        let value = rest.strip_prefix(' ')?.parse().ok()?;
        Some((name.to_string(), labels, value))
    }

    #[test]
    fn hostile_label_values_leave_the_exposition_valid() {
        for iface in [
            "hx\"q0",
            "a\\\"} 1\nlinerate_run_active{x=\"y\"} 9",
            "\u{202e}x",
        ] {
            let text = render(Some(&RunView {
                run: "r1".into(),
                pair: Some("p\"0".into()),
                interface: iface.into(),
                test: "stream".into(),
                role: "rx".into(),
                active: true,
                live: None,
                result: Some(fixture("stream.json")),
            }))
            .unwrap();
            let mut n = 0;
            for line in text.lines() {
                if line.starts_with("# ") {
                    continue;
                }
                let (name, labels, _) = strict(line).unwrap_or_else(|| panic!("{line:?}"));
                assert!(name.starts_with("linerate_"), "{line}");
                let get = |k: &str| labels.iter().find(|l| l.0 == k).map(|l| l.1.as_str());
                assert_eq!(get("interface"), Some(iface), "{line}");
                assert_eq!(get("pair"), Some("p\"0"), "{line}");
                n += 1;
            }
            assert!(n > 20, "{text}");
            // No series of its own planted.
            assert!(!text.contains("{x=\"y\"}"), "{text}");
            assert!(text.ends_with("# EOF\n"));
        }
    }

    #[test]
    fn every_series_carries_the_runs_labels() {
        let r = fixture("stream.json");
        let text = paired(Some("fl0"), "stream", "rx", None, Some(r));
        let lines = samples(&text);
        assert!(lines.len() > 20, "{text}");
        for (name, labels) in &lines {
            let per_worker = ["linerate_worker_", "linerate_xsk_"];
            let want = if per_worker.iter().any(|p| name.starts_with(p)) {
                // The fixture's workers: a sender and a receiver.
                assert!(labels.contains("queue=\"0\""), "{name}{{{labels}}}");
                labels.starts_with("run=\"r3-77\",pair=\"fl0\",role=\"")
                    && labels.contains(",interface=\"lr-b0\",queue=\"0\"")
            } else {
                labels.starts_with("run=\"r3-77\",pair=\"fl0\",role=\"rx\",interface=\"lr-b0\"")
            };
            assert!(want, "{name}{{{labels}}}");
            if name.starts_with("linerate_cpu_") {
                assert!(labels.contains(",core=\""), "{name}{{{labels}}}");
            }
        }
        for family in ["linerate_xdp_frames_total", "linerate_cpu_seconds_total"] {
            assert!(lines.iter().any(|(n, _)| *n == family), "{family}: {text}");
        }
        // A one-pair run has no pair label; an agent that had no run
        // serves its cores alone, with no run labels.
        let plain = view("stream", "rx", None, Some(fixture("stream.json")));
        assert!(!plain.contains("pair="), "{plain}");
        let idle = render(None).unwrap();
        let lines = samples(&idle);
        assert!(!lines.is_empty());
        for (name, labels) in lines {
            assert_eq!(name, "linerate_cpu_seconds_total");
            assert!(labels.starts_with("core=\""), "{labels}");
        }
    }
}
