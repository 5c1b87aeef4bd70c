//! A real Prometheus (Debian's `prometheus`, on loopback) scraping the
//! agents of a fleet of two pairs (`linerate fleet up`) with the
//! configuration `linerate fleet prometheus` prints, while one controller
//! runs a counted stream on both pairs at once (`stream --fleet`): every
//! target up, PromQL's sum of the frames received over the run equal to
//! the controller's aggregate (and each pair's to that pair's count), and
//! every query of the Grafana dashboard (deploy/grafana/linerate.json)
//! valid during the run and returning data after it; `fleet down` leaves
//! nothing behind.
//!
//! Every fleet on a host takes the same management addresses (198.19.1.0
//! on; tests/fleet.rs's too): the test binaries run one after another.

mod common;
#[path = "support/fleet.rs"]
mod fleet_support;

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    thread,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use common::*;
use fleet_support::Fleet;
use serde_json::Value;

/// The fleet's name prefix: its pairs are `tpm0` and `tpm1` (tests/fleet.rs
/// takes `tflt`, `tflk` and `tflu`).
const PREFIX: &str = "tpm";
/// The fleet's pairs, in the inventory's order.
const PAIRS: [&str; 2] = ["tpm0", "tpm1"];
const COUNT: u64 = 12_000;

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
        let dir = std::env::temp_dir().join(format!("{PREFIX}-prometheus-{}", std::process::id()));
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

/// Every agent of the fleet's inventory as (pair, side, URL, token), in
/// its order (`fleet up` writes each side's `agent` before its
/// `token_file`).
fn agents(fleet: &Fleet) -> Vec<(String, &'static str, String, String)> {
    let text = std::fs::read_to_string(&fleet.inventory).unwrap();
    let (mut pair, mut side, mut agent) = (String::new(), "", String::new());
    let mut agents = Vec::new();
    for line in text.lines() {
        let value = |key: &str| {
            line.strip_prefix(key)
                .map(|v| v.trim_matches('"').to_string())
        };
        match line {
            "[pair.tx]" => side = "tx",
            "[pair.rx]" => side = "rx",
            _ => {}
        }
        if let Some(v) = value("name = ") {
            pair = v;
        } else if let Some(v) = value("agent = ") {
            agent = v;
        } else if let Some(v) = value("token_file = ") {
            let token = std::fs::read_to_string(&v).unwrap().trim().to_string();
            agents.push((pair.clone(), side, agent.clone(), token));
        }
    }
    assert_eq!(agents.len(), 2 * PAIRS.len(), "{text}");
    agents
}

/// Starts one controller's counted stream on every pair of the fleet at a
/// low paced rate.
fn fleet_stream(inventory: &str) -> Child {
    let count = COUNT.to_string();
    spawn(&[
        "stream",
        "--fleet",
        inventory,
        "--count",
        &count,
        "--rate",
        "4000",
        "--warmup",
        "0s",
        "--duration",
        "30s",
        "--napi",
        "softirq",
        "--json",
    ])
}

/// The controller's JSON, once it ended well.
fn finished(child: Child) -> Value {
    let out: Output = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the fleet stream failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out)
}

/// The namespaces of the fleet's prefix that `ip netns list` shows.
fn namespaces_left() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(out.status.success(), "ip netns list failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|ns| ns.starts_with(PREFIX))
        .map(str::to_string)
        .collect()
}

#[test]
#[ignore = "needs root: a Prometheus scraping agents of lab pairs"]
fn prometheus_scrapes_every_agent_and_counts_the_runs_exactly() {
    require_root("prometheus");
    let _turn = serial();
    let f = Fleet::up(PREFIX, PAIRS.len() as u32);
    assert_eq!(
        namespaces_left().len(),
        2 * PAIRS.len(),
        "{PREFIX}* namespaces"
    );
    let agents = agents(&f);
    let out = run(&[
        "fleet",
        "prometheus",
        "--inventory",
        f.inv(),
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
    // (Read from one answer: a later scrape may time out on a busy host.)
    let mut up = Vec::new();
    prom.eventually("every agent scraped and up", || {
        up = prom.query("up");
        up.len() == agents.len() && up.iter().all(|s| value(s) == 1.0)
    });
    for (pair, side, url, _) in &agents {
        let s = up
            .iter()
            .find(|s| s["metric"]["pair"] == *pair && s["metric"]["side"] == *side)
            .unwrap_or_else(|| panic!("no target {pair} {side}: {up:?}"));
        assert_eq!(s["metric"]["job"], format!("linerate-{pair}-{side}"), "{s}");
        assert_eq!(
            s["metric"]["instance"],
            url.trim_start_matches("http://"),
            "{s}"
        );
    }

    // One controller on both pairs at once, each pair's run named by it.
    let controller = fleet_stream(f.inv());
    // The dashboard's queries while the run goes (frames counted on both
    // pairs: live counters scraped): each is valid PromQL.
    prom.eventually("frames received on both pairs", || {
        prom.query("sum by (pair) (linerate_worker_frames_total{role=\"rx\"}) > 0")
            .len()
            == PAIRS.len()
    });
    let (queries, variables) = dashboard();
    assert!(queries.len() >= 10, "{queries:?}");
    let during = now();
    for q in &queries {
        let e = as_sent(q, PAIRS[0]);
        if let Err(e) = prom.query_at(&e, during) {
            panic!("dashboard query refused during the run: {e}");
        }
    }
    let r = finished(controller);
    let counted: Vec<u64> = PAIRS
        .iter()
        .enumerate()
        .map(|(i, pair)| {
            let p = &r["pairs"][i];
            assert_eq!(p["pair"], *pair, "{p:#}");
            p["frames"]["received"].as_u64().unwrap()
        })
        .collect();
    assert!(counted.iter().all(|c| *c > 0), "{counted:?}");
    let aggregate = r["aggregate"]["frames"]["received"].as_u64().unwrap();
    assert_eq!(
        aggregate,
        counted.iter().sum::<u64>(),
        "{:#}",
        r["aggregate"]
    );

    // A scrape of every agent after the run ended: the final counters
    // (an agent stores its run's result and marks it ended at once).
    prom.eventually("every agent scraped after the run", || {
        prom.query("linerate_run_active == 0").len() == agents.len()
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
    let every = PAIRS.join("|");
    eprintln!(
        "received frames, controller: {} {} aggregate {aggregate}; PromQL: {} {} total {}; dashboard queries: {}",
        counted[0],
        counted[1],
        received(PAIRS[0]),
        received(PAIRS[1]),
        received(&every),
        queries.len()
    );
    for (pair, counted) in PAIRS.iter().zip(&counted) {
        assert_eq!(received(pair), *counted as f64, "{pair}");
    }
    assert_eq!(received(&every), aggregate as f64);
    after_the_run(&prom, &queries, &variables, at, &agents);
    drop(prom);

    // Down leaves nothing: no namespace of the prefix, no inventory.
    let out = f.down();
    assert!(
        out.status.success(),
        "fleet down: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(namespaces_left(), Vec::<String>::new());
    assert!(!f.inventory.exists(), "inventory left");
    drop(f);
}

/// After the run: every query of the dashboard returns data for each
/// pair, its pair variable offers both pairs, the agents label their
/// series with the pair themselves, and every series of the run carries
/// its labels.
fn after_the_run(
    prom: &Prometheus,
    queries: &[String],
    variables: &[(String, String)],
    at: f64,
    agents: &[(String, &str, String, String)],
) {
    for pair in PAIRS {
        for q in queries {
            let e = as_sent(q, pair);
            let r = prom.query_at(&e, at).unwrap_or_else(|e| panic!("{e}"));
            assert!(!r.is_empty(), "dashboard query {e}: no data");
        }
    }
    assert!(!variables.is_empty());
    for (metric, label) in variables {
        let body: Value = ureq::get(&format!("{}/api/v1/label/{label}/values", prom.url))
            .query("match[]", metric)
            .call()
            .unwrap()
            .into_json()
            .unwrap();
        let values = body["data"].as_array().unwrap();
        for pair in PAIRS {
            assert!(
                values.iter().any(|v| v == pair),
                "{label} of {metric}: {body}"
            );
        }
    }
    // The pair label is the agents' own (the run request's, from the
    // fleet's pair name), not only the target's.
    for (pair, _, url, token) in agents {
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
    assert_eq!(rx.len(), PAIRS.len(), "{rx:?}");
    for s in &rx {
        let m = &s["metric"];
        let pair = m["pair"].as_str().unwrap();
        assert_eq!(m["interface"], format!("{pair}-b0"), "{m}");
        assert_eq!(m["side"], "rx", "{m}");
        assert_eq!(m["queue"], "0", "{m}");
        assert!(m["run"].as_str().is_some_and(|r| r.starts_with('r')), "{m}");
        assert!(m.get("exported_pair").is_none(), "{m}");
    }
}
