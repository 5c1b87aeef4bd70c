//! The receiving worker.

use std::{os::fd::BorrowedFd, time::Instant};

use super::{spawn_with, Placement, StopSignal, WaitMode, Worker, WorkerError};
use crate::{
    frame::parse,
    message::{MessageTracker, Outcome},
    sequence::SequenceTracker,
    stats::{CounterSnapshot, WorkerCounters},
    xsk::{RxPort, SocketOptions, XskStats},
};

/// Flows a receiver keeps sequence accounting for.
pub const MAX_FLOWS: usize = 4096;

/// Called in the worker's thread once its socket is bound and the fill
/// ring is full: registers the socket with the steering program.
pub type OnBound = Box<dyn FnOnce(BorrowedFd<'_>) -> Result<(), String> + Send>;

/// Everything a receiver needs.
pub struct RxWorkerConfig {
    /// Socket to bind.
    pub socket: SocketOptions,
    /// Descriptors per batch.
    pub batch: usize,
    /// Busy or wait when the RX ring is empty.
    pub wait: WaitMode,
    /// Where to run.
    pub placement: Placement,
    /// When to stop.
    pub stop: StopSignal,
    /// Registers the bound socket for steering.
    pub on_bound: OnBound,
}

impl std::fmt::Debug for RxWorkerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RxWorkerConfig")
            .field("socket", &self.socket)
            .field("batch", &self.batch)
            .field("wait", &self.wait)
            .finish()
    }
}

/// What a receiver reports when it ends.
#[derive(Debug, Clone, Default)]
pub struct RxSummary {
    /// Final counters.
    pub counters: CounterSnapshot,
    /// The socket's XDP_STATISTICS.
    pub xsk: XskStats,
    /// Per-flow accounting of the flows seen.
    pub flows: Vec<(u16, FlowAccounting)>,
}

/// Frame and message accounting of one flow.
#[derive(Debug, Clone, Default)]
pub struct FlowAccounting {
    /// Frame sequence accounting.
    pub frames: SequenceTracker,
    /// Message accounting (messages streams only).
    pub messages: MessageTracker,
}

impl FlowAccounting {
    /// Accounting of a flow not seen yet.
    pub fn new() -> Self {
        Self {
            frames: SequenceTracker::default(),
            messages: MessageTracker::new(false),
        }
    }
}

/// Starts a receiver; returns once its socket is bound and registered.
pub fn spawn_rx(name: String, cfg: RxWorkerConfig) -> Result<Worker<RxSummary>, WorkerError> {
    let RxWorkerConfig {
        socket,
        batch,
        wait,
        placement,
        stop,
        on_bound,
    } = cfg;
    spawn_with(
        name,
        placement,
        move || {
            let port = RxPort::new(&socket, batch)?;
            on_bound(port.fd()).map_err(WorkerError::Hook)?;
            let (mode, why) = (port.mode(), port.fallback_reason().map(str::to_string));
            Ok((port, mode, why))
        },
        move |port, counters| run(port, wait, &stop, counters),
    )
}

fn run(
    mut port: RxPort,
    wait: WaitMode,
    stop: &StopSignal,
    counters: &WorkerCounters,
) -> Result<RxSummary, WorkerError> {
    let mut c = CounterSnapshot::default();
    let mut flows: Vec<Option<FlowAccounting>> = Vec::new();
    while !stop.should_stop(Instant::now()) {
        let n = port.recv(|f| match parse(f.head) {
            Ok(p) => {
                let flow = usize::from(p.header.flow);
                if flow >= MAX_FLOWS {
                    c.bad += 1;
                    return;
                }
                if flow >= flows.len() {
                    flows.resize(flow + 1, None);
                }
                let t = flows[flow].get_or_insert_with(FlowAccounting::new);
                t.frames.record(p.header.seq);
                c.frames += 1;
                c.bytes += f.len as u64;
                c.payload_bytes += p.udp_payload_len as u64;
                if let Some(frag) = p.fragment {
                    match t.messages.on_fragment(&frag, &[]) {
                        Outcome::Complete { msg_len, .. } => {
                            c.messages += 1;
                            c.message_bytes += u64::from(msg_len);
                        }
                        Outcome::Bad => c.bad += 1,
                        _ => {}
                    }
                }
            }
            Err(_) => c.bad += 1,
        });
        if n == 0 {
            c.idle_loops += 1;
            match wait {
                WaitMode::Busy => {
                    port.wake_if_needed()?;
                    // Never sleep, but let a kernel thread that shares the
                    // core (veth's threaded NAPI, which fills our ring) run:
                    // spinning through its time slice overflows the veth
                    // queue behind it.
                    std::thread::yield_now();
                }
                WaitMode::Wait => {
                    port.wait_readable(20)?;
                    c.syscalls += 1;
                }
            }
        } else {
            let mut lost = 0;
            let mut reordered = 0;
            let mut duplicates = 0;
            let mut messages_lost = 0;
            for t in flows.iter().flatten() {
                lost += t.frames.lost;
                reordered += t.frames.reordered;
                duplicates += t.frames.duplicates + t.messages.duplicates;
                messages_lost += t.messages.lost();
            }
            c.lost = lost;
            c.reordered = reordered;
            c.duplicates = duplicates;
            c.messages_lost = messages_lost;
        }
        counters.publish(&c);
    }
    // Messages still incomplete when the flow ends are lost.
    c.messages_lost += flows
        .iter()
        .flatten()
        .map(|t| t.messages.in_progress())
        .sum::<u64>();
    c.bad += port.overlong();
    counters.publish(&c);
    Ok(RxSummary {
        counters: c,
        xsk: port.stats().unwrap_or_default(),
        flows: flows
            .into_iter()
            .enumerate()
            .filter_map(|(i, t)| t.map(|t| (i as u16, t)))
            .collect(),
    })
}
