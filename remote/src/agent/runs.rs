//! A run: the child `linerate` process (its argv checked and rebuilt),
//! its lease, its output and live counters, and the run endpoints
//! (create, status, lease, stop).

use super::{
    child::{Child, Runs},
    server::{error, too_large},
    state::{Shared, Slot, KILL_AFTER, LEASE_MS, TAIL},
};
use crate::api::{self, ApiError, Created, RunRequest};
use axum::{
    extract::{rejection::JsonRejection, ConnectInfo, Path, Query, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use nix::{sys::signal, unistd::Pid};
use serde::Deserialize;
use std::{
    io::{BufRead, BufReader, Read, Write},
    net::SocketAddr,
    process::{self, Command, Stdio},
    sync::{atomic::Ordering, Arc, MutexGuard},
    thread,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

/// This host's wall clock, ns since the Unix epoch.
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The NAPI modes (`threaded`) of the interfaces a run uses, before it.
pub(super) type NapiModes = Vec<(String, Option<String>, String)>;

pub(super) fn napi_modes(sides: &[(String, Option<String>)]) -> NapiModes {
    sides
        .iter()
        .filter_map(|(iface, ns)| {
            linerate_host::sysfs::read(ns.as_deref(), iface, linerate_host::sysfs::Attr::Threaded)
                .ok()
                .map(|v| (iface.clone(), ns.clone(), v))
        })
        .collect()
}

/// Puts back the NAPI modes a run changed and left so: the run restores
/// them itself when it ends, but not when it was killed.
pub(super) fn restore_napi(id: &str, before: &NapiModes) {
    for (iface, ns, was) in before {
        let attr = linerate_host::sysfs::Attr::Threaded;
        match linerate_host::sysfs::read(ns.as_deref(), iface, attr) {
            Ok(now) if now != *was => {
                match linerate_host::sysfs::write(ns.as_deref(), iface, attr, was) {
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

/// A 409 naming the run that holds the agent.
pub(super) fn busy(run: &Slot, msg: String) -> Response {
    (
        StatusCode::CONFLICT,
        Json(ApiError {
            error: msg,
            holder: Some(run.holder()),
        }),
    )
        .into_response()
}

/// The child for a request: its pair's name and the options the agent
/// owns checked here, the rest by the binary's command line (`runs`); Err
/// is the 400's text.
pub fn check_request(runs: &dyn Runs, req: &RunRequest) -> Result<Child, String> {
    if let Some(pair) = &req.pair {
        linerate_host::inventory::check_pair_name(pair).map_err(|e| format!("pair: {e}"))?;
    }
    if let Some((option, why)) = req.args.iter().find_map(|a| {
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        AGENT_OWNS.iter().find(|(o, _)| *o == name)
    }) {
        return Err(format!(
            "args: {option} is not a run request's to give: {why}; remove it"
        ));
    }
    runs.child(req)
}

/// Options the agent sets itself, refused in a request's `args`: (option,
/// why).
const AGENT_OWNS: [(&str, &str); 7] = [
    (
        "--token-file",
        "the agent reads its own token (its --token-file or LINERATE_TOKEN)",
    ),
    (
        "--lab",
        "the agent serves the interfaces it was started with (its --allow-iface or --lab); name the interface in `iface` and `netns`",
    ),
    ("--role", "the request's `role` sets it"),
    ("--peer-mac", "the request's `peer.mac` sets it"),
    ("--peer-ip", "the request's `peer.ip` sets it"),
    ("--start-at", "the request's `start_at_ns` sets it"),
    ("--clock-offset-ns", "the request's `clock_offset_ns` sets it"),
];

/// How far ahead of the agent's clock a run may be asked to start (the
/// controller asks for 2 s ahead, plus the round trip and the clocks'
/// offset).
const START_AHEAD: Duration = Duration::from_secs(60);

/// The request's fields that no option checks: its lease and its start.
pub fn check_fields(req: &RunRequest) -> Result<(), String> {
    if !LEASE_MS.contains(&req.lease_ms) {
        return Err(format!(
            "lease_ms {} is out of range: use {} to {}",
            req.lease_ms,
            LEASE_MS.start(),
            LEASE_MS.end()
        ));
    }
    let latest = unix_ns().saturating_add(START_AHEAD.as_nanos() as u64);
    if req.start_at_ns > latest {
        return Err(format!(
            "start_at_ns {} is more than {}s ahead of this agent's clock ({} now): give an instant within {}s, or 0 to start at once",
            req.start_at_ns,
            START_AHEAD.as_secs(),
            unix_ns(),
            START_AHEAD.as_secs()
        ));
    }
    Ok(())
}

pub(super) async fn create(
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
    if let Err(e) = check_fields(&req) {
        return error(StatusCode::BAD_REQUEST, e);
    }
    let (argv, napi) = match check_request(s.runs.as_ref(), &req) {
        Ok(child) => match s.allow.run_refusal(&child) {
            Some(why) => return error(StatusCode::FORBIDDEN, why),
            None => (child.argv, napi_modes(&child.sides)),
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
        test: req.test.as_str().to_string(),
        role: req.role.as_str().to_string(),
        pair: req.pair.clone(),
        iface: req.iface.clone(),
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
        req.test.as_str(),
        linerate_host::shown::shown(&argv.join(" "))
    );
    let (s2, id2) = (s.clone(), id.clone());
    thread::spawn(move || watch(s2, child, id2, napi));
    (StatusCode::CREATED, Json(Created { id })).into_response()
}

/// Follows a child to its end: its live counters and stderr, its lease,
/// and its result.
pub(super) fn watch(s: Arc<Shared>, mut child: process::Child, id: String, napi: NapiModes) {
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
            match line.strip_prefix(api::LIVE_PREFIX) {
                Some(j) => slot.live = serde_json::from_str(j).ok(),
                None => {
                    // The child echoes what the request gave it.
                    let line = linerate_host::shown::shown(&line).into_owned();
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

pub(super) fn find<'a>(g: &'a mut MutexGuard<'_, Option<Slot>>, id: &str) -> Option<&'a mut Slot> {
    g.as_mut().filter(|r| r.id == id)
}

pub(super) fn not_found(id: &str) -> Response {
    error(StatusCode::NOT_FOUND, format!("no run {id} on this agent"))
}

pub(super) async fn status(State(s): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let mut g = s.slot();
    match find(&mut g, &id) {
        Some(slot) => Json(slot.status()).into_response(),
        None => not_found(&id),
    }
}

pub(super) async fn lease(State(s): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
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
pub(super) struct StopHow {
    /// End at once (SIGTERM) rather than finish normally.
    #[serde(default)]
    now: bool,
}

pub(super) async fn stop(
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
