//! Seats during a lobby and a game: bots added and removed by the creator, resigning,
//! aborting, and a registered player's recovery of a seat whose token was lost.
//!
//! Each is a request to the room's actor, like the lobby changes in [`super::lobbies`]:
//! committed, then broadcast to the WebSocket clients as an update.

use crate::api::extract::{AppJson, AppPath};
use crate::api::headers::bearer_token;
use crate::api::lobbies::{LobbyView, SeatGranted, current_view, live_room};
use crate::api::players::verify_player;
use crate::error::{AppError, ErrorResponse};
use crate::rooms::{JoinedSeat, Request};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use carcassonne_bots::BotLevel;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// The levels a bot plays at.
#[derive(Serialize, ToSchema)]
#[expect(
    dead_code,
    reason = "schema-only: described for OpenAPI, never constructed"
)]
#[serde(rename_all = "snake_case")]
pub enum BotLevelName {
    /// A uniformly random legal move.
    Random,
    /// The best immediate gain: points scored and the prospects of its figures.
    Greedy,
    /// Monte Carlo tree search on sampled decks, for its thinking time.
    Mcts,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddBot {
    #[schema(value_type = BotLevelName)]
    pub level: BotLevel,
    /// The seat's name (1 to 32 visible characters); by default e.g. "Greedy bot 2".
    #[schema(min_length = 1, max_length = 32)]
    pub name: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BotSeated {
    pub seat: u8,
    pub lobby: LobbyView,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReclaimSeat {
    pub player_id: Uuid,
    pub player_secret: String,
}

#[utoipa::path(post, path = "/api/lobbies/{id}/bots", tag = "seats",
    params(("id" = Uuid, Path, description = "lobby id")), security(("seat_token" = [])),
    request_body = AddBot,
    responses((status = 201, body = BotSeated, description = "A bot took the first free seat"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID, or the body is malformed"),
        (status = 401, body = ErrorResponse, description = "`missing_token` or `bad_token`: no seat token, or not one of this lobby"),
        (status = 403, body = ErrorResponse, description = "`not_creator`: only the creator may add bots"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no lobby with this id"),
        (status = 409, body = ErrorResponse, description = "`lobby_full`, `already_seated` (the name is taken) or `lobby_not_open`")))]
pub async fn add_bot(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    headers: HeaderMap,
    AppJson(body): AppJson<AddBot>,
) -> Result<(StatusCode, Json<BotSeated>), AppError> {
    let token_hash = bearer_token(&headers)?.hash();
    let name = body
        .name
        .as_deref()
        .map(crate::rooms::names::display_name)
        .transpose()?;
    let room = live_room(&state, id).await?;
    let seat = room
        .ask(Request::AddBot {
            token_hash,
            level: body.level,
            name,
        })
        .await?;
    let lobby = current_view(&state, id).await?;
    Ok((StatusCode::CREATED, Json(BotSeated { seat, lobby })))
}

#[utoipa::path(delete, path = "/api/lobbies/{id}/bots/{seat}", tag = "seats",
    params(("id" = Uuid, Path, description = "lobby id"),
        ("seat" = u8, Path, description = "the bot's seat", minimum = 0, maximum = 5)),
    security(("seat_token" = [])),
    responses((status = 204, description = "The bot's seat is free"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: a malformed id or seat"),
        (status = 401, body = ErrorResponse, description = "`missing_token` or `bad_token`: no seat token, or not one of this lobby"),
        (status = 403, body = ErrorResponse, description = "`not_creator`: only the creator may remove bots"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no lobby with this id"),
        (status = 409, body = ErrorResponse, description = "`not_a_bot` (no bot holds that seat) or `lobby_not_open`")))]
pub async fn remove_bot(
    State(state): State<AppState>,
    AppPath((id, seat)): AppPath<(Uuid, u8)>,
    headers: HeaderMap,
) -> Result<StatusCode, AppError> {
    let token_hash = bearer_token(&headers)?.hash();
    let room = live_room(&state, id).await?;
    room.ask::<()>(Request::RemoveBot { token_hash, seat })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/lobbies/{id}/resign", tag = "seats",
    params(("id" = Uuid, Path, description = "game id")), security(("seat_token" = [])),
    responses((status = 204, description = "Resigned: a bot plays the seat to the end and it cannot win; when no human seat is left to a human the game ends at once as `abandoned`"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID"),
        (status = 401, body = ErrorResponse, description = "`missing_token` or `bad_token`: no seat token, or not one of this game"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no game with this id"),
        (status = 409, body = ErrorResponse, description = "`game_not_started`, `resigned` (already) or `lobby_not_open` (the game has ended)")))]
pub async fn resign(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    headers: HeaderMap,
) -> Result<StatusCode, AppError> {
    ask_as_seat(&state, id, &headers, |token_hash| Request::Resign {
        token_hash,
    })
    .await
}

/// Sends a request that carries the caller's seat token to the game's room: 204 when
/// it is done.
async fn ask_as_seat(
    state: &AppState,
    id: Uuid,
    headers: &HeaderMap,
    make: impl FnOnce(String) -> Request,
) -> Result<StatusCode, AppError> {
    let token_hash = bearer_token(headers)?.hash();
    let room = live_room(state, id).await?;
    room.ask::<()>(make(token_hash)).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/lobbies/{id}/abort", tag = "seats",
    params(("id" = Uuid, Path, description = "game id")), security(("seat_token" = [])),
    responses((status = 204, description = "The game is cancelled and is not a match"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID"),
        (status = 401, body = ErrorResponse, description = "`missing_token` or `bad_token`: no seat token, or not one of this game"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no game with this id"),
        (status = 409, body = ErrorResponse, description = "`too_late_to_abort` (every seat has placed a tile), `game_not_started` or `lobby_not_open`")))]
pub async fn abort(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    headers: HeaderMap,
) -> Result<StatusCode, AppError> {
    ask_as_seat(&state, id, &headers, |token_hash| Request::Abort {
        token_hash,
    })
    .await
}

#[utoipa::path(post, path = "/api/lobbies/{id}/reclaim", tag = "seats",
    params(("id" = Uuid, Path, description = "lobby or game id")),
    request_body = ReclaimSeat,
    responses((status = 200, body = SeatGranted, description = "A new seat token for the player's seat (shown only here); the old token stops working, and an abandoned seat is the player's again"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID, or the body is malformed"),
        (status = 401, body = ErrorResponse, description = "`bad_player_secret`: an unknown player or a wrong secret"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no live lobby or game with this id, or the player holds no seat in it"),
        (status = 409, body = ErrorResponse, description = "`lobby_not_open`: the game has ended")))]
pub async fn reclaim(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    AppJson(body): AppJson<ReclaimSeat>,
) -> Result<Json<SeatGranted>, AppError> {
    verify_player(&state.store, body.player_id, Some(body.player_secret)).await?;
    let room = live_room(&state, id).await?;
    let player_id = body.player_id;
    let joined: JoinedSeat = room.ask(Request::Reclaim { player_id }).await?;
    Ok(Json(SeatGranted {
        lobby: joined.lobby,
        seat: joined.seat,
        seat_token: joined.token.reveal().to_owned(),
        invite_code: None,
    }))
}
