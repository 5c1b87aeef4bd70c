//! The generator worker: sends a flow's frames with the in-kernel frame
//! generator ([`linerate_ebpf::Generator`], `BPF_PROG_RUN` in live-frames
//! mode) instead of an AF_XDP socket. Frames leave as xdp_frames through
//! the sending interface's ndo_xdp_xmit: no skb, no copy, no UMEM.
//!
//! One BPF_PROG_RUN call costs two RCU grace periods (~27 ms on kernel
//! 6.18, measured: tests/generator.rs `by_hand_call_cost`), in which the calling
//! thread sleeps. So each flow has two runner threads on its core, each
//! with its own instance of the program over the same maps
//! ([`Generator::twin`]): while one waits out its grace periods, the other
//! sends. Pacing (a token bucket) and the count are kept by the program
//! itself, per flow, so calls can be long ([`CALL_REPEAT`] repetitions, a
//! few to tens of ms): a repetition not due yet is skipped (XDP_DROP), and
//! so is every one past the count, which ends on a message boundary. The
//! worker's own thread only reads the flow's counters from the program's
//! map, publishes them every [`PUBLISH_EVERY`], and stops the runners.

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    thread,
    time::Duration,
};

use linerate_ebpf::{GenFlowCounters, GenMessage, Generator, GeneratorConfig};

use super::{
    error::WorkerError,
    spawn::{place, spawn_with, Placement, StopSignal, Worker},
    tx::TxSummary,
};
use crate::{
    binding::BindMode,
    clock::monotonic_ns,
    frame::{FrameSpec, HEADER_OFFSET, MIN_LEN},
    geometry::Geometry,
    message::Fragmentation,
    mix::SizeMix,
    xsk::Credits,
};
use linerate_counters::stats::{CounterSnapshot, WorkerCounters};

/// Repetitions per call: ~50 ms of sending at 5 Mpps, less when paced
/// (a skipped repetition costs less than a sent one).
pub(super) const CALL_REPEAT: u32 = 1 << 18;
/// How often the worker publishes the flow's counters.
pub(super) const PUBLISH_EVERY: Duration = Duration::from_millis(1);
/// Frames a paced flow that fell behind may send at once, at least.
pub(super) const BURST: u64 = 32;
/// How far behind a paced flow may fall and still catch up, so that
/// `--rate` holds on average as the AF_XDP sender's does: a flow is not
/// sending while both its runners wait out their calls' grace periods
/// (~27 ms each, in which the other's call may end: a paced call, mostly
/// skipped repetitions, is short) or while other threads have the core
/// (16 flows on two cores: 16 runners and 8 receivers each). Measured with
/// a catch-up of 32 frames: 2 flows at 20,000 frames/s each sent 0.73x
/// the rate, 16 flows at 100,000 each 0.40x; with this: 1.00x both, but
/// 16 flows at 20,000 each still 0.63-0.95x (their short, mostly skipped
/// calls leave gaps longer than this).
/// What a catch-up sends at once a receiver with backpressure absorbs
/// (its window); into one without, the link may drop part of it, counted
/// as dropped at the sender.
pub(super) const CATCH_UP: Duration = Duration::from_millis(50);

/// The token bucket's depth for `rate` frames/s: [`CATCH_UP`]'s worth,
/// at most `cap` (a counted run without backpressure: what the link holds,
/// so that a catch-up is never dropped at the sender), at least [`BURST`]
/// unless the cap is lower.
fn burst(rate: Option<f64>, cap: Option<u64>) -> u64 {
    let depth = rate.map_or(BURST, |r| ((r * CATCH_UP.as_secs_f64()) as u64).max(BURST));
    cap.map_or(depth, |c| depth.min(c.max(1)))
}

/// Reads the frames a link dropped at the sender so far (None: could not
/// read them).
#[derive(Clone)]
pub struct LinkDrops(pub Arc<dyn Fn() -> Option<u64> + Send + Sync>);

impl std::fmt::Debug for LinkDrops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkDrops")
    }
}

/// How long a counted flow waits, once it reached its count, for the
/// link's drop counter to show the drops of its last frames.
const DROPS_SETTLE: Duration = Duration::from_millis(5);

/// What a counted flow sends again in place of the frames its link
/// dropped: as many as the drops since it started.
struct Resend {
    drops: LinkDrops,
    before: u64,
}

impl Resend {
    fn new(drops: &LinkDrops) -> Option<Self> {
        Some(Self {
            before: (drops.0)()?,
            drops: drops.clone(),
        })
    }

    /// The drops since the start, once they settled, when more than
    /// `resent` (None: nothing more to send again).
    fn more(&self, resent: u64) -> Option<u64> {
        thread::sleep(DROPS_SETTLE);
        let d = (self.drops.0)()?.saturating_sub(self.before);
        (d > resent).then_some(d)
    }
}

/// Everything a generator worker needs.
#[derive(Debug, Clone)]
pub struct GenWorkerConfig {
    /// The sending interface (in the placement's namespace).
    pub iface: String,
    /// The frames (for messages: the largest fragment's frame); its flow
    /// is the flow this worker owns.
    pub frame: FrameSpec,
    /// Messages to cut into frames, if the stream carries messages.
    pub message: Option<Fragmentation>,
    /// Frames of several sizes (`frame` is the largest), sent in the mix's
    /// pattern by sequence number.
    pub mix: Option<SizeMix>,
    /// Frames (messages, with `message`) per second (None: as fast as possible).
    pub rate: Option<f64>,
    /// Frames (messages, with `message`) in all (None: until stopped).
    pub count: Option<u64>,
    /// Where to run.
    pub placement: Placement,
    /// When to stop.
    pub stop: StopSignal,
    /// Backpressure from receivers of this host (None: send regardless).
    pub credit: Option<GenCredit>,
    /// The link's frames dropped at the sender so far (the interface's tx
    /// drops), for a counted flow that is alone on its link and has no
    /// backpressure: it sends as many again as the link dropped, so that
    /// `--count N` puts N frames on the wire (None: it does not).
    pub link_drops: Option<LinkDrops>,
    /// The most frames a paced flow that fell behind sends back to back
    /// (None: [`CATCH_UP`]'s worth): without backpressure, a catch-up
    /// larger than the link holds is dropped at the sender.
    pub max_burst: Option<u64>,
    /// The runner threads' scheduling (`--gen-priority`; None: nice 19
    /// when yielding to receivers, else as the worker's).
    pub priority: Option<crate::priority::Priority>,
}

/// The receivers' backpressure: what a flow may have unacknowledged.
#[derive(Debug, Clone)]
pub struct GenCredit {
    /// The acknowledgements the receivers write.
    pub credits: Arc<Credits>,
    /// Frames a flow may have sent and not acknowledged: what the path
    /// holds without dropping (veth's 256-frame ring per receive queue,
    /// shared by the flows that reach it, and the receivers' rings).
    pub window: u64,
    /// Run the runner threads at the lowest priority (nice 19), so that a
    /// receiver sharing their core, which sleeps when it has nothing to
    /// do, takes the core as soon as frames come: a runner out of credit
    /// spins in the kernel until the receiver acknowledges.
    pub yield_to_receivers: bool,
}

/// How long a flow may wait with its window full before its frames in
/// flight are given up as lost (a frame that never reaches a receiver,
/// such as one sent before the receivers were steered to, would hold the
/// window shut for good). Long beside a receiver's turn on a busy core.
const GIVE_UP_AFTER: Duration = Duration::from_millis(50);

/// Bytes (without FCS) and UDP payload of each frame of a message, and of
/// a whole message.
#[derive(Debug, Clone)]
struct MessageBytes {
    per_frame: Vec<(u64, u64)>,
    whole: (u64, u64),
}

impl MessageBytes {
    fn new(m: &Fragmentation) -> Self {
        let per_frame: Vec<(u64, u64)> = (0..m.count)
            .map(|k| {
                let (_, piece) = m.piece(k);
                let len = Geometry::fragment_len(piece);
                (len.max(MIN_LEN) as u64, (len - HEADER_OFFSET) as u64)
            })
            .collect();
        let whole = per_frame
            .iter()
            .fold((0, 0), |(b, p), (fb, fp)| (b + fb, p + fp));
        Self { per_frame, whole }
    }

    /// Bytes and payload of the first `frames` frames of a stream of
    /// these messages.
    fn of(&self, frames: u64) -> (u64, u64) {
        let n = self.per_frame.len() as u64;
        let (m, r) = (frames / n, (frames % n) as usize);
        let part = self.per_frame[..r]
            .iter()
            .fold((0, 0), |(b, p), (fb, fp)| (b + fb, p + fp));
        (m * self.whole.0 + part.0, m * self.whole.1 + part.1)
    }
}

/// A generator worker's counters from its flow's counters in the
/// program's map: pure, so it is tested without the program (over the
/// loopback, against what a receiver counts of the same frames).
#[derive(Debug, Clone)]
pub(super) struct GenAccounting {
    frags: u64,
    bytes: Option<MessageBytes>,
    msg_len: u64,
    mixed: bool,
    payload_len: u64,
}

impl GenAccounting {
    pub(super) fn new(cfg: &GenWorkerConfig) -> Self {
        Self {
            frags: cfg.message.map_or(1, |m| m.count as u64),
            bytes: cfg.message.as_ref().map(MessageBytes::new),
            msg_len: cfg.message.map_or(0, |m| m.msg_len as u64),
            mixed: cfg.mix.is_some(),
            payload_len: cfg.frame.payload_len() as u64,
        }
    }

    /// The counters of `f` since `first` (the flow's counters when the
    /// worker started), after `calls` program runs.
    pub(super) fn account(
        &self,
        f: &GenFlowCounters,
        first: &GenFlowCounters,
        calls: u64,
        c: &mut CounterSnapshot,
    ) {
        let sent = f.redirected - first.redirected;
        // The program's byte count: exact whatever the frames' sizes (a
        // failed redirect uses a sequence number, so bytes do not follow
        // from the count).
        let sent_bytes = f.bytes - first.bytes;
        c.frames = sent;
        c.queued = f.seq - first.seq;
        c.bad = f.redirect_failed - first.redirect_failed;
        c.idle_loops = f.skipped - first.skipped;
        c.syscalls = calls;
        match &self.bytes {
            None if self.mixed => {
                c.bytes = sent_bytes;
                c.payload_bytes = sent_bytes - sent * HEADER_OFFSET as u64;
            }
            None => {
                c.bytes = sent_bytes;
                c.payload_bytes = sent * self.payload_len;
            }
            Some(b) => {
                (c.bytes, c.payload_bytes) = b.of(sent);
                c.messages = sent / self.frags;
                c.message_bytes = c.messages * self.msg_len;
            }
        }
    }
}

/// Starts a generator; returns once its programs are loaded.
pub fn spawn_gen(name: String, cfg: GenWorkerConfig) -> Result<Worker<TxSummary>, WorkerError> {
    let setup_cfg = cfg.clone();
    spawn_with(
        name,
        cfg.placement.clone(),
        move || {
            let c = &setup_cfg;
            let ifindex = nix::net::if_::if_nametoindex(c.iface.as_str()).map_err(|e| {
                WorkerError::Hook(format!(
                    "interface {:?} not found in this namespace ({e})",
                    c.iface
                ))
            })?;
            let template = c.frame.template()?;
            let frags = c.message.map_or(1, |m| m.count as u64);
            let gen = Generator::load(
                GeneratorConfig {
                    ifindex,
                    message: c.message.map(|m| GenMessage {
                        msg_len: m.msg_len as u32,
                        frag_count: m.count as u32,
                        per_fragment: m.per_fragment as u32,
                    }),
                    count: c.count.map(|n| n.saturating_mul(frags)),
                    rate: c.rate.map(|r| r * frags as f64),
                    burst: burst(c.rate.map(|r| r * frags as f64), c.max_burst),
                    epoch_ns: monotonic_ns(),
                    window: c.credit.as_ref().map_or(0, |k| k.window),
                    mix: c.mix.as_ref().map_or_else(Vec::new, |m| {
                        m.pattern()
                            .iter()
                            .map(|&size| Geometry::descriptor_len(size) as u16)
                            .collect()
                    }),
                },
                c.credit.as_ref().map(|k| k.credits.map()),
            )
            .map_err(|e| WorkerError::Hook(e.to_string()))?;
            let twin = gen.twin().map_err(|e| WorkerError::Hook(e.to_string()))?;
            Ok((
                (gen, twin, template, ifindex),
                BindMode::Generator,
                None,
                false,
            ))
        },
        move |(gen, twin, template, ifindex), counters| {
            run([gen, twin], template, ifindex, &cfg, counters)
        },
    )
}

/// Watches a flow whose window is full for too long and gives its frames
/// in flight up as lost ([`GIVE_UP_AFTER`]).
#[derive(Default)]
struct Stuck {
    seq: u64,
    since: Option<std::time::Instant>,
}

impl Stuck {
    /// Whether the flow is out of credit now (its window full); gives up
    /// on frames unacknowledged for [`GIVE_UP_AFTER`].
    fn check(&mut self, f: &GenFlowCounters, flow: u16, k: &GenCredit) -> bool {
        let now = std::time::Instant::now();
        let unacked = f.redirected.saturating_sub(k.credits.acked(flow));
        let out = unacked >= k.window;
        if f.seq != self.seq || !out {
            self.seq = f.seq;
            self.since = None;
            return out;
        }
        let since = *self.since.get_or_insert(now);
        if now.duration_since(since) >= GIVE_UP_AFTER {
            k.credits.ack(flow, unacked);
            self.since = None;
        }
        out
    }
}

/// A runner: calls the program until told to stop.
fn runner(
    mut gen: Generator,
    template: Arc<Vec<u8>>,
    ifindex: u32,
    placement: Placement,
    stop: Arc<AtomicBool>,
    calls: Arc<AtomicU64>,
    priority: Option<crate::priority::Priority>,
) -> Result<(), WorkerError> {
    place(&placement)?;
    if let Some(p) = priority {
        // Linux's policy and nice are per thread: this one only.
        crate::priority::set(0, p)
            .map_err(|e| WorkerError::Hook(format!("a generator thread's priority: {e}")))?;
    }
    while !stop.load(Ordering::Relaxed) {
        calls.fetch_add(1, Ordering::Relaxed);
        // Interrupted by a signal: the stop flag says whether to go on.
        let ran = gen
            .run(&template, ifindex, CALL_REPEAT)
            .map_err(|e| WorkerError::Hook(e.to_string()))?;
        if ran == linerate_ebpf::GenRun::DeviceGone {
            // As an AF_XDP sender whose kick finds the device gone: end
            // with what was sent; control reports the fault.
            break;
        }
    }
    Ok(())
}

fn run(
    gens: [Generator; 2],
    template: Vec<u8>,
    ifindex: u32,
    cfg: &GenWorkerConfig,
    counters: &WorkerCounters,
) -> Result<TxSummary, WorkerError> {
    let flow = cfg.frame.flow;
    let frags = cfg.message.map_or(1, |m| m.count as u64);
    let total = cfg.count.map(|n| n.saturating_mul(frags));
    let read = |g: &Generator| g.flow(flow).map_err(|e| WorkerError::Hook(e.to_string()));
    let reader = gens[0]
        .twin()
        .map_err(|e| WorkerError::Hook(e.to_string()))?;
    let first = read(&reader)?;
    let halt = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicU64::new(0));
    let template = Arc::new(template);
    // Both runners on one core, always: the program updates the flow's
    // entry without atomics, which is exact only because programs on one
    // core never run at once. Without a core given, the core this thread
    // is on.
    let core = match cfg.placement.core {
        Some(c) => c,
        None => nix::sched::sched_getcpu()
            .map_err(|e| WorkerError::Hook(format!("finding this thread's core: {e}")))?,
    };
    let placement = Placement {
        core: Some(core),
        ..cfg.placement.clone()
    };
    let lowest = cfg.credit.as_ref().is_some_and(|k| k.yield_to_receivers);
    let priority = cfg
        .priority
        .or(lowest.then_some(crate::priority::Priority::Other(19)));
    let mut runners = Vec::with_capacity(2);
    for (i, gen) in gens.into_iter().enumerate() {
        let (t, h, n, p) = (
            template.clone(),
            halt.clone(),
            calls.clone(),
            placement.clone(),
        );
        let spawned = thread::Builder::new()
            .name(format!("lr-gen{flow}-{i}"))
            .spawn(move || runner(gen, t, ifindex, p, h, n, priority));
        match spawned {
            Ok(j) => runners.push(j),
            Err(e) => {
                halt.store(true, Ordering::Relaxed);
                return Err(WorkerError::Hook(format!(
                    "spawning a generator thread failed: {e}"
                )));
            }
        }
    }
    let accounting = GenAccounting::new(cfg);
    let account = |f: &GenFlowCounters, c: &mut CounterSnapshot| {
        accounting.account(f, &first, calls.load(Ordering::Relaxed), c)
    };
    let mut c = CounterSnapshot::default();
    let mut failed = None;
    let mut reader = reader;
    let mut stop_at: Option<u64> = None;
    let mut stuck = Stuck::default();
    // Only frames alone on their link: a message's dropped fragment
    // cannot be sent again on its own.
    let resend = cfg
        .link_drops
        .as_ref()
        .filter(|_| frags == 1 && total.is_some())
        .and_then(Resend::new);
    let mut resent = 0u64;
    let mut credit_waits = 0u64;
    loop {
        thread::sleep(PUBLISH_EVERY);
        let f = read(&reader)?;
        account(&f, &mut c);
        counters.publish(&c);
        if let Some(k) = &cfg.credit {
            credit_waits += u64::from(stuck.check(&f, flow, k));
        }
        let sent = f.seq - first.seq;
        if let Some(t) = total.filter(|t| sent >= t + resent) {
            let now = std::time::Instant::now();
            match resend.as_ref().and_then(|r| r.more(resent)) {
                Some(d) if !cfg.stop.should_stop(now) => {
                    resent = d;
                    reader
                        .set_count(first.seq + t + resent)
                        .map_err(|e| WorkerError::Hook(e.to_string()))?;
                    continue;
                }
                _ => break,
            }
        }
        if stop_at.is_some_and(|s| f.seq >= s) {
            break;
        }
        if let Some(j) = runners.iter().position(|j| j.is_finished()) {
            failed = Some(runners.swap_remove(j));
            break;
        }
        let now = std::time::Instant::now();
        if cfg.stop.should_stop(now) {
            // Stop between messages, never inside one (unless the hard
            // deadline has come): the program ends the current message
            // and skips the rest.
            if frags == 1 || now >= cfg.stop.deadline {
                break;
            }
            if stop_at.is_none() {
                let at = f.seq.div_ceil(frags) * frags;
                reader
                    .set_count(at)
                    .map_err(|e| WorkerError::Hook(e.to_string()))?;
                stop_at = Some(at);
            }
        }
    }
    halt.store(true, Ordering::Relaxed);
    let mut result = Ok(());
    for j in runners.into_iter().chain(failed) {
        match j.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => result = Err(e),
            Err(_) => result = Err(WorkerError::Vanished),
        }
    }
    account(&read(&reader)?, &mut c);
    counters.publish(&c);
    result.map(|()| TxSummary {
        resent,
        credit_wait_ms: credit_waits,
        ..TxSummary::kernel(c)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::MESSAGE_HEADER_LEN;

    #[test]
    fn a_catch_up_is_capped_by_what_the_link_holds() {
        // 30,000 frames/s: 50 ms is 1,500 frames; 256 at most when capped.
        assert_eq!(burst(Some(30_000.0), None), 1_500);
        assert_eq!(burst(Some(30_000.0), Some(256)), 256);
        // Slow flows keep the least burst, unless the cap is lower.
        assert_eq!(burst(Some(100.0), None), BURST);
        assert_eq!(burst(Some(100.0), Some(8)), 8);
        assert_eq!(burst(None, Some(0)), 1);
    }

    #[test]
    fn bytes_of_message_frames() {
        // 3000 bytes in fragments of 1438: 1438, 1438, 124.
        let m = Fragmentation::new(3000, 1438).unwrap();
        let b = MessageBytes::new(&m);
        let full = (HEADER_OFFSET + MESSAGE_HEADER_LEN + 1438) as u64;
        let last = (HEADER_OFFSET + MESSAGE_HEADER_LEN + 124) as u64;
        assert_eq!(b.whole.0, 2 * full + last);
        assert_eq!(b.of(0), (0, 0));
        assert_eq!(b.of(1).0, full);
        assert_eq!(b.of(4).0, b.whole.0 + full);
        // Payload is the UDP payload: headers of ours included.
        assert_eq!(b.of(3).1, 3000 + 3 * (MESSAGE_HEADER_LEN as u64));
        // A 2-byte last piece: the headers and the 2 bytes.
        let m = Fragmentation::new(1440, 1438).unwrap();
        let two = (HEADER_OFFSET + MESSAGE_HEADER_LEN + 2) as u64;
        assert_eq!(MessageBytes::new(&m).per_frame[1].0, two);
    }
}
