//! Kernel TCP connections measured by the same harness: one connection
//! per flow, carrying messages on a byte stream (no frames of a chosen
//! size); every role of stream and rr.

use linerate_datapath::{
    kernel::tcp::{rr, spawn_tcp_rx, spawn_tcp_tx},
    worker::{ClientConfig, RrSummary, RxSummary, TxSummary, Worker, WorkerError},
};

use super::{kernel, Capabilities, Engine, ReceiverConfig, RrConfig, SenderConfig};

/// The kernel TCP engine.
pub(super) struct Tcp;

const CAN: Capabilities = Capabilities {
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
};

impl Engine for Tcp {
    fn name(&self) -> &'static str {
        "tcp"
    }

    fn can(&self) -> &'static Capabilities {
        &CAN
    }

    fn spawn_sender(
        &self,
        cfg: &SenderConfig<'_>,
        queue: u32,
    ) -> Result<Worker<TxSummary>, WorkerError> {
        spawn_tcp_tx(format!("lr-tcp-tx{queue}"), kernel::sender(cfg, queue))
    }

    fn spawn_receiver(
        &self,
        cfg: &ReceiverConfig<'_>,
        queue: u32,
    ) -> Result<Worker<RxSummary>, WorkerError> {
        spawn_tcp_rx(format!("lr-tcp-rx{queue}"), kernel::receiver(cfg, queue))
    }

    fn spawn_client(
        &self,
        cfg: &RrConfig<'_>,
        queue: u32,
        clients: ClientConfig,
    ) -> Result<Worker<RrSummary>, WorkerError> {
        rr::spawn_client(
            format!("lr-tcp-cli{queue}"),
            kernel::rr(cfg, &cfg.client, queue),
            clients,
        )
    }

    fn spawn_responder(
        &self,
        cfg: &RrConfig<'_>,
        queue: u32,
    ) -> Result<Worker<RrSummary>, WorkerError> {
        rr::spawn_responder(
            format!("lr-tcp-rsp{queue}"),
            kernel::rr(cfg, &cfg.responder, queue),
        )
    }
}
