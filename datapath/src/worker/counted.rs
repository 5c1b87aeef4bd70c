//! The XDP-only receiver's worker: the steering program, in count-only
//! mode, accounts every test frame per flow (the rules of
//! [`crate::sequence::SequenceTracker`]) and drops it, with no copy to user
//! space; this worker only reads its flow's entry and publishes it as a
//! receiver's counters every [`PUBLISH_EVERY`], so that the run's window,
//! drain and results read it like any receiver's.

use std::{sync::Arc, thread, time::Duration};

use linerate_ebpf::{RxFlowCounters, Steering};

use super::{
    error::WorkerError,
    flows::RxSummary,
    spawn::{spawn_with, Placement, StopSignal, Worker},
};
use crate::{binding::BindMode, frame::HEADER_OFFSET};
use linerate_counters::stats::CounterSnapshot;

/// How often the worker publishes its flow's counters.
const PUBLISH_EVERY: Duration = Duration::from_millis(1);

/// Everything an XDP-only receiver's worker needs.
#[derive(Debug, Clone)]
pub struct CountedWorkerConfig {
    /// The steering program attached to the receiving interface, already
    /// in count-only mode.
    pub steering: Arc<Steering>,
    /// The flow this worker reports (its queue's sender's flow).
    pub flow: u16,
    /// Where to run.
    pub placement: Placement,
    /// When to stop.
    pub stop: StopSignal,
}

/// A flow's accounting as a receiver's counters: frame bytes without FCS,
/// UDP payload what follows the headers.
fn counters(f: &RxFlowCounters) -> CounterSnapshot {
    CounterSnapshot {
        frames: f.received,
        bytes: f.bytes,
        payload_bytes: f.bytes.saturating_sub(f.received * HEADER_OFFSET as u64),
        lost: f.lost,
        reordered: f.reordered,
        duplicates: f.duplicates,
        ..Default::default()
    }
}

/// Starts an XDP-only receiver's worker.
pub fn spawn_counted(
    name: String,
    cfg: CountedWorkerConfig,
) -> Result<Worker<RxSummary>, WorkerError> {
    let read_err = |e: linerate_ebpf::EbpfError| WorkerError::Hook(e.to_string());
    spawn_with(
        name,
        cfg.placement.clone(),
        move || Ok(((), BindMode::XdpOnly, None, false)),
        move |(), published| {
            let read = || cfg.steering.rx_flow(cfg.flow).map_err(read_err);
            loop {
                published.publish(&counters(&read()?));
                if cfg.stop.should_stop(std::time::Instant::now()) {
                    break;
                }
                thread::sleep(PUBLISH_EVERY);
            }
            let last = counters(&read()?);
            published.publish(&last);
            Ok(RxSummary {
                counters: last,
                ..Default::default()
            })
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_as_receiver_counters() {
        // 64-byte frames: 60 bytes each in XDP, 18 of them UDP payload.
        let f = RxFlowCounters {
            received: 1000,
            lost: 7,
            reordered: 2,
            duplicates: 1,
            bytes: 60_000,
            next: 1006,
        };
        let c = counters(&f);
        assert_eq!((c.frames, c.bytes, c.payload_bytes), (1000, 60_000, 18_000));
        assert_eq!((c.lost, c.reordered, c.duplicates), (7, 2, 1));
    }
}
