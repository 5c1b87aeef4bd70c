//! Kernel-stack backends measured by the same harness as AF_XDP: UDP
//! sockets done well (sendmmsg/recvmmsg batches, optional GSO and GRO,
//! large buffers, busy polling) and TCP (one connection per flow). They
//! carry the same linerate header and message accounting, so their
//! figures sit in the same tables as the bypass path's.

pub(crate) mod records;
pub mod rr;
pub mod tcp;
pub mod udp;

use std::{net::SocketAddrV4, time::Duration};

pub use records::{read_datagram, RecordCutter, RecordHead, RecordParser};

use crate::{
    binding::BindMode,
    message::Fragmentation,
    mix::SizeMix,
    pacing::Pacer,
    worker::{
        spawn_with, FlowTable, Placement, RxSummary, StopSignal, TxSummary, WaitMode, Worker,
        WorkerError,
    },
};
use linerate_counters::stats::{CounterSnapshot, WorkerCounters};

/// Socket buffer size asked for (SO_SNDBUFFORCE / SO_RCVBUFFORCE).
pub const SOCKET_BUFFER: usize = 16 << 20;

/// Which of a socket's buffers [`size_buffer`] sizes.
#[derive(Debug, Clone, Copy)]
pub enum Buffer {
    /// The send buffer (SO_SNDBUF).
    Send,
    /// The receive buffer (SO_RCVBUF).
    Receive,
}

/// Sizes a socket's buffer to [`SOCKET_BUFFER`]: past the system's limit
/// with the FORCE option (CAP_NET_ADMIN), else, without the capability (a
/// run without root), as far as net.core.wmem_max/rmem_max allow.
pub fn size_buffer<F: std::os::fd::AsFd>(sock: &F, which: Buffer) -> nix::Result<()> {
    use nix::{
        errno::Errno,
        sys::socket::{setsockopt, sockopt},
    };
    let forced = match which {
        Buffer::Send => setsockopt(sock, sockopt::SndBufForce, &SOCKET_BUFFER),
        Buffer::Receive => setsockopt(sock, sockopt::RcvBufForce, &SOCKET_BUFFER),
    };
    match (forced, which) {
        (Err(Errno::EPERM), Buffer::Send) => setsockopt(sock, sockopt::SndBuf, &SOCKET_BUFFER),
        (Err(Errno::EPERM), Buffer::Receive) => setsockopt(sock, sockopt::RcvBuf, &SOCKET_BUFFER),
        (r, _) => r,
    }
}

/// How long a blocking call waits before looking at the stop flag again.
pub const BLOCK_SLICE: Duration = Duration::from_millis(20);

/// What a kernel-socket stream sends.
#[derive(Debug, Clone)]
pub struct KernelStreamConfig {
    /// Flow id in the headers.
    pub flow: u16,
    /// Sender's address (the socket binds to it).
    pub src: SocketAddrV4,
    /// Receiver's address.
    pub dst: SocketAddrV4,
    /// The messages; for UDP without messages, each datagram is one
    /// unfragmented "message" of the datagram's payload.
    pub message: Fragmentation,
    /// Whether the datagrams are stream frames (18-byte header) rather than
    /// message fragments (34-byte header). UDP only.
    pub frames: bool,
    /// UDP stream frames of several sizes (`--size imix`): each datagram's
    /// payload is that of its frame in the mix's pattern (`message` is the
    /// largest's). None: one size.
    pub mix: Option<SizeMix>,
    /// Datagrams (or writes) per batch.
    pub batch: usize,
    /// Busy (non-blocking spin) or wait (blocking).
    pub wait: WaitMode,
    /// Messages per second (None: as fast as possible).
    pub rate: Option<f64>,
    /// Messages in all.
    pub count: Option<u64>,
    /// UDP: segmentation offload (UDP_SEGMENT) on sends.
    pub gso: bool,
    /// Where to run.
    pub placement: Placement,
    /// When to stop.
    pub stop: StopSignal,
}

/// What a kernel-socket receiver listens on.
#[derive(Debug, Clone)]
pub struct KernelReceiverConfig {
    /// Address to bind.
    pub bind: SocketAddrV4,
    /// Flows expected (TCP: connections to accept).
    pub flows: usize,
    /// Datagrams per recvmmsg batch.
    pub batch: usize,
    /// Busy or wait.
    pub wait: WaitMode,
    /// UDP: receive offload (UDP_GRO).
    pub gro: bool,
    /// Largest datagram expected.
    pub max_datagram: usize,
    /// Where to run.
    pub placement: Placement,
    /// When to stop.
    pub stop: StopSignal,
}

/// A kernel-socket worker's configuration: where it runs.
pub(crate) trait Placed: Clone + Send + 'static {
    /// Its core.
    fn placement(&self) -> Placement;
}

macro_rules! placed {
    ($($config:ty),*) => {$(
        impl Placed for $config {
            fn placement(&self) -> Placement {
                self.placement.clone()
            }
        }
    )*};
}
placed!(KernelStreamConfig, KernelReceiverConfig, rr::KernelRrConfig);

/// Starts a kernel-socket worker on its core: `open` makes its sockets
/// there (an error reaches the caller), `run` is its loop.
pub(crate) fn spawn_socket<C: Placed, St: 'static, S: Send + 'static>(
    name: String,
    cfg: C,
    open: impl FnOnce(&C) -> Result<St, WorkerError> + Send + 'static,
    run: impl FnOnce(St, &C, &WorkerCounters) -> Result<S, WorkerError> + Send + 'static,
) -> Result<Worker<S>, WorkerError> {
    let setup = cfg.clone();
    spawn_with(
        name,
        cfg.placement(),
        move || Ok((open(&setup)?, BindMode::Kernel, None, false)),
        move |st, counters| run(st, &cfg, counters),
    )
}

/// A paced sender with nothing to send yet: sleeps until the pacer allows
/// the next (at most 200 µs, to look at the stop flag again).
pub(crate) fn pace_idle(pacer: &Pacer, sent: u64, elapsed: Duration, c: &mut CounterSnapshot) {
    c.idle_loops += 1;
    std::thread::sleep(
        pacer
            .until_next(sent, elapsed)
            .min(Duration::from_micros(200)),
    );
}

/// A sender's end: its last counters published; `slipped`, what its pacer
/// let slip.
pub(crate) fn sent(c: CounterSnapshot, counters: &WorkerCounters, slipped: u64) -> TxSummary {
    counters.publish(&c);
    TxSummary {
        slipped,
        ..TxSummary::kernel(c)
    }
}

/// A receiver's end: the messages still in progress counted, the last
/// counters published.
pub(crate) fn received(
    flows: FlowTable,
    c: CounterSnapshot,
    counters: &WorkerCounters,
) -> RxSummary {
    let summary = flows.finish(c, Default::default());
    counters.publish(&summary.counters);
    summary
}
