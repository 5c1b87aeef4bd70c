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
    worker::{spawn_gen, GenWorkerConfig, LinkDrops, TxSummary, Worker, WorkerError},
};

use super::contract::{Capabilities, Engine, SenderConfig};

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

/// Frames veth's peer holds per receive queue (VETH_RING_SIZE): what a
/// redirected frame waits in for the receiving NAPI; a frame handed over
/// with the ring full is dropped at the sender.
const VETH_RING: u64 = 256;

/// The frames each generator flow may have unacknowledged, so that the
/// flows meeting in one receive queue never hold more than its socket's
/// RX ring takes: veth puts a redirected frame on the receive queue of the
/// sending CPU (`smp_processor_id() % queues`), so the flows of one
/// sending core share one queue. With NAPI in softirq (`--napi auto` for
/// the generator) veth's receive runs on the sending core after every
/// batch of 64 frames, so its 256-frame ring never fills and the RX ring
/// is the bound; with a NAPI thread, which may run late, veth's ring is
/// (measured, 16 flows x 64 KB at MTU 1500: per-flow windows of 32, 128
/// and 1024 frames received 1,917, 3,268 and 3,666 MB/s of whole
/// messages, none lost, none dropped at the sender). At least 8.
pub(crate) fn credit_window(
    tx_cores: &[usize],
    rx_queues: u32,
    rx_ring: u32,
    napi_threaded: bool,
) -> u64 {
    let queues = rx_queues.max(1) as usize;
    let mut per_queue = vec![0u64; queues];
    for &core in tx_cores {
        per_queue[core % queues] += 1;
    }
    let sharing = per_queue.into_iter().max().unwrap_or(1).max(1);
    let ring = u64::from(rx_ring.max(1));
    let held = if napi_threaded {
        VETH_RING.min(ring)
    } else {
        ring
    };
    (held / sharing).max(8)
}

/// The most a counted flow without backpressure (its receivers on
/// another host or in another process) sends back to back after falling
/// behind: its share of veth's ring, as if every flow met in one receive
/// queue, so that `--count N` means N (a larger catch-up is dropped at the
/// sender). A timed run, or one with backpressure, catches up in full.
fn counted_catch_up(count: Option<u64>, credit: bool, cores: &[usize]) -> Option<u64> {
    (count.is_some() && !credit).then(|| (VETH_RING / cores.len().max(1) as u64).max(8))
}

/// The sending link's drops, read for a counted flow alone on its link
/// without backpressure (one queue, receivers elsewhere), which sends as
/// many again as the link dropped: the interface's tx drops, as
/// `ip -s link` counts them, in its namespace.
fn resend_drops(cfg: &SenderConfig<'_>) -> Option<LinkDrops> {
    if cfg.count.is_none() || cfg.credit.is_some() || cfg.workers.cores.len() != 1 {
        return None;
    }
    let (iface, netns) = (cfg.workers.end.iface.clone(), cfg.workers.end.netns.clone());
    Some(LinkDrops(std::sync::Arc::new(move || {
        linerate_host::iface::info(netns.as_deref(), &iface)
            .ok()
            .map(|i| i.counters.tx_dropped)
    })))
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
    checksums: false,
    injects_loss: false,
    in_memory: false,
    unprivileged: false,
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
                credit: cfg.credit.clone(),
                max_burst: counted_catch_up(cfg.count, cfg.credit.is_some(), cfg.workers.cores),
                link_drops: resend_drops(cfg),
                priority: cfg.gen_priority,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_shares_a_receive_queue_between_its_flows() {
        // One flow: the whole RX ring; with a NAPI thread, veth's ring.
        assert_eq!(credit_window(&[0], 1, 8192, false), 8192);
        assert_eq!(credit_window(&[0], 1, 8192, true), 256);
        // 16 flows on two cores into 16 queues: 8 flows per queue.
        let cores: Vec<usize> = (0..16).map(|q| q % 2).collect();
        assert_eq!(credit_window(&cores, 16, 8192, false), 1024);
        assert_eq!(credit_window(&cores, 16, 2048, true), 32);
        // ... into one queue: all 16 share it.
        assert_eq!(credit_window(&cores, 1, 8192, false), 512);
        // A small RX ring bounds it; never below 8.
        assert_eq!(credit_window(&[0], 1, 64, true), 64);
        assert_eq!(credit_window(&[0; 64], 1, 256, false), 8);
    }

    #[test]
    fn counted_flows_without_backpressure_catch_up_within_the_ring() {
        assert_eq!(counted_catch_up(Some(30_000), false, &[0]), Some(256));
        assert_eq!(
            counted_catch_up(Some(30_000), false, &[0, 1, 0, 1]),
            Some(64)
        );
        assert_eq!(counted_catch_up(Some(30_000), false, &[0; 64]), Some(8));
        assert_eq!(counted_catch_up(Some(30_000), true, &[0]), None);
        assert_eq!(counted_catch_up(None, false, &[0]), None);
    }

    #[test]
    fn live_frames_from_5_18() {
        assert!(live_frames_kernel("6.18.0-1-amd64"));
        assert!(live_frames_kernel("5.18.0"));
        assert!(!live_frames_kernel("5.17.15"));
        assert!(!live_frames_kernel("4.19.0-27-amd64"));
        assert!(!live_frames_kernel("unknown"));
    }
}
