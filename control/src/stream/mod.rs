//! `linerate stream`: a one-way stream of frames (or messages) from
//! senders to receivers, measured over a window after a warm-up. With the
//! `xdp` backend they are AF_XDP workers fed by the steering program; with
//! `udp` and `tcp`, kernel sockets measured the same way.

pub mod output;
pub mod plan;
pub mod result;
pub mod search;

use std::{
    net::SocketAddrV4,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    thread,
    time::{Duration, Instant},
};

use anyhow::{anyhow, Context, Result};
use linerate_datapath::{
    frame::{Endpoint, FrameSpec, FCS_LEN, HEADER_OFFSET},
    header::{Kind, HEADER_LEN},
    kernel::{
        tcp::{spawn_tcp_rx, spawn_tcp_tx},
        udp::{spawn_udp_rx, spawn_udp_tx},
        KernelReceiverConfig, KernelStreamConfig,
    },
    message::Fragmentation,
    stats::CounterSnapshot,
    worker::{
        spawn_rx, spawn_tx, Placement, RxSummary, RxWorkerConfig, StopSignal, TxSummary,
        TxWorkerConfig, Worker, WorkerError,
    },
    xsk::{SocketOptions, ZeroCopy},
};
use linerate_ebpf::Steering;

pub use output::print_table;
use plan::Plan;
use result::*;

use crate::{
    cli::BackendArg,
    environment, iface,
    remote::role::Role,
    session::{
        apply_napi, attach_steering, counters_or_zero, hard_deadline, join_all, pin_napi,
        steering_config, sum, wait_until, worker_reports, PathWatch, Restore, Snapshot,
    },
};

/// How long receivers keep draining after the senders stop, at most.
const DRAIN_MAX: Duration = Duration::from_secs(2);
/// How long a receiver on its own host waits past its window for the
/// sender's host to say it is done.
const PEER_GRACE: Duration = Duration::from_secs(10);
/// Receivers stop once nothing arrived for this long.
const DRAIN_QUIET: Duration = Duration::from_millis(150);

/// Runs a planned stream. `interrupted` is set by Ctrl-C/SIGTERM: the run
/// then ends early and reports what it measured.
pub fn run(plan: &Plan, interrupted: &Arc<AtomicBool>) -> Result<StreamResult> {
    run_role(plan, interrupted, None)
}

/// Runs a planned stream, or with `role` only one side of it (the other
/// runs on another host): the result then holds this side's figures.
pub fn run_role(
    plan: &Plan,
    interrupted: &Arc<AtomicBool>,
    role: Option<&Role>,
) -> Result<StreamResult> {
    let a = &plan.args;
    let (runs_tx, runs_rx) = role.map_or((true, true), |r| (r.tx(), r.rx()));
    // With --rx-only another tool sends.
    let runs_tx = runs_tx && !a.rx_only;
    let xdp = a.run.backend == BackendArg::Xdp;
    // Check, then change: the plan locked the interfaces (a second run is
    // refused there) and attaching refuses a foreign XDP program (and is
    // undone when dropped); only then does the NAPI mode change, and
    // `restore` puts it (and the NAPI threads' affinity) back at the end.
    let steering = if xdp && runs_rx {
        Some(attach_steering(
            &plan.path.rx,
            steering_config(&a.run, a.run.port, a.run.port, false),
        )?)
    } else {
        None
    };
    let mut restore = Restore::default();
    let napi_mode = apply_napi(&a.run, &plan.path, true, &mut restore)?;
    let napi_threads = if runs_rx {
        pin_napi(&plan.path.rx, &plan.path.rx_cores, &mut restore)
    } else {
        Vec::new()
    };
    let if_tx0 = iface::info(plan.path.tx.netns.as_deref(), &plan.path.tx.iface)?.counters;
    let if_rx0 = iface::info(plan.path.rx.netns.as_deref(), &plan.path.rx.iface)?.counters;
    let steer0 = match &steering {
        Some(s) => s.stats()?,
        None => Default::default(),
    };

    let started = Instant::now();
    let planned = a.run.warmup + a.run.duration;
    let tx_stop = StopSignal {
        flag: Arc::new(AtomicBool::new(false)),
        deadline: started + hard_deadline(planned, a.run.queues, 0),
    };
    let rx_stop = StopSignal {
        flag: Arc::new(AtomicBool::new(false)),
        deadline: started + hard_deadline(planned, a.run.queues, 5),
    };
    let mut rx_workers = Vec::new();
    for q in (0..a.run.queues).filter(|_| runs_rx) {
        let w = spawn_receiver(plan, q, &rx_stop, steering.as_ref())
            .with_context(|| format!("starting receiver on {} queue {q}", plan.path.rx.iface))?;
        rx_workers.push(w);
    }
    let mut tx_workers = Vec::new();
    if let Some(r) = role.filter(|_| runs_tx) {
        // Senders start at the agreed instant, when the receivers are bound.
        wait_until(r.start, &|| {
            interrupted.load(Ordering::Relaxed) || r.stop_asked()
        });
    }
    for q in (0..a.run.queues).filter(|_| runs_tx) {
        match spawn_sender(plan, q, &tx_stop, plan.path.tx_wait(&a.run, runs_rx)) {
            Ok(w) => tx_workers.push(w),
            Err(e) => {
                rx_stop.flag.store(true, Ordering::Relaxed);
                for w in rx_workers {
                    let _ = w.join();
                }
                return Err(anyhow!(e)).with_context(|| {
                    format!("starting sender on {} queue {q}", plan.path.tx.iface)
                });
            }
        }
    }

    // Warm-up, then the measured window.
    // A receiver on its own host knows a counted run is done when all of
    // it arrived (else the sender's host tells it, a little later).
    // --count is at most 2^48 and --queues 64 (checked): this cannot
    // overflow, and saturating would only mean "not yet".
    let expected = a.count.map(|c| c.saturating_mul(u64::from(a.run.queues)));
    let all_arrived = || {
        expected.is_some_and(|n| {
            let got = sum(&rx_workers
                .iter()
                .map(|w| w.counters.snapshot())
                .collect::<Vec<_>>());
            (if plan.message.is_some() {
                got.messages
            } else {
                got.frames
            }) >= n
        })
    };
    let senders_done = || {
        if runs_tx {
            tx_workers.iter().all(Worker::is_finished)
        } else {
            all_arrived()
        }
    };
    let watch = PathWatch::new(&plan.path);
    let live = || {
        if let Some(r) = role {
            r.tick(&tx_workers, &rx_workers, steering.as_deref());
        }
    };
    let stopped = || {
        live();
        interrupted.load(Ordering::Relaxed) || watch.fault() || role.is_some_and(Role::stop_asked)
    };
    // Warm-up counts from when every worker is bound and running (on two
    // hosts: from the agreed start).
    let running = role.map_or_else(Instant::now, |r| r.start.max(Instant::now()));
    wait_until(running + a.run.warmup, &|| stopped() || senders_done());
    let link = counters_or_zero;
    let (ltx0, lrx0) = (link(&plan.path.tx), link(&plan.path.rx));
    let s0 = Snapshot::take(&tx_workers, &rx_workers)?;
    wait_until(s0.at + a.run.duration, &|| stopped() || senders_done());
    let s1 = Snapshot::take(&tx_workers, &rx_workers)?;
    watch.check_now();
    let (ltx1, lrx1) = (link(&plan.path.tx), link(&plan.path.rx));

    if let Some(r) = role.filter(|_| !runs_tx) {
        // The sender's host says when it is done (or the lease ends);
        // a counted run is done when everything arrived.
        wait_until(Instant::now() + PEER_GRACE, &|| {
            live();
            interrupted.load(Ordering::Relaxed) || r.stop_asked() || all_arrived()
        });
    }
    tx_stop.flag.store(true, Ordering::Relaxed);
    let (tx_ready, tx_results) = join_all(tx_workers)?;
    if runs_rx {
        drain(&rx_workers);
    }
    rx_stop.flag.store(true, Ordering::Relaxed);
    let (rx_ready, rx_results) = join_all(rx_workers)?;

    let steer = match &steering {
        Some(s) => s.stats()?.since(&steer0),
        None => Default::default(),
    };
    let xdp_mode = steering
        .as_ref()
        .map_or("none (kernel stack)".to_string(), |s| s.mode().to_string());
    let xdp_fallback_reason = steering
        .as_ref()
        .and_then(|s| s.fallback_reason().map(str::to_string));
    drop(steering);
    let if_tx = counters_or_zero(&plan.path.tx).since(&if_tx0);
    let if_rx = counters_or_zero(&plan.path.rx).since(&if_rx0);

    let window_s = (s1.at - s0.at).as_secs_f64();
    let uses = s1.cpu.since(&s0.cpu);
    let tx_window = sum(&s1.a).since(&sum(&s0.a));
    let rx_window = sum(&s1.b).since(&sum(&s0.b));
    let messages = plan.message.is_some();
    let sender =
        SideFigures::from_window(&tx_window, window_s, &uses, &plan.path.tx_cores, messages);
    let receiver =
        SideFigures::from_window(&rx_window, window_s, &uses, &plan.path.rx_cores, messages);
    let total_cpu = crate::results::parts::figures(&uses, &[], receiver.counted_mb_s());
    let per_s = |n: u64| {
        if window_s > 0.0 {
            n as f64 / window_s
        } else {
            0.0
        }
    };
    let mut sender = sender;
    let mut receiver = receiver;
    sender.link_packets_per_s = per_s(ltx1.since(&ltx0).tx_packets);
    receiver.link_packets_per_s = per_s(lrx1.since(&lrx0).rx_packets);

    let tx_total = tx_results
        .iter()
        .fold(CounterSnapshot::default(), |a, s| a.add(&s.counters));
    let rx_total = rx_results
        .iter()
        .fold(CounterSnapshot::default(), |a, s| a.add(&s.counters));
    let frames = FrameAccounting::count(
        &tx_total,
        &rx_total,
        tx_results.iter().map(|s| s.unfinished).sum(),
        plan.message.map(|m| (m.msg_len, m.count)),
    );

    let mut workers = worker_reports(
        "tx",
        &tx_ready,
        tx_results.iter().map(|s| (s.counters, s.xsk)),
        &s0.a,
        &s1.a,
    );
    workers.extend(worker_reports(
        "rx",
        &rx_ready,
        rx_results.iter().map(|s| (s.counters, s.xsk)),
        &s0.b,
        &s1.b,
    ));
    let refused = tx_ready
        .iter()
        .chain(&rx_ready)
        .find_map(|r| r.fallback_reason.clone());
    let huge_pages = tx_ready.iter().chain(&rx_ready).any(|r| r.huge_pages);
    Ok(StreamResult {
        test: "stream",
        version: env!("CARGO_PKG_VERSION").into(),
        params: Params {
            backend: a.run.backend.as_str().into(),
            gso: a.run.gso,
            gro: a.run.gro,
            frame_size: plan.frame_size,
            mtu: plan.path.mtu,
            queues: a.run.queues,
            warmup_s: a.run.warmup.as_secs_f64(),
            duration_s: a.run.duration.as_secs_f64(),
            count: a.count,
            rate_pps: a.rate,
            tx_wait: format!("{:?}", plan.path.tx_wait(&a.run, runs_rx)).to_lowercase(),
            rx_wait: format!("{:?}", a.run.rx_wait).to_lowercase(),
            batch: a.run.batch,
            ring: a.run.ring,
            rx_ring: a.run.rx_ring,
            port: a.run.port,
            tx_cores: plan.path.tx_cores.clone(),
            rx_cores: plan.path.rx_cores.clone(),
            tx_iface: plan.path.tx.iface.clone(),
            tx_netns: plan.path.tx.netns.clone(),
            rx_iface: plan.path.rx.iface.clone(),
            rx_netns: plan.path.rx.netns.clone(),
            lab: plan.path.lab.as_ref().map(|l| l.name.clone()),
        },
        environment: environment::describe(),
        setup: Setup {
            tx_bind_mode: tx_ready
                .first()
                .map_or(
                    if a.rx_only {
                        "none (--rx-only)"
                    } else {
                        "none (other host)"
                    },
                    |r| r.mode.as_str(),
                )
                .to_string(),
            rx_bind_mode: rx_ready
                .first()
                .map_or("none (other host)", |r| r.mode.as_str())
                .to_string(),
            zero_copy_refused: refused,
            xdp_mode,
            xdp_fallback_reason,
            descs_per_frame: plan.descs_per_frame(),
            umem_chunk: (a.run.backend == BackendArg::Xdp).then_some(plan.chunk_size),
            umem_huge_pages: (a.run.backend == BackendArg::Xdp).then_some(huge_pages),
            payload_per_frame: plan.frame_size
                - linerate_datapath::frame::FCS_LEN
                - linerate_datapath::frame::HEADER_OFFSET,
            placement: crate::session::placement(
                &a.run,
                ("sender", "receiver"),
                &plan.path,
                napi_mode,
                &napi_threads,
                plan.path.tx_wait(&a.run, runs_rx),
            ),
            napi_threads,
            napi: napi_mode.map(str::to_string),
            driver: plan.path.rx.info.kind.clone(),
        },
        window_s,
        interrupted: interrupted.load(Ordering::Relaxed),
        fault: watch.message(),
        sender,
        receiver,
        frames,
        cpu: CpuReport {
            per_core: uses,
            total: total_cpu,
            hosts: None,
        },
        workers,
        xdp: steer,
        interfaces: InterfaceCounters {
            tx: if_tx,
            rx: if_rx,
        },
        receiver_window_s: None,
        agents: None,
    })
}

/// The UDP/TCP port receiver `q` listens on with a kernel backend.
fn kernel_port(plan: &Plan, q: u32) -> u16 {
    plan.args.run.port + q as u16
}

/// How kernel backends cut messages: UDP datagrams are fragments (or, with
/// no --message, stream frames of the frame's UDP payload).
fn kernel_message(plan: &Plan) -> (Fragmentation, bool) {
    match plan.message {
        Some(m) => (m, false),
        None => {
            let payload = plan.frame_size - FCS_LEN - HEADER_OFFSET - HEADER_LEN;
            (
                Fragmentation::new(payload, payload.max(1)).expect("a frame's payload is small"),
                true,
            )
        }
    }
}

/// Starts receiver `q` of the run's backend.
fn spawn_receiver(
    plan: &Plan,
    q: u32,
    stop: &StopSignal,
    steering: Option<&Arc<Steering>>,
) -> Result<Worker<RxSummary>, WorkerError> {
    let a = &plan.args.run;
    let placement = Placement {
        core: Some(plan.path.rx_cores[q as usize]),
        netns: plan.path.rx.netns.clone(),
    };
    let Some(st) = steering else {
        let cfg = KernelReceiverConfig {
            bind: SocketAddrV4::new(plan.path.rx.ip, kernel_port(plan, q)),
            flows: 1,
            batch: a.batch,
            wait: a.rx_wait.into(),
            gro: a.gro,
            max_datagram: 65_536,
            placement,
            stop: stop.clone(),
        };
        return match a.backend {
            BackendArg::Tcp => spawn_tcp_rx(format!("lr-tcp-rx{q}"), cfg),
            _ => spawn_udp_rx(format!("lr-udp-rx{q}"), cfg),
        };
    };
    let st = st.clone();
    spawn_rx(
        format!("lr-rx{q}"),
        RxWorkerConfig {
            socket: SocketOptions {
                iface: plan.path.rx.iface.clone(),
                queue: q,
                ring_size: a.rx_ring,
                zero_copy: zero_copy(plan),
                multi_buffer: plan.multi_buffer,
                chunk_size: plan.chunk_size,
            },
            batch: a.batch,
            wait: a.rx_wait.into(),
            placement,
            stop: stop.clone(),
            on_bound: Box::new(move |fd| st.register_socket(q, fd).map_err(|e| e.to_string())),
            count_foreign: plan.args.rx_only,
        },
    )
}

fn zero_copy(plan: &Plan) -> ZeroCopy {
    if plan.args.run.zero_copy {
        ZeroCopy::Require
    } else {
        ZeroCopy::Auto
    }
}

/// Starts sender `q` of the run's backend.
fn spawn_sender(
    plan: &Plan,
    q: u32,
    stop: &StopSignal,
    wait: linerate_datapath::worker::WaitMode,
) -> Result<Worker<TxSummary>, WorkerError> {
    let a = &plan.args;
    let placement = Placement {
        core: Some(plan.path.tx_cores[q as usize]),
        netns: plan.path.tx.netns.clone(),
    };
    if a.run.backend != BackendArg::Xdp {
        let (message, frames) = kernel_message(plan);
        let cfg = KernelStreamConfig {
            flow: q as u16,
            src: SocketAddrV4::new(plan.path.tx.ip, 0),
            dst: SocketAddrV4::new(plan.path.rx.ip, kernel_port(plan, q)),
            message,
            frames,
            batch: a.run.batch,
            wait,
            rate: a.rate,
            count: a.count,
            gso: a.run.gso,
            placement,
            stop: stop.clone(),
        };
        return match a.run.backend {
            BackendArg::Tcp => spawn_tcp_tx(format!("lr-tcp-tx{q}"), cfg),
            _ => spawn_udp_tx(format!("lr-udp-tx{q}"), cfg),
        };
    }
    let spec = FrameSpec {
        src: Endpoint {
            mac: plan.path.tx.info.mac,
            ip: plan.path.tx.ip,
            port: a.run.port.wrapping_add(1 + q as u16).max(1024),
        },
        dst: Endpoint {
            mac: plan.path.rx.info.mac,
            ip: plan.path.rx.ip,
            port: a.run.port,
        },
        frame_size: plan.frame_size,
        flow: q as u16,
        kind: if plan.message.is_some() {
            Kind::Message
        } else {
            Kind::Stream
        },
    };
    spawn_tx(
        format!("lr-tx{q}"),
        TxWorkerConfig {
            socket: SocketOptions {
                iface: plan.path.tx.iface.clone(),
                queue: q,
                ring_size: a.run.ring,
                zero_copy: zero_copy(plan),
                multi_buffer: plan.multi_buffer,
                chunk_size: plan.chunk_size,
            },
            frame: spec,
            message: plan.message,
            batch: a.run.batch,
            wait,
            rate: a.rate,
            count: a.count,
            placement,
            stop: stop.clone(),
        },
    )
}

/// Waits until the receivers have seen nothing new for a while.
fn drain(rx: &[Worker<RxSummary>]) {
    let total = || rx.iter().map(|w| w.counters.snapshot().frames).sum::<u64>();
    let end = Instant::now() + DRAIN_MAX;
    let mut last = total();
    let mut quiet_since = Instant::now();
    while Instant::now() < end {
        thread::sleep(Duration::from_millis(10));
        let now = total();
        if now != last {
            last = now;
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= DRAIN_QUIET {
            return;
        }
    }
}
