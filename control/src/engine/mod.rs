//! The engines: the data paths a run's workers move frames with, each
//! declared in one file with what it can do ([`Capabilities`]) and how its
//! workers start (the [`Engine`] trait).
//!
//! | engine | `--backend` | file |
//! |---|---|---|
//! | AF_XDP sockets fed by the steering program | `xdp` | `af_xdp.rs` |
//! | kernel UDP sockets (sendmmsg/recvmmsg) | `udp` | `udp.rs` |
//! | kernel TCP connections | `tcp` | `tcp.rs` |
//! | the in-kernel frame generator (stream senders) | `--tx-engine generator` | `generator.rs` |
//! | the XDP-only receiver (stream receivers) | `--rx-engine xdp` | `xdp_only.rs` |
//!
//! Commands never match on the engine: they build one config per role
//! ([`SenderConfig`], [`ReceiverConfig`], [`RrConfig`]) and call the
//! engine's spawn functions; every check of an option that depends on the
//! engine reads its capabilities ([`check_run_args`], and the commands'
//! own checks).
//!
//! Which engine plays which role is decided here too ([`for_stream`],
//! [`for_rr`]): today `--backend` names one engine for both ends.
//!
//! Adding an engine touches four files: its own file here (capabilities
//! and the spawn functions of the roles it plays), this file (its `mod`
//! line, its arm in [`backend`], and in [`for_stream`] if it plays one
//! end only), `cli.rs` (its name), and `README.md` (the options it
//! takes).

mod af_xdp;
mod generator;
mod kernel;
mod tcp;
mod udp;
mod xdp_only;

use std::sync::Arc;

use anyhow::{bail, Result};
use clap::ValueEnum;
use linerate_datapath::{
    frame::FrameSpec,
    header::Kind,
    message::Fragmentation,
    mix::SizeMix,
    worker::{
        ClientConfig, GenCredit, Placement, RrSummary, RxSummary, StopSignal, TxSummary, WaitMode,
        Worker, WorkerError,
    },
    xsk::{Credits, ZeroCopy},
};
use linerate_ebpf::Steering;

use crate::{
    cli::{BackendArg, RrArgs, RunArgs, RxEngineArg, StreamArgs, TxEngineArg},
    path::PathEnd,
};

/// What an engine can do. Every option and role that not every engine
/// supports is refused from here, with the engines that do support it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Runs the sending side of `stream`.
    pub stream_sender: bool,
    /// Runs the receiving side of `stream`.
    pub stream_receiver: bool,
    /// Runs `rr` clients and responders; the words the results use for
    /// its responder ("udp socket"). None: no rr.
    pub rr_responder: Option<&'static str>,
    /// Sends frames of a chosen size (`--size`); false: messages on a byte
    /// stream only (`--message`, by default as long as a frame's payload).
    pub frames: bool,
    /// Cuts messages into frames and counts them whole (`--message`).
    pub messages: bool,
    /// The largest frame it sends, FCS included (None: what the link
    /// carries).
    pub max_frame: Option<usize>,
    /// Carries frames longer than one UMEM chunk (AF_XDP multi-buffer;
    /// kernel sockets carry any size).
    pub multi_buffer: bool,
    /// Paces to `--rate`.
    pub pacing: bool,
    /// Its workers wait as `--tx-wait` and `--rx-wait` say.
    pub wait_modes: bool,
    /// Receives through linerate's XDP steering program, attached to every
    /// receiving interface: `--inject-loss`, `--xdp-mode`, and rr's
    /// `--responder xdp` (XDP_TX in that program).
    pub steering: bool,
    /// AF_XDP sockets on a UMEM: `--umem-chunk`, `--zero-copy` and the
    /// UMEM figures of the results.
    pub umem: bool,
    /// UDP's offloads: `--gso` on sends, `--gro` on receives.
    pub udp_offloads: bool,
    /// Counts frames another tool sends to its receivers (`--rx-only`).
    pub counts_foreign: bool,
    /// Its sends wait for room at the link. Without (the generator), what
    /// the link cannot take is dropped at the sender and counted only by
    /// the sending interface (its tx drops; veth: `xdp_xmit_errors`): the
    /// results take those from what was sent.
    pub backpressure: bool,
    /// Sends frames of several sizes in one stream (`--size imix`, or a
    /// list of SIZE:WEIGHT).
    pub size_mix: bool,
    /// Carries IPv6 test traffic (`--ipv6`).
    pub ipv6: bool,
}

/// The I/O settings every engine's workers get; each takes what it uses
/// (kernel sockets: the batch).
#[derive(Debug, Clone, Copy)]
pub struct Io {
    /// Descriptors (datagrams, writes) per batch.
    pub batch: usize,
    /// TX ring size (AF_XDP).
    pub tx_ring: u32,
    /// RX ring size (AF_XDP).
    pub rx_ring: u32,
    /// UMEM chunk size (AF_XDP).
    pub umem_chunk: u32,
    /// Whether frames span several UMEM chunks (AF_XDP).
    pub multi_buffer: bool,
    /// Zero-copy policy (AF_XDP).
    pub zero_copy: ZeroCopy,
    /// Frames each worker keeps a copy of (AF_XDP, `--pcap`).
    pub capture: Option<usize>,
}

impl Io {
    /// From the run's options and the plan's UMEM choice.
    pub fn new(args: &RunArgs, umem_chunk: u32, multi_buffer: bool) -> Self {
        Self {
            batch: args.batch,
            tx_ring: args.ring,
            rx_ring: args.rx_ring,
            umem_chunk,
            multi_buffer,
            zero_copy: if args.zero_copy {
                ZeroCopy::Require
            } else {
                ZeroCopy::Auto
            },
            capture: None,
        }
    }
}

/// The workers of one end of the path: where they run, how they wait,
/// when they stop.
#[derive(Clone)]
pub struct SideWorkers<'a> {
    /// The end: interface, namespace, addresses.
    pub end: &'a PathEnd,
    /// One core per queue.
    pub cores: &'a [usize],
    /// How they wait when there is nothing to do.
    pub wait: WaitMode,
    /// When they stop.
    pub stop: StopSignal,
    /// The steering program on this end, which AF_XDP sockets register
    /// with once bound.
    pub steering: Option<&'a Arc<Steering>>,
}

impl SideWorkers<'_> {
    /// Where worker `q` runs: its core, in the end's namespace.
    pub fn placement(&self, queue: u32) -> Placement {
        Placement {
            core: Some(self.cores[queue as usize]),
            netns: self.end.netns.clone(),
        }
    }
}

/// What a stream's senders send.
pub struct SenderConfig<'a> {
    /// The senders.
    pub workers: SideWorkers<'a>,
    /// The receiving end.
    pub to: &'a PathEnd,
    /// The receivers' UDP (TCP) port.
    pub port: u16,
    /// Frame size, FCS included (for messages: of the largest fragment).
    pub frame_size: usize,
    /// How messages are cut, when the stream carries messages.
    pub message: Option<Fragmentation>,
    /// Frames of several sizes (`frame_size` is the largest); None: one size.
    pub mix: Option<&'a SizeMix>,
    /// Frames (messages) per second per queue; None: as fast as possible.
    pub rate: Option<f64>,
    /// Frames (messages) per queue; None: until stopped.
    pub count: Option<u64>,
    /// UDP segmentation offload.
    pub gso: bool,
    /// Rings, UMEM, batch.
    pub io: Io,
    /// The receivers' acknowledgements, for a sender without backpressure
    /// of its own (the generator) whose receivers run here.
    pub credit: Option<GenCredit>,
    /// The generator's runner threads' scheduling (`--gen-priority`).
    pub gen_priority: Option<linerate_datapath::priority::Priority>,
}

impl SenderConfig<'_> {
    /// The frames sender `queue` sends (its flow): from the port above the
    /// receivers' (a port of its own per queue) to theirs.
    pub fn frame(&self, queue: u32) -> FrameSpec {
        FrameSpec {
            src: self
                .workers
                .end
                .endpoint(self.port.wrapping_add(1 + queue as u16).max(1024)),
            dst: self.to.endpoint(self.port),
            frame_size: self.frame_size,
            flow: queue as u16,
            kind: if self.message.is_some() {
                Kind::Message
            } else {
                Kind::Stream
            },
        }
    }
}

/// Where a stream's receivers listen.
pub struct ReceiverConfig<'a> {
    /// The receivers.
    pub workers: SideWorkers<'a>,
    /// Their UDP (TCP) port.
    pub port: u16,
    /// UDP receive offload.
    pub gro: bool,
    /// Count frames without a linerate header as received (another tool
    /// sends: `--rx-only`).
    pub count_foreign: bool,
    /// Rings, UMEM, batch.
    pub io: Io,
    /// Where receivers acknowledge what they took (AF_XDP receivers, for a
    /// generator of this host).
    pub credits: Option<Arc<Credits>>,
    /// AF_XDP receivers that spin yield their core at each empty poll:
    /// only when a NAPI thread of normal policy shares it (see
    /// `RxWorkerConfig::yield_when_idle`).
    pub yield_to_napi: bool,
    /// AF_XDP receivers' scheduling (`--rx-priority`).
    pub rx_priority: Option<linerate_datapath::priority::Priority>,
}

/// Both sides of an rr run.
pub struct RrConfig<'a> {
    /// The clients (on the path's tx end).
    pub client: SideWorkers<'a>,
    /// The responders (on the path's rx end).
    pub responder: SideWorkers<'a>,
    /// The responders' UDP (TCP) port; clients use the ports above it.
    pub port: u16,
    /// How requests are cut.
    pub request: Fragmentation,
    /// How responses are cut.
    pub response: Fragmentation,
    /// Rings, UMEM, batch.
    pub io: Io,
}

/// A data path: what it can do and how its workers start. Each spawn
/// function starts the worker of queue `q` and returns once it is bound;
/// a role the engine does not play is refused by the checks before any
/// worker starts (its default here says so, should one slip through).
pub trait Engine: Sync {
    /// Its name under `--backend` and in the results.
    fn name(&self) -> &'static str;

    /// What it can do.
    fn can(&self) -> &Capabilities;

    /// Starts stream sender `q`.
    fn spawn_sender(
        &self,
        cfg: &SenderConfig<'_>,
        queue: u32,
    ) -> Result<Worker<TxSummary>, WorkerError> {
        let _ = (cfg, queue);
        Err(self.cannot("stream senders"))
    }

    /// Starts stream receiver `q`.
    fn spawn_receiver(
        &self,
        cfg: &ReceiverConfig<'_>,
        queue: u32,
    ) -> Result<Worker<RxSummary>, WorkerError> {
        let _ = (cfg, queue);
        Err(self.cannot("stream receivers"))
    }

    /// Starts rr client `q`, running the flows of `clients`.
    fn spawn_client(
        &self,
        cfg: &RrConfig<'_>,
        queue: u32,
        clients: ClientConfig,
    ) -> Result<Worker<RrSummary>, WorkerError> {
        let _ = (cfg, queue, clients);
        Err(self.cannot("rr clients"))
    }

    /// Starts rr responder `q`.
    fn spawn_responder(
        &self,
        cfg: &RrConfig<'_>,
        queue: u32,
    ) -> Result<Worker<RrSummary>, WorkerError> {
        let _ = (cfg, queue);
        Err(self.cannot("rr responders"))
    }

    /// The error of a role this engine does not play.
    fn cannot(&self, what: &str) -> WorkerError {
        WorkerError::Hook(format!("the {} engine runs no {what}", self.name()))
    }
}

impl std::fmt::Debug for dyn Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The engine `--backend` names: the registry of engines.
pub fn backend(arg: BackendArg) -> &'static dyn Engine {
    match arg {
        BackendArg::Xdp => &af_xdp::AfXdp,
        BackendArg::Udp => &udp::UDP,
        BackendArg::Tcp => &tcp::TCP,
    }
}

/// The engines of a stream's senders and of its receivers.
pub fn for_stream(args: &StreamArgs) -> (&'static dyn Engine, &'static dyn Engine) {
    let engine = backend(args.run.backend);
    let receiver: &'static dyn Engine = match args.rx_engine {
        RxEngineArg::AfXdp => engine,
        RxEngineArg::Xdp => &xdp_only::XdpOnly,
    };
    match args.tx_engine {
        // Auto is decided once the path is known (auto_sender); until
        // then, the backend's.
        TxEngineArg::Backend | TxEngineArg::Auto => (engine, receiver),
        TxEngineArg::Generator => (&generator::Generator, receiver),
    }
}

/// What `--tx-engine auto` knows of the run when it chooses.
#[derive(Debug, Clone, Copy)]
pub struct AutoFacts<'a> {
    /// The sending interface's link kind ("veth"; None: a NIC, or not known).
    pub driver: Option<&'a str>,
    /// The largest frame the senders send, FCS included.
    pub frame_size: usize,
    /// The kernel's release (`uname -r`).
    pub kernel: &'a str,
    /// The receivers run in this process and take frames off a ring
    /// (AF_XDP), so they acknowledge what they took: the generator then
    /// waits for them ([`credit`]) and loses nothing on the way.
    pub acknowledged: bool,
}

/// Link kinds with no AF_XDP zero-copy (their AF_XDP sockets bind in copy
/// mode: an skb and a copy per frame), where the generator pays.
const NO_ZERO_COPY: &[&str] = &["veth", "macvlan", "ipvlan", "vxlan", "bridge", "bond"];

/// `--tx-engine auto`: the generator where the sending driver has no
/// zero-copy and the frames fit, else the backend's engine; with the
/// reason, for the placement line.
pub fn auto_sender(args: &StreamArgs, facts: AutoFacts<'_>) -> (&'static dyn Engine, String) {
    let backend_engine = backend(args.run.backend);
    let gen: &'static dyn Engine = &generator::Generator;
    let keep = |why: String| (backend_engine, format!("auto: {why}"));
    if args.run.backend != BackendArg::Xdp {
        return keep(format!(
            "--backend {} sends with its own sockets",
            backend_engine.name()
        ));
    }
    if args.message.is_some() && args.rate.is_none() && !facts.acknowledged {
        return keep(
            "unpaced messages need a sender with backpressure, and the generator has it only from AF_XDP receivers of this host (a frame the link drops breaks its whole message)".into(),
        );
    }
    if args.run.tx_wait.is_some() || args.run.zero_copy {
        return keep("--tx-wait and --zero-copy are AF_XDP sender options".into());
    }
    if args.size.as_ref().is_some_and(|m| !m.is_single()) && !gen.can().size_mix {
        return keep("the generator sends one frame size (no --size mix)".into());
    }
    if args.run.ipv6 && !gen.can().ipv6 {
        return keep("the generator sends IPv4 test traffic only".into());
    }
    if !generator::live_frames_kernel(facts.kernel) {
        return keep(format!(
            "kernel {} has no live-frames mode (5.18 or later)",
            facts.kernel
        ));
    }
    if let Some(max) = gen.can().max_frame.filter(|&m| facts.frame_size > m) {
        return keep(format!(
            "{}-byte frames are longer than the generator sends ({max})",
            facts.frame_size
        ));
    }
    match facts.driver.filter(|d| NO_ZERO_COPY.contains(d)) {
        Some(driver) => (
            gen,
            format!(
                "auto: {driver} has no AF_XDP zero-copy and {}-byte frames fit live-frames mode",
                facts.frame_size
            ),
        ),
        None => keep(format!(
            "{} may have AF_XDP zero-copy",
            facts.driver.unwrap_or("the sending NIC")
        )),
    }
}

/// The engine of an rr run's clients and responders.
pub fn for_rr(args: &RrArgs) -> &'static dyn Engine {
    backend(args.run.backend)
}

/// Every engine `--backend` can name.
pub fn all() -> impl Iterator<Item = &'static dyn Engine> {
    BackendArg::value_variants().iter().map(|arg| backend(*arg))
}

/// The names of the engines that can do `what`, for a refusal:
/// "xdp", "udp or tcp".
pub fn names_that(what: impl Fn(&Capabilities) -> bool) -> String {
    let names: Vec<&str> = all().filter(|e| what(e.can())).map(|e| e.name()).collect();
    match names.split_last() {
        None => "none".to_string(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// Checks the options every run shares that depend on the engine.
pub fn check_run_args(args: &RunArgs) -> Result<()> {
    let engine = backend(args.backend);
    let can = engine.can();
    if (args.gso || args.gro) && !can.udp_offloads {
        bail!(
            "--gso and --gro are UDP offloads: use them with --backend {}",
            names_that(|c| c.udp_offloads)
        );
    }
    if args.inject_loss > 0.0 && !can.steering {
        bail!(
            "--inject-loss works in the XDP program: use it with --backend {}",
            names_that(|can| can.steering)
        );
    }
    if args.ipv6 && !can.ipv6 {
        bail!(
            "--ipv6: the {} engine carries IPv4 test traffic only; use --backend {}",
            engine.name(),
            names_that(|can| can.ipv6)
        );
    }
    if args.tx_wait.is_some() && !can.wait_modes {
        bail!(
            "--tx-wait: the {} engine does not wait on rings; use --backend {}",
            engine.name(),
            names_that(|can| can.wait_modes)
        );
    }
    Ok(())
}

/// Backpressure for a sender that has none of its own (the generator:
/// what the link cannot take is dropped) into receivers that take frames
/// off a ring (AF_XDP), when both ends run in this process: the receivers
/// acknowledge what they took and each sending flow waits while a window
/// of its frames is unacknowledged, so nothing is dropped on the way.
/// None where that does not apply (two hosts, `--rx-only`/`--tx-only`,
/// other engines). The window follows from where the senders run (`tx_cores`) and the
/// receiving link's queues and RX ring ([`generator::credit_window`]).
pub fn credit(
    sender: &dyn Engine,
    receiver: &dyn Engine,
    both_here: bool,
    (tx_cores, rx_queues, rx_ring, napi_threaded): (&[usize], u32, u32, bool),
    yield_to_receivers: bool,
) -> Result<Option<GenCredit>> {
    if sender.can().backpressure || !receiver.can().umem || !both_here {
        return Ok(None);
    }
    let credits =
        Credits::new().map_err(|e| anyhow::anyhow!("the generator's backpressure: {e}"))?;
    Ok(Some(GenCredit {
        credits: Arc::new(credits),
        window: generator::credit_window(tx_cores, rx_queues, rx_ring, napi_threaded),
        yield_to_receivers,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_backend_names_its_engine() {
        for arg in BackendArg::value_variants() {
            let name = arg.to_possible_value().unwrap().get_name().to_string();
            assert_eq!(backend(*arg).name(), name);
        }
    }

    #[test]
    fn auto_chooses_the_generator_where_it_pays() {
        use clap::Parser;
        let args = |extra: &[&str]| {
            let argv = ["linerate", "stream", "--tx-engine", "auto"]
                .iter()
                .chain(extra);
            match crate::cli::Cli::try_parse_from(argv).unwrap().command {
                crate::cli::Command::Stream(a) => *a,
                _ => unreachable!("a stream command"),
            }
        };
        let facts = |driver, frame_size, kernel| AutoFacts {
            driver,
            frame_size,
            kernel,
            acknowledged: false,
        };
        let veth = facts(Some("veth"), 1518, "6.18.0-1-amd64");
        let (e, why) = auto_sender(&args(&[]), veth);
        assert_eq!(e.name(), "generator");
        assert!(why.contains("veth has no AF_XDP zero-copy"), "{why}");
        let paced = args(&["--message", "65536", "--rate", "1000"]);
        assert_eq!(auto_sender(&paced, veth).0.name(), "generator");
        let imix = args(&["--size", "imix"]);
        assert_eq!(auto_sender(&imix, veth).0.name(), "generator");
        // Unpaced messages: with receivers here that acknowledge.
        let here = AutoFacts {
            acknowledged: true,
            ..veth
        };
        let messages = args(&["--message", "65536"]);
        assert_eq!(auto_sender(&messages, here).0.name(), "generator");
        for (a, f, want) in [
            (
                args(&[]),
                facts(None, 1518, "6.18.0"),
                "may have AF_XDP zero-copy",
            ),
            (
                args(&[]),
                facts(Some("veth"), 9018, "6.18.0"),
                "longer than",
            ),
            (
                args(&[]),
                facts(Some("veth"), 64, "5.15.0-91"),
                "no live-frames mode",
            ),
            (args(&["--backend", "udp"]), veth, "--backend udp"),
            (args(&["--tx-wait", "busy"]), veth, "AF_XDP sender options"),
            (args(&["--message", "65536"]), veth, "backpressure"),
            (args(&["--ipv6"]), veth, "IPv4 test traffic only"),
        ] {
            let (e, why) = auto_sender(&a, f);
            assert_ne!(e.name(), "generator", "{why}");
            assert!(why.starts_with("auto: ") && why.contains(want), "{why}");
        }
    }

    #[test]
    fn refusals_name_the_engines_that_can() {
        assert_eq!(names_that(|can| can.steering), "xdp");
        assert_eq!(names_that(|can| can.udp_offloads), "udp");
        assert_eq!(
            names_that(|can| can.rr_responder.is_some()),
            "xdp, udp or tcp"
        );
        assert_eq!(names_that(|_| false), "none");
    }

    #[test]
    fn what_each_engine_can_do() {
        let xdp = backend(BackendArg::Xdp).can();
        assert!(xdp.steering && xdp.umem && xdp.counts_foreign && xdp.frames);
        let tcp = backend(BackendArg::Tcp).can();
        assert!(!tcp.frames && tcp.messages && !tcp.steering && !tcp.umem);
        assert_eq!(tcp.rr_responder, Some("tcp socket"));
        let udp = backend(BackendArg::Udp).can();
        assert!(udp.udp_offloads && udp.frames && !udp.counts_foreign);
        for engine in all() {
            let can = engine.can();
            assert!(can.stream_sender && can.stream_receiver && can.rr_responder.is_some());
            assert!(can.pacing && can.wait_modes && can.multi_buffer && can.max_frame.is_none());
        }
    }
}
