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
//!
//! What a run's options mean is the binary's (its command line): it gives
//! the agent a [`Runs`], which turns a run request into the child's
//! command line and runs the doctor.

mod allow;
mod child;
mod routes;
mod runs;
mod server;
mod state;

use std::{
    net::SocketAddr,
    path::PathBuf,
    sync::{atomic::AtomicU64, Arc, Mutex},
    time::Duration,
};

use anyhow::{Context, Result};

pub use self::{
    allow::{default_allowed, parse_allowed_iface, quoted, Allow, AllowedIface},
    child::{Child, Runs},
    runs::{check_fields, check_request, unix_ns},
    state::BODY_LIMIT,
};
use self::{
    routes::router,
    server::accept,
    state::{Shared, FD_RESERVE},
};

use crate::{api, token};

/// How the agent serves (`linerate agent`'s options).
#[derive(Debug, Clone)]
pub struct Serve {
    /// Address and port to listen on.
    pub listen: SocketAddr,
    /// The shared token's file (None: LINERATE_TOKEN).
    pub token_file: Option<PathBuf>,
    /// The interfaces requests may name; empty: the lab's.
    pub allow_iface: Vec<AllowedIface>,
    /// The lab whose interfaces are served when `allow_iface` is empty.
    pub lab: String,
    /// Whether run requests may pass --force.
    pub allow_force: bool,
    /// Connections held at once.
    pub max_connections: u32,
    /// A connection sending no complete request head for this long is
    /// closed.
    pub header_timeout: Duration,
    /// A request's time limit (body and answer).
    pub request_timeout: Duration,
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

/// Serves the API until Ctrl-C or SIGTERM; then ends any run.
pub fn serve(a: &Serve, runs: Arc<dyn Runs>) -> Result<()> {
    let token = token::read(a.token_file.as_deref())?;
    // Without root the agent still serves its API: the refusals (token,
    // limits, names) need no privilege, and each run it starts checks
    // for itself what it needs and answers with that run's own error.
    if !linerate_host::privilege::is_root() {
        eprintln!(
            "linerate: warning: agent not running as root: runs on real interfaces will be refused (they need {})",
            linerate_host::privilege::CAPABILITIES
        );
    }
    let exe = std::env::current_exe().context("finding linerate's own executable")?;
    let allow = if a.allow_iface.is_empty() {
        default_allowed(&a.lab)
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
        allow: Allow::new(allow, a.allow_force),
        request_timeout: a.request_timeout,
        runs,
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
        let served: Vec<String> = shared.allow.ifaces.iter().map(ToString::to_string).collect();
        eprintln!(
            "linerate: agent {} (API {}) listening on http://{at}; serving {}{}; up to {cap} connections (open files {nofile}), {:?} for a request head, {:?} per request, {BODY_LIMIT} bytes per body",
            env!("CARGO_PKG_VERSION"),
            api::API_VERSION,
            served.join(", "),
            if shared.allow.force { ", --force allowed" } else { "" },
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

#[cfg(test)]
mod tests {
    use std::{
        path::PathBuf,
        sync::{atomic::AtomicU64, Arc, Mutex},
        time::Duration,
    };

    use super::{allow::*, child::*, routes::router, runs::*, state::*};
    use crate::api::{self, RunRequest};

    /// A stand-in for the binary's command line: the child's argv is the
    /// request's args, its sides the request's interface; `--force` is
    /// force.
    struct Echo;

    impl Runs for Echo {
        fn child(&self, req: &RunRequest) -> Result<Child, String> {
            Ok(Child {
                argv: req.args.clone(),
                sides: vec![(req.iface.clone(), req.netns.clone())],
                force: req.args.iter().any(|a| a == "--force"),
            })
        }

        fn doctor(&self, iface: String, netns: Option<String>) -> anyhow::Result<String> {
            match netns {
                None => Ok(format!("{{\"iface\":\"{iface}\",\"checks\":[]}}")),
                Some(ns) => anyhow::bail!("no doctor in {ns}"),
            }
        }
    }

    fn agent(allow: Vec<AllowedIface>, allow_force: bool) -> Shared {
        Shared {
            token: "0123456789abcdef".into(),
            exe: PathBuf::from("/bin/false"),
            run: Mutex::new(None),
            seq: AtomicU64::new(1),
            allow: Allow::new(allow, allow_force),
            request_timeout: Duration::from_secs(60),
            runs: Arc::new(Echo),
        }
    }

    fn request(iface: &str, netns: Option<&str>, args: &[&str]) -> RunRequest {
        RunRequest {
            test: api::Test::Stream,
            role: api::Role::Rx,
            args: args.iter().map(|s| s.to_string()).collect(),
            iface: iface.into(),
            netns: netns.map(str::to_string),
            peer: api::Peer {
                mac: "02:00:c6:12:00:01".parse().unwrap(),
                ip: "198.18.0.1".parse().unwrap(),
            },
            start_at_ns: 0,
            lease_ms: 3000,
            clock_offset_ns: None,
            pair: None,
        }
    }

    /// The refusal of a run request: Err(400 text) or Ok(403 text, if any).
    fn verdict(s: &Shared, r: &RunRequest) -> Result<Option<String>, String> {
        check_request(s.runs.as_ref(), r).map(|c| s.allow.run_refusal(&c))
    }

    #[test]
    fn a_pair_name_is_a_name() {
        let s = agent(default_allowed("lr"), false);
        let mut r = request("lr-b0", Some("lr-b"), &[]);
        r.pair = Some("fl0".into());
        assert_eq!(verdict(&s, &r), Ok(None));
        r.pair = Some("../../etc".into());
        let e = verdict(&s, &r).unwrap_err();
        assert!(e.starts_with("pair: pair name"), "{e}");
    }

    #[test]
    fn the_lab_by_default() {
        let s = agent(default_allowed("lr"), false);
        assert_eq!(
            s.allow
                .ifaces
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["lr-a0@lr-a", "lr-b0@lr-b"]
        );
        assert_eq!(verdict(&s, &request("lr-b0", Some("lr-b"), &[])), Ok(None));
        for (iface, ns, flag) in [
            ("eth0", None, "--allow-iface eth0 "),
            ("lr-b0", Some("lr-a"), "--allow-iface lr-b0@lr-a "),
            ("lr-b0", None, "--allow-iface lr-b0 "),
        ] {
            let why = verdict(&s, &request(iface, ns, &[])).unwrap().unwrap();
            assert!(why.contains(flag), "{why}");
        }
    }

    #[test]
    fn hostile_names_allowed_and_refused() {
        let hostile = parse_allowed_iface("q;id>pw;#").unwrap();
        assert_eq!(hostile.to_string(), "q;id>pw;#");
        let s = agent(vec![hostile], false);
        assert_eq!(verdict(&s, &request("q;id>pw;#", None, &[])), Ok(None));
        let why = verdict(&s, &request("q;id>pw", None, &[]))
            .unwrap()
            .unwrap();
        assert!(why.contains("--allow-iface 'q;id>pw' "), "{why}");
        for bad in ["a/b", "", "eth0@../netns/rp-a", "eth0@/run/netns/rp-a"] {
            let e = parse_allowed_iface(bad).unwrap_err();
            assert!(e.contains("is not a"), "{bad:?}: {e}");
        }
        assert_eq!(
            parse_allowed_iface("x0@ns1").unwrap(),
            AllowedIface {
                iface: "x0".into(),
                netns: Some("ns1".into())
            }
        );
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

    /// The options the agent sets itself are refused before the binary
    /// reads the request.
    #[test]
    fn options_the_agent_owns_are_refused() {
        for (args, says) in [
            (
                &["--token-file", "/etc/shadow"][..],
                "args: --token-file is not",
            ),
            (&["--token-file=/x"], "args: --token-file is not"),
            (&["--lab", "x"], "args: --lab is not"),
            (&["--size", "64", "--lab=x"], "args: --lab is not"),
            (&["--role=tx"], "args: --role is not"),
            (&["--peer-ip", "198.18.0.9"], "args: --peer-ip is not"),
            (&["--start-at", "0"], "args: --start-at is not"),
            (
                &["--peer-mac", "02:00:00:00:00:02"],
                "args: --peer-mac is not",
            ),
            (
                &["--clock-offset-ns", "1"],
                "args: --clock-offset-ns is not",
            ),
        ] {
            let e = check_request(&Echo, &request("lr-b0", Some("lr-b"), args)).unwrap_err();
            assert!(e.contains(says), "{args:?}: {e}");
        }
        assert_eq!(
            check_request(&Echo, &request("lr-b0", Some("lr-b"), &["--size", "64"]))
                .unwrap()
                .argv,
            ["--size", "64"]
        );
    }

    #[test]
    fn lease_and_start_are_checked() {
        let mut r = request("lr-b0", Some("lr-b"), &[]);
        r.start_at_ns = u64::MAX;
        assert!(check_fields(&r).unwrap_err().contains("start_at_ns"));
        r.start_at_ns = unix_ns() + 5_000_000_000;
        check_fields(&r).unwrap();
        r.lease_ms = 1;
        assert_eq!(
            check_fields(&r).unwrap_err(),
            "lease_ms 1 is out of range: use 500 to 120000"
        );
    }

    #[test]
    fn a_mac_is_six_hex_pairs() {
        let m: api::Mac = "02:00:C6:12:00:0a".parse().unwrap();
        assert_eq!(m.to_string(), "02:00:c6:12:00:0a");
        for bad in [
            "02:00:c6:12:00:01\nforged",
            "zz:00:00:00:00:01",
            "2:00:00:00:00:01",
            "+2:00:00:00:00:01",
            "02:00:00:00:00",
            "02:00:00:00:00:01:02",
            "",
        ] {
            let e = bad.parse::<api::Mac>().unwrap_err();
            assert!(
                e.contains("is not a MAC address") && !e.contains('\n'),
                "{e}"
            );
        }
        let e = serde_json::from_str::<api::Peer>(
            r#"{"mac": "02:00:00:00:00:01", "ip": "198.18.0.1", "x": 1}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown field `x`"), "{e}");
    }

    #[test]
    fn shell_words() {
        assert_eq!(quoted("lr-b0@lr-b"), "lr-b0@lr-b");
        assert_eq!(quoted("q;id>pw;#"), "'q;id>pw;#'");
        assert_eq!(quoted("a'b"), "'a'\\''b'");
    }

    /// GET `path` on the agent's routes with its token: the status, the
    /// content type and the body.
    fn get(s: Shared, path: &str) -> (u16, String, String) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut app = router(Arc::new(s));
            let req = axum::http::Request::builder()
                .uri(path)
                .header("authorization", "Bearer 0123456789abcdef")
                .body(axum::body::Body::empty())
                .unwrap();
            let r = tower_service::Service::call(&mut app, req).await.unwrap();
            let code = r.status().as_u16();
            let kind = r.headers()["content-type"].to_str().unwrap().to_string();
            let body = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
            (code, kind, String::from_utf8(body.to_vec()).unwrap())
        })
    }

    /// The doctor's report is the binary's JSON text, answered as it is;
    /// its error a 400; an interface not served a 403 before it runs.
    #[test]
    fn the_doctor_answers_the_binarys_report() {
        let allow = vec![
            AllowedIface {
                iface: "x0".into(),
                netns: None,
            },
            AllowedIface {
                iface: "x0".into(),
                netns: Some("n1".into()),
            },
        ];
        assert_eq!(
            get(agent(allow.clone(), false), "/v1/doctor?iface=x0"),
            (
                200,
                "application/json".into(),
                r#"{"iface":"x0","checks":[]}"#.into()
            )
        );
        assert_eq!(
            get(agent(allow.clone(), false), "/v1/doctor?iface=x0&netns=n1"),
            (
                400,
                "application/json".into(),
                r#"{"error":"no doctor in n1"}"#.into()
            )
        );
        let (code, _, body) = get(agent(allow, false), "/v1/doctor?iface=y0");
        assert_eq!(code, 403, "{body}");
        assert!(body.contains("--allow-iface y0 "), "{body}");
    }
}
