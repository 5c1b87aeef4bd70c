//! The sending worker.

use std::time::{Duration, Instant};

use super::{spawn, Placement, StopSignal, WaitMode, Worker, WorkerError};
use crate::{
    clock::monotonic_ns,
    frame::FrameSpec,
    header::Header,
    pacing::Pacer,
    stats::{CounterSnapshot, WorkerCounters},
    xsk::{SocketOptions, TxPort, XskStats},
};

/// Everything a sender needs.
#[derive(Debug, Clone)]
pub struct TxWorkerConfig {
    /// Socket to bind.
    pub socket: SocketOptions,
    /// The frames to send.
    pub frame: FrameSpec,
    /// Descriptors per batch.
    pub batch: usize,
    /// Busy or wait when the TX ring is full.
    pub wait: WaitMode,
    /// Frames per second (None: as fast as possible).
    pub rate: Option<f64>,
    /// Frames in all (None: until stopped).
    pub count: Option<u64>,
    /// Where to run.
    pub placement: Placement,
    /// When to stop.
    pub stop: StopSignal,
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
}

/// Starts a sender; returns once its socket is bound.
pub fn spawn_tx(name: String, cfg: TxWorkerConfig) -> Result<Worker<TxSummary>, WorkerError> {
    let setup_cfg = cfg.clone();
    spawn(
        name,
        cfg.placement.clone(),
        move || {
            let template = setup_cfg.frame.template()?;
            let port = TxPort::new(&setup_cfg.socket, &template)?;
            let (mode, why) = (port.mode(), port.fallback_reason().map(str::to_string));
            Ok((port, mode, why))
        },
        move |port, counters| run(port, &cfg, counters),
    )
}

fn run(
    mut port: TxPort,
    cfg: &TxWorkerConfig,
    counters: &WorkerCounters,
) -> Result<TxSummary, WorkerError> {
    let pacer = Pacer::new(cfg.rate, cfg.count);
    let batch = cfg.batch.max(1);
    let frame_len = cfg.frame.len() as u64;
    let payload_len = cfg.frame.payload_len() as u64;
    let mut c = CounterSnapshot::default();
    let mut seq: u64 = 0;
    let start = Instant::now();
    loop {
        let now = Instant::now();
        if cfg.stop.should_stop(now) || pacer.done(seq) {
            break;
        }
        let done = port.reclaim() as u64;
        c.frames += done;
        let want = pacer.allowed(seq, now - start, batch);
        if want == 0 {
            if done == 0 {
                c.idle_loops += 1;
                idle(&pacer, seq, now - start, cfg.wait);
            }
            counters.publish(&c.with_bytes(frame_len, payload_len));
            continue;
        }
        let ts = monotonic_ns();
        let queued = port.send(want, |h| {
            Header::patch(h, seq, ts);
            seq += 1;
        });
        c.queued += queued as u64;
        if port.needs_kick() {
            port.kick()?;
            c.syscalls += 1;
        }
        if queued == 0 && done == 0 {
            // Every slot is in flight: wait for completions.
            c.idle_loops += 1;
            if cfg.wait == WaitMode::Wait {
                port.wait_writable(10)?;
                c.syscalls += 1;
            }
        }
        counters.publish(&c.with_bytes(frame_len, payload_len));
    }
    // Let the kernel finish what is queued, for a bounded time.
    let drain_until = Instant::now() + Duration::from_millis(500);
    while port.in_flight_frames() > 0 && Instant::now() < drain_until {
        if port.needs_kick() {
            port.kick()?;
            c.syscalls += 1;
        }
        c.frames += port.reclaim() as u64;
        std::hint::spin_loop();
    }
    let c = c.with_bytes(frame_len, payload_len);
    counters.publish(&c);
    Ok(TxSummary {
        counters: c,
        xsk: port.stats().unwrap_or_default(),
        unfinished: port.in_flight_frames() as u64,
    })
}

fn idle(pacer: &Pacer, sent: u64, elapsed: Duration, wait: WaitMode) {
    match wait {
        WaitMode::Busy => std::hint::spin_loop(),
        WaitMode::Wait => {
            let nap = pacer
                .until_next(sent, elapsed)
                .min(Duration::from_millis(1));
            if nap > Duration::from_micros(20) {
                std::thread::sleep(nap);
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

impl CounterSnapshot {
    #[inline]
    fn with_bytes(mut self, frame_len: u64, payload_len: u64) -> Self {
        self.bytes = self.frames * frame_len;
        self.payload_bytes = self.frames * payload_len;
        self
    }
}
