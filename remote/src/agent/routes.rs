//! The API's routes, and the endpoints that read this host (version,
//! clock, interfaces, doctor, /metrics) and the names they are given;
//! the run endpoints are in `runs`.

use super::{
    allow::{check_iface, check_netns},
    runs::{busy, create, lease, status, stop, unix_ns},
    server::{auth, deadline, error, json_errors, oversized},
    state::{Shared, BODY_LIMIT},
};
use crate::{api, metrics};
use anyhow::Result;
use axum::{
    extract::{DefaultBodyLimit, Path, Query, State},
    http::{header, StatusCode},
    middleware::{self},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use serde::Deserialize;
use std::sync::Arc;

pub(super) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/version", get(version))
        .route("/v1/clock", get(clock))
        .route("/v1/ifaces/{name}", get(iface))
        .route("/v1/doctor", get(doctor))
        .route("/v1/runs", post(create))
        .route("/v1/runs/{id}", get(status))
        .route("/v1/runs/{id}/lease", post(lease))
        .route("/v1/runs/{id}/stop", post(stop))
        .route("/metrics", get(metrics_text))
        .fallback(|| async {
            error(
                StatusCode::NOT_FOUND,
                "no such endpoint (see the API in docs/remote.md)",
            )
        })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn(oversized))
        .layer(middleware::from_fn_with_state(shared.clone(), auth))
        .layer(middleware::from_fn_with_state(shared.clone(), deadline))
        .layer(middleware::from_fn(json_errors))
        .with_state(shared)
}

pub(super) async fn version() -> Json<api::Version> {
    Json(api::Version::ours())
}

pub(super) async fn clock() -> Json<api::Clock> {
    Json(api::Clock {
        unix_ns: unix_ns(),
        monotonic_ns: linerate_datapath::clock::monotonic_ns(),
    })
}

#[derive(Deserialize)]
pub(super) struct Where {
    iface: Option<String>,
    netns: Option<String>,
}

pub(super) async fn iface(
    State(s): State<Arc<Shared>>,
    Path(name): Path<String>,
    Query(w): Query<Where>,
) -> Response {
    if let Some(r) = refuse_where(&s, &name, w.netns.as_deref(), "the interface") {
        return r;
    }
    let r = tokio::task::spawn_blocking(move || -> Result<api::Iface> {
        let i = linerate_host::iface::info(w.netns.as_deref(), &name)?;
        let ip = linerate_host::iface::ipv4(w.netns.as_deref(), &name)?;
        Ok(api::Iface {
            name,
            mac: api::Mac(i.mac),
            ipv4: ip,
            mtu: i.mtu,
            queues: i.rx_queues.min(i.tx_queues),
        })
    })
    .await;
    match r {
        Ok(Ok(i)) => Json(i).into_response(),
        Ok(Err(e)) => error(StatusCode::NOT_FOUND, format!("{e:#}")),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

pub(super) async fn doctor(State(s): State<Arc<Shared>>, Query(w): Query<Where>) -> Response {
    if let Some(run) = s.slot().as_ref().filter(|r| r.active()) {
        return busy(
            run,
            format!(
                "{} is going: the doctor's probes (XDP attach, socket binds) would disturb it; ask again when it ended",
                run.describe()
            ),
        );
    }
    let Some(iface) = w.iface else {
        return error(
            StatusCode::BAD_REQUEST,
            "give ?iface=NAME: an agent probes a named interface (it makes no lab)",
        );
    };
    if let Some(r) = refuse_where(&s, &iface, w.netns.as_deref(), "?iface=") {
        return r;
    }
    let runs = s.runs.clone();
    let r = tokio::task::spawn_blocking(move || runs.doctor(iface, w.netns)).await;
    match r {
        Ok(Ok(json)) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Ok(Err(e)) => error(StatusCode::BAD_REQUEST, format!("{e:#}")),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

pub(super) async fn metrics_text(State(s): State<Arc<Shared>>) -> Response {
    let view = {
        let g = s.slot();
        g.as_ref().map(|r| metrics::RunView {
            run: r.id.clone(),
            pair: r.pair.clone(),
            interface: r.iface.clone(),
            test: r.test.clone(),
            role: r.role.clone(),
            active: r.active(),
            live: r.live.clone(),
            result: r.result.clone(),
        })
    };
    match metrics::render(view.as_ref()) {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// Checks the names a request gives (400 with the command line's own
/// message) and that the agent serves the interface (403): the refusal, if
/// any.
pub(super) fn refuse_where(
    s: &Shared,
    iface: &str,
    netns: Option<&str>,
    what: &str,
) -> Option<Response> {
    if let Err(e) = check_iface(iface) {
        return Some(error(StatusCode::BAD_REQUEST, format!("{what}: {e}")));
    }
    if let Some(Err(e)) = netns.map(check_netns) {
        return Some(error(StatusCode::BAD_REQUEST, format!("?netns=: {e}")));
    }
    s.allow
        .refusal(iface, netns)
        .map(|why| error(StatusCode::FORBIDDEN, why))
}
