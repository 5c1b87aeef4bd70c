//! Kernel TCP connections measured by the same harness: one connection
//! per flow, carrying messages on a byte stream (no frames of a chosen
//! size); every role of stream and rr.

use linerate_datapath::kernel::tcp::{rr, spawn_tcp_rx, spawn_tcp_tx};

use super::{contract::Capabilities, kernel::KernelEngine};

/// The kernel TCP engine.
pub(super) const TCP: KernelEngine = KernelEngine {
    name: "tcp",
    can: Capabilities {
        stream_sender: true,
        stream_receiver: true,
        rr_responder: Some("tcp socket"),
        frames: false,
        messages: true,
        max_frame: None,
        multi_buffer: true,
        pacing: true,
        wait_modes: true,
        steering: false,
        umem: false,
        udp_offloads: false,
        counts_foreign: false,
        backpressure: true,
        size_mix: false,
        ipv6: false,
        checksums: false,
        injects_loss: false,
        in_memory: false,
        unprivileged: true,
    },
    sender: spawn_tcp_tx,
    receiver: spawn_tcp_rx,
    client: rr::spawn_client,
    responder: rr::spawn_responder,
};
