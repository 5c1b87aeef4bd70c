//! The loopback engine (`--backend loopback`), a test and demo engine:
//! the AF_XDP engine's sender and receiver loops joined by an in-memory
//! link (`linerate_datapath::port::loopback`) instead of sockets, so a
//! stream runs with no interface, no steering program, no NAPI and no
//! root. `--inject-loss` drops frames on the link
//! (`linerate_datapath::port::faults`), as the steering program does on a
//! real interface. What it measures is linerate's own per-frame work and
//! a memory queue, never a network.
//!
//! The receivers start first (as on every path), so each makes its link
//! and leaves the sending end here, under its port and queue, for the
//! sender of that queue to take with its frame template. rr the same way:
//! each responder makes a duplex link (`loopback::duplex`) and leaves the
//! client's end for the client of its queue; `--inject-loss` drops
//! requests as they reach the responder (the clients time out and send
//! them again, as on a lossy wire).

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex, OnceLock,
    },
};

use linerate_datapath::{
    binding::BindMode,
    port::{
        faults::{Fault, Faults},
        loopback::{self, LoopDuplex, LoopTx},
    },
    worker::{
        spawn_client_on, spawn_responder_on, spawn_rx_on, spawn_tx_on, ClientConfig, RrSummary,
        RxSummary, RxWorkerConfig, TxSummary, Worker, WorkerError,
    },
    xsk::SocketOptions,
};

use super::{
    af_xdp::{client_worker, responder_worker},
    contract::{Capabilities, Engine, Io, ReceiverConfig, RrConfig, SenderConfig},
};

/// The loopback engine.
pub(super) struct Loopback;

const CAN: Capabilities = Capabilities {
    stream_sender: true,
    stream_receiver: true,
    rr_responder: Some("loopback"),
    frames: true,
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
    size_mix: true,
    ipv6: false,
    checksums: true,
    injects_loss: true,
    in_memory: true,
    unprivileged: true,
};

/// The sending ends of the links the receivers made, by (port, queue).
fn links() -> &'static ByQueue<LoopTx> {
    static LINKS: OnceLock<ByQueue<LoopTx>> = OnceLock::new();
    LINKS.get_or_init(Mutex::default)
}

/// The clients' ends of the duplex links the responders made, by (port,
/// queue).
fn rr_links() -> &'static ByQueue<LoopDuplex> {
    static LINKS: OnceLock<ByQueue<LoopDuplex>> = OnceLock::new();
    LINKS.get_or_init(Mutex::default)
}

/// Per (port, queue) of the receivers: what each holds.
type ByQueue<T> = Mutex<HashMap<(u16, u32), T>>;

/// What each receiver's link dropped on purpose, by (port, queue).
fn dropped() -> &'static ByQueue<Arc<AtomicU64>> {
    static DROPPED: OnceLock<ByQueue<Arc<AtomicU64>>> = OnceLock::new();
    DROPPED.get_or_init(Mutex::default)
}

/// Frames the links of the receivers on `port` dropped on purpose, read
/// once (the counters are then forgotten).
pub fn injected(port: u16) -> u64 {
    let mut all = dropped().lock().unwrap_or_else(|e| e.into_inner());
    let mine: Vec<_> = all.keys().filter(|(p, _)| *p == port).copied().collect();
    mine.iter()
        .filter_map(|k| all.remove(k))
        .map(|n| n.load(Ordering::Relaxed))
        .sum()
}

/// Frames the link of one queue holds (as a ring would).
fn capacity(io: &Io) -> usize {
    io.rx_ring.max(64) as usize
}

/// The sockets' options, unused by the loopback's ports (the worker
/// configs carry them).
fn no_socket(queue: u32, io: &Io) -> SocketOptions {
    SocketOptions {
        iface: "loopback".into(),
        queue,
        ring_size: io.rx_ring,
        zero_copy: io.zero_copy,
        multi_buffer: false,
        chunk_size: io.umem_chunk,
    }
}

/// `--inject-loss PCT` as one frame dropped every N (None: no loss).
pub fn drop_every(loss_pct: f64) -> Option<u64> {
    (loss_pct > 0.0).then(|| (100.0 / loss_pct).round().max(1.0) as u64)
}

impl Engine for Loopback {
    fn name(&self) -> &'static str {
        "loopback"
    }

    fn can(&self) -> &Capabilities {
        &CAN
    }

    fn spawn_sender(
        &self,
        cfg: &SenderConfig<'_>,
        queue: u32,
    ) -> Result<Worker<TxSummary>, WorkerError> {
        let key = (cfg.port, queue);
        let tx = links()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key)
            .ok_or_else(|| {
                WorkerError::Hook(format!(
                    "no loopback receiver listens on port {} queue {queue}: the loopback engine runs both ends in this process",
                    cfg.port
                ))
            })?;
        let frame_size = cfg.frame_size;
        spawn_tx_on(
            format!("lr-tx{queue}"),
            cfg.tx_worker(queue, no_socket(queue, &cfg.io)),
            move |template| {
                let port = tx.with_template(template, frame_size);
                Ok((port, BindMode::Loopback, None, false))
            },
        )
    }

    /// Starts rr client `queue` on the end its responder left.
    fn spawn_client(
        &self,
        cfg: &RrConfig<'_>,
        queue: u32,
        clients: ClientConfig,
    ) -> Result<Worker<RrSummary>, WorkerError> {
        let end = rr_links()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(cfg.port, queue))
            .ok_or_else(|| {
                WorkerError::Hook(format!(
                    "no loopback responder listens on port {} queue {queue}: the loopback engine runs both ends in this process",
                    cfg.port
                ))
            })?;
        spawn_client_on(
            format!("lr-cli{queue}"),
            client_worker(cfg, queue),
            clients,
            move |template, max_len| {
                let port = end.with_template(template, max_len);
                Ok((port, BindMode::Loopback, None, false))
            },
        )
    }

    /// Starts rr responder `queue`: makes the duplex link and leaves the
    /// client's end (each end takes its frames' template in its worker),
    /// drops requests on its own as `--inject-loss` says.
    fn spawn_responder(
        &self,
        cfg: &RrConfig<'_>,
        queue: u32,
    ) -> Result<Worker<RrSummary>, WorkerError> {
        let (client_end, mine) = loopback::duplex(&[], &[], 0, capacity(&cfg.io), cfg.io.batch);
        rr_links()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((cfg.port, queue), client_end);
        let n = drop_every(cfg.inject_loss_pct).unwrap_or(u64::MAX);
        spawn_responder_on(
            format!("lr-rsp{queue}"),
            responder_worker(cfg, queue),
            move |template, max_len| {
                let port = mine.with_template(template, max_len);
                Ok((
                    Faults::new(port, Fault::Drop, n, n - 1),
                    BindMode::Loopback,
                    None,
                    false,
                ))
            },
        )
    }

    fn spawn_receiver(
        &self,
        cfg: &ReceiverConfig<'_>,
        queue: u32,
    ) -> Result<Worker<RxSummary>, WorkerError> {
        let (tx, rx) = loopback::link(&[], 0, capacity(&cfg.io), cfg.io.batch);
        links()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((cfg.port, queue), tx);
        let every = drop_every(cfg.inject_loss_pct);
        let key = (cfg.port, queue);
        spawn_rx_on(
            format!("lr-rx{queue}"),
            RxWorkerConfig {
                socket: no_socket(queue, &cfg.io),
                batch: cfg.io.batch,
                wait: cfg.workers.wait,
                verify: cfg.verify,
                yield_when_idle: false,
                priority: cfg.rx_priority,
                placement: cfg.workers.placement(queue),
                stop: cfg.workers.stop.clone(),
                on_bound: Box::new(|_| Ok(())),
                count_foreign: false,
                capture: cfg.io.capture,
                credits: None,
            },
            move || {
                // One port type whether or not frames are dropped: frames
                // N-1, 2N-1, ... of every N (none without loss).
                let n = every.unwrap_or(u64::MAX);
                let port = Faults::new(rx, Fault::Drop, n, n - 1);
                dropped()
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key, port.injected());
                Ok((port, BindMode::Loopback, None, false))
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loss_percentage_is_one_frame_in_n() {
        assert_eq!(drop_every(0.0), None);
        assert_eq!(drop_every(1.0), Some(100));
        assert_eq!(drop_every(0.5), Some(200));
        assert_eq!(drop_every(100.0), Some(1));
        assert_eq!(drop_every(30.0), Some(3));
    }
}
