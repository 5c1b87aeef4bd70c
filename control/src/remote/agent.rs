//! `linerate agent`: the control API of one host. It runs one side of a
//! stream or rr as a child `linerate` process (the same binary, with the
//! hidden --role options), feeds /metrics from the child's live counters,
//! and ends the child (SIGTERM, then SIGKILL) when its lease runs out, when
//! asked, or when the agent itself stops. The child's own clean-up (its
//! Ctrl-C handler, the bpf_link dropped on exit) detaches XDP and closes
//! the sockets; if the agent dies, the child sees its stdin close and ends.
//!
//! It serves only the interfaces it was told to (`--allow-iface`, by default
//! the lab's), and keeps answering under load: it drives its connections
//! itself (hyper), with a cap, a timeout for a request head (which also
//! closes idle keep-alive connections), one per request, and a body limit.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::SocketAddr,
    os::unix::fs::MetadataExt,
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
    body::Body,
    extract::{
        rejection::JsonRejection, ConnectInfo, DefaultBodyLimit, Path, Query, Request, State,
    },
    http::{header, StatusCode},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use clap::Parser;
use nix::{sys::signal, unistd::Pid};
use serde::Deserialize;

use super::{
    api::{self, ApiError, Created, Holder, RunRequest, RunStatus},
    metrics, token,
};
use crate::cli::{
    parse_iface, parse_netns, AgentServeArgs, AllowedIface, Cli, Command as CliCommand, DoctorArgs,
    LabName, RoleArg,
};

/// After SIGTERM, how long a child gets before SIGKILL.
const KILL_AFTER: Duration = Duration::from_secs(5);
/// Leases the agent accepts.
const LEASE_MS: std::ops::RangeInclusive<u64> = 500..=120_000;
/// Lines of a child's stderr kept for error messages.
const TAIL: usize = 20;
/// Largest request body (a run request is well under a kilobyte).
pub const BODY_LIMIT: usize = 64 * 1024;
/// A body over BODY_LIMIT is read (and dropped) up to this before the 413.
const DRAIN_LIMIT: usize = 1024 * 1024;
/// Connections over the cap that get a second to read their 503.
const LINGERING: usize = 32;
/// Open files kept free of connections: the runs' pipes, the doctor, logs.
const FD_RESERVE: u64 = 256 + LINGERING as u64;

/// The agent's state: its token, what it may touch, and the one run it
/// may have.
struct Shared {
    token: String,
    exe: PathBuf,
    run: Mutex<Option<Slot>>,
    seq: AtomicU64,
    /// The interfaces requests may name.
    allow: Vec<AllowedIface>,
    /// Whether run requests may pass --force.
    allow_force: bool,
    /// The agent's own network namespace (device, inode).
    own_ns: Option<(u64, u64)>,
    /// A request's time limit (body and answer).
    request_timeout: Duration,
}

/// A run, going or ended (kept until the next one replaces it).
struct Slot {
    id: String,
    test: String,
    role: String,
    /// When it was started, and from which address.
    started: SystemTime,
    by: SocketAddr,
    /// The last stop request: from where, and how.
    stopped_by: Option<String>,
    state: &'static str,
    pid: i32,
    stdin: Option<ChildStdin>,
    lease: Duration,
    lease_until: Instant,
    /// Why the agent ends the child, once it decided to.
    ending: Option<String>,
    live: Option<crate::results::parts::Live>,
    result: Option<crate::results::run::RunResult>,
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
            stopped_by: self.stopped_by.clone(),
        }
    }

    fn holder(&self) -> Holder {
        Holder {
            id: self.id.clone(),
            test: self.test.clone(),
            role: self.role.clone(),
            since_unix_ns: self
                .started
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
            by: self.by.to_string(),
        }
    }

    /// "run ID (stream rx, started TIME, Ns ago, by ADDR)".
    fn describe(&self) -> String {
        let ago = self.started.elapsed().unwrap_or_default().as_secs_f64();
        format!(
            "run {} ({} {}, started {} UTC, {ago:.1} s ago, by {})",
            self.id,
            self.test,
            self.role,
            humantime::format_rfc3339_seconds(self.started)
                .to_string()
                .trim_end_matches('Z')
                .replace('T', " "),
            self.by
        )
    }
}

/// `s` as a shell word (names may hold any character but '/' and
/// whitespace: `q;id>pw;#` is one).
fn quoted(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-@+=,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// A namespace's identity: the (device, inode) of its nsfs file.
fn ns_id(path: &std::path::Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl Shared {
    fn ns_of(&self, netns: Option<&str>) -> Option<(u64, u64)> {
        match netns {
            None => self.own_ns,
            Some(n) => linerate_datapath::netns::path(n)
                .ok()
                .and_then(|p| ns_id(&p)),
        }
    }

    /// Whether two namespaces (None: the agent's own) are one.
    fn same_ns(&self, a: Option<&str>, b: Option<&str>) -> bool {
        a == b || matches!((self.ns_of(a), self.ns_of(b)), (Some(x), Some(y)) if x == y)
    }

    /// None when `iface` in `netns` (None: the agent's own) is one this
    /// agent serves; else why not and the flag that allows it (the 403's
    /// text).
    fn refusal(&self, iface: &str, netns: Option<&str>) -> Option<String> {
        if self
            .allow
            .iter()
            .any(|a| a.iface == iface && self.same_ns(a.netns.as_deref(), netns))
        {
            return None;
        }
        let asked = AllowedIface {
            iface: iface.to_string(),
            netns: netns.map(str::to_string),
        };
        let served: Vec<String> = self.allow.iter().map(ToString::to_string).collect();
        Some(format!(
            "interface {iface} {} is not one this agent serves (it serves {}): start the agent with --allow-iface {} to allow it",
            match netns {
                Some(n) => format!("in namespace {n}"),
                None => "in the agent's namespace".to_string(),
            },
            served.join(", "),
            quoted(&asked.to_string())
        ))
    }

    /// Why a run the child would be started with is refused (403), if it is.
    fn run_refusal(&self, cli: &Cli) -> Option<String> {
        let run = match &cli.command {
            CliCommand::Stream(a) => &a.run,
            CliCommand::Rr(a) => &a.run,
            _ => return Some("only stream and rr run on an agent".into()),
        };
        if run.force && !self.allow_force {
            return Some(
                "--force (replace an XDP program someone else attached) is refused by this agent: start it with --allow-force to allow it"
                    .into(),
            );
        }
        run_sides(cli)
            .iter()
            .find_map(|(iface, ns)| self.refusal(iface, ns.as_deref()))
    }

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

/// The interfaces (and namespaces) a run would use: its --tx-iface and
/// --rx-iface, or without them the lab's.
fn run_sides(cli: &Cli) -> Vec<(String, Option<String>)> {
    let run = match &cli.command {
        CliCommand::Stream(a) => &a.run,
        CliCommand::Rr(a) => &a.run,
        _ => return Vec::new(),
    };
    let mut sides = match (&run.tx_iface, &run.rx_iface) {
        (Some(t), Some(r)) => vec![
            (t.clone(), run.tx_netns.clone()),
            (r.clone(), run.rx_netns.clone()),
        ],
        _ => ["a", "b"]
            .iter()
            .map(|side| {
                (
                    format!("{}-{side}0", run.lab.name),
                    Some(format!("{}-{side}", run.lab.name)),
                )
            })
            .collect(),
    };
    sides.dedup();
    sides
}

/// The NAPI modes (`threaded`) of the interfaces a run uses, before it.
type NapiModes = Vec<(String, Option<String>, String)>;

fn napi_modes(sides: &[(String, Option<String>)]) -> NapiModes {
    sides
        .iter()
        .filter_map(|(iface, ns)| {
            crate::sysfs::read(ns.as_deref(), iface, crate::sysfs::Attr::Threaded)
                .ok()
                .map(|v| (iface.clone(), ns.clone(), v))
        })
        .collect()
}

/// Puts back the NAPI modes a run changed and left so: the run restores
/// them itself when it ends, but not when it was killed.
fn restore_napi(id: &str, before: &NapiModes) {
    for (iface, ns, was) in before {
        let attr = crate::sysfs::Attr::Threaded;
        match crate::sysfs::read(ns.as_deref(), iface, attr) {
            Ok(now) if now != *was => {
                match crate::sysfs::write(ns.as_deref(), iface, attr, was) {
                    Ok(()) => eprintln!(
                        "linerate: agent: run {id}: NAPI of {iface} put back to threaded={was} (the run left {now})"
                    ),
                    Err(e) => eprintln!(
                        "linerate: agent: run {id}: putting NAPI of {iface} back to threaded={was} failed: {e:#}"
                    ),
                }
            }
            _ => {}
        }
    }
}

/// What the agent allows when no --allow-iface is given: the lab's two
/// interfaces in the lab's namespaces.
fn default_allowed(lab: &str) -> Vec<AllowedIface> {
    ["a", "b"]
        .iter()
        .map(|side| AllowedIface {
            iface: format!("{lab}-{side}0"),
            netns: Some(format!("{lab}-{side}")),
        })
        .collect()
}

/// Raises the open-file limit to its hard limit; returns the limit now.
fn raise_nofile() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => {
            if setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
                hard
            } else {
                soft
            }
        }
        Ok((soft, _)) => soft,
        Err(_) => 1024,
    }
}

/// `linerate agent`: serves until Ctrl-C or SIGTERM.
pub fn command(args: &AgentServeArgs) -> Result<std::process::ExitCode> {
    serve(args)?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// Serves the API until Ctrl-C or SIGTERM; then ends any run.
pub fn serve(a: &AgentServeArgs) -> Result<()> {
    let token = token::read(a.token_file.as_deref())?;
    crate::privilege::require_root("linerate agent")?;
    let exe = std::env::current_exe().context("finding linerate's own executable")?;
    let allow = if a.allow_iface.is_empty() {
        default_allowed(&a.lab.name)
    } else {
        a.allow_iface.clone()
    };
    let nofile = raise_nofile();
    let cap = u64::from(a.max_connections)
        .min(nofile.saturating_sub(FD_RESERVE))
        .max(1) as usize;
    let shared = Arc::new(Shared {
        token,
        exe,
        run: Mutex::new(None),
        seq: AtomicU64::new(1),
        allow,
        allow_force: a.allow_force,
        own_ns: ns_id(std::path::Path::new("/proc/self/ns/net")),
        request_timeout: a.request_timeout,
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
        let at = listener.local_addr().unwrap_or(a.listen);
        let served: Vec<String> = shared.allow.iter().map(ToString::to_string).collect();
        eprintln!(
            "linerate: agent {} (API {}) listening on http://{at}; serving {}{}; up to {cap} connections (open files {nofile}), {:?} for a request head, {:?} per request, {BODY_LIMIT} bytes per body",
            env!("CARGO_PKG_VERSION"),
            api::API_VERSION,
            served.join(", "),
            if shared.allow_force { ", --force allowed" } else { "" },
            a.header_timeout,
            a.request_timeout,
        );
        accept(listener, router(shared.clone()), cap, a.header_timeout).await;
        anyhow::Ok(())
    });
    // Connections still open end with the runtime.
    drop(rt);
    shared.end_run("the agent shut down");
    eprintln!("linerate: agent stopped");
    result
}

/// Accepts connections until Ctrl-C or SIGTERM: at most `cap` at once
/// (one more is answered 503 and closed at once), each closed when it
/// sends no complete request head for `header_timeout` (a half-sent
/// request, or an idle keep-alive connection).
async fn accept(
    listener: tokio::net::TcpListener,
    app: Router,
    cap: usize,
    header_timeout: Duration,
) {
    let permits = Arc::new(tokio::sync::Semaphore::new(cap));
    let lingering = Arc::new(tokio::sync::Semaphore::new(LINGERING));
    let stop = shutdown();
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            _ = &mut stop => return,
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors, or the like: wait, do not spin.
                    eprintln!("linerate: agent: accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            refuse_over_cap(stream, cap, &lingering);
            continue;
        };
        let app = app.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(
                move |mut req: hyper::Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(ConnectInfo(peer));
                    let mut app = app.clone();
                    async move { tower_service::Service::call(&mut app, req.map(Body::new)).await }
                },
            );
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                .await;
            drop(permit);
        });
    }
}

/// Answers a connection over the cap 503 and closes it. A few at a time
/// (LINGERING) read what the client sent for up to a second first, so that
/// it reads the answer rather than a reset; the rest are closed at once.
fn refuse_over_cap(
    mut stream: tokio::net::TcpStream,
    cap: usize,
    lingering: &Arc<tokio::sync::Semaphore>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = serde_json::to_string(&ApiError {
        error: format!(
            "the agent holds {cap} connections, its limit (--max-connections): try again later"
        ),
        holder: None,
    })
    .unwrap_or_default();
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let Ok(turn) = lingering.clone().try_acquire_owned() else {
        let _ = stream.try_write(answer.as_bytes());
        return;
    };
    tokio::spawn(async move {
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            stream.write_all(answer.as_bytes()).await?;
            stream.shutdown().await?;
            let mut sink = [0u8; 1024];
            while stream.read(&mut sink).await? > 0 {}
            std::io::Result::Ok(())
        })
        .await;
        drop(turn);
    });
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
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn(oversized))
        .layer(middleware::from_fn_with_state(shared.clone(), auth))
        .layer(middleware::from_fn_with_state(shared.clone(), deadline))
        .layer(middleware::from_fn(json_errors))
        .with_state(shared)
}

fn error(code: StatusCode, msg: impl Into<String>) -> Response {
    (
        code,
        Json(ApiError {
            error: msg.into(),
            holder: None,
        }),
    )
        .into_response()
}

/// Every error answer is JSON (`{"error": ...}`): the extractors' own
/// rejections (query, path), 405 and the body limit's 413 are text or empty
/// as axum makes them, so they are rewritten here.
async fn json_errors(req: Request, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let r = next.run(req).await;
    let code = r.status();
    let json = r
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if json || !(code.is_client_error() || code.is_server_error()) {
        return r;
    }
    let (mut parts, body) = r.into_parts();
    let text = axum::body::to_bytes(body, 16 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let msg = match code {
        StatusCode::METHOD_NOT_ALLOWED => format!(
            "{method} is not allowed on {path}: see the API in README, \"Across two hosts\""
        ),
        StatusCode::PAYLOAD_TOO_LARGE => too_large(),
        _ if text.is_empty() => code
            .canonical_reason()
            .unwrap_or("the request failed")
            .to_string(),
        _ => text,
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    let body = serde_json::to_vec(&ApiError {
        error: msg,
        holder: None,
    })
    .unwrap_or_default();
    Response::from_parts(parts, Body::from(body))
}

/// A body announced over the limit is refused (413) once read, up to
/// DRAIN_LIMIT, so that the client, still sending it, gets the answer
/// rather than a broken pipe. After the token check: nobody else makes the
/// agent read.
async fn oversized(req: Request, next: Next) -> Response {
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_none_or(|n| n <= BODY_LIMIT as u64) {
        return next.run(req).await;
    }
    let _ = axum::body::to_bytes(req.into_body(), DRAIN_LIMIT).await;
    error(StatusCode::PAYLOAD_TOO_LARGE, too_large())
}

fn too_large() -> String {
    format!("the request body is larger than the agent's limit of {BODY_LIMIT} bytes (a run request is a small JSON object)")
}

/// A request (its body, its answer) gets `request_timeout`: a body sent
/// slowly holds no connection for longer.
async fn deadline(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    match tokio::time::timeout(s.request_timeout, next.run(req)).await {
        Ok(r) => r,
        Err(_) => error(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request took longer than {:?}: its body came too slowly",
                s.request_timeout
            ),
        ),
    }
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

/// Checks the names a request gives (400 with the command line's own
/// message) and that the agent serves the interface (403): the refusal, if
/// any.
fn refuse_where(s: &Shared, iface: &str, netns: Option<&str>, what: &str) -> Option<Response> {
    if let Err(e) = parse_iface(iface) {
        return Some(error(StatusCode::BAD_REQUEST, format!("{what}: {e}")));
    }
    if let Some(Err(e)) = netns.map(parse_netns) {
        return Some(error(StatusCode::BAD_REQUEST, format!("?netns=: {e}")));
    }
    s.refusal(iface, netns)
        .map(|why| error(StatusCode::FORBIDDEN, why))
}

async fn iface(
    State(s): State<Arc<Shared>>,
    Path(name): Path<String>,
    Query(w): Query<Where>,
) -> Response {
    if let Some(r) = refuse_where(&s, &name, w.netns.as_deref(), "the interface") {
        return r;
    }
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
        return busy(
            run,
            format!(
                "{} is going: the doctor's probes (XDP attach, socket binds) would disturb it; ask again when it ended",
                run.describe()
            ),
        );
    }
    let Some(iface) = w.iface else {
        return error(
            StatusCode::BAD_REQUEST,
            "give ?iface=NAME: an agent probes a named interface (it makes no lab)",
        );
    };
    if let Some(r) = refuse_where(&s, &iface, w.netns.as_deref(), "?iface=") {
        return r;
    }
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

/// A 409 naming the run that holds the agent.
fn busy(run: &Slot, msg: String) -> Response {
    (
        StatusCode::CONFLICT,
        Json(ApiError {
            error: msg,
            holder: Some(run.holder()),
        }),
    )
        .into_response()
}

/// The child's command line for a request, checked with the CLI's own
/// definitions so that errors read as on the command line; with it, the
/// command line as parsed.
fn child_args(req: &RunRequest) -> Result<(Vec<String>, Cli), String> {
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
    Ok((argv, cli))
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
    ConnectInfo(by): ConnectInfo<SocketAddr>,
    req: Result<Json<RunRequest>, JsonRejection>,
) -> Response {
    let req = match req {
        Ok(Json(r)) => r,
        Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return error(StatusCode::PAYLOAD_TOO_LARGE, too_large())
        }
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
    let (argv, napi) = match child_args(&req) {
        Ok((argv, cli)) => match s.run_refusal(&cli) {
            Some(why) => return error(StatusCode::FORBIDDEN, why),
            None => (argv, napi_modes(&run_sides(&cli))),
        },
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    let mut g = s.slot();
    if let Some(run) = g.as_ref().filter(|r| r.active()) {
        return busy(
            run,
            format!(
                "this agent is busy with {}: wait for it to end, or POST /v1/runs/{}/stop",
                run.describe(),
                run.id
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
        started: SystemTime::now(),
        by,
        stopped_by: None,
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
    eprintln!(
        "linerate: agent: run {id} from {by}: {} {}",
        req.test,
        argv.join(" ")
    );
    let (s2, id2) = (s.clone(), id.clone());
    thread::spawn(move || watch(s2, child, id2, napi));
    (StatusCode::CREATED, Json(Created { id })).into_response()
}

/// Follows a child to its end: its live counters and stderr, its lease,
/// and its result.
fn watch(s: Arc<Shared>, mut child: Child, id: String, napi: NapiModes) {
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
    // Before the run counts as ended, so that the next finds them as they were.
    restore_napi(&id, &napi);
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
    ConnectInfo(by): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    Query(how): Query<StopHow>,
) -> Response {
    let mut g = s.slot();
    match find(&mut g, &id) {
        Some(slot) => {
            if slot.active() {
                // Any token holder may stop a run: the run says who did.
                slot.stopped_by = Some(format!(
                    "a stop request from {by} ({})",
                    if how.now { "at once" } else { "finish" }
                ));
                eprintln!(
                    "linerate: agent: run {id}: a stop request from {by}{}",
                    if how.now { " (at once)" } else { "" }
                );
                if how.now {
                    slot.ending
                        .get_or_insert_with(|| format!("stopped by a stop request from {by}"));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(allow: Vec<AllowedIface>, allow_force: bool) -> Shared {
        Shared {
            token: "0123456789abcdef".into(),
            exe: PathBuf::from("/bin/false"),
            run: Mutex::new(None),
            seq: AtomicU64::new(1),
            allow,
            allow_force,
            own_ns: ns_id(std::path::Path::new("/proc/self/ns/net")),
            request_timeout: Duration::from_secs(60),
        }
    }

    fn request(iface: &str, netns: Option<&str>, args: &[&str]) -> RunRequest {
        RunRequest {
            test: "stream".into(),
            role: "rx".into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            iface: iface.into(),
            netns: netns.map(str::to_string),
            peer: api::Peer {
                mac: "02:00:c6:12:00:01".into(),
                ip: "198.18.0.1".parse().unwrap(),
            },
            start_at_ns: 0,
            lease_ms: 3000,
        }
    }

    /// The refusal of a run request: Err(400 text) or Ok(403 text, if any).
    fn verdict(s: &Shared, r: &RunRequest) -> Result<Option<String>, String> {
        child_args(r).map(|(_, cli)| s.run_refusal(&cli))
    }

    #[test]
    fn the_lab_by_default() {
        let s = agent(default_allowed("lr"), false);
        assert_eq!(
            s.allow.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["lr-a0@lr-a", "lr-b0@lr-b"]
        );
        assert_eq!(verdict(&s, &request("lr-b0", Some("lr-b"), &[])), Ok(None));
        // eth0 here, lr-b0 in the wrong namespace or in the agent's own
        // (which is not lr-b): refused, naming the flag that allows it.
        for (iface, ns, flag) in [
            ("eth0", None, "--allow-iface eth0 "),
            ("lr-b0", Some("lr-a"), "--allow-iface lr-b0@lr-a "),
            ("lr-b0", None, "--allow-iface lr-b0 "),
        ] {
            let why = verdict(&s, &request(iface, ns, &[])).unwrap().unwrap();
            assert!(why.contains(flag), "{why}");
        }
        // The other side's namespace named among the options.
        let why = verdict(&s, &request("lr-b0", None, &["--tx-netns", "lr-a"]))
            .unwrap()
            .unwrap();
        assert!(why.contains("lr-b0@lr-a"), "{why}");
    }

    #[test]
    fn own_namespace_and_hostile_names() {
        let hostile = crate::cli::parse_allowed_iface("q;id>pw;#").unwrap();
        let s = agent(vec![hostile], false);
        assert_eq!(verdict(&s, &request("q;id>pw;#", None, &[])), Ok(None));
        let why = verdict(&s, &request("q;id>pw", None, &[]))
            .unwrap()
            .unwrap();
        assert!(why.contains("--allow-iface 'q;id>pw' "), "{why}");
        for (iface, ns, args) in [
            ("a/b", None, &[][..]),
            ("", None, &[]),
            ("eth0", Some("../netns/rp-a"), &[]),
            ("eth0", Some("/run/netns/rp-a"), &[]),
            ("eth0", None, &["--rx-netns", "../../proc/1/ns/net"]),
        ] {
            let e = verdict(&s, &request(iface, ns, args)).unwrap_err();
            assert!(e.contains("is not a"), "{iface:?} {ns:?} {args:?}: {e}");
        }
    }

    #[test]
    fn force_only_when_allowed() {
        let allow = vec![AllowedIface {
            iface: "x0".into(),
            netns: None,
        }];
        let why = verdict(
            &agent(allow.clone(), false),
            &request("x0", None, &["--force"]),
        )
        .unwrap()
        .unwrap();
        assert!(why.contains("--allow-force"), "{why}");
        assert_eq!(
            verdict(&agent(allow, true), &request("x0", None, &["--force"])),
            Ok(None)
        );
    }

    #[test]
    fn shell_words() {
        assert_eq!(quoted("lr-b0@lr-b"), "lr-b0@lr-b");
        assert_eq!(quoted("q;id>pw;#"), "'q;id>pw;#'");
        assert_eq!(quoted("a'b"), "'a'\\''b'");
    }
}
