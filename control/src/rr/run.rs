//! Runs a planned rr test: prepares, starts, measures, drains and builds
//! its result.

use std::{
    sync::{atomic::AtomicBool, Arc},
    time::Duration,
};

use anyhow::Result;
use linerate_datapath::worker::{ClientConfig, RrSummary, Worker, WorkerError};

use super::build::{self, NAMES};
use crate::plan::rr::RrPlan;
use linerate_results::rr::RrResult;

use crate::{
    engine::{Io, RrConfig, SideWorkers},
    session::{steering_config, Drain, Ends, Peer, Prepare, Session},
};

/// How long responders keep answering after the clients stop.
const ANSWER_LAST: Duration = Duration::from_millis(20);

/// Runs a planned rr test.
pub fn run(plan: &RrPlan, interrupted: &Arc<AtomicBool>) -> Result<RrResult> {
    run_side(plan, interrupted, None)
}

/// Runs a planned rr test, or with `peer` only this host's side of it
/// (the clients or the responders; the other runs on the peer's host).
pub fn run_side(
    plan: &RrPlan,
    interrupted: &Arc<AtomicBool>,
    peer: Option<&dyn Peer>,
) -> Result<RrResult> {
    let run = &plan.run;
    let path = &plan.path;
    let port = run.sockets.port;
    let xdp_responder = plan.xdp_responder;
    let steers = plan.engine.can().steering;
    // Before anything of the run: the cores are as the run will find them.
    let here = Ends::here(peer);
    let floor = crate::floor::before_window(
        &path.tx_cores,
        &path.rx_cores,
        here.tx && here.rx,
        run.timing.floor,
    );
    let session = Session::prepare(
        Prepare {
            timing: run.timing,
            wait: &run.wait,
            napi: &run.napi,
            path,
            here,
            // The clients' program takes the responses to their ports;
            // the responders' takes requests (or answers them itself).
            steering: Ends {
                tx: steers.then(|| {
                    steering_config(
                        &run.xdp,
                        port + 1,
                        port.saturating_add(plan.flows as u16),
                        false,
                    )
                }),
                rx: steers.then(|| steering_config(&run.xdp, port, port, xdp_responder)),
            },
            threaded_by_default: false,
            pin_napi: Ends { tx: true, rx: true },
            sockets: Ends {
                tx: crate::session::sockets(plan.engine.can().umem, true),
                rx: crate::session::sockets(plan.engine.can().umem, !xdp_responder),
            },
            // rr's AF_XDP clients and responders parse what they receive
            // (the XDP responder counts nothing of its own).
            checksums: Ends {
                tx: plan.engine.can().umem,
                rx: plan.engine.can().umem && !xdp_responder,
            },
        },
        peer,
        interrupted,
    )?;
    let stop = session.stop_signals();
    let steering = session.steering();
    let cfg = RrConfig {
        client: SideWorkers {
            end: &path.tx,
            cores: &path.tx_cores,
            wait: path.tx_wait(&run.wait, true),
            stop: stop.tx.clone(),
            steering: steering.tx.as_ref(),
        },
        responder: SideWorkers {
            end: &path.rx,
            cores: &path.rx_cores,
            wait: path.rx_wait(&run.wait),
            stop: stop.rx.clone(),
            steering: steering.rx.as_ref(),
        },
        port,
        request: plan.request,
        response: plan.response,
        io: Io::new(&run.rings, plan.chunk_size, plan.multi_buffer),
        inject_loss_pct: run.xdp.inject_loss,
    };
    let in_window = session.in_window();
    // A counted run with no warm-up on one host: its clients time every
    // transaction from the first (its count is what it reports), not only
    // those after the window's first counters, taken a moment after they
    // start.
    if plan.count.is_some() && run.timing.warmup.is_zero() && peer.is_none() {
        in_window.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let spawn_client = |q: u32| {
        // Flow f runs on queue f mod queues.
        let flows = (0..plan.flows as u16)
            .filter(|f| u32::from(*f) % path.queues == q)
            .collect();
        let clients = ClientConfig {
            flows,
            concurrency: plan.concurrency,
            timeout: plan.timeout,
            count: plan.count,
            measuring: in_window.clone(),
        };
        plan.engine.spawn_client(&cfg, q, clients)
    };
    let spawn_responder = |q: u32| plan.engine.spawn_responder(&cfg, q);
    // The XDP responder answers in the program: no workers on that end.
    let responders: Option<&dyn Fn(u32) -> Result<Worker<RrSummary>, WorkerError>> =
        (!xdp_responder).then_some(&spawn_responder);
    let crew = session.start(NAMES, responders, &spawn_client)?;

    let here = session.here();
    let clients_done = || here.tx && crew.tx.iter().all(Worker::is_finished);
    let window = session.measure(&crew, (false, plan.count.is_some()), &clients_done)?;
    session.await_peer(&crew, &|| false);
    let measured = session.finish(crew, window, Drain::Pause(ANSWER_LAST))?;
    let mut result = build::result(plan, &measured)?;
    result.common.noise = floor;
    Ok(result)
}
