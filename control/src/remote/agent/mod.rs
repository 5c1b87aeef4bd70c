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

mod allow;
mod routes;
mod runs;
mod server;
mod state;

use std::sync::{atomic::AtomicU64, Arc, Mutex};

use anyhow::{Context, Result};

use self::{
    allow::{default_allowed, ns_id},
    routes::router,
    server::accept,
    state::{Shared, BODY_LIMIT, FD_RESERVE},
};

use linerate_remote::{api, token};

use crate::cli::AgentServeArgs;

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
    linerate_host::privilege::require_root("linerate agent")?;
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

#[cfg(test)]
mod tests {
    use std::{
        path::PathBuf,
        sync::{atomic::AtomicU64, Mutex},
        time::Duration,
    };

    use super::{allow::*, runs::*, state::*};
    use crate::cli::AllowedIface;
    use crate::request;
    use linerate_remote::api::{self, RunRequest};

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
        child_args(r).map(|(_, run)| s.run_refusal(&run))
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

    /// The child runs with the command line built from the typed request:
    /// the side's options added, the request's own carried, nothing else.
    #[test]
    fn the_child_argv_is_built_from_the_typed_request() {
        let (argv, run) = child_args(&request("lr-b0", Some("lr-b"), &["--size", "128"])).unwrap();
        assert_eq!(
            argv,
            [
                "stream",
                "--size=128",
                "--tx-iface=lr-b0",
                "--rx-iface=lr-b0",
                "--tx-netns=lr-b",
                "--rx-netns=lr-b",
                "--json",
                "--role=rx",
                "--peer-mac=02:00:c6:12:00:01",
                "--peer-ip=198.18.0.1",
                "--start-at=0",
            ]
            .map(String::from)
        );
        assert_eq!(
            format!("{run:?}"),
            format!("{:?}", request::RunRequest::parse(&argv).unwrap())
        );
        // An option the side sets is not the request's to give.
        let e = child_args(&request("lr-b0", None, &["--tx-iface", "x"])).unwrap_err();
        assert!(e.contains("--tx-iface"), "{e}");
    }

    #[test]
    fn options_the_agent_owns_and_help_are_refused() {
        for (args, says) in [
            (
                &["--token-file", "/etc/shadow"][..],
                "args: --token-file is not",
            ),
            (&["--token-file=/x"], "args: --token-file is not"),
            (&["--lab", "x"], "args: --lab is not"),
            (&["--size", "64", "--lab=x"], "args: --lab is not"),
            (
                &["--peer-mac", "02:00:00:00:00:02"],
                "args: --peer-mac is not",
            ),
            (
                &["--clock-offset-ns", "1"],
                "args: --clock-offset-ns is not",
            ),
            (&["--help"], "--help is not a run option"),
            (&["-h"], "--help is not a run option"),
            // A controller's options, which the child would refuse or
            // misread after the run was accepted.
            (&["--fleet", "inv.toml"], "--fleet is the controller's"),
            (&["--fleet=inv.toml"], "--fleet is the controller's"),
            (
                &["--expect", "frames.lost == 0"],
                "--expect is the controller's",
            ),
            (&["--json-stream"], "cannot be used with '--json'"),
            (&["--search-rate", "0.1"], "--search-rate runs on one host"),
            (&["--reverse"], "--reverse swaps hosts"),
        ] {
            let e = child_args(&request("lr-b0", Some("lr-b"), args)).unwrap_err();
            assert!(e.contains(says), "{args:?}: {e}");
        }
        let mut r = request("lr-b0", Some("lr-b"), &[]);
        r.start_at_ns = u64::MAX;
        assert!(check_fields(&r).unwrap_err().contains("start_at_ns"));
        r.start_at_ns = unix_ns() + 5_000_000_000;
        check_fields(&r).unwrap();
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
}
