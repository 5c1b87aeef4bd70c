//! An rr run's result from what it measured: a pure function, no I/O.

use anyhow::{anyhow, Result};
use hdrhistogram::Histogram;
use linerate_datapath::worker::{RrSummary, WaitMode, MAX_LATENCY_NS};

use crate::{
    plan::rr::RrPlan,
    session::{placement, Ends, Measured, WorkerNames},
};
use linerate_results::rr::{
    transaction_mb_s, Latency, RrCpu, RrParams, RrResult, RrSetup, SideCpu, Transactions,
    XdpCounters,
};

/// What rr calls the workers of each end.
pub(super) const NAMES: WorkerNames = WorkerNames {
    tx: "client",
    rx: "responder",
};

/// The result of `plan`'s run, from what it measured.
pub fn result(plan: &RrPlan, measured: &Measured<RrSummary, RrSummary>) -> Result<RrResult> {
    let path = &plan.path;
    let window = &measured.window;
    let xdp_responder = plan.xdp_responder;
    let clients = measured.tx.total(|s| s.counters);
    let responders = measured.rx.total(|s| s.counters);
    let latency = merged_latency(measured)?;
    // The window's transactions are those its clients timed: the flag that
    // opens and closes it and the counters taken at its edges are read a
    // moment apart, so counting them from the counters would leave a few
    // with no response time or times with no transaction. A counted run
    // that ended within its warm-up is measured over the whole run, which
    // no client timed: its counters.
    let completed = if window.whole_run {
        window.tx().transactions
    } else {
        latency.len()
    };
    let per_s = window.per_s(completed);
    let mb_s = transaction_mb_s(per_s, plan.request_len, plan.response_len);
    let workers = measured.worker_reports(
        Ends {
            tx: "client",
            rx: "responder",
        },
        |s| (s.counters, s.xsk),
        |s| (s.counters, s.xsk),
    );
    let client_wait = path.tx_wait(&plan.run.wait, true);
    Ok(RrResult {
        test: "rr",
        common: measured.envelope(workers),
        params: params(plan, client_wait),
        setup: setup(plan, measured, client_wait),
        transactions: Transactions {
            completed,
            per_s,
            total: clients.transactions,
            timeouts: clients.timeouts,
            late: clients.late,
            answered: if xdp_responder {
                measured.steering.rx.responded
            } else {
                responders.messages
            },
        },
        latency: Latency::from_histogram(&latency),
        cpu: RrCpu {
            client: SideCpu::new(
                &window.cpu,
                &path.tx_cores,
                window.own_on(&path.tx_cores),
                per_s,
                mb_s,
            ),
            responder: SideCpu::new(
                &window.cpu,
                &path.rx_cores,
                window.own_on(&path.rx_cores),
                per_s,
                mb_s,
            ),
            total: SideCpu::new(&window.cpu, &[], window.own_on(&[]), per_s, mb_s),
            per_core: window.cpu.clone(),
            hosts: None,
        },
        xdp: XdpCounters {
            client: measured.steering.tx,
            responder: measured.steering.rx,
        },
    })
}

/// The run's parameters as the result reports them.
fn params(plan: &RrPlan, client_wait: WaitMode) -> RrParams {
    let run = &plan.run;
    let path = &plan.path;
    let engine = plan.engine;
    let xdp_responder = plan.xdp_responder;
    RrParams {
        request: plan.request_len,
        response: plan.response_len,
        concurrency: plan.concurrency,
        flows: plan.flows,
        queues: path.queues,
        timeout_ms: plan.timeout.as_secs_f64() * 1000.0,
        count: plan.count,
        responder: if xdp_responder {
            "xdp"
        } else {
            engine.can().rr_responder.unwrap_or(engine.name())
        }
        .into(),
        backend: engine.name().into(),
        warmup_s: run.timing.warmup.as_secs_f64(),
        duration_s: run.timing.duration.as_secs_f64(),
        mtu: path.mtu,
        client_wait: client_wait.name().into(),
        responder_wait: path.rx_wait(&run.wait).name().into(),
        client_cores: path.tx_cores.clone(),
        responder_cores: path.rx_cores.clone(),
        client_iface: path.tx.iface.clone(),
        client_netns: path.tx.netns.clone(),
        responder_iface: path.rx.iface.clone(),
        responder_netns: path.rx.netns.clone(),
        reverse: run.path.reverse,
    }
}

/// How the run was set up: the sockets' and XDP's modes, the frames per
/// request and response, the placement.
fn setup(
    plan: &RrPlan,
    measured: &Measured<RrSummary, RrSummary>,
    client_wait: WaitMode,
) -> RrSetup {
    let run = &plan.run;
    let path = &plan.path;
    RrSetup {
        client_bind_mode: measured
            .tx
            .ready
            .first()
            .map_or("none (other host)", |r| r.mode.as_str())
            .into(),
        responder_bind_mode: measured.rx.ready.first().map(|r| r.mode.as_str().into()),
        zero_copy_refused: measured
            .tx
            .ready
            .iter()
            .chain(&measured.rx.ready)
            .find_map(|r| r.fallback_reason.clone()),
        xdp_mode: measured.xdp_mode.clone(),
        request_frames: plan.request.count,
        response_frames: plan.response.count,
        placement: format!(
            "{}; {}",
            crate::engine::rr_sender(plan.engine, plan.tx_engine_auto),
            placement(
                (&run.path, &run.wait, &run.napi),
                NAMES,
                path,
                measured.napi,
                &measured.napi_threads,
                client_wait,
            )
        ),
        napi_threads: measured.napi_threads.clone(),
        napi: measured.napi.map(str::to_string),
        napi_priority: (!measured.napi_threads.is_empty())
            .then(|| run.napi.priority.map(|p| p.to_string()))
            .flatten(),
        driver: path.rx.info.kind.clone(),
        wait: measured.wait.clone(),
    }
}

/// The clients' round-trip latencies merged into one histogram.
fn merged_latency(measured: &Measured<RrSummary, RrSummary>) -> Result<Histogram<u64>> {
    let mut latency =
        Histogram::<u64>::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid bounds");
    for client in &measured.tx.summaries {
        latency
            .add(&client.latency)
            .map_err(|e| anyhow!("merging histograms: {e}"))?;
    }
    Ok(latency)
}

#[cfg(test)]
mod tests {
    use linerate_datapath::{stats::CounterSnapshot, worker::Ready, xsk::BindMode};

    use super::*;
    use crate::{
        request::RunRequest,
        session::{busy_cores, Ends, Finished, Window},
    };

    fn plan(args: &[&str]) -> RrPlan {
        RrPlan::for_test(&RunRequest::rr_args(args))
    }

    fn transactions(count: u64) -> CounterSnapshot {
        CounterSnapshot {
            transactions: count,
            messages: count,
            ..Default::default()
        }
    }

    /// A client that completed `total` transactions, `timed` of them in the
    /// window, of `us` microseconds each, `timeouts` of them retried.
    fn client(total: u64, timed: u64, us: u64, timeouts: u64) -> RrSummary {
        let mut latency = Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).unwrap();
        latency.record_n(us * 1000, timed).unwrap();
        RrSummary {
            counters: CounterSnapshot {
                timeouts,
                ..transactions(total)
            },
            latency,
            xsk: Default::default(),
        }
    }

    fn ready() -> Ready {
        Ready {
            mode: BindMode::Copy,
            fallback_reason: None,
            huge_pages: false,
            core: Some(0),
            tid: 1,
        }
    }

    fn measured() -> Measured<RrSummary, RrSummary> {
        let window = Window {
            seconds: 2.0,
            cpu: busy_cores(&[100.0, 50.0]),
            start: Ends {
                tx: vec![transactions(1_000), transactions(2_000)],
                rx: vec![transactions(3_000)],
            },
            end: Ends {
                tx: vec![transactions(101_000), transactions(102_000)],
                rx: vec![transactions(203_000)],
            },
            link: Ends::default(),
            threads: Vec::new(),
            softirq: Vec::new(),
            whole_run: false,
        };
        let tx = Finished {
            ready: vec![ready(), ready()],
            summaries: vec![
                client(120_000, 100_000, 10, 2),
                client(110_000, 99_990, 20, 0),
            ],
        };
        let rx = Finished {
            ready: vec![ready()],
            summaries: vec![client(230_002, 0, 1, 0)],
        };
        Measured::for_test(window, tx, rx)
    }

    #[test]
    fn transactions_latency_and_cpu() {
        let out = result(
            &plan(&["--request", "100", "--response", "1000"]),
            &measured(),
        )
        .unwrap();
        // 199,990 transactions timed in the window's 2 s, both clients
        // together (their counters, read a moment apart from the window's
        // flag, moved by 200,000).
        assert_eq!(out.transactions.completed, 199_990);
        assert_eq!(out.transactions.per_s, 99_995.0);
        assert_eq!(out.transactions.total, 230_000);
        assert_eq!(out.transactions.timeouts, 2);
        assert_eq!(out.transactions.answered, 230_002);
        // Both clients' histograms, merged: one time per transaction.
        assert_eq!(out.latency.count, out.transactions.completed);
        assert!((out.latency.min_us - 10.0).abs() < 0.01);
        assert!((out.latency.max_us - 20.0).abs() < 0.02);
        // 1.5 cores busy for 99,995 transactions/s.
        let total = out.cpu.total.us_per_transaction.unwrap();
        assert!((total - 1.5e6 / 99_995.0).abs() < 1e-9, "{total}");
        assert_eq!(out.cpu.client.cpu.cpu_pct, 100.0);
        // 1100 bytes a transaction (1500 ms of CPU a second).
        let demand = out.cpu.total.cpu.service_demand_ms_per_mb.unwrap();
        let mb_s = 99_995.0 * 1100.0 / 1e6;
        assert!((demand - 1500.0 / mb_s).abs() < 1e-9, "{demand}");
        let roles: Vec<_> = out
            .common
            .workers
            .iter()
            .map(|w| (w.role, w.window.transactions))
            .collect();
        assert_eq!(
            roles,
            [
                ("client", 100_000),
                ("client", 100_000),
                ("responder", 200_000)
            ]
        );
        assert_eq!(
            (out.params.responder.as_str(), out.params.backend.as_str()),
            ("af-xdp", "xdp")
        );
    }

    #[test]
    fn a_counted_run_ended_in_its_warm_up_counts_its_transactions() {
        let mut whole = measured();
        whole.window.whole_run = true;
        for c in &mut whole.window.start.tx {
            *c = CounterSnapshot::default();
        }
        whole.tx.summaries = vec![client(101_000, 0, 10, 0), client(102_000, 0, 20, 0)];
        let out = result(&plan(&["--count", "101000"]), &whole).unwrap();
        assert_eq!(out.transactions.completed, 203_000);
        assert_eq!(out.latency.count, 0);
    }

    #[test]
    fn who_answered() {
        let mut xdp_answers = measured();
        xdp_answers.rx = Finished::default();
        xdp_answers.steering.rx.responded = 42;
        let out = result(&plan(&["--responder", "xdp"]), &xdp_answers).unwrap();
        assert_eq!(out.params.responder, "xdp");
        assert_eq!(out.transactions.answered, 42);
        assert_eq!(out.setup.responder_bind_mode, None);
        for (backend, who) in [("udp", "udp socket"), ("tcp", "tcp socket")] {
            let out = result(&plan(&["--backend", backend]), &measured()).unwrap();
            assert_eq!(
                (out.params.responder.as_str(), out.params.backend.as_str()),
                (who, backend)
            );
        }
        let mut one_side = measured();
        one_side.tx = Finished::default();
        one_side.window.start.tx.clear();
        one_side.window.end.tx.clear();
        let out = result(&plan(&[]), &one_side).unwrap();
        assert_eq!(out.setup.client_bind_mode, "none (other host)");
        assert_eq!(out.transactions.completed, 0);
        assert_eq!(out.latency.count, 0);
    }
}
