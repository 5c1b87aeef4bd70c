//! Request/response workers: a client that keeps `concurrency`
//! transactions in flight on each of its flows and times each one, and a
//! responder that answers every complete request with a response message.
//! Both use one duplex socket per queue.

use std::{sync::atomic::Ordering, time::Instant};

use hdrhistogram::Histogram;

use super::{
    error::{alive, device_gone, WorkerError},
    flows::MAX_FLOWS,
    outbox::Outbox,
    rx::OnBound,
    spawn::{spawn_with, Placement, Setup, StopSignal, Worker},
    transactions::{ClientConfig, Transactions},
    wait::WaitMode,
};
use crate::{
    binding::{XskError, XskStats},
    clock::monotonic_ns,
    frame::{parse, FrameSpec},
    header::Kind,
    latency::MAX_LATENCY_NS,
    message::{Fragmentation, MessageTracker},
    port::{Receive, Transmit},
    xsk::{DuplexPort, SocketOptions},
};
use linerate_counters::stats::{CounterSnapshot, WorkerCounters};

/// Everything a request/response worker needs.
pub struct RrWorkerConfig {
    /// Socket to bind (its RX ring size).
    pub socket: SocketOptions,
    /// TX ring size.
    pub tx_ring: u32,
    /// Descriptors per batch.
    pub batch: usize,
    /// Busy or wait when there is nothing to do.
    pub wait: WaitMode,
    /// Where to run.
    pub placement: Placement,
    /// When to stop.
    pub stop: StopSignal,
    /// Registers the bound socket for steering.
    pub on_bound: OnBound,
    /// Template of the frames this worker sends (source and destination
    /// addresses; ports are set per message).
    pub frame: FrameSpec,
    /// How the messages this worker sends are cut.
    pub send: Fragmentation,
    /// Port of the responder.
    pub responder_port: u16,
}

/// What a client reports when it ends.
#[derive(Debug, Clone)]
pub struct RrSummary {
    /// Final counters (frames: received; queued: sent; transactions...).
    pub counters: CounterSnapshot,
    /// Response times in ns over the measured window.
    pub latency: Histogram<u64>,
    /// The socket's XDP_STATISTICS.
    pub xsk: XskStats,
}

fn port_for(cfg: &RrWorkerConfig, max_len: usize) -> Result<DuplexPort, WorkerError> {
    let template = cfg.frame.template()?;
    Ok(DuplexPort::new(
        &cfg.socket,
        cfg.tx_ring,
        cfg.batch,
        &template,
        max_len.max(template.len()),
    )?)
}

/// The end of a request/response loop turn: sends what waits (a batch),
/// kicks the kernel while it holds queued frames, and waits up to
/// `idle_ms` when there was nothing to do. `Ok(false)`: the interface is
/// gone and the worker should end.
/// Publishes a turn's counters: all of them when it moved frames (or
/// timed a transaction out), else only the idle turns and syscalls (two
/// stores, not one per counter).
#[inline]
fn publish_turn(counters: &WorkerCounters, c: &CounterSnapshot, moved: bool) {
    if moved {
        counters.publish(c);
    } else {
        super::spawn::publish_idle(counters, c);
    }
}

fn send_then_idle(
    port: &mut (impl Transmit + Receive),
    out: &mut Outbox,
    c: &mut CounterSnapshot,
    cfg: &RrWorkerConfig,
    now: u64,
    received: bool,
    idle_ms: i32,
) -> Result<bool, WorkerError> {
    let (sent, _) = out.pump(port, cfg.batch, now);
    c.queued += sent;
    let kicked = match kick_if_pending(port, c) {
        Ok(k) => k,
        Err(e) if device_gone(&e) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    if !received && sent == 0 && !kicked && out.is_empty() {
        c.idle_loops += 1;
        return alive(idle(port, cfg.wait, idle_ms));
    }
    Ok(true)
}

/// Kicks while the kernel has not taken every queued frame (copy mode
/// takes at most a batch per kick). Returns whether it kicked.
#[inline]
fn kick_if_pending(port: &mut impl Transmit, c: &mut CounterSnapshot) -> Result<bool, XskError> {
    if !port.tx_pending() {
        return Ok(false);
    }
    port.kick()?;
    c.syscalls += 1;
    Ok(true)
}

fn idle(port: &mut impl Receive, wait: WaitMode, max_ms: i32) -> Result<(), XskError> {
    match wait {
        WaitMode::Busy => {
            port.wake_if_needed()?;
            std::thread::yield_now();
        }
        WaitMode::Wait => {
            port.wait_readable(max_ms)?;
        }
        // xdpsock -B: recvfrom(MSG_DONTWAIT) busy-polls the NAPI.
        WaitMode::BusyPoll | WaitMode::PreferBusyPoll | WaitMode::IrqSuspend => {
            port.busy_poll()?;
        }
    }
    Ok(())
}

/// Splits the steering hook off a config (it runs once, in the worker).
fn take_hook(mut cfg: RrWorkerConfig) -> (RrWorkerConfig, OnBound) {
    let hook = std::mem::replace(&mut cfg.on_bound, Box::new(|_| Ok(())));
    (cfg, hook)
}

/// Binds the worker's socket in its thread and registers it for steering.
fn bind(
    cfg: RrWorkerConfig,
    hook: OnBound,
    side: &'static str,
) -> Result<Setup<(DuplexPort, RrWorkerConfig)>, WorkerError> {
    let port = port_for(&cfg, cfg.frame.len())?;
    hook(port.fd()).map_err(WorkerError::Hook)?;
    super::busy_poll::setup_xsk(
        std::os::fd::AsRawFd::as_raw_fd(&port.fd()),
        port.mode(),
        port.fallback_reason(),
        side,
        cfg.wait,
        cfg.batch,
    )
    .map_err(|e| WorkerError::Hook(e.to_string()))?;
    let (mode, why) = (port.mode(), port.fallback_reason().map(str::to_string));
    let huge = port.huge_pages();
    Ok(((port, cfg), mode, why, huge))
}

/// Starts a responder: answers every complete request with a response.
pub fn spawn_responder(
    name: String,
    cfg: RrWorkerConfig,
) -> Result<Worker<RrSummary>, WorkerError> {
    spawn_port(name, cfg, "rx", respond)
}

/// Starts an rr worker: its socket bound (and registered) on its core,
/// then `run`.
fn spawn_port(
    name: String,
    cfg: RrWorkerConfig,
    side: &'static str,
    run: impl FnOnce(DuplexPort, &RrWorkerConfig, &WorkerCounters) -> Result<RrSummary, WorkerError>
        + Send
        + 'static,
) -> Result<Worker<RrSummary>, WorkerError> {
    let placement = cfg.placement.clone();
    let (cfg, hook) = take_hook(cfg);
    spawn_with(
        name,
        placement,
        move || bind(cfg, hook, side),
        move |(port, cfg), counters| run(port, &cfg, counters),
    )
}

/// The responder's loop, over any port.
pub(crate) fn respond<P: Transmit + Receive>(
    mut port: P,
    cfg: &RrWorkerConfig,
    counters: &WorkerCounters,
) -> Result<RrSummary, WorkerError> {
    let mut c = CounterSnapshot::default();
    let mut flows: Vec<Option<MessageTracker>> = Vec::new();
    let mut out = Outbox::new(Kind::Response, cfg.send, 16, 1024);
    while !cfg.stop.should_stop(Instant::now()) {
        let before = (c.completed, c.queued);
        c.completed += port.reclaim() as u64;
        let now = monotonic_ns();
        let got = port.recv(|f| {
            let p = match parse(f.head) {
                Ok(p) => p,
                Err(e) => return e.count(&mut c),
            };
            c.frames += 1;
            c.bytes += f.len as u64;
            let (Kind::Request, Some(frag)) = (p.header.kind, p.fragment) else {
                c.bad += 1;
                return;
            };
            let flow = usize::from(p.header.flow);
            if flow >= MAX_FLOWS {
                c.bad += 1;
                return;
            }
            if flow >= flows.len() {
                flows.resize(flow + 1, None);
            }
            let t = flows[flow].get_or_insert_with(|| MessageTracker::new(false));
            // Lost messages kept up to date here: no pass over the flows
            // per batch (a forged flow id would make it long).
            let lost = t.lost();
            let done = t.on_fragment(&frag, &[]).count(&mut c);
            // (A late message takes a loss back, hence the wrapping.)
            c.messages_lost = c.messages_lost.wrapping_add(t.lost().wrapping_sub(lost));
            if let Some(msg_id) = done {
                out.push(p.header.flow, msg_id, cfg.responder_port, p.src_port);
            }
        });
        if !send_then_idle(&mut port, &mut out, &mut c, cfg, now, got > 0, 20)? {
            break;
        }
        publish_turn(counters, &c, got > 0 || (c.completed, c.queued) != before);
    }
    counters.publish(&c);
    Ok(RrSummary {
        counters: c,
        latency: Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid bounds"),
        xsk: port.stats().unwrap_or_default(),
    })
}

/// Starts a responder on whatever port `make_port` makes in the worker's
/// thread, once it is placed, from the response frames' template and
/// their largest length (`cfg.socket` is then unused unless `make_port`
/// reads it): an in-memory [`crate::port::loopback::duplex`] end (perhaps
/// behind [`crate::port::faults::Faults`]) in tests and the loopback
/// engine. Returns once the port is made.
pub fn spawn_responder_on<P, F>(
    name: String,
    cfg: RrWorkerConfig,
    make_port: F,
) -> Result<Worker<RrSummary>, WorkerError>
where
    P: Transmit + Receive + 'static,
    F: FnOnce(&[u8], usize) -> Result<Setup<P>, WorkerError> + Send + 'static,
{
    spawn_made(name, cfg, make_port, respond)
}

/// Starts a client on whatever port `make_port` makes (as
/// [`spawn_responder_on`], from the request frames' template).
pub fn spawn_client_on<P, F>(
    name: String,
    cfg: RrWorkerConfig,
    client: ClientConfig,
    make_port: F,
) -> Result<Worker<RrSummary>, WorkerError>
where
    P: Transmit + Receive + 'static,
    F: FnOnce(&[u8], usize) -> Result<Setup<P>, WorkerError> + Send + 'static,
{
    spawn_made(name, cfg, make_port, move |port, cfg, counters| {
        run_client(port, cfg, &client, counters)
    })
}

/// Starts an rr worker on the port `make_port` makes in its thread from
/// its frames' template and largest length, then `run`.
fn spawn_made<P, F>(
    name: String,
    cfg: RrWorkerConfig,
    make_port: F,
    run: impl FnOnce(P, &RrWorkerConfig, &WorkerCounters) -> Result<RrSummary, WorkerError>
        + Send
        + 'static,
) -> Result<Worker<RrSummary>, WorkerError>
where
    P: Transmit + Receive + 'static,
    F: FnOnce(&[u8], usize) -> Result<Setup<P>, WorkerError> + Send + 'static,
{
    let placement = cfg.placement.clone();
    spawn_with(
        name,
        placement,
        move || {
            let (port, mode, why, huge) = make_port(&cfg.frame.template()?, cfg.frame.len())?;
            Ok(((port, cfg), mode, why, huge))
        },
        move |(port, cfg), counters| run(port, &cfg, counters),
    )
}

/// Starts a client.
pub fn spawn_client(
    name: String,
    cfg: RrWorkerConfig,
    client: ClientConfig,
) -> Result<Worker<RrSummary>, WorkerError> {
    spawn_port(name, cfg, "tx", move |port, cfg, counters| {
        run_client(port, cfg, &client, counters)
    })
}

/// The client's loop, over any port.
pub(crate) fn run_client<P: Transmit + Receive>(
    mut port: P,
    cfg: &RrWorkerConfig,
    cl: &ClientConfig,
    counters: &WorkerCounters,
) -> Result<RrSummary, WorkerError> {
    let mut tx = Transactions::for_client(cl, true);
    let nflows = tx.flow_bound();
    let mut trackers: Vec<MessageTracker> =
        (0..nflows).map(|_| MessageTracker::new(false)).collect();
    let mut out = Outbox::new(
        Kind::Request,
        cfg.send,
        nflows,
        nflows * cl.concurrency as usize,
    );
    let mut c = CounterSnapshot::default();
    let responder_port = cfg.responder_port;
    let push = |out: &mut Outbox, f: u16, id: u32| {
        out.push(
            f,
            id,
            responder_port.wrapping_add(1).wrapping_add(f),
            responder_port,
        )
    };
    tx.start(monotonic_ns(), &mut |f, id| push(&mut out, f, id));
    while !cfg.stop.should_stop(Instant::now()) && !tx.all_done() {
        let before = (c.completed, c.queued, c.timeouts);
        c.completed += port.reclaim() as u64;
        let now = monotonic_ns();
        let measuring = cl.measuring.load(Ordering::Relaxed);
        let got = port.recv(|f| {
            let p = match parse(f.head) {
                Ok(p) => p,
                Err(e) => return e.count(&mut c),
            };
            c.frames += 1;
            c.bytes += f.len as u64;
            let fi = usize::from(p.header.flow);
            let (Kind::Response, Some(frag), true) = (p.header.kind, p.fragment, fi < nflows)
            else {
                c.bad += 1;
                return;
            };
            let t = &mut trackers[fi];
            let lost_before = t.lost();
            let done = t.on_fragment(&frag, &[]).count(&mut c);
            // The losses kept up to date by what this fragment changed (a
            // loss can be taken back when a late fragment arrives), not
            // summed over every flow each turn.
            c.messages_lost = c
                .messages_lost
                .wrapping_add(t.lost().wrapping_sub(lost_before));
            if let Some(msg_id) = done {
                tx.on_response(fi, msg_id, now, measuring, &mut c, &mut |f, id| {
                    push(&mut out, f, id)
                });
            }
        });
        tx.scan_timeouts(now, &mut c, &mut |f, id| push(&mut out, f, id));
        if !send_then_idle(&mut port, &mut out, &mut c, cfg, now, got > 0, 1)? {
            break;
        }
        debug_assert_eq!(
            c.messages_lost,
            trackers.iter().map(MessageTracker::lost).sum::<u64>()
        );
        publish_turn(
            counters,
            &c,
            got > 0 || (c.completed, c.queued, c.timeouts) != before,
        );
    }
    counters.publish(&c);
    Ok(RrSummary {
        counters: c,
        latency: tx.hist,
        xsk: port.stats().unwrap_or_default(),
    })
}
