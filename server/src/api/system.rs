//! Operations endpoints: health and metrics.

use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok` whenever the server answers.
    pub status: &'static str,
    /// `ok`, or `unavailable` while the database cannot be reached (live games go on).
    pub database: &'static str,
    pub live_games: usize,
}

#[utoipa::path(get, path = "/healthz", tag = "system", responses((status = 200, body = Health)))]
pub async fn healthz(State(state): State<AppState>) -> Json<Health> {
    let database = match state.store.ping().await {
        Ok(()) => "ok",
        Err(_) => "unavailable",
    };
    Json(Health {
        status: "ok",
        database,
        live_games: state.rooms.len(),
    })
}

#[utoipa::path(get, path = "/metrics", tag = "system",
    responses((status = 200, description = "Prometheus text exposition", content_type = "text/plain")))]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
}
