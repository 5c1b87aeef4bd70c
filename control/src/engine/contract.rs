//! What every engine is ([`Engine`]: its capabilities and the spawn
//! functions of the roles it plays) and what it is given (one config per
//! role and queue).

use std::sync::Arc;

use anyhow::Result;
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

use crate::{path::PathEnd, spec::Rings};

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
    /// Its receivers verify the IPv4 header and UDP checksums of every
    /// frame (counting the wrong ones `bad_checksum`). Without (a kernel
    /// socket gets only what the kernel passed; the XDP-only receiver
    /// counts without checking), `bad_checksum` is not measured: null.
    pub checksums: bool,
    /// Drops frames on purpose (`--inject-loss`): in the steering program,
    /// or on the loopback's link.
    pub injects_loss: bool,
    /// Runs both ends in memory, in this process: no interface, no root
    /// (the loopback engine).
    pub in_memory: bool,
    /// Runs without root on interfaces of linerate's own namespace
    /// (kernel sockets: nothing attached, mapped or set; such a run changes
    /// nothing of the system, PathPlan::unprivileged). Engines in memory
    /// need no root either way.
    pub unprivileged: bool,
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
    /// From the rings asked for and the plan's UMEM choice.
    pub fn new(rings: &Rings, umem_chunk: u32, multi_buffer: bool) -> Self {
        Self {
            batch: rings.batch,
            tx_ring: rings.tx_ring,
            rx_ring: rings.rx_ring,
            umem_chunk,
            multi_buffer,
            zero_copy: if rings.zero_copy {
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
    /// The config of the worker of `queue` that sends through `socket`
    /// (the AF_XDP sender's; the loopback's, whose port ignores it).
    pub fn tx_worker(
        &self,
        queue: u32,
        socket: linerate_datapath::xsk::SocketOptions,
    ) -> linerate_datapath::worker::TxWorkerConfig {
        linerate_datapath::worker::TxWorkerConfig {
            socket,
            frame: self.frame(queue),
            message: self.message,
            mix: self.mix.cloned(),
            batch: self.io.batch,
            wait: self.workers.wait,
            rate: self.rate,
            count: self.count,
            placement: self.workers.placement(queue),
            stop: self.workers.stop.clone(),
            capture: self.io.capture,
        }
    }

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
    /// Frames to drop on purpose, percent (`--inject-loss`), for an engine
    /// that drops them itself (the loopback; AF_XDP's steering program is
    /// given it when attached).
    pub inject_loss_pct: f64,
    /// How much of each frame they verify (receivers that parse frames).
    pub verify: linerate_datapath::frame::Verify,
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
    /// `--inject-loss`: percent of requests dropped on the way (by the
    /// steering program, or on the loopback engine's link).
    pub inject_loss_pct: f64,
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
