//! The lists: every figure of a result and every counter a worker, the
//! steering program, an AF_XDP socket or an interface keeps, with its
//! unit, meaning and how it is read.

use super::super::{rr::RrResult, stream::StreamResult};
use crate::system::IfCounters;
/// A counter of a family: a field of its snapshot, declared with the
/// worker counters in `datapath::stats` (that family is declared there).
use linerate_counters::stats::Counter;
use linerate_counters::steer::SteerStats;
use linerate_counters::{socket::XskStats, stats::CounterSnapshot};

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
pub(super) fn refused_counters() -> impl Iterator<Item = &'static Counter<CounterSnapshot>> {
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
                concat!(
                    "linerate's own time on the ",
                    $who,
                    " cores, mean percent per core: its threads' run time plus the network softirq work there (`cpu_source` \"own\"); results before own time, or without the kernel's per-thread accounting, hold the busy share (`cpu_source` \"busy\")"
                ),
                |r| Some(r.$side.cpu.cpu_pct)
            ),
            stream!(
                concat!(stringify!($side), ".cpu.busy_pct"),
                "%",
                concat!(
                    "Busy percent of the ",
                    $who,
                    " cores from /proc/stat: whatever ran there, steal included (what `cpu_pct` was before own time)"
                ),
                |r| Some(r.$side.cpu.busy())
            ),
            stream!(
                concat!(stringify!($side), ".cpu.interference_pct"),
                "%",
                concat!(
                    "Other tasks' time on the ",
                    $who,
                    " cores, mean percent per core: busy less linerate's own less steal, never added in"
                ),
                |r| r.$side.cpu.interference_pct
            ),
            stream!(
                concat!(stringify!($side), ".cpu.steal_pct"),
                "%",
                concat!(
                    "Time the hypervisor took from the ",
                    $who,
                    " cores, mean percent per core"
                ),
                |r| r.$side.cpu.steal_pct
            ),
            stream!(
                concat!(stringify!($side), ".cpu.host_service_demand_ms_per_mb"),
                "ms/MB",
                concat!(
                    "The service demand of `busy_pct`: the ",
                    $who,
                    " cores' busy share per MB counted (what `service_demand_ms_per_mb` was before own time)"
                ),
                |r| r.$side.cpu.host_service_demand()
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

pub(super) const SENDER: [Figure; 15] = side!(sender, "sender's");

pub(super) const RECEIVER: [Figure; 15] = side!(receiver, "receiver's");

/// Every other figure.
pub(super) const FIGURES: &[Figure] = &[
    // Stream: whole-run accounting.
    stream!("frames.sent", "frames", "Frames the senders completed over the whole run", |r| Some(r.frames.sent as f64)),
    stream!("frames.received", "frames", "Linerate frames received over the whole run", |r| Some(r.frames.received as f64)),
    stream!("frames.lost", "frames", "Sent minus received", |r| Some(r.frames.lost as f64)),
    stream!("frames.loss_pct", "%", "Lost in percent of sent; in a counted run (--count), frames dropped at the sender count as lost: (lost + dropped_at_sender) / (sent + dropped_at_sender)", |r| Some(r.frames.loss_pct)),
    stream!("frames.seq_gaps", "frames", "Sequence gaps the receivers saw", |r| Some(r.frames.seq_gaps as f64)),
    stream!("frames.reordered", "frames", "Frames that came after a later one", |r| Some(r.frames.reordered as f64)),
    stream!("frames.duplicates", "frames", "Frames received twice", |r| Some(r.frames.duplicates as f64)),
    stream!("frames.injected", "frames", "Frames dropped on purpose on the way (--inject-loss: by the XDP steering program, or on the loopback engine's link), counted in frames.lost; none without --inject-loss", |r| r.frames.injected.map(|n| n as f64)),
    stream!("frames.dropped_at_sender", "frames", "Frames a sender without backpressure (the generator) handed to its link that the link dropped (the peer's ring full): neither sent nor lost", |r| Some(r.frames.dropped_at_sender as f64)),
    stream!("frames.resent", "frames", "Of frames.dropped_at_sender, those a counted generator flow alone on its link sent again (--count: its link's drops, read from the interface, sent once more so that the count arrives)", |r| Some(r.frames.resent as f64)),
    stream!("receiver.softirq_ns_per_frame", "ns", "The kernel's receive work (NET_RX softirq: the XDP program, the copy into the UMEM) per frame received in the window, over the receiving host's cores that ran it: the part of a frame's cost that moves from run to run on a VM whose neighbours share its memory", |r| r.receive_softirq().map(|(ns, _)| ns)),
    stream!("frames.slipped", "frames", "Frames (kernel TCP: messages) the paced senders let slip after stalls rather than send back to back: each catches up at most 1 ms of its rate at once, and its schedule runs that much later; 0 unpaced", |r| Some(r.frames.slipped as f64)),
    stream!("frames.unfinished", "frames", "Frames still in the senders' kernel queue when they gave up", |r| Some(r.frames.unfinished as f64)),
    stream!("frames.messages.message_bytes", "bytes", "Bytes per message (message streams)", |r| r.frames.messages.as_ref().map(|m| m.message_bytes as f64)),
    stream!("frames.messages.frames_per_message", "frames", "Frames each message is cut into", |r| r.frames.messages.as_ref().map(|m| m.frames_per_message as f64)),
    stream!("frames.messages.sent", "messages", "Messages whose every frame the senders completed", |r| r.frames.messages.as_ref().map(|m| m.sent as f64)),
    stream!("frames.messages.received", "messages", "Messages received whole", |r| r.frames.messages.as_ref().map(|m| m.received as f64)),
    stream!("frames.messages.lost", "messages", "Messages sent minus received", |r| r.frames.messages.as_ref().map(|m| m.lost as f64)),
    stream!("frames.messages.loss_pct", "%", "Messages lost in percent of sent", |r| r.frames.messages.as_ref().map(|m| m.loss_pct)),
    stream!("frames.messages.receiver_counted_lost", "messages", "Messages the receivers found incomplete or missing", |r| r.frames.messages.as_ref().map(|m| m.receiver_counted_lost as f64)),
    // Rr: transactions and response times.
    rr!("transactions.completed", "transactions", "Transactions completed in the window, one response time each", |r| Some(r.transactions.completed as f64)),
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
    // The noise floor between the run's cores, just before its window.
    both!("noise.spin_p50_us", "us", "Noise floor: one-way hand-off between the run's sending and receiving cores, both spinning, median (measured just before the window; none with --no-floor)", |r| r.common.noise.as_ref().and_then(crate::noise::Floor::measured).map(|n| n.spin_p50_us), |r| r.common.noise.as_ref().and_then(crate::noise::Floor::measured).map(|n| n.spin_p50_us)),
    both!("noise.spin_p99_us", "us", "Noise floor: the spinning hand-off's 99th percentile (the median of ten slices'), the least a spinning receiver's p99 can be", |r| r.common.noise.as_ref().and_then(crate::noise::Floor::measured).map(|n| n.spin_p99_us), |r| r.common.noise.as_ref().and_then(crate::noise::Floor::measured).map(|n| n.spin_p99_us)),
    both!("noise.wake_p50_us", "us", "Noise floor: one-way hand-off to a reader asleep until woken (a futex wake-up), median", |r| r.common.noise.as_ref().and_then(crate::noise::Floor::measured).map(|n| n.wake_p50_us), |r| r.common.noise.as_ref().and_then(crate::noise::Floor::measured).map(|n| n.wake_p50_us)),
    both!("noise.wake_p99_us", "us", "Noise floor: the woken hand-off's 99th percentile (the median of ten slices'), the least a sleeping receiver's p99 can be", |r| r.common.noise.as_ref().and_then(crate::noise::Floor::measured).map(|n| n.wake_p99_us), |r| r.common.noise.as_ref().and_then(crate::noise::Floor::measured).map(|n| n.wake_p99_us)),
    both!("noise.gap_pct", "%", "Noise floor: percent of the time a spinning loop on the run's cores lost in gaps over 1 us (the larger core's; as sysjitter and osnoise count it)", |r| r.common.noise.as_ref().and_then(crate::noise::Floor::measured).map(|n| n.gap_pct), |r| r.common.noise.as_ref().and_then(crate::noise::Floor::measured).map(|n| n.gap_pct)),
    // CPU.
    both!("cpu.total.cpu_pct", "%", "linerate's own time on every core (of both hosts, across two), mean percent per core; the busy share where own time was not measured (`cpu_source`)", |r| Some(r.cpu.total.cpu_pct), |r| Some(r.cpu.total.cpu.cpu_pct)),
    both!("cpu.total.busy_pct", "%", "Busy percent of every core from /proc/stat (of both hosts, across two): whatever ran there, steal included", |r| Some(r.cpu.total.busy()), |r| Some(r.cpu.total.cpu.busy())),
    both!("cpu.total.interference_pct", "%", "Other tasks' time on every core, mean percent per core (busy less linerate's own less steal)", |r| r.cpu.total.interference_pct, |r| r.cpu.total.cpu.interference_pct),
    both!("cpu.total.service_demand_ms_per_mb", "ms/MB", "CPU of every core per MB counted: received payload (message) MB of a stream, request and response MB of rr", |r| r.cpu.total.service_demand_ms_per_mb, |r| r.cpu.total.cpu.service_demand_ms_per_mb),
    rr!("cpu.total.us_per_transaction", "us", "CPU of every core per transaction, as netperf's RR service demand", |r| r.cpu.total.us_per_transaction),
    rr!("cpu.client.cpu_pct", "%", "linerate's own time on the client cores, mean percent per core; the busy share where own time was not measured (`cpu_source`)", |r| Some(r.cpu.client.cpu.cpu_pct)),
    rr!("cpu.client.busy_pct", "%", "Busy percent of the client cores from /proc/stat: whatever ran there, steal included", |r| Some(r.cpu.client.cpu.busy())),
    rr!("cpu.client.interference_pct", "%", "Other tasks' time on the client cores, mean percent per core", |r| r.cpu.client.cpu.interference_pct),
    rr!("cpu.client.service_demand_ms_per_mb", "ms/MB", "CPU of the client cores per MB of requests and responses", |r| r.cpu.client.cpu.service_demand_ms_per_mb),
    rr!("cpu.client.us_per_transaction", "us", "CPU of the client cores per transaction", |r| r.cpu.client.us_per_transaction),
    rr!("cpu.responder.cpu_pct", "%", "linerate's own time on the responder cores, mean percent per core; the busy share where own time was not measured (`cpu_source`)", |r| Some(r.cpu.responder.cpu.cpu_pct)),
    rr!("cpu.responder.busy_pct", "%", "Busy percent of the responder cores from /proc/stat: whatever ran there, steal included", |r| Some(r.cpu.responder.cpu.busy())),
    rr!("cpu.responder.interference_pct", "%", "Other tasks' time on the responder cores, mean percent per core", |r| r.cpu.responder.cpu.interference_pct),
    rr!("cpu.responder.service_demand_ms_per_mb", "ms/MB", "CPU of the responder cores per MB of requests and responses", |r| r.cpu.responder.cpu.service_demand_ms_per_mb),
    rr!("cpu.responder.us_per_transaction", "us", "CPU of the responder cores per transaction", |r| r.cpu.responder.us_per_transaction),
    both!("cpu.hosts.tx.cpu_pct", "%", "Two hosts: linerate's own time on the sending (client's) host's cores (the busy share where not measured)", |r| r.cpu.hosts.as_ref().map(|h| h.tx.cpu_pct), |r| r.cpu.hosts.as_ref().map(|h| h.tx.cpu_pct)),
    both!("cpu.hosts.tx.service_demand_ms_per_mb", "ms/MB", "Two hosts: CPU of the sending (client's) host per MB counted", |r| r.cpu.hosts.as_ref().and_then(|h| h.tx.service_demand_ms_per_mb), |r| r.cpu.hosts.as_ref().and_then(|h| h.tx.service_demand_ms_per_mb)),
    both!("cpu.hosts.rx.cpu_pct", "%", "Two hosts: linerate's own time on the receiving (responder's) host's cores (the busy share where not measured)", |r| r.cpu.hosts.as_ref().map(|h| h.rx.cpu_pct), |r| r.cpu.hosts.as_ref().map(|h| h.rx.cpu_pct)),
    both!("cpu.hosts.rx.service_demand_ms_per_mb", "ms/MB", "Two hosts: CPU of the receiving (responder's) host per MB counted", |r| r.cpu.hosts.as_ref().and_then(|h| h.rx.service_demand_ms_per_mb), |r| r.cpu.hosts.as_ref().and_then(|h| h.rx.service_demand_ms_per_mb)),
    // Derived.
    both!("derived.us_per_message", "us", "Time per message: one over messages received per second; rr: transactions in flight over transactions per second (000's figures 7-10, the overhead fit)", |r| r.time_per_message_s().map(|t| t * 1e6), |r| r.time_per_message_s().map(|t| t * 1e6)),
    rr!("derived.rr_mb_s", "MB/s", "Requests and responses, 10^6 bytes per second (002's transfer rate)", |r| Some(r.mb_s())),
    // The window.
    both!("window_s", "s", "Length of the measured window (two hosts: the sending host's)", |r| Some(r.common.window_s), |r| Some(r.common.window_s)),
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

/// /metrics: whether a run is going (gauge; label test, with the run's).
pub const RUN_ACTIVE: (&str, &str) = (
    "linerate_run_active",
    "Whether the agent's last run is going (label test: stream or rr)",
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
    pub(super) const BOTH: Self = Self {
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
    pub(super) fn describe(&self) -> &'static str {
        match (self.stream, self.rr) {
            (true, true) => "stream, rr",
            (true, false) => "stream",
            _ => "rr",
        }
    }
}

impl Read {
    pub(super) fn tests(&self) -> Tests {
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
