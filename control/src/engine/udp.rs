//! Kernel UDP sockets measured by the same harness: sendmmsg/recvmmsg
//! batches, optional segmentation (`--gso`) and receive (`--gro`)
//! offloads; every role of stream and rr.

use linerate_datapath::kernel::udp::{rr, spawn_udp_rx, spawn_udp_tx};

use super::{contract::Capabilities, kernel::KernelEngine};

/// The largest frame a UDP socket sends: an IPv4 packet of 65,535 bytes,
/// Ethernet header and FCS.
pub const MAX_UDP_FRAME: usize = 65_535 + 14 + 4;

/// The kernel UDP engine.
pub(super) const UDP: KernelEngine = KernelEngine {
    name: "udp",
    can: Capabilities {
        stream_sender: true,
        stream_receiver: true,
        rr_responder: Some("udp socket"),
        frames: true,
        messages: true,
        // The largest UDP datagram over IPv4 (65,507 bytes of payload) in
        // a frame, FCS included.
        max_frame: Some(MAX_UDP_FRAME),
        multi_buffer: true,
        pacing: true,
        wait_modes: true,
        steering: false,
        umem: false,
        udp_offloads: true,
        counts_foreign: false,
        backpressure: true,
        size_mix: true,
        ipv6: false,
        checksums: false,
        injects_loss: false,
        in_memory: false,
        unprivileged: true,
    },
    sender: spawn_udp_tx,
    receiver: spawn_udp_rx,
    client: rr::spawn_client,
    responder: rr::spawn_responder,
};
