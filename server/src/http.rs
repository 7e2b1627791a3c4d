//! The HTTP front door: our own accept loop over hyper's HTTP/1.1 connections, so that
//! every TCP connection is counted (in total and per client prefix: an IPv4 address or
//! an IPv6 /64), request headers must arrive within a deadline, and shutdown drains each
//! connection gracefully. Also the middleware every request passes: REST rate limiting
//! per client prefix and HTTP metrics, and the JSON body of 405 answers.

use crate::admission::{Refused, Slot};
use crate::error::AppError;
use crate::state::AppState;
use axum::Router;
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::HeaderValue;
use axum::http::header::RETRY_AFTER;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tower_service::Service;

/// The place a TCP connection holds; WebSocket connections keep it after the upgrade.
/// Never read: holding it is the point, and dropping the last clone frees the place.
#[derive(Clone, Debug)]
pub struct TcpSlot(#[expect(dead_code, reason = "held for its Drop")] Arc<Slot>);

/// How long to wait before accepting again after `accept` failed (as when out of file
/// descriptors), so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Accepts connections until shutdown, each served in a task of `state.tasks`.
pub async fn serve(listener: TcpListener, router: Router, state: AppState) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = state.shutdown.cancelled() => return,
        };
        match accepted {
            Ok((stream, peer)) => admit(stream, peer, &router, &state),
            Err(error) => {
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
}

/// Takes a place for the connection and serves it, or closes it at once.
fn admit(stream: TcpStream, peer: SocketAddr, router: &Router, state: &AppState) {
    // Without this, Nagle's algorithm holds the small frame that follows an ack (the
    // next player's update) until the client's delayed ACK arrives, about 40 ms later.
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%error, %peer, "could not set TCP_NODELAY");
    }
    let slot = match state.tcp_slots.try_take(peer.ip()) {
        Ok(slot) => TcpSlot(Arc::new(slot)),
        Err(refused) => {
            let reason = match refused {
                Refused::Full => "tcp_connections",
                Refused::FullForClient => "tcp_connections_per_ip",
            };
            state.metrics.refuse(reason);
            tracing::debug!(%peer, reason, "connection refused");
            return;
        }
    };
    let router = router.clone();
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        request.extensions_mut().insert(slot.clone());
        let mut router = router.clone();
        router.call(request)
    });
    state
        .tasks
        .spawn(serve_connection(stream, service, state.clone()));
}

async fn serve_connection<S>(stream: TcpStream, service: S, state: AppState)
where
    S: hyper::service::Service<
            Request<Incoming>,
            Response = Response,
            Error = std::convert::Infallible,
        > + Send
        + 'static,
    S::Future: Send + 'static,
{
    // HTTP/1.1 only, straight from hyper: hyper-util's auto builder first waits for
    // bytes to tell HTTP/1 from HTTP/2, with no deadline, so a silent connection would
    // never meet the header timeout.
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(state.limits.header_read_timeout)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(%error, "http connection ended with an error");
            }
        }
        _ = state.shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            // A client that does not read its response must not hold up the exit.
            let _ = tokio::time::timeout(state.limits.send_timeout, connection).await;
        }
    }
}

/// Paths that are never rate limited: what orchestrators and scrapers poll.
const UNLIMITED_PATHS: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// REST rate limiting per client prefix: `429` with a JSON body and `Retry-After`.
pub async fn limit_requests(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| *peer);
    let path = request.uri().path();
    let exempt = UNLIMITED_PATHS.contains(&path) || crate::web::is_static(path);
    if let (Some(peer), false) = (peer, exempt)
        && let Err(wait) = state.request_limiter.check(peer.ip())
    {
        state.metrics.refuse("rest_rate_limited");
        return too_many_requests(wait);
    }
    next.run(request).await
}

/// How often the REST limiter forgets the clients that are back to a full burst. Its
/// memory holds at most the clients seen in about this long (plus those still limited).
const FORGET_IDLE_CLIENTS_EVERY: Duration = Duration::from_secs(10);

/// Forgets idle clients of the REST limiter now and then, until shutdown.
pub async fn forget_idle_clients(state: AppState) {
    let mut ticks = tokio::time::interval(FORGET_IDLE_CLIENTS_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => state.request_limiter.forget_idle_clients(),
            _ = state.shutdown.cancelled() => return,
        }
    }
}

fn too_many_requests(wait: Duration) -> Response {
    let mut response = AppError::RateLimited.into_response();
    let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(seconds));
    response
}

/// Counts every HTTP request by method, matched route and status, and times it.
pub async fn observe_requests(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let method = request.method().as_str().to_owned();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str)
        .to_owned();
    let started = Instant::now();
    let response = next.run(request).await;
    let metrics = &state.metrics;
    metrics
        .http_latency
        .with_label_values(&[&method, &route])
        .observe(started.elapsed().as_secs_f64());
    metrics
        .http_requests
        .with_label_values(&[&method, &route, response.status().as_str()])
        .inc();
    response
}

/// The answer to a known path with the wrong method.
pub async fn method_not_allowed() -> Response {
    AppError::MethodNotAllowed.into_response()
}
