//! Request/response over the kernel stack: what its UDP
//! ([`super::udp::rr`]) and TCP ([`super::tcp::rr`]) clients and
//! responders share. Same transactions, histogram and counters as the
//! AF_XDP client.

use std::{
    net::{Ipv4Addr, SocketAddrV4},
    os::fd::BorrowedFd,
};

use nix::{
    errno::Errno,
    poll::{poll, PollFd, PollFlags, PollTimeout},
};

use crate::{
    latency::MAX_LATENCY_NS,
    message::Fragmentation,
    worker::{ClientConfig, Placement, RrSummary, StopSignal, WaitMode, Worker, WorkerError},
};
use linerate_counters::stats::{CounterSnapshot, WorkerCounters};

/// One side of a kernel-stack rr run.
#[derive(Debug, Clone)]
pub struct KernelRrConfig {
    /// The responder's address for this queue.
    pub responder: SocketAddrV4,
    /// The client's address.
    pub client_ip: Ipv4Addr,
    /// How requests are cut (UDP datagrams).
    pub request: Fragmentation,
    /// How responses are cut.
    pub response: Fragmentation,
    /// Datagrams per sendmmsg/recvmmsg.
    pub batch: usize,
    /// Busy (spin) or wait (poll).
    pub wait: WaitMode,
    /// Where to run.
    pub placement: Placement,
    /// When to stop.
    pub stop: StopSignal,
}

pub(super) fn err(what: &'static str) -> impl Fn(std::io::Error) -> WorkerError {
    move |e| WorkerError::Hook(format!("{what}: {e}"))
}

pub(super) fn nerr(what: &'static str) -> impl Fn(Errno) -> WorkerError {
    move |e| WorkerError::Hook(format!("{what}: {e}"))
}

/// Sockets [`wait_any`] polls without allocating (more: a Vec per call).
const POLL_ON_STACK: usize = 16;

/// Waits for any of `fds` to become ready (POLLIN or POLLOUT), at most `ms`.
/// Up to [`POLL_ON_STACK`] sockets (every responder, and clients of up to
/// 16 flows) nothing is allocated: it is called on every idle turn.
pub(super) fn wait_any(fds: &[BorrowedFd<'_>], flags: PollFlags, ms: u16) {
    let Some(&first) = fds.first() else {
        return;
    };
    if fds.len() > POLL_ON_STACK {
        let mut p: Vec<PollFd<'_>> = fds.iter().map(|fd| PollFd::new(*fd, flags)).collect();
        let _ = poll(&mut p, PollTimeout::from(ms));
        return;
    }
    let mut p = [PollFd::new(first, flags); POLL_ON_STACK];
    for (slot, fd) in p.iter_mut().zip(fds) {
        *slot = PollFd::new(*fd, flags);
    }
    let _ = poll(&mut p[..fds.len()], PollTimeout::from(ms));
}

/// A responder's latency histogram: empty (the client measures).
fn empty_hist() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid bounds")
}

/// A client's end: its last counters published, with its latencies.
pub(super) fn answered(
    c: CounterSnapshot,
    latency: hdrhistogram::Histogram<u64>,
    counters: &WorkerCounters,
) -> RrSummary {
    counters.publish(&c);
    RrSummary {
        counters: c,
        latency,
        xsk: Default::default(),
    }
}

/// A responder's end: its last counters published.
pub(super) fn responded(c: CounterSnapshot, counters: &WorkerCounters) -> RrSummary {
    answered(c, empty_hist(), counters)
}

/// Waits for work as the wait mode says: spin (yielding) or poll for input.
pub(super) fn idle(wait: WaitMode, fds: &[BorrowedFd<'_>]) {
    match wait {
        WaitMode::Busy => std::thread::yield_now(),
        _ => wait_any(fds, PollFlags::POLLIN, 1),
    }
}

/// A client's loop: its sockets (one per flow), the run, its clients.
pub(super) type ClientLoop<St> =
    fn(Vec<St>, &KernelRrConfig, &ClientConfig, &WorkerCounters) -> Result<RrSummary, WorkerError>;

/// Starts a kernel rr client: `open` makes one socket per flow on the
/// worker's core, `run` is its loop.
pub(super) fn spawn_client_with<St: 'static>(
    name: String,
    cfg: KernelRrConfig,
    client: ClientConfig,
    open: fn(&KernelRrConfig) -> Result<St, WorkerError>,
    run: ClientLoop<St>,
) -> Result<Worker<RrSummary>, WorkerError> {
    let flows = client.flows.len();
    super::spawn_socket(
        name,
        cfg,
        move |cfg| (0..flows).map(|_| open(cfg)).collect(),
        move |socks, cfg, counters| run(socks, cfg, &client, counters),
    )
}
