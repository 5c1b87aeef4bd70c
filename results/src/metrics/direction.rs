//! Which way a figure gets worse: the gates of CI (`report --compare
//! --fail-if-worse`) judge a change by it.

/// Whether a lower value of metric `name` is better (a latency, a CPU
/// share, a service demand, a loss), higher (a rate, a count of what got
/// through), or neither: the run's own parameters and setup, the windows,
/// the number of latency samples.
pub fn lower_is_better(name: &str) -> Option<bool> {
    const NEUTRAL: &[&str] = &[
        "params.",
        "setup.",
        "window_s",
        "receiver_window_s",
        "latency.count",
        "latency.clock.",
        "frames.messages.message_bytes",
        "frames.messages.frames_per_message",
    ];
    if NEUTRAL.iter().any(|n| name.starts_with(n)) || name.ends_with(".avg_frame_size") {
        return None;
    }
    const LOWER: &[&str] = &[
        "lost",
        "loss_pct",
        "seq_gaps",
        "reordered",
        "duplicates",
        "dropped",
        "unfinished",
        "timeouts",
        "late",
        "invalid",
        "ring_full",
        "ring_empty",
        "failed",
        "malformed",
        "foreign",
    ];
    let last = name.rsplit('.').next().unwrap_or(name);
    let lower = name.starts_with("latency.")
        || name.starts_with("cpu.")
        || name.contains(".cpu.")
        || last.ends_with("_us")
        || last.starts_with("us_per_")
        || LOWER.iter().any(|w| last.contains(w));
    Some(lower)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_and_losses_go_down_rates_go_up() {
        for lower in [
            "latency.p99_us",
            "cpu.total.cpu_pct",
            "cpu.hosts.rx.service_demand_ms_per_mb",
            "frames.loss_pct",
            "frames.lost",
            "transactions.timeouts",
            "xsk.rx.rx_ring_full",
            "interfaces.rx.rx_dropped",
            "derived.us_per_message",
            "receiver.cpu.cpu_pct",
            "sender.cpu.service_demand_ms_per_mb",
        ] {
            assert_eq!(lower_is_better(lower), Some(true), "{lower}");
        }
        for higher in [
            "receiver.frames_per_s",
            "receiver.message_mb_s",
            "transactions.per_s",
            "frames.received",
            "derived.rr_mb_s",
            "counters.rx.frames_per_s",
        ] {
            assert_eq!(lower_is_better(higher), Some(false), "{higher}");
        }
        for neither in [
            "params.mtu",
            "setup.umem_chunk",
            "window_s",
            "latency.count",
        ] {
            assert_eq!(lower_is_better(neither), None, "{neither}");
        }
    }
}
