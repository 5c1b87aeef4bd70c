//! A real Prometheus (Debian's `prometheus`, on loopback) scraping the
//! agents of two pairs with the configuration `linerate fleet prometheus`
//! prints: every target up, PromQL's sum of the frames received over the
//! runs equal to what the controllers counted, and every query of the
//! Grafana dashboard (deploy/grafana/linerate.json) valid during a run and
//! returning data after it.
//!
//! Two labs with `lab up --mgmt` cannot coexist (each puts the fixed
//! 198.19.255.0/30 and .4/30 on this namespace's side: the second lab's
//! routes would shadow the first's), so the first pair's agents run in its
//! namespaces behind the management links (tests/support/agents.rs) and
//! the second pair's in this namespace on loopback, each serving its
//! namespace's interface (`--allow-iface IF@NS`).

#[path = "support/agents.rs"]
mod agents;
mod common;

use std::{
    io::{BufRead, BufReader},
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    thread,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use agents::{Agent, MgmtLab};
use common::*;
use serde_json::Value;

/// The pair behind the management links (its lab's name is its name).
const P1: &str = "lrpm";
/// The pair served from this namespace.
const P2: &str = "lrpn";
const TOKEN1: &str = "lrpm-test-token-0123456789abcdef";
const TOKEN2: &str = "lrpn-test-token-fedcba9876543210";
const COUNT: u64 = 12_000;

/// An agent in this namespace on 127.0.0.1 (a free port) serving one
/// interface of a namespace; stopped on drop.
struct LoopbackAgent {
    child: Child,
    url: String,
}

impl LoopbackAgent {
    fn start(iface: &str, netns: &str, token: &Path) -> Self {
        let mut child = Command::new(linerate())
            .args(["agent", "--listen", "127.0.0.1:0", "--token-file"])
            .arg(token)
            .args(["--allow-iface", &format!("{iface}@{netns}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting the agent");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| {
                l.split("listening on http://")
                    .nth(1)
                    .map(|r| r.split(';').next().unwrap().to_string())
            })
            .expect("the agent did not say where it listens");
        // Its log is read to its end, so that it never blocks on a full pipe.
        thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
        Self {
            child,
            url: format!("http://{addr}"),
        }
    }
}

impl Drop for LoopbackAgent {
    fn drop(&mut self) {
        terminate(&mut self.child);
    }
}

/// Prometheus on 127.0.0.1 (a free port), its storage and log in a
/// directory of its own; stopped and removed on drop.
struct Prometheus {
    child: Child,
    url: String,
    dir: PathBuf,
}

impl Prometheus {
    /// The binary, from PATH; a clear failure when it is not installed.
    fn binary() -> PathBuf {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|d| d.join("prometheus"))
            .find(|p| p.is_file())
            .expect("prometheus is not installed: run scripts/install-deps (Debian's `prometheus` package)")
    }

    fn start(config: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("lrpm-prometheus-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("prometheus.yml");
        std::fs::write(&file, config).unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = std::fs::File::create(dir.join("log")).unwrap();
        let child = Command::new(Self::binary())
            .arg(format!("--config.file={}", file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("starting prometheus");
        let p = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            dir,
        };
        p.eventually("Prometheus ready", || {
            ureq::get(&format!("{}/-/ready", p.url))
                .call()
                .is_ok_and(|r| r.status() == 200)
        });
        p
    }

    /// Polls `ready` until it holds; fails after 60 s with Prometheus's
    /// log (a hang, not a slow machine).
    fn eventually(&self, what: &str, mut ready: impl FnMut() -> bool) {
        let end = Instant::now() + Duration::from_secs(60);
        while !ready() {
            assert!(
                Instant::now() < end,
                "{what}: not after 60 s; prometheus log:\n{}",
                std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
            );
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// An instant query at `at` (Unix seconds): the result vector, or
    /// Prometheus's error.
    fn query_at(&self, expr: &str, at: f64) -> Result<Vec<Value>, String> {
        let r = ureq::get(&format!("{}/api/v1/query", self.url))
            .query("query", expr)
            .query("time", &format!("{at:.3}"))
            .call();
        let body: Value = match r {
            Ok(r) => r.into_json().map_err(|e| e.to_string())?,
            Err(ureq::Error::Status(_, r)) => r.into_json().map_err(|e| e.to_string())?,
            Err(e) => return Err(e.to_string()),
        };
        if body["status"] != "success" {
            return Err(format!("{expr}: {}", body["error"]));
        }
        Ok(body["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default())
    }

    fn query(&self, expr: &str) -> Vec<Value> {
        self.query_at(expr, now())
            .unwrap_or_else(|e| panic!("query {expr}: {e}"))
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        terminate(&mut self.child);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Every PromQL query of the dashboard (each panel's targets), and its
/// variables' `label_values(METRIC, LABEL)` queries as (METRIC, LABEL).
fn dashboard() -> (Vec<String>, Vec<(String, String)>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana/linerate.json");
    let d: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    fn exprs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(e) = m.get("expr").and_then(Value::as_str) {
                    out.push(e.to_string());
                }
                m.values().for_each(|v| exprs(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| exprs(v, out)),
            _ => {}
        }
    }
    let mut queries = Vec::new();
    exprs(&d["panels"], &mut queries);
    let variables = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["type"] == "query")
        .map(|v| {
            let q = v["query"]["query"].as_str().unwrap();
            let inner = q
                .strip_prefix("label_values(")
                .and_then(|q| q.strip_suffix(')'))
                .unwrap_or_else(|| panic!("variable query {q:?}: not label_values(METRIC, LABEL)"));
            let (metric, label) = inner.rsplit_once(',').unwrap();
            (metric.trim().to_string(), label.trim().to_string())
        })
        .collect();
    (queries, variables)
}

/// A dashboard query as Grafana sends it: `$pair` the pair chosen, the
/// intervals 5 s (5 scrapes).
fn as_sent(expr: &str, pair: &str) -> String {
    let e = expr
        .replace("$__rate_interval", "5s")
        .replace("$__interval", "5s")
        .replace("$__range", "5s")
        .replace("$pair", pair);
    assert!(
        !e.contains('$'),
        "a variable the test does not know: {expr}"
    );
    e
}

/// A sample's value.
fn value(sample: &Value) -> f64 {
    sample["value"][1].as_str().unwrap().parse().unwrap()
}

/// The fleet of two pairs: labs, agents, token files, inventory; dropped
/// in order (agents before their labs).
struct Fleet {
    a1: Agent,
    b1: Agent,
    a2: LoopbackAgent,
    b2: LoopbackAgent,
    token2: PathBuf,
    inventory: PathBuf,
    _lab1: MgmtLab,
    _lab2: Lab,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.token2);
        let _ = std::fs::remove_file(&self.inventory);
    }
}

fn fleet() -> Fleet {
    let lab1 = MgmtLab::up(P1, TOKEN1);
    let lab2 = Lab::up(P2, 1500);
    let token2 = agents::token_file(P2, "agents", TOKEN2);
    let a1 = Agent::start(
        &format!("{P1}-a"),
        "198.19.255.2:7483",
        P1,
        &lab1.token,
        TOKEN1,
    );
    let b1 = Agent::start(
        &format!("{P1}-b"),
        "198.19.255.6:7483",
        P1,
        &lab1.token,
        TOKEN1,
    );
    let a2 = LoopbackAgent::start(&format!("{P2}-a0"), &format!("{P2}-a"), &token2);
    let b2 = LoopbackAgent::start(&format!("{P2}-b0"), &format!("{P2}-b"), &token2);
    let side = |agent: &str, iface: String, token: &Path| {
        format!(
            "agent = \"{agent}\"\niface = \"{iface}\"\ntoken_file = \"{}\"\n",
            token.display()
        )
    };
    let mut text = String::from("version = 1\n");
    for (name, tx, rx, token) in [
        (P1, &a1.url, &b1.url, &lab1.token),
        (P2, &a2.url, &b2.url, &token2),
    ] {
        text.push_str(&format!(
            "\n[[pair]]\nname = \"{name}\"\n[pair.tx]\n{}[pair.rx]\n{}",
            side(tx, format!("{name}-a0"), token),
            side(rx, format!("{name}-b0"), token)
        ));
    }
    let inventory =
        std::env::temp_dir().join(format!("{P1}-inventory-{}.toml", std::process::id()));
    std::fs::write(&inventory, text).unwrap();
    Fleet {
        a1,
        b1,
        a2,
        b2,
        token2,
        inventory,
        _lab1: lab1,
        _lab2: lab2,
    }
}

/// Starts one pair's counted stream, named `pair`, at a low paced rate.
fn stream(pair: &str, tx: &str, rx: &str, token: &str, netns: bool) -> Child {
    let count = COUNT.to_string();
    let mut c = Command::new(linerate());
    c.args([
        "stream", "--count", &count, "--rate", "4000", "--warmup", "0s",
    ])
    .args(["--duration", "30s", "--napi", "softirq", "--json"])
    .args(["--pair", pair, "--tx-agent", tx, "--rx-agent", rx])
    .args(["--tx-iface", &format!("{pair}-a0")])
    .args(["--rx-iface", &format!("{pair}-b0")])
    .env("LINERATE_TOKEN", token)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    if netns {
        c.args(["--tx-netns", &format!("{pair}-a")])
            .args(["--rx-netns", &format!("{pair}-b")]);
    }
    c.spawn().expect("starting the controller")
}

fn finished(child: Child, pair: &str) -> Value {
    let out: Output = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the stream of {pair} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out)
}

#[test]
fn prometheus_scrapes_every_agent_and_counts_the_runs_exactly() {
    if !root_or_skip("prometheus") {
        return;
    }
    let _turn = serial();
    let f = fleet();
    let out = run(&[
        "fleet",
        "prometheus",
        "--inventory",
        f.inventory.to_str().unwrap(),
        "--interval",
        "1s",
    ]);
    assert!(
        out.status.success(),
        "fleet prometheus: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let prom = Prometheus::start(&String::from_utf8(out.stdout).unwrap());

    // Every agent of the inventory is a target, and up.
    let want: Vec<(&str, &str)> = [P1, P2]
        .iter()
        .flat_map(|p| [(*p, "tx"), (*p, "rx")])
        .collect();
    // (Read from one answer: a later scrape may time out on a busy host.)
    let mut up = Vec::new();
    prom.eventually("every agent scraped and up", || {
        up = prom.query("up");
        up.len() == want.len() && up.iter().all(|s| value(s) == 1.0)
    });
    for (pair, side) in &want {
        let s = up
            .iter()
            .find(|s| s["metric"]["pair"] == *pair && s["metric"]["side"] == *side)
            .unwrap_or_else(|| panic!("no target {pair} {side}: {up:?}"));
        assert_eq!(s["metric"]["job"], format!("linerate-{pair}-{side}"), "{s}");
    }

    // Both pairs at once, each run named by its pair.
    let c1 = stream(P1, &f.a1.url, &f.b1.url, TOKEN1, false);
    let c2 = stream(P2, &f.a2.url, &f.b2.url, TOKEN2, true);
    // The dashboard's queries while the runs go (frames counted on both
    // pairs: live counters scraped): each is valid PromQL.
    prom.eventually("frames received on both pairs", || {
        prom.query("sum by (pair) (linerate_worker_frames_total{role=\"rx\"}) > 0")
            .len()
            == 2
    });
    let (queries, variables) = dashboard();
    assert!(queries.len() >= 10, "{queries:?}");
    let during = now();
    for q in &queries {
        let e = as_sent(q, P1);
        if let Err(e) = prom.query_at(&e, during) {
            panic!("dashboard query refused during the run: {e}");
        }
    }
    let (r1, r2) = (finished(c1, P1), finished(c2, P2));
    let counted: Vec<u64> = [&r1, &r2]
        .iter()
        .map(|r| r["frames"]["received"].as_u64().unwrap())
        .collect();
    assert!(counted.iter().all(|c| *c > 0), "{counted:?}");

    // A scrape of every agent after both runs ended: the final counters
    // (an agent stores its run's result and marks it ended at once).
    prom.eventually("every agent scraped after the runs", || {
        prom.query("linerate_run_active == 0").len() == want.len()
    });
    let at = now();
    let received = |pairs: &str| {
        let expr = format!(
            "sum(last_over_time(linerate_worker_frames_total{{role=\"rx\",pair=~\"{pairs}\"}}[2m]))"
        );
        let r = prom.query_at(&expr, at).unwrap();
        assert_eq!(r.len(), 1, "{expr}: {r:?}");
        value(&r[0])
    };
    eprintln!(
        "received frames, controllers: {P1} {} {P2} {}; PromQL: {} {}; dashboard queries: {}",
        counted[0],
        counted[1],
        received(P1),
        received(P2),
        queries.len()
    );
    assert_eq!(received(P1), counted[0] as f64, "{P1}");
    assert_eq!(received(P2), counted[1] as f64, "{P2}");
    assert_eq!(
        received(&format!("{P1}|{P2}")),
        (counted[0] + counted[1]) as f64
    );
    // After the runs: every query of the dashboard returns data for each
    // pair, and its pair variable offers both pairs.
    for pair in [P1, P2] {
        for q in &queries {
            let e = as_sent(q, pair);
            let r = prom.query_at(&e, at).unwrap_or_else(|e| panic!("{e}"));
            assert!(!r.is_empty(), "dashboard query {e}: no data");
        }
    }
    assert!(!variables.is_empty());
    for (metric, label) in &variables {
        let body: Value = ureq::get(&format!("{}/api/v1/label/{label}/values", prom.url))
            .query("match[]", metric)
            .call()
            .unwrap()
            .into_json()
            .unwrap();
        let values = body["data"].as_array().unwrap();
        for pair in [P1, P2] {
            assert!(
                values.iter().any(|v| v == pair),
                "{label} of {metric}: {body}"
            );
        }
    }
    // The pair label is the agents' own (the run request's, from --pair),
    // not only the target's.
    for (url, token, pair) in [(&f.a1.url, TOKEN1, P1), (&f.b2.url, TOKEN2, P2)] {
        let text = ureq::get(&format!("{url}/metrics"))
            .set("Authorization", &format!("Bearer {token}"))
            .call()
            .unwrap()
            .into_string()
            .unwrap();
        let want = format!(",pair=\"{pair}\",role=");
        assert!(text.contains(&want), "{url}: {want} not in {text}");
    }
    // The labels every series of a run carries.
    let rx = prom.query("linerate_worker_frames_total{role=\"rx\"}");
    assert_eq!(rx.len(), 2, "{rx:?}");
    for s in &rx {
        let m = &s["metric"];
        let pair = m["pair"].as_str().unwrap();
        assert_eq!(m["interface"], format!("{pair}-b0"), "{m}");
        assert_eq!(m["side"], "rx", "{m}");
        assert_eq!(m["queue"], "0", "{m}");
        assert!(m["run"].as_str().is_some_and(|r| r.starts_with('r')), "{m}");
        assert!(m.get("exported_pair").is_none(), "{m}");
    }
    drop(prom);
    drop(f);
}
