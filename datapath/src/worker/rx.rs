//! The receiving worker.

use std::{os::fd::BorrowedFd, sync::Arc, time::Instant};

use super::flows::{FlowTable, RxSummary};
use super::{
    error::{alive, WorkerError},
    spawn::{spawn_with, Placement, StopSignal, Worker},
    wait::WaitMode,
};
use crate::{
    capture::Capture,
    clock::monotonic_ns,
    geometry::CHUNK_DATA,
    port::{Receive, RxFrame},
    xsk::{Acks, Credits, RxPort, SocketOptions},
};
use linerate_counters::stats::{CounterSnapshot, WorkerCounters};

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
    /// How much of each frame it verifies (`--verify`).
    pub verify: crate::frame::Verify,
    /// A busy receiver yields its core when its ring is empty, for a NAPI
    /// thread of equal policy pinned beside it (it fills the ring). False:
    /// it only spins, as a yield on a core shared with other work gives the
    /// core away for a whole time slice (EEVDF pushes the yielding thread's
    /// deadline back one slice per yield).
    pub yield_when_idle: bool,
    /// The receiver's scheduling (`--rx-priority`; None: as it is).
    pub priority: Option<crate::priority::Priority>,
    /// Where to run.
    pub placement: Placement,
    /// When to stop.
    pub stop: StopSignal,
    /// Registers the bound socket for steering.
    pub on_bound: OnBound,
    /// Count frames without a linerate header as received frames (another
    /// tool sends) instead of bad ones.
    pub count_foreign: bool,
    /// Keep a copy of the first this many frames received (`--pcap`).
    pub capture: Option<usize>,
    /// Acknowledge every frame taken off the ring to the generator that
    /// sent it (its backpressure), once per batch.
    pub credits: Option<Arc<Credits>>,
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

/// Starts a receiver on an AF_XDP socket; returns once its socket is
/// bound and registered.
pub fn spawn_rx(name: String, mut cfg: RxWorkerConfig) -> Result<Worker<RxSummary>, WorkerError> {
    let socket = cfg.socket.clone();
    let (batch, wait) = (cfg.batch, cfg.wait);
    let on_bound = std::mem::replace(&mut cfg.on_bound, Box::new(|_| Ok(())));
    spawn_rx_on(name, cfg, move || {
        let port = RxPort::new(&socket, batch)?;
        on_bound(port.fd()).map_err(WorkerError::Hook)?;
        super::busy_poll::setup_xsk(
            std::os::fd::AsRawFd::as_raw_fd(&port.fd()),
            port.mode(),
            port.fallback_reason(),
            "rx",
            wait,
            batch,
        )
        .map_err(|e| WorkerError::Hook(e.to_string()))?;
        let (mode, why) = (port.mode(), port.fallback_reason().map(str::to_string));
        let huge = port.huge_pages();
        Ok((port, mode, why, huge))
    })
}

/// Starts a receiver on the port `make_port` makes, in the worker's thread
/// once it is placed and its priority set (`cfg.socket` and
/// `cfg.on_bound` are then unused unless `make_port` takes them): the
/// AF_XDP port in [`spawn_rx`], an in-memory
/// [`crate::port::loopback`] (perhaps behind
/// [`crate::port::faults::Faults`]) in tests and the loopback engine.
/// Returns once the port is made.
pub fn spawn_rx_on<P, F>(
    name: String,
    cfg: RxWorkerConfig,
    make_port: F,
) -> Result<Worker<RxSummary>, WorkerError>
where
    P: Receive + 'static,
    F: FnOnce() -> Result<super::spawn::Setup<P>, WorkerError> + Send + 'static,
{
    let RxWorkerConfig {
        wait,
        verify,
        yield_when_idle,
        priority,
        placement,
        stop,
        count_foreign,
        capture,
        credits,
        ..
    } = cfg;
    spawn_with(
        name,
        placement,
        move || {
            if let Some(p) = priority {
                // Linux's policy is per thread: this one only.
                crate::priority::set(0, p)
                    .map_err(|e| WorkerError::Hook(format!("the receiver's priority: {e}")))?;
            }
            make_port()
        },
        move |port, counters| {
            // The first chunk of each frame: every header, and all of a
            // frame that fits one chunk.
            let capture = capture.map(|n| Capture::new(n, CHUNK_DATA));
            let acks = credits.map(Acks::new);
            let idle = Idle {
                wait,
                yield_now: yield_when_idle,
            };
            use crate::frame::{verify as level, Verify};
            let every = match verify {
                Verify::Sampled(n) => n,
                _ => 0,
            };
            let args = (idle, &stop, count_foreign, capture, acks, counters, every);
            match verify {
                Verify::Off => run::<_, { level::OFF }>(port, args),
                Verify::Header => run::<_, { level::HEADER }>(port, args),
                Verify::Full => run::<_, { level::FULL }>(port, args),
                Verify::Sampled(_) => run::<_, { level::SAMPLED }>(port, args),
            }
        },
    )
}

/// Counts a frame from another tool: its bytes, and as payload what
/// follows Ethernet, IPv4 and UDP headers.
#[inline]
fn count_any(c: &mut CounterSnapshot, len: u64) {
    c.frames += 1;
    c.bytes += len;
    c.payload_bytes += len.saturating_sub(crate::frame::HEADER_OFFSET as u64);
}

/// Copies a frame with the time it came, while `capture` has room
/// (without --pcap: one branch on the Option).
#[inline]
fn keep(capture: &mut Option<Capture>, f: &RxFrame<'_>) {
    if let Some(c) = capture {
        if !c.is_full() {
            c.record(monotonic_ns(), f.head, f.len);
        }
    }
}

/// What a receiver does when its ring is empty.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Idle {
    /// Spin or sleep in poll().
    pub wait: WaitMode,
    /// Spinning, yield the core at each empty poll.
    pub yield_now: bool,
}

impl From<WaitMode> for Idle {
    fn from(wait: WaitMode) -> Self {
        Self {
            wait,
            yield_now: true,
        }
    }
}

/// What the receiving loop is given besides its port: how it idles, when
/// it stops, whether it counts other tools' frames, its capture, its
/// acknowledgements and its counters.
pub(crate) type LoopArgs<'a> = (
    Idle,
    &'a StopSignal,
    bool,
    Option<Capture>,
    Option<Acks>,
    &'a WorkerCounters,
    // At level SAMPLED: one frame in this many verified in full.
    u32,
);

/// The receiving loop, over any port, verifying checksums at level `V`
/// ([`crate::frame::verify`]).
pub(crate) fn run<P: Receive, const V: u8>(
    mut port: P,
    (idle, stop, count_foreign, mut capture, mut acks, counters, every): LoopArgs<'_>,
) -> Result<RxSummary, WorkerError> {
    use crate::frame::verify::SAMPLED;
    let mut c = CounterSnapshot::default();
    let mut flows = FlowTable::default();
    // SAMPLED: frames until the next one verified in full.
    let mut sample = every.max(1);
    while !stop.should_stop(Instant::now()) {
        flows.start_batch();
        let n = if count_foreign {
            port.recv(|f| {
                keep(&mut capture, &f);
                count_any(&mut c, f.len as u64)
            })
        } else {
            let n = port.recv(|f| {
                keep(&mut capture, &f);
                let flow = if V == SAMPLED {
                    flows.account_frame_sampled(
                        &mut c,
                        (f.head, f.tail.bufs(), f.len as u64),
                        &mut sample,
                        every,
                    )
                } else {
                    flows.account_frame_verified::<V>(&mut c, (f.head, f.tail.bufs()), f.len as u64)
                };
                if let (Some(a), Some(flow)) = (&mut acks, flow) {
                    a.note(flow);
                }
            });
            if let Some(a) = &mut acks {
                a.flush();
            }
            n
        };
        if n == 0 {
            c.idle_loops += 1;
            match idle.wait {
                WaitMode::BusyPoll | WaitMode::PreferBusyPoll | WaitMode::IrqSuspend => {
                    // xdpsock -B: recvfrom(MSG_DONTWAIT) busy-polls the NAPI.
                    if !alive(port.busy_poll())? {
                        break;
                    }
                }
                WaitMode::Busy => {
                    if !alive(port.wake_if_needed())? {
                        break;
                    }
                    // Never sleep, but let a kernel thread that shares the
                    // core (veth's threaded NAPI, which fills our ring) run:
                    // spinning through its time slice overflows the veth
                    // queue behind it.
                    if idle.yield_now {
                        std::thread::yield_now();
                    } else {
                        std::hint::spin_loop();
                    }
                }
                WaitMode::Wait => {
                    c.syscalls += 1;
                    if !alive(port.wait_readable(20))? {
                        break;
                    }
                }
            }
            super::spawn::publish_idle(counters, &c);
        } else {
            counters.publish(&c);
        }
    }
    c.bad += port.overlong();
    let mut summary = flows.finish(c, port.stats().unwrap_or_default());
    summary.capture = capture;
    counters.publish(&summary.counters);
    Ok(summary)
}
