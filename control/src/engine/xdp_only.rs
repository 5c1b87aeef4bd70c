//! The XDP-only receiver: a stream receiver only. The steering program in
//! count-only mode accounts every test frame per flow in the kernel (the
//! rules of the receivers' sequence accounting) and drops it, with no copy
//! to user space: the in-kernel limit of receiving, as the XDP responder is
//! for rr. One worker per queue reads its queue's flow and publishes it
//! (`datapath::worker::counted`).

use linerate_datapath::worker::{
    spawn_counted, CountedWorkerConfig, RxSummary, Worker, WorkerError,
};

use super::contract::{Capabilities, Engine, ReceiverConfig};

/// The XDP-only receiver engine.
pub(super) struct XdpOnly;

const CAN: Capabilities = Capabilities {
    size_mix: false,
    ipv6: false,
    stream_sender: false,
    stream_receiver: true,
    rr_responder: None,
    frames: true,
    // It counts frames and their sequence, not whole messages.
    messages: false,
    max_frame: None,
    multi_buffer: true,
    pacing: false,
    wait_modes: false,
    steering: true,
    umem: false,
    udp_offloads: false,
    counts_foreign: false,
    backpressure: true,
    checksums: false,
    injects_loss: false,
    in_memory: false,
    unprivileged: false,
};

impl Engine for XdpOnly {
    fn name(&self) -> &'static str {
        "xdp-only"
    }

    fn can(&self) -> &Capabilities {
        &CAN
    }

    fn spawn_receiver(
        &self,
        cfg: &ReceiverConfig<'_>,
        queue: u32,
    ) -> Result<Worker<RxSummary>, WorkerError> {
        let steering = cfg.workers.steering.ok_or_else(|| {
            WorkerError::Hook(
                "the XDP-only receiver needs the steering program on the receiving interface"
                    .into(),
            )
        })?;
        steering
            .set_count_only(true)
            .map_err(|e| WorkerError::Hook(e.to_string()))?;
        spawn_counted(
            format!("lr-cnt{queue}"),
            CountedWorkerConfig {
                steering: steering.clone(),
                // Sender q's flow is q (SenderConfig::frame).
                flow: queue as u16,
                placement: cfg.workers.placement(queue),
                stop: cfg.workers.stop.clone(),
            },
        )
    }
}
