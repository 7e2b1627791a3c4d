//! Operations endpoints: liveness (`/healthz`), readiness (`/readyz`) and metrics.
//! None of them is rate limited.

use crate::error::{AppError, ErrorResponse};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// The liveness answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok` whenever the server answers.
    pub status: &'static str,
    /// Lobbies and games held in memory.
    pub live_games: usize,
}

/// The readiness answer when ready.
#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    /// `ready`.
    pub status: &'static str,
    /// `ok`: the database answered.
    pub database: &'static str,
}

#[utoipa::path(get, path = "/healthz", tag = "system",
    description = "Liveness: 200 whenever the process serves requests, whatever the database does. \
                   Restart the server only when this fails.",
    responses((status = 200, description = "The server is alive.", body = Health)))]
pub async fn healthz(State(state): State<AppState>) -> Json<Health> {
    Json(Health {
        status: "ok",
        live_games: state.rooms.len(),
    })
}

#[utoipa::path(get, path = "/readyz", tag = "system",
    description = "Readiness: 200 when the database answers and the server is not draining; \
                   send new players elsewhere otherwise.",
    responses(
        (status = 200, description = "Ready: the database answers and the server is not draining.", body = Readiness),
        (status = 503, description = "Not ready: `draining` (shutting down) or `database_unavailable`.", body = ErrorResponse),
    ))]
pub async fn readyz(State(state): State<AppState>) -> Response {
    if state.draining() {
        return not_ready(AppError::Draining);
    }
    match state.store.ping().await {
        Ok(()) => Json(Readiness {
            status: "ready",
            database: "ok",
        })
        .into_response(),
        Err(_) => not_ready(AppError::DatabaseUnavailable),
    }
}

/// Not ready: 503 with the reason (`draining` or `database_unavailable`).
fn not_ready(reason: AppError) -> Response {
    debug_assert_eq!(reason.status(), StatusCode::SERVICE_UNAVAILABLE);
    reason.into_response()
}

#[utoipa::path(get, path = "/metrics", tag = "system",
    description = "Every metric in the Prometheus text format (see docs/operations.md).",
    responses((status = 200, description = "Prometheus text exposition", content_type = "text/plain")))]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    state.metrics.observe_pool(state.store.pool_status());
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
}
