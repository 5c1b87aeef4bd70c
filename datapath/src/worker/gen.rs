//! The generator worker: sends a flow's frames with the in-kernel frame
//! generator ([`linerate_ebpf::Generator`], `BPF_PROG_RUN` in live-frames
//! mode) instead of an AF_XDP socket. Frames leave as xdp_frames through
//! the sending interface's ndo_xdp_xmit: no skb, no copy, no UMEM.
//!
//! The generator runs repetitions in chunks: as many as the pacer allows
//! (a token bucket over the run: rate x elapsed), at most [`MAX_CHUNK`]
//! so that a stop is seen within a few milliseconds. A message stream's
//! chunks are whole messages, so that the run stops between messages.

use std::time::{Duration, Instant};

use linerate_ebpf::{GenMessage, GenRun, Generator, GeneratorConfig};

use super::{spawn_with, tx::TxSummary, Placement, StopSignal, Worker, WorkerError};
use crate::{
    frame::{FrameSpec, HEADER_OFFSET, MIN_LEN},
    header::MESSAGE_HEADER_LEN,
    message::Fragmentation,
    pacing::Pacer,
    stats::{CounterSnapshot, WorkerCounters},
    xsk::BindMode,
};

/// The most repetitions one call runs (about 12 ms at 5 Mpps).
pub const MAX_CHUNK: usize = 1 << 16;

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
    /// Frames (messages, with `message`) per second (None: as fast as possible).
    pub rate: Option<f64>,
    /// Frames (messages, with `message`) in all (None: until stopped).
    pub count: Option<u64>,
    /// Where to run.
    pub placement: Placement,
    /// When to stop.
    pub stop: StopSignal,
}

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
                let len = HEADER_OFFSET + MESSAGE_HEADER_LEN + piece;
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

/// Starts a generator; returns once its program is loaded.
pub fn spawn_gen(name: String, cfg: GenWorkerConfig) -> Result<Worker<TxSummary>, WorkerError> {
    let setup_cfg = cfg.clone();
    spawn_with(
        name,
        cfg.placement.clone(),
        move || {
            let ifindex = nix::net::if_::if_nametoindex(setup_cfg.iface.as_str()).map_err(|e| {
                WorkerError::Hook(format!(
                    "interface {:?} not found in this namespace ({e})",
                    setup_cfg.iface
                ))
            })?;
            let kind = setup_cfg.frame.kind;
            let template = FrameSpec {
                kind,
                ..setup_cfg.frame
            }
            .template()?;
            let gen = Generator::load(GeneratorConfig {
                ifindex,
                message: setup_cfg.message.map(|m| GenMessage {
                    msg_len: m.msg_len as u32,
                    frag_count: m.count as u32,
                    per_fragment: m.per_fragment as u32,
                }),
            })
            .map_err(|e| WorkerError::Hook(e.to_string()))?;
            Ok(((gen, template, ifindex), BindMode::Generator, None, false))
        },
        move |(gen, template, ifindex), counters| run(gen, &template, ifindex, &cfg, counters),
    )
}

fn run(
    mut gen: Generator,
    template: &[u8],
    ifindex: u32,
    cfg: &GenWorkerConfig,
    counters: &WorkerCounters,
) -> Result<TxSummary, WorkerError> {
    let flow = cfg.frame.flow;
    let frags = cfg.message.map_or(1, |m| m.count as u64);
    let pacer = Pacer::new(
        cfg.rate.map(|r| r * frags as f64),
        cfg.count.map(|c| c * frags),
    );
    let bytes = cfg.message.as_ref().map(MessageBytes::new);
    let (frame_len, payload_len) = (cfg.frame.len() as u64, cfg.frame.payload_len() as u64);
    let max_chunk = (MAX_CHUNK as u64 / frags).max(1) * frags;
    let start = Instant::now();
    let mut c = CounterSnapshot::default();
    let read = |gen: &Generator| gen.flow(flow).map_err(|e| WorkerError::Hook(e.to_string()));
    let mut seq = read(&gen)?.seq;
    let first = seq;
    loop {
        let now = Instant::now();
        if cfg.stop.should_stop(now) || pacer.done(seq - first) {
            break;
        }
        let allowed = pacer.allowed(seq - first, now - start, max_chunk as usize) as u64;
        // Whole messages only.
        let want = allowed / frags * frags;
        if want == 0 {
            c.idle_loops += 1;
            let nap = pacer.until_next(seq - first, now - start);
            if nap > Duration::from_micros(20) {
                std::thread::sleep(nap.min(Duration::from_millis(1)));
            } else {
                std::hint::spin_loop();
            }
            continue;
        }
        c.syscalls += 1;
        let r = gen
            .run(template, ifindex, want as u32)
            .map_err(|e| WorkerError::Hook(e.to_string()))?;
        let f = read(&gen)?;
        seq = f.seq;
        let sent = f.redirected;
        c.frames = sent;
        c.queued = f.seq - first;
        c.bad = f.redirect_failed;
        match &bytes {
            None => {
                c.bytes = sent * frame_len;
                c.payload_bytes = sent * payload_len;
            }
            Some(b) => {
                (c.bytes, c.payload_bytes) = b.of(sent);
                c.messages = sent / frags;
                c.message_bytes = c.messages * cfg.message.map_or(0, |m| m.msg_len as u64);
            }
        }
        counters.publish(&c);
        if r == GenRun::Interrupted {
            // A signal: the caller's handler sets the stop flag.
            continue;
        }
    }
    counters.publish(&c);
    Ok(TxSummary::kernel(c))
}

#[cfg(test)]
mod tests {
    use super::*;

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
