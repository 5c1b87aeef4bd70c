//! Runs a planned stream: prepares, starts, measures, drains and builds
//! its result.

use std::sync::{atomic::AtomicBool, Arc};

use anyhow::Result;
use linerate_datapath::{
    capture::Capture,
    worker::{RxSummary, TxSummary, Worker},
};

use super::build::{self, NAMES};
use crate::plan::stream::StreamPlan;
use linerate_results::stream::StreamResult;

use crate::{
    engine::{Io, ReceiverConfig, SenderConfig, SideWorkers},
    session::{steering_config, Crew, Drain, Ends, Measured, Peer, Prepare, Session},
};

/// Runs a planned stream. `interrupted` is set by Ctrl-C/SIGTERM: the run
/// then ends early and reports what it measured.
pub fn run(plan: &StreamPlan, interrupted: &Arc<AtomicBool>) -> Result<StreamResult> {
    run_side(plan, interrupted, None)
}

/// Runs a planned stream, or with `peer` only this host's side of it (the
/// other runs on the peer's host): the result then holds this side's
/// figures.
pub fn run_side(
    plan: &StreamPlan,
    interrupted: &Arc<AtomicBool>,
    peer: Option<&dyn Peer>,
) -> Result<StreamResult> {
    let run = &plan.run;
    let path = &plan.path;
    let mut here = Ends::here(peer);
    // With --rx-only another tool sends.
    here.tx &= !plan.rx_only;
    // With --tx-only another tool (or a device) receives.
    here.rx &= !plan.tx_only;
    // Before anything runs: a --pcap file that cannot be written fails now.
    let pcap = plan
        .pcap
        .as_deref()
        .map(crate::pcap::PcapFile::create)
        .transpose()?;
    // Before anything of the run: the cores are as the run will find them.
    let floor = crate::floor::before_window(
        &path.tx_cores,
        &path.rx_cores,
        here.tx && here.rx,
        run.timing.floor,
    );
    let session = prepare(plan, here, peer, interrupted)?;
    let stop = session.stop_signals();
    let mut io = Io::new(&run.rings, plan.chunk_size, plan.multi_buffer);
    io.capture = pcap.as_ref().map(|_| plan.pcap_count as usize);
    // The generator's backpressure when its receivers run here.
    let credit = crate::engine::credit(
        plan.sender,
        plan.receiver,
        here.tx && here.rx,
        (
            &path.tx_cores,
            path.rx.info.rx_queues,
            run.rings.rx_ring,
            session.napi() == Some("threaded"),
        ),
        path.rx_wait(&run.wait) == linerate_datapath::worker::WaitMode::Wait && path.shared_cores(),
    )?;
    let credit_window = credit.as_ref().map(|k| k.window);
    let receivers = ReceiverConfig {
        workers: SideWorkers {
            end: &path.rx,
            cores: &path.rx_cores,
            wait: path.rx_wait(&run.wait),
            stop: stop.rx.clone(),
            steering: session.steering().rx.as_ref(),
        },
        port: run.sockets.port,
        gro: run.sockets.gro,
        count_foreign: plan.rx_only,
        io,
        credits: credit.as_ref().map(|k| k.credits.clone()),
        yield_to_napi: crate::session::napi_beside_receivers(&run.napi, session.napi()),
        rx_priority: run.priorities.receivers,
        inject_loss_pct: run.xdp.inject_loss,
        verify: plan.verify,
    };
    let senders = SenderConfig {
        workers: SideWorkers {
            end: &path.tx,
            cores: &path.tx_cores,
            wait: path.tx_wait(&run.wait, here.rx),
            stop: stop.tx.clone(),
            steering: None,
        },
        to: &path.rx,
        port: run.sockets.port,
        frame_size: plan.frame_size,
        message: plan.message,
        mix: plan.mix.as_ref(),
        rate: plan.rate,
        count: plan.count,
        gso: run.sockets.gso,
        io,
        credit,
        gen_priority: run.priorities.generator,
    };
    let crew = session.start(
        NAMES,
        Some(&|q| plan.receiver.spawn_receiver(&receivers, q)),
        &|q| plan.sender.spawn_sender(&senders, q),
    )?;

    let measured = measure_until_done(plan, session, crew, here)?;
    if let Some(file) = pcap {
        write_pcap(file, path, &measured);
    }
    let mut result = build::result(plan, &measured, credit_window);
    result.common.noise = floor;
    Ok(result)
}

/// Prepares the session: steering for receivers that need it, NAPI beside
/// the receivers.
fn prepare<'a>(
    plan: &'a StreamPlan,
    here: Ends<bool>,
    peer: Option<&'a dyn Peer>,
    interrupted: &'a AtomicBool,
) -> Result<Session<'a>> {
    let run = &plan.run;
    let path = &plan.path;
    let port = run.sockets.port;
    Session::prepare(
        Prepare {
            timing: run.timing,
            wait: &run.wait,
            napi: &run.napi,
            path,
            here,
            steering: Ends {
                tx: None,
                rx: plan
                    .receiver
                    .can()
                    .steering
                    .then(|| steering_config(&run.xdp, port, port, false)),
            },
            // Threaded NAPI beside the receivers, except for the generator
            // into AF_XDP receivers: there receive work runs best in softirq
            // right after each batch, on the generator's core, the
            // receivers on theirs (measured at 1518 B paced to 0.3-1 Mpps:
            // no loss, against 0.4-2.1 % threaded; threaded beside the
            // generator's two runners starves).
            threaded_by_default: plan.sender.can().backpressure || !plan.receiver.can().umem,
            pin_napi: Ends {
                tx: false,
                rx: true,
            },
            sockets: Ends {
                tx: crate::session::sockets(plan.sender.can().umem, plan.sender.can().wait_modes),
                rx: crate::session::sockets(
                    plan.receiver.can().umem,
                    plan.receiver.can().wait_modes,
                ),
            },
            // A stream's senders receive nothing.
            checksums: Ends {
                tx: false,
                rx: plan.receiver.can().checksums && plan.verify.checks(),
            },
        },
        peer,
        interrupted,
    )
}

/// Measures the window, then waits for the run to end (the senders done,
/// or on a receiver's own host everything arrived) and collects it.
fn measure_until_done(
    plan: &StreamPlan,
    session: Session,
    crew: Crew<TxSummary, RxSummary>,
    here: Ends<bool>,
) -> Result<Measured<TxSummary, RxSummary>> {
    // A receiver on its own host knows a counted run is done when all of
    // it arrived (else the sender's host tells it, a little later).
    // --count is at most 2^48 and --queues 64 (checked): this cannot
    // overflow, and saturating would only mean "not yet".
    let expected = plan
        .count
        .map(|c| c.saturating_mul(u64::from(plan.path.queues)));
    let arrived = || {
        expected.is_some_and(|n| {
            let got = crew.rx_now();
            (if plan.message.is_some() {
                got.messages
            } else {
                got.frames
            }) >= n
        })
    };
    let senders_done = || {
        if here.tx {
            crew.tx.iter().all(Worker::is_finished)
        } else {
            arrived()
        }
    };
    let window = session.measure(&crew, (true, plan.count.is_some()), &senders_done)?;
    session.await_peer(&crew, &arrived);
    session.finish(crew, window, Drain::UntilQuiet)
}

/// Writes what the workers captured (`--pcap`); a failure is told on
/// stderr and costs nothing of the result.
fn write_pcap(
    file: crate::pcap::PcapFile,
    path: &crate::path::PathPlan,
    measured: &crate::session::Measured<TxSummary, RxSummary>,
) {
    use crate::pcap::Side;
    let tx = Side {
        iface: &path.tx.iface,
        captures: kept(&measured.tx.summaries, |s| &s.capture),
    };
    let rx = Side {
        iface: &path.rx.iface,
        captures: kept(&measured.rx.summaries, |s| &s.capture),
    };
    let shown = file.path().display().to_string();
    match file.write(&tx, &rx) {
        Ok(w) => eprintln!(
            "linerate: wrote {} frames sent and {} received to {shown} (pcapng; `{}` decodes them)",
            w.sent,
            w.received,
            linerate_host::sh::shown(&["tshark", "-r", &shown])
        ),
        Err(e) => eprintln!("linerate: warning: {e:#}; the run's figures are not affected"),
    }
}

/// The captures a side's workers kept.
fn kept<S>(summaries: &[S], capture: impl Fn(&S) -> &Option<Capture>) -> Vec<&Capture> {
    summaries
        .iter()
        .filter_map(|s| capture(s).as_ref())
        .collect()
}
