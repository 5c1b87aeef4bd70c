//! Two hosts: the lab's two namespaces each run `linerate agent` on their
//! management address; the controller in this namespace drives stream and
//! rr runs across them. Also: the token, a second run (409), /metrics
//! against the run's figures, an rx agent killed mid-run, and a controller
//! that dies (the lease ends the run).

#[path = "support/agents.rs"]
mod agents;
mod common;

use std::{
    collections::HashMap,
    os::unix::fs::PermissionsExt,
    path::PathBuf,
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use agents::{Agent, MgmtLab};
use common::*;
use serde_json::{json, Value};

const LAB: &str = "lrag";
const TOKEN: &str = "lrag-test-token-0123456789abcdef";
const A: &str = "198.19.255.2:7481";
const B: &str = "198.19.255.6:7481";
const COUNT: u64 = 20_000;

fn token_file_named(name: &str) -> PathBuf {
    agents::token_file(LAB, name, TOKEN)
}

/// The two hosts of a test: the lab with its management links and an agent
/// in each namespace, taking the test's turn. Dropped in order: agents,
/// lab, turn. None (with a skip message) without root.
struct Hosts {
    a: Agent,
    b: Agent,
    _lab: MgmtLab,
    _turn: std::sync::MutexGuard<'static, ()>,
}

fn hosts(test: &str) -> Hosts {
    require_root(test);
    let turn = serial();
    let lab = MgmtLab::up(LAB, TOKEN);
    Hosts {
        a: Agent::start(&format!("{LAB}-a"), A, LAB, &lab.token, TOKEN),
        b: Agent::start(&format!("{LAB}-b"), B, LAB, &lab.token, TOKEN),
        _lab: lab,
        _turn: turn,
    }
}

/// One request: (status, JSON or text body).
fn call(
    url: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
    token: Option<&str>,
) -> (u16, String) {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(5))
        .build();
    let mut req = agent.request(method, &format!("{url}{path}"));
    if let Some(t) = token {
        req = req.set("Authorization", &format!("Bearer {t}"));
    }
    let r = match body {
        Some(b) => req.send_json(b),
        None => req.call(),
    };
    match r {
        Ok(r) => (r.status(), r.into_string().unwrap_or_default()),
        Err(ureq::Error::Status(c, r)) => (c, r.into_string().unwrap_or_default()),
        Err(_) => (0, String::new()),
    }
}

/// Prometheus text as {"name{labels}": value}, checking every sample line;
/// the `run` label (the agent's run id) is left out of the keys.
fn parse_metrics(text: &str) -> HashMap<String, f64> {
    let mut m = HashMap::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = match line.split_once("{run=\"") {
            Some((name, rest)) => {
                let (id, rest) = rest.split_once("\",").unwrap_or_else(|| panic!("{line}"));
                assert!(id.starts_with('r'), "run id {id:?} in {line:?}");
                format!("{name}{{{rest}")
            }
            None => line.to_string(),
        };
        let (key, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad line {line:?}"));
        let name_end = key.find('{').unwrap_or(key.len());
        assert!(
            key[..name_end]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name in {line:?}"
        );
        if name_end < key.len() {
            assert!(key.ends_with('}'), "bad labels in {line:?}");
        }
        let v: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value in {line:?}"));
        m.insert(key.to_string(), v);
    }
    assert!(text.ends_with("# EOF\n"), "exposition not terminated");
    m
}

fn metrics(url: &str) -> HashMap<String, f64> {
    let (code, text) = call(url, "GET", "/metrics", None, Some(TOKEN));
    assert_eq!(code, 200, "{text}");
    parse_metrics(&text)
}

fn controller(args: &[&str], a: &Agent, b: &Agent) -> Command {
    let mut c = Command::new(linerate());
    c.args(args)
        .args(["--tx-agent", &a.url, "--rx-agent", &b.url])
        .args([
            "--tx-iface",
            &format!("{LAB}-a0"),
            "--rx-iface",
            &format!("{LAB}-b0"),
        ])
        .env("LINERATE_TOKEN", TOKEN);
    c
}

/// Runs the controller to its end and asserts it succeeded.
fn controller_ok(args: &[&str], a: &Agent, b: &Agent) -> std::process::Output {
    let out = controller(args, a, b).output().unwrap();
    assert!(
        out.status.success(),
        "linerate {} failed: {}",
        args[0],
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn no_xdp_left() {
    // A run's process detaches as it exits, which may be a moment after
    // its agent answered: wait for it (the deadline only guards a hang).
    for (ns, iface) in [
        (format!("{LAB}-a"), format!("{LAB}-a0")),
        (format!("{LAB}-b"), format!("{LAB}-b0")),
    ] {
        eventually(&format!("XDP detached from {iface}"), || {
            !has_xdp(&ns, &iface)
        });
    }
}

/// Polls `ready` until it holds; panics (a hang, not a slow machine) after
/// 60 s. Tests wait for a signal with it instead of sleeping.
fn eventually(what: &str, mut ready: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(60);
    while !ready() {
        assert!(Instant::now() < end, "{what}: not after 60 s");
        thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the run across `a` and `b` moves frames: the receiving
/// agent's live counters show some.
fn wait_running(b: &Agent) {
    eventually("frames received during the run", || {
        metrics(&b.url)
            .get(r#"linerate_worker_frames_total{role="rx",interface="lrag-b0",queue="0"}"#)
            .is_some_and(|v| *v > 0.0)
    });
}

/// The agent's doctor of the lab's B interface.
fn doctor(url: &str) -> (u16, String) {
    call(
        url,
        "GET",
        &format!("/v1/doctor?iface={LAB}-b0"),
        None,
        Some(TOKEN),
    )
}

fn run_request(args: &[&str]) -> Value {
    json!({
        "test": "stream", "role": "rx", "args": args, "iface": format!("{LAB}-b0"), "netns": null,
        "peer": {"mac": "02:00:c6:12:00:01", "ip": "198.18.0.1"},
        "start_at_ns": 0, "lease_ms": 3000,
    })
}

#[test]
#[ignore = "needs root: agents in the lab's namespaces"]
fn two_agents_stream_rr_metrics_and_api() {
    let h = hosts("two agents");
    let (a, b) = (&h.a, &h.b);

    // The API: version; no token or a wrong one is refused and starts nothing.
    let (code, v) = call(&a.url, "GET", "/v1/version", None, Some(TOKEN));
    assert_eq!(code, 200);
    let v: Value = serde_json::from_str(&v).unwrap();
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["api"], 1);
    for token in [None, Some("wrong-token-0123456789abcdef")] {
        for (m, p) in [("GET", "/v1/version"), ("GET", "/metrics")] {
            assert_eq!(
                call(&a.url, m, p, None, token).0,
                401,
                "{m} {p} with {token:?}"
            );
        }
        let (code, _) = call(
            &b.url,
            "POST",
            "/v1/runs",
            Some(run_request(&["--duration", "3s"])),
            token,
        );
        assert_eq!(code, 401);
    }
    no_xdp_left();
    assert!(!metrics(&b.url)
        .keys()
        .any(|k| k.starts_with("linerate_run_active")));
    let (code, text) = call(
        &b.url,
        "POST",
        "/v1/runs",
        Some(json!({"test": "stream"})),
        Some(TOKEN),
    );
    assert_eq!(code, 400, "{text}");
    assert!(text.contains("the run request is not valid"), "{text}");
    // Bad arguments read as on the command line.
    let (code, text) = call(
        &b.url,
        "POST",
        "/v1/runs",
        Some(run_request(&["--queues", "0"])),
        Some(TOKEN),
    );
    assert_eq!(code, 400, "{text}");
    assert!(
        text.contains("invalid value '0' for '--queues <QUEUES>': 0 is out of range"),
        "{text}"
    );

    // A counted stream across the two agents.
    let (rx0, _) = packets(&format!("{LAB}-b"), &format!("{LAB}-b0"));
    let (_, tx0) = packets(&format!("{LAB}-a"), &format!("{LAB}-a0"));
    let count = COUNT.to_string();
    let t = Instant::now();
    let out = controller_ok(
        &[
            "stream",
            "--count",
            &count,
            "--rate",
            "50000",
            "--napi",
            "softirq",
            "--warmup",
            "0s",
            "--duration",
            "30s",
            "--json",
        ],
        a,
        b,
    );
    eprintln!("two-agent stream: {:?}", t.elapsed());
    let r = json(&out);
    let f = &r["frames"];
    assert_eq!(f["sent"], COUNT, "{r:#}");
    assert_eq!(f["received"], COUNT, "{r:#}");
    for k in ["lost", "bad", "bad_checksum", "duplicates", "seq_gaps"] {
        assert_eq!(f[k], 0, "{k}: {r:#}");
    }
    assert_eq!(r["xdp"]["redirected"], COUNT);
    let (rx1, _) = packets(&format!("{LAB}-b"), &format!("{LAB}-b0"));
    let (_, tx1) = packets(&format!("{LAB}-a"), &format!("{LAB}-a0"));
    assert_eq!(tx1 - tx0, COUNT, "sent (ip -s link)");
    assert_eq!(rx1 - rx0, COUNT, "received (ip -s link)");
    assert_eq!(r["interfaces"]["tx"]["tx_packets"], COUNT);
    assert_eq!(r["interfaces"]["rx"]["rx_packets"], COUNT);
    // Both hosts' cores, labelled, and both agents described.
    let hosts: Vec<&str> = r["cpu"]["per_core"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["host"].as_str().unwrap())
        .collect();
    assert!(hosts.contains(&"tx") && hosts.contains(&"rx"), "{hosts:?}");
    for side in ["tx", "rx"] {
        assert!(r["agents"][side]["clock_offset_ns"].is_i64(), "{r:#}");
        assert!(r["cpu"]["hosts"][side]["cpu_pct"].is_f64(), "{r:#}");
    }
    assert!(r["sender"]["cpu"]["service_demand_ms_per_mb"].is_f64());
    assert!(r["receiver"]["cpu"]["service_demand_ms_per_mb"].is_f64());
    // One-way latency of every frame, corrected by the offset of the two
    // hosts' monotonic clocks: one host here, so the offset measured is 0
    // within the uncertainty stated.
    let l = &r["latency"];
    assert_eq!(l["count"], COUNT, "{l}");
    let c = &l["clock"];
    let off_us = c["offset_ns"].as_i64().unwrap().unsigned_abs() as f64 / 1000.0;
    assert!(off_us <= c["uncertainty_us"].as_f64().unwrap() + 1.0, "{c}");
    no_xdp_left();

    // /metrics parses and its counters are the run's.
    let ma = metrics(&a.url);
    let mb = metrics(&b.url);
    assert_eq!(
        ma[r#"linerate_worker_frames_total{role="tx",interface="lrag-a0",queue="0"}"#],
        COUNT as f64
    );
    assert_eq!(
        mb[r#"linerate_worker_frames_total{role="rx",interface="lrag-b0",queue="0"}"#],
        COUNT as f64
    );
    assert_eq!(
        mb[r#"linerate_xdp_frames_total{role="rx",interface="lrag-b0",action="redirected"}"#],
        COUNT as f64
    );
    assert_eq!(
        mb[r#"linerate_worker_bad_checksum_frames_total{role="rx",interface="lrag-b0",queue="0"}"#],
        0.0
    );
    assert_eq!(
        mb[r#"linerate_run_active{role="rx",interface="lrag-b0",test="stream"}"#],
        0.0
    );
    assert!(mb[r#"linerate_latency_seconds{role="rx",interface="lrag-b0",quantile="0.99"}"#] > 0.0);
    assert!(ma.keys().any(|k| k
        .starts_with("linerate_cpu_seconds_total{role=\"tx\",interface=\"lrag-a0\",core=\"1\"")));

    // rr across the two agents.
    let out = controller_ok(
        &[
            "rr",
            "--napi",
            "softirq",
            "--warmup",
            "0.2s",
            "--duration",
            "1s",
            "--json",
        ],
        a,
        b,
    );
    let r = json(&out);
    let t = &r["transactions"];
    assert!(t["completed"].as_u64().unwrap() > 0, "{r:#}");
    // Timeouts are counted, not forbidden: a descheduled responder on a
    // busy 2-core machine times a few out.
    assert!(t["timeouts"].is_u64(), "{r:#}");
    assert!(
        t["answered"].as_u64().unwrap() >= t["total"].as_u64().unwrap(),
        "{r:#}"
    );
    assert!(
        r["cpu"]["responder"]["us_per_transaction"].is_f64(),
        "{r:#}"
    );
    no_xdp_left();

    // A second run while one goes: 409, and the first is unharmed.
    let (code, text) = call(
        &b.url,
        "POST",
        "/v1/runs",
        Some(run_request(&["--duration", "3s", "--warmup", "0s"])),
        Some(TOKEN),
    );
    assert_eq!(code, 201, "{text}");
    let id = serde_json::from_str::<Value>(&text).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, text) = call(
        &b.url,
        "POST",
        "/v1/runs",
        Some(run_request(&["--duration", "3s"])),
        Some(TOKEN),
    );
    assert_eq!(code, 409, "{text}");
    // It says who holds the agent: run, test, role, since when, from where.
    assert!(text.contains("busy"), "{text}");
    let busy: Value = serde_json::from_str(&text).unwrap();
    let why = busy["error"].as_str().unwrap();
    assert!(
        why.contains(&format!("run {id} (stream rx, started ")) && why.contains("by 198.19.255.5:"),
        "{why}"
    );
    assert_eq!(busy["holder"]["id"], id.as_str(), "{busy:#}");
    assert_eq!(busy["holder"]["role"], "rx", "{busy:#}");
    assert!(busy["holder"]["since_unix_ns"].as_u64().unwrap() > 0);
    let (code, text) = doctor(&b.url);
    assert_eq!(code, 409, "the doctor would disturb the run: {text}");
    assert!(text.contains(&format!("run {id} (stream rx")), "{text}");
    let (code, _) = call(
        &b.url,
        "POST",
        &format!("/v1/runs/{id}/stop?now=true"),
        Some(json!({})),
        Some(TOKEN),
    );
    assert_eq!(code, 202);
    let status = || {
        let (_, s) = call(&b.url, "GET", &format!("/v1/runs/{id}"), None, Some(TOKEN));
        serde_json::from_str::<Value>(&s).unwrap()
    };
    eventually("the stopped run ends", || status()["state"] != "running");
    let st = status();
    // The run says who stopped it.
    assert_eq!(st["state"], "stopped", "{st:#}");
    assert!(
        st["error"]
            .as_str()
            .unwrap()
            .starts_with("stopped by a stop request from 198.19.255.5:"),
        "{st:#}"
    );
    assert!(
        st["stopped_by"].as_str().unwrap().ends_with("(at once)"),
        "{st:#}"
    );
    no_xdp_left();

    // Controller errors: a wrong token and an address nobody listens on.
    let out = controller(&["stream", "--count", "10"], a, b)
        .env("LINERATE_TOKEN", "wrong-token-0123456789abcdef")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("refused the token (401)"), "{err}");
    let out = Command::new(linerate())
        .args([
            "stream",
            "--count",
            "10",
            "--tx-agent",
            "http://198.19.255.2:9",
            "--rx-agent",
            &b.url,
        ])
        .args(["--tx-iface", "x", "--rx-iface", "y"])
        .env("LINERATE_TOKEN", TOKEN)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("tx agent http://198.19.255.2:9 did not answer"),
        "{err}"
    );

    // A side that fails on its host: its own error, named, exit 3.
    let out = controller(&["stream", "--count", "10", "--rx-cores", "7"], a, b)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("side failed") && err.contains("7"), "{err}");
    no_xdp_left();

    // The doctor of a named interface; none without one.
    let (code, text) = doctor(&b.url);
    assert_eq!(code, 200, "{text}");
    let d: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(d["iface"], format!("{LAB}-b0"));
    assert!(d["copy_mode"]["ok"] == true, "{d:#}");
    let (code, _) = call(&b.url, "GET", "/v1/doctor", None, Some(TOKEN));
    assert_eq!(code, 400);

    // Agents first, then the lab.
    drop(h);
    // Removing the namespaces removed the management links too.
    assert!(!std::path::Path::new(&format!("/sys/class/net/{LAB}-ma")).exists());
    assert!(!std::path::Path::new(&format!("/sys/class/net/{LAB}-mb")).exists());
}

#[test]
fn agent_needs_a_private_token() {
    // No token at all, and a token file others can read: refused at start.
    let out = Command::new(linerate())
        .args(["agent", "--listen", "127.0.0.1:7499"])
        .env_remove("LINERATE_TOKEN")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no token: give --token-file PATH"), "{err}");
    let f = token_file_named("open");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = Command::new(linerate())
        .args(["agent", "--listen", "127.0.0.1:7499", "--token-file"])
        .arg(&f)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is readable by others (mode 644)"), "{err}");
    let _ = std::fs::remove_file(f);
}

/// A paced stream across the two agents that goes on for `duration`,
/// started and left running.
fn long_stream(a: &Agent, b: &Agent, duration: &str, out: Stdio, err: Stdio) -> Child {
    controller(
        &[
            "stream",
            "--rate",
            "50000",
            "--napi",
            "softirq",
            "--warmup",
            "0s",
            "--duration",
            duration,
            "--json",
        ],
        a,
        b,
    )
    .stdout(out)
    .stderr(err)
    .spawn()
    .unwrap()
}

#[test]
#[ignore = "needs root: agents in the lab's namespaces"]
fn killed_rx_agent_fails_the_run_quickly() {
    let mut h = hosts("killed agent");
    // 120 s asked: a controller that missed the agent's death would still
    // be running (or measure all of it); the guard below is a hang's.
    let mut c = long_stream(&h.a, &h.b, "120s", Stdio::piped(), Stdio::piped());
    wait_running(&h.b);
    h.b.kill9();
    let killed = Instant::now();
    eventually("the controller ends after the agent's death", || {
        c.try_wait().unwrap().is_some()
    });
    eprintln!("controller ended {:?} after the kill", killed.elapsed());
    let out = c.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!("rx agent {}", h.b.url)) && err.contains("stopped answering"),
        "{err}"
    );
    // The partial result: what the sender's host measured.
    let r = json(&out);
    assert_eq!(r["partial"], true);
    assert!(r["tx"]["frames"]["sent"].as_u64().unwrap() > 0, "{r:#}");
    let w = r["tx"]["window_s"].as_f64().unwrap();
    assert!(w < 120.0, "the sender measured {w} s: not stopped early");
    // Both sides cleaned up: the tx side stopped, the rx side's process
    // saw its agent go.
    no_xdp_left();
}

#[test]
#[ignore = "needs root: agents in the lab's namespaces"]
fn lease_ends_the_run_when_the_controller_dies() {
    let h = hosts("lease");
    let (a, b) = (&h.a, &h.b);
    // 120 s asked: only the lease (5 s) can end it before the guard.
    let mut c = long_stream(a, b, "120s", Stdio::null(), Stdio::null());
    wait_running(b);
    assert!(
        has_xdp(&format!("{LAB}-b"), &format!("{LAB}-b0")),
        "the run is going"
    );
    assert_eq!(
        metrics(&b.url)[r#"linerate_run_active{role="rx",interface="lrag-b0",test="stream"}"#],
        1.0
    );
    // The sender starts at the agreed instant, after the receiver runs.
    eventually("live counters during the run", || {
        metrics(&a.url)
            .get(r#"linerate_worker_frames_total{role="tx",interface="lrag-a0",queue="0"}"#)
            .is_some_and(|v| *v > 0.0)
    });
    c.kill().unwrap();
    let _ = c.wait();
    let killed = Instant::now();
    // Lease 5 s, then SIGTERM: both sides end and detach.
    let active = |u: &str| {
        metrics(u)
            .iter()
            .any(|(k, v)| k.starts_with("linerate_run_active") && *v > 0.0)
    };
    eventually("both runs end when the lease lapses", || {
        !active(&a.url) && !active(&b.url)
    });
    eprintln!(
        "runs ended {:?} after the controller died",
        killed.elapsed()
    );
    no_xdp_left();
}

#[test]
#[ignore = "needs root: agents in the lab's namespaces"]
fn sweep_runs_every_point_on_the_agents() {
    let h = hosts("sweep over agents");
    let (a, b) = (&h.a, &h.b);
    let dir = std::env::temp_dir().join(format!("lrag-sweep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let spec = dir.with_extension("toml");
    std::fs::write(
        &spec,
        r#"
name = "agents"
title = "Two points over two agents"
kind = "stream"
repeats = 1

[fixed]
# Messages per second: at 8 KB, 60,000 frames/s, far below what the lab
# carries even while another test loads the machine.
rate = 10000
napi = "softirq"
warmup = "0.1s"
duration = "0.5s"

[[axis]]
name = "message"
values = [1024, 8192]

[[table]]
title = "Message MB/s"
rows = "message"
metrics = ["receiver.message_mb_s"]
"#,
    )
    .unwrap();
    controller_ok(
        &[
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ],
        a,
        b,
    );
    let results = std::fs::read_to_string(dir.join("results.jsonl")).unwrap();
    let points: Vec<Value> = results
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(points.len(), 2, "{results}");
    for p in &points {
        let r = &p["result"];
        // Each point ran on both agents: the merged result names them, and
        // its frames crossed from one host to the other.
        assert!(r["agents"].is_object(), "{r:#}");
        assert!(r["frames"]["received"].as_u64().unwrap() > 0, "{r:#}");
        assert_eq!(r["frames"]["lost"], 0, "{r:#}");
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("Message MB/s"), "{report}");
    no_xdp_left();
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&spec);
}

/// Another token holder stops a run: the controller of that run says who
/// did, instead of a bare failure.
#[test]
#[ignore = "needs root: agents in the lab's namespaces"]
fn a_run_stopped_by_someone_else_says_who() {
    let h = hosts("stopped by someone else");
    let (a, b) = (&h.a, &h.b);
    let c = long_stream(a, b, "120s", Stdio::piped(), Stdio::piped());
    wait_running(b);
    // Another client learns the run's id from the 409 and stops it.
    let (code, text) = call(
        &b.url,
        "POST",
        "/v1/runs",
        Some(run_request(&["--duration", "3s"])),
        Some(TOKEN),
    );
    assert_eq!(code, 409, "{text}");
    let id = serde_json::from_str::<Value>(&text).unwrap()["holder"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, _) = call(
        &b.url,
        "POST",
        &format!("/v1/runs/{id}/stop?now=true"),
        Some(json!({})),
        Some(TOKEN),
    );
    assert_eq!(code, 202);
    let out = c.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!(
            "rx agent {}: the rx side stopped: stopped by a stop request from 198.19.255.5:",
            b.url
        )) && err.contains("not by this controller"),
        "{err}"
    );
    no_xdp_left();
}

/// `threaded` of an interface in a namespace.
fn napi_threaded(ns: &str, iface: &str) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "cat"])
        .arg(format!("/sys/class/net/{iface}/threaded"))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A run's process killed outright (no clean-up of its own): the agent
/// puts the NAPI mode it changed back.
#[test]
#[ignore = "needs root: agents in the lab's namespaces"]
fn a_killed_run_leaves_napi_as_it_was() {
    let h = hosts("killed run's NAPI");
    let b = &h.b;
    let (ns, iface) = (format!("{LAB}-b"), format!("{LAB}-b0"));
    // The lab's veths run NAPI threaded: the run switches to the other mode.
    let before = napi_threaded(&ns, &iface);
    let (mode, during) = match before.as_str() {
        "1" => ("softirq", "0"),
        _ => ("threaded", "1"),
    };
    let (code, text) = call(
        &b.url,
        "POST",
        "/v1/runs",
        Some(run_request(&[
            "--napi",
            mode,
            "--warmup",
            "0s",
            "--duration",
            "30s",
        ])),
        Some(TOKEN),
    );
    assert_eq!(code, 201, "{text}");
    let id = serde_json::from_str::<Value>(&text).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    eventually(&format!("the run sets NAPI {mode}"), || {
        napi_threaded(&ns, &iface) == during
    });
    // SIGKILL the agent's child, the run's process.
    let agent = b.child.id();
    let children = std::fs::read_to_string(format!("/proc/{agent}/task/{agent}/children")).unwrap();
    let pids: Vec<i32> = children
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 1, "{children:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pids[0]),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    eventually("the killed run ends", || {
        let (_, s) = call(&b.url, "GET", &format!("/v1/runs/{id}"), None, Some(TOKEN));
        serde_json::from_str::<Value>(&s).unwrap()["state"] != "running"
    });
    assert_eq!(napi_threaded(&ns, &iface), before, "NAPI left {mode}");
    no_xdp_left();
}
