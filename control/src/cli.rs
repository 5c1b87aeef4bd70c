//! The command line. These names are the interface later issues and
//! checks rely on.

use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use linerate_datapath::{frame::Verify, priority::Priority, worker::WaitMode};

/// linerate: kernel-bypass data path engine and measurement lab.
#[derive(Debug, Parser)]
#[command(version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create, remove or show the built-in veth lab.
    Lab {
        /// Lab action.
        #[command(subcommand)]
        action: LabAction,
    },
    /// Report what this host can do: kernel, privileges, XDP, zero-copy.
    Doctor(DoctorArgs),
    /// One-way stream of frames from a sender to a receiver.
    Stream(Box<StreamArgs>),
    /// Request/response transactions: rate and response times.
    Rr(Box<RrArgs>),
    /// Run a document-style sweep: a built-in preset (see --list) or a
    /// sweep file (TOML); results are saved as each point finishes.
    Sweep(Box<SweepArgs>),
    /// Write report.md, report.html, figures (SVG and PNG) and points.csv of a
    /// sweep directory; with --compare, two sweeps side by side.
    Report {
        /// The sweep's output directory.
        dir: std::path::PathBuf,
        /// Another sweep directory: the two side by side, per point the
        /// ratio of medians and whether the difference is beyond the
        /// repeats' spread (written to DIR/compare.md and compare.json).
        #[arg(long, value_name = "OTHER_DIR")]
        compare: Option<std::path::PathBuf>,
        /// With --compare: print the comparison as JSON.
        #[arg(long, requires = "compare")]
        json: bool,
        /// With --compare, a gate for CI: exit 4 when a figure of DIR is
        /// worse than OTHER's beyond the repeats' spread and by more than
        /// PCT percent (worse: a latency, a CPU share, a service demand, a
        /// loss or a drop up; a rate or a count down; parameters never).
        #[arg(long, value_name = "PCT", requires = "compare", value_parser = parse_percent)]
        fail_if_worse: Option<f64>,
    },
    /// Fit the per-message overhead (time per message = overhead + size /
    /// rate) to `stream --message` or `rr` results saved with --json.
    Overhead {
        /// Result files (JSON), at least two message sizes.
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// RFC 2544's four tests (throughput, latency, frame loss, back-to-back)
    /// over the standard frame sizes, into a resumable report directory.
    Rfc2544(Box<Rfc2544Args>),
    /// Serve the control API on this host, so that a controller elsewhere
    /// runs one side of stream, rr and sweep here (see docs/remote.md).
    Agent(AgentServeArgs),
    /// Many pairs at once: bring up lab pairs with their agents on this
    /// host and write their inventory, show or remove them, or print a
    /// Prometheus configuration that scrapes them (docs/fleet.md).
    Fleet {
        /// Fleet action.
        #[command(subcommand)]
        action: FleetAction,
    },
}

/// `linerate agent`.
#[derive(Debug, Args)]
pub struct AgentServeArgs {
    /// Address and port to listen on, e.g. 198.51.100.7:7480 or
    /// [2001:db8::7]:7480 (an address of this host on the management
    /// network; nothing else is listened on). Brackets are taken around an
    /// IPv4 address too, so one template, [$(NODE_IP)]:7480, serves nodes
    /// of either family.
    #[arg(long, value_name = "ADDR:PORT", value_parser = parse_listen)]
    pub listen: std::net::SocketAddr,
    /// File holding the shared token (mode 600); or set LINERATE_TOKEN.
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<std::path::PathBuf>,
    /// An interface runs, interface queries and the doctor may use: IF (in
    /// the agent's own network namespace) or IF@NS (in namespace NS).
    /// Repeatable; replaces the default, the lab's two interfaces
    /// (<lab>-a0@<lab>-a and <lab>-b0@<lab>-b, which match <lab>-a0 named
    /// without a namespace when the agent itself runs in <lab>-a).
    /// Anything else is refused with 403.
    #[arg(long = "allow-iface", value_name = "IF[@NS]", value_parser = linerate_remote::agent::parse_allowed_iface)]
    pub allow_iface: Vec<linerate_remote::agent::AllowedIface>,
    /// The lab whose interfaces are allowed when no --allow-iface is given.
    #[command(flatten)]
    pub lab: LabName,
    /// Let run requests pass --force (replace an XDP program someone else
    /// attached to an allowed interface); refused with 403 without it.
    #[arg(long)]
    pub allow_force: bool,
    /// Connections held at once; more are answered 503 and closed at once
    /// (lowered to fit the open-file limit).
    #[arg(long, value_name = "N", default_value_t = 2048, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections: u32,
    /// A connection that sends no complete request head for this long (a
    /// half-sent request, or an idle keep-alive connection) is closed.
    #[arg(long, hide = true, default_value = "10s", value_parser = parse_positive_duration)]
    pub header_timeout: Duration,
    /// A request (its body and its answer) that takes longer is answered
    /// 408.
    #[arg(long, hide = true, default_value = "60s", value_parser = parse_positive_duration)]
    pub request_timeout: Duration,
}

fn parse_positive_duration(text: &str) -> Result<Duration, String> {
    match parse_duration(text) {
        Ok(duration) if !duration.is_zero() => Ok(duration),
        Ok(_) => Err("use a duration longer than 0, e.g. 10s".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// `--listen`: ADDR:PORT, [IPV6]:PORT, or [IPV4]:PORT.
pub fn parse_listen(text: &str) -> Result<std::net::SocketAddr, String> {
    let bad = || {
        format!(
            "{text:?} is not ADDR:PORT: write 198.51.100.7:7480, or an address in brackets, [2001:db8::7]:7480 (an IPv6 address needs them; an IPv4 address may have them: [$(NODE_IP)]:7480 serves nodes of either family)"
        )
    };
    if let Ok(a) = text.parse() {
        return Ok(a);
    }
    let (host, port) = text
        .strip_prefix('[')
        .and_then(|t| t.split_once("]:"))
        .ok_or_else(bad)?;
    let ip: std::net::IpAddr = host.parse().map_err(|_| bad())?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    Ok(std::net::SocketAddr::new(ip, port))
}

/// A duration as every duration option takes it: a bare number is seconds
/// (`2`, `0.5`, as iperf3's `-t` and netperf's `-l`), or a number with
/// its unit (`500ms`, `2s`, `1m 30s`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).map_err(|_| {
            format!("{text:?} is not a duration: give seconds from 0 up (e.g. 10 or 0.5), or a number with its unit (e.g. 500ms, 2m)")
        });
    }
    humantime::parse_duration(text).map_err(|e| {
        format!("{text:?} is not a duration ({e}): give seconds (e.g. 10 or 0.5), or a number with its unit (e.g. 500ms, 2m)")
    })
}

/// `--interval`: 100 ms to 1 h.
fn parse_interval(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d < Duration::from_millis(100) || d > Duration::from_secs(3600) {
        return Err(format!("{text:?} is out of range: use 100ms to 1h"));
    }
    Ok(d)
}

/// `fleet prometheus --interval`: 100ms (Prometheus keeps milliseconds)
/// to 5m (a series not scraped for 5 min goes stale).
fn parse_scrape_interval(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d < Duration::from_millis(100) || d > Duration::from_secs(300) {
        return Err(format!(
            "{text:?} is out of range: use 100ms to 5m (Prometheus marks a series stale after 5 min unscraped)"
        ));
    }
    Ok(d)
}

/// A fleet pair's name (docs/fleet.md).
fn parse_pair(text: &str) -> Result<String, String> {
    linerate_host::inventory::check_pair_name(text).map(|()| text.to_string())
}

/// A MAC address, aa:bb:cc:dd:ee:ff.
fn parse_mac(text: &str) -> Result<linerate_host::mac::Mac, String> {
    text.parse()
}

/// Where the two sides of a run go when they run on two hosts.
#[derive(Debug, Args, Clone, Default, serde::Serialize)]
pub struct AgentArgs {
    /// Run the sending side (rr: the client) on this agent, e.g.
    /// http://198.51.100.7:7480; --tx-iface names an interface of that host.
    #[arg(long, value_name = "URL", requires = "rx_agent")]
    pub tx_agent: Option<String>,
    /// Run the receiving side (rr: the responder) on this agent;
    /// --rx-iface names an interface of that host.
    #[arg(long, value_name = "URL", requires = "tx_agent")]
    pub rx_agent: Option<String>,
    /// The fleet pair this run is (hidden: fleet runs set it; the agents
    /// label their metrics with it, docs/metrics.md).
    #[arg(long, value_name = "NAME", requires = "tx_agent", hide = true, value_parser = parse_pair)]
    pub pair: Option<String>,
    /// File holding the agents' shared token; or set LINERATE_TOKEN.
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<std::path::PathBuf>,
    /// Run on every pair of this inventory at once (docs/fleet.md): one
    /// start instant, per-pair results and their aggregate.
    #[arg(long, value_name = "INVENTORY", conflicts_with_all = ["tx_agent", "rx_agent", "token_file"])]
    pub fleet: Option<std::path::PathBuf>,
}

/// One side of a two-host run, as an agent starts it (hidden: the agent's
/// own interface to its child process).
#[derive(Debug, Args, Clone, Default, serde::Serialize)]
pub struct RoleArgs {
    /// Run only this side.
    #[arg(long, value_enum, hide = true)]
    pub role: Option<RoleArg>,
    /// MAC address of the other host's interface.
    #[arg(long, hide = true, requires = "role", value_parser = parse_mac)]
    #[serde(serialize_with = "crate::request::opt_text")]
    pub peer_mac: Option<linerate_host::mac::Mac>,
    /// IPv4 address of the other host's interface.
    #[arg(long, hide = true, requires = "role")]
    pub peer_ip: Option<std::net::Ipv4Addr>,
    /// When the run starts, in ns since the Unix epoch (this host's clock).
    #[arg(long, hide = true, requires = "role")]
    pub start_at: Option<u64>,
    /// The receiving side: this host's CLOCK_MONOTONIC minus the sending
    /// host's, ns, taken off every one-way latency.
    #[arg(long, hide = true, requires = "role", allow_hyphen_values = true)]
    pub clock_offset_ns: Option<i64>,
}

/// The side of a run one host plays.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq, serde::Serialize)]
pub enum RoleArg {
    /// The sender (rr: the client).
    #[value(alias = "client")]
    Tx,
    /// The receiver (rr: the responder).
    #[value(alias = "responder")]
    Rx,
}

impl RoleArg {
    /// The name used in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tx => "tx",
            Self::Rx => "rx",
        }
    }
}

/// Lab actions.
#[derive(Debug, Subcommand)]
pub enum LabAction {
    /// Create namespaces <lab>-a and <lab>-b joined by veth <lab>-a0 <-> <lab>-b0.
    Up {
        /// MTU of the veth pair, 576 to 9000.
        #[arg(long, default_value_t = 1500, allow_negative_numbers = true, value_parser = parse_lab_mtu)]
        mtu: u32,
        /// Queues of each veth, 1 to 64.
        #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = parse_lab_queues)]
        queues: u32,
        /// Also join each namespace to this one by a management veth
        /// (198.19.255.1 <-> .2 for <lab>-a, .5 <-> .6 for <lab>-b), so
        /// that agents in the namespaces can be reached from here.
        #[arg(long)]
        mgmt: bool,
        #[command(flatten)]
        lab: LabName,
    },
    /// Remove the lab (works after a crash too).
    Down {
        #[command(flatten)]
        lab: LabName,
    },
    /// Show the lab.
    Status {
        #[command(flatten)]
        lab: LabName,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Fleet actions.
#[derive(Debug, Subcommand)]
pub enum FleetAction {
    /// Print a Prometheus configuration (YAML) that scrapes every agent of
    /// the inventory with its token, labelled with its pair and side.
    Prometheus(FleetPrometheusArgs),
    /// Bring up N lab pairs, each with management links and an agent in
    /// each namespace, and write the inventory.
    Up {
        /// Pairs, 1 to 64 on one host.
        #[arg(long, allow_negative_numbers = true, value_parser = parse_fleet_pairs)]
        pairs: u32,
        /// MTU of every pair's link, 576 to 9000.
        #[arg(long, default_value_t = 1500, allow_negative_numbers = true, value_parser = parse_lab_mtu)]
        mtu: u32,
        /// Queues of every pair's veths, 1 to 64.
        #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = parse_lab_queues)]
        queues: u32,
        /// Where the inventory is written.
        #[arg(long, value_name = "PATH", default_value = FLEET_INVENTORY)]
        inventory: std::path::PathBuf,
        /// Name prefix of the pairs' labs (PREFIX0, PREFIX1, ...; 1 to 6
        /// letters, digits or '-').
        #[arg(long, value_name = "PREFIX", default_value = "fl", value_parser = parse_fleet_prefix)]
        name: String,
    },
    /// Show whether each agent of the inventory answers, and its version.
    Status {
        /// The inventory.
        #[arg(long, value_name = "PATH", default_value = FLEET_INVENTORY)]
        inventory: std::path::PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Stop the agents `fleet up` started, remove their labs, token files
    /// and the inventory.
    Down {
        /// The inventory.
        #[arg(long, value_name = "PATH", default_value = FLEET_INVENTORY)]
        inventory: std::path::PathBuf,
    },
}

/// `linerate fleet prometheus`.
#[derive(Debug, Args)]
pub struct FleetPrometheusArgs {
    /// The fleet's inventory (docs/fleet.md).
    #[arg(long, value_name = "PATH")]
    pub inventory: std::path::PathBuf,
    /// How often Prometheus scrapes each agent (100ms to 5m).
    #[arg(long, default_value = "1s", value_parser = parse_scrape_interval)]
    pub interval: Duration,
    /// Where the Prometheus server reads the agents' token files (each
    /// under its own file name), when not at the inventory's paths.
    #[arg(long, value_name = "DIR")]
    pub credentials_dir: Option<std::path::PathBuf>,
}

/// Where `fleet up` writes the inventory unless told.
pub const FLEET_INVENTORY: &str = "/run/linerate/fleet.toml";

/// Pairs of a fleet on one host: 1 to 64.
fn parse_fleet_pairs(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if (1..=64).contains(&n) => Ok(n),
        Ok(_) | Err(_) if s.parse::<i64>().is_ok() => Err(format!(
            "{s} is out of range: use 1 to 64 pairs on one host (each pair is two namespaces, four veths and two agent processes here, and the management /30s end at 198.19.2.255); list real hosts in an inventory by hand (docs/fleet.md)"
        )),
        _ => Err(format!("{s:?} is not a whole number: give 1 to 64")),
    }
}

/// A fleet's lab prefix: a lab name short enough for two more digits.
fn parse_fleet_prefix(s: &str) -> Result<String, String> {
    if s.len() > 6 {
        return Err(format!(
            "{s:?} is too long: use 1 to 6 letters, digits or '-' (the pairs' labs are PREFIX0 to PREFIX63, 8 characters at most)"
        ));
    }
    parse_lab(s)
}

/// Which lab.
#[derive(Debug, Args, Clone, serde::Serialize)]
pub struct LabName {
    /// Name prefix of the lab's namespaces and interfaces.
    #[arg(long = "lab", default_value = "lr", value_name = "NAME", value_parser = parse_lab)]
    pub name: String,
}

/// `linerate doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Interface to probe (default: the lab's receiving side, created if needed).
    #[arg(long, value_parser = parse_iface)]
    pub iface: Option<String>,
    /// Network namespace of --iface.
    #[arg(long, value_parser = parse_netns)]
    pub netns: Option<String>,
    #[command(flatten)]
    pub lab: LabName,
    /// The noise floor between the cores a run with this --tx-cores
    /// would use (its first) [default: a default run's sender core].
    #[arg(long, value_name = "LIST", allow_negative_numbers = true, value_parser = parse_cores)]
    pub tx_cores: Option<String>,
    /// ... and this --rx-cores (its first) [default: a default run's
    /// receiver core].
    #[arg(long, value_name = "LIST", allow_negative_numbers = true, value_parser = parse_cores)]
    pub rx_cores: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Points per sweep unless --max-points says otherwise.
pub const MAX_POINTS: u64 = 10_000;

/// `linerate sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// A preset name (fc-modes, service-demand, rpc, bs2000, wait-modes) or a
    /// sweep file.
    pub sweep: Option<String>,
    /// List the presets.
    #[arg(long)]
    pub list: bool,
    /// Short runs (0.5 s warm-up, 1 s), the median of 3 repeats: a quick
    /// run of the whole sweep whose points repeat.
    #[arg(long)]
    pub quick: bool,
    /// Repeats per point, 1 to 100 (in place of the sweep's and --quick's;
    /// kept for --resume).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeats: Option<u32>,
    /// Output directory [default: sweeps/NAME-DATE].
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Resume an interrupted sweep in DIR, skipping finished points; path
    /// options given with it (--lab, --tx-iface...) replace the saved ones.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["sweep", "out", "quick", "repeats", "seed"])]
    pub resume: Option<std::path::PathBuf>,
    /// The seed of the order the runs go in: repeats in rounds, every point
    /// once a round, each round shuffled (recorded in the sweep's
    /// options.json; kept for --resume) [default: from the clock].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Repeat each point, in rounds, until the LEVEL % confidence interval
    /// of the mean of its headline figure (frames/s received, rr:
    /// transactions/s) is at most WIDTH % of the mean (the whole width, as
    /// netperf's -I) or --iterations' MAX repeats ran (kept for --resume)
    /// [default with --iterations: 95,5].
    #[arg(long, value_name = "LEVEL,WIDTH", conflicts_with_all = ["repeats", "resume"])]
    pub confidence: Option<String>,
    /// With --confidence: at least MIN, at most MAX repeats of each point
    /// [default with --confidence: 3,10].
    #[arg(long, value_name = "MIN,MAX", conflicts_with_all = ["repeats", "resume"])]
    pub iterations: Option<String>,
    /// Sending interface for every point (default: the lab).
    #[arg(long, value_parser = parse_iface)]
    pub tx_iface: Option<String>,
    /// Receiving interface for every point.
    #[arg(long, value_parser = parse_iface)]
    pub rx_iface: Option<String>,
    /// Namespace of --tx-iface.
    #[arg(long, value_parser = parse_netns)]
    pub tx_netns: Option<String>,
    /// Namespace of --rx-iface.
    #[arg(long, value_parser = parse_netns)]
    pub rx_netns: Option<String>,
    /// The lab to run on.
    #[arg(long, value_name = "NAME", value_parser = parse_lab)]
    pub lab: Option<String>,
    #[command(flatten)]
    pub agents: AgentArgs,
    /// Refuse a sweep of more points than this, counted before anything is
    /// expanded (a guard against a sweep file that would run for weeks).
    #[arg(long, value_name = "N", default_value_t = MAX_POINTS, allow_negative_numbers = true, value_parser = parse_max_points)]
    pub max_points: u64,
    /// A gate for CI, held against every point's median once the sweep
    /// ends: 'METRIC OP VALUE' as stream and rr take it. Repeatable; exit
    /// 4 when a point does not meet one.
    #[arg(long, value_name = "'METRIC OP VALUE'")]
    pub expect: Vec<String>,
}

/// XDP attach mode choice.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq, serde::Serialize)]
pub enum XdpModeArg {
    /// Native first, generic as fallback.
    Auto,
    /// Native (driver) only.
    Native,
    /// Generic (SKB) only.
    Generic,
}

/// Data path choice: the names of the engines (`engine::backend` maps
/// each to its engine, whose name in the results is the same).
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq, serde::Serialize)]
pub enum BackendArg {
    /// AF_XDP sockets fed by the XDP program.
    Xdp,
    /// Kernel UDP sockets.
    Udp,
    /// Kernel TCP connections.
    Tcp,
    /// A test and demo engine: the AF_XDP engine's sender and receiver
    /// loops joined in memory, no interface and no root (stream and rr).
    Loopback,
}

/// The rate search (`--search`).
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq, Default, serde::Serialize)]
pub enum SearchArg {
    /// MLRsearch: NDR and PDR together, short trials then full-length ones.
    #[default]
    Mlr,
    /// MLRsearch as a binary search: one goal per loss tolerance, one
    /// full-length trial per load.
    Binary,
}

/// Who sends a stream's frames (`--tx-engine`).
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq, Default, serde::Serialize)]
pub enum TxEngineArg {
    /// The engine --backend names (AF_XDP sockets with --backend xdp).
    #[value(alias = "af-xdp")]
    Backend,
    /// The in-kernel frame generator (BPF_PROG_RUN in live-frames mode:
    /// no skb, no copy), into AF_XDP receivers; frames up to 3412 bytes.
    Generator,
    /// The generator where it pays (--backend xdp, a sending driver with
    /// no AF_XDP zero-copy such as veth, frames that fit, kernel 5.18 or
    /// later, no option only AF_XDP takes), else the --backend engine.
    #[default]
    Auto,
}

/// Who receives a stream's frames (`--rx-engine`).
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq, Default, serde::Serialize)]
pub enum RxEngineArg {
    /// The engine --backend names (AF_XDP sockets with --backend xdp).
    #[default]
    #[value(name = "af-xdp", alias = "backend")]
    AfXdp,
    /// The XDP-only receiver: linerate's XDP program counts frames, bytes
    /// and sequence gaps per flow and drops them, with no copy to user
    /// space (--backend xdp; frames, not --message).
    Xdp,
}

/// NAPI mode on the command line.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq, serde::Serialize)]
pub enum NapiArg {
    /// Threaded for stream, softirq for rr, in the lab; otherwise keep.
    Auto,
    /// NAPI in a kernel thread per queue, pinned beside the receivers.
    Threaded,
    /// NAPI in a kernel thread per queue, pinned to a core no worker of
    /// the run uses (refused when there is none).
    ThreadedOwn,
    /// NAPI in softirq context (the kernel's default).
    #[value(alias = "default")]
    Softirq,
    /// Leave as configured.
    Keep,
}

/// Wait mode on the command line.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq, serde::Serialize)]
pub enum WaitArg {
    /// Spin on the rings.
    Busy,
    /// Block in poll().
    Wait,
    /// Kernel busy polling: SO_BUSY_POLL, blocking receives (udp; AF_XDP
    /// sockets with a NAPI).
    BusyPoll,
    /// Preferred busy polling: SO_PREFER_BUSY_POLL and a budget, the NAPI's
    /// defer-hard-irqs and gro-flush-timeout set for the run.
    PreferBusyPoll,
    /// IRQ suspension: epoll busy polling (EPIOCSPARAMS) with the NAPI's
    /// irq-suspend-timeout (Linux 6.13+).
    IrqSuspend,
}

impl From<WaitArg> for WaitMode {
    fn from(wait: WaitArg) -> Self {
        match wait {
            WaitArg::Busy => WaitMode::Busy,
            WaitArg::Wait => WaitMode::Wait,
            WaitArg::BusyPoll => WaitMode::BusyPoll,
            WaitArg::PreferBusyPoll => WaitMode::PreferBusyPoll,
            WaitArg::IrqSuspend => WaitMode::IrqSuspend,
        }
    }
}

/// Options every run shares: where, on which cores, how long, how to wait.
#[derive(Debug, Args, Clone, serde::Serialize)]
pub struct RunArgs {
    /// MTU to run at, 576 to 65535; sets the lab's MTU (576 to 9000)
    /// [default: the interfaces' MTU].
    #[arg(long, allow_negative_numbers = true, value_parser = parse_run_mtu)]
    pub mtu: Option<u32>,
    /// Measured time, after the warm-up: 100ms to 24h (with --count, the
    /// longest the run lasts).
    #[arg(long, default_value = "5s", allow_negative_numbers = true, value_parser = parse_measured)]
    pub duration: Duration,
    /// Warm-up, excluded from the figures: 0 to 1h.
    #[arg(long, default_value = "1s", allow_negative_numbers = true, value_parser = parse_warmup)]
    pub warmup: Duration,
    /// Queues (one worker per queue on each side), 1 to 64.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = parse_queues)]
    pub queues: u32,
    /// How senders (rr: clients) wait for ring space [default: busy on a
    /// core of their own, wait when they share one with receive work].
    #[arg(long, value_enum)]
    pub tx_wait: Option<WaitArg>,
    /// How receivers (rr: responders) wait for frames [default: stream:
    /// wait; rr: busy on cores of their own, so that with the clients'
    /// default both ends spin on a core each (the fastest transactions:
    /// two cores at 100 %), wait when they share one; `--tx-wait wait
    /// --rx-wait wait` sleeps on both ends].
    #[arg(long, value_enum)]
    pub rx_wait: Option<WaitArg>,
    /// Cores for the senders (rr: clients), one per queue, e.g. 0 or 0,2 or 0-3.
    #[arg(long, value_name = "LIST", allow_negative_numbers = true, value_parser = parse_cores)]
    pub tx_cores: Option<String>,
    /// Cores for the receivers (rr: responders), one per queue.
    #[arg(long, value_name = "LIST", allow_negative_numbers = true, value_parser = parse_cores)]
    pub rx_cores: Option<String>,
    /// Descriptors per batch, 1 to --ring.
    #[arg(long, default_value_t = DEFAULT_BATCH, allow_negative_numbers = true, value_parser = parse_batch)]
    pub batch: usize,
    /// TX ring size (descriptors); the sender's UMEM holds as many chunks,
    /// so a small ring keeps the frames in cache.
    #[arg(long, default_value_t = DEFAULT_RING, allow_negative_numbers = true, value_parser = parse_ring)]
    pub ring: u32,
    /// RX ring size (descriptors); the receiver's UMEM holds twice as many
    /// chunks. Deep, so that frames wait while the receiver is descheduled.
    #[arg(long, default_value_t = 8192, allow_negative_numbers = true, value_parser = parse_ring)]
    pub rx_ring: u32,
    /// AF_XDP UMEM chunk size in bytes, 2048 or 4096 [default: 2048 when a
    /// frame fits in one (up to 1792 bytes), else 4096]. Small chunks keep
    /// the kernel's copies into the UMEM in cache; multi-buffer frames need
    /// 4096.
    #[arg(long, value_name = "BYTES", allow_negative_numbers = true, value_parser = parse_umem_chunk)]
    pub umem_chunk: Option<u32>,
    /// UDP port of the test traffic at the receiver (rr: the responder);
    /// senders use the ports just above it: 1 to 64511.
    #[arg(long, default_value_t = 7471, allow_negative_numbers = true, value_parser = parse_port)]
    pub port: u16,
    /// Sending interface (default: the lab's <lab>-a0; <lab>-b0 with --reverse).
    #[arg(long, value_parser = parse_iface)]
    pub tx_iface: Option<String>,
    /// Receiving interface (default: the lab's <lab>-b0; <lab>-a0 with --reverse).
    #[arg(long, value_parser = parse_iface)]
    pub rx_iface: Option<String>,
    /// Network namespace of --tx-iface.
    #[arg(long, value_parser = parse_netns)]
    pub tx_netns: Option<String>,
    /// Network namespace of --rx-iface.
    #[arg(long, value_parser = parse_netns)]
    pub rx_netns: Option<String>,
    /// NAPI of the interfaces: `threaded` runs receive work in a kernel
    /// thread pinned to the receiver's core (best for streams), `softirq`
    /// runs it right after the send, on the sender's core (best for
    /// response times). `auto`: threaded for stream, softirq for rr, in the
    /// lab only; `keep` leaves the interfaces as they are.
    #[arg(long, value_enum, default_value_t = NapiArg::Auto)]
    pub napi: NapiArg,
    /// Scheduling of the NAPI threads linerate pins: `fifo:PRIO` or
    /// `rr:PRIO` (1-99; real-time, so never time-sliced behind a spinning
    /// receiver), `other[:NICE]`, or `slice:US` (a slice of their own,
    /// 100-100000 us, Linux 6.12+: they preempt sooner when they wake, with
    /// no real-time priority) [default: as they are]. Needs threaded NAPI;
    /// put back after the run.
    #[arg(long, value_name = "POLICY[:PRIO]", value_parser = parse_priority)]
    #[serde(serialize_with = "crate::request::opt_text")]
    pub napi_priority: Option<Priority>,
    /// Scheduling of the generator's runner threads (`--tx-engine
    /// generator`): `fifo:PRIO`, `rr:PRIO`, `other[:NICE]` or `slice:US`
    /// [default: nice 19 beside AF_XDP receivers that wait on the same
    /// core, else as the sender's].
    #[arg(long, value_name = "POLICY[:PRIO]", value_parser = parse_priority)]
    #[serde(serialize_with = "crate::request::opt_text")]
    pub gen_priority: Option<Priority>,
    /// Scheduling of the AF_XDP receivers (stream): `fifo:PRIO`, `rr:PRIO`,
    /// `other[:NICE]` or `slice:US` (a slice of its own, Linux 6.12+: a
    /// sleeping receiver that wakes preempts sooner) [default: as the
    /// process's]. A real-time receiver
    /// that spins (`--rx-wait busy`) holds its core but for the kernel's
    /// real-time throttling (5 %): give it a core of its own.
    #[arg(long, value_name = "POLICY[:PRIO]", value_parser = parse_priority)]
    #[serde(serialize_with = "crate::request::opt_text")]
    pub rx_priority: Option<Priority>,
    /// Data path: `xdp` (AF_XDP, kernel bypass), or the kernel stack
    /// measured by the same harness: `udp` (sendmmsg/recvmmsg) or `tcp`.
    #[arg(long, value_enum, default_value_t = BackendArg::Xdp)]
    pub backend: BackendArg,
    /// udp backend: UDP segmentation offload (UDP_SEGMENT) on sends.
    #[arg(long)]
    pub gso: bool,
    /// udp backend: UDP receive offload (UDP_GRO).
    #[arg(long)]
    pub gro: bool,
    /// Drop this percentage of test frames at each receiving interface (in
    /// the XDP program: AF_XDP sends bypass qdiscs, so netem cannot), to
    /// see losses counted.
    #[arg(long, value_name = "PERCENT", default_value_t = 0.0, allow_negative_numbers = true, value_parser = parse_percent)]
    pub inject_loss: f64,
    /// Test traffic over IPv6 (RFC 5180): Ethernet/IPv6/UDP frames between
    /// the interfaces' global IPv6 addresses (the lab's are 2001:2::1 and
    /// 2001:2::2, from 2001:2::/48), with valid UDP checksums; the
    /// smallest frame grows to 84 bytes (the IPv6 header is 20 bytes
    /// longer). AF_XDP senders and receivers.
    #[arg(long)]
    pub ipv6: bool,
    /// Swap the roles of the two sides (as -r in 002): the lab's B side sends.
    #[arg(short = 'r', long)]
    pub reverse: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub lab: LabName,
    /// Require zero-copy; fail when the driver refuses it.
    #[arg(long)]
    pub zero_copy: bool,
    /// XDP attach mode.
    #[arg(long, value_enum, default_value_t = XdpModeArg::Auto)]
    pub xdp_mode: XdpModeArg,
    /// Replace an XDP program someone else attached to a receiving interface.
    #[arg(long)]
    pub force: bool,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Print the summary line alone (the first line of the table: rates,
    /// loss or response times, CPU and service demand); --json wins.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// A gate for CI: 'METRIC OP VALUE' (OP one of >= <= > < ==; metric
    /// names as in docs/metrics.md; VALUE a number, k/M/G allowed), e.g.
    /// 'receiver.frames_per_s >= 1M'. Repeatable. Each is printed met or
    /// unmet with the measured value (stderr); exit 4 when any is unmet.
    #[arg(long, value_name = "'METRIC OP VALUE'")]
    pub expect: Vec<String>,
    /// While the run goes, one JSON line per --interval on stdout
    /// ({"event":"interval",...}: each end's counters over it), then the
    /// result as {"event":"end","data":...} (iperf3's --json-stream).
    #[arg(long, conflicts_with_all = ["json", "quiet"])]
    pub json_stream: bool,
    /// With --json-stream: the interval, 100ms to 1h.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_interval)]
    pub interval: Duration,
    /// Skip the noise floor that a run reporting latency measures just
    /// before its window (0.25 s: the one-way hand-off between the
    /// sender's and the receiver's cores, spinning and woken, and the gaps
    /// a spinning loop loses there; its `noise.*` figures).
    #[arg(long)]
    pub no_floor: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub agents: AgentArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub role: RoleArgs,
}

/// `--confidence`, `--iterations` and `--disturbed-above`: runs that
/// repeat (`stream` and `rr`).
#[derive(Debug, Args, Clone, serde::Serialize)]
pub struct RepeatArgs {
    /// Repeat the run until the LEVEL % (90, 95 or 99) confidence interval
    /// of the mean of its headline figure (frames/s received, rr:
    /// transactions/s) is at most WIDTH % of the mean, the whole width as
    /// netperf's -I (95,5: within +-2.5 %), or --iterations' MAX runs ran;
    /// the result is the median run, with every run's figure and the
    /// interval reached under `confidence` [default with --iterations: 95,5].
    #[arg(long, value_name = "LEVEL,WIDTH", conflicts_with_all = ["fleet", "tx_agent", "json_stream"])]
    pub confidence: Option<String>,
    /// With --confidence: at least MIN, at most MAX runs (2 to 100)
    /// [default with --confidence: 3,10].
    #[arg(long, value_name = "MIN,MAX", conflicts_with_all = ["fleet", "tx_agent", "json_stream"])]
    pub iterations: Option<String>,
    /// Mark a run `disturbed` when other tasks took more than this percent
    /// of its cores' time (receiver.cpu.interference_pct or the sender's);
    /// with --iterations a disturbed run is repeated and not counted.
    #[arg(long, value_name = "PERCENT", default_value_t = linerate_results::confidence::DISTURBED_ABOVE_PCT, allow_negative_numbers = true, value_parser = parse_percent)]
    pub disturbed_above: f64,
}

/// `linerate stream`.
#[derive(Debug, Args, Clone, serde::Serialize)]
pub struct StreamArgs {
    /// Frame size as RFC 2544 counts it, FCS included: 64 up to MTU+18
    /// [default: MTU+18, the largest frame]; or a traffic mix: `imix`
    /// (simple IMIX: 64:7,594:4,1518:1) or a list of SIZE:WEIGHT, sent
    /// interleaved in that proportion (AF_XDP senders).
    #[arg(long, value_name = "BYTES|imix|SIZE:WEIGHT,...", allow_negative_numbers = true, value_parser = parse_size)]
    #[serde(serialize_with = "crate::request::opt_text")]
    pub size: Option<linerate_datapath::mix::SizeMix>,
    /// Send messages of this many bytes (0 to 256 MiB), each cut into as
    /// many MTU-sized frames as it needs; the receiver accounts whole
    /// messages. With it, --count and --rate count messages.
    #[arg(long, value_name = "BYTES", conflicts_with = "size", allow_negative_numbers = true, value_parser = parse_message)]
    pub message: Option<usize>,
    /// Send exactly this many frames per queue, then stop (the run ends
    /// when they are sent, or at warm-up + duration); at most 2^48.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_count)]
    pub count: Option<u64>,
    /// Frames per second per queue, 1 to 1e9 (default: as fast as possible).
    #[arg(long, value_name = "PPS", allow_negative_numbers = true, value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// Run only the receivers, for --duration, and count every frame that
    /// reaches them: another tool sends (a traffic generator, DPDK
    /// testpmd). Give --port as the UDP destination port it sends to.
    #[arg(long, conflicts_with_all = ["count", "rate", "message"])]
    pub rx_only: bool,
    /// Run only the senders, for a receiver that is not linerate (a device
    /// under test, tcpdump, another tool's receiver): frames go to
    /// --rx-iface's MAC and IPv4 address (the lab's B side by default), on
    /// UDP port --port. The result has what was sent, no receiver figures.
    #[arg(long, conflicts_with_all = ["rx_only", "search_rate"])]
    pub tx_only: bool,
    /// Write the first frames each sender sent and each receiver received
    /// to FILE (pcapng, nanosecond timestamps; direction in each packet's
    /// flags, one interface per side): tcpdump sees neither AF_XDP sends
    /// nor XDP-redirected receives. `tshark -r FILE` decodes it.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<std::path::PathBuf>,
    /// Frames --pcap keeps of each sender and each receiver, 1 to 100000
    /// (copied into memory allocated before the run, written after it).
    #[arg(long, value_name = "N", default_value_t = 1000, requires = "pcap", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub pcap_count: u32,
    /// Find the highest rate whose loss stays at or below PERCENT (RFC 2544
    /// throughput with a loss tolerance, TRex's NDR): trials of --duration
    /// each, the first unpaced, then MLRsearch (--search) to 1 %.
    #[arg(long, value_name = "PERCENT", conflicts_with_all = ["count", "rate", "rx_only"], allow_negative_numbers = true, value_parser = parse_tolerance)]
    pub search_rate: Option<f64>,
    /// The search of --search-rate (and of rfc2544's throughput test):
    /// `mlr` (MLRsearch, draft-ietf-bmwg-mlrsearch as FD.io CSIT runs it:
    /// the NDR, no loss, and the PDR, loss <= PERCENT, in one search; short
    /// trials bracket the rates, full-length trials of --duration confirm
    /// them) or `binary` (the same search for PERCENT alone, one
    /// full-length trial per load, a load met when that trial met PERCENT:
    /// goal exceed ratio 0).
    #[arg(long, value_enum, default_value_t = SearchArg::Mlr)]
    pub search: SearchArg,
    /// Who sends: `backend` (the --backend engine's senders; AF_XDP by
    /// default) or `generator` (linerate's XDP program run in the kernel in
    /// live-frames mode: no skb and no copy, past the AF_XDP copy-mode
    /// sender's limit on drivers without zero-copy; --backend xdp
    /// receivers; frames up to 3412 bytes), or `auto` (the generator where
    /// the sending driver has no zero-copy and the frames fit, else the
    /// backend's; the placement line says which and why). `af-xdp` is
    /// another name for `backend`.
    #[arg(long, value_enum, default_value_t = TxEngineArg::Auto, conflicts_with = "rx_only")]
    pub tx_engine: TxEngineArg,
    /// Who receives: `af-xdp` (the --backend engine's receivers: AF_XDP
    /// sockets by default) or `xdp` (the XDP-only receiver: linerate's XDP
    /// program counts frames, bytes and sequence gaps per flow and drops
    /// them, with no copy to user space; the in-kernel limit of receiving).
    #[arg(long, value_enum, default_value_t = RxEngineArg::AfXdp)]
    pub rx_engine: RxEngineArg,
    /// How much of each received frame the receivers verify: `off`
    /// (headers parsed only; bad_checksum not measured), `header` (the
    /// IPv4 header's checksum: what linerate's own IPv4 frames, which
    /// carry no UDP checksum, can get wrong), `full` (the IPv4 header's and
    /// the UDP checksum, over all of a frame's buffers), or `1/N` (N from 2 to
    /// 1,000,000: one frame in N in full, the others' header only)
    /// [default: header over IPv4, full over IPv6, whose UDP checksum is its
    /// only one]. Chosen before the loop (one loop per level); the result
    /// says which.
    #[arg(long, value_name = "off|header|full|1/N", value_parser = parse_verify)]
    #[serde(serialize_with = "crate::request::opt_text")]
    pub verify: Option<Verify>,
    #[command(flatten)]
    #[serde(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub repeat: RepeatArgs,
}

/// `linerate rfc2544`.
#[derive(Debug, Args, Clone, serde::Serialize)]
pub struct Rfc2544Args {
    /// Short trials, a coarser throughput search and fewer bursts: under
    /// two minutes on the lab.
    #[arg(long)]
    pub quick: bool,
    /// Output directory [default: sweeps/rfc2544-DATE].
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Resume an interrupted run in DIR, skipping finished tests.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "quick"])]
    pub resume: Option<std::path::PathBuf>,
    /// Loss the throughput test tolerates, percent (RFC 2544: 0).
    #[arg(long, value_name = "PERCENT", default_value_t = 0.0, allow_negative_numbers = true, value_parser = parse_tolerance)]
    pub loss: f64,
    /// Loss the Partial Drop Rate (PDR) tolerates, percent: the throughput
    /// test finds the NDR (--loss) and the PDR together.
    #[arg(long, value_name = "PERCENT", default_value_t = 0.5, allow_negative_numbers = true, value_parser = parse_tolerance)]
    pub pdr_loss: f64,
    /// Length of every trial (tests).
    #[arg(long, hide = true, value_parser = parse_measured)]
    pub trial: Option<Duration>,
    /// The stream options of every trial (--size: that frame size only;
    /// --duration: each trial's length).
    #[command(flatten)]
    #[serde(flatten)]
    pub stream: StreamArgs,
}

/// The largest N of `--verify 1/N`.
const MAX_VERIFY_SAMPLE: u32 = 1_000_000;

/// `--verify`: `off`, `header`, `full` or `1/N`.
fn parse_verify(text: &str) -> Result<Verify, String> {
    match text {
        "off" => return Ok(Verify::Off),
        "header" => return Ok(Verify::Header),
        "full" => return Ok(Verify::Full),
        _ => {}
    }
    let wrong = || {
        format!(
            "{text:?} is not off, header, full or 1/N with N from 2 to {MAX_VERIFY_SAMPLE} (one frame in N verified in full)"
        )
    };
    let n: u32 = text
        .strip_prefix("1/")
        .and_then(|n| n.parse().ok())
        .ok_or_else(wrong)?;
    if !(2..=MAX_VERIFY_SAMPLE).contains(&n) {
        return Err(wrong());
    }
    Ok(Verify::Sampled(n))
}

/// Who answers requests in `linerate rr`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq, serde::Serialize)]
pub enum ResponderArg {
    /// An AF_XDP worker in user space (the real case).
    AfXdp,
    /// The XDP program itself (XDP_TX): the in-kernel lower bound.
    Xdp,
}

/// `linerate rr`.
#[derive(Debug, Args, Clone, serde::Serialize)]
pub struct RrArgs {
    /// Request message size in bytes (0: header only, the null RPC).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = parse_message)]
    pub request: usize,
    /// Response message size in bytes.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = parse_message)]
    pub response: usize,
    /// Transactions in flight per flow (1: strictly synchronous).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = parse_concurrency)]
    pub concurrency: u32,
    /// Parallel flows, 1 to 4096.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = parse_flows)]
    pub flows: u32,
    /// A transaction unanswered for this long is counted as a timeout and retried.
    #[arg(long, default_value = "10ms", allow_negative_numbers = true, value_parser = parse_positive_duration)]
    pub timeout: Duration,
    /// Complete exactly this many transactions per flow, then stop; at
    /// most 2^48.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_count)]
    pub count: Option<u64>,
    /// Who answers.
    #[arg(long, value_enum, default_value_t = ResponderArg::AfXdp)]
    pub responder: ResponderArg,
    /// Who sends the requests: `auto` or `backend`, both the --backend
    /// engine's clients (AF_XDP sockets by default): the generator cannot
    /// wait for a response, so auto keeps them; the placement line says so.
    #[arg(long, value_enum, default_value_t = TxEngineArg::Auto)]
    pub tx_engine: TxEngineArg,
    #[command(flatten)]
    #[serde(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub repeat: RepeatArgs,
}

/// `--batch`'s default.
pub const DEFAULT_BATCH: usize = 64;
/// `--ring`'s default.
pub const DEFAULT_RING: u32 = 512;

/// The shortest `--duration` a run measures: the window's CPU figures
/// come from /proc/stat in 10 ms ticks (USER_HZ 100), its edges are read
/// worker by worker and the measuring thread sleeps in 20 ms steps, so a
/// shorter window gives rates and CPU use that are mostly rounding.
pub const MIN_DURATION: Duration = Duration::from_millis(100);
/// The longest `--duration`.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);
/// The longest `--warmup`.
pub const MAX_WARMUP: Duration = Duration::from_secs(3600);
/// The largest `--mtu` of a run (the IP length field's limit; the lab
/// takes 576 to 9000, checked when the run uses the lab).
pub const MAX_RUN_MTU: u32 = 65535;

/// A measured duration (`--duration`, rfc2544's trials): from
/// [`MIN_DURATION`] to [`MAX_DURATION`].
pub fn parse_measured(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d < MIN_DURATION {
        return Err(format!(
            "{:?} is too short to measure: give at least {} (e.g. 5s); the window's CPU figures count 10 ms ticks",
            text.trim(),
            humantime::format_duration(MIN_DURATION)
        ));
    }
    if d > MAX_DURATION {
        return Err(format!("{:?} is too long: use at most 24h", text.trim()));
    }
    Ok(d)
}

/// A `--warmup`: 0 (none) up to [`MAX_WARMUP`].
pub fn parse_warmup(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d > MAX_WARMUP {
        return Err(format!("{:?} is too long: use 0 to 1h", text.trim()));
    }
    Ok(d)
}

/// A whole number in `range`; the message names the range, and says
/// whether the number was negative or too large for any option.
pub fn parse_whole(text: &str, range: std::ops::RangeInclusive<u64>) -> Result<u64, String> {
    let t = text.trim();
    let (lo, hi) = (range.start(), range.end());
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match t.parse::<u64>() {
        Ok(n) if range.contains(&n) => Ok(n),
        Ok(n) if n > *hi => Err(format!("{n} is too large: use {lo} to {hi}")),
        Ok(n) => Err(format!("{n} is out of range: use {lo} to {hi}")),
        Err(_) if t.strip_prefix('-').is_some_and(digits) => {
            Err(format!("{t} is negative: use {lo} to {hi}"))
        }
        Err(_) if digits(t) => Err(format!("{t} is too large: use {lo} to {hi}")),
        Err(_) => Err(format!("{t:?} is not a whole number: use {lo} to {hi}")),
    }
}

/// A value parser for a whole number in `range`, as `T`.
fn whole<T: TryFrom<u64>>(
    range: std::ops::RangeInclusive<u64>,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static {
    move |text| {
        parse_whole(text, range.clone())
            .map(|n| T::try_from(n).unwrap_or_else(|_| unreachable!("the range fits the type")))
    }
}

/// `sweep --max-points`: at least 1.
fn parse_max_points(text: &str) -> Result<u64, String> {
    whole(1..=u64::MAX)(text)
}

/// `--queues`: one worker per queue, as many as the XSKMAP holds.
fn parse_queues(text: &str) -> Result<u32, String> {
    whole(1..=u64::from(linerate_ebpf::MAX_QUEUES))(text)
}

/// `--ring`, `--rx-ring`: a power of two from 64 to [`linerate_host::limits::MAX_RING`].
fn parse_ring(text: &str) -> Result<u32, String> {
    let max = linerate_host::limits::MAX_RING;
    let n: u32 = whole(64..=u64::from(max))(text).map_err(|e| format!("{e}, a power of two"))?;
    if !n.is_power_of_two() {
        return Err(format!("{n} is not a power of two: use 64, 128, ... {max}"));
    }
    Ok(n)
}

/// `--batch`: 1 up to the largest ring (and at most --ring: the plan checks).
fn parse_batch(text: &str) -> Result<usize, String> {
    whole(1..=u64::from(linerate_host::limits::MAX_RING))(text)
}

/// `--port`: the receiver's port; the senders' are the 1024 above it.
fn parse_port(text: &str) -> Result<u16, String> {
    whole(1..=64511)(text).map_err(|e| format!("{e} (the 1024 ports above it are the senders')"))
}

/// `--mtu` of a run.
fn parse_run_mtu(text: &str) -> Result<u32, String> {
    whole(u64::from(linerate_host::limits::MIN_MTU)..=u64::from(MAX_RUN_MTU))(text)
}

/// `lab up --mtu`.
fn parse_lab_mtu(text: &str) -> Result<u32, String> {
    whole(u64::from(linerate_host::limits::MIN_MTU)..=u64::from(linerate_host::limits::MAX_MTU))(
        text,
    )
    .map_err(|e| format!("{e}: the MTUs the lab sets"))
}

/// `lab up --queues`.
fn parse_lab_queues(text: &str) -> Result<u32, String> {
    parse_queues(text)
}

/// A message size (`--message`, `--request`, `--response`): 0 to 256 MiB.
fn parse_message(text: &str) -> Result<usize, String> {
    whole(0..=linerate_datapath::message::MAX_MESSAGE as u64)(text)
}

/// `rr --flows`: as many as a receiver tracks.
fn parse_flows(text: &str) -> Result<u32, String> {
    whole(1..=linerate_datapath::worker::MAX_FLOWS as u64)(text)
}

/// `rr --concurrency`: what is in flight must fit an RX ring (the plan
/// checks it against --rx-ring and --flows).
fn parse_concurrency(text: &str) -> Result<u32, String> {
    whole(1..=u64::from(linerate_host::limits::MAX_RING))(text)
}

/// A percentage from 0 to 100 (`--inject-loss`).
fn parse_priority(text: &str) -> Result<Priority, String> {
    text.parse()
}

fn parse_percent(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) && !text.trim().starts_with('-') => Ok(p),
        _ => Err(format!(
            "{:?} is out of range: use 0 to 100 (percent)",
            text.trim()
        )),
    }
}

/// A loss tolerance, percent, from 0 up to (not including) 100
/// (`--search-rate`, `rfc2544 --loss`).
fn parse_tolerance(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(p) if (0.0..100.0).contains(&p) && !text.trim().starts_with('-') => Ok(p),
        _ => Err(format!(
            "{:?} is out of range: give the loss tolerated in percent, from 0 up to (not including) 100",
            text.trim()
        )),
    }
}

/// A lab name (`--lab`): the prefix of its namespaces and interfaces.
pub fn parse_lab(text: &str) -> Result<String, String> {
    linerate_host::limits::check_name(text).map(|()| text.to_string())
}

/// A --size: one frame size, `imix`, or SIZE:WEIGHT,... (the sizes are
/// checked against the link's MTU by the plan).
pub fn parse_size(text: &str) -> Result<linerate_datapath::mix::SizeMix, String> {
    // The range of the largest link a run takes, from the data path's
    // geometry (IPv4's smallest frame: the plan checks IPv6's).
    let link = linerate_datapath::geometry::Geometry::for_mtu(MAX_RUN_MTU);
    let (min, max) = (link.min_frame() as u64, link.max_frame() as u64);
    // Each size on its own: its range, before the mix is built.
    for part in text.split(',') {
        let size = part.split_once(':').map_or(part, |(s, _)| s).trim();
        let numeric = size
            .strip_prefix('-')
            .unwrap_or(size)
            .bytes()
            .all(|b| b.is_ascii_digit());
        if numeric && !size.is_empty() {
            parse_whole(size, min..=max).map_err(|e| {
                format!("frame size {e} bytes (RFC 2544 frames, FCS included; at most MTU+18 of the link)")
            })?;
        }
    }
    linerate_datapath::mix::SizeMix::parse(text).map_err(|e| e.to_string())
}

/// An interface name, checked as the kernel checks it.
pub fn parse_iface(text: &str) -> Result<String, String> {
    linerate_datapath::names::check_iface(text)
        .map(|()| text.to_string())
        .map_err(|e| e.to_string())
}

/// A network namespace name (never a path).
pub fn parse_netns(text: &str) -> Result<String, String> {
    linerate_datapath::names::check_netns(text)
        .map(|()| text.to_string())
        .map_err(|e| e.to_string())
}

fn parse_umem_chunk(text: &str) -> Result<u32, String> {
    use linerate_datapath::geometry::UMEM_CHUNKS;
    match text.parse::<u32>() {
        Ok(chunk) if UMEM_CHUNKS.contains(&chunk) => Ok(chunk),
        _ => Err(format!(
            "{text:?} is not a UMEM chunk size the kernel takes for frames: use {} or {}",
            UMEM_CHUNKS[0], UMEM_CHUNKS[1]
        )),
    }
}

/// The largest --count: 2^48 frames, messages or transactions per queue
/// (flow), so that every product of counts (times queues, flows or a
/// message's frames) fits 64 bits; at 1e9 a second it is 3 days' worth.
pub const MAX_COUNT: u64 = 1 << 48;

/// A --count: a whole number from 1 (0 sends nothing) up to [`MAX_COUNT`].
pub fn parse_count(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(count) if (1..=MAX_COUNT).contains(&count) => Ok(count),
        _ => Err(format!(
            "{text:?} is out of range: give a whole number from 1 to 2^48 ({MAX_COUNT}) per queue"
        )),
    }
}

/// A --rate: frames (or messages) per second per queue, 1 to 1e9.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(rate) if rate.is_finite() && (1.0..=1e9).contains(&rate) => Ok(rate),
        _ => Err(format!(
            "{text:?} is out of range: use a rate from 1 to 1e9 per second per queue"
        )),
    }
}

/// A core list (`0`, `0,2`, `0-3,6`): its form and its bounds are checked
/// here, before any range is expanded; whether the cores exist on the host
/// that runs the workers is checked by the command (`cores::check_list`).
pub fn parse_cores(text: &str) -> Result<String, String> {
    linerate_host::cores::ranges(text)
        .map(|_| text.to_string())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod duration_tests {
    use super::*;

    #[test]
    fn a_bare_number_is_seconds() {
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration(" 10 "), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        // Units still work.
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m 30s"), Ok(Duration::from_secs(90)));
        for bad in ["-1", "NaN", "inf", "2 parsecs", ""] {
            let e = parse_duration(bad).unwrap_err();
            assert!(
                e.contains("is not a duration") && e.contains("e.g. 10"),
                "{bad}: {e}"
            );
        }
        assert!(parse_positive_duration("0").is_err());
        assert_eq!(parse_positive_duration("3"), Ok(Duration::from_secs(3)));
    }

    #[test]
    fn whole_numbers_name_their_range() {
        assert_eq!(parse_whole("7", 1..=64), Ok(7));
        assert_eq!(
            parse_whole("0", 1..=64).unwrap_err(),
            "0 is out of range: use 1 to 64"
        );
        assert_eq!(
            parse_whole("-64", 1..=64).unwrap_err(),
            "-64 is negative: use 1 to 64"
        );
        assert_eq!(
            parse_whole("99999999999999999999", 1..=64).unwrap_err(),
            "99999999999999999999 is too large: use 1 to 64"
        );
        assert!(parse_whole("1e3", 1..=64)
            .unwrap_err()
            .contains("not a whole number"));
        assert!(parse_ring("100")
            .unwrap_err()
            .contains("not a power of two"));
        assert_eq!(parse_ring("1024"), Ok(1024));
    }

    #[test]
    fn a_measured_duration_has_a_floor() {
        assert_eq!(parse_measured("0.1"), Ok(MIN_DURATION));
        for short in ["0", "0.0000001", "99ms"] {
            assert!(
                parse_measured(short)
                    .unwrap_err()
                    .contains("at least 100ms"),
                "{short}"
            );
        }
        assert!(parse_measured("25h").unwrap_err().contains("24h"));
        assert_eq!(parse_warmup("0"), Ok(Duration::ZERO));
        assert!(parse_warmup("2h").is_err());
    }

    #[test]
    fn every_duration_option_takes_seconds() {
        let Command::Stream(a) =
            Cli::try_parse_from(["linerate", "stream", "--duration", "2", "--warmup", "0.5"])
                .unwrap()
                .command
        else {
            unreachable!()
        };
        assert_eq!(a.run.duration, Duration::from_secs(2));
        assert_eq!(a.run.warmup, Duration::from_millis(500));
        let Command::Rr(a) = Cli::try_parse_from(["linerate", "rr", "--timeout", "0.02"])
            .unwrap()
            .command
        else {
            unreachable!()
        };
        assert_eq!(a.timeout, Duration::from_millis(20));
        let Command::Agent(a) = Cli::try_parse_from([
            "linerate",
            "agent",
            "--listen",
            "127.0.0.1:7480",
            "--header-timeout",
            "3",
        ])
        .unwrap()
        .command
        else {
            unreachable!()
        };
        assert_eq!(a.header_timeout, Duration::from_secs(3));
    }

    #[test]
    fn listen_takes_either_family_in_brackets() {
        for (given, want) in [
            ("198.18.1.11:7480", "198.18.1.11:7480"),
            ("[198.18.1.11]:7480", "198.18.1.11:7480"),
            ("[2001:2::11]:7480", "[2001:2::11]:7480"),
        ] {
            assert_eq!(parse_listen(given).unwrap().to_string(), want, "{given}");
        }
        for bad in [
            "2001:2::11:7480",
            "[2001:2::11]",
            "[host]:1",
            "1.2.3.4",
            "[1.2.3.4]:x",
        ] {
            let e = parse_listen(bad).unwrap_err();
            assert!(e.contains("is not ADDR:PORT"), "{bad}: {e}");
        }
    }
}
