//! A game's event log over REST: the `events` of each of its updates, by `seq`, so that a
//! client that reloads, or a spectator who arrives late, can rebuild the log that live
//! `update` messages would have given it. The log comes from the database
//! ([`crate::rooms::machine::history`]), so it outlives restarts and finished games.

use crate::api::extract::{AppPath, AppQuery};
use crate::api::lobbies::require_private_access;
use crate::error::{AppError, ErrorResponse};
use crate::rooms::machine::events::UpdateEvent;
use crate::rooms::machine::history::{LoggedUpdate, log_page};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

const DEFAULT_LIMIT: i64 = 200;
const MAX_LIMIT: i64 = 500;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Only updates with a greater `seq` (default 0: from the start). Pass the previous
    /// page's `next_after_seq`, or the last `seq` the client has.
    #[param(minimum = 0)]
    pub after_seq: Option<i64>,
    /// Updates per page, 1 to 500 (default 200).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
}

/// One update's events.
#[derive(Debug, Serialize, ToSchema)]
pub struct UpdateEvents {
    /// The update's `seq`.
    #[schema(minimum = 1)]
    pub seq: u64,
    /// Exactly the `events` of the `update` message with this `seq`.
    #[schema(value_type = Vec<UpdateEvent>)]
    pub events: Box<RawValue>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EventLogPage {
    /// Updates in `seq` order.
    pub items: Vec<UpdateEvents>,
    /// Pass as `after_seq` for the next page; `null` when no update follows this page
    /// (yet: a game in play goes on over the WebSocket).
    #[schema(minimum = 1)]
    pub next_after_seq: Option<u64>,
}

#[utoipa::path(get, path = "/api/lobbies/{id}/events", tag = "lobbies",
    params(("id" = Uuid, Path, description = "lobby id"), EventsQuery,
        ("x-invite-code" = Option<String>, Header, description = "a private lobby's invite code")),
    security((), ("seat_token" = [])),
    responses((status = 200, body = EventLogPage, description = "The events of the lobby's or game's updates, in `seq` order"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID, `after_seq` is negative, or `limit` is not 1 to 500"),
        (status = 403, body = ErrorResponse, description = "`private_game`: a private lobby, without its invite code or a seat token"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no lobby with this id")))]
pub async fn lobby_events(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    AppQuery(query): AppQuery<EventsQuery>,
    headers: HeaderMap,
) -> Result<Json<EventLogPage>, AppError> {
    let (after_seq, limit) = bounds(&query)?;
    let log = state
        .store
        .game_log(id)
        .await?
        .ok_or(AppError::NotFound("no lobby with this id"))?;
    require_private_access(&log.lobby, &log.seats, &headers)?;
    let page = log_page(log, after_seq, limit).map_err(|error| {
        tracing::error!(%error, game = %id, "cannot rebuild a game's event log");
        AppError::Internal
    })?;
    Ok(Json(EventLogPage {
        items: page.items.into_iter().map(update_events).collect(),
        next_after_seq: page.next_after_seq,
    }))
}

fn bounds(query: &EventsQuery) -> Result<(u64, usize), AppError> {
    let after_seq = query.after_seq.unwrap_or(0);
    let after_seq = u64::try_from(after_seq)
        .map_err(|_| AppError::BadRequest("after_seq must not be negative".into()))?;
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(AppError::BadRequest(format!(
            "limit must be 1 to {MAX_LIMIT}"
        )));
    }
    Ok((after_seq, limit as usize))
}

fn update_events(update: LoggedUpdate) -> UpdateEvents {
    UpdateEvents {
        seq: update.seq,
        events: update.events,
    }
}
