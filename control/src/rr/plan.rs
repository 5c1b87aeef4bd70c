//! Checking `linerate rr` arguments.

use anyhow::{bail, Result};
use linerate_datapath::{geometry::Geometry, message::Fragmentation, worker::MAX_FLOWS};

use crate::{
    cli::{ResponderArg, RrArgs},
    engine::{self, names_that, Engine},
    path::PathPlan,
};

/// A checked rr run.
#[derive(Debug, Clone)]
pub struct RrPlan {
    /// The arguments.
    pub args: RrArgs,
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
pub fn check_args(a: &RrArgs) -> Result<()> {
    crate::path::check_args(&a.run)?;
    engine::check_run_args(&a.run)?;
    let engine = engine::backend(a.run.backend);
    if engine.can().rr_responder.is_none() {
        bail!(
            "the {} engine runs no request/response: use --backend {}",
            engine.name(),
            names_that(|c| c.rr_responder.is_some())
        );
    }
    if a.flows == 0 || a.flows as usize > MAX_FLOWS {
        bail!("--flows {} is out of range: use 1 to {MAX_FLOWS}", a.flows);
    }
    if a.concurrency == 0 {
        bail!("--concurrency 0 runs no transaction: use 1 or more");
    }
    if a.timeout.is_zero() {
        bail!("--timeout 0 would time every transaction out: give e.g. 10ms");
    }
    if a.run.duration.is_zero() && a.count.is_none() {
        bail!("--duration must be longer than 0 (e.g. 5s), or give --count");
    }
    if a.count == Some(0) {
        bail!("--count 0 runs no transaction: give at least 1");
    }
    if let Some(c) = a.count.filter(|&c| c > crate::cli::MAX_COUNT) {
        bail!(
            "--count {c} is out of range: use 1 to 2^48 ({}) per flow",
            crate::cli::MAX_COUNT
        );
    }
    for (name, v) in [("--request", a.request), ("--response", a.response)] {
        if v > linerate_datapath::message::MAX_MESSAGE {
            bail!(
                "{name} {v} is out of range: use 0 to {} bytes",
                linerate_datapath::message::MAX_MESSAGE
            );
        }
    }
    if a.responder == ResponderArg::Xdp && !engine.can().steering {
        bail!(
            "--responder xdp answers in the XDP program: use it with --backend {}",
            names_that(|c| c.steering)
        );
    }
    if a.responder == ResponderArg::Xdp && a.run.queues != 1 {
        bail!("--responder xdp answers on whatever queue XDP_TX picks: use --queues 1");
    }
    Ok(())
}

/// Checks everything and brings up the lab if needed.
pub fn plan(a: &RrArgs) -> Result<RrPlan> {
    check_args(a)?;
    let path = crate::path::plan(&a.run, "linerate rr", |_| false)?;
    let geometry = Geometry::for_mtu(path.mtu);
    let per = geometry.payload_per_fragment();
    let request = geometry.fragments(a.request)?;
    let response = geometry.fragments(a.response)?;
    if a.responder == ResponderArg::Xdp && (request.count > 1 || a.request != a.response) {
        bail!(
            "--responder xdp echoes single-frame requests: give --request equal to --response and at most {per} bytes (MTU {})",
            path.mtu
        );
    }
    // Every frame in flight towards a side must fit its RX ring, or the
    // kernel drops it and the transaction times out.
    let flows_per_queue = a.flows.div_ceil(a.run.queues) as usize;
    let in_flight = flows_per_queue
        .saturating_mul(a.concurrency as usize)
        .saturating_mul(request.count.max(response.count));
    if in_flight > a.run.rx_ring as usize {
        bail!(
            "--concurrency {} with {} flow(s) per queue puts up to {in_flight} frames in flight, more than --rx-ring {} holds: lower --concurrency or --flows, or raise --rx-ring (up to {})",
            a.concurrency,
            flows_per_queue,
            a.run.rx_ring,
            crate::path::MAX_RING
        );
    }
    let largest = Geometry::fragment_frame(&request).max(Geometry::fragment_frame(&response));
    let max_descriptor = Geometry::descriptor_len(largest);
    let engine = engine::backend(a.run.backend);
    if Geometry::multi_buffer(max_descriptor) && !engine.can().multi_buffer {
        bail!(
            "the {} engine carries no multi-buffer frames ({max_descriptor} bytes here): lower --request and --response or the MTU, or use --backend {}",
            engine.name(),
            names_that(|c| c.multi_buffer)
        );
    }
    Ok(RrPlan {
        args: a.clone(),
        engine,
        path,
        multi_buffer: Geometry::multi_buffer(max_descriptor),
        chunk_size: crate::path::umem_chunk(&a.run, max_descriptor)?,
        request,
        response,
    })
}
