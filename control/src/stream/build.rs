//! A stream's result from what its run measured: a pure function, no I/O.

use linerate_datapath::{
    geometry::Geometry,
    priority::Priority,
    stats::CounterSnapshot,
    worker::{RxSummary, TxSummary, WaitMode},
};

use crate::{
    plan::stream::StreamPlan,
    session::{placement, Ends, Measured, WorkerNames},
};
use linerate_results::{
    latency::{Latency, ReceiveTime},
    stream::{CpuReport, FrameAccounting, Params, Setup, SideFigures, StreamResult},
};

/// What a stream calls the workers of each end.
pub(super) const NAMES: WorkerNames = WorkerNames {
    tx: "sender",
    rx: "receiver",
};

/// The receivers' one-way latencies merged; none when no receiver of ours
/// ran, or they counted another tool's frames (no send time in them).
fn one_way(rx_only: bool, receivers: &[RxSummary]) -> Option<Latency> {
    if rx_only {
        return None;
    }
    let mut l = Latency::merged(receivers.iter().map(|s| s.latency.histogram()))?;
    l.out_of_range = receivers.iter().map(|s| s.latency.out_of_range()).sum();
    // Every receiver reads its clock once per batch (datapath's latency.rs).
    l.receive_time = Some(ReceiveTime::PerBatch);
    Some(l)
}

/// The result of `plan`'s run, from what it measured.
/// `credit_window`: the frames a generator flow could have unacknowledged by its
/// receivers (its backpressure), when it had any.
pub fn result(
    plan: &StreamPlan,
    measured: &Measured<TxSummary, RxSummary>,
    credit_window: Option<u64>,
) -> StreamResult {
    let path = &plan.path;
    let window = &measured.window;
    let (sender, receiver) = side_figures(plan, measured);
    // With --tx-only nothing is received here: the CPU per MB sent.
    let counted_mb_s = if plan.tx_only {
        sender.counted_mb_s()
    } else {
        receiver.counted_mb_s()
    };
    let mut total_cpu = linerate_results::parts::figures(&window.cpu, &[], counted_mb_s);
    if let Some(own) = window.own_on(&[]) {
        total_cpu = total_cpu.with_own(own, counted_mb_s);
    }

    let mut frames = frame_accounting(plan, measured);
    if plan.run.xdp.inject_loss > 0.0 {
        frames.injected = Some(if plan.receiver.can().in_memory {
            crate::engine::loopback_injected(plan.run.sockets.port)
        } else {
            measured.steering.rx.dropped
        });
    }

    let workers = measured.worker_reports(
        Ends { tx: "tx", rx: "rx" },
        |s| (s.counters, s.xsk),
        |s| (s.counters, s.xsk),
    );
    let tx_wait = path.tx_wait(&plan.run.wait, measured.here.rx);
    StreamResult {
        test: "stream",
        common: measured.envelope(workers),
        params: params(plan, tx_wait),
        setup: setup(plan, measured, credit_window, tx_wait),
        sender,
        receiver,
        frames,
        cpu: CpuReport {
            per_core: window.cpu.clone(),
            total: total_cpu,
            hosts: None,
        },
        xdp: measured.steering.rx,
        latency: one_way(plan.rx_only, &measured.rx.summaries),
        receiver_window_s: None,
        generator: generator_figures(plan, measured),
    }
}

/// The run's parameters as the result reports them.
fn params(plan: &StreamPlan, tx_wait: WaitMode) -> Params {
    let run = &plan.run;
    let path = &plan.path;
    Params {
        backend: crate::engine::backend(run.sockets.backend).name().into(),
        gso: run.sockets.gso,
        gro: run.sockets.gro,
        frame_size: plan.frame_size,
        size_mix: plan.mix.as_ref().map(ToString::to_string),
        ipv6: run.sockets.ipv6,
        mtu: path.mtu,
        queues: path.queues,
        warmup_s: run.timing.warmup.as_secs_f64(),
        duration_s: run.timing.duration.as_secs_f64(),
        count: plan.count,
        rate_pps: plan.rate,
        tx_wait: tx_wait.name().into(),
        rx_wait: path.rx_wait(&run.wait).name().into(),
        batch: run.rings.batch,
        ring: run.rings.tx_ring,
        rx_ring: run.rings.rx_ring,
        port: run.sockets.port,
        tx_cores: path.tx_cores.clone(),
        rx_cores: path.rx_cores.clone(),
        tx_iface: path.tx.iface.clone(),
        tx_netns: path.tx.netns.clone(),
        rx_iface: path.rx.iface.clone(),
        rx_netns: path.rx.netns.clone(),
        lab: path.lab.as_ref().map(|l| l.name.clone()),
    }
}

/// How the run was set up: the sockets' and XDP's modes, the UMEM, the
/// placement and the engines.
fn setup(
    plan: &StreamPlan,
    measured: &Measured<TxSummary, RxSummary>,
    credit_window: Option<u64>,
    tx_wait: WaitMode,
) -> Setup {
    let run = &plan.run;
    let path = &plan.path;
    let ready = || measured.tx.ready.iter().chain(&measured.rx.ready);
    let refused = ready().find_map(|r| r.fallback_reason.clone());
    let huge_pages = ready().any(|r| r.huge_pages);
    let umem = plan.sender.can().umem || plan.receiver.can().umem;
    Setup {
        tx_bind_mode: measured
            .tx
            .ready
            .first()
            .map_or(
                if plan.rx_only {
                    linerate_results::stream_table::RX_ONLY
                } else {
                    "none (other host)"
                },
                |r| r.mode.as_str(),
            )
            .to_string(),
        rx_bind_mode: measured
            .rx
            .ready
            .first()
            .map_or(
                if plan.tx_only {
                    linerate_results::stream_table::TX_ONLY
                } else {
                    "none (other host)"
                },
                |r| r.mode.as_str(),
            )
            .to_string(),
        zero_copy_refused: refused,
        xdp_mode: measured.xdp_mode.clone(),
        xdp_fallback_reason: measured.xdp_fallback_reason.clone(),
        descs_per_frame: plan.descs_per_frame(),
        umem_chunk: umem.then_some(plan.chunk_size),
        umem_huge_pages: umem.then_some(huge_pages),
        payload_per_frame: Geometry::for_mtu(path.mtu)
            .ipv6(run.sockets.ipv6)
            .udp_payload_of(plan.frame_size),
        placement: engines_placed(
            plan,
            credit_window,
            placement(
                (&run.path, &run.wait, &run.napi),
                NAMES,
                path,
                measured.napi,
                &measured.napi_threads,
                tx_wait,
            ),
        ),
        napi_threads: measured.napi_threads.clone(),
        napi: measured.napi.map(str::to_string),
        napi_priority: (!measured.napi_threads.is_empty())
            .then(|| run.napi.priority.map(|p| p.to_string()))
            .flatten(),
        gen_priority: gen_priority(plan, credit_window).map(|p| p.to_string()),
        rx_priority: run.priorities.receivers.map(|p| p.to_string()),
        driver: path.rx.info.kind.clone(),
        tx_engine: plan.sender.name().into(),
        tx_window: credit_window,
        rx_engine: plan.receiver.name().into(),
        wait: measured.wait.clone(),
        verify: (plan.receiver.can().checksums && !plan.tx_only).then(|| plan.verify.to_string()),
    }
}

/// Whether the sender has no backpressure (and ran here): then what its
/// link dropped never left.
fn sender_drops(plan: &StreamPlan, measured: &Measured<TxSummary, RxSummary>) -> bool {
    !plan.sender.can().backpressure && measured.here.tx
}

/// The in-kernel generator's calls and credit (none for other senders or
/// a sender elsewhere).
fn generator_figures(
    plan: &StreamPlan,
    measured: &Measured<TxSummary, RxSummary>,
) -> Option<linerate_results::stream::GeneratorFigures> {
    if plan.sender.name() != "generator" || !measured.here.tx {
        return None;
    }
    let window = measured.window.tx();
    let flows = measured.tx.summaries.len().max(1) as f64;
    let wait: u64 = measured.tx.summaries.iter().map(|s| s.credit_wait_ms).sum();
    let run_ms = (measured.window.seconds + plan.run.timing.warmup.as_secs_f64()) * 1000.0;
    Some(linerate_results::stream::GeneratorFigures {
        calls: window.syscalls,
        frames_per_call: if window.syscalls > 0 {
            window.frames as f64 / window.syscalls as f64
        } else {
            0.0
        },
        credit_wait_ms: wait,
        credit_wait_pct: if run_ms > 0.0 {
            (100.0 * wait as f64 / (run_ms * flows)).min(100.0)
        } else {
            0.0
        },
    })
}

/// The sender's and the receiver's figures over the window.
fn side_figures(
    plan: &StreamPlan,
    measured: &Measured<TxSummary, RxSummary>,
) -> (SideFigures, SideFigures) {
    let path = &plan.path;
    let window = &measured.window;
    let messages = plan.message.is_some();
    // Over the window, what left is what the link itself sent (read at
    // the window's edges, not the difference of two large counts read
    // at slightly different instants).
    let sent_in_window = if sender_drops(plan, measured) {
        as_left(&window.tx(), &window.link.tx)
    } else {
        window.tx()
    };
    let mut sender = SideFigures::from_window(
        &sent_in_window,
        window.seconds,
        &window.cpu,
        &path.tx_cores,
        messages,
    );
    let mut receiver = SideFigures::from_window(
        &window.rx(),
        window.seconds,
        &window.cpu,
        &path.rx_cores,
        messages,
    );
    sender.link_packets_per_s = window.per_s(window.link.tx.tx_packets);
    receiver.link_packets_per_s = window.per_s(window.link.rx.rx_packets);
    if let (Some(tx), Some(rx)) = (window.own_on(&path.tx_cores), window.own_on(&path.rx_cores)) {
        let (tx_mb_s, rx_mb_s) = (sender.counted_mb_s(), receiver.counted_mb_s());
        sender.cpu = sender.cpu.with_own(tx, tx_mb_s);
        receiver.cpu = receiver.cpu.with_own(rx, rx_mb_s);
    }
    (sender, receiver)
}

/// The whole run's frame (and message) accounting; with --tx-only no loss
/// is measured.
fn frame_accounting(
    plan: &StreamPlan,
    measured: &Measured<TxSummary, RxSummary>,
) -> FrameAccounting {
    let dropped = |n: u64| if sender_drops(plan, measured) { n } else { 0 };
    let sent = measured.tx.total(|s| s.counters);
    let received = measured.rx.total(|s| s.counters);
    let mut frames = FrameAccounting::count(
        &sent,
        &received,
        measured.tx.summaries.iter().map(|s| s.unfinished).sum(),
        plan.message.map(|cut| (cut.msg_len, cut.count)),
        !plan.tx_only && plan.receiver.can().checksums && plan.verify.checks(),
    )
    .with_sender_drops(dropped(measured.interfaces.tx.tx_dropped));
    frames.resent = measured.tx.summaries.iter().map(|s| s.resent).sum();
    frames.slipped = measured.tx.summaries.iter().map(|s| s.slipped).sum();
    if plan.count.is_some() {
        frames = frames.counted();
    }
    if plan.tx_only {
        // No receiver of ours: no loss measured (not all of it lost).
        frames.lost = 0;
        frames.loss_pct = 0.0;
        if let Some(m) = &mut frames.messages {
            m.lost = 0;
            m.loss_pct = 0.0;
        }
    }
    frames
}

/// The placement line with the engines that sent and received, and why
/// `--tx-engine auto` chose its sender.
/// The generator's runners' scheduling, when the generator sent and it
/// was set: `--gen-priority`, else nice 19 beside AF_XDP receivers that
/// wait (see `engine::credit`).
fn gen_priority(plan: &StreamPlan, window: Option<u64>) -> Option<Priority> {
    let run = &plan.run;
    (plan.sender.name() == "generator")
        .then(|| {
            run.priorities.generator.or((window.is_some()
                && plan.path.rx_wait(&run.wait) == WaitMode::Wait
                && plan.path.shared_cores())
            .then_some(Priority::Other(19)))
        })
        .flatten()
}

fn engines_placed(plan: &StreamPlan, window: Option<u64>, placed: String) -> String {
    let why = plan
        .tx_engine_reason
        .as_ref()
        .map(|w| format!(" ({w})"))
        .unwrap_or_default();
    let waits = window
        .map(|w| format!(", waiting for the receivers' acknowledgements ({w} frames a flow)"))
        .unwrap_or_default();
    let waits = match gen_priority(plan, window) {
        Some(p) => format!("{waits}, its runners at {p}"),
        None => waits,
    };
    let at = plan
        .run
        .priorities
        .receivers
        .map(|p| format!(" at {p}"))
        .unwrap_or_default();
    format!(
        "sent by {}{why}{waits}, received by {}{at}; {placed}",
        plan.sender.name(),
        plan.receiver.name()
    )
}

/// The frames `c` counts as what left the sending link: the frames and
/// bytes the link itself sent (`link`), payload and messages in
/// proportion (exact for frames of one size).
fn as_left(c: &CounterSnapshot, link: &linerate_host::iface::IfCounters) -> CounterSnapshot {
    let part = |n: u64| {
        (u128::from(n) * u128::from(link.tx_packets))
            .checked_div(u128::from(c.frames))
            .unwrap_or(0) as u64
    };
    CounterSnapshot {
        frames: link.tx_packets,
        bytes: link.tx_bytes,
        payload_bytes: part(c.payload_bytes),
        messages: part(c.messages),
        message_bytes: part(c.message_bytes),
        ..*c
    }
}

#[cfg(test)]
mod tests {
    use linerate_datapath::{
        stats::CounterSnapshot,
        worker::Ready,
        xsk::{BindMode, XskStats},
    };

    use linerate_results::parts::CpuSource;

    use super::*;
    use crate::{
        request::RunRequest,
        session::{busy_cores, Ends, Finished, Window},
    };

    fn plan(args: &[&str]) -> StreamPlan {
        StreamPlan::for_test(&RunRequest::stream_args(args))
    }

    /// `n` frames of 1518 bytes (1514 in the descriptor, 1472 of payload),
    /// in messages of `per_message` frames.
    fn frames(count: u64, per_message: u64) -> CounterSnapshot {
        CounterSnapshot {
            frames: count,
            bytes: count * 1514,
            payload_bytes: count * 1472,
            messages: count / per_message,
            message_bytes: count / per_message * 1000,
            ..Default::default()
        }
    }

    fn ready(core: usize) -> Ready {
        Ready {
            mode: BindMode::Copy,
            fallback_reason: Some("no zero-copy on veth".into()),
            huge_pages: false,
            core: Some(core),
            tid: 100 + core as i32,
        }
    }

    fn measured(
        start: (u64, u64),
        end: (u64, u64),
        sent: u64,
        received: u64,
    ) -> Measured<TxSummary, RxSummary> {
        let window = Window {
            seconds: 0.5,
            cpu: busy_cores(&[100.0, 50.0]),
            start: Ends {
                tx: vec![frames(start.0, 1)],
                rx: vec![frames(start.1, 1)],
            },
            end: Ends {
                tx: vec![frames(end.0, 1)],
                rx: vec![frames(end.1, 1)],
            },
            link: Ends::default(),
            threads: vec![linerate_results::threads::ThreadUse {
                tid: 4242,
                name: "lr-rx0".into(),
                run_ms: 250.0,
                run_pct: 50.0,
                cores: vec![1],
                ..Default::default()
            }],
            softirq: Vec::new(),
            whole_run: false,
        };
        let tx = Finished {
            ready: vec![ready(0)],
            summaries: vec![TxSummary {
                counters: frames(sent, 1),
                xsk: XskStats::default(),
                unfinished: 3,
                capture: None,
                resent: 0,
                credit_wait_ms: 0,
                slipped: 0,
            }],
        };
        let rx = Finished {
            ready: vec![ready(1)],
            summaries: vec![RxSummary {
                counters: frames(received, 1),
                ..Default::default()
            }],
        };
        Measured::for_test(window, tx, rx)
    }

    #[test]
    fn rates_and_loss_from_two_snapshots() {
        let out = result(
            &plan(&[]),
            &measured((1_000, 900), (401_000, 400_900), 500_000, 495_000),
            None,
        );
        // 400,000 frames in half a second, each side.
        assert_eq!(out.sender.frames, 400_000);
        assert_eq!(out.sender.frames_per_s, 800_000.0);
        assert_eq!(out.receiver.frames_per_s, 800_000.0);
        assert!((out.receiver.payload_mb_s - 800_000.0 * 1472.0 / 1e6).abs() < 1e-6);
        // Wire: 1514 + FCS + preamble and gap = 1538 bytes a frame.
        assert!((out.receiver.wire_mb_s - 800_000.0 * 1538.0 / 1e6).abs() < 1e-6);
        // The whole run's accounting, not the window's.
        assert_eq!((out.frames.sent, out.frames.received), (500_000, 495_000));
        assert_eq!(out.frames.lost, 5_000);
        assert!((out.frames.loss_pct - 1.0).abs() < 1e-12);
        assert_eq!(out.frames.unfinished, 3);
        assert!(out.frames.messages.is_none());
        // CPU: the receiver's core, and both: linerate's own time is the
        // headline, the busy share stays beside it.
        assert_eq!(out.receiver.cpu.cpu_pct, 50.0);
        assert_eq!(out.receiver.cpu.cpu_source, CpuSource::Own);
        assert_eq!(out.receiver.cpu.busy_pct, Some(50.0));
        assert_eq!(out.cpu.total.busy_pct, Some(75.0));
        assert_eq!(out.cpu.total.cpu_pct, 25.0);
        assert_eq!(out.sender.cpu.cpu_pct, 0.0);
        assert_eq!(out.sender.cpu.busy_pct, Some(100.0));
        assert_eq!(out.sender.cpu.service_demand_ms_per_mb, Some(0.0));
        assert!(out.sender.cpu.host_service_demand_ms_per_mb.unwrap() > 0.0);
        // linerate's own: the one thread, on the receiver's core 1.
        assert_eq!(out.receiver.cpu.own_pct, Some(50.0));
        assert_eq!(out.receiver.cpu.interference_pct, Some(0.0));
        assert_eq!(out.sender.cpu.own_pct, Some(0.0));
        assert_eq!(out.sender.cpu.interference_pct, Some(100.0));
        // One report per worker, its window from the two snapshots.
        let roles: Vec<_> = out
            .common
            .workers
            .iter()
            .map(|w| (w.role, w.window.frames))
            .collect();
        assert_eq!(roles, [("tx", 400_000), ("rx", 400_000)]);
        // Every thread of the window, as measured.
        let threads: Vec<_> = out
            .common
            .threads
            .iter()
            .map(|t| (t.tid, t.run_pct))
            .collect();
        assert_eq!(threads, [(4242, 50.0)]);
        assert_eq!(out.params.frame_size, 1518);
        assert_eq!(out.params.backend, "xdp");
        assert_eq!(out.setup.payload_per_frame, 1472);
        assert_eq!(out.setup.umem_chunk, Some(2048));
        assert_eq!(out.setup.tx_bind_mode, "copy");
        assert_eq!(
            out.setup.zero_copy_refused.as_deref(),
            Some("no zero-copy on veth")
        );
    }

    #[test]
    fn messages_kernel_engines_and_one_side() {
        let udp = plan(&["--message", "1000", "--backend", "udp"]);
        let mut one_side = measured((0, 0), (600, 600), 900, 600);
        one_side.tx = Finished::default();
        one_side.here = Ends {
            tx: false,
            rx: true,
        };
        let out = result(&udp, &one_side, None);
        let msg = out.frames.messages.expect("a message stream");
        assert_eq!((msg.message_bytes, msg.frames_per_message), (1000, 1));
        // This host ran no senders: it counts what arrived.
        assert_eq!((msg.sent, msg.received, msg.lost), (0, 600, 0));
        assert_eq!(out.setup.tx_bind_mode, "none (other host)");
        assert_eq!(out.setup.umem_chunk, None);
        assert_eq!(out.params.backend, "udp");
        assert_eq!(out.receiver.messages_per_s, Some(1200.0));
        let rx_only = plan(&["--rx-only"]);
        assert_eq!(
            result(&rx_only, &one_side, None).setup.tx_bind_mode,
            "none (--rx-only)"
        );
    }

    #[test]
    fn the_generator_sent_what_its_link_did_not_drop() {
        let gen = plan(&["--tx-engine", "generator"]);
        let mut m = measured((1_000, 900), (401_000, 300_900), 500_000, 390_000);
        m.window.link.tx.tx_dropped = 100_000;
        m.window.link.tx.tx_packets = 300_000;
        m.window.link.tx.tx_bytes = 300_000 * 1514;
        m.interfaces.tx.tx_dropped = 105_000;
        let out = result(&gen, &m, None);
        // The window: 400,000 handed over, 300,000 of them left the link.
        assert_eq!(out.sender.frames, 300_000);
        assert_eq!(out.sender.frames_per_s, 600_000.0);
        assert!((out.sender.payload_mb_s - 600_000.0 * 1472.0 / 1e6).abs() < 1e-6);
        // The whole run: sent is what left; lost is lost on the way.
        let f = &out.frames;
        assert_eq!((f.sent, f.dropped_at_sender), (395_000, 105_000));
        assert_eq!((f.received, f.lost), (390_000, 5_000));
        // AF_XDP waits for room: its completions are what it sent.
        let out = result(&plan(&[]), &m, None);
        assert_eq!(
            (out.frames.sent, out.frames.dropped_at_sender),
            (500_000, 0)
        );
        assert_eq!(out.sender.frames, 400_000);
    }

    #[test]
    fn a_counted_run_counts_the_frames_its_link_dropped_as_loss() {
        let mut m = measured((1_000, 900), (401_000, 300_900), 500_000, 390_000);
        m.interfaces.tx.tx_dropped = 105_000;
        let counted = plan(&["--tx-engine", "generator", "--count", "500000"]);
        let f = result(&counted, &m, None).frames;
        assert_eq!(
            (f.sent, f.dropped_at_sender, f.lost),
            (395_000, 105_000, 5_000)
        );
        // 110,000 of the 500,000 handed over did not arrive.
        assert_eq!(f.loss_pct, 22.0);
        // Not counted: the loss is of what left the link, as before.
        let timed = plan(&["--tx-engine", "generator"]);
        let f = result(&timed, &m, None).frames;
        assert_eq!(f.loss_pct, linerate_results::parts::percent(5_000, 395_000));
    }

    #[test]
    fn tx_only_reports_no_receiver() {
        let mut senders_only = measured((1_000, 0), (401_000, 0), 500_000, 0);
        senders_only.rx = Finished::default();
        senders_only.window.start.rx.clear();
        senders_only.window.end.rx.clear();
        senders_only.here = Ends {
            tx: true,
            rx: false,
        };
        let out = result(&plan(&["--tx-only"]), &senders_only, None);
        assert_eq!(out.setup.rx_bind_mode, "none (--tx-only)");
        assert_eq!(out.frames.sent, 500_000);
        // Nothing of ours received: no loss measured, not all of it lost.
        assert_eq!((out.frames.lost, out.frames.loss_pct), (0, 0.0));
        // Service demand per MB sent: linerate's own 25 % of 2 cores (the
        // one thread, 50 % of core 1) at 1177.6 MB/s sent; the busy share
        // (75 %) beside it.
        let sd = out.cpu.total.service_demand_ms_per_mb.unwrap();
        assert!((sd - 25.0 * 2.0 * 10.0 / 1177.6).abs() < 1e-9, "{sd}");
        let host = out.cpu.total.host_service_demand_ms_per_mb.unwrap();
        assert!((host - 75.0 * 2.0 * 10.0 / 1177.6).abs() < 1e-9, "{host}");
        let line = linerate_results::stream_table::summary(&out);
        assert!(
            line.starts_with("stream: sent 800,000 frames/s, 9.84 Gbit/s, no receiver of ours (--tx-only): loss not measured, CPU tx 0.0 %, SD 0.425 ms/MB"),
            "{line}"
        );
        let table = linerate_results::stream_table::print_table(&out);
        assert!(!table.contains("\n  received "), "{table}");
        assert!(
            table.contains(
                "whole run: sent 500000, still in the kernel at the end 3; no receiver of ours"
            ),
            "{table}"
        );
        // A whole stream's line: what arrived, the loss, both sides.
        let both = result(
            &plan(&[]),
            &measured((1_000, 900), (401_000, 400_900), 500_000, 495_000),
            None,
        );
        assert_eq!(
            linerate_results::stream_table::summary(&both),
            "stream: received 800,000 frames/s, 9.84 Gbit/s, lost 5,000 of 500,000 frames (1.0000 %), CPU tx 0.0 % rx 50.0 %, SD 0.425 ms/MB\n"
        );
    }

    #[test]
    fn an_empty_window() {
        let mut empty = measured((0, 0), (0, 0), 0, 0);
        empty.window.seconds = 0.0;
        let out = result(&plan(&[]), &empty, None);
        assert_eq!(out.sender.frames_per_s, 0.0);
        assert_eq!(out.frames.loss_pct, 0.0);
    }
}
