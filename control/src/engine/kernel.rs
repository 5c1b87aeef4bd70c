//! What the kernel-socket engines ([`super::udp`], [`super::tcp`]) share:
//! one [`Engine`] over a transport's four spawn functions, and their
//! workers' configurations, built from the engine-neutral ones. Receiver
//! (responder) `queue` listens on the run's port + `queue`.

use std::net::SocketAddrV4;

use linerate_datapath::{
    geometry::Geometry,
    kernel::{rr::KernelRrConfig, KernelReceiverConfig, KernelStreamConfig},
    message::Fragmentation,
    worker::{ClientConfig, RrSummary, RxSummary, TxSummary, Worker, WorkerError},
};

use super::contract::{Capabilities, Engine, ReceiverConfig, RrConfig, SenderConfig, SideWorkers};

/// A spawn function of the data path: a worker's thread name and config.
type Spawn<C, S> = fn(String, C) -> Result<Worker<S>, WorkerError>;

/// A kernel-socket engine: its transport's name, capabilities and spawn
/// functions. Threads are named lr-{name}-tx, -rx, -cli and -rsp.
pub(super) struct KernelEngine {
    /// Its name under `--backend` ("udp").
    pub(super) name: &'static str,
    /// What it can do.
    pub(super) can: Capabilities,
    /// Starts a stream sender.
    pub(super) sender: Spawn<KernelStreamConfig, TxSummary>,
    /// Starts a stream receiver.
    pub(super) receiver: Spawn<KernelReceiverConfig, RxSummary>,
    /// Starts an rr client.
    pub(super) client:
        fn(String, KernelRrConfig, ClientConfig) -> Result<Worker<RrSummary>, WorkerError>,
    /// Starts an rr responder.
    pub(super) responder: Spawn<KernelRrConfig, RrSummary>,
}

impl Engine for KernelEngine {
    fn name(&self) -> &'static str {
        self.name
    }

    fn can(&self) -> &Capabilities {
        &self.can
    }

    fn spawn_sender(
        &self,
        cfg: &SenderConfig<'_>,
        queue: u32,
    ) -> Result<Worker<TxSummary>, WorkerError> {
        (self.sender)(format!("lr-{}-tx{queue}", self.name), sender(cfg, queue))
    }

    fn spawn_receiver(
        &self,
        cfg: &ReceiverConfig<'_>,
        queue: u32,
    ) -> Result<Worker<RxSummary>, WorkerError> {
        (self.receiver)(format!("lr-{}-rx{queue}", self.name), receiver(cfg, queue))
    }

    fn spawn_client(
        &self,
        cfg: &RrConfig<'_>,
        queue: u32,
        clients: ClientConfig,
    ) -> Result<Worker<RrSummary>, WorkerError> {
        (self.client)(
            format!("lr-{}-cli{queue}", self.name),
            rr(cfg, &cfg.client, queue),
            clients,
        )
    }

    fn spawn_responder(
        &self,
        cfg: &RrConfig<'_>,
        queue: u32,
    ) -> Result<Worker<RrSummary>, WorkerError> {
        (self.responder)(
            format!("lr-{}-rsp{queue}", self.name),
            rr(cfg, &cfg.responder, queue),
        )
    }
}

/// The largest datagram a kernel receiver expects.
const MAX_DATAGRAM: usize = 65_536;

/// The port receiver (responder) `q` listens on.
fn port(port: u16, queue: u32) -> u16 {
    port + queue as u16
}

/// Stream sender `q`: datagrams are a message's fragments, or, with no
/// messages, stream frames of the frame's UDP payload (each an
/// unfragmented "message"; for a mix, `frame_size` is its largest).
fn sender(cfg: &SenderConfig<'_>, queue: u32) -> KernelStreamConfig {
    let (message, frames) = match cfg.message {
        Some(cut) => (cut, false),
        None => {
            let payload = Geometry::data_after_header(cfg.frame_size);
            (
                Fragmentation::new(payload, payload.max(1)).expect("a frame's payload is small"),
                true,
            )
        }
    };
    KernelStreamConfig {
        flow: queue as u16,
        src: SocketAddrV4::new(cfg.workers.end.ip, 0),
        dst: SocketAddrV4::new(cfg.to.ip, port(cfg.port, queue)),
        message,
        frames,
        mix: cfg.mix.filter(|m| frames && !m.is_single()).cloned(),
        batch: cfg.io.batch,
        wait: cfg.workers.wait,
        rate: cfg.rate,
        count: cfg.count,
        gso: cfg.gso,
        placement: cfg.workers.placement(queue),
        stop: cfg.workers.stop.clone(),
    }
}

/// Stream receiver `q`.
fn receiver(cfg: &ReceiverConfig<'_>, queue: u32) -> KernelReceiverConfig {
    KernelReceiverConfig {
        bind: SocketAddrV4::new(cfg.workers.end.ip, port(cfg.port, queue)),
        flows: 1,
        batch: cfg.io.batch,
        wait: cfg.workers.wait,
        gro: cfg.gro,
        max_datagram: MAX_DATAGRAM,
        placement: cfg.workers.placement(queue),
        stop: cfg.workers.stop.clone(),
    }
}

/// rr worker `q` of `side` (the client or the responder).
fn rr(cfg: &RrConfig<'_>, side: &SideWorkers<'_>, queue: u32) -> KernelRrConfig {
    KernelRrConfig {
        responder: SocketAddrV4::new(cfg.responder.end.ip, port(cfg.port, queue)),
        client_ip: cfg.client.end.ip,
        request: cfg.request,
        response: cfg.response,
        batch: cfg.io.batch,
        wait: side.wait,
        placement: side.placement(queue),
        stop: side.stop.clone(),
    }
}
