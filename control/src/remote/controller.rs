//! The controller's side of a two-host run: it checks both agents (token,
//! version, clock), starts each side at one agreed instant, renews their
//! leases while polling them, stops the receiver once the sender is done,
//! and merges both results (printed by the tables a local run prints). An
//! agent that stops answering ends the run within seconds: the other side
//! is stopped and what it measured is reported with the error.

use std::{
    process::ExitCode,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    thread,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use anyhow::{bail, Result};
use serde::{de::DeserializeOwned, Serialize};
use serde_json::json;
use thiserror::Error;

use super::{
    api::{self, ApiError, Created, RunRequest, RunStatus},
    merge, token,
};
use crate::{
    cli::RunArgs,
    results::{
        latency::ClockCorrection,
        run::{Partial, RunResult, TwoHostResult},
        two_host::{Agent, Agents},
    },
};

/// Connecting to an agent gives up after this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// A request gives up after this.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Agents stop a run whose lease was not renewed for this long.
const LEASE: Duration = Duration::from_secs(5);
/// How often the controller polls (and renews the leases).
const POLL: Duration = Duration::from_millis(300);
/// Time from the start request to the agreed start: both sides bind first.
const START_DELAY: Duration = Duration::from_secs(2);
/// Clock samples per agent.
const CLOCK_SAMPLES: usize = 5;

/// What went wrong talking to an agent.
#[derive(Debug, Error)]
pub enum AgentError {
    /// No answer at all.
    #[error("{name} {url} did not answer ({what}): {detail}; is `linerate agent` running there, and the URL right?")]
    Unreachable {
        /// "tx agent" or "rx agent".
        name: &'static str,
        /// Its URL.
        url: String,
        /// The request.
        what: String,
        /// Transport error.
        detail: String,
    },
    /// 401.
    #[error("{name} {url} refused the token (401): give the token the agent was started with (--token-file or LINERATE_TOKEN)")]
    Unauthorized {
        /// "tx agent" or "rx agent".
        name: &'static str,
        /// Its URL.
        url: String,
    },
    /// Any other error status.
    #[error("{name} {url} answered {code} to {what}: {message}")]
    Status {
        /// "tx agent" or "rx agent".
        name: &'static str,
        /// Its URL.
        url: String,
        /// The request.
        what: String,
        /// HTTP status.
        code: u16,
        /// The agent's error text.
        message: String,
    },
    /// Versions differ.
    #[error("{name} {url} runs linerate {theirs} (API {their_api}), this controller linerate {ours} (API {our_api}): run the same version on every host")]
    Version {
        /// "tx agent" or "rx agent".
        name: &'static str,
        /// Its URL.
        url: String,
        /// The agent's.
        theirs: String,
        /// The agent's API.
        their_api: u32,
        /// Ours.
        ours: String,
        /// Our API.
        our_api: u32,
    },
}

/// One agent as the controller sees it.
struct Remote {
    name: &'static str,
    url: String,
    http: ureq::Agent,
    auth: String,
    version: api::Version,
    offset_ns: i64,
    rtt_ns: u64,
    /// Its CLOCK_MONOTONIC minus our wall clock, ns, from the same sample
    /// (None: an agent that does not report it).
    monotonic_ns: Option<i64>,
}

/// The receiving host's CLOCK_MONOTONIC minus the sending host's, ns, and
/// the uncertainty of that figure, us: each host's offset is known within
/// half the round trip of its sample.
fn monotonic_offset(tx: (Option<i64>, u64), rx: (Option<i64>, u64)) -> Option<ClockCorrection> {
    Some(ClockCorrection {
        offset_ns: rx.0? - tx.0?,
        uncertainty_us: (tx.1 + rx.1) as f64 / 2.0 / 1000.0,
    })
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl Remote {
    /// Checks the agent answers, takes the token and runs our version; estimates its clock offset.
    fn connect(name: &'static str, url: &str, token: &str) -> Result<Self> {
        let url = url.trim_end_matches('/');
        let url = if url.starts_with("https://") {
            bail!("{name} {url}: agents speak plain HTTP on a management network: use http://HOST:PORT");
        } else if url.starts_with("http://") {
            url.to_string()
        } else {
            format!("http://{url}")
        };
        let http = ureq::AgentBuilder::new()
            .timeout_connect(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .build();
        let mut r = Self {
            name,
            url,
            http,
            auth: format!("Bearer {token}"),
            version: api::Version::ours(),
            offset_ns: 0,
            rtt_ns: 0,
            monotonic_ns: None,
        };
        let v: api::Version = r.get("/v1/version", "the version request")?;
        let ours = api::Version::ours();
        if v.api != ours.api || v.version != ours.version {
            return Err(AgentError::Version {
                name,
                url: r.url.clone(),
                theirs: v.version,
                their_api: v.api,
                ours: ours.version,
                our_api: ours.api,
            }
            .into());
        }
        r.version = v;
        // NTP style: the sample with the lowest round trip bounds the offset best.
        let mut best: Option<(u64, i64, Option<i64>)> = None;
        for _ in 0..CLOCK_SAMPLES {
            let t0 = unix_ns();
            let c: api::Clock = r.get("/v1/clock", "the clock request")?;
            let t1 = unix_ns();
            let rtt = t1.saturating_sub(t0);
            let mid = (t0 / 2 + t1 / 2) as i64;
            let offset = c.unix_ns as i64 - mid;
            let monotonic = (c.monotonic_ns != 0).then(|| c.monotonic_ns as i64 - mid);
            if best.is_none_or(|(b, _, _)| rtt < b) {
                best = Some((rtt, offset, monotonic));
            }
        }
        (r.rtt_ns, r.offset_ns, r.monotonic_ns) = best.unwrap_or_default();
        Ok(r)
    }

    fn error(&self, what: &str, e: ureq::Error) -> AgentError {
        match e {
            ureq::Error::Status(401, _) => AgentError::Unauthorized {
                name: self.name,
                url: self.url.clone(),
            },
            ureq::Error::Status(code, resp) => AgentError::Status {
                name: self.name,
                url: self.url.clone(),
                what: what.into(),
                code,
                message: resp
                    .into_json::<ApiError>()
                    .map(|e| e.error)
                    .unwrap_or_else(|_| "(no message)".into()),
            },
            ureq::Error::Transport(t) => AgentError::Unreachable {
                name: self.name,
                url: self.url.clone(),
                what: what.into(),
                detail: t.to_string(),
            },
        }
    }

    fn get<T: DeserializeOwned>(&self, path: &str, what: &str) -> Result<T, AgentError> {
        let r = self
            .http
            .get(&format!("{}{path}", self.url))
            .set("Authorization", &self.auth)
            .call()
            .map_err(|e| self.error(what, e))?;
        self.body(r, what)
    }

    fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
        what: &str,
    ) -> Result<T, AgentError> {
        let r = self
            .http
            .post(&format!("{}{path}", self.url))
            .set("Authorization", &self.auth)
            .send_json(body)
            .map_err(|e| self.error(what, e))?;
        self.body(r, what)
    }

    fn body<T: DeserializeOwned>(&self, r: ureq::Response, what: &str) -> Result<T, AgentError> {
        r.into_json().map_err(|e| AgentError::Unreachable {
            name: self.name,
            url: self.url.clone(),
            what: what.into(),
            detail: format!("unreadable answer: {e}"),
        })
    }

    fn describe(&self) -> Agent {
        Agent {
            url: self.url.clone(),
            version: self.version.version.clone(),
            api: self.version.api,
            clock_offset_ns: self.offset_ns,
            clock_rtt_ns: self.rtt_ns,
            environment: None,
        }
    }
}

/// `GET /v1/ifaces/NAME[?netns=NS]`, the names percent-encoded: a name may
/// hold any character but '/' and whitespace (`q;id>pw;#` is one).
fn iface_path(iface: &str, netns: Option<&str>) -> String {
    use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
    let mut p = format!(
        "/v1/ifaces/{}",
        utf8_percent_encode(iface, NON_ALPHANUMERIC)
    );
    if let Some(n) = netns {
        p += &format!("?netns={}", utf8_percent_encode(n, NON_ALPHANUMERIC));
    }
    p
}

/// One side's run on its agent.
struct Side<'a> {
    remote: &'a Remote,
    id: Option<String>,
    end: Option<RunStatus>,
    lost: Option<AgentError>,
    stop_sent: bool,
    /// This controller asked the side to end at once.
    stopped_now: bool,
}

impl Side<'_> {
    fn going(&self) -> bool {
        self.id.is_some() && self.end.is_none() && self.lost.is_none()
    }

    /// Renews the lease; its answer is the run's status.
    fn poll(&mut self) {
        let Some(id) = &self.id else { return };
        if !self.going() {
            return;
        }
        match self.remote.post::<RunStatus>(
            &format!("/v1/runs/{id}/lease"),
            &json!({}),
            "renewing the lease",
        ) {
            Ok(st) if st.state == "running" => {}
            Ok(st) => self.end = Some(st),
            Err(e) => self.lost = Some(e),
        }
    }

    /// Asks the side to finish (now: at once).
    fn stop(&mut self, now: bool) {
        let Some(id) = &self.id else { return };
        if !self.going() || (self.stop_sent && !now) {
            return;
        }
        self.stop_sent = true;
        self.stopped_now |= now;
        let path = format!("/v1/runs/{id}/stop{}", if now { "?now=true" } else { "" });
        if let Err(e) = self
            .remote
            .post::<RunStatus>(&path, &json!({}), "the stop request")
        {
            self.lost = Some(e);
        }
    }

    fn result(&self) -> Option<&RunResult> {
        self.end.as_ref().and_then(|s| s.result.as_ref())
    }

    /// Why the side did not end well, if it did not.
    fn problem(&self) -> Option<String> {
        if let Some(e) = &self.lost {
            return Some(format!("{e} (the agent stopped answering during the run)"));
        }
        // Any token holder may stop a run: one this controller did not ask
        // to end says who did.
        let not_ours = match &self.end {
            Some(st) if st.state == "stopped" && !self.stopped_now => st.stopped_by.is_some(),
            Some(st) if st.state == "done" && !self.stop_sent => st.stopped_by.is_some(),
            _ => false,
        };
        match &self.end {
            Some(st) if st.state == "done" && not_ours => Some(format!(
                "{} {}: the {} side was asked to finish early by {}, not by this controller: its figures end there",
                self.remote.name,
                self.remote.url,
                st.role,
                st.stopped_by.clone().unwrap_or_default()
            )),
            Some(st) if st.state == "done" => None,
            Some(st) => Some(format!(
                "{} {}: the {} side {}: {}{}",
                self.remote.name,
                self.remote.url,
                st.role,
                st.state,
                st.error.clone().unwrap_or_default(),
                if not_ours {
                    " (not by this controller: another client holding the token stopped the run)"
                } else {
                    ""
                }
            )),
            None => Some(format!(
                "{} {}: the run did not end in time",
                self.remote.name, self.remote.url
            )),
        }
    }
}

/// What a two-host run gave.
pub struct Outcome {
    /// The merged result; with one side missing, what there is.
    pub result: TwoHostResult,
    /// What went wrong.
    pub error: Option<String>,
    /// Whether Ctrl-C cut it short.
    pub interrupted: bool,
}

/// Runs `test` ("stream" or "rr") with `raw` (its command-line options)
/// on the agents `run.agents` names.
pub fn run(
    test: &str,
    raw: &[String],
    run: &RunArgs,
    interrupted: &Arc<AtomicBool>,
) -> Result<Outcome> {
    let (Some(mut tx_url), Some(mut rx_url)) = (
        run.agents.tx_agent.as_deref(),
        run.agents.rx_agent.as_deref(),
    ) else {
        bail!("give both --tx-agent and --rx-agent");
    };
    let (Some(mut tx_if), Some(mut rx_if)) = (run.tx_iface.as_deref(), run.rx_iface.as_deref())
    else {
        bail!("with --tx-agent and --rx-agent, give --tx-iface (an interface of the tx agent's host) and --rx-iface (one of the rx agent's host)");
    };
    let (mut tx_ns, mut rx_ns) = (&run.tx_netns, &run.rx_netns);
    // --reverse: the rx agent's host sends.
    if run.reverse {
        std::mem::swap(&mut tx_url, &mut rx_url);
        std::mem::swap(&mut tx_if, &mut rx_if);
        std::mem::swap(&mut tx_ns, &mut rx_ns);
    }
    let token = token::read(run.agents.token_file.as_deref())?;
    let tx = Remote::connect("tx agent", tx_url, &token)?;
    let rx = Remote::connect("rx agent", rx_url, &token)?;
    let ti: api::Iface = tx.get(&iface_path(tx_if, tx_ns.as_deref()), "the interface query")?;
    let ri: api::Iface = rx.get(&iface_path(rx_if, rx_ns.as_deref()), "the interface query")?;
    if ti.mtu != ri.mtu {
        bail!(
            "the MTUs differ: {tx_if} on the tx host has {}, {rx_if} on the rx host {}: set both to the same (`ip link set dev IF mtu N`)",
            ti.mtu,
            ri.mtu
        );
    }
    let args = crate::request::for_agents(raw);
    // One-way latencies: the receiver takes the clocks' offset off.
    let clock = monotonic_offset((tx.monotonic_ns, tx.rtt_ns), (rx.monotonic_ns, rx.rtt_ns));
    let start = unix_ns() + START_DELAY.as_nanos() as u64 + tx.rtt_ns.max(rx.rtt_ns);
    let request =
        |r: &Remote, role: &str, iface: &str, netns: &Option<String>, peer: &api::Iface| {
            RunRequest {
                test: test.to_string(),
                role: role.to_string(),
                args: args.clone(),
                iface: iface.to_string(),
                netns: netns.clone(),
                peer: api::Peer {
                    mac: peer.mac.clone(),
                    ip: peer.ipv4,
                },
                start_at_ns: (start as i64 + r.offset_ns) as u64,
                lease_ms: LEASE.as_millis() as u64,
                clock_offset_ns: (role == "rx")
                    .then_some(clock.map(|c| c.offset_ns))
                    .flatten(),
            }
        };
    let mut rxs = Side {
        remote: &rx,
        id: None,
        end: None,
        lost: None,
        stop_sent: false,
        stopped_now: false,
    };
    let mut txs = Side {
        remote: &tx,
        id: None,
        end: None,
        lost: None,
        stop_sent: false,
        stopped_now: false,
    };
    let c: Created = rx.post(
        "/v1/runs",
        &request(&rx, "rx", rx_if, rx_ns, &ti),
        "the run request",
    )?;
    rxs.id = Some(c.id);
    match tx.post::<Created>(
        "/v1/runs",
        &request(&tx, "tx", tx_if, tx_ns, &ri),
        "the run request",
    ) {
        Ok(c) => txs.id = Some(c.id),
        Err(e) => {
            rxs.stop(true);
            return Err(e.into());
        }
    }

    let deadline =
        Instant::now() + START_DELAY + run.warmup + run.duration + Duration::from_secs(45);
    let mut stopping = false;
    let mut give_up: Option<Instant> = None;
    while txs.going() || rxs.going() {
        thread::sleep(POLL);
        txs.poll();
        rxs.poll();
        let now = Instant::now();
        if interrupted.load(Ordering::Relaxed) && !stopping {
            stopping = true;
            txs.stop(true);
            rxs.stop(true);
        }
        // The receiver finishes once the sender is done.
        if txs.end.is_some() && rxs.going() {
            rxs.stop(false);
        }
        // A side lost or failed: the other ends now.
        let failed =
            |s: &Side| s.lost.is_some() || s.end.as_ref().is_some_and(|e| e.state != "done");
        if failed(&txs) || failed(&rxs) {
            txs.stop(true);
            rxs.stop(true);
            give_up.get_or_insert(now + Duration::from_secs(10));
        }
        if now > deadline {
            txs.stop(true);
            rxs.stop(true);
            give_up.get_or_insert(now + Duration::from_secs(10));
        }
        if give_up.is_some_and(|g| now > g) {
            break;
        }
    }
    let agents = Agents {
        tx: tx.describe(),
        rx: rx.describe(),
    };
    // The cause first: a side the controller stopped because the other
    // failed is no news.
    let stopped_by_us = |s: &Side| {
        s.lost.is_none() && s.stopped_now && s.end.as_ref().is_some_and(|e| e.state == "stopped")
    };
    let mut errors: Vec<String> = [&txs, &rxs]
        .iter()
        .filter(|s| !stopped_by_us(s))
        .filter_map(|s| s.problem())
        .collect();
    if errors.is_empty() {
        errors = [&txs, &rxs].iter().filter_map(|s| s.problem()).collect();
    }
    let cut = interrupted.load(Ordering::Relaxed);
    let result = match (txs.result(), rxs.result()) {
        (Some(RunResult::Stream(t)), Some(RunResult::Stream(r))) => {
            let mut m = merge::stream(t, r, agents);
            if let Some(l) = m.latency.as_mut() {
                l.clock = clock;
            }
            TwoHostResult::Merged(m.into())
        }
        (Some(RunResult::Rr(t)), Some(RunResult::Rr(r))) => {
            TwoHostResult::Merged(merge::rr(t, r, agents).into())
        }
        (t, r) => TwoHostResult::Partial(Partial {
            test: test.to_string(),
            partial: true,
            agents,
            tx: t.cloned().map(Box::new),
            rx: r.cloned().map(Box::new),
        }),
    };
    Ok(Outcome {
        result,
        error: (!errors.is_empty() && !cut).then(|| errors.join("; ")),
        interrupted: cut,
    })
}

/// Prints the outcome (JSON, or a table) and gives the exit status: 0, 3
/// when a side failed (the figures there are printed first), 130 when
/// interrupted.
pub fn report(o: &Outcome, json_out: bool) -> Result<ExitCode> {
    let text = if json_out {
        format!("{}\n", serde_json::to_string_pretty(&o.result)?)
    } else {
        o.result.table()
    };
    crate::output::print(&text)?;
    if let Some(e) = &o.error {
        eprintln!("linerate: error: {e}; figures measured until then are above");
        return Ok(ExitCode::from(3));
    }
    Ok(crate::output::exit_code(o.interrupted))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_monotonic_offset_is_the_difference_of_the_hosts() {
        // tx's monotonic clock reads 1 s more than our wall clock, rx's
        // 3 s more: rx runs 2 s ahead of tx.
        let c = monotonic_offset(
            (Some(1_000_000_000), 400_000),
            (Some(3_000_000_000), 200_000),
        )
        .unwrap();
        assert_eq!(c.offset_ns, 2_000_000_000);
        assert!(
            (c.uncertainty_us - 300.0).abs() < 1e-9,
            "half of both round trips"
        );
        assert_eq!(
            monotonic_offset((None, 1), (Some(1), 1)),
            None,
            "an older agent"
        );
    }

    #[test]
    fn names_are_encoded_in_urls() {
        assert_eq!(iface_path("eth1", None), "/v1/ifaces/eth1");
        assert_eq!(
            iface_path("q;id>pw;#", Some("a b&c=d")),
            "/v1/ifaces/q%3Bid%3Epw%3B%23?netns=a%20b%26c%3Dd"
        );
    }

    #[test]
    fn controller_options_stripped() {
        let raw: Vec<String> = [
            "--count",
            "5",
            "--tx-agent",
            "http://a",
            "--rx-agent=http://b",
            "--json",
            "--tx-iface",
            "eth1",
            "--rate",
            "10",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            crate::request::for_agents(&raw),
            ["--count", "5", "--rate", "10"]
        );
    }

    /// An agent of another version, on loopback: refused, both versions named.
    #[test]
    fn version_mismatch_is_refused() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().route(
            "/v1/version",
            axum::routing::get(|| async {
                axum::Json(api::Version {
                    version: "9.9.9".into(),
                    api: 99,
                })
            }),
        );
        let server = std::thread::spawn(move || {
            rt.block_on(async {
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(tokio::time::sleep(Duration::from_secs(3)))
                    .await;
            })
        });
        let e = Remote::connect("rx agent", &format!("http://{addr}"), "0123456789abcdef")
            .err()
            .unwrap();
        let msg = e.to_string();
        assert!(
            msg.contains("runs linerate 9.9.9 (API 99)")
                && msg.contains(&format!(
                    "this controller linerate {}",
                    env!("CARGO_PKG_VERSION")
                )),
            "{msg}"
        );
        drop(server);
    }

    #[test]
    fn unreachable_agent_is_named() {
        let e = Remote::connect("tx agent", "127.0.0.1:9", "0123456789abcdef")
            .err()
            .unwrap();
        let msg = e.to_string();
        assert!(
            msg.contains("tx agent http://127.0.0.1:9 did not answer"),
            "{msg}"
        );
    }
}
