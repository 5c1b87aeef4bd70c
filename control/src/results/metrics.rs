//! The one list of linerate's metrics: every figure of a result and every
//! counter a worker, the steering program, an AF_XDP socket or an
//! interface keeps, each with its name, unit, meaning and how it is read
//! from a typed result.
//!
//! Sweep files name metrics from it (checked before anything runs), the
//! report reads them through it, the agent's /metrics exports the worker
//! counters, socket statistics and steering counters from it, and
//! docs/metrics.md is generated from it (a test checks the page).
//!
//! Adding a counter a worker counts: its entry in `datapath::stats`
//! (name, /metrics name, unit, meaning; [`WORKER_COUNTERS`] is that
//! list), the line of the worker that counts it, and docs/metrics.md
//! regenerated (`LINERATE_WRITE_DOCS=1 cargo test -p
//! linerate metrics_page`). It is then in every result's workers, on
//! /metrics, and in sweep files as `counters.tx.NAME`, `counters.rx.NAME`
//! (whole run) and `counters.tx.NAME_per_s`, `counters.rx.NAME_per_s`
//! (over the window).

use linerate_datapath::{stats::CounterSnapshot, xsk::XskStats};
use linerate_ebpf::SteerStats;

use super::run::RunResult;
use super::{rr::RrResult, stream::StreamResult};
use crate::{cpu::Host, iface::IfCounters};

/// A figure of a result.
pub struct Figure {
    /// Its name: the dotted path of the field in the `--json` result
    /// (`derived.*`: computed from several).
    pub name: &'static str,
    /// Its unit (docs/metrics.md).
    #[cfg_attr(not(test), allow(dead_code))]
    pub unit: &'static str,
    /// What it is (docs/metrics.md).
    #[cfg_attr(not(test), allow(dead_code))]
    pub about: &'static str,
    /// How it is read.
    pub read: Read,
}

/// How a figure is read from the results it applies to.
pub enum Read {
    /// Stream results only.
    Stream(fn(&StreamResult) -> Option<f64>),
    /// Rr results only.
    Rr(fn(&RrResult) -> Option<f64>),
    /// Both.
    Both(
        fn(&StreamResult) -> Option<f64>,
        fn(&RrResult) -> Option<f64>,
    ),
}

/// A counter of a family: a field of its snapshot, declared with the
/// worker counters in `datapath::stats` (that family is declared there).
pub use linerate_datapath::stats::Counter;

macro_rules! counter {
    ($t:ty, $name:ident, $exported:literal, $unit:literal, $about:literal) => {
        Counter::<$t> {
            name: stringify!($name),
            exported: $exported,
            unit: $unit,
            about: $about,
            read: |c| c.$name,
            refused: false,
        }
    };
}

/// Every counter a worker keeps (`datapath::stats::CounterSnapshot`).
pub const WORKER_COUNTERS: &[Counter<CounterSnapshot>] = CounterSnapshot::FIELDS;

/// The worker counters of frames a receiver refused: also `frames.NAME`
/// of a stream result (its receivers' whole run).
fn refused_counters() -> impl Iterator<Item = &'static Counter<CounterSnapshot>> {
    WORKER_COUNTERS.iter().filter(|c| c.refused)
}

/// An AF_XDP socket's XDP_STATISTICS, known once its worker ended.
pub const XSK_EVENTS: &[Counter<XskStats>] = &[
    counter!(
        XskStats,
        rx_dropped,
        "",
        "frames",
        "Frames dropped for lack of space or other reasons"
    ),
    counter!(
        XskStats,
        rx_invalid_descs,
        "",
        "descriptors",
        "Invalid RX descriptors"
    ),
    counter!(
        XskStats,
        rx_ring_full,
        "",
        "frames",
        "Frames dropped because the RX ring was full"
    ),
    counter!(
        XskStats,
        rx_fill_ring_empty,
        "",
        "events",
        "Times the fill ring was empty when a frame arrived"
    ),
    counter!(
        XskStats,
        tx_invalid_descs,
        "",
        "descriptors",
        "Invalid TX descriptors"
    ),
    counter!(
        XskStats,
        tx_ring_empty,
        "",
        "events",
        "Times the TX ring was empty when the kernel looked"
    ),
];

/// The steering program's counters, by action.
pub const STEERING: &[Counter<SteerStats>] = &[
    counter!(
        SteerStats,
        seen,
        "",
        "frames",
        "Frames the program looked at"
    ),
    counter!(
        SteerStats,
        redirected,
        "",
        "frames",
        "Frames redirected into an AF_XDP socket"
    ),
    counter!(
        SteerStats,
        redirect_failed,
        "",
        "frames",
        "Test frames with no socket on their queue (passed to the kernel)"
    ),
    counter!(
        SteerStats,
        passed,
        "",
        "frames",
        "Frames passed to the kernel stack"
    ),
    counter!(
        SteerStats,
        malformed,
        "",
        "frames",
        "Frames too short for the headers they announce (passed to the kernel)"
    ),
    counter!(
        SteerStats,
        responded,
        "",
        "frames",
        "Requests answered by the program itself (XDP_TX responder)"
    ),
    counter!(
        SteerStats,
        dropped,
        "",
        "frames",
        "Test frames dropped on purpose (loss injection)"
    ),
    counter!(
        SteerStats,
        counted,
        "",
        "frames",
        "Test frames counted per flow and dropped (the XDP-only receiver)"
    ),
    counter!(
        SteerStats,
        foreign,
        "",
        "frames",
        "Frames on the test ports without a linerate header (XDP-only receiver)"
    ),
];

/// An interface's own counters (`ip -s link`).
pub const INTERFACE: &[Counter<IfCounters>] = &[
    counter!(IfCounters, rx_packets, "", "packets", "Packets received"),
    counter!(IfCounters, rx_bytes, "", "bytes", "Bytes received"),
    counter!(IfCounters, rx_dropped, "", "packets", "Receive drops"),
    counter!(IfCounters, tx_packets, "", "packets", "Packets sent"),
    counter!(IfCounters, tx_bytes, "", "bytes", "Bytes sent"),
    counter!(IfCounters, tx_dropped, "", "packets", "Send drops"),
];

macro_rules! stream {
    ($name:expr, $unit:literal, $about:expr, |$r:ident| $e:expr) => {
        Figure {
            name: $name,
            unit: $unit,
            about: $about,
            read: Read::Stream(|$r| $e),
        }
    };
}

macro_rules! rr {
    ($name:expr, $unit:literal, $about:expr, |$r:ident| $e:expr) => {
        Figure {
            name: $name,
            unit: $unit,
            about: $about,
            read: Read::Rr(|$r| $e),
        }
    };
}

macro_rules! both {
    ($name:expr, $unit:literal, $about:expr, |$s:ident| $se:expr, |$r:ident| $re:expr) => {
        Figure {
            name: $name,
            unit: $unit,
            about: $about,
            read: Read::Both(|$s| $se, |$r| $re),
        }
    };
}

/// The figures of a stream side over the window (`sender.*`, `receiver.*`).
macro_rules! side {
    ($side:ident, $who:literal) => {
        [
            stream!(
                concat!(stringify!($side), ".frames"),
                "frames",
                "Frames in the window",
                |r| Some(r.$side.frames as f64)
            ),
            stream!(
                concat!(stringify!($side), ".frames_per_s"),
                "frames/s",
                "Frames per second over the window",
                |r| Some(r.$side.frames_per_s)
            ),
            stream!(
                concat!(stringify!($side), ".payload_mb_s"),
                "MB/s",
                "UDP payload, 10^6 bytes per second",
                |r| Some(r.$side.payload_mb_s)
            ),
            stream!(
                concat!(stringify!($side), ".wire_mb_s"),
                "MB/s",
                "Bytes on the wire: frames, FCS, preamble and gap",
                |r| Some(r.$side.wire_mb_s)
            ),
            stream!(
                concat!(stringify!($side), ".wire_gbit_s"),
                "Gbit/s",
                "The wire rate",
                |r| Some(r.$side.wire_gbit_s)
            ),
            stream!(
                concat!(stringify!($side), ".avg_frame_size"),
                "bytes",
                "Mean frame size, FCS included (of a traffic mix: what the frames averaged)",
                |r| r.$side.avg_frame_size
            ),
            stream!(
                concat!(stringify!($side), ".link_packets_per_s"),
                "packets/s",
                "Packets the interface itself counted (`ip -s link`) in the window",
                |r| Some(r.$side.link_packets_per_s)
            ),
            stream!(
                concat!(stringify!($side), ".messages_per_s"),
                "messages/s",
                "Whole messages per second (message streams)",
                |r| r.$side.messages_per_s
            ),
            stream!(
                concat!(stringify!($side), ".message_mb_s"),
                "MB/s",
                "Bytes of whole messages per second (message streams)",
                |r| r.$side.message_mb_s
            ),
            stream!(
                concat!(stringify!($side), ".cpu.cpu_pct"),
                "%",
                concat!("Mean busy percent of the ", $who, " cores"),
                |r| Some(r.$side.cpu.cpu_pct)
            ),
            stream!(
                concat!(stringify!($side), ".cpu.service_demand_ms_per_mb"),
                "ms/MB",
                concat!(
                    "CPU of the ",
                    $who,
                    " cores per MB counted (message MB for message streams, payload MB otherwise)"
                ),
                |r| r.$side.cpu.service_demand_ms_per_mb
            ),
        ]
    };
}

const SENDER: [Figure; 11] = side!(sender, "sender's");
const RECEIVER: [Figure; 11] = side!(receiver, "receiver's");

/// Every other figure.
const FIGURES: &[Figure] = &[
    // Stream: whole-run accounting.
    stream!("frames.sent", "frames", "Frames the senders completed over the whole run", |r| Some(r.frames.sent as f64)),
    stream!("frames.received", "frames", "Linerate frames received over the whole run", |r| Some(r.frames.received as f64)),
    stream!("frames.lost", "frames", "Sent minus received", |r| Some(r.frames.lost as f64)),
    stream!("frames.loss_pct", "%", "Lost in percent of sent", |r| Some(r.frames.loss_pct)),
    stream!("frames.seq_gaps", "frames", "Sequence gaps the receivers saw", |r| Some(r.frames.seq_gaps as f64)),
    stream!("frames.reordered", "frames", "Frames that came after a later one", |r| Some(r.frames.reordered as f64)),
    stream!("frames.duplicates", "frames", "Frames received twice", |r| Some(r.frames.duplicates as f64)),
    stream!("frames.dropped_at_sender", "frames", "Frames a sender without backpressure (the generator) handed to its link that the link dropped (the peer's ring full): neither sent nor lost", |r| Some(r.frames.dropped_at_sender as f64)),
    stream!("frames.unfinished", "frames", "Frames still in the senders' kernel queue when they gave up", |r| Some(r.frames.unfinished as f64)),
    stream!("frames.messages.message_bytes", "bytes", "Bytes per message (message streams)", |r| r.frames.messages.as_ref().map(|m| m.message_bytes as f64)),
    stream!("frames.messages.frames_per_message", "frames", "Frames each message is cut into", |r| r.frames.messages.as_ref().map(|m| m.frames_per_message as f64)),
    stream!("frames.messages.sent", "messages", "Messages whose every frame the senders completed", |r| r.frames.messages.as_ref().map(|m| m.sent as f64)),
    stream!("frames.messages.received", "messages", "Messages received whole", |r| r.frames.messages.as_ref().map(|m| m.received as f64)),
    stream!("frames.messages.lost", "messages", "Messages sent minus received", |r| r.frames.messages.as_ref().map(|m| m.lost as f64)),
    stream!("frames.messages.loss_pct", "%", "Messages lost in percent of sent", |r| r.frames.messages.as_ref().map(|m| m.loss_pct)),
    stream!("frames.messages.receiver_counted_lost", "messages", "Messages the receivers found incomplete or missing", |r| r.frames.messages.as_ref().map(|m| m.receiver_counted_lost as f64)),
    // Rr: transactions and response times.
    rr!("transactions.completed", "transactions", "Transactions completed in the window", |r| Some(r.transactions.completed as f64)),
    rr!("transactions.per_s", "transactions/s", "Transactions per second over the window", |r| Some(r.transactions.per_s)),
    rr!("transactions.total", "transactions", "Transactions completed over the whole run", |r| Some(r.transactions.total as f64)),
    rr!("transactions.timeouts", "transactions", "Transactions timed out (and retried) over the whole run", |r| Some(r.transactions.timeouts as f64)),
    rr!("transactions.late", "responses", "Responses that came after their transaction timed out", |r| Some(r.transactions.late as f64)),
    rr!("transactions.answered", "requests", "Requests the responders answered", |r| Some(r.transactions.answered as f64)),
    both!("latency.count", "samples", "Latencies measured: rr's response times in the window; a stream's one-way latencies, one per received frame over the whole run", |r| r.latency.as_ref().map(|l| l.count as f64), |r| Some(r.latency.count as f64)),
    both!("latency.mean_us", "us", "Mean latency: rr's response time; a stream's one-way latency (receive time minus send time) of every received frame", |r| r.latency.as_ref().map(|l| l.mean_us), |r| Some(r.latency.mean_us)),
    both!("latency.min_us", "us", "Shortest latency (response time; a stream's one-way latency)", |r| r.latency.as_ref().map(|l| l.min_us), |r| Some(r.latency.min_us)),
    both!("latency.p50_us", "us", "Median latency (response time; a stream's one-way latency)", |r| r.latency.as_ref().map(|l| l.p50_us), |r| Some(r.latency.p50_us)),
    both!("latency.p90_us", "us", "90th percentile of the latency (response time; a stream's one-way latency)", |r| r.latency.as_ref().map(|l| l.p90_us), |r| Some(r.latency.p90_us)),
    both!("latency.p99_us", "us", "99th percentile of the latency (response time; a stream's one-way latency)", |r| r.latency.as_ref().map(|l| l.p99_us), |r| Some(r.latency.p99_us)),
    both!("latency.p99_9_us", "us", "99.9th percentile of the latency (response time; a stream's one-way latency)", |r| r.latency.as_ref().map(|l| l.p99_9_us), |r| Some(r.latency.p99_9_us)),
    both!("latency.max_us", "us", "Longest latency (response time; a stream's one-way latency)", |r| r.latency.as_ref().map(|l| l.max_us), |r| Some(r.latency.max_us)),
    stream!("latency.clock.uncertainty_us", "us", "Two hosts: uncertainty of the clock offset taken off every one-way latency", |r| r.latency.as_ref().and_then(|l| l.clock).map(|c| c.uncertainty_us)),
    // CPU.
    both!("cpu.total.cpu_pct", "%", "Mean busy percent of every core (of both hosts, across two)", |r| Some(r.cpu.total.cpu_pct), |r| Some(r.cpu.total.cpu.cpu_pct)),
    both!("cpu.total.service_demand_ms_per_mb", "ms/MB", "CPU of every core per MB counted: received payload (message) MB of a stream, request and response MB of rr", |r| r.cpu.total.service_demand_ms_per_mb, |r| r.cpu.total.cpu.service_demand_ms_per_mb),
    rr!("cpu.total.us_per_transaction", "us", "CPU of every core per transaction, as netperf's RR service demand", |r| r.cpu.total.us_per_transaction),
    rr!("cpu.client.cpu_pct", "%", "Mean busy percent of the client cores", |r| Some(r.cpu.client.cpu.cpu_pct)),
    rr!("cpu.client.service_demand_ms_per_mb", "ms/MB", "CPU of the client cores per MB of requests and responses", |r| r.cpu.client.cpu.service_demand_ms_per_mb),
    rr!("cpu.client.us_per_transaction", "us", "CPU of the client cores per transaction", |r| r.cpu.client.us_per_transaction),
    rr!("cpu.responder.cpu_pct", "%", "Mean busy percent of the responder cores", |r| Some(r.cpu.responder.cpu.cpu_pct)),
    rr!("cpu.responder.service_demand_ms_per_mb", "ms/MB", "CPU of the responder cores per MB of requests and responses", |r| r.cpu.responder.cpu.service_demand_ms_per_mb),
    rr!("cpu.responder.us_per_transaction", "us", "CPU of the responder cores per transaction", |r| r.cpu.responder.us_per_transaction),
    both!("cpu.hosts.tx.cpu_pct", "%", "Two hosts: mean busy percent of the sending (client's) host's cores", |r| r.cpu.hosts.as_ref().map(|h| h.tx.cpu_pct), |r| r.cpu.hosts.as_ref().map(|h| h.tx.cpu_pct)),
    both!("cpu.hosts.tx.service_demand_ms_per_mb", "ms/MB", "Two hosts: CPU of the sending (client's) host per MB counted", |r| r.cpu.hosts.as_ref().and_then(|h| h.tx.service_demand_ms_per_mb), |r| r.cpu.hosts.as_ref().and_then(|h| h.tx.service_demand_ms_per_mb)),
    both!("cpu.hosts.rx.cpu_pct", "%", "Two hosts: mean busy percent of the receiving (responder's) host's cores", |r| r.cpu.hosts.as_ref().map(|h| h.rx.cpu_pct), |r| r.cpu.hosts.as_ref().map(|h| h.rx.cpu_pct)),
    both!("cpu.hosts.rx.service_demand_ms_per_mb", "ms/MB", "Two hosts: CPU of the receiving (responder's) host per MB counted", |r| r.cpu.hosts.as_ref().and_then(|h| h.rx.service_demand_ms_per_mb), |r| r.cpu.hosts.as_ref().and_then(|h| h.rx.service_demand_ms_per_mb)),
    // Derived.
    both!("derived.us_per_message", "us", "Time per message: one over messages received per second; rr: transactions in flight over transactions per second (000's figures 7-10, the overhead fit)", |r| r.time_per_message_s().map(|t| t * 1e6), |r| r.time_per_message_s().map(|t| t * 1e6)),
    rr!("derived.rr_mb_s", "MB/s", "Requests and responses, 10^6 bytes per second (002's transfer rate)", |r| Some(r.mb_s())),
    // The window.
    both!("window_s", "s", "Length of the measured window (two hosts: the sending host's)", |r| Some(r.window_s), |r| Some(r.window_s)),
    stream!("receiver_window_s", "s", "Two hosts: the receiving host's window", |r| r.receiver_window_s),
    // Set-up as it happened.
    stream!("setup.payload_per_frame", "bytes", "UDP payload per frame", |r| Some(r.setup.payload_per_frame as f64)),
    stream!("setup.descs_per_frame", "descriptors", "UMEM descriptors per frame (more than 1: multi-buffer)", |r| Some(r.setup.descs_per_frame as f64)),
    stream!("setup.umem_chunk", "bytes", "UMEM chunk size (AF_XDP)", |r| r.setup.umem_chunk.map(f64::from)),
    rr!("setup.request_frames", "frames", "Frames per request", |r| Some(r.setup.request_frames as f64)),
    rr!("setup.response_frames", "frames", "Frames per response", |r| Some(r.setup.response_frames as f64)),
    // Settings, as the result echoes them.
    both!("params.mtu", "bytes", "MTU", |r| Some(f64::from(r.params.mtu)), |r| Some(f64::from(r.params.mtu))),
    both!("params.queues", "queues", "Queues", |r| Some(f64::from(r.params.queues)), |r| Some(f64::from(r.params.queues))),
    both!("params.warmup_s", "s", "Warm-up", |r| Some(r.params.warmup_s), |r| Some(r.params.warmup_s)),
    both!("params.duration_s", "s", "Measured duration asked for", |r| Some(r.params.duration_s), |r| Some(r.params.duration_s)),
    both!("params.count", "frames or transactions", "Frames per queue (stream) or transactions per flow (rr), when fixed", |r| r.params.count.map(|c| c as f64), |r| r.params.count.map(|c| c as f64)),
    stream!("params.frame_size", "bytes", "Frame size, FCS included", |r| Some(r.params.frame_size as f64)),
    stream!("params.rate_pps", "frames/s", "Rate per queue, when paced", |r| r.params.rate_pps),
    stream!("params.batch", "frames", "Batch size", |r| Some(r.params.batch as f64)),
    stream!("params.ring", "descriptors", "TX ring size", |r| Some(f64::from(r.params.ring))),
    stream!("params.rx_ring", "descriptors", "RX ring size", |r| Some(f64::from(r.params.rx_ring))),
    stream!("params.port", "port", "UDP destination port", |r| Some(f64::from(r.params.port))),
    rr!("params.request", "bytes", "Request size", |r| Some(r.params.request as f64)),
    rr!("params.response", "bytes", "Response size", |r| Some(r.params.response as f64)),
    rr!("params.concurrency", "transactions", "Transactions in flight per flow", |r| Some(f64::from(r.params.concurrency))),
    rr!("params.flows", "flows", "Flows", |r| Some(f64::from(r.params.flows))),
    rr!("params.timeout_ms", "ms", "Transaction timeout", |r| Some(r.params.timeout_ms)),
];

/// The figures of the list, in its order.
pub fn figures() -> impl Iterator<Item = &'static Figure> {
    SENDER.iter().chain(&RECEIVER).chain(FIGURES)
}

/// /metrics: whether a run is going (gauge; labels test, role).
pub const RUN_ACTIVE: (&str, &str) = (
    "linerate_run_active",
    "Whether a run is going on this agent (labels: test, role)",
);
/// /metrics: the XSK_EVENTS of each worker (label event).
pub const XSK_FAMILY: (&str, &str) = (
    "linerate_xsk_events",
    "AF_XDP socket statistics per worker (XDP_STATISTICS; known once the worker ended)",
);
/// /metrics: the STEERING counters (label action).
pub const STEERING_FAMILY: (&str, &str) = (
    "linerate_xdp_frames",
    "Frames the steering program handled, by action",
);
/// /metrics: the last run's latency by quantile (label quantile: 0 is
/// the shortest, 1 the longest; mean with label quantile="mean").
pub const LATENCY_FAMILY: (&str, &str) = (
    "linerate_latency_seconds",
    "Latency of the last run once it ended: a stream's one-way latency of every received frame, rr's response time (label quantile; \"mean\": the mean)",
);
/// /metrics: every core's CPU time by mode since boot (labels core, mode).
pub const CPU_FAMILY: (&str, &str) = (
    "linerate_cpu_seconds",
    "CPU time per core and mode since boot (/proc/stat)",
);

/// The tests a metric is measured by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tests {
    /// `linerate stream`.
    pub stream: bool,
    /// `linerate rr`.
    pub rr: bool,
}

impl Tests {
    const BOTH: Self = Self {
        stream: true,
        rr: true,
    };

    /// Whether results of `test` ("stream", "rr") have it.
    pub fn has(&self, test: &str) -> bool {
        match test {
            "stream" => self.stream,
            "rr" => self.rr,
            _ => false,
        }
    }

    #[cfg(test)]
    fn describe(&self) -> &'static str {
        match (self.stream, self.rr) {
            (true, true) => "stream, rr",
            (true, false) => "stream",
            _ => "rr",
        }
    }
}

impl Read {
    fn tests(&self) -> Tests {
        match self {
            Self::Stream(_) => Tests {
                stream: true,
                rr: false,
            },
            Self::Rr(_) => Tests {
                stream: false,
                rr: true,
            },
            Self::Both(..) => Tests::BOTH,
        }
    }
}

/// Where the steering counters of a result are: a stream's one program,
/// or an rr run's client and responder sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SteeringAt {
    /// `xdp.NAME` of a stream.
    Stream,
    /// `xdp.client.NAME` of rr.
    Client,
    /// `xdp.responder.NAME` of rr.
    Responder,
}

/// A metric of the list, found by its name.
#[derive(Clone, Copy)]
pub enum Metric {
    /// A figure.
    Figure(&'static Figure),
    /// `counters.SIDE.NAME` (whole run, summed over the side's workers) or
    /// `counters.SIDE.NAME_per_s` (over the window).
    Worker {
        /// The counter.
        counter: &'static Counter<CounterSnapshot>,
        /// Whose workers: tx (senders, rr clients) or rx.
        side: Host,
        /// Per second over the window.
        per_s: bool,
    },
    /// `frames.NAME` of a stream: a counter of refused frames
    /// ([`Counter::refused`]) summed over the receivers, whole run.
    Refused(&'static Counter<CounterSnapshot>),
    /// `xsk.SIDE.NAME`: summed over the side's workers.
    Xsk {
        /// The statistic.
        counter: &'static Counter<XskStats>,
        /// Whose workers.
        side: Host,
    },
    /// `xdp.NAME`, `xdp.client.NAME`, `xdp.responder.NAME`.
    Steering {
        /// The counter.
        counter: &'static Counter<SteerStats>,
        /// Which program's.
        at: SteeringAt,
    },
    /// `interfaces.SIDE.NAME`.
    Interface {
        /// The counter.
        counter: &'static Counter<IfCounters>,
        /// Which interface: the sending or the receiving one.
        side: Host,
    },
}

#[cfg(test)]
fn side_name(h: Host) -> &'static str {
    match h {
        Host::Tx => "tx",
        Host::Rx => "rx",
    }
}

fn side_named(s: &str) -> Option<Host> {
    match s {
        "tx" => Some(Host::Tx),
        "rx" => Some(Host::Rx),
        _ => None,
    }
}

fn in_list<T>(list: &'static [Counter<T>], name: &str) -> Option<&'static Counter<T>> {
    list.iter().find(|c| c.name == name)
}

/// Sums a field over the workers of `side` (None when it has none).
fn over_workers(
    r: &RunResult,
    side: Host,
    read: impl Fn(&super::parts::WorkerReport) -> u64,
) -> Option<u64> {
    let workers = match r {
        RunResult::Stream(s) => &s.workers,
        RunResult::Rr(s) => &s.workers,
    };
    let mine: Vec<_> = workers.iter().filter(|w| w.side() == side).collect();
    (!mine.is_empty()).then(|| mine.iter().map(|w| read(w)).sum())
}

impl Metric {
    /// The metric called `name`, if the list has it.
    pub fn find(name: &str) -> Option<Self> {
        if let Some(f) = figures().find(|f| f.name == name) {
            return Some(Self::Figure(f));
        }
        let parts: Vec<&str> = name.split('.').collect();
        match parts.as_slice() {
            ["counters", side, field] => {
                let side = side_named(side)?;
                match field
                    .strip_suffix("_per_s")
                    .and_then(|f| in_list(WORKER_COUNTERS, f))
                {
                    Some(counter) => Some(Self::Worker {
                        counter,
                        side,
                        per_s: true,
                    }),
                    None => Some(Self::Worker {
                        counter: in_list(WORKER_COUNTERS, field)?,
                        side,
                        per_s: false,
                    }),
                }
            }
            ["frames", field] => refused_counters()
                .find(|c| c.name == *field)
                .map(Self::Refused),
            ["xsk", side, field] => Some(Self::Xsk {
                counter: in_list(XSK_EVENTS, field)?,
                side: side_named(side)?,
            }),
            ["xdp", field] => Some(Self::Steering {
                counter: in_list(STEERING, field)?,
                at: SteeringAt::Stream,
            }),
            ["xdp", at, field] => Some(Self::Steering {
                counter: in_list(STEERING, field)?,
                at: match *at {
                    "client" => SteeringAt::Client,
                    "responder" => SteeringAt::Responder,
                    _ => return None,
                },
            }),
            ["interfaces", side, field] => Some(Self::Interface {
                counter: in_list(INTERFACE, field)?,
                side: side_named(side)?,
            }),
            _ => None,
        }
    }

    /// Its name.
    #[cfg(test)]
    pub fn name(&self) -> String {
        match self {
            Self::Figure(f) => f.name.to_string(),
            Self::Worker {
                counter,
                side,
                per_s,
            } => format!(
                "counters.{}.{}{}",
                side_name(*side),
                counter.name,
                if *per_s { "_per_s" } else { "" }
            ),
            Self::Refused(counter) => format!("frames.{}", counter.name),
            Self::Xsk { counter, side } => format!("xsk.{}.{}", side_name(*side), counter.name),
            Self::Steering { counter, at } => match at {
                SteeringAt::Stream => format!("xdp.{}", counter.name),
                SteeringAt::Client => format!("xdp.client.{}", counter.name),
                SteeringAt::Responder => format!("xdp.responder.{}", counter.name),
            },
            Self::Interface { counter, side } => {
                format!("interfaces.{}.{}", side_name(*side), counter.name)
            }
        }
    }

    /// The tests whose results have it.
    pub fn tests(&self) -> Tests {
        match self {
            Self::Figure(f) => f.read.tests(),
            Self::Steering {
                at: SteeringAt::Stream,
                ..
            } => Tests {
                stream: true,
                rr: false,
            },
            Self::Steering { .. } => Tests {
                stream: false,
                rr: true,
            },
            Self::Refused(_) => Tests {
                stream: true,
                rr: false,
            },
            _ => Tests::BOTH,
        }
    }

    /// Its value in `r` (None: not measured there).
    pub fn value(&self, r: &RunResult) -> Option<f64> {
        match (self, r) {
            (Self::Figure(f), _) => match (&f.read, r) {
                (Read::Stream(get) | Read::Both(get, _), RunResult::Stream(s)) => get(s),
                (Read::Rr(get) | Read::Both(_, get), RunResult::Rr(s)) => get(s),
                _ => None,
            },
            (
                Self::Worker {
                    counter,
                    side,
                    per_s: false,
                },
                _,
            ) => over_workers(r, *side, |w| (counter.read)(&w.total)).map(|v| v as f64),
            (
                Self::Worker {
                    counter,
                    side,
                    per_s: true,
                },
                _,
            ) => {
                let window_s = match r {
                    RunResult::Stream(s) if *side == Host::Rx => {
                        s.receiver_window_s.unwrap_or(s.window_s)
                    }
                    RunResult::Stream(s) => s.window_s,
                    RunResult::Rr(s) => s.window_s,
                };
                over_workers(r, *side, |w| (counter.read)(&w.window))
                    .map(|v| super::parts::per_second(v, window_s))
            }
            (Self::Refused(counter), RunResult::Stream(s)) => {
                Some((counter.read)(&s.frames.refused) as f64)
            }
            (Self::Refused(_), RunResult::Rr(_)) => None,
            (Self::Xsk { counter, side }, _) => {
                over_workers(r, *side, |w| (counter.read)(&w.xsk)).map(|v| v as f64)
            }
            (Self::Steering { counter, at }, _) => {
                let stats = match (at, r) {
                    (SteeringAt::Stream, RunResult::Stream(s)) => &s.xdp,
                    (SteeringAt::Client, RunResult::Rr(s)) => &s.xdp.client,
                    (SteeringAt::Responder, RunResult::Rr(s)) => &s.xdp.responder,
                    _ => return None,
                };
                Some((counter.read)(stats) as f64)
            }
            (Self::Interface { counter, side }, _) => {
                let i = match r {
                    RunResult::Stream(s) => &s.interfaces,
                    RunResult::Rr(s) => &s.interfaces,
                };
                let c = match side {
                    Host::Tx => &i.tx,
                    Host::Rx => &i.rx,
                };
                Some((counter.read)(c) as f64)
            }
        }
    }
}

/// Every metric of the list, in its order.
#[cfg(test)]
pub fn all() -> Vec<Metric> {
    let mut out: Vec<Metric> = figures().map(Metric::Figure).collect();
    out.extend(refused_counters().map(Metric::Refused));
    for side in [Host::Tx, Host::Rx] {
        for per_s in [false, true] {
            out.extend(WORKER_COUNTERS.iter().map(|counter| Metric::Worker {
                counter,
                side,
                per_s,
            }));
        }
    }
    for side in [Host::Tx, Host::Rx] {
        out.extend(
            XSK_EVENTS
                .iter()
                .map(|counter| Metric::Xsk { counter, side }),
        );
    }
    for at in [
        SteeringAt::Stream,
        SteeringAt::Client,
        SteeringAt::Responder,
    ] {
        out.extend(
            STEERING
                .iter()
                .map(|counter| Metric::Steering { counter, at }),
        );
    }
    for side in [Host::Tx, Host::Rx] {
        out.extend(
            INTERFACE
                .iter()
                .map(|counter| Metric::Interface { counter, side }),
        );
    }
    out
}

/// An unknown metric's error: the valid names (the counters' families by
/// their pattern).
pub fn unknown(name: &str) -> String {
    let names: Vec<&str> = figures().map(|f| f.name).collect();
    fn names_of<T>(list: &[Counter<T>]) -> String {
        list.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
    }
    let refused: Vec<String> = refused_counters()
        .map(|c| format!("frames.{}", c.name))
        .collect();
    format!(
        "{name:?} is not a metric linerate knows. Figures: {}, {}. Counters: counters.tx.NAME and counters.rx.NAME (whole run; NAME_per_s over the window) for NAME in {}; xsk.tx.NAME and xsk.rx.NAME for NAME in {}; xdp.NAME (stream), xdp.client.NAME and xdp.responder.NAME (rr) for NAME in {}; interfaces.tx.NAME and interfaces.rx.NAME for NAME in {}. See docs/metrics.md",
        names.join(", "),
        refused.join(", "),
        names_of(WORKER_COUNTERS),
        names_of(XSK_EVENTS),
        names_of(STEERING),
        names_of(INTERFACE),
    )
}

#[cfg(test)]
fn counter_table<T>(o: &mut String, head: &str, list: &[Counter<T>], exported: bool) {
    use std::fmt::Write as _;
    if exported {
        let _ = writeln!(
            o,
            "| {head} | unit | on /metrics | meaning |\n|---|---|---|---|"
        );
    } else {
        let _ = writeln!(o, "| {head} | unit | meaning |\n|---|---|---|");
    }
    for c in list {
        if exported {
            let _ = writeln!(
                o,
                "| `{}` | {} | `{}_total` | {} |",
                c.name, c.unit, c.exported, c.about
            );
        } else {
            let _ = writeln!(o, "| `{}` | {} | {} |", c.name, c.unit, c.about);
        }
    }
    o.push('\n');
}

/// docs/metrics.md, generated from the list (by its test).
#[cfg(test)]
pub fn markdown() -> String {
    use std::fmt::Write as _;
    let mut o = String::from(
        "# Metrics\n\n\
         <!-- Generated from control/src/results/metrics.rs: change the list there, then\n\
         `LINERATE_WRITE_DOCS=1 cargo test -p linerate metrics_page` rewrites this page. -->\n\n\
         Every figure a result holds and every counter linerate keeps, by the name a sweep file\n\
         uses (`metrics` of a `[[table]]`, `y` of a `[[figure]]`, `ours` of a `[[reference]]`,\n\
         `metric` and `cpu` of a `[[goal]]`): the dotted path of the field in the `--json`\n\
         result. A sweep file naming anything else is refused before it runs. MB = 10^6 bytes.\n\n\
         ## Figures\n\n\
         | name | unit | tests | meaning |\n|---|---|---|---|\n",
    );
    for f in figures() {
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} |",
            f.name,
            f.unit,
            f.read.tests().describe(),
            f.about
        );
    }
    for c in refused_counters() {
        let _ = writeln!(
            o,
            "| `frames.{}` | {} | stream | {}: the receivers' whole run (`counters.rx.{}`) |",
            c.name, c.unit, c.about, c.name
        );
    }
    o.push_str(
        "\n## Counters\n\n\
         ### Worker counters\n\n\
         Every worker (sender, receiver, rr client, responder) keeps these; every result\n\
         lists them per worker (`workers[].window`, `workers[].total`). In sweep files:\n\
         `counters.tx.NAME` and `counters.rx.NAME`, the whole run summed over the senders'\n\
         (rr: clients') or the receivers' (responders') workers, and `counters.tx.NAME_per_s`,\n\
         `counters.rx.NAME_per_s` over the window. An agent's /metrics exports them per worker\n\
         (labels `role`, `queue`), live during a run and the run's totals after it.\n\n",
    );
    counter_table(&mut o, "NAME", WORKER_COUNTERS, true);
    let _ = write!(
        o,
        "### AF_XDP socket statistics\n\n\
         XDP_STATISTICS of each worker's socket (`workers[].xsk`), known once it ended. In sweep\n\
         files: `xsk.tx.NAME`, `xsk.rx.NAME`, summed over the side's workers. On /metrics:\n\
         `{}_total` per worker, label `event`.\n\n",
        XSK_FAMILY.0
    );
    counter_table(&mut o, "NAME", XSK_EVENTS, false);
    let _ = write!(
        o,
        "### Steering program\n\n\
         The XDP program's counters over the run: a stream's `xdp.NAME` (on the receiving\n\
         interface), rr's `xdp.client.NAME` and `xdp.responder.NAME`. On /metrics:\n\
         `{}_total`, label `action`.\n\n",
        STEERING_FAMILY.0
    );
    counter_table(&mut o, "NAME", STEERING, false);
    o.push_str(
        "### Interfaces\n\n\
         The interfaces' own counters over the run (`ip -s link`): `interfaces.tx.NAME` (the\n\
         sending interface), `interfaces.rx.NAME` (the receiving one).\n\n",
    );
    counter_table(&mut o, "NAME", INTERFACE, false);
    let _ = write!(
        o,
        "## /metrics\n\n\
         An agent's `GET /metrics` (OpenMetrics text) holds:\n\n\
         | family | labels | meaning |\n|---|---|---|\n\
         | `{}` | test, role | {} |\n\
         | `linerate_worker_*_total` | role, queue | the worker counters above |\n\
         | `{}_total` | role, queue, event | {} |\n\
         | `{}_total` | action | {} |\n\
         | `{}_total` | core, mode | {} |\n\
         | `{}` | quantile | {} |\n",
        RUN_ACTIVE.0,
        RUN_ACTIVE.1,
        XSK_FAMILY.0,
        XSK_FAMILY.1,
        STEERING_FAMILY.0,
        STEERING_FAMILY.1,
        CPU_FAMILY.0,
        CPU_FAMILY.1,
        LATENCY_FAMILY.0,
        LATENCY_FAMILY.1,
    );
    o
}

#[cfg(test)]
mod tests {
    use std::{collections::HashSet, path::Path};

    use serde::{de::DeserializeOwned, Serialize};
    use serde_json::Value;

    use super::*;

    fn fixtures() -> Vec<(String, Value, RunResult)> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/results");
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let text = std::fs::read_to_string(&p).unwrap();
            let v: Value = serde_json::from_str(&text).unwrap();
            let r: RunResult = serde_json::from_value(v.clone()).unwrap();
            out.push((p.display().to_string(), v, r));
        }
        assert!(out.len() >= 8);
        out
    }

    #[test]
    fn names_are_unique_and_found() {
        let all = all();
        let names: HashSet<String> = all.iter().map(Metric::name).collect();
        assert_eq!(names.len(), all.len(), "a name twice");
        for m in &all {
            assert_eq!(Metric::find(&m.name()).map(|f| f.name()), Some(m.name()));
        }
        for bad in [
            "receiver.foo",
            "counters.tx",
            "counters.up.frames",
            "xdp.client",
            "xdp.x.seen",
            "",
        ] {
            assert!(Metric::find(bad).is_none(), "{bad}");
        }
        let e = unknown("receiver.foo");
        assert!(
            e.contains("receiver.message_mb_s") && e.contains("idle_loops"),
            "{e}"
        );
    }

    /// A figure's name is the dotted path of its field: read from the
    /// typed result, it is the value at that path in the JSON.
    #[test]
    fn figures_read_the_field_their_name_says() {
        let mut seen = HashSet::new();
        for (file, v, r) in fixtures() {
            for m in all() {
                let name = m.name();
                let got = m.value(&r);
                if !m.tests().has(r.test()) {
                    assert_eq!(got, None, "{name} in {file}");
                    continue;
                }
                if name.starts_with("derived.")
                    || name.starts_with("counters.")
                    || name.starts_with("xsk.")
                {
                    continue;
                }
                let want = v
                    .pointer(&format!("/{}", name.replace('.', "/")))
                    .and_then(Value::as_f64)
                    // A counter of refused frames missing from a result
                    // written before it existed reads as 0.
                    .or_else(|| matches!(m, Metric::Refused(_)).then_some(0.0));
                assert_eq!(got, want, "{name} in {file}");
                seen.insert(name);
            }
        }
        for f in figures().filter(|f| !f.name.starts_with("derived.")) {
            assert!(seen.contains(f.name), "{} read from no fixture", f.name);
        }
    }

    #[test]
    fn counters_sum_the_side_workers() {
        for (file, v, r) in fixtures() {
            let workers = v["workers"].as_array().unwrap();
            for side in ["tx", "rx"] {
                let mine: Vec<&Value> = workers
                    .iter()
                    .filter(|w| {
                        super::super::parts::side_of(w["role"].as_str().unwrap())
                            == side_named(side).unwrap()
                    })
                    .collect();
                let sum = |k: &str, f: &str| {
                    mine.iter().map(|w| w[k][f].as_u64().unwrap()).sum::<u64>() as f64
                };
                let frames = Metric::find(&format!("counters.{side}.frames"))
                    .unwrap()
                    .value(&r);
                let ring = Metric::find(&format!("xsk.{side}.tx_ring_empty"))
                    .unwrap()
                    .value(&r);
                if mine.is_empty() {
                    assert_eq!((frames, ring), (None, None), "{file}");
                } else {
                    assert_eq!(frames, Some(sum("total", "frames")), "{file}");
                    assert_eq!(ring, Some(sum("xsk", "tx_ring_empty")), "{file}");
                    let per_s = Metric::find(&format!("counters.{side}.frames_per_s"))
                        .unwrap()
                        .value(&r);
                    assert!(per_s.unwrap() > 0.0, "{file}");
                }
            }
        }
    }

    #[test]
    fn derived_figures() {
        let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => (a - b).abs() <= 1e-12 * b.abs(),
            (a, b) => a == b,
        };
        for (file, v, r) in fixtures() {
            let us = Metric::find("derived.us_per_message").unwrap().value(&r);
            match r.test() {
                "stream" => {
                    let rate = v["receiver"]["messages_per_s"].as_f64();
                    assert!(close(us, rate.map(|x| 1e6 / x)), "{file}");
                }
                _ => {
                    let p = &v["params"];
                    let tps = v["transactions"]["per_s"].as_f64().unwrap();
                    let in_flight =
                        p["concurrency"].as_f64().unwrap() * p["flows"].as_f64().unwrap();
                    assert!(close(us, Some(1e6 * in_flight / tps)), "{file}");
                    let mb = (p["request"].as_f64().unwrap() + p["response"].as_f64().unwrap())
                        * tps
                        / 1e6;
                    let got = Metric::find("derived.rr_mb_s").unwrap().value(&r).unwrap();
                    assert!((got - mb).abs() < 1e-9, "{file}");
                }
            }
        }
    }

    /// Every field of a counter family is in its list, read from its own
    /// field: a counter added to the snapshot without an entry fails here.
    fn family_is_complete<T: Serialize + DeserializeOwned + Default>(list: &[Counter<T>]) {
        let keys: Vec<String> = match serde_json::to_value(T::default()).unwrap() {
            Value::Object(m) => m.keys().cloned().collect(),
            _ => unreachable!(),
        };
        let listed: HashSet<&str> = list.iter().map(|c| c.name).collect();
        for k in &keys {
            assert!(
                listed.contains(k.as_str()),
                "{k} has no entry in the metric list"
            );
        }
        assert_eq!(listed.len(), keys.len());
        let numbered: serde_json::Map<String, Value> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), Value::from(i as u64 + 1)))
            .collect();
        let snapshot: T = serde_json::from_value(Value::Object(numbered)).unwrap();
        for c in list {
            let i = keys.iter().position(|k| k == c.name).unwrap() as u64 + 1;
            assert_eq!((c.read)(&snapshot), i, "{} reads another field", c.name);
        }
    }

    #[test]
    fn counter_families_are_complete() {
        family_is_complete(WORKER_COUNTERS);
        family_is_complete(XSK_EVENTS);
        family_is_complete(STEERING);
        family_is_complete(INTERFACE);
        let exported: HashSet<&str> = WORKER_COUNTERS.iter().map(|c| c.exported).collect();
        assert_eq!(exported.len(), WORKER_COUNTERS.len());
        assert!(WORKER_COUNTERS
            .iter()
            .all(|c| c.exported.starts_with("linerate_worker_")));
    }

    /// docs/metrics.md is the list's page.
    #[test]
    fn metrics_page() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/metrics.md");
        let want = markdown();
        if std::env::var_os("LINERATE_WRITE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let got = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            got == want,
            "docs/metrics.md is not the metric list's page: run `LINERATE_WRITE_DOCS=1 cargo test -p linerate metrics_page`"
        );
        for m in all().iter().filter(|m| matches!(m, Metric::Figure(_))) {
            assert!(got.contains(&format!("`{}`", m.name())), "{}", m.name());
        }
    }
}
