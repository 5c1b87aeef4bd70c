//! The in-kernel frame generator: a stream sender only. An XDP program of
//! linerate's run by BPF_PROG_RUN in live-frames mode stamps each frame
//! and hands it to the sending interface as an xdp_frame (no skb, no copy,
//! no UMEM), two runner threads per queue on the queue's core
//! (`datapath::worker::gen`). Frames up to 3408 bytes (live-frames mode
//! takes no more and no multi-buffer), paced and counted in the program,
//! in traffic mixes too (the program sets each frame's length from the
//! mix's pattern); receivers are AF_XDP's.

use linerate_datapath::{
    geometry::Geometry,
    worker::{spawn_gen, GenWorkerConfig, TxSummary, Worker, WorkerError},
};

use super::{Capabilities, Engine, SenderConfig};

/// The generator engine.
pub(super) struct Generator;

/// Whether a kernel of release `release` (`uname -r`: "6.18.0-1-amd64")
/// has live-frames mode (`BPF_F_TEST_XDP_LIVE_FRAMES`, Linux 5.18).
pub(super) fn live_frames_kernel(release: &str) -> bool {
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (5, 18)
}

const CAN: Capabilities = Capabilities {
    stream_sender: true,
    stream_receiver: false,
    rr_responder: None,
    frames: true,
    messages: true,
    // The live-frames limit (bytes handed over, without FCS) as a frame size.
    max_frame: Some(Geometry::frame_size(linerate_ebpf::MAX_LIVE_FRAME)),
    multi_buffer: false,
    pacing: true,
    wait_modes: false,
    steering: false,
    umem: false,
    udp_offloads: false,
    counts_foreign: false,
    backpressure: false,
    size_mix: true,
    ipv6: false,
};

impl Engine for Generator {
    fn name(&self) -> &'static str {
        "generator"
    }

    fn can(&self) -> &Capabilities {
        &CAN
    }

    fn spawn_sender(
        &self,
        cfg: &SenderConfig<'_>,
        queue: u32,
    ) -> Result<Worker<TxSummary>, WorkerError> {
        spawn_gen(
            format!("lr-gen{queue}"),
            GenWorkerConfig {
                iface: cfg.workers.end.iface.clone(),
                frame: cfg.frame(queue),
                message: cfg.message,
                mix: cfg.mix.cloned(),
                rate: cfg.rate,
                count: cfg.count,
                placement: cfg.workers.placement(queue),
                stop: cfg.workers.stop.clone(),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_frames_from_5_18() {
        assert!(live_frames_kernel("6.18.0-1-amd64"));
        assert!(live_frames_kernel("5.18.0"));
        assert!(!live_frames_kernel("5.17.15"));
        assert!(!live_frames_kernel("4.19.0-27-amd64"));
        assert!(!live_frames_kernel("unknown"));
    }
}
