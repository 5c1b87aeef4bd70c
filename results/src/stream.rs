//! The figures of one stream run, as printed and as JSON (written by
//! `--json`, read back by the controller, a sweep and its report), and the
//! pure functions a local run and the two-host merge build them with.

use linerate_counters::{
    stats::{Counter, CounterSnapshot},
    steer::SteerStats,
    wire,
};
use serde::{Deserialize, Deserializer, Serialize};

pub use crate::parts::{InterfaceCounters, WorkerReport, BAD_CHECKSUM};
use crate::{
    envelope::Envelope,
    system::CoreUse,
    {
        latency::Latency,
        parts::{self, figures, percent, CpuFigures},
        two_host::HostsCpu,
    },
};

fn stream_test<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    parts::one_of(d, "test", &["stream"])
}

/// Everything `linerate stream` reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamResult {
    /// "stream".
    #[serde(deserialize_with = "stream_test")]
    pub test: parts::Name,
    /// What a result of either test holds (version, host, window, how the
    /// run ended, workers, interfaces, agents), its fields in this object.
    #[serde(flatten)]
    pub common: Envelope,
    /// The parameters of the run.
    pub params: Params,
    /// How the data path was set up.
    pub setup: Setup,
    /// Sender figures over the window.
    pub sender: SideFigures,
    /// Receiver figures over the window.
    pub receiver: SideFigures,
    /// Whole-run accounting of frames (warm-up and drain included).
    pub frames: FrameAccounting,
    /// CPU over the window.
    pub cpu: CpuReport,
    /// The steering program's counters over the whole run.
    pub xdp: SteerStats,
    /// One-way latency of every received frame over the whole run
    /// (receive time minus the send time in its header), merged over the
    /// receivers; none where not measured (`--rx-only`, a result written
    /// before it was, the sender's side of a two-host run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    /// Two hosts: the receiving host's window, seconds (`window_s` is the
    /// sending host's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_window_s: Option<f64>,
    /// The in-kernel generator's batches and credit (none: another sender).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<GeneratorFigures>,
}

/// How the in-kernel generator sent: its program calls (each a batch of
/// repetitions) and how long its flows waited for the receivers' credit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorFigures {
    /// Program calls in the window, all flows.
    pub calls: u64,
    /// Frames sent a call in the window.
    pub frames_per_call: f64,
    /// Milliseconds the flows waited out of credit (their windows of
    /// unacknowledged frames full), sampled each ms, whole run, all flows.
    pub credit_wait_ms: u64,
    /// That wait in percent of the flows' time over the whole run (the
    /// window and the warm-up).
    pub credit_wait_pct: f64,
}

/// Parameters, echoed as iperf3 does.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// Data path: "xdp", "udp" or "tcp".
    pub backend: String,
    /// UDP segmentation offload on sends (udp).
    pub gso: bool,
    /// UDP receive offload (udp).
    pub gro: bool,
    /// Frame size, FCS included (of a mix: the largest).
    pub frame_size: usize,
    /// The traffic mix, SIZE:WEIGHT,... (`--size imix`); absent: every
    /// frame is `frame_size`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_mix: Option<String>,
    /// Whether the test traffic was IPv6 (`--ipv6`; absent: IPv4).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ipv6: bool,
    /// MTU.
    pub mtu: u32,
    /// Queues.
    pub queues: u32,
    /// Warm-up, seconds.
    pub warmup_s: f64,
    /// Measured duration asked for, seconds.
    pub duration_s: f64,
    /// Frames per queue, when fixed.
    pub count: Option<u64>,
    /// Rate per queue, frames/s.
    pub rate_pps: Option<f64>,
    /// Sender wait mode.
    pub tx_wait: String,
    /// Receiver wait mode.
    pub rx_wait: String,
    /// Batch size.
    pub batch: usize,
    /// TX ring size.
    pub ring: u32,
    /// RX ring size.
    pub rx_ring: u32,
    /// UDP destination port.
    pub port: u16,
    /// Sender cores.
    pub tx_cores: Vec<usize>,
    /// Receiver cores.
    pub rx_cores: Vec<usize>,
    /// Sending interface.
    pub tx_iface: String,
    /// Its namespace.
    pub tx_netns: Option<String>,
    /// Receiving interface.
    pub rx_iface: String,
    /// Its namespace.
    pub rx_netns: Option<String>,
    /// The built-in lab used, if any.
    pub lab: Option<String>,
}

/// Data path set-up as it happened.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    /// Bind mode of the senders' sockets.
    pub tx_bind_mode: String,
    /// Bind mode of the receivers' sockets.
    pub rx_bind_mode: String,
    /// Why zero-copy was not used.
    pub zero_copy_refused: Option<String>,
    /// XDP attach mode ("native" or "generic").
    pub xdp_mode: String,
    /// Why native mode was not used.
    pub xdp_fallback_reason: Option<String>,
    /// UMEM descriptors per frame (more than 1: multi-buffer).
    pub descs_per_frame: usize,
    /// UMEM chunk size in bytes (AF_XDP only; 2048 when a frame fits, else 4096).
    pub umem_chunk: Option<u32>,
    /// Whether the UMEMs are on 2 MB huge pages (AF_XDP only; used when
    /// `vm.nr_hugepages` leaves enough free).
    pub umem_huge_pages: Option<bool>,
    /// UDP payload per frame.
    pub payload_per_frame: usize,
    /// NAPI kernel threads pinned (pid, core).
    pub napi_threads: Vec<(i32, usize)>,
    /// NAPI mode set for the run ("threaded", "softirq"; none: left alone).
    pub napi: Option<String>,
    /// Scheduling set on the pinned NAPI threads (`--napi-priority`,
    /// e.g. "fifo:50"; none: left as it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub napi_priority: Option<String>,
    /// Scheduling of the generator's runner threads ("other:19" beside
    /// waiting AF_XDP receivers, or `--gen-priority`; none: the sender's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gen_priority: Option<String>,
    /// Scheduling of the AF_XDP receivers (`--rx-priority`; none: the
    /// process's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_priority: Option<String>,
    /// Driver of the receiving interface (veth, ixgbe, ...), as the link reports it.
    pub driver: Option<String>,
    /// Where the workers and NAPI ran, and who chose it (none in results
    /// written before it was reported).
    #[serde(default)]
    pub placement: String,
    /// The engine that sent: "xdp" (AF_XDP sockets), "generator" (the
    /// in-kernel generator), "udp", "tcp" (empty in results written before
    /// it was reported: the backend's).
    #[serde(default)]
    pub tx_engine: String,
    /// Frames a generator flow could have sent and not yet had
    /// acknowledged by its receivers (AF_XDP receivers of the same host):
    /// the generator's backpressure. None: it sent regardless (its link
    /// drops what the peer cannot take: `frames.dropped_at_sender`), or
    /// the sender waits for room itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_window: Option<u64>,
    /// The engine that received: "xdp" (AF_XDP sockets), "xdp-only" (the
    /// XDP-only receiver), "udp", "tcp" (empty in results written before
    /// it was reported: the backend's).
    #[serde(default)]
    pub rx_engine: String,
    /// The wait modes and their kernel busy-poll settings (none in results
    /// written before they were reported).
    #[serde(default, skip_serializing_if = "crate::wait::WaitSetup::is_unset")]
    pub wait: crate::wait::WaitSetup,
    /// How much of each received frame the receivers verified
    /// (`--verify`: "off", "header", "full", "1/N": one frame in N in
    /// full, the others' header); none where no receiver of
    /// ours parses frames, and in results written before it was chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<String>,
}

/// Rates and CPU of one side over the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SideFigures {
    /// Frames.
    pub frames: u64,
    /// Frames per second.
    pub frames_per_s: f64,
    /// UDP payload MB/s (10^6 B/s).
    pub payload_mb_s: f64,
    /// Wire MB/s: frames + FCS + preamble + gap.
    pub wire_mb_s: f64,
    /// Wire rate in Gbit/s.
    pub wire_gbit_s: f64,
    /// Mean frame size, FCS included: bytes / frames + 4 (of a mix, what
    /// the frames counted here averaged); absent without frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avg_frame_size: Option<f64>,
    /// Packets per second the interface itself counted (`ip -s link`) in
    /// the window: what crossed the link, whatever the backend batched
    /// (TCP segments, GSO super-packets).
    pub link_packets_per_s: f64,
    /// Whole messages per second (message streams).
    pub messages_per_s: Option<f64>,
    /// Message MB/s: bytes of whole messages (message streams).
    pub message_mb_s: Option<f64>,
    /// CPU of this side's cores and its service demand (per payload MB,
    /// per message MB for message streams).
    pub cpu: CpuFigures,
}

/// Whole-run frame accounting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FrameAccounting {
    /// Frames that left the senders: completed, less those the sending
    /// link dropped ([`Self::dropped_at_sender`]).
    pub sent: u64,
    /// Linerate frames received.
    pub received: u64,
    /// sent - received.
    pub lost: u64,
    /// lost / sent, percent; in a counted run (`--count`), what did not
    /// arrive of what was handed over: (lost + dropped_at_sender) / (sent
    /// + dropped_at_sender).
    pub loss_pct: f64,
    /// Sequence gaps seen by the receivers (end of run).
    pub seq_gaps: u64,
    /// Frames that came after a later one.
    pub reordered: u64,
    /// Frames received twice.
    pub duplicates: u64,
    /// The receivers' counters of refused frames, summed: in JSON each
    /// is a field of its own (`bad`, ...), one per counter of
    /// `datapath::stats` marked refused; `bad_checksum` absent where the
    /// receivers checked no checksum.
    #[serde(flatten, with = "refused")]
    pub refused: Refused,
    /// Frames still in the sender's kernel queue when it gave up.
    pub unfinished: u64,
    /// Whole messages, for message streams.
    pub messages: Option<MessageAccounting>,
    /// Frames a sender without backpressure (the generator) handed to its
    /// link that the link dropped there (the peer's ring was full; veth:
    /// `tx_queue_N_xdp_xmit_errors`, and the interface's tx drops): not
    /// sent, and not counted as lost on the way (0 in results written
    /// before it was counted).
    #[serde(default)]
    pub dropped_at_sender: u64,
    /// Of those, frames a counted run sent again (the generator, alone on
    /// its link without backpressure): what `--count` promised still went
    /// out, so a counted run's loss does not count them (0 when none, and
    /// in results written before).
    #[serde(default, skip_serializing_if = "crate::latency::is_zero")]
    pub resent: u64,
    /// Frames (kernel TCP: messages) the paced senders let slip after
    /// stalls instead of sending them back to back: each caught up at most
    /// 1 ms of its rate at once, and its schedule ran that much later (0
    /// unpaced, and in results written before it was counted).
    #[serde(default, skip_serializing_if = "crate::latency::is_zero")]
    pub slipped: u64,
    /// Frames dropped on purpose on the way (`--inject-loss`): by the XDP
    /// steering program (its `dropped`), or on the loopback engine's link;
    /// counted in `lost`. None without `--inject-loss`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected: Option<u64>,
}

/// The receivers' counters of refused frames, summed, and whether they
/// checked checksums at all.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Refused {
    /// Each counter of `datapath::stats` marked refused (the others 0).
    pub counts: CounterSnapshot,
    /// Whether the receivers verified the frames' checksums (AF_XDP
    /// sockets parse every frame; a kernel socket gets only what the
    /// kernel passed, the XDP-only receiver counts without checking).
    /// Without, `bad_checksum` was not measured: none (absent from the
    /// JSON), not 0.
    pub checksums: bool,
}

impl Refused {
    /// The counter `c` (one marked refused), when measured.
    pub fn get(&self, c: &Counter<CounterSnapshot>) -> Option<u64> {
        (self.checksums || c.name != BAD_CHECKSUM).then(|| (c.read)(&self.counts))
    }
}

/// The refused-frame counters as fields of the object they are flattened
/// into: each counter marked refused by its name; other fields of that
/// object left alone; one not measured is left out. A counter missing
/// reads as 0, but `bad_checksum` missing (not checked, or a result
/// written before it was counted) or null as not measured.
mod refused {
    use linerate_counters::stats::CounterSnapshot;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};
    use serde_json::{Map, Value};

    use super::{Refused, BAD_CHECKSUM};

    fn names() -> impl Iterator<Item = &'static linerate_counters::stats::Counter<CounterSnapshot>>
    {
        CounterSnapshot::FIELDS.iter().filter(|c| c.refused)
    }

    pub fn serialize<S: Serializer>(r: &Refused, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(names().filter_map(|f| Some((f.name, r.get(f)?))))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Refused, D::Error> {
        let fields = Map::<String, Value>::deserialize(d)?;
        let mine: Map<String, Value> = fields
            .into_iter()
            .filter(|(k, v)| !v.is_null() && names().any(|f| f.name == k))
            .collect();
        let checksums = mine.contains_key(BAD_CHECKSUM);
        let counts = serde_json::from_value(Value::Object(mine)).map_err(D::Error::custom)?;
        Ok(Refused { counts, checksums })
    }
}

/// Whole-run message accounting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageAccounting {
    /// Bytes per message.
    pub message_bytes: usize,
    /// Frames each message is cut into.
    pub frames_per_message: usize,
    /// Messages whose every frame the senders completed.
    pub sent: u64,
    /// Messages received whole.
    pub received: u64,
    /// sent - received.
    pub lost: u64,
    /// lost / sent, percent.
    pub loss_pct: f64,
    /// Messages the receivers found incomplete or missing.
    pub receiver_counted_lost: u64,
}

/// CPU over the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuReport {
    /// Every core (of both hosts, labelled, in a two-host result).
    pub per_core: Vec<CoreUse>,
    /// All cores together, service demand per received payload MB.
    pub total: CpuFigures,
    /// Two hosts: each host's CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<HostsCpu>,
}

impl SideFigures {
    /// Figures from a side's counters over a window of `window_s`, with
    /// the CPU of `cores` (its service demand per message MB for message
    /// streams, per payload MB otherwise). Wire bytes add each frame's FCS,
    /// preamble and gap to the bytes counted.
    pub fn from_window(
        c: &CounterSnapshot,
        window_s: f64,
        uses: &[CoreUse],
        cores: &[usize],
        messages: bool,
    ) -> Self {
        if window_s <= 0.0 {
            return Self::default();
        }
        let wire_bytes = wire::wire_bytes(c.bytes, c.frames);
        let payload_mb_s = c.payload_bytes as f64 / window_s / 1e6;
        let wire_mb_s = wire_bytes as f64 / window_s / 1e6;
        let message_mb_s = messages.then(|| c.message_bytes as f64 / window_s / 1e6);
        Self {
            frames: c.frames,
            frames_per_s: c.frames as f64 / window_s,
            payload_mb_s,
            wire_mb_s,
            wire_gbit_s: wire_mb_s * 8.0 / 1000.0,
            avg_frame_size: wire::mean_frame_size(c.bytes, c.frames),
            link_packets_per_s: 0.0,
            messages_per_s: messages.then(|| c.messages as f64 / window_s),
            message_mb_s,
            cpu: figures(uses, cores, message_mb_s.unwrap_or(payload_mb_s)),
        }
    }

    /// The MB/s service demand counts: message MB/s for message streams,
    /// payload MB/s otherwise.
    pub fn counted_mb_s(&self) -> f64 {
        self.message_mb_s.unwrap_or(self.payload_mb_s)
    }
}

/// The shape of a stream's messages: (bytes per message, frames each is
/// cut into).
pub type MessageShape = (usize, usize);

impl FrameAccounting {
    /// Whole-run accounting from the senders' and the receivers' totals
    /// (summed over their workers); `unfinished` frames were still in the
    /// senders' kernel queue; `message` for message streams; `checksums`
    /// whether the receivers verified checksums ([`Refused::checksums`]).
    pub fn count(
        sent: &CounterSnapshot,
        received: &CounterSnapshot,
        unfinished: u64,
        message: Option<MessageShape>,
        checksums: bool,
    ) -> Self {
        let lost = sent.frames.saturating_sub(received.frames);
        Self {
            sent: sent.frames,
            received: received.frames,
            lost,
            loss_pct: percent(lost, sent.frames),
            seq_gaps: received.lost,
            reordered: received.reordered,
            duplicates: received.duplicates,
            refused: Refused {
                counts: received.refused(),
                checksums,
            },
            unfinished,
            messages: message.map(|(message_bytes, frames_per_message)| {
                let lost = sent.messages.saturating_sub(received.messages);
                MessageAccounting {
                    message_bytes,
                    frames_per_message,
                    sent: sent.messages,
                    received: received.messages,
                    lost,
                    loss_pct: percent(lost, sent.messages),
                    receiver_counted_lost: received.messages_lost,
                }
            }),
            dropped_at_sender: 0,
            resent: 0,
            slipped: 0,
            injected: None,
        }
    }

    /// The same accounting with `dropped` of the frames the senders
    /// completed dropped at the sending link: those were never sent, so
    /// they are neither sent nor lost.
    pub fn with_sender_drops(mut self, dropped: u64) -> Self {
        let completed = self.sent + self.dropped_at_sender;
        self.dropped_at_sender = dropped.min(completed);
        self.sent = completed - self.dropped_at_sender;
        self.lost = self.sent.saturating_sub(self.received);
        self.loss_pct = percent(self.lost, self.sent);
        self
    }
}

impl FrameAccounting {
    /// The same accounting for a counted run (`--count N`), which promised
    /// every frame it handed over: those its link dropped did not arrive
    /// either, and the headline loss says so (as the rate search counts
    /// them): (lost + dropped_at_sender) / (sent + dropped_at_sender).
    pub fn counted(mut self) -> Self {
        let (missing, promised) = self.count_shortfall();
        self.loss_pct = percent(missing, promised);
        self
    }

    /// A counted run's frames that did not arrive (lost on the way, or
    /// dropped at the sender and not sent again), of those it promised:
    /// (missing, promised).
    pub fn count_shortfall(&self) -> (u64, u64) {
        let not_resent = self.dropped_at_sender.saturating_sub(self.resent);
        (
            self.lost + not_resent,
            self.sent + self.dropped_at_sender - self.resent.min(self.dropped_at_sender),
        )
    }
}

/// What `tx_bind_mode` says when another tool sent (`--rx-only`).
pub const RX_ONLY: &str = "none (--rx-only)";

/// What `rx_bind_mode` says when no receiver of ours ran (`--tx-only`).
pub const TX_ONLY: &str = "none (--tx-only)";

impl StreamResult {
    /// A counted run (`--count N`) that did not deliver what it promised:
    /// (frames that did not arrive, frames promised), counting those lost
    /// on the way and those the sender's link dropped, not those dropped
    /// on purpose (`--inject-loss`). None for a timed run or a counted run
    /// that delivered every frame not dropped on purpose.
    pub fn short_of_count(&self) -> Option<(u64, u64)> {
        self.params.count?;
        // One side of a run across hosts (`--role`, a fleet's pair), or a
        // run without receivers (or senders) of ours, knows half the
        // story: the controller judges the merged result.
        let none = |mode: &str| mode.starts_with("none (");
        if none(&self.setup.tx_bind_mode) || none(&self.setup.rx_bind_mode) {
            return None;
        }
        let (missing, promised) = self.frames.count_shortfall();
        // Frames dropped on purpose (`--inject-loss`) were meant not to
        // arrive: the headline loss counts them, the exit status does not.
        let missing = missing.saturating_sub(self.frames.injected.unwrap_or(0));
        (missing > 0).then_some((missing, promised))
    }

    /// The kernel's receive work (NET_RX softirq: the XDP program, the copy
    /// into the UMEM) per frame received in the window, ns, over the cores
    /// of the receiving host that ran it (1 % or more), and those cores'
    /// shares. None when the receivers did not run, nothing arrived, or no
    /// softirq was measured. The part of a frame's cost that moves from
    /// run to run on a VM whose neighbours share its memory.
    pub fn receive_softirq(&self) -> Option<(f64, Vec<(usize, f64)>)> {
        let frames = self.receiver.frames_per_s;
        let cores: Vec<(usize, f64)> = self
            .common
            .softirq
            .iter()
            .filter(|s| s.net_rx_pct >= 1.0 && s.host != Some(crate::system::Host::Tx))
            .map(|s| (s.core, s.net_rx_pct))
            .collect();
        if cores.is_empty() || frames <= 0.0 || self.setup.rx_bind_mode == TX_ONLY {
            return None;
        }
        let pct: f64 = cores.iter().map(|(_, p)| p).sum();
        Some((pct / 100.0 / frames * 1e9, cores))
    }

    /// The whole-run totals of the workers on `side`, summed.
    pub fn totals(&self, side: crate::system::Host) -> CounterSnapshot {
        self.common
            .workers
            .iter()
            .filter(|w| w.side() == side)
            .fold(CounterSnapshot::default(), |a, w| a.add(&w.total))
    }

    /// The MB/s the total CPU's service demand counts: the receivers'.
    pub fn counted_mb_s(&self) -> f64 {
        self.receiver.counted_mb_s()
    }

    /// Time per message, seconds: one over the messages received per
    /// second (message streams that received any).
    pub fn time_per_message_s(&self) -> Option<f64> {
        self.receiver
            .messages_per_s
            .filter(|x| *x > 0.0)
            .map(|x| 1.0 / x)
    }

    /// The message shape, for message streams.
    pub fn message_shape(&self) -> Option<MessageShape> {
        self.frames
            .messages
            .as_ref()
            .map(|m| (m.message_bytes, m.frames_per_message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_run_short_of_its_count() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/results/stream.json");
        let mut r: StreamResult =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        r.frames.sent = 10_000;
        r.frames.received = 9_990;
        r.frames.lost = 10;
        r.frames.dropped_at_sender = 5;
        // A timed run promised no count.
        r.params.count = None;
        assert_eq!(r.short_of_count(), None);
        // Counted: those lost and those the link dropped did not arrive,
        // of all the sender handed over.
        r.params.count = Some(10_005);
        assert_eq!(r.short_of_count(), Some((15, 10_005)));
        // One side of a run across hosts: the controller judges.
        let mut side = r.clone();
        side.setup.rx_bind_mode = "none (other host)".into();
        assert_eq!(side.short_of_count(), None);
        // The generator sent again what its link dropped: 10,000 left,
        // 9,990 arrived, 10 lost on the way.
        let mut again = r.clone();
        again.frames.resent = 5;
        again.frames.sent = 10_000;
        assert_eq!(again.short_of_count(), Some((10, 10_000)));
        assert_eq!(again.frames.clone().counted().loss_pct, 0.1);
        // Of the 10 lost, 4 dropped on purpose (--inject-loss): 6 short;
        // all 10: none, though the headline loss still counts them.
        again.frames.injected = Some(4);
        assert_eq!(again.short_of_count(), Some((6, 10_000)));
        again.frames.injected = Some(10);
        assert_eq!(again.short_of_count(), None);
        assert_eq!(again.frames.clone().counted().loss_pct, 0.1);
        // Every frame arrived.
        r.frames.received = 10_000;
        r.frames.lost = 0;
        r.frames.dropped_at_sender = 0;
        assert_eq!(r.short_of_count(), None);
    }

    #[test]
    fn rates_from_counters() {
        // 1518-byte frames: 1514 bytes in the descriptor, 1472 of payload.
        let c = CounterSnapshot {
            frames: 812_744,
            bytes: 812_744 * 1514,
            payload_bytes: 812_744 * 1472,
            ..Default::default()
        };
        let f = SideFigures::from_window(&c, 1.0, &[], &[], false);
        // 812,744 frames/s of 1518 bytes is 10 GbE line rate.
        assert!((f.wire_gbit_s - 10.0).abs() < 0.001, "{}", f.wire_gbit_s);
        assert!(
            (f.payload_mb_s - 1196.36).abs() < 0.01,
            "{}",
            f.payload_mb_s
        );
    }

    #[test]
    fn frames_and_messages_accounted() {
        let sent = CounterSnapshot {
            frames: 1000,
            messages: 250,
            ..Default::default()
        };
        let received = CounterSnapshot {
            frames: 990,
            lost: 10,
            reordered: 3,
            messages: 247,
            messages_lost: 3,
            ..Default::default()
        };
        let f = FrameAccounting::count(&sent, &received, 7, Some((4000, 4)), true);
        assert_eq!((f.sent, f.received, f.lost), (1000, 990, 10));
        assert!((f.loss_pct - 1.0).abs() < 1e-12);
        assert_eq!((f.seq_gaps, f.reordered, f.unfinished), (10, 3, 7));
        let m = f.messages.unwrap();
        assert_eq!(
            (m.sent, m.received, m.lost, m.receiver_counted_lost),
            (250, 247, 3, 3)
        );
        assert!((m.loss_pct - 1.2).abs() < 1e-12);
        assert_eq!((m.message_bytes, m.frames_per_message), (4000, 4));
        // More received than sent (a sender's count cut short) is no loss.
        let f = FrameAccounting::count(&received, &sent, 0, None, true);
        assert_eq!((f.lost, f.loss_pct, f.messages), (0, 0.0, None));
    }

    #[test]
    fn frames_dropped_at_the_sender_are_neither_sent_nor_lost() {
        let completed = CounterSnapshot {
            frames: 1000,
            ..Default::default()
        };
        let received = CounterSnapshot {
            frames: 590,
            ..Default::default()
        };
        let f = FrameAccounting::count(&completed, &received, 0, None, true).with_sender_drops(400);
        assert_eq!((f.sent, f.dropped_at_sender), (600, 400));
        assert_eq!((f.received, f.lost), (590, 10));
        assert!((f.loss_pct - 10.0 / 6.0).abs() < 1e-12);
        // Applied again (the two-host merge), it replaces, never adds.
        let again = f.clone().with_sender_drops(400);
        assert_eq!(again, f);
        // More drops than completions cannot make sent negative.
        let all =
            FrameAccounting::count(&completed, &received, 0, None, true).with_sender_drops(5000);
        assert_eq!((all.sent, all.dropped_at_sender, all.lost), (0, 1000, 0));
    }
}
