//! Kernel-stack backends measured by the same harness as AF_XDP: UDP
//! sockets done well (sendmmsg/recvmmsg batches, optional GSO and GRO,
//! large buffers, busy polling) and TCP (one connection per flow). They
//! carry the same linerate header and message accounting, so their
//! figures sit in the same tables as the bypass path's.

mod busy_poll;
pub(crate) mod records;
pub mod rr;
pub mod tcp;
pub mod udp;

use std::{net::SocketAddrV4, time::Duration};

pub use records::{read_datagram, RecordCutter, RecordHead, RecordParser};

use crate::{
    message::Fragmentation,
    worker::{Placement, StopSignal, WaitMode},
};

/// Socket buffer size asked for (SO_SNDBUFFORCE / SO_RCVBUFFORCE).
pub const SOCKET_BUFFER: usize = 16 << 20;

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
