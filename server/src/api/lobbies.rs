//! Lobbies over REST: create, list, show, join, leave, start, cancel.
//!
//! Reads come from the database; every change goes through the lobby's room actor, which
//! commits it and broadcasts it to the lobby's WebSocket clients. A seat token is
//! returned once, by `create` (the creator's seat) or `join`; `leave`, `start` and
//! `cancel` take it as `Authorization: Bearer TOKEN`.

use crate::admission::Refused;
use crate::api::extract::{AppJson, AppPath, AppQuery};
use crate::api::headers::{bearer_token, may_see_private};
use crate::api::players::{Identity, resolve_identity};
use crate::auth::{Token, invite_code, invite_code_hash};
use crate::clock::now_millis;
use crate::error::{AppError, ErrorResponse};
use crate::rooms::actor::Room;
use crate::rooms::error::RoomError;
use crate::rooms::names::printable_text;
pub use crate::rooms::view::{LobbyView, lobby_view};
use crate::rooms::{JoinedSeat, Request, RoomHandle};
use crate::state::AppState;
use axum::Json;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use carcassonne_core::Rules;
use carcassonne_store::{ChatPolicy, LobbyRow, LobbyStatus, SeatControl, SeatRow, TimeControl};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

const MAX_LOBBY_NAME_CHARS: usize = 64;
const MAX_PAGE_SIZE: u32 = 100;
/// Deeper pages of open lobbies are never useful and cost a long scan.
const MAX_PAGE: u32 = 10_000;

#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateLobby {
    /// 1 to 64 visible characters.
    #[schema(min_length = 1, max_length = 64)]
    pub name: String,
    /// Seats offered: 2 to 5, or 6 with Inns & Cathedrals.
    #[schema(minimum = 2, maximum = 6)]
    pub seats: u8,
    /// Rules options as in `notation.md`; `{}` is the base game.
    #[serde(default)]
    pub rules: Rules,
    /// Public lobbies are listed and open to spectators; private ones need the invite code.
    #[serde(default = "public_by_default")]
    pub public: bool,
    /// The time control (default: none). When a turn runs out a bot plays the rest of it.
    #[serde(default)]
    pub clock: TimeControl,
    /// A rated game changes its players' ratings when it ends (in the pool of its player
    /// count). Only registered players take its seats, the creator included, and no bots.
    #[serde(default)]
    pub rated: bool,
    /// Who may write in the game's chat: `all` (default), `players` (spectators read
    /// theirs but may not write) or `off`. The creator may change it during the game.
    #[serde(default)]
    pub chat: ChatPolicy,
    /// The creator, who takes seat 0.
    #[serde(flatten)]
    pub creator: Identity,
}

fn public_by_default() -> bool {
    true
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct JoinLobby {
    #[serde(flatten)]
    pub player: Identity,
    pub invite_code: Option<String>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartLobby {
    /// Shuffle the seat order before the game starts (seat 0 plays first).
    #[serde(default)]
    pub randomize_seats: bool,
}

/// A seat granted to the caller. The token is shown only here.
#[derive(Debug, Serialize, ToSchema)]
pub struct SeatGranted {
    pub lobby: LobbyView,
    pub seat: u8,
    pub seat_token: String,
    /// For the creator of a private lobby: the code others need to join or watch.
    pub invite_code: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// 1-based page number (at most 10,000).
    #[param(minimum = 1, maximum = 10_000)]
    pub page: Option<u32>,
    /// Lobbies per page, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    pub per_page: Option<u32>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LobbyPage {
    pub items: Vec<LobbyView>,
    pub page: u32,
    pub per_page: u32,
}

fn validate_new_lobby(body: &CreateLobby) -> Result<String, AppError> {
    let name = printable_text(&body.name, MAX_LOBBY_NAME_CHARS, "a lobby name")?;
    let max = body.rules.max_players();
    if !(2..=max).contains(&body.seats) {
        return Err(AppError::BadRequest(format!(
            "a lobby with these rules has 2 to {max} seats"
        )));
    }
    body.rules
        .validate()
        .map_err(|error| AppError::BadRequest(format!("rules: {error}")))?;
    validate_clock(body.clock)?;
    Ok(name)
}

/// The bounds `TimeControlSchema` documents: a turn of 1 s to 1 h with a reserve of up
/// to a day, or a correspondence turn of 1 h to 30 days.
pub fn validate_clock(clock: TimeControl) -> Result<(), AppError> {
    const SECOND: u64 = 1_000;
    const HOUR: u64 = 3_600 * SECOND;
    const DAY: u64 = 24 * HOUR;
    match clock {
        TimeControl::None => Ok(()),
        TimeControl::Turn {
            per_turn_ms,
            reserve_ms,
        } => {
            in_range_u64("clock.per_turn_ms", per_turn_ms, SECOND, HOUR)?;
            in_range_u64("clock.reserve_ms", reserve_ms, 0, DAY)
        }
        TimeControl::Correspondence { per_turn_ms } => {
            in_range_u64("clock.per_turn_ms", per_turn_ms, HOUR, 30 * DAY)
        }
    }
}

fn in_range_u64(name: &str, value: u64, min: u64, max: u64) -> Result<(), AppError> {
    if (min..=max).contains(&value) {
        return Ok(());
    }
    Err(AppError::BadRequest(format!(
        "{name} must be from {min} to {max}, not {value}"
    )))
}

#[utoipa::path(post, path = "/api/lobbies", tag = "lobbies",
    request_body = CreateLobby,
    responses((status = 201, body = SeatGranted, description = "The lobby, with the creator in seat 0 and their seat token (shown only here)"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: a malformed body, unknown or repeated rules options, or a value out of bounds"),
        (status = 401, body = ErrorResponse, description = "`bad_player_secret`: a player_id with a missing or wrong player_secret"),
        (status = 429, body = ErrorResponse, description = "`too_many_lobbies`: too many open lobbies, from this client or on the server")))]
pub async fn create_lobby(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    AppJson(body): AppJson<CreateLobby>,
) -> Result<(StatusCode, Json<SeatGranted>), AppError> {
    let name = validate_new_lobby(&body)?;
    let place = state
        .open_lobby_slots
        .try_take(peer.ip())
        .map_err(|refused| match refused {
            Refused::Full => AppError::TooManyLobbies("the server holds its most open lobbies"),
            Refused::FullForClient => {
                AppError::TooManyLobbies("this client holds its most open lobbies")
            }
        })?;
    let (creator_name, player_id) = resolve_identity(&state.store, body.creator).await?;
    if body.rated && player_id.is_none() {
        return Err(RoomError::RatedPlayersOnly.into());
    }
    let now = now_millis();
    let code = (!body.public).then(invite_code);
    let lobby = LobbyRow {
        id: Uuid::new_v4(),
        name,
        public: body.public,
        invite_hash: code.as_deref().map(invite_code_hash),
        deck_salt: None,
        seat_count: body.seats,
        rules: body.rules,
        clock: body.clock,
        status: LobbyStatus::Open,
        seed: None,
        seq: 0,
        created_at: now,
        started_at: None,
        finished_at: None,
        rated: body.rated,
        chat_policy: body.chat,
    };
    let token = Token::generate();
    let seat = SeatRow {
        seat: 0,
        display_name: creator_name,
        player_id,
        token_hash: token.hash(),
        creator: true,
        joined_at: now,
        control: SeatControl::Human,
        control_seq: 0,
        bot: None,
    };
    state.store.create_lobby(&lobby, &seat).await?;
    tracing::info!(lobby = %lobby.id, seats = lobby.seat_count, public = lobby.public, "lobby created");
    let view = lobby_view(&lobby, std::slice::from_ref(&seat));
    let invite_code = code;
    let mut room = Room::open(lobby, vec![seat], state.rooms.services.clone());
    room.hold_open_lobby_place(place);
    crate::cluster::start_new_room(&state.rooms, state.cluster.as_ref(), room).await?;
    let granted = SeatGranted {
        lobby: view,
        seat: 0,
        seat_token: token.reveal().to_owned(),
        invite_code,
    };
    Ok((StatusCode::CREATED, Json(granted)))
}

#[utoipa::path(get, path = "/api/lobbies", tag = "lobbies", params(PageQuery),
    responses((status = 200, body = LobbyPage, description = "Open public lobbies, newest first"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: a malformed query string")))]
pub async fn list_lobbies(
    State(state): State<AppState>,
    AppQuery(query): AppQuery<PageQuery>,
) -> Result<Json<LobbyPage>, AppError> {
    let (page, per_page, offset) = page_bounds(&query)?;
    let rows = state.store.open_public_lobbies(offset, per_page).await?;
    Ok(Json(lobby_page(&rows, page, per_page)))
}

/// The page, its size and the rows to skip, from a query checked against the bounds.
fn page_bounds(query: &PageQuery) -> Result<(u32, u32, u32), AppError> {
    let page = in_range("page", query.page.unwrap_or(1), 1, MAX_PAGE)?;
    let per_page = in_range("per_page", query.per_page.unwrap_or(20), 1, MAX_PAGE_SIZE)?;
    Ok((page, per_page, (page - 1).saturating_mul(per_page)))
}

fn lobby_page(rows: &[(LobbyRow, Vec<SeatRow>)], page: u32, per_page: u32) -> LobbyPage {
    let items = rows
        .iter()
        .map(|(lobby, seats)| lobby_view(lobby, seats))
        .collect();
    LobbyPage {
        items,
        page,
        per_page,
    }
}

#[utoipa::path(get, path = "/api/games", tag = "lobbies", params(PageQuery),
    responses((status = 200, body = LobbyPage, description = "Public games in play, most recently started first: the games to watch at /ws/games/{id} as a spectator"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: a malformed query string")))]
pub async fn list_games(
    State(state): State<AppState>,
    AppQuery(query): AppQuery<PageQuery>,
) -> Result<Json<LobbyPage>, AppError> {
    let (page, per_page, offset) = page_bounds(&query)?;
    let rows = state.store.playing_public_games(offset, per_page).await?;
    Ok(Json(lobby_page(&rows, page, per_page)))
}

#[utoipa::path(get, path = "/api/lobbies/{id}", tag = "lobbies",
    params(("id" = Uuid, Path, description = "lobby id"),
        ("x-invite-code" = Option<String>, Header, description = "a private lobby's invite code")),
    security((), ("seat_token" = [])),
    responses((status = 200, body = LobbyView, description = "The lobby or game"),
        (status = 400, body = ErrorResponse, description = "The id is not a UUID"),
        (status = 403, body = ErrorResponse, description = "`private_game`: a private lobby, without its invite code or a seat token"),
        (status = 404, body = ErrorResponse, description = "No lobby with this id")))]
pub async fn show_lobby(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    headers: HeaderMap,
) -> Result<Json<LobbyView>, AppError> {
    let (lobby, seats) = stored_lobby(&state, id).await?;
    require_private_access(&lobby, &seats, &headers)?;
    Ok(Json(lobby_view(&lobby, &seats)))
}

/// Refuses a private lobby's details (its seat names, its game) to anyone without its
/// invite code or one of its seat tokens.
pub fn require_private_access(
    lobby: &LobbyRow,
    seats: &[SeatRow],
    headers: &HeaderMap,
) -> Result<(), AppError> {
    let token_hashes: Vec<&str> = seats.iter().map(|seat| seat.token_hash.as_str()).collect();
    if lobby.public || may_see_private(lobby.invite_hash.as_deref(), &token_hashes, headers) {
        Ok(())
    } else {
        Err(RoomError::PrivateGame.into())
    }
}

/// `value` if it lies in `min..=max`, else a `bad_request` naming the parameter.
pub fn in_range(name: &str, value: u32, min: u32, max: u32) -> Result<u32, AppError> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(AppError::BadRequest(format!(
            "{name} must be {min} to {max}"
        )))
    }
}

/// The live room of a lobby, or why there is none.
pub async fn live_room(state: &AppState, id: Uuid) -> Result<RoomHandle, AppError> {
    if let Some(room) = state.find_room(id).await? {
        return Ok(room);
    }
    match state.store.lobby(id).await? {
        Some((lobby, _)) if lobby.status == LobbyStatus::Finished => {
            Err(RoomError::LobbyNotOpen("finished").into())
        }
        Some((lobby, _)) if lobby.status == LobbyStatus::Cancelled => {
            Err(RoomError::LobbyNotOpen("cancelled").into())
        }
        _ => Err(AppError::NotFound("no lobby with this id")),
    }
}

#[utoipa::path(post, path = "/api/lobbies/{id}/join", tag = "lobbies",
    params(("id" = Uuid, Path, description = "lobby id")), request_body = JoinLobby,
    responses((status = 200, body = SeatGranted, description = "The seat taken and its seat token (shown only here)"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID, or the body is malformed"),
        (status = 401, body = ErrorResponse, description = "`bad_player_secret`: a player_id with a missing or wrong player_secret"),
        (status = 403, body = ErrorResponse, description = "`bad_invite_code`: a private lobby without its invite code"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no lobby with this id"),
        (status = 409, body = ErrorResponse, description = "`lobby_full`, `already_seated` or `lobby_not_open`")))]
pub async fn join_lobby(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    AppJson(body): AppJson<JoinLobby>,
) -> Result<Json<SeatGranted>, AppError> {
    let room = live_room(&state, id).await?;
    let (name, player_id) = resolve_identity(&state.store, body.player).await?;
    let invite_code = body.invite_code;
    let joined: JoinedSeat = room
        .ask(Request::Join {
            name,
            player_id,
            invite_code,
        })
        .await?;
    Ok(Json(SeatGranted {
        lobby: joined.lobby,
        seat: joined.seat,
        seat_token: joined.token.reveal().to_owned(),
        invite_code: None,
    }))
}

pub async fn current_view(state: &AppState, id: Uuid) -> Result<LobbyView, AppError> {
    let (lobby, seats) = stored_lobby(state, id).await?;
    Ok(lobby_view(&lobby, &seats))
}

/// A lobby and its seats as stored, or `not_found`.
pub async fn stored_lobby(
    state: &AppState,
    id: Uuid,
) -> Result<(LobbyRow, Vec<SeatRow>), AppError> {
    state
        .store
        .lobby(id)
        .await?
        .ok_or(AppError::NotFound("no lobby with this id"))
}

#[utoipa::path(post, path = "/api/lobbies/{id}/leave", tag = "lobbies",
    params(("id" = Uuid, Path, description = "lobby id")), security(("seat_token" = [])),
    responses((status = 204, description = "Seat freed (the creator leaving cancels the lobby)"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID, or the body is malformed"),
        (status = 401, body = ErrorResponse, description = "`missing_token` or `bad_token`: no seat token, or not one of this lobby"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no lobby with this id"),
        (status = 409, body = ErrorResponse, description = "`lobby_not_open`: the game has started or ended")))]
pub async fn leave_lobby(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    headers: HeaderMap,
) -> Result<StatusCode, AppError> {
    let token_hash = bearer_token(&headers)?.hash();
    let room = live_room(&state, id).await?;
    room.ask::<()>(Request::Leave { token_hash }).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/lobbies/{id}/start", tag = "lobbies",
    params(("id" = Uuid, Path, description = "lobby id")), security(("seat_token" = [])),
    request_body(content = Option<StartLobby>, description = "optional"),
    responses((status = 200, body = LobbyView, description = "The started game"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID, or the body is malformed"),
        (status = 401, body = ErrorResponse, description = "`missing_token` or `bad_token`: no seat token, or not one of this lobby"),
        (status = 403, body = ErrorResponse, description = "`not_creator`: only the creator may start"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no lobby with this id"),
        (status = 409, body = ErrorResponse, description = "`not_enough_players` or `lobby_not_open`")))]
pub async fn start_lobby(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<LobbyView>, AppError> {
    let token_hash = bearer_token(&headers)?.hash();
    let randomize_seats = start_options(&body)?.randomize_seats;
    let room = live_room(&state, id).await?;
    let started = room
        .ask(Request::Start {
            token_hash,
            randomize_seats,
        })
        .await?;
    Ok(Json(started))
}

/// The optional body of `start`: empty means the defaults.
fn start_options(body: &[u8]) -> Result<StartLobby, AppError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(StartLobby::default());
    }
    serde_json::from_slice(body)
        .map_err(|error| AppError::BadRequest(format!("bad start options: {error}")))
}

#[utoipa::path(post, path = "/api/lobbies/{id}/cancel", tag = "lobbies",
    params(("id" = Uuid, Path, description = "lobby id")), security(("seat_token" = [])),
    responses((status = 200, body = LobbyView, description = "The cancelled lobby"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID, or the body is malformed"),
        (status = 401, body = ErrorResponse, description = "`missing_token` or `bad_token`: no seat token, or not one of this lobby"),
        (status = 403, body = ErrorResponse, description = "`not_creator`: only the creator may cancel"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no lobby with this id"),
        (status = 409, body = ErrorResponse, description = "`lobby_not_open`: the game has started or ended")))]
pub async fn cancel_lobby(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    headers: HeaderMap,
) -> Result<Json<LobbyView>, AppError> {
    let token_hash = bearer_token(&headers)?.hash();
    let room = live_room(&state, id).await?;
    room.ask::<()>(Request::Cancel { token_hash }).await?;
    Ok(Json(current_view(&state, id).await?))
}
