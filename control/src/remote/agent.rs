//! `linerate agent`: the control API of one host. It runs one side of a
//! stream or rr as a child `linerate` process (the same binary, with the
//! hidden --role options), feeds /metrics from the child's live counters,
//! and ends the child (SIGTERM, then SIGKILL) when its lease runs out, when
//! asked, or when the agent itself stops. The child's own clean-up (its
//! Ctrl-C handler, the bpf_link dropped on exit) detaches XDP and closes
//! the sockets; if the agent dies, the child sees its stdin close and ends.

use std::{
    io::{BufRead, BufReader, Read, Write},
    path::PathBuf,
    process::{Child, ChildStdin, Command, Stdio},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex, MutexGuard,
    },
    thread,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use anyhow::{Context, Result};
use axum::{
    extract::{Path, Query, Request, State},
    http::{header, StatusCode},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use clap::Parser;
use nix::{sys::signal, unistd::Pid};
use serde::Deserialize;
use serde_json::Value;

use super::{
    api::{self, ApiError, Created, RunRequest, RunStatus},
    metrics, token,
};
use crate::cli::{AgentServeArgs, Cli, Command as CliCommand, DoctorArgs, LabName, RoleArg};

/// After SIGTERM, how long a child gets before SIGKILL.
const KILL_AFTER: Duration = Duration::from_secs(5);
/// Leases the agent accepts.
const LEASE_MS: std::ops::RangeInclusive<u64> = 500..=120_000;
/// Lines of a child's stderr kept for error messages.
const TAIL: usize = 20;

/// The agent's state: its token and the one run it may have.
struct Shared {
    token: String,
    exe: PathBuf,
    run: Mutex<Option<Slot>>,
    seq: AtomicU64,
}

/// A run, going or ended (kept until the next one replaces it).
struct Slot {
    id: String,
    test: String,
    role: String,
    state: &'static str,
    pid: i32,
    stdin: Option<ChildStdin>,
    lease: Duration,
    lease_until: Instant,
    /// Why the agent ends the child, once it decided to.
    ending: Option<String>,
    live: Option<Value>,
    result: Option<Value>,
    error: Option<String>,
    exit_code: Option<i32>,
    tail: Vec<String>,
}

impl Slot {
    fn active(&self) -> bool {
        self.state == "running"
    }

    fn status(&self) -> RunStatus {
        RunStatus {
            id: self.id.clone(),
            test: self.test.clone(),
            role: self.role.clone(),
            state: self.state.to_string(),
            result: self.result.clone(),
            error: self.error.clone(),
            exit_code: self.exit_code,
        }
    }
}

impl Shared {
    fn slot(&self) -> MutexGuard<'_, Option<Slot>> {
        self.run.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Asks the running child, if any, to end now; waits for it, bounded.
    fn end_run(&self, why: &str) {
        let active = {
            let mut g = self.slot();
            match g.as_mut().filter(|s| s.active()) {
                Some(s) => {
                    s.ending.get_or_insert_with(|| why.to_string());
                    true
                }
                None => false,
            }
        };
        if !active {
            return;
        }
        let end = Instant::now() + KILL_AFTER + Duration::from_secs(2);
        while Instant::now() < end && self.slot().as_ref().is_some_and(Slot::active) {
            thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Serves the API until Ctrl-C or SIGTERM; then ends any run.
pub fn serve(a: &AgentServeArgs) -> Result<()> {
    let token = token::read(a.token_file.as_deref())?;
    crate::privilege::require_root("linerate agent")?;
    let exe = std::env::current_exe().context("finding linerate's own executable")?;
    let shared = Arc::new(Shared {
        token,
        exe,
        run: Mutex::new(None),
        seq: AtomicU64::new(1),
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the agent's runtime")?;
    let result = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(a.listen)
            .await
            .with_context(|| {
                format!(
                    "cannot listen on {}: use an address of this host (`ip addr`) and a free port",
                    a.listen
                )
            })?;
        eprintln!(
            "linerate: agent {} (API {}) listening on http://{}",
            env!("CARGO_PKG_VERSION"),
            api::API_VERSION,
            a.listen
        );
        axum::serve(listener, router(shared.clone()))
            .with_graceful_shutdown(shutdown())
            .await
            .context("serving the API")
    });
    shared.end_run("the agent shut down");
    eprintln!("linerate: agent stopped");
    result
}

async fn shutdown() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/version", get(version))
        .route("/v1/clock", get(clock))
        .route("/v1/ifaces/{name}", get(iface))
        .route("/v1/doctor", get(doctor))
        .route("/v1/runs", post(create))
        .route("/v1/runs/{id}", get(status))
        .route("/v1/runs/{id}/lease", post(lease))
        .route("/v1/runs/{id}/stop", post(stop))
        .route("/metrics", get(metrics_text))
        .fallback(|| async {
            error(
                StatusCode::NOT_FOUND,
                "no such endpoint (see README, \"Across two hosts\")",
            )
        })
        .layer(middleware::from_fn_with_state(shared.clone(), auth))
        .with_state(shared)
}

fn error(code: StatusCode, msg: impl Into<String>) -> Response {
    (code, Json(ApiError { error: msg.into() })).into_response()
}

/// Every request carries the token, or is refused before it does anything.
async fn auth(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let ok = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| token::same(t.trim().as_bytes(), s.token.as_bytes()));
    if !ok {
        let mut r = error(
            StatusCode::UNAUTHORIZED,
            "missing or wrong token: send `Authorization: Bearer TOKEN` with the agent's shared token",
        );
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
        return r;
    }
    next.run(req).await
}

async fn version() -> Json<api::Version> {
    Json(api::Version::ours())
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

async fn clock() -> Json<api::Clock> {
    Json(api::Clock { unix_ns: unix_ns() })
}

#[derive(Deserialize)]
struct Where {
    iface: Option<String>,
    netns: Option<String>,
}

async fn iface(Path(name): Path<String>, Query(w): Query<Where>) -> Response {
    let r = tokio::task::spawn_blocking(move || -> Result<api::Iface> {
        let i = crate::iface::info(w.netns.as_deref(), &name)?;
        let ip = crate::iface::ipv4(w.netns.as_deref(), &name)?;
        let m = i.mac;
        Ok(api::Iface {
            name,
            mac: format!(
                "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
                m[0], m[1], m[2], m[3], m[4], m[5]
            ),
            ipv4: ip,
            mtu: i.mtu,
            queues: i.rx_queues.min(i.tx_queues),
        })
    })
    .await;
    match r {
        Ok(Ok(i)) => Json(i).into_response(),
        Ok(Err(e)) => error(StatusCode::NOT_FOUND, format!("{e:#}")),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn doctor(State(s): State<Arc<Shared>>, Query(w): Query<Where>) -> Response {
    if let Some(run) = s.slot().as_ref().filter(|r| r.active()) {
        return error(
            StatusCode::CONFLICT,
            format!(
                "run {} is going: the doctor's probes (XDP attach, socket binds) would disturb it; ask again when it ended",
                run.id
            ),
        );
    }
    let Some(iface) = w.iface else {
        return error(
            StatusCode::BAD_REQUEST,
            "give ?iface=NAME: an agent probes a named interface (it makes no lab)",
        );
    };
    let r = tokio::task::spawn_blocking(move || {
        crate::doctor::run(&DoctorArgs {
            iface: Some(iface),
            netns: w.netns,
            lab: LabName { name: "lr".into() },
            json: true,
        })
    })
    .await;
    match r {
        Ok(Ok(rep)) => Json(rep).into_response(),
        Ok(Err(e)) => error(StatusCode::BAD_REQUEST, format!("{e:#}")),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// The child's command line for a request, checked with the CLI's own
/// definitions so that errors read as on the command line.
pub fn child_args(req: &RunRequest) -> Result<Vec<String>, String> {
    if !matches!(req.test.as_str(), "stream" | "rr") {
        return Err(format!(
            "test {:?} is unknown: use \"stream\" or \"rr\"",
            req.test
        ));
    }
    let role = match req.role.as_str() {
        "tx" | "client" => RoleArg::Tx,
        "rx" | "responder" => RoleArg::Rx,
        r => {
            return Err(format!(
                "role {r:?} is unknown: use tx (client) or rx (responder)"
            ))
        }
    };
    let mut argv = vec![req.test.clone()];
    argv.extend(req.args.iter().cloned());
    for (flag, v) in [
        ("--role", Some(role.as_str().to_string())),
        ("--tx-iface", Some(req.iface.clone())),
        ("--rx-iface", Some(req.iface.clone())),
        ("--tx-netns", req.netns.clone()),
        ("--rx-netns", req.netns.clone()),
        ("--peer-mac", Some(req.peer.mac.clone())),
        ("--peer-ip", Some(req.peer.ip.to_string())),
        ("--start-at", Some(req.start_at_ns.to_string())),
    ] {
        if let Some(v) = v {
            argv.extend([flag.to_string(), v]);
        }
    }
    argv.push("--json".into());
    let cli = Cli::try_parse_from(std::iter::once("linerate".to_string()).chain(argv.clone()))
        .map_err(|e| {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            first.trim_start_matches("error: ").to_string()
        })?;
    let checked = match &cli.command {
        CliCommand::Stream(a) => {
            no_agents(&a.run)?;
            crate::stream::plan::check_args(a)
        }
        CliCommand::Rr(a) => {
            no_agents(&a.run)?;
            crate::rr::plan::check_args(a)
        }
        _ => Ok(()),
    };
    checked.map_err(|e| format!("{e:#}"))?;
    Ok(argv)
}

fn no_agents(a: &crate::cli::RunArgs) -> Result<(), String> {
    if a.agents.tx_agent.is_some() || a.agents.rx_agent.is_some() {
        return Err("a run on an agent cannot name agents itself".into());
    }
    if a.reverse {
        return Err("--reverse swaps hosts: swap --tx-agent and --rx-agent instead".into());
    }
    Ok(())
}

async fn create(
    State(s): State<Arc<Shared>>,
    req: Result<Json<RunRequest>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let req = match req {
        Ok(Json(r)) => r,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("the run request is not valid: {}", e.body_text()),
            )
        }
    };
    if !LEASE_MS.contains(&req.lease_ms) {
        return error(
            StatusCode::BAD_REQUEST,
            format!(
                "lease_ms {} is out of range: use {} to {}",
                req.lease_ms,
                LEASE_MS.start(),
                LEASE_MS.end()
            ),
        );
    }
    let argv = match child_args(&req) {
        Ok(a) => a,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    let mut g = s.slot();
    if let Some(run) = g.as_ref().filter(|r| r.active()) {
        return error(
            StatusCode::CONFLICT,
            format!(
                "this agent is busy with run {} ({} {}): wait for it to end, or POST /v1/runs/{}/stop",
                run.id, run.test, run.role, run.id
            ),
        );
    }
    let child = Command::new(&s.exe)
        .args(&argv)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("starting {}: {e}", s.exe.display()),
            )
        }
    };
    let id = format!(
        "r{}-{}",
        s.seq.fetch_add(1, Ordering::Relaxed),
        std::process::id()
    );
    let lease = Duration::from_millis(req.lease_ms);
    *g = Some(Slot {
        id: id.clone(),
        test: req.test.clone(),
        role: req.role.clone(),
        state: "running",
        pid: child.id() as i32,
        stdin: child.stdin.take(),
        lease,
        lease_until: Instant::now() + lease,
        ending: None,
        live: None,
        result: None,
        error: None,
        exit_code: None,
        tail: Vec::new(),
    });
    drop(g);
    eprintln!("linerate: agent: run {id}: {} {}", req.test, argv.join(" "));
    let (s2, id2) = (s.clone(), id.clone());
    thread::spawn(move || watch(s2, child, id2));
    (StatusCode::CREATED, Json(Created { id })).into_response()
}

/// Follows a child to its end: its live counters and stderr, its lease,
/// and its result.
fn watch(s: Arc<Shared>, mut child: Child, id: String) {
    let mut stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let out = thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let s2 = s.clone();
    let id2 = id.clone();
    let err = thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let mut g = s2.slot();
            let Some(slot) = g.as_mut().filter(|r| r.id == id2) else {
                continue;
            };
            match line.strip_prefix(super::role::LIVE_PREFIX) {
                Some(j) => slot.live = serde_json::from_str(j).ok(),
                None => {
                    eprintln!("linerate: agent: run {id2}: {line}");
                    slot.tail.push(line);
                    if slot.tail.len() > TAIL {
                        slot.tail.remove(0);
                    }
                }
            }
        }
    });
    let mut term_at: Option<Instant> = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) => {}
            Err(_) => break None,
        }
        {
            let mut g = s.slot();
            if let Some(slot) = g.as_mut().filter(|r| r.id == id) {
                if slot.ending.is_none() && Instant::now() > slot.lease_until {
                    slot.ending = Some(format!(
                        "the controller renewed no lease for {:?}: the run was stopped",
                        slot.lease
                    ));
                }
                if term_at.is_none() {
                    if let Some(why) = &slot.ending {
                        eprintln!("linerate: agent: run {id}: ending it: {why}");
                        let _ = signal::kill(Pid::from_raw(slot.pid), signal::Signal::SIGTERM);
                        term_at = Some(Instant::now());
                    }
                }
            }
        }
        if term_at.is_some_and(|t| t.elapsed() > KILL_AFTER) {
            let _ = child.kill();
        }
        thread::sleep(Duration::from_millis(50));
    };
    let text = out.join().unwrap_or_default();
    let _ = err.join();
    let mut g = s.slot();
    let Some(slot) = g.as_mut().filter(|r| r.id == id) else {
        return;
    };
    slot.stdin = None;
    slot.exit_code = status.and_then(|st| st.code());
    slot.result = serde_json::from_str(&text).ok();
    let errors: Vec<&String> = slot.tail.iter().filter(|l| l.contains("error")).collect();
    let said = errors
        .last()
        .map(|l| l.trim_start_matches("linerate: error: ").to_string());
    (slot.state, slot.error) = match (&slot.ending, slot.exit_code) {
        (Some(why), _) => ("stopped", Some(why.clone())),
        (None, Some(0)) => ("done", None),
        (None, code) => (
            "failed",
            Some(said.unwrap_or_else(|| match code {
                Some(c) => format!("the {} side exited with status {c}", slot.role),
                None => format!("the {} side was killed", slot.role),
            })),
        ),
    };
    eprintln!("linerate: agent: run {id}: {}", slot.state);
}

fn find<'a>(g: &'a mut MutexGuard<'_, Option<Slot>>, id: &str) -> Option<&'a mut Slot> {
    g.as_mut().filter(|r| r.id == id)
}

fn not_found(id: &str) -> Response {
    error(StatusCode::NOT_FOUND, format!("no run {id} on this agent"))
}

async fn status(State(s): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let mut g = s.slot();
    match find(&mut g, &id) {
        Some(slot) => Json(slot.status()).into_response(),
        None => not_found(&id),
    }
}

async fn lease(State(s): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let mut g = s.slot();
    match find(&mut g, &id) {
        Some(slot) => {
            slot.lease_until = Instant::now() + slot.lease;
            Json(slot.status()).into_response()
        }
        None => not_found(&id),
    }
}

#[derive(Deserialize)]
struct StopHow {
    /// End at once (SIGTERM) rather than finish normally.
    #[serde(default)]
    now: bool,
}

async fn stop(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
    Query(how): Query<StopHow>,
) -> Response {
    let mut g = s.slot();
    match find(&mut g, &id) {
        Some(slot) => {
            if slot.active() {
                if how.now {
                    slot.ending
                        .get_or_insert_with(|| "stopped by the controller".to_string());
                } else if let Some(stdin) = slot.stdin.as_mut() {
                    let _ = stdin.write_all(b"stop\n").and_then(|()| stdin.flush());
                }
            }
            (StatusCode::ACCEPTED, Json(slot.status())).into_response()
        }
        None => not_found(&id),
    }
}

async fn metrics_text(State(s): State<Arc<Shared>>) -> Response {
    let view = {
        let g = s.slot();
        g.as_ref().map(|r| metrics::RunView {
            test: r.test.clone(),
            role: r.role.clone(),
            active: r.active(),
            live: r.live.clone(),
            result: r.result.clone(),
        })
    };
    match metrics::render(view.as_ref()) {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}
