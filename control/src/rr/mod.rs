//! `linerate rr`: request/response transactions between an AF_XDP client
//! and a responder (an AF_XDP worker, or the XDP program itself), timed
//! one by one into an HdrHistogram.

pub mod output;
pub mod plan;
pub mod result;

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
use hdrhistogram::Histogram;
use linerate_datapath::{
    frame::{Endpoint, FrameSpec},
    header::Kind,
    kernel::{
        rr::KernelRrConfig,
        tcp::rr::{spawn_client as spawn_tcp_client, spawn_responder as spawn_tcp_server},
        udp::rr::{spawn_client as spawn_udp_client, spawn_responder as spawn_udp_server},
    },
    message::Fragmentation,
    worker::{
        spawn_client, spawn_responder, ClientConfig, Placement, RrWorkerConfig, StopSignal, Worker,
        MAX_LATENCY_NS,
    },
    xsk::{SocketOptions, ZeroCopy},
};
use linerate_ebpf::Steering;

pub use output::print_table;
use plan::{frame_size, RrPlan};
use result::*;

use crate::{
    cli::{BackendArg, ResponderArg},
    environment, iface,
    path::Side,
    remote::role::Role,
    results::parts::InterfaceCounters,
    session::{
        apply_napi, attach_steering, counters_or_zero, hard_deadline, join_all, pin_napi,
        steering_config, sum, wait_until, worker_reports, PathWatch, Restore, Snapshot,
    },
};

/// How long a responder on its own host waits past its window for the
/// client's host to say it is done.
const PEER_GRACE: Duration = Duration::from_secs(10);

fn endpoint(side: &Side, port: u16) -> Endpoint {
    Endpoint {
        mac: side.info.mac,
        ip: side.ip,
        port,
    }
}

fn spec(from: Endpoint, to: Endpoint, cut: &Fragmentation, kind: Kind) -> FrameSpec {
    FrameSpec {
        src: from,
        dst: to,
        frame_size: frame_size(cut),
        flow: 0,
        kind,
    }
}

/// Runs a planned rr test.
pub fn run(plan: &RrPlan, interrupted: &Arc<AtomicBool>) -> Result<RrResult> {
    run_role(plan, interrupted, None)
}

/// Runs a planned rr test, or with `role` only one side of it (tx: the
/// client, rx: the responder; the other runs on another host).
pub fn run_role(
    plan: &RrPlan,
    interrupted: &Arc<AtomicBool>,
    role: Option<&Role>,
) -> Result<RrResult> {
    let a = &plan.args;
    let (runs_client, runs_server) = role.map_or((true, true), |r| (r.tx(), r.rx()));
    let r = &a.run;
    let (client, server) = (&plan.path.tx, &plan.path.rx);
    let port = r.port;
    let xdp_responder = a.responder == ResponderArg::Xdp;
    let bypass = r.backend == BackendArg::Xdp;
    let server_steer = if bypass && runs_server {
        Some(attach_steering(
            server,
            steering_config(r, port, port, xdp_responder),
        )?)
    } else {
        None
    };
    let client_steer = if bypass && runs_client {
        Some(attach_steering(
            client,
            steering_config(r, port + 1, port.saturating_add(a.flows as u16), false),
        )?)
    } else {
        None
    };
    let stats = |s: &Option<Arc<Steering>>| -> Result<linerate_ebpf::SteerStats> {
        Ok(match s {
            Some(s) => s.stats()?,
            None => Default::default(),
        })
    };
    // Check, then change: the interfaces are locked and the programs
    // attached (each refuses a foreign one); only now the NAPI mode and
    // pinning, which `restore` puts back when the run ends.
    let mut restore = Restore::default();
    let napi_mode = apply_napi(r, &plan.path, false, &mut restore)?;
    let mut napi_threads = Vec::new();
    if runs_server {
        napi_threads.extend(pin_napi(server, &plan.path.rx_cores, &mut restore));
    }
    if runs_client {
        napi_threads.extend(pin_napi(client, &plan.path.tx_cores, &mut restore));
    }
    let if_c0 = iface::info(client.netns.as_deref(), &client.iface)?.counters;
    let if_s0 = iface::info(server.netns.as_deref(), &server.iface)?.counters;
    let (cs0, ss0) = (stats(&client_steer)?, stats(&server_steer)?);

    let started = Instant::now();
    let planned = r.warmup + r.duration;
    let stop = |extra: u64| StopSignal {
        flag: Arc::new(AtomicBool::new(false)),
        deadline: started + hard_deadline(planned, r.queues, extra),
    };
    let (client_stop, server_stop) = (stop(0), stop(5));
    let zero_copy = if r.zero_copy {
        ZeroCopy::Require
    } else {
        ZeroCopy::Auto
    };
    let socket = |side: &Side, q: u32| SocketOptions {
        iface: side.iface.clone(),
        queue: q,
        ring_size: r.rx_ring,
        zero_copy,
        multi_buffer: plan.multi_buffer,
        chunk_size: plan.chunk_size,
    };
    let hook = |st: &Option<Arc<Steering>>, q: u32| -> linerate_datapath::worker::OnBound {
        let st = st.clone();
        Box::new(move |fd| match &st {
            Some(st) => st.register_socket(q, fd).map_err(|e| e.to_string()),
            None => Ok(()),
        })
    };
    let kernel =
        |q: u32, side_cores: &[usize], netns: Option<String>, stop: &StopSignal| KernelRrConfig {
            server: SocketAddrV4::new(server.ip, port + q as u16),
            client_ip: client.ip,
            request: plan.request,
            response: plan.response,
            batch: r.batch,
            wait: if netns == server.netns {
                r.rx_wait.into()
            } else {
                plan.path.tx_wait(r, true)
            },
            placement: Placement {
                core: Some(side_cores[q as usize]),
                netns,
            },
            stop: stop.clone(),
        };

    let mut responders = Vec::new();
    if !xdp_responder && runs_server {
        for q in 0..r.queues {
            let w = match r.backend {
                BackendArg::Udp => spawn_udp_server(
                    format!("lr-udp-srv{q}"),
                    kernel(q, &plan.path.rx_cores, server.netns.clone(), &server_stop),
                ),
                BackendArg::Tcp => spawn_tcp_server(
                    format!("lr-tcp-srv{q}"),
                    kernel(q, &plan.path.rx_cores, server.netns.clone(), &server_stop),
                ),
                BackendArg::Xdp => spawn_responder(
                    format!("lr-srv{q}"),
                    RrWorkerConfig {
                        socket: socket(server, q),
                        tx_ring: r.ring,
                        batch: r.batch,
                        wait: r.rx_wait.into(),
                        placement: Placement {
                            core: Some(plan.path.rx_cores[q as usize]),
                            netns: server.netns.clone(),
                        },
                        stop: server_stop.clone(),
                        on_bound: hook(&server_steer, q),
                        frame: spec(
                            endpoint(server, port),
                            endpoint(client, port + 1),
                            &plan.response,
                            Kind::Response,
                        ),
                        send: plan.response,
                        server_port: port,
                    },
                ),
            }
            .with_context(|| format!("starting responder on {} queue {q}", server.iface))?;
            responders.push(w);
        }
    }
    // With no warm-up, every transaction is in the window from the start.
    let measuring = Arc::new(AtomicBool::new(r.warmup.is_zero()));
    let mut clients = Vec::new();
    if let Some(role) = role.filter(|_| runs_client) {
        // Clients start at the agreed instant, when the responders are bound.
        wait_until(role.start, &|| {
            interrupted.load(Ordering::Relaxed) || role.stop_asked()
        });
    }
    for q in (0..r.queues).filter(|_| runs_client) {
        let flows: Vec<u16> = (0..a.flows as u16)
            .filter(|f| u32::from(*f) % r.queues == q)
            .collect();
        let client_cfg = ClientConfig {
            flows,
            concurrency: a.concurrency,
            timeout: a.timeout,
            count: a.count,
            measuring: measuring.clone(),
        };
        let w = match r.backend {
            BackendArg::Udp => spawn_udp_client(
                format!("lr-udp-cli{q}"),
                kernel(q, &plan.path.tx_cores, client.netns.clone(), &client_stop),
                client_cfg,
            ),
            BackendArg::Tcp => spawn_tcp_client(
                format!("lr-tcp-cli{q}"),
                kernel(q, &plan.path.tx_cores, client.netns.clone(), &client_stop),
                client_cfg,
            ),
            BackendArg::Xdp => spawn_client(
                format!("lr-cli{q}"),
                RrWorkerConfig {
                    socket: socket(client, q),
                    tx_ring: r.ring,
                    batch: r.batch,
                    wait: plan.path.tx_wait(r, true),
                    placement: Placement {
                        core: Some(plan.path.tx_cores[q as usize]),
                        netns: client.netns.clone(),
                    },
                    stop: client_stop.clone(),
                    on_bound: hook(&client_steer, q),
                    frame: spec(
                        endpoint(client, port + 1),
                        endpoint(server, port),
                        &plan.request,
                        Kind::Request,
                    ),
                    send: plan.request,
                    server_port: port,
                },
                client_cfg,
            ),
        };
        match w {
            Ok(w) => clients.push(w),
            Err(e) => {
                client_stop.flag.store(true, Ordering::Relaxed);
                server_stop.flag.store(true, Ordering::Relaxed);
                for w in clients.into_iter().chain(responders) {
                    let _ = w.join();
                }
                return Err(anyhow!(e))
                    .with_context(|| format!("starting client on {} queue {q}", client.iface));
            }
        }
    }

    let clients_done = || runs_client && clients.iter().all(Worker::is_finished);
    let watch = PathWatch::new(&plan.path);
    let steer_live = server_steer.as_ref().or(client_steer.as_ref());
    let live = || {
        if let Some(role) = role {
            role.tick(&clients, &responders, steer_live.map(|s| &**s));
        }
    };
    let stopped = || {
        live();
        interrupted.load(Ordering::Relaxed) || watch.fault() || role.is_some_and(Role::stop_asked)
    };
    // Warm-up counts from when every worker is bound and running (on two
    // hosts: from the agreed start).
    let running = role.map_or_else(Instant::now, |r| r.start.max(Instant::now()));
    wait_until(running + r.warmup, &|| stopped() || clients_done());
    let s0 = Snapshot::take(&clients, &responders)?;
    measuring.store(true, Ordering::Relaxed);
    wait_until(s0.at + r.duration, &|| stopped() || clients_done());
    measuring.store(false, Ordering::Relaxed);
    let s1 = Snapshot::take(&clients, &responders)?;
    watch.check_now();

    if let Some(role) = role.filter(|_| !runs_client) {
        // The client's host says when it is done (or the lease ends).
        wait_until(Instant::now() + PEER_GRACE, &|| {
            live();
            interrupted.load(Ordering::Relaxed) || role.stop_asked()
        });
    }
    client_stop.flag.store(true, Ordering::Relaxed);
    let (client_ready, client_results) = join_all(clients)?;
    thread::sleep(Duration::from_millis(20));
    server_stop.flag.store(true, Ordering::Relaxed);
    let (server_ready, server_results) = join_all(responders)?;

    let xdp = XdpCounters {
        client: stats(&client_steer)?.since(&cs0),
        responder: stats(&server_steer)?.since(&ss0),
    };
    let xdp_mode = server_steer
        .as_ref()
        .map_or("none (kernel stack)".to_string(), |s| s.mode().to_string());
    drop((client_steer, server_steer));
    let interfaces = InterfaceCounters {
        tx: counters_or_zero(client).since(&if_c0),
        rx: counters_or_zero(server).since(&if_s0),
    };

    let window_s = (s1.at - s0.at).as_secs_f64();
    let uses = s1.cpu.since(&s0.cpu);
    let cw = sum(&s1.a).since(&sum(&s0.a));
    let ct = client_results.iter().fold(
        Default::default(),
        |a: linerate_datapath::stats::CounterSnapshot, s| a.add(&s.counters),
    );
    let st = server_results.iter().fold(
        Default::default(),
        |a: linerate_datapath::stats::CounterSnapshot, s| a.add(&s.counters),
    );
    let tps = if window_s > 0.0 {
        cw.transactions as f64 / window_s
    } else {
        0.0
    };
    let mb_s = transaction_mb_s(tps, a.request, a.response);
    let mut hist = Histogram::<u64>::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid bounds");
    for s in &client_results {
        hist.add(&s.latency)
            .map_err(|e| anyhow!("merging histograms: {e}"))?;
    }
    let mut workers = worker_reports(
        "client",
        &client_ready,
        client_results.iter().map(|s| (s.counters, s.xsk)),
        &s0.a,
        &s1.a,
    );
    workers.extend(worker_reports(
        "responder",
        &server_ready,
        server_results.iter().map(|s| (s.counters, s.xsk)),
        &s0.b,
        &s1.b,
    ));
    Ok(RrResult {
        test: "rr",
        version: env!("CARGO_PKG_VERSION").into(),
        params: RrParams {
            request: a.request,
            response: a.response,
            concurrency: a.concurrency,
            flows: a.flows,
            queues: r.queues,
            timeout_ms: a.timeout.as_secs_f64() * 1000.0,
            count: a.count,
            responder: match (r.backend, xdp_responder) {
                (BackendArg::Xdp, true) => "xdp",
                (BackendArg::Xdp, false) => "af-xdp",
                (BackendArg::Udp, _) => "udp socket",
                (BackendArg::Tcp, _) => "tcp socket",
            }
            .into(),
            backend: r.backend.as_str().into(),
            warmup_s: r.warmup.as_secs_f64(),
            duration_s: r.duration.as_secs_f64(),
            mtu: plan.path.mtu,
            client_wait: format!("{:?}", plan.path.tx_wait(r, true)).to_lowercase(),
            responder_wait: format!("{:?}", r.rx_wait).to_lowercase(),
            client_cores: plan.path.tx_cores.clone(),
            responder_cores: plan.path.rx_cores.clone(),
            client_iface: client.iface.clone(),
            client_netns: client.netns.clone(),
            responder_iface: server.iface.clone(),
            responder_netns: server.netns.clone(),
            reverse: r.reverse,
        },
        environment: environment::describe(),
        setup: RrSetup {
            client_bind_mode: client_ready
                .first()
                .map_or("none (other host)", |r| r.mode.as_str())
                .into(),
            responder_bind_mode: server_ready.first().map(|r| r.mode.as_str().into()),
            zero_copy_refused: client_ready
                .iter()
                .chain(&server_ready)
                .find_map(|r| r.fallback_reason.clone()),
            xdp_mode,
            request_frames: plan.request.count,
            response_frames: plan.response.count,
            placement: crate::session::placement(
                &a.run,
                ("client", "responder"),
                &plan.path,
                napi_mode,
                &napi_threads,
                plan.path.tx_wait(&a.run, true),
            ),
            napi_threads,
            napi: napi_mode.map(str::to_string),
            driver: server.info.kind.clone(),
        },
        window_s,
        interrupted: interrupted.load(Ordering::Relaxed),
        fault: watch.message(),
        transactions: Transactions {
            completed: cw.transactions,
            per_s: tps,
            total: ct.transactions,
            timeouts: ct.timeouts,
            late: ct.late,
            answered: if xdp_responder {
                xdp.responder.responded
            } else {
                st.messages
            },
        },
        latency: Latency::from_histogram(&hist),
        cpu: RrCpu {
            client: SideCpu::new(&uses, &plan.path.tx_cores, tps, mb_s),
            responder: SideCpu::new(&uses, &plan.path.rx_cores, tps, mb_s),
            total: SideCpu::new(&uses, &[], tps, mb_s),
            per_core: uses,
            hosts: None,
        },
        workers,
        xdp,
        interfaces,
        agents: None,
    })
}
