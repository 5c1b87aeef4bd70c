//! AF_XDP sockets fed by linerate's XDP steering program: kernel bypass,
//! frames of any size the link carries (multi-buffer above one UMEM
//! chunk), every role of stream and rr.

use std::sync::Arc;

use linerate_datapath::{
    frame::{Endpoint, FrameSpec},
    geometry::Geometry,
    header::Kind,
    message::Fragmentation,
    worker::{
        spawn_client, spawn_responder, spawn_rx, spawn_tx, ClientConfig, OnBound, RrSummary,
        RrWorkerConfig, RxSummary, RxWorkerConfig, TxSummary, Worker, WorkerError,
    },
    xsk::SocketOptions,
};
use linerate_ebpf::Steering;

use super::contract::{
    Capabilities, Engine, Io, ReceiverConfig, RrConfig, SenderConfig, SideWorkers,
};
use crate::path::PathEnd;

/// The AF_XDP engine.
pub(super) struct AfXdp;

const CAN: Capabilities = Capabilities {
    stream_sender: true,
    stream_receiver: true,
    rr_responder: Some("af-xdp"),
    frames: true,
    messages: true,
    max_frame: None,
    multi_buffer: true,
    pacing: true,
    wait_modes: true,
    steering: true,
    umem: true,
    udp_offloads: false,
    counts_foreign: true,
    backpressure: true,
    size_mix: true,
    ipv6: true,
    checksums: true,
    injects_loss: true,
    in_memory: false,
    unprivileged: false,
};

impl Engine for AfXdp {
    fn name(&self) -> &'static str {
        "xdp"
    }

    fn can(&self) -> &Capabilities {
        &CAN
    }

    fn spawn_sender(
        &self,
        cfg: &SenderConfig<'_>,
        queue: u32,
    ) -> Result<Worker<TxSummary>, WorkerError> {
        spawn_tx(
            format!("lr-tx{queue}"),
            cfg.tx_worker(
                queue,
                socket(cfg.workers.end, queue, cfg.io.tx_ring, &cfg.io),
            ),
        )
    }

    fn spawn_receiver(
        &self,
        cfg: &ReceiverConfig<'_>,
        queue: u32,
    ) -> Result<Worker<RxSummary>, WorkerError> {
        spawn_rx(
            format!("lr-rx{queue}"),
            RxWorkerConfig {
                socket: socket(cfg.workers.end, queue, cfg.io.rx_ring, &cfg.io),
                batch: cfg.io.batch,
                wait: cfg.workers.wait,
                verify: cfg.verify,
                yield_when_idle: cfg.yield_to_napi,
                priority: cfg.rx_priority,
                placement: cfg.workers.placement(queue),
                stop: cfg.workers.stop.clone(),
                on_bound: register(cfg.workers.steering, queue),
                count_foreign: cfg.count_foreign,
                capture: cfg.io.capture,
                credits: cfg.credits.clone(),
            },
        )
    }

    fn spawn_client(
        &self,
        cfg: &RrConfig<'_>,
        queue: u32,
        clients: ClientConfig,
    ) -> Result<Worker<RrSummary>, WorkerError> {
        spawn_client(format!("lr-cli{queue}"), client_worker(cfg, queue), clients)
    }

    fn spawn_responder(
        &self,
        cfg: &RrConfig<'_>,
        queue: u32,
    ) -> Result<Worker<RrSummary>, WorkerError> {
        spawn_responder(format!("lr-rsp{queue}"), responder_worker(cfg, queue))
    }
}

/// The socket of queue `q` on `end`, with a ring of `ring` descriptors.
fn socket(end: &PathEnd, queue: u32, ring: u32, io: &Io) -> SocketOptions {
    SocketOptions {
        iface: end.iface.clone(),
        queue,
        ring_size: ring,
        zero_copy: io.zero_copy,
        multi_buffer: io.multi_buffer,
        chunk_size: io.umem_chunk,
    }
}

/// Registers the bound socket of queue `q` with the end's steering program.
fn register(steering: Option<&Arc<Steering>>, queue: u32) -> OnBound {
    let steering = steering.cloned();
    Box::new(move |fd| match &steering {
        Some(program) => program
            .register_socket(queue, fd)
            .map_err(|e| e.to_string()),
        None => Ok(()),
    })
}

/// The frames of an rr message from `src` to `dst`, as large as the
/// largest fragment of `cut`.
/// Client `queue`'s worker: requests from the client's end to the
/// responder's port.
pub(super) fn client_worker(cfg: &RrConfig<'_>, queue: u32) -> RrWorkerConfig {
    let (client, responder) = (cfg.client.end, cfg.responder.end);
    let frame = rr_frame(
        client.endpoint(cfg.port + 1),
        responder.endpoint(cfg.port),
        Kind::Request,
        &cfg.request,
    );
    rr_worker(cfg, &cfg.client, queue, frame, cfg.request)
}

/// Responder `queue`'s worker: responses back to the clients' ports.
pub(super) fn responder_worker(cfg: &RrConfig<'_>, queue: u32) -> RrWorkerConfig {
    let (client, responder) = (cfg.client.end, cfg.responder.end);
    let frame = rr_frame(
        responder.endpoint(cfg.port),
        client.endpoint(cfg.port + 1),
        Kind::Response,
        &cfg.response,
    );
    rr_worker(cfg, &cfg.responder, queue, frame, cfg.response)
}

fn rr_frame(src: Endpoint, dst: Endpoint, kind: Kind, cut: &Fragmentation) -> FrameSpec {
    FrameSpec {
        src,
        dst,
        frame_size: Geometry::fragment_frame_ip(cut, src.ip.is_ipv6()),
        flow: 0,
        kind,
    }
}

/// An rr worker of `side` (the client or the responder) that sends
/// `frame`s carrying messages cut as `send`.
fn rr_worker(
    cfg: &RrConfig<'_>,
    side: &SideWorkers<'_>,
    queue: u32,
    frame: FrameSpec,
    send: Fragmentation,
) -> RrWorkerConfig {
    RrWorkerConfig {
        socket: socket(side.end, queue, cfg.io.rx_ring, &cfg.io),
        tx_ring: cfg.io.tx_ring,
        batch: cfg.io.batch,
        wait: side.wait,
        placement: side.placement(queue),
        stop: side.stop.clone(),
        on_bound: register(side.steering, queue),
        frame,
        send,
        responder_port: cfg.port,
    }
}
