//! A run request: one `stream` or `rr` run, typed (parsed by the CLI's own
//! clap definitions, so every caller accepts exactly what the command line
//! does) and as the command line of the `linerate` process that runs it.
//!
//! A request's command line ([`RunRequest::argv`], and an rfc2544 run's,
//! [`rfc2544_argv`]) is the typed options serialized (serde) and written
//! by the command's own definitions, option by option as clap names them:
//! an option added to the CLI is carried without a line here (a test
//! walks every option there and back). The names this file still spells
//! are those it edits: what each agent's child of a two-host run is given
//! ([`RunRequest::for_agents`]), what an agent adds for the side its child
//! runs ([`side_argv`]) and the options that say where a sweep's points
//! run ([`given_path`]). A test checks each against the CLI's
//! definitions, and those the sweep model spells too
//! (`linerate_report::sweep::saved::PATH_OPTIONS`, a quick sweep's
//! durations `linerate_report::sweep::points::QUICK`). Option names
//! elsewhere are in messages to the user only.

use std::{fmt::Display, time::Duration};

use clap::Parser;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::cli::{AgentArgs, Rfc2544Args, RrArgs, RunArgs, StreamArgs, SweepArgs};

/// A run's options, parsed.
#[derive(Debug, Clone)]
pub enum RunRequest {
    /// A stream run.
    Stream(Box<StreamArgs>),
    /// An rr run.
    Rr(Box<RrArgs>),
}

#[derive(Debug, Parser)]
#[command(name = "stream", no_binary_name = true)]
struct StreamLine {
    #[command(flatten)]
    args: StreamArgs,
}

#[derive(Debug, Parser)]
#[command(name = "rr", no_binary_name = true)]
struct RrLine {
    #[command(flatten)]
    args: RrArgs,
}

/// clap's refusal as one line (`--help` among a run's options: where
/// the help is).
fn first_line(e: clap::Error) -> String {
    if e.kind() == clap::error::ErrorKind::DisplayHelp {
        return "--help is not a run option: a run takes the options of `linerate stream` or `linerate rr`, which `linerate stream --help` and `linerate rr --help` list (docs/remote.md has the API)".into();
    }
    e.to_string()
        .lines()
        .next()
        .unwrap_or("invalid option")
        .trim_start_matches("error: ")
        .to_string()
}

impl RunRequest {
    /// Parses and checks a run's command line (`stream ...` or `rr ...`).
    pub fn parse(argv: &[String]) -> Result<Self, String> {
        match argv.split_first() {
            Some((command, options)) if command == "stream" => Self::stream(options),
            Some((command, options)) if command == "rr" => Self::rr(options),
            _ => Err("a run is `stream` or `rr`".into()),
        }
    }

    /// The command's own range checks (no system access).
    pub fn check(&self) -> anyhow::Result<()> {
        match self {
            Self::Stream(args) => crate::plan::stream::check_args(args),
            Self::Rr(args) => crate::plan::rr::check_args(args),
        }
    }

    /// Parses and checks a stream's options (after `stream`; no system
    /// access): clap's errors for unknown options or bad values, the
    /// command's own range checks.
    pub fn stream(argv: &[String]) -> Result<Self, String> {
        let req = Self::Stream(Box::new(
            StreamLine::try_parse_from(argv).map_err(first_line)?.args,
        ));
        req.check().map_err(|e| format!("{e:#}"))?;
        Ok(req)
    }

    /// Parses and checks an rr run's options (after `rr`), as
    /// [`RunRequest::stream`].
    pub fn rr(argv: &[String]) -> Result<Self, String> {
        let req = Self::Rr(Box::new(
            RrLine::try_parse_from(argv).map_err(first_line)?.args,
        ));
        req.check().map_err(|e| format!("{e:#}"))?;
        Ok(req)
    }

    /// The command's name on the command line.
    pub fn command(&self) -> &'static str {
        match self {
            Self::Stream(_) => "stream",
            Self::Rr(_) => "rr",
        }
    }

    /// The options every run shares (where, how long).
    pub fn run(&self) -> &RunArgs {
        match self {
            Self::Stream(args) => &args.run,
            Self::Rr(args) => &args.run,
        }
    }
}

impl RunRequest {
    /// The options every run shares, to change.
    pub fn run_mut(&mut self) -> &mut RunArgs {
        match self {
            Self::Stream(args) => &mut args.run,
            Self::Rr(args) => &mut args.run,
        }
    }

    /// The command line that parses back to this request: the command,
    /// then every option whose value differs from its default, each as
    /// `--name=value` (so that no value reads as an option). Written from
    /// the typed request and the command's own definitions ([`options`]):
    /// no option is spelled here.
    pub fn argv(&self) -> Vec<String> {
        let mut line = vec![self.command().to_string()];
        line.extend(match self {
            Self::Stream(args) => options::<StreamLine>(args, &defaults::<StreamLine>().args),
            Self::Rr(args) => options::<RrLine>(args, &defaults::<RrLine>().args),
        });
        line
    }

    /// What each agent's child of a two-host run is given: this request
    /// without the options the controller keeps for itself (the agents,
    /// the token, the interfaces and namespaces, the lab, --reverse,
    /// --json, --quiet), as options after the command.
    pub fn for_agents(&self) -> Vec<String> {
        let mut req = self.clone();
        let lab = defaults::<StreamLine>().args.run.lab;
        let run = req.run_mut();
        run.agents = AgentArgs::default();
        run.reverse = false;
        run.json = false;
        run.quiet = false;
        run.expect.clear();
        run.json_stream = false;
        run.interval = defaults::<StreamLine>().args.run.interval;
        run.lab = lab;
        (run.tx_iface, run.rx_iface, run.tx_netns, run.rx_netns) = (None, None, None, None);
        req.argv().split_off(1)
    }
}

#[cfg(test)]
impl RunRequest {
    /// A stream's options as clap parses them (no checks), for tests.
    pub fn stream_args(options: &[&str]) -> StreamArgs {
        StreamLine::try_parse_from(options).unwrap().args
    }

    /// An rr run's options as clap parses them (no checks), for tests.
    pub fn rr_args(options: &[&str]) -> RrArgs {
        RrLine::try_parse_from(options).unwrap().args
    }
}

/// The options of an rfc2544 run (after `rfc2544`) that parse back to
/// `args`, as its directory keeps them for `--resume` (without --resume
/// itself).
pub fn rfc2544_argv(args: &Rfc2544Args) -> Vec<String> {
    let args = Rfc2544Args {
        resume: None,
        ..args.clone()
    };
    options::<Rfc2544Line>(&args, &defaults::<Rfc2544Line>().args)
}

#[derive(Debug, Parser)]
#[command(name = "rfc2544", no_binary_name = true)]
struct Rfc2544Line {
    #[command(flatten)]
    args: Rfc2544Args,
}

/// A command's options with nothing given.
fn defaults<P: Parser>() -> P {
    P::try_parse_from(std::iter::empty::<String>()).expect("every run option has a default")
}

/// The options of `given` that differ from `default`, in the order
/// command `C` defines them, as `--name=value` (a flag as `--name`, a
/// repeated option once per value): each field of the typed options is
/// the argument clap gave that id, written as its command line reads it
/// (a value enum by its name on the command line, a duration as
/// humantime's, a [`Display`] type by [`opt_text`]).
fn options<C: clap::CommandFactory>(
    given: &impl Serialize,
    default: &impl Serialize,
) -> Vec<String> {
    let (given, default) = (fields(given), fields(default));
    let mut line = Vec::new();
    for arg in C::command().get_arguments() {
        let (Some(long), Some(value)) = (arg.get_long(), given.get(arg.get_id().as_str())) else {
            continue;
        };
        if default.get(arg.get_id().as_str()) == Some(value) {
            continue;
        }
        match value {
            Value::Null | Value::Bool(false) => {}
            Value::Bool(true) => line.push(format!("--{long}")),
            Value::Array(values) => {
                line.extend(values.iter().map(|v| format!("--{long}={}", text(arg, v))));
            }
            v => line.push(format!("--{long}={}", text(arg, v))),
        }
    }
    line
}

/// The typed options as a map of clap's argument ids (the fields' names,
/// flattened as clap flattens them).
fn fields(args: &impl Serialize) -> Map<String, Value> {
    match serde_json::to_value(args) {
        Ok(Value::Object(o)) => o,
        other => unreachable!("options serialize as an object, not {other:?}"),
    }
}

/// One value as the command line gives it.
fn text(arg: &clap::Arg, v: &Value) -> String {
    let plain = |s: &str| s.replace(['-', '_'], "").to_ascii_lowercase();
    match v {
        // A value enum's variant: the name clap gives it.
        Value::String(s) => arg
            .get_possible_values()
            .into_iter()
            .find(|p| plain(p.get_name()) == plain(s))
            .map_or_else(|| s.clone(), |p| p.get_name().to_string()),
        // A std::time::Duration.
        Value::Object(o) => {
            let n = |k: &str| o.get(k).and_then(Value::as_u64).unwrap_or(0);
            let d = Duration::new(n("secs"), n("nanos") as u32);
            humantime::format_duration(d).to_string()
        }
        // A float as Rust writes it (10, not serde_json's 10.0).
        Value::Number(n) if n.is_f64() => {
            n.as_f64().map_or_else(|| n.to_string(), |x| x.to_string())
        }
        v => v.to_string(),
    }
}

/// Serializes an optional option of a [`Display`] type as the command line
/// writes it.
pub fn opt_text<T: Display, S: serde::Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.serialize_str(&v.to_string()),
        None => s.serialize_none(),
    }
}

/// What an agent adds to its child's command line: the side it runs and
/// where.
pub struct Side<'a> {
    /// `tx` or `rx` (`--role`).
    pub role: &'a str,
    /// The interface of this host.
    pub iface: &'a str,
    /// Its namespace, if any.
    pub netns: Option<&'a str>,
    /// The other host's MAC and IP.
    pub peer_mac: &'a str,
    /// The other host's IP.
    pub peer_ip: String,
    /// The agreed start (ns since the epoch).
    pub start_at_ns: u64,
    /// The receiving side: its monotonic clock minus the sender's, ns.
    pub clock_offset_ns: Option<i64>,
}

/// The child's command line: `command`, the controller's options, then the
/// side's; the result as JSON.
pub fn side_argv(command: &str, options: &[String], side: &Side<'_>) -> Vec<String> {
    let mut argv = vec![command.to_string()];
    argv.extend(options.iter().cloned());
    for (flag, value) in [
        ("--role", Some(side.role.to_string())),
        ("--tx-iface", Some(side.iface.to_string())),
        ("--rx-iface", Some(side.iface.to_string())),
        ("--tx-netns", side.netns.map(str::to_string)),
        ("--rx-netns", side.netns.map(str::to_string)),
        ("--peer-mac", Some(side.peer_mac.to_string())),
        ("--peer-ip", Some(side.peer_ip.clone())),
        ("--start-at", Some(side.start_at_ns.to_string())),
        (
            "--clock-offset-ns",
            side.clock_offset_ns.map(|n| n.to_string()),
        ),
    ] {
        if let Some(value) = value {
            argv.extend([flag.to_string(), value]);
        }
    }
    argv.push("--json".into());
    argv
}

/// The options of `linerate sweep` that say where its points run, as
/// (option, value).
pub fn given_path(args: &SweepArgs) -> Vec<(&'static str, String)> {
    let token = args
        .agents
        .token_file
        .as_ref()
        .map(|p| p.display().to_string());
    let fleet = args.agents.fleet.as_ref().map(|p| p.display().to_string());
    [
        ("--tx-iface", &args.tx_iface),
        ("--rx-iface", &args.rx_iface),
        ("--tx-netns", &args.tx_netns),
        ("--rx-netns", &args.rx_netns),
        ("--lab", &args.lab),
        ("--tx-agent", &args.agents.tx_agent),
        ("--rx-agent", &args.agents.rx_agent),
        ("--token-file", &token),
        ("--fleet", &fleet),
    ]
    .into_iter()
    .filter_map(|(flag, value)| value.as_ref().map(|v| (flag, v.clone())))
    .collect()
}

/// Whether a point's options name agents (its sides run on their hosts,
/// or on every pair of a fleet).
pub fn names_agents(options: &[String]) -> bool {
    options.iter().any(|o| {
        ["--tx-agent", "--fleet"]
            .iter()
            .any(|f| o == f || o.strip_prefix(f).is_some_and(|v| v.starts_with('=')))
    })
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// Every long option of a run command (and `-r`).
    fn options(command: clap::Command) -> Vec<String> {
        command
            .get_arguments()
            .filter_map(|arg| {
                arg.get_long()
                    .map(|l| format!("--{l}"))
                    .or_else(|| arg.get_short().map(|s| format!("-{s}")))
            })
            .chain(
                command
                    .get_arguments()
                    .filter_map(|arg| arg.get_short().map(|s| format!("-{s}"))),
            )
            .collect()
    }

    #[test]
    fn every_option_named_here_is_a_run_option() {
        let stream = options(StreamLine::command());
        let rr = options(RrLine::command());
        let sweep = options(
            crate::cli::Cli::command()
                .find_subcommand("sweep")
                .unwrap()
                .clone(),
        );
        let mut named: Vec<&str> = Vec::new();
        named.extend(
            linerate_report::sweep::saved::PATH_OPTIONS
                .iter()
                .flat_map(|(f, r)| std::iter::once(*f).chain(r.iter().copied())),
        );
        named.extend(linerate_report::sweep::points::QUICK.iter().step_by(2));
        let side = Side {
            role: "tx",
            iface: "x",
            netns: Some("n"),
            peer_mac: "m",
            peer_ip: "i".into(),
            start_at_ns: 1,
            clock_offset_ns: None,
        };
        let argv = side_argv("stream", &[], &side);
        named.extend(
            argv.iter()
                .filter(|a| a.starts_with('-'))
                .map(String::as_str),
        );
        for name in named {
            assert!(stream.iter().any(|o| o == name), "stream has no {name}");
            assert!(rr.iter().any(|o| o == name), "rr has no {name}");
        }
        for (flag, _) in linerate_report::sweep::saved::PATH_OPTIONS {
            assert!(sweep.iter().any(|o| o == flag), "sweep has no {flag}");
        }
    }

    /// For every option of stream and rr, a command line that gives it a
    /// value other than its default (with what it requires).
    const SAMPLES: &[&[&str]] = &[
        &["--mtu", "9000"],
        &["--duration", "1m 2s 3ms"],
        &["--warmup", "250ms"],
        &["--queues", "3"],
        &["--tx-wait", "busy"],
        &["--rx-wait", "busy"],
        &["--tx-cores", "0-1"],
        &["--rx-cores", "1"],
        &["--batch", "16"],
        &["--ring", "1024"],
        &["--rx-ring", "4096"],
        &["--umem-chunk", "4096"],
        &["--port", "9000"],
        &["--tx-iface", "a0"],
        &["--rx-iface", "b0"],
        &["--tx-netns", "na"],
        &["--rx-netns", "nb"],
        &["--napi", "softirq"],
        &["--napi", "threaded", "--napi-priority", "fifo:50"],
        &["--gen-priority", "other:5"],
        &["--rx-priority", "rr:40"],
        &["--backend", "udp"],
        &["--gso"],
        &["--gro"],
        &["--ipv6"],
        &["--inject-loss", "0.125"],
        &["-r"],
        &["--reverse"],
        &["--lab", "ar9"],
        &["--zero-copy"],
        &["--xdp-mode", "generic"],
        &["--force"],
        &["--json"],
        &["--quiet"],
        &["-q"],
        &["--expect", "frames.lost == 0"],
        &["--confidence", "99,5"],
        &["--iterations", "4,8"],
        &["--disturbed-above", "40"],
        &["--json-stream"],
        &["--json-stream", "--interval", "250ms"],
        &["--expect", "latency.p99_us<9", "--expect", "x >= 1"],
        &["--tx-agent", "http://a:1", "--rx-agent", "http://b:2"],
        &[
            "--tx-agent",
            "http://a:1",
            "--rx-agent",
            "http://b:2",
            "--pair",
            "fl0",
        ],
        &["--token-file", "/tmp/t o k"],
        &["--fleet", "/tmp/f l.toml"],
        &["--role", "client"],
        &["--role", "rx", "--peer-mac", "02:00:00:00:00:01"],
        &["--role", "tx", "--peer-ip", "198.18.0.9"],
        &["--role", "tx", "--start-at", "12345"],
        &["--role", "rx", "--clock-offset-ns", "7"],
        // stream
        &["--size", "128"],
        &["--size", "imix"],
        &["--size", "64:7,594:4,1518:1"],
        &["--message", "9000"],
        &["--count", "77"],
        &["--rate", "1234.5"],
        &["--rx-only"],
        &["--tx-only"],
        &["--pcap", "/tmp/a b.pcapng"],
        &["--pcap", "f", "--pcap-count", "5"],
        &["--search-rate", "0.5"],
        &["--search", "binary"],
        &["--tx-engine", "generator"],
        &["--rx-engine", "xdp"],
        &["--verify", "off"],
        &["--verify", "1/64"],
        // rr
        &["--request", "100"],
        &["--response", "200"],
        &["--concurrency", "4"],
        &["--flows", "2"],
        &["--timeout", "1s 500us"],
        &["--responder", "xdp"],
        &["--no-floor"],
    ];

    /// Parses without the commands' own checks: every value clap takes.
    fn parse<P: Parser>(line: &[String]) -> Result<P, String> {
        P::try_parse_from(line).map_err(first_line)
    }

    /// args -> argv -> clap gives the same args back, for every option of
    /// both commands given alone: an option added to the CLI whose value
    /// the serialization does not write as the command line reads it (or
    /// without a line in `SAMPLES`) fails here.
    #[test]
    fn every_option_survives_the_round_trip() {
        let sampled: Vec<&str> = SAMPLES
            .iter()
            .flat_map(|s| s.iter().copied())
            .filter(|a| a.starts_with('-'))
            .collect();
        for (command, all) in [
            ("stream", options(StreamLine::command())),
            ("rr", options(RrLine::command())),
        ] {
            for option in all.iter().filter(|o| *o != "--help") {
                assert!(
                    sampled.contains(&option.as_str()),
                    "{command} {option} has no line in SAMPLES: add one"
                );
            }
            let build = |line: &[String]| -> Result<RunRequest, String> {
                Ok(match command {
                    "stream" => RunRequest::Stream(Box::new(parse::<StreamLine>(line)?.args)),
                    _ => RunRequest::Rr(Box::new(parse::<RrLine>(line)?.args)),
                })
            };
            let default = format!("{:?}", build(&[]).unwrap());
            let mut tried = 0;
            for sample in SAMPLES {
                let line: Vec<String> = sample.iter().map(|s| s.to_string()).collect();
                let Ok(given) = build(&line) else {
                    // The other command's option.
                    assert!(
                        !all.iter().any(|o| o == &line[0]),
                        "{command} refuses {line:?}"
                    );
                    continue;
                };
                tried += 1;
                let argv = given.argv();
                assert_eq!(argv[0], command);
                let back = build(&argv[1..]).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
                let (given, back) = (format!("{given:?}"), format!("{back:?}"));
                assert_ne!(given, default, "{line:?} gives the default");
                assert_eq!(given, back, "{line:?} came back changed from {argv:?}");
            }
            assert!(tried > 30, "{command}: {tried} options tried");
        }
    }

    #[test]
    fn all_options_at_once_survive_the_round_trip() {
        let line: Vec<String> = [
            "--size",
            "100",
            "--count",
            "5",
            "--rate",
            "1e6",
            "--queues",
            "2",
            "--backend",
            "udp",
            "--gso",
            "--json",
            "--tx-wait",
            "busy",
            "--duration",
            "100ms",
        ]
        .map(String::from)
        .to_vec();
        let given = RunRequest::stream(&line).unwrap();
        let back = RunRequest::parse(&given.argv()).unwrap();
        assert_eq!(format!("{given:?}"), format!("{back:?}"));
        assert_eq!(back.command(), "stream");
    }

    /// An rfc2544 run's record parses back to its options (but --resume).
    #[test]
    fn an_rfc2544_line_survives_the_round_trip() {
        let line: Vec<String> = [
            "--quick",
            "--loss",
            "0.25",
            "--pdr-loss",
            "1",
            "--trial",
            "1s 500ms",
            "--out",
            "/tmp/a b",
            "--size",
            "64:7,594:4,1518:1",
            "--rx-wait",
            "busy-poll",
            "--tx-engine",
            "af-xdp",
        ]
        .map(String::from)
        .to_vec();
        let given = parse::<Rfc2544Line>(&line).unwrap().args;
        let argv = rfc2544_argv(&given);
        assert!(argv.contains(&"--trial=1s 500ms".to_string()), "{argv:?}");
        let back = parse::<Rfc2544Line>(&argv).unwrap().args;
        assert_eq!(format!("{given:?}"), format!("{back:?}"));
        let resumed = parse::<Rfc2544Line>(&["--resume".into(), "/tmp/d".into()]).unwrap();
        assert!(rfc2544_argv(&resumed.args).is_empty());
    }

    #[test]
    fn the_side_argv_parses_back_to_its_side() {
        let side = Side {
            role: "rx",
            iface: "lr-b0",
            netns: Some("lr-b"),
            peer_mac: "02:00:00:00:00:01",
            peer_ip: "10.0.0.1".into(),
            start_at_ns: 42,
            clock_offset_ns: Some(-7),
        };
        let options = vec!["--size".to_string(), "128".into()];
        let argv = side_argv("stream", &options, &side);
        let RunRequest::Stream(args) = RunRequest::stream(&argv[1..]).unwrap() else {
            panic!("not a stream")
        };
        assert_eq!(args.run.tx_iface.as_deref(), Some("lr-b0"));
        assert_eq!(args.run.rx_netns.as_deref(), Some("lr-b"));
        assert!(args.run.json);
        assert_eq!(
            args.run.role.clock_offset_ns,
            Some(-7),
            "a negative offset parses"
        );
        assert_eq!(RunRequest::Stream(args).command(), "stream");
    }

    #[test]
    fn given_path_follows_the_table() {
        let cli = crate::cli::Cli::try_parse_from([
            "linerate",
            "sweep",
            "x",
            "--rx-iface",
            "b0",
            "--lab",
            "am",
        ])
        .unwrap();
        let crate::cli::Command::Sweep(args) = cli.command else {
            panic!("not a sweep")
        };
        assert_eq!(
            given_path(&args),
            [
                ("--rx-iface", "b0".to_string()),
                ("--lab", "am".to_string())
            ]
        );
        let cli = crate::cli::Cli::try_parse_from(["linerate", "sweep", "x", "--fleet", "f.toml"])
            .unwrap();
        let crate::cli::Command::Sweep(args) = cli.command else {
            panic!("not a sweep")
        };
        assert_eq!(given_path(&args), [("--fleet", "f.toml".to_string())]);
        assert!(names_agents(&["--tx-agent=http://a".into()]));
        assert!(!names_agents(&["--lab".into()]));
        assert!(names_agents(&["--fleet".into(), "f.toml".into()]));
        assert!(!names_agents(&["--fleetx".into()]));
    }
}
