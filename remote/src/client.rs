//! Talking to one agent: its URL, token and version checked, its clock
//! offset estimated, requests and their errors.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Result};
use serde::{de::DeserializeOwned, Serialize};
use thiserror::Error;

use super::clock;
use crate::api::{self, ApiError};
use linerate_host::shown::shown;
use linerate_results::two_host::Agent;

/// Connecting to an agent gives up after this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// A request gives up after this.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// What went wrong talking to an agent. What an agent said (its version,
/// its error, an answer that did not parse) is quoted escaped
/// ([`linerate_host::shown::shown`]): a hostile agent writes no escape sequence to
/// the controller's terminal.
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
pub struct Remote {
    pub name: &'static str,
    pub url: String,
    http: ureq::Agent,
    auth: String,
    version: api::Version,
    pub offset_ns: i64,
    pub rtt_ns: u64,
    /// Its CLOCK_MONOTONIC minus our wall clock, ns, from the same sample
    /// (None: an agent that does not report it).
    pub monotonic_ns: Option<i64>,
}

/// Asks the agent at `url` its version with `token`, giving up after
/// `timeout` (`fleet status`, `fleet up` waiting for its agents): no clock
/// or version check, as [`Remote::connect`] makes.
pub fn version(url: &str, token: &str, timeout: Duration) -> Result<api::Version> {
    let http = ureq::AgentBuilder::new().timeout(timeout).build();
    let v = http
        .get(&format!("{}/v1/version", url.trim_end_matches('/')))
        .set("Authorization", &format!("Bearer {token}"))
        .call()
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .into_json()?;
    Ok(v)
}

/// This host's wall clock, ns since the Unix epoch.
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl Remote {
    /// Checks the agent answers, takes the token and runs our version; estimates its clock offset.
    pub fn connect(name: &'static str, url: &str, token: &str) -> Result<Self> {
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
                theirs: shown(&v.version).into_owned(),
                their_api: v.api,
                ours: ours.version,
                our_api: ours.api,
            }
            .into());
        }
        r.version = v;
        let mut samples = Vec::with_capacity(clock::SAMPLES);
        for _ in 0..clock::SAMPLES {
            let sent = unix_ns();
            let c: api::Clock = r.get("/v1/clock", "the clock request")?;
            samples.push(clock::Sample {
                sent,
                theirs: c.unix_ns,
                monotonic: c.monotonic_ns,
                back: unix_ns(),
            });
        }
        (r.rtt_ns, r.offset_ns, r.monotonic_ns) = clock::offset(&samples);
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
                    .map(|e| shown(&e.error).into_owned())
                    .unwrap_or_else(|_| "(no message)".into()),
            },
            ureq::Error::Transport(t) => AgentError::Unreachable {
                name: self.name,
                url: self.url.clone(),
                what: what.into(),
                detail: shown(&t.to_string()).into_owned(),
            },
        }
    }

    pub fn get<T: DeserializeOwned>(&self, path: &str, what: &str) -> Result<T, AgentError> {
        let r = self
            .http
            .get(&format!("{}{path}", self.url))
            .set("Authorization", &self.auth)
            .call()
            .map_err(|e| self.error(what, e))?;
        self.body(r, what)
    }

    pub fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
        what: &str,
    ) -> Result<T, AgentError> {
        let r = self.post_to(path).send_json(body);
        self.body(r.map_err(|e| self.error(what, e))?, what)
    }

    /// A POST without a body (lease, stop): the agent reads none for
    /// these, and a body left unread can make the server close the
    /// connection after its answer, which the next request, reusing it
    /// from the pool, then finds closed ("Unexpected EOF").
    pub fn post_empty<T: DeserializeOwned>(&self, path: &str, what: &str) -> Result<T, AgentError> {
        let r = self.post_to(path).call();
        self.body(r.map_err(|e| self.error(what, e))?, what)
    }

    /// A POST to `path` with the token.
    fn post_to(&self, path: &str) -> ureq::Request {
        self.http
            .post(&format!("{}{path}", self.url))
            .set("Authorization", &self.auth)
    }

    fn body<T: DeserializeOwned>(&self, r: ureq::Response, what: &str) -> Result<T, AgentError> {
        r.into_json().map_err(|e| AgentError::Unreachable {
            name: self.name,
            url: self.url.clone(),
            what: what.into(),
            detail: format!("unreadable answer: {}", shown(&e.to_string())),
        })
    }

    /// The agent as the result names it.
    pub fn describe(&self) -> Agent {
        Agent {
            url: self.url.clone(),
            version: self.version.version.clone(),
            api: self.version.api,
            clock_offset_ns: self.offset_ns,
            clock_rtt_ns: self.rtt_ns,
            environment: None,
        }
    }

    /// The agent's interface (`GET /v1/ifaces/NAME[?netns=NS]`).
    pub fn iface(&self, iface: &str, netns: Option<&str>) -> Result<api::Iface, AgentError> {
        self.get(&iface_path(iface, netns), "the interface query")
    }
}

/// `/v1/ifaces/NAME[?netns=NS]`, the names percent-encoded: a name may
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_encoded_in_urls() {
        assert_eq!(iface_path("eth1", None), "/v1/ifaces/eth1");
        assert_eq!(
            iface_path("q;id>pw;#", Some("a b&c=d")),
            "/v1/ifaces/q%3Bid%3Epw%3B%23?netns=a%20b%26c%3Dd"
        );
    }

    /// An agent of another version, on loopback: refused, both versions
    /// named, the agent's shown escaped (it clears no screen).
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
                    version: "9.9.9\u{1b}[2J\u{1b}]0;owned\u{7}\u{202e}".into(),
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
            msg.contains("runs linerate 9.9.9\\u{1b}[2J\\u{1b}]0;owned\\u{7}\\u{202e} (API 99)")
                && msg.contains(&format!(
                    "this controller linerate {}",
                    env!("CARGO_PKG_VERSION")
                )),
            "{msg}"
        );
        assert!(!msg.contains(['\u{1b}', '\u{7}', '\u{202e}']), "{msg:?}");
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
