//! A run request: one `stream` or `rr` run, typed (parsed by the CLI's own
//! clap definitions, so every caller accepts exactly what the command line
//! does) and as the command line of the `linerate` process that runs it.
//!
//! The one place that spells option names to build or edit a run's
//! command line: what the controller keeps for itself ([`for_agents`]),
//! what an agent adds for the side its child runs ([`side_argv`]), the
//! options that say where a sweep's points run ([`PATH_OPTIONS`],
//! [`given_path`]) and a quick sweep's durations ([`QUICK`]). A test checks
//! every name here against the CLI's definitions. Option names elsewhere in
//! control are in messages to the user only.

use clap::Parser;

use crate::cli::{RrArgs, RunArgs, StreamArgs, SweepArgs};

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

/// clap's refusal as one line.
fn first_line(e: clap::Error) -> String {
    e.to_string()
        .lines()
        .next()
        .unwrap_or("invalid option")
        .trim_start_matches("error: ")
        .to_string()
}

impl RunRequest {
    /// Parses and checks a stream's options (after `stream`; no system
    /// access): clap's errors for unknown options or bad values, the
    /// command's own range checks.
    pub fn stream(argv: &[String]) -> Result<Self, String> {
        let args = StreamLine::try_parse_from(argv).map_err(first_line)?.args;
        crate::stream::plan::check_args(&args).map_err(|e| e.to_string())?;
        Ok(Self::Stream(Box::new(args)))
    }

    /// Parses and checks an rr run's options (after `rr`), as
    /// [`RunRequest::stream`].
    pub fn rr(argv: &[String]) -> Result<Self, String> {
        let args = RrLine::try_parse_from(argv).map_err(first_line)?.args;
        crate::rr::plan::check_args(&args).map_err(|e| e.to_string())?;
        Ok(Self::Rr(Box::new(args)))
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

/// Options the controller of a two-host run keeps for itself (with
/// whether each takes a value): the agents run with the rest.
const CONTROLLER_ONLY: [(&str, bool); 11] = [
    ("--reverse", false),
    ("-r", false),
    ("--tx-agent", true),
    ("--rx-agent", true),
    ("--token-file", true),
    ("--tx-iface", true),
    ("--rx-iface", true),
    ("--tx-netns", true),
    ("--rx-netns", true),
    ("--lab", true),
    ("--json", false),
];

/// A controller's command line without the options it keeps for itself:
/// what each agent's child runs with.
pub fn for_agents(raw: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = raw.iter();
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((name, _)) => (name, true),
            None => (arg.as_str(), false),
        };
        match CONTROLLER_ONLY.iter().find(|(flag, _)| *flag == name) {
            Some((_, takes_value)) => {
                if *takes_value && !inline {
                    it.next();
                }
            }
            None => out.push(arg.clone()),
        }
    }
    out
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

/// The options that say where a sweep's points run: (option, the saved
/// options it replaces on `--resume`).
pub const PATH_OPTIONS: [(&str, &[&str]); 8] = [
    (
        "--lab",
        &[
            "--lab",
            "--tx-iface",
            "--rx-iface",
            "--tx-netns",
            "--rx-netns",
        ],
    ),
    ("--tx-iface", &["--tx-iface", "--lab"]),
    ("--rx-iface", &["--rx-iface", "--lab"]),
    ("--tx-netns", &["--tx-netns", "--lab"]),
    ("--rx-netns", &["--rx-netns", "--lab"]),
    ("--tx-agent", &["--tx-agent"]),
    ("--rx-agent", &["--rx-agent"]),
    ("--token-file", &["--token-file"]),
];

/// The options of `linerate sweep` that say where its points run, as
/// (option, value).
pub fn given_path(args: &SweepArgs) -> Vec<(&'static str, String)> {
    let token = args
        .agents
        .token_file
        .as_ref()
        .map(|p| p.display().to_string());
    [
        ("--tx-iface", &args.tx_iface),
        ("--rx-iface", &args.rx_iface),
        ("--tx-netns", &args.tx_netns),
        ("--rx-netns", &args.rx_netns),
        ("--lab", &args.lab),
        ("--tx-agent", &args.agents.tx_agent),
        ("--rx-agent", &args.agents.rx_agent),
        ("--token-file", &token),
    ]
    .into_iter()
    .filter_map(|(flag, value)| value.as_ref().map(|v| (flag, v.clone())))
    .collect()
}

/// Whether a point's options name agents (its sides run on their hosts).
pub fn names_agents(options: &[String]) -> bool {
    options
        .iter()
        .any(|o| o == "--tx-agent" || o.starts_with("--tx-agent="))
}

/// A quick sweep's durations.
pub const QUICK: [&str; 4] = ["--warmup", "0.2s", "--duration", "0.5s"];

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
        let mut named: Vec<&str> = CONTROLLER_ONLY.iter().map(|(f, _)| *f).collect();
        named.extend(
            PATH_OPTIONS
                .iter()
                .flat_map(|(f, r)| std::iter::once(*f).chain(r.iter().copied())),
        );
        named.extend(QUICK.iter().step_by(2));
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
        for (flag, _) in PATH_OPTIONS {
            assert!(sweep.iter().any(|o| o == flag), "sweep has no {flag}");
        }
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
        assert!(names_agents(&["--tx-agent=http://a".into()]));
        assert!(!names_agents(&["--lab".into()]));
    }
}
