//! Checking `linerate rr` arguments.

use std::time::Duration;

use anyhow::{bail, Result};
use linerate_datapath::{geometry::Geometry, message::Fragmentation};

use crate::{
    cli::{ResponderArg, RrArgs, TxEngineArg},
    engine::{self, names_that, Engine},
    path::PathPlan,
    spec::RunSpec,
};

/// A checked rr run.
#[derive(Debug, Clone)]
pub struct RrPlan {
    /// What every run is given.
    pub run: RunSpec,
    /// Bytes per request.
    pub request_len: usize,
    /// Bytes per response.
    pub response_len: usize,
    /// Transactions each flow keeps in flight.
    pub concurrency: u32,
    /// Flows, spread over the queues.
    pub flows: u32,
    /// How long a client waits for a response.
    pub timeout: Duration,
    /// Transactions each client completes, then stops (`--count`).
    pub count: Option<u64>,
    /// The responses are sent by the XDP program (`--responder xdp`).
    pub xdp_responder: bool,
    /// `--tx-engine auto` (the clients are the backend's anyway).
    pub tx_engine_auto: bool,
    /// The engine of the clients and responders.
    pub engine: &'static dyn Engine,
    /// Interfaces and cores: tx is the client, rx the responder.
    pub path: PathPlan,
    /// How requests are cut.
    pub request: Fragmentation,
    /// How responses are cut.
    pub response: Fragmentation,
    /// Whether the larger of the two frames spans several UMEM chunks.
    pub multi_buffer: bool,
    /// UMEM chunk size, for the larger of the two frames.
    pub chunk_size: u32,
}

/// Checks arguments that need no system access.
pub fn check_args(args: &RrArgs) -> Result<()> {
    super::run::check(&args.run, false)?;
    let engine = engine::for_rr(args.run.backend);
    if engine.can().rr_responder.is_none() {
        bail!(
            "the {} engine runs no request/response: use --backend {}",
            engine.name(),
            names_that(|c| c.rr_responder.is_some())
        );
    }
    // --flows, --concurrency, --timeout, --duration, --count, --request
    // and --response are checked where they are parsed (cli.rs).
    if args.responder == ResponderArg::Xdp && !engine.can().steering {
        bail!(
            "--responder xdp answers in the XDP program: use it with --backend {}",
            names_that(|c| c.steering)
        );
    }
    super::run::check_in_memory(engine, &args.run, &[], "the transactions")?;
    if args.tx_engine == TxEngineArg::Generator {
        bail!(
            "rr --tx-engine generator: the generator sends frames and never waits for a response; rr's clients are the --backend engine's: use --tx-engine auto (the default) or backend"
        );
    }
    if args.responder == ResponderArg::Xdp && args.run.queues != 1 {
        bail!("--responder xdp answers on whatever queue XDP_TX picks: use --queues 1");
    }
    Ok(())
}

/// What the options give an rr run: the shared spec, its responders
/// spinning by default where they have cores of their own.
fn spec(args: &RrArgs) -> RunSpec {
    let mut run = super::run::spec(&args.run, super::run::path(&args.run));
    run.wait.responders = true;
    run
}

/// Checks everything and brings up the lab if needed.
pub fn plan(args: &RrArgs) -> Result<RrPlan> {
    check_args(args)?;
    let run = spec(args);
    let path = super::run::path_for(
        engine::for_rr(args.run.backend),
        &run.path,
        "linerate rr",
        |_| false,
    )?;
    let ipv6 = args.run.ipv6;
    let geometry = Geometry::for_mtu(path.mtu).ipv6(ipv6);
    let per = geometry.payload_per_fragment();
    let request = geometry.fragments(args.request)?;
    let response = geometry.fragments(args.response)?;
    if args.responder == ResponderArg::Xdp && (request.count > 1 || args.request != args.response) {
        bail!(
            "--responder xdp echoes single-frame requests: give --request equal to --response and at most {per} bytes (MTU {})",
            path.mtu
        );
    }
    // Every frame in flight towards a side must fit its RX ring, or the
    // kernel drops it and the transaction times out.
    let flows_per_queue = args.flows.div_ceil(args.run.queues) as usize;
    let in_flight = flows_per_queue
        .saturating_mul(args.concurrency as usize)
        .saturating_mul(request.count.max(response.count));
    if in_flight > args.run.rx_ring as usize {
        bail!(
            "--concurrency {} with {} flow(s) per queue puts up to {in_flight} frames in flight, more than --rx-ring {} holds: lower --concurrency or --flows, or raise --rx-ring (up to {})",
            args.concurrency,
            flows_per_queue,
            args.run.rx_ring,
            linerate_host::limits::MAX_RING
        );
    }
    let largest = Geometry::fragment_frame_ip(&request, ipv6)
        .max(Geometry::fragment_frame_ip(&response, ipv6));
    let max_descriptor = Geometry::descriptor_len(largest);
    if ipv6 && Geometry::multi_buffer(max_descriptor) {
        bail!(
            "--ipv6: rr frames over IPv6 fit one UMEM chunk for now ({max_descriptor} bytes here, multi-buffer): lower the MTU (--mtu 3000) or run rr over IPv4"
        );
    }
    let engine = engine::for_rr(args.run.backend);
    if Geometry::multi_buffer(max_descriptor) && !engine.can().multi_buffer {
        bail!(
            "the {} engine carries no multi-buffer frames ({max_descriptor} bytes here): lower --request and --response or the MTU, or use --backend {}",
            engine.name(),
            names_that(|c| c.multi_buffer)
        );
    }
    Ok(RrPlan {
        run,
        request_len: args.request,
        response_len: args.response,
        concurrency: args.concurrency,
        flows: args.flows,
        timeout: args.timeout,
        count: args.count,
        xdp_responder: args.responder == ResponderArg::Xdp,
        tx_engine_auto: args.tx_engine == TxEngineArg::Auto,
        engine,
        path,
        multi_buffer: Geometry::multi_buffer(max_descriptor),
        chunk_size: crate::path::umem_chunk(args.run.umem_chunk, max_descriptor)?,
        request,
        response,
    })
}

#[cfg(test)]
impl RrPlan {
    /// The plan of `args` at MTU 1500 on the lab's path as
    /// `PathPlan::for_test` gives it, for tests that need no system.
    pub fn for_test(args: &RrArgs) -> Self {
        let geometry = Geometry::for_mtu(1500);
        Self {
            run: spec(args),
            request_len: args.request,
            response_len: args.response,
            concurrency: args.concurrency,
            flows: args.flows,
            timeout: args.timeout,
            count: args.count,
            xdp_responder: args.responder == ResponderArg::Xdp,
            tx_engine_auto: args.tx_engine == TxEngineArg::Auto,
            engine: engine::for_rr(args.run.backend),
            request: geometry.fragments(args.request).unwrap(),
            response: geometry.fragments(args.response).unwrap(),
            path: PathPlan::for_test(1500),
            multi_buffer: false,
            chunk_size: 2048,
        }
    }
}
