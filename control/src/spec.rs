//! What a run is given, typed: the narrow parts the plan makes once from
//! the command line (`plan::run`), each handed to the layer that needs it
//! (the path its [`PathSpec`], the session its [`Timing`], [`Wait`],
//! [`Napi`] and [`Xdp`]), so that no layer below the plan reads the
//! parsed options.

use std::time::Duration;

use linerate_datapath::{priority::Priority, worker::WaitMode};
use linerate_ebpf::AttachPolicy;

use crate::cli::BackendArg;

/// One end of a path given by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Iface {
    /// The interface.
    pub name: String,
    /// Its namespace (None: this process's).
    pub netns: Option<String>,
}

/// Which interfaces a run uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ifaces {
    /// Two interfaces given (`--tx-iface`, `--rx-iface`).
    Pair {
        /// The sending end (rr: the clients').
        tx: Iface,
        /// The receiving end (rr: the responders').
        rx: Iface,
    },
    /// The veth lab of this name (`--lab`), brought up if needed.
    Lab(String),
}

/// The path a run asks for: which interfaces, how many queues, which
/// cores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathSpec {
    /// The interfaces.
    pub ifaces: Ifaces,
    /// The ends swapped (`--reverse`).
    pub reverse: bool,
    /// The MTU asked for (`--mtu`).
    pub mtu: Option<u32>,
    /// Queues, one worker per queue and end.
    pub queues: u32,
    /// The senders' cores as given (`--tx-cores`).
    pub tx_cores: Option<String>,
    /// The receivers' cores as given (`--rx-cores`).
    pub rx_cores: Option<String>,
    /// Whether the test traffic is IPv6 (each end needs an address).
    pub ipv6: bool,
}

/// How long a run lasts and how often it reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Before the window.
    pub warmup: Duration,
    /// The measured window.
    pub duration: Duration,
    /// Every how long a line of figures is printed (`--json-stream`), if
    /// at all.
    pub intervals: Option<Duration>,
    /// Whether a run that reports latency measures the noise floor just
    /// before its window (not with `--no-floor`).
    pub floor: bool,
}

/// How each end's workers wait when there is nothing to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    /// The tx end's, as given (None: chosen from the placement,
    /// `PathPlan::tx_wait`).
    pub tx: Option<WaitMode>,
    /// The rx end's, as given (None: chosen from the placement,
    /// `PathPlan::rx_wait`).
    pub rx: Option<WaitMode>,
    /// The rx ends are rr's responders, which spin by default on cores of
    /// their own (a stream's receivers wait).
    pub responders: bool,
    /// Whether the backend's kernel sockets are TCP's (the kernel
    /// busy-poll modes are offered for UDP and AF_XDP only).
    pub tcp: bool,
}

/// The NAPI mode a run asks for (`--napi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NapiMode {
    /// What suits the run: threaded or softirq in the lab, left as it is
    /// elsewhere.
    Auto,
    /// Threaded, the threads beside the receivers.
    Threaded,
    /// Threaded, the threads on cores no worker uses.
    ThreadedOwn,
    /// In softirq.
    Softirq,
    /// Left as configured.
    Keep,
}

/// The NAPI mode and the NAPI threads' policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Napi {
    /// The mode (`--napi`).
    pub mode: NapiMode,
    /// The threads' policy (`--napi-priority`).
    pub priority: Option<Priority>,
}

/// The steering program's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Xdp {
    /// Native, generic, or native then generic.
    pub policy: AttachPolicy,
    /// Replace a program another tool attached (`--force`).
    pub force: bool,
    /// Frames dropped on purpose, in percent (`--inject-loss`).
    pub inject_loss: f64,
}

/// The sockets' options every run shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sockets {
    /// The engine `--backend` names.
    pub backend: BackendArg,
    /// The first UDP port.
    pub port: u16,
    /// UDP segmentation offload (`--gso`).
    pub gso: bool,
    /// UDP receive offload (`--gro`).
    pub gro: bool,
    /// IPv6 test traffic.
    pub ipv6: bool,
}

/// The AF_XDP rings and UMEM as asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rings {
    /// Descriptors per batch.
    pub batch: usize,
    /// TX ring.
    pub tx_ring: u32,
    /// RX ring.
    pub rx_ring: u32,
    /// UMEM chunk asked for (None: the plan chooses).
    pub umem_chunk: Option<u32>,
    /// Zero-copy required (`--zero-copy`).
    pub zero_copy: bool,
}

/// Real-time policies of the workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priorities {
    /// The generator's runners (`--gen-priority`).
    pub generator: Option<Priority>,
    /// The AF_XDP receivers (`--rx-priority`).
    pub receivers: Option<Priority>,
}

/// Everything a run of either test is given, typed.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// The path.
    pub path: PathSpec,
    /// How long.
    pub timing: Timing,
    /// How the workers wait.
    pub wait: Wait,
    /// NAPI.
    pub napi: Napi,
    /// The steering program.
    pub xdp: Xdp,
    /// The sockets.
    pub sockets: Sockets,
    /// The rings.
    pub rings: Rings,
    /// The workers' policies.
    pub priorities: Priorities,
}
