//! Kernel UDP sockets measured by the same harness: sendmmsg/recvmmsg
//! batches, optional segmentation (`--gso`) and receive (`--gro`)
//! offloads; every role of stream and rr.

use linerate_datapath::kernel::udp::{rr, spawn_udp_rx, spawn_udp_tx};

use super::{contract::Capabilities, kernel::KernelEngine};

/// The kernel UDP engine.
pub(super) const UDP: KernelEngine = KernelEngine {
    name: "udp",
    can: Capabilities {
        stream_sender: true,
        stream_receiver: true,
        rr_responder: Some("udp socket"),
        frames: true,
        messages: true,
        max_frame: None,
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
    },
    sender: spawn_udp_tx,
    receiver: spawn_udp_rx,
    client: rr::spawn_client,
    responder: rr::spawn_responder,
};
