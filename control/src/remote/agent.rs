//! `linerate agent`: the agent's server is `linerate_remote::agent`; what
//! a run request's options mean is the command line's, given to it here
//! ([`CliRuns`]): the request's options parsed and checked with clap's own
//! definitions (so that errors read as on the command line), a
//! controller's options refused, the child's command line rebuilt from
//! the parsed run; and the doctor.

use std::sync::Arc;

use anyhow::Result;
use linerate_remote::{
    agent::{self, Child, Runs, Serve},
    api,
};

use crate::{
    cli::{AgentServeArgs, DoctorArgs, LabName, RoleArg},
    request,
};

/// `linerate agent`: serves until Ctrl-C or SIGTERM.
pub fn command(a: &AgentServeArgs) -> Result<std::process::ExitCode> {
    let serve = Serve {
        listen: a.listen,
        token_file: a.token_file.clone(),
        allow_iface: a.allow_iface.clone(),
        lab: a.lab.name.clone(),
        allow_force: a.allow_force,
        max_connections: a.max_connections,
        header_timeout: a.header_timeout,
        request_timeout: a.request_timeout,
    };
    agent::serve(&serve, Arc::new(CliRuns))?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// A run request's options as this binary's command line reads them.
pub struct CliRuns;

impl Runs for CliRuns {
    fn child(&self, req: &api::RunRequest) -> Result<Child, String> {
        let role = match req.role {
            api::Role::Tx => RoleArg::Tx,
            api::Role::Rx => RoleArg::Rx,
        };
        let argv = request::side_argv(
            req.test.as_str(),
            &req.args,
            &request::Side {
                role: role.as_str(),
                iface: &req.iface,
                netns: req.netns.as_deref(),
                peer_mac: &req.peer.mac.to_string(),
                peer_ip: req.peer.ip.to_string(),
                start_at_ns: req.start_at_ns,
                clock_offset_ns: req.clock_offset_ns,
            },
        );
        let run = request::RunRequest::parse(&argv)?;
        no_agents(&run)?;
        Ok(Child {
            argv: run.argv(),
            sides: run_sides(&run),
            force: run.run().force,
        })
    }

    fn doctor(&self, iface: String, netns: Option<String>) -> Result<String> {
        let report = crate::doctor::run(&DoctorArgs {
            iface: Some(iface),
            netns,
            lab: LabName { name: "lr".into() },
            tx_cores: None,
            rx_cores: None,
            json: true,
        })?;
        Ok(serde_json::to_string(&report)?)
    }
}

/// The interfaces (and namespaces) a run would use: its --tx-iface and
/// --rx-iface, or without them the lab's.
fn run_sides(req: &request::RunRequest) -> Vec<(String, Option<String>)> {
    let run = req.run();
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

/// Refuses the options of a controller, which the agent's child (one
/// side of a run) would refuse or misread once started: agents, a fleet,
/// --reverse, the gates (the controller holds them against both sides),
/// a rate search (one host's). (--json-stream clap refuses beside the
/// child's --json.)
fn no_agents(run: &request::RunRequest) -> Result<(), String> {
    let a = run.run();
    if a.agents.tx_agent.is_some() || a.agents.rx_agent.is_some() {
        return Err("a run on an agent cannot name agents itself".into());
    }
    if a.agents.fleet.is_some() {
        return Err("--fleet is the controller's: a run on an agent is one side of one pair; give --fleet to `linerate stream|rr` on the controller".into());
    }
    if a.reverse {
        return Err("--reverse swaps hosts: swap --tx-agent and --rx-agent instead".into());
    }
    if !a.expect.is_empty() {
        return Err("--expect is the controller's: it holds the gates against the merged result of both sides; give it to `linerate stream|rr` on the controller".into());
    }
    if let request::RunRequest::Stream(s) = run {
        if s.search_rate.is_some() {
            return Err(
                "--search-rate runs on one host: search there, then run both sides at that rate"
                    .into(),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::CliRuns;
    use crate::request;
    use linerate_remote::agent::{
        check_request, default_allowed, parse_allowed_iface, Allow, AllowedIface,
    };
    use linerate_remote::api::{self, RunRequest};

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
    fn verdict(allow: &Allow, r: &RunRequest) -> Result<Option<String>, String> {
        check_request(&CliRuns, r).map(|child| allow.run_refusal(&child))
    }

    #[test]
    fn a_pair_name_is_a_name() {
        let s = Allow::new(default_allowed("lr"), false);
        let mut r = request("lr-b0", Some("lr-b"), &[]);
        r.pair = Some("fl0".into());
        assert_eq!(verdict(&s, &r), Ok(None));
        r.pair = Some("../../etc".into());
        let e = verdict(&s, &r).unwrap_err();
        assert!(e.starts_with("pair: pair name"), "{e}");
    }

    #[test]
    fn the_lab_by_default() {
        let s = Allow::new(default_allowed("lr"), false);
        assert_eq!(
            s.ifaces.iter().map(ToString::to_string).collect::<Vec<_>>(),
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
        let hostile = parse_allowed_iface("q;id>pw;#").unwrap();
        let s = Allow::new(vec![hostile], false);
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
            &Allow::new(allow.clone(), false),
            &request("x0", None, &["--force"]),
        )
        .unwrap()
        .unwrap();
        assert!(why.contains("--allow-force"), "{why}");
        assert_eq!(
            verdict(&Allow::new(allow, true), &request("x0", None, &["--force"])),
            Ok(None)
        );
    }

    /// The child runs with the command line built from the typed request:
    /// the side's options added, the request's own carried, nothing else.
    #[test]
    fn the_child_argv_is_built_from_the_typed_request() {
        let child = check_request(
            &CliRuns,
            &request("lr-b0", Some("lr-b"), &["--size", "128"]),
        )
        .unwrap();
        assert_eq!(
            child.argv,
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
        // Its argv parses back to itself: the run it was built from.
        let run = request::RunRequest::parse(&child.argv).unwrap();
        assert_eq!(run.argv(), child.argv);
        assert_eq!(
            child.sides,
            [("lr-b0".to_string(), Some("lr-b".to_string()))]
        );
        assert!(!child.force);
        // An option the side sets is not the request's to give.
        let e = check_request(&CliRuns, &request("lr-b0", None, &["--tx-iface", "x"])).unwrap_err();
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
            let e = check_request(&CliRuns, &request("lr-b0", Some("lr-b"), args)).unwrap_err();
            assert!(e.contains(says), "{args:?}: {e}");
        }
    }
}
