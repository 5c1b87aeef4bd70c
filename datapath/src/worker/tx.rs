//! The sending worker.

use std::{
    collections::VecDeque,
    time::{Duration, Instant},
};

use super::{
    error::{alive, WorkerError},
    spawn::{spawn_with, Placement, StopSignal, Worker},
    wait::WaitMode,
};
use crate::{
    binding::XskStats,
    capture::Capture,
    clock::monotonic_ns,
    frame::{set_lengths, set_udp6_checksum, FrameSpec, Stamp, HEADER_OFFSET},
    geometry::{Geometry, CHUNK_DATA},
    header::{Fragment, Header, HEADER_LEN},
    message::Fragmentation,
    mix::SizeMix,
    pacing::Pacer,
    port::{FrameMut, Transmit},
    xsk::{SocketOptions, TxPort},
};
use linerate_counters::stats::{CounterSnapshot, WorkerCounters};

/// Everything a sender needs.
#[derive(Debug, Clone)]
pub struct TxWorkerConfig {
    /// Socket to bind.
    pub socket: SocketOptions,
    /// The frames to send (for messages: the largest fragment's frame).
    pub frame: FrameSpec,
    /// Messages to cut into frames, if the stream carries messages.
    pub message: Option<Fragmentation>,
    /// Frames of several sizes (`frame` is the largest), sent in the mix's
    /// order; None: every frame is `frame`.
    pub mix: Option<SizeMix>,
    /// Descriptors per batch.
    pub batch: usize,
    /// Busy or wait when the TX ring is full.
    pub wait: WaitMode,
    /// Frames (messages, with `message`) per second (None: as fast as possible).
    pub rate: Option<f64>,
    /// Frames (messages, with `message`) in all (None: until stopped).
    pub count: Option<u64>,
    /// Where to run.
    pub placement: Placement,
    /// When to stop.
    pub stop: StopSignal,
    /// Keep a copy of the first this many frames sent (`--pcap`).
    pub capture: Option<usize>,
}

/// What a sender reports when it ends.
#[derive(Debug, Clone, Default)]
pub struct TxSummary {
    /// Final counters.
    pub counters: CounterSnapshot,
    /// The socket's XDP_STATISTICS.
    pub xsk: XskStats,
    /// Frames still in the kernel when the sender gave up waiting.
    pub unfinished: u64,
    /// The first frames sent, with `capture`.
    pub capture: Option<Capture>,
    /// Frames sent again in place of those the link dropped at the sender
    /// (a counted generator flow: [`super::gen::GenWorkerConfig::link_drops`]).
    pub resent: u64,
    /// Milliseconds a generator flow waited out of credit (its window of
    /// unacknowledged frames full), sampled each millisecond, whole run.
    pub credit_wait_ms: u64,
    /// Frames (kernel TCP: messages) a paced sender let slip after stalls
    /// instead of sending them back to back ([`crate::pacing::CATCH_UP`]).
    pub slipped: u64,
}

impl TxSummary {
    /// The summary of a sender with no AF_XDP socket (kernel backends).
    pub(crate) fn kernel(counters: CounterSnapshot) -> Self {
        Self {
            counters,
            ..Default::default()
        }
    }
}

/// Starts a sender on an AF_XDP socket; returns once its socket is bound.
pub fn spawn_tx(name: String, cfg: TxWorkerConfig) -> Result<Worker<TxSummary>, WorkerError> {
    let socket = cfg.socket.clone();
    let (wait, batch) = (cfg.wait, cfg.batch);
    spawn_tx_on(name, cfg, move |template| {
        let port = TxPort::new(&socket, template, template.len())?;
        super::busy_poll::setup_xsk(
            port.raw_fd(),
            port.mode(),
            port.fallback_reason(),
            "tx",
            wait,
            batch,
        )
        .map_err(|e| WorkerError::Hook(e.to_string()))?;
        let (mode, why) = (port.mode(), port.fallback_reason().map(str::to_string));
        let huge = port.huge_pages();
        Ok((port, mode, why, huge))
    })
}

/// Starts a sender on the port `make_port` makes, in the worker's thread
/// once it is placed, from the frame template (`cfg.socket` is then
/// unused unless `make_port` reads it): the AF_XDP port in
/// [`spawn_tx`], an in-memory [`crate::port::loopback`] (perhaps behind
/// [`crate::port::faults::Faults`]) in tests and the loopback engine.
/// Returns once the port is made.
pub fn spawn_tx_on<P, F>(
    name: String,
    cfg: TxWorkerConfig,
    make_port: F,
) -> Result<Worker<TxSummary>, WorkerError>
where
    P: Transmit + 'static,
    F: FnOnce(&[u8]) -> Result<super::spawn::Setup<P>, WorkerError> + Send + 'static,
{
    let frame = cfg.frame;
    spawn_with(
        name,
        cfg.placement.clone(),
        move || make_port(&frame.template()?),
        move |port, counters| run(port, &cfg, counters),
    )
}

/// How a sender writes each frame's header: sequence and time, and for
/// messages the fragment header and the frame's length (for mixes, the
/// frame's length). One type per kind of stream, so that each sender loop
/// is compiled for one and nothing is decided per frame. Frames must be
/// stamped in sequence order from 0 (the mix's place and the fragment's
/// index are kept as counters, not divided out of the sequence number).
pub trait Stamping {
    /// Whether frames differ in length (their bytes are counted per batch).
    const VARIES: bool;
    /// Stamps frame `seq`; returns its bytes and UDP payload bytes when
    /// frames differ in length.
    fn stamp<F: FrameMut>(&mut self, f: &mut F, seq: u64, ts: u64) -> (u64, u64);
    /// The messages the frames are cut from, if any.
    fn message(&self) -> Option<Fragmentation> {
        None
    }
}

/// Frames of the template's size: sequence and time only.
#[derive(Debug)]
pub struct PlainStamper {
    stamp: Stamp,
}

impl Stamping for PlainStamper {
    const VARIES: bool = false;
    #[inline]
    fn stamp<F: FrameMut>(&mut self, f: &mut F, seq: u64, ts: u64) -> (u64, u64) {
        self.stamp.apply(f.head(), seq, ts);
        (0, 0)
    }
}

/// Frames sized by a mix, in the mix's order.
#[derive(Debug)]
pub struct MixStamper {
    /// Each frame of the pattern: its descriptor length and its stamp.
    pattern: Vec<(usize, Stamp)>,
    /// The next frame's place in the pattern.
    i: usize,
}

impl Stamping for MixStamper {
    const VARIES: bool = true;
    #[inline]
    fn stamp<F: FrameMut>(&mut self, f: &mut F, seq: u64, ts: u64) -> (u64, u64) {
        let (len, stamp) = &self.pattern[self.i];
        self.i += 1;
        if self.i == self.pattern.len() {
            self.i = 0;
        }
        let len = *len;
        if f.len() != len {
            f.set_len(len);
        }
        let h = f.head();
        set_lengths(h, len);
        stamp.apply(h, seq, ts);
        (len as u64, (len - stamp.offset()) as u64)
    }
}

/// Frames cut from messages: each carries a fragment header.
#[derive(Debug)]
pub struct MessageStamper {
    message: Fragmentation,
    stamp: Stamp,
    /// The next frame's fragment index and message id.
    k: usize,
    msg_id: u32,
}

impl Stamping for MessageStamper {
    const VARIES: bool = true;
    #[inline]
    fn stamp<F: FrameMut>(&mut self, f: &mut F, seq: u64, ts: u64) -> (u64, u64) {
        let m = &self.message;
        let k = self.k;
        let (_, piece) = m.piece(k);
        // IPv6 headers are 20 bytes longer than IPv4's.
        let lr = self.stamp.offset();
        let len = Geometry::fragment_len(piece) + lr - HEADER_OFFSET;
        let wire = len.max(crate::frame::MIN_LEN);
        if f.len() != wire {
            f.set_len(wire);
        }
        let h = f.head();
        set_lengths(h, len);
        Header::patch(&mut h[lr..], seq, ts);
        Fragment {
            msg_id: self.msg_id,
            index: k as u32,
            count: m.count as u32,
            msg_len: m.msg_len as u32,
        }
        .write(&mut h[lr + HEADER_LEN..]);
        // IPv6: the fragment's checksum, summed whole (its frames fit one
        // UMEM chunk: the plan checks it).
        set_udp6_checksum(h, len);
        self.k += 1;
        if self.k == m.count {
            self.k = 0;
            self.msg_id = self.msg_id.wrapping_add(1);
        }
        (wire as u64, (len - lr) as u64)
    }

    fn message(&self) -> Option<Fragmentation> {
        Some(self.message)
    }
}

/// The stamper a sender's stream needs, chosen once before its loop.
#[derive(Debug)]
pub enum Stamper {
    /// Every frame the template's size.
    Plain(PlainStamper),
    /// Frames of a size mix.
    Mix(MixStamper),
    /// Frames cut from messages.
    Message(MessageStamper),
}

impl Stamper {
    /// The stamper of frames like `frame`, cut from messages or sized by a
    /// mix when one is given (a mix before messages, as before).
    pub fn from_parts(
        frame: &FrameSpec,
        message: Option<Fragmentation>,
        mix: Option<&SizeMix>,
    ) -> Result<Self, WorkerError> {
        let stamp = Stamp::for_template(&frame.template()?);
        let Some(mix) = mix else {
            return Ok(match message {
                Some(message) => Self::Message(MessageStamper {
                    message,
                    stamp,
                    k: 0,
                    msg_id: 0,
                }),
                None => Self::Plain(PlainStamper { stamp }),
            });
        };
        let pattern = mix
            .pattern()
            .iter()
            .map(|&frame_size| {
                let t = FrameSpec {
                    frame_size,
                    ..*frame
                }
                .template()?;
                Ok((
                    Geometry::descriptor_len(frame_size),
                    Stamp::for_template(&t),
                ))
            })
            .collect::<Result<Vec<_>, WorkerError>>()?;
        Ok(Self::Mix(MixStamper { pattern, i: 0 }))
    }
}

/// The sending loop, over any port: the loop compiled for the stream's
/// kind of frames.
pub(crate) fn run<P: Transmit>(
    port: P,
    cfg: &TxWorkerConfig,
    counters: &WorkerCounters,
) -> Result<TxSummary, WorkerError> {
    match Stamper::from_parts(&cfg.frame, cfg.message, cfg.mix.as_ref())? {
        Stamper::Plain(s) => run_with(port, cfg, counters, s),
        Stamper::Mix(s) => run_with(port, cfg, counters, s),
        Stamper::Message(s) => run_with(port, cfg, counters, s),
    }
}

fn run_with<P: Transmit, S: Stamping>(
    mut port: P,
    cfg: &TxWorkerConfig,
    counters: &WorkerCounters,
    mut stamper: S,
) -> Result<TxSummary, WorkerError> {
    let frags = cfg.message.map_or(1, |m| m.count as u64);
    if cfg.rate.is_some() {
        crate::pacing::precise_timers();
    }
    let mut pacer = Pacer::new(
        cfg.rate.map(|r| r * frags as f64),
        cfg.count.map(|c| c * frags),
    );
    let batch = cfg.batch.max(1);
    // The first chunk of each frame: every header, and all of a frame
    // that fits one chunk.
    let mut capture = cfg
        .capture
        .map(|n| Capture::new(n, cfg.frame.len().min(CHUNK_DATA)));
    let mut c = CounterSnapshot::default();
    let mut book = Completions::new(cfg, S::VARIES, stamper.message(), frags);
    let mut seq: u64 = 0;
    let start = Instant::now();
    loop {
        let now = Instant::now();
        // Stop between messages, never inside one (unless the hard deadline
        // has come).
        let boundary = seq.is_multiple_of(frags) || now >= cfg.stop.deadline;
        let stopping = cfg.stop.should_stop(now);
        if (stopping && boundary) || pacer.done(seq) {
            break;
        }
        let done = port.reclaim() as u64;
        book.complete(&mut c, done);
        let mut want = pacer.allowed(seq, now - start, batch);
        if stopping {
            // Told to stop inside a message: finish it and no more (sends
            // of other lengths could step over every boundary: 12 paced
            // queues of 64 KB messages on the loopback ran to the hard
            // deadline, 54 s).
            want = want.min((frags - seq % frags) as usize);
        }
        // A sleeping sender goes out a whole batch at a time.
        let burst_nap = match cfg.wait {
            WaitMode::Wait if want < batch => {
                pacer.burst_wait(seq, now - start, batch, BURST_WAIT_MAX)
            }
            _ => None,
        };
        if want == 0 || burst_nap.is_some() {
            if done == 0 {
                c.idle_loops += 1;
                match burst_nap {
                    Some(nap) => nap_or_spin(nap),
                    None => idle(&pacer, seq, now - start, cfg.wait),
                }
                super::spawn::publish_idle(counters, &c);
            } else {
                counters.publish(&c);
            }
            continue;
        }
        let ts = monotonic_ns();
        let (mut wire, mut payload) = (0, 0);
        let queued = port.send(want, |f| {
            let (w, p) = stamper.stamp(f, seq, ts);
            if let Some(c) = &mut capture {
                let len = f.len();
                c.record(ts, f.head(), len);
            }
            wire += w;
            payload += p;
            seq += 1;
        });
        book.queued(queued, wire, payload);
        c.queued += queued as u64;
        // Kernel busy polling: every round's sendto(MSG_DONTWAIT) polls.
        if port.kick_due() || (cfg.wait.kernel_polls() && port.tx_pending()) {
            c.syscalls += 1;
            if !alive(port.kick())? {
                break;
            }
        }
        if queued == 0 && done == 0 {
            // Every slot is in flight: wait for completions.
            c.idle_loops += 1;
            if cfg.wait == WaitMode::Wait {
                c.syscalls += 1;
                if !alive(port.wait_writable(10))? {
                    break;
                }
            }
        }
        counters.publish(&c);
    }
    drain(&mut port, &mut c, &mut book)?;
    counters.publish(&c);
    Ok(TxSummary {
        counters: c,
        xsk: port.stats().unwrap_or_default(),
        unfinished: port.in_flight_frames() as u64,
        capture,
        resent: 0,
        credit_wait_ms: 0,
        slipped: pacer.slipped(),
    })
}

/// Completion bookkeeping: counts the frames the port completed, and their
/// bytes (for streams whose frames differ in length, from the batches
/// queued and not yet completed).
struct Completions {
    varies: bool,
    message: Option<Fragmentation>,
    frags: u64,
    frame_len: u64,
    payload_len: u64,
    /// Bytes of frames queued and not yet completed, for message streams
    /// whose frames differ in length: (frames, bytes, payload) per batch.
    queued: VecDeque<(u64, u64, u64)>,
}

impl Completions {
    fn new(cfg: &TxWorkerConfig, varies: bool, message: Option<Fragmentation>, frags: u64) -> Self {
        Completions {
            varies,
            message,
            frags,
            frame_len: cfg.frame.len() as u64,
            payload_len: cfg.frame.payload_len() as u64,
            queued: VecDeque::with_capacity(1024),
        }
    }

    /// Notes a batch of `frames` queued, of `wire` bytes and `payload`
    /// bytes of payload (kept only when frames differ in length).
    #[inline]
    fn queued(&mut self, frames: usize, wire: u64, payload: u64) {
        if frames > 0 && self.varies {
            self.queued.push_back((frames as u64, wire, payload));
        }
    }

    /// Counts `done` frames completed, oldest batch first.
    #[inline]
    fn complete(&mut self, c: &mut CounterSnapshot, done: u64) {
        c.frames += done;
        if !self.varies {
            c.bytes = c.frames * self.frame_len;
            c.payload_bytes = c.frames * self.payload_len;
            return;
        }
        let q = &mut self.queued;
        let mut left = done;
        while left > 0 {
            let Some(front) = q.front_mut() else { break };
            let take = left.min(front.0);
            let (b, p) = (front.1 / front.0 * take, front.2 / front.0 * take);
            if take == front.0 {
                c.bytes += front.1;
                c.payload_bytes += front.2;
                q.pop_front();
            } else {
                c.bytes += b;
                c.payload_bytes += p;
                front.0 -= take;
                front.1 -= b;
                front.2 -= p;
            }
            left -= take;
        }
        if let Some(m) = &self.message {
            c.messages = c.frames / self.frags;
            c.message_bytes = c.messages * m.msg_len as u64;
        }
    }
}

/// After the loop: lets the kernel finish what is queued, for a bounded
/// time, counting the completions.
fn drain<P: Transmit>(
    port: &mut P,
    c: &mut CounterSnapshot,
    book: &mut Completions,
) -> Result<(), WorkerError> {
    let drain_until = Instant::now() + Duration::from_millis(500);
    while port.in_flight_frames() > 0 && Instant::now() < drain_until {
        if port.needs_kick() {
            c.syscalls += 1;
            if !alive(port.kick())? {
                break;
            }
        }
        let done = port.reclaim() as u64;
        book.complete(c, done);
        std::hint::spin_loop();
    }
    Ok(())
}

fn idle(pacer: &Pacer, sent: u64, elapsed: Duration, wait: WaitMode) {
    match wait {
        WaitMode::Wait => nap_or_spin(pacer.until_next(sent, elapsed).min(BURST_WAIT_MAX)),
        _ => std::hint::spin_loop(),
    }
}

/// The longest a sleeping sender holds a due frame back to fill a batch
/// (at rates where a batch takes longer to come due, it sends what came
/// due in this time).
const BURST_WAIT_MAX: Duration = Duration::from_millis(1);

/// Sleeps for `nap` unless it is too short for the timer to keep.
fn nap_or_spin(nap: Duration) {
    if nap > Duration::from_micros(20) {
        std::thread::sleep(nap);
    } else {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{frame::parse, header::Kind};

    struct Buf(Vec<u8>, usize);

    impl FrameMut for Buf {
        fn len(&self) -> usize {
            self.1
        }
        fn set_len(&mut self, len: usize) {
            self.1 = len.min(self.0.len());
        }
        fn head(&mut self) -> &mut [u8] {
            &mut self.0[..self.1]
        }
    }

    fn frame(size: usize) -> FrameSpec {
        FrameSpec {
            src: crate::frame::Endpoint {
                mac: [2, 0, 0, 0, 0, 1],
                ip: std::net::Ipv4Addr::new(198, 18, 0, 1).into(),
                port: 7472,
            },
            dst: crate::frame::Endpoint {
                mac: [2, 0, 0, 0, 0, 2],
                ip: std::net::Ipv4Addr::new(198, 18, 0, 2).into(),
                port: 7471,
            },
            frame_size: size,
            flow: 0,
            kind: Kind::Stream,
        }
    }

    /// Stamps frames 0..n in order into one buffer, calling `check` with
    /// each frame's sequence number and bytes.
    fn stamp_all<S: Stamping>(mut s: S, f: &FrameSpec, n: u64, mut check: impl FnMut(u64, &[u8])) {
        let t = f.template().unwrap();
        let mut b = Buf(vec![0; 4096], t.len());
        b.0[..t.len()].copy_from_slice(&t);
        for seq in 0..n {
            s.stamp(&mut b, seq, 7);
            check(seq, &b.0[..b.1]);
        }
    }

    #[test]
    fn counters_follow_the_sequence_as_division_did() {
        let mix = SizeMix::new(vec![(64, 3), (512, 2), (1518, 1)]).unwrap();
        let f = frame(1518);
        let Stamper::Mix(s) = Stamper::from_parts(&f, None, Some(&mix)).unwrap() else {
            panic!("a mix stamper")
        };
        stamp_all(s, &f, 100, |seq, b| {
            assert_eq!(b.len(), Geometry::descriptor_len(mix.size_of(seq)), "{seq}");
            assert_eq!(parse(b).unwrap().header.seq, seq);
        });
        let m = Fragmentation::new(10_000, 1438).unwrap();
        let f = FrameSpec {
            kind: Kind::Message,
            ..f
        };
        let Stamper::Message(s) = Stamper::from_parts(&f, Some(m), None).unwrap() else {
            panic!("a message stamper")
        };
        stamp_all(s, &f, 100, |seq, b| {
            let frag = parse(b).unwrap().fragment.unwrap();
            let k = seq % m.count as u64;
            assert_eq!(
                (frag.index, frag.msg_id),
                (k as u32, (seq / m.count as u64) as u32)
            );
        });
    }
}
