//! Kernel UDP sockets measured by the same harness: sendmmsg/recvmmsg
//! batches, optional segmentation (`--gso`) and receive (`--gro`)
//! offloads; every role of stream and rr.

use linerate_datapath::{
    kernel::udp::{rr, spawn_udp_rx, spawn_udp_tx},
    worker::{ClientConfig, RrSummary, RxSummary, TxSummary, Worker, WorkerError},
};

use super::{kernel, Capabilities, Engine, ReceiverConfig, RrConfig, SenderConfig};

/// The kernel UDP engine.
pub(super) struct Udp;

const CAN: Capabilities = Capabilities {
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
};

impl Engine for Udp {
    fn name(&self) -> &'static str {
        "udp"
    }

    fn can(&self) -> &'static Capabilities {
        &CAN
    }

    fn spawn_sender(
        &self,
        cfg: &SenderConfig<'_>,
        queue: u32,
    ) -> Result<Worker<TxSummary>, WorkerError> {
        spawn_udp_tx(format!("lr-udp-tx{queue}"), kernel::sender(cfg, queue))
    }

    fn spawn_receiver(
        &self,
        cfg: &ReceiverConfig<'_>,
        queue: u32,
    ) -> Result<Worker<RxSummary>, WorkerError> {
        spawn_udp_rx(format!("lr-udp-rx{queue}"), kernel::receiver(cfg, queue))
    }

    fn spawn_client(
        &self,
        cfg: &RrConfig<'_>,
        queue: u32,
        clients: ClientConfig,
    ) -> Result<Worker<RrSummary>, WorkerError> {
        rr::spawn_client(
            format!("lr-udp-cli{queue}"),
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
            format!("lr-udp-rsp{queue}"),
            kernel::rr(cfg, &cfg.responder, queue),
        )
    }
}
