//! What the kernel-socket engines ([`super::udp`], [`super::tcp`]) share:
//! their workers' configurations, built from the engine-neutral ones.
//! Receiver (responder) `q` listens on the run's port + `q`.

use std::net::SocketAddrV4;

use linerate_datapath::{
    geometry::Geometry,
    kernel::{rr::KernelRrConfig, KernelReceiverConfig, KernelStreamConfig},
    message::Fragmentation,
};

use super::{ReceiverConfig, RrConfig, SenderConfig, SideWorkers};

/// The largest datagram a kernel receiver expects.
const MAX_DATAGRAM: usize = 65_536;

/// The port receiver (responder) `q` listens on.
fn port(port: u16, queue: u32) -> u16 {
    port + queue as u16
}

/// Stream sender `q`: datagrams are a message's fragments, or, with no
/// messages, stream frames of the frame's UDP payload (each an
/// unfragmented "message").
pub(super) fn sender(cfg: &SenderConfig<'_>, queue: u32) -> KernelStreamConfig {
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
pub(super) fn receiver(cfg: &ReceiverConfig<'_>, queue: u32) -> KernelReceiverConfig {
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
pub(super) fn rr(cfg: &RrConfig<'_>, side: &SideWorkers<'_>, queue: u32) -> KernelRrConfig {
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
