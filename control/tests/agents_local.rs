//! Two hosts, and a fleet, on this one host without root: `linerate
//! agent`s on 127.0.0.1 serving `lo` (`--allow-iface lo`), the controller
//! driving stream, rr, a gate and a sweep across two of them and a fleet of
//! two pairs across four, on kernel UDP sockets (the engines that attach
//! and set nothing, so that no root is needed: the path is
//! `PathPlan::unprivileged`). Run as root (CI), the agents still run as
//! uid 65534 without capabilities (`setpriv`), so the path tested is the
//! same: as root, the two sides of a run on one host's `lo` would each
//! hold the interface and refuse the other.
//!
//! What only real interfaces show (XDP, AF_XDP, NAPI, a killed agent's
//! lab left clean) stays in the root tests of tests/agent.rs and
//! tests/fleet.rs; this file checks the controller's side: the two hosts'
//! start, the merge, exact counts across hosts, gates, sweeps and the
//! fleet's aggregate.

mod common;

use std::{
    fs::File,
    net::{TcpListener, TcpStream},
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    sync::{Mutex, MutexGuard},
    time::{Duration, Instant},
};

use common::{json, linerate, tmp};
use serde_json::Value;

const TOKEN: &str = "agents-local-test-token-0123456789abcdef";

/// One test at a time: each run holds `lo`.
fn turn() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// A `linerate agent` on 127.0.0.1, serving `lo`; SIGTERM on drop.
struct Agent {
    child: Child,
    url: String,
    log: PathBuf,
}

/// The uid the agents run as when the tests run as root.
const NOBODY: u32 = 65_534;

/// `linerate` as a user without capabilities: itself when the tests are
/// not root; else through `setpriv` as [`NOBODY`], from a link in `dir`
/// (the build's folders need not be open to that user).
fn unprivileged(dir: &Path) -> Command {
    if !nix::unistd::geteuid().is_root() {
        return Command::new(linerate());
    }
    let bin = dir.join("linerate");
    if !bin.exists() && std::fs::hard_link(linerate(), &bin).is_err() {
        std::fs::copy(linerate(), &bin).unwrap();
    }
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid",
        &NOBODY.to_string(),
        "--regid",
        &NOBODY.to_string(),
    ])
    .args(["--clear-groups", "--inh-caps=-all"])
    .arg(bin);
    c
}

impl Agent {
    fn start(dir: &Path, name: &str, token_file: &Path) -> Agent {
        // A port the system just gave out and took back: free unless
        // another process takes it in between, which the wait below names.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let listen = format!("127.0.0.1:{port}");
        let log = dir.join(format!("{name}.log"));
        let child = unprivileged(dir)
            .args(["agent", "--listen", &listen, "--allow-iface", "lo"])
            .arg("--token-file")
            .arg(token_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&log).unwrap())
            .spawn()
            .expect("starting linerate agent");
        let mut agent = Agent {
            child,
            url: format!("http://{listen}"),
            log,
        };
        let end = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(&listen).is_err() {
            if let Some(status) = agent.child.try_wait().unwrap() {
                panic!("agent {name} ended ({status}): {}", agent.log_text());
            }
            assert!(
                Instant::now() < end,
                "agent {name} not listening after 20 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        agent
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let end = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().unwrap().is_none() {
            if Instant::now() > end {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A test's folder, its token files (mode 600) and `n` agents.
struct Hosts {
    dir: PathBuf,
    /// The controller's (a fleet's inventory names it): this user's.
    token: PathBuf,
    agents: Vec<Agent>,
    _turn: MutexGuard<'static, ()>,
}

impl Hosts {
    fn up(test: &str, n: usize) -> Hosts {
        let turn = turn();
        let dir = tmp(test);
        std::fs::create_dir(&dir).unwrap();
        let private = |name: &str| {
            let file = dir.join(name);
            std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
            file
        };
        let token = private("token");
        // Each user trusts only a token file of its own.
        let agents_token = private("agents-token");
        if nix::unistd::geteuid().is_root() {
            let nobody = Some(nix::unistd::Uid::from_raw(NOBODY));
            nix::unistd::chown(&agents_token, nobody, None).unwrap();
        }
        let agents = (0..n)
            .map(|i| Agent::start(&dir, &format!("agent{i}"), &agents_token))
            .collect();
        Hosts {
            dir,
            token,
            agents,
            _turn: turn,
        }
    }

    /// `linerate ARGS` across agents 0 (tx) and 1 (rx) on `lo`.
    fn across(&self, args: &[&str]) -> Output {
        Command::new(linerate())
            .args(args)
            .args(["--tx-agent", &self.agents[0].url])
            .args(["--rx-agent", &self.agents[1].url])
            .args(["--tx-iface", "lo", "--rx-iface", "lo", "--backend", "udp"])
            .env("LINERATE_TOKEN", TOKEN)
            .output()
            .unwrap()
    }

    fn logs(&self) -> String {
        self.agents.iter().map(Agent::log_text).collect()
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        self.agents.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A counted stream: 512-byte frames paced well below what `lo` carries.
const COUNTED: [&str; 11] = [
    "--size",
    "512",
    "--rate",
    "20000",
    "--warmup",
    "0s",
    "--duration",
    "30s",
    "--port",
    "17471",
    "--json",
];

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_stream_across_two_agents_counts_exactly() {
    let hosts = Hosts::up("agents-stream", 2);
    let mut args = vec!["stream", "--count", "8000"];
    args.extend(COUNTED);
    let out = hosts.across(&args);
    assert!(out.status.success(), "{}\n{}", stderr(&out), hosts.logs());
    let r = json(&out);
    // The merged result: each host's side, and what crossed.
    assert_eq!(r["frames"]["sent"], 8000, "{r:#}");
    assert_eq!(r["frames"]["received"], 8000, "{r:#}");
    assert_eq!(r["frames"]["lost"], 0, "{r:#}");
    for side in ["tx", "rx"] {
        let url = &hosts.agents[usize::from(side == "rx")].url;
        assert_eq!(r["agents"][side]["url"], url.as_str(), "{r:#}");
    }
    assert_eq!(r["setup"]["tx_engine"], "udp", "{r:#}");
    assert_eq!(r["setup"]["rx_engine"], "udp", "{r:#}");
    // Across two hosts there is no floor of one host's two cores to take.
    assert!(
        r["noise"]["not_measured"]
            .as_str()
            .is_some_and(|w| w.contains("two hosts")),
        "{r:#}"
    );
}

#[test]
fn a_gate_across_two_agents_exits_4_with_the_measured_value() {
    let hosts = Hosts::up("agents-gate", 2);
    let mut args = vec![
        "stream",
        "--count",
        "3000",
        "--expect",
        "frames.received >= 3000",
        "--expect",
        "frames.received > 3000",
    ];
    args.extend(COUNTED);
    let out = hosts.across(&args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(4), "{err}\n{}", hosts.logs());
    assert!(
        err.contains("expect frames.received >= 3000: met (measured 3000)")
            && err.contains("expect frames.received > 3000: UNMET (measured 3000)"),
        "{err}"
    );
    assert_eq!(json(&out)["frames"]["received"], 3000);
}

#[test]
fn rr_across_two_agents_answers_every_request_it_counts() {
    let hosts = Hosts::up("agents-rr", 2);
    let out = hosts.across(&[
        "rr",
        "--warmup",
        "0s",
        "--duration",
        "1s",
        "--port",
        "17471",
        "--json",
    ]);
    assert!(out.status.success(), "{}\n{}", stderr(&out), hosts.logs());
    let r = json(&out);
    let t = &r["transactions"];
    let done = t["completed"].as_u64().unwrap_or_else(|| panic!("{r:#}"));
    assert!(done > 0, "{r:#}");
    // Every transaction of the window has its latency.
    assert_eq!(r["latency"]["count"], done, "{r:#}");
    assert_eq!(r["agents"]["rx"]["url"], hosts.agents[1].url.as_str());
}

const SWEEP: &str = r#"name = "agents-small"
kind = "stream"
repeats = 1

[fixed]
backend = "udp"
size = 512
rate = 20000
warmup = "0s"
duration = "30s"
port = 17471

[[axis]]
name = "count"
values = [1000, 2000]

[[table]]
title = "Received"
rows = "count"
metrics = ["frames.received", "receiver.frames_per_s"]
"#;

#[test]
fn a_sweep_across_two_agents_writes_every_point_whole() {
    let hosts = Hosts::up("agents-sweep", 2);
    let spec = hosts.dir.join("sweep.toml");
    std::fs::write(&spec, SWEEP).unwrap();
    let out_dir = hosts.dir.join("out");
    let out = Command::new(linerate())
        .args(["sweep", spec.to_str().unwrap(), "--out"])
        .arg(&out_dir)
        .args(["--seed", "0"])
        .args(["--tx-agent", &hosts.agents[0].url])
        .args(["--rx-agent", &hosts.agents[1].url])
        .args(["--tx-iface", "lo", "--rx-iface", "lo"])
        .env("LINERATE_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stderr(&out), hosts.logs());
    let text = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2, "{text}");
    for (r, count) in records.iter().zip([1000u64, 2000]) {
        assert_eq!(r["result"]["frames"]["received"], count, "{r:#}");
        assert_eq!(r["result"]["frames"]["sent"], count, "{r:#}");
    }
    assert!(out_dir.join("report.md").is_file());
}

/// A fleet of two pairs on this host: four agents on 127.0.0.1, each pair
/// on `lo` with a UDP port of its own (the inventory's `port`).
#[test]
fn a_fleet_on_one_host_counts_every_pair_and_sums_them() {
    let hosts = Hosts::up("agents-fleet", 4);
    let token = hosts.token.display();
    let side = |which: &str, a: &Agent| {
        format!(
            "[pair.{which}]\nagent = \"{}\"\niface = \"lo\"\ntoken_file = \"{token}\"\n",
            a.url
        )
    };
    let mut inventory = String::from("version = 1\n");
    for (i, port) in [(0, 17471), (1, 18496)] {
        inventory.push_str(&format!("[[pair]]\nname = \"p{i}\"\nport = {port}\n"));
        inventory.push_str(&side("tx", &hosts.agents[2 * i]));
        inventory.push_str(&side("rx", &hosts.agents[2 * i + 1]));
    }
    let inv = hosts.dir.join("fleet.toml");
    std::fs::write(&inv, inventory).unwrap();
    std::fs::set_permissions(&inv, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = Command::new(linerate())
        .args([
            "stream",
            "--fleet",
            inv.to_str().unwrap(),
            "--backend",
            "udp",
        ])
        .args(["--count", "4000", "--expect", "frames.received == 8000"])
        .args(COUNTED.iter().filter(|a| !["--port", "17471"].contains(a)))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stderr(&out), hosts.logs());
    let r = json(&out);
    assert_eq!(r["aggregate"]["frames"]["received"], 8000, "{r:#}");
    assert_eq!(r["aggregate"]["frames"]["sent"], 8000, "{r:#}");
    let pairs = r["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2);
    for (p, name) in pairs.iter().zip(["p0", "p1"]) {
        assert_eq!(p["pair"], name, "{p:#}");
        assert_eq!(p["frames"]["received"], 4000, "{p:#}");
        assert_eq!(p["frames"]["duplicates"], 0, "{p:#}");
    }
}
