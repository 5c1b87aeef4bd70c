//! The accept loop and its limits: a connection cap (refused with a JSON
//! 503), the request deadline, the body limit, JSON errors and the token.

use super::state::{Shared, BODY_LIMIT, DRAIN_LIMIT, LINGERING};
use crate::{api::ApiError, token};
use axum::{
    body::Body,
    extract::{ConnectInfo, Request, State},
    http::{header, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
    Json, Router,
};
use std::{sync::Arc, time::Duration};

/// Accepts connections until Ctrl-C or SIGTERM: at most `cap` at once
/// (one more is answered 503 and closed at once), each closed when it
/// sends no complete request head for `header_timeout` (a half-sent
/// request, or an idle keep-alive connection).
pub(super) async fn accept(
    listener: tokio::net::TcpListener,
    app: Router,
    cap: usize,
    header_timeout: Duration,
) {
    let permits = Arc::new(tokio::sync::Semaphore::new(cap));
    let lingering = Arc::new(tokio::sync::Semaphore::new(LINGERING));
    let stop = shutdown();
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            _ = &mut stop => return,
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors, or the like: wait, do not spin.
                    eprintln!("linerate: agent: accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            refuse_over_cap(stream, cap, &lingering);
            continue;
        };
        let app = app.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(
                move |mut req: hyper::Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(ConnectInfo(peer));
                    let mut app = app.clone();
                    async move { tower_service::Service::call(&mut app, req.map(Body::new)).await }
                },
            );
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                .await;
            drop(permit);
        });
    }
}

/// Answers a connection over the cap 503 and closes it. A few at a time
/// (LINGERING) read what the client sent for up to a second first, so that
/// it reads the answer rather than a reset; the rest are closed at once.
pub(super) fn refuse_over_cap(
    mut stream: tokio::net::TcpStream,
    cap: usize,
    lingering: &Arc<tokio::sync::Semaphore>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = serde_json::to_string(&ApiError {
        error: format!(
            "the agent holds {cap} connections, its limit (--max-connections): try again later"
        ),
        holder: None,
    })
    .unwrap_or_default();
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let Ok(turn) = lingering.clone().try_acquire_owned() else {
        let _ = stream.try_write(answer.as_bytes());
        return;
    };
    tokio::spawn(async move {
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            stream.write_all(answer.as_bytes()).await?;
            stream.shutdown().await?;
            let mut sink = [0u8; 1024];
            while stream.read(&mut sink).await? > 0 {}
            std::io::Result::Ok(())
        })
        .await;
        drop(turn);
    });
}

pub(super) async fn shutdown() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

/// An error answer; what the client sent is echoed with its control and
/// bidirectional characters escaped ([`linerate_host::shown::shown`]).
pub(super) fn error(code: StatusCode, msg: impl Into<String>) -> Response {
    (
        code,
        Json(ApiError {
            error: linerate_host::shown::shown(&msg.into()).into_owned(),
            holder: None,
        }),
    )
        .into_response()
}

/// Every error answer is JSON (`{"error": ...}`): the extractors' own
/// rejections (query, path), 405 and the body limit's 413 are text or empty
/// as axum makes them, so they are rewritten here.
pub(super) async fn json_errors(req: Request, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let r = next.run(req).await;
    let code = r.status();
    let json = r
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if json || !(code.is_client_error() || code.is_server_error()) {
        return r;
    }
    let (mut parts, body) = r.into_parts();
    let text = axum::body::to_bytes(body, 16 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let msg = match code {
        StatusCode::METHOD_NOT_ALLOWED => {
            format!("{method} is not allowed on {path}: see the API in docs/remote.md")
        }
        StatusCode::PAYLOAD_TOO_LARGE => too_large(),
        _ if text.is_empty() => code
            .canonical_reason()
            .unwrap_or("the request failed")
            .to_string(),
        _ => text,
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    let body = serde_json::to_vec(&ApiError {
        error: linerate_host::shown::shown(&msg).into_owned(),
        holder: None,
    })
    .unwrap_or_default();
    Response::from_parts(parts, Body::from(body))
}

/// A body announced over the limit is refused (413) once read, up to
/// DRAIN_LIMIT, so that the client, still sending it, gets the answer
/// rather than a broken pipe. After the token check: nobody else makes the
/// agent read.
pub(super) async fn oversized(req: Request, next: Next) -> Response {
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_none_or(|n| n <= BODY_LIMIT as u64) {
        return next.run(req).await;
    }
    let _ = axum::body::to_bytes(req.into_body(), DRAIN_LIMIT).await;
    error(StatusCode::PAYLOAD_TOO_LARGE, too_large())
}

pub(super) fn too_large() -> String {
    format!("the request body is larger than the agent's limit of {BODY_LIMIT} bytes (a run request is a small JSON object)")
}

/// A request (its body, its answer) gets `request_timeout`: a body sent
/// slowly holds no connection for longer.
pub(super) async fn deadline(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    match tokio::time::timeout(s.request_timeout, next.run(req)).await {
        Ok(r) => r,
        Err(_) => error(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request took longer than {:?}: its body came too slowly",
                s.request_timeout
            ),
        ),
    }
}

/// Every request carries the token, or is refused before it does anything.
pub(super) async fn auth(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let ok = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| token::same(t.trim().as_bytes(), s.token.as_bytes()));
    if !ok {
        let mut r = error(
            StatusCode::UNAUTHORIZED,
            "missing or wrong token: send `Authorization: Bearer TOKEN` with the agent's shared token",
        );
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
        return r;
    }
    next.run(req).await
}
