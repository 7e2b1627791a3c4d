//! Quick play over REST: `POST /api/queue` makes a ticket, `GET /api/queue/{id}` shows
//! it, `DELETE /api/queue/{id}` cancels it, and `GET /api/queue/{id}/events` streams
//! server-sent events until it is matched (with the lobby, the seat and a seat token),
//! cancelled or expired. The ticket's own token (`Authorization: Bearer TICKET_TOKEN`),
//! shown once at creation, is what these take.

use crate::api::extract::{AppJson, AppPath};
use crate::api::headers::bearer_token;
use crate::api::players::verify_player;
use crate::auth::Token;
use crate::clock::{now_millis, rfc3339};
use crate::error::{AppError, ErrorResponse};
use crate::queue::start_matched_game;
use crate::rooms::error::RoomError;
use crate::rooms::names::display_name;
use crate::rooms::{JoinedSeat, Request};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use carcassonne_core::Rules;
use carcassonne_store::ratings::{Rating, RatingPool};
use carcassonne_store::{LobbyStatus, QueueTicket, TicketStatus, TimeControl};
use futures_util::Stream;
use serde::{Deserialize, Serialize};
use std::convert::Infallible;
use std::time::Duration;
use utoipa::ToSchema;
use uuid::Uuid;

/// How often an event stream looks at its ticket in the database, where any node's
/// matchmaker may have matched it.
const WATCH_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JoinQueue {
    pub player_id: Uuid,
    pub player_secret: String,
    /// The name the seat will carry (default: the player's own), 1 to 32 visible
    /// characters.
    #[schema(min_length = 1, max_length = 32)]
    pub display_name: Option<String>,
    /// How many players the game may have.
    pub players: PlayerCount,
    /// Rules options as in `notation.md`; `{}` is the base game. Only tickets with the
    /// same rules, clock and `rated` are matched together.
    #[serde(default)]
    pub rules: Rules,
    #[serde(default)]
    pub clock: TimeControl,
    /// A rated game changes the players' ratings when it ends; a rated ticket is never
    /// given bots.
    #[serde(default)]
    pub rated: bool,
}

/// A game size, or a range of them: `{"min": 2, "max": 4}`.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlayerCount {
    #[schema(minimum = 2, maximum = 6)]
    pub min: u8,
    #[schema(minimum = 2, maximum = 6)]
    pub max: u8,
}

/// A ticket as its owner sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct TicketView {
    pub id: Uuid,
    pub player_id: Uuid,
    /// `waiting`, `matched`, `cancelled` or `expired`.
    pub status: String,
    pub players: PlayerCount,
    pub rules: Rules,
    pub clock: TimeControl,
    pub rated: bool,
    pub created_at: String,
    /// When a ticket still waiting then expires.
    pub expires_at: String,
    /// How far from the player's rating the matchmaker looks now (mu points); null once
    /// the ticket no longer waits.
    pub window: Option<f64>,
    /// The game a matched ticket was seated in. The seat (the start shuffles the seat
    /// order) and its token come with the event stream's `matched`, or from
    /// `POST /api/lobbies/{id}/reclaim`.
    pub lobby_id: Option<Uuid>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TicketCreated {
    pub ticket: TicketView,
    /// Shown once: it watches and cancels the ticket.
    pub ticket_token: String,
}

/// The `matched` event: the game and a fresh token for the player's seat.
#[derive(Debug, Serialize, ToSchema)]
pub struct TicketMatched {
    pub lobby_id: Uuid,
    pub seat: u8,
    /// A new token for the seat; any earlier one for it stops working.
    pub seat_token: String,
}

#[utoipa::path(post, path = "/api/queue", tag = "queue",
    request_body = JoinQueue,
    responses((status = 201, body = TicketCreated, description = "The waiting ticket, and its token (shown only here)"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: a malformed body, rules or clock out of bounds, or a player count the rules do not allow"),
        (status = 401, body = ErrorResponse, description = "`bad_player_secret`: the player id or secret is wrong"),
        (status = 409, body = ErrorResponse, description = "`already_queued`: the player already has a waiting ticket"),
        (status = 503, body = ErrorResponse, description = "`queue_full`: as many tickets wait as the server allows")))]
pub async fn join_queue(
    State(state): State<AppState>,
    AppJson(body): AppJson<JoinQueue>,
) -> Result<(StatusCode, Json<TicketCreated>), AppError> {
    validate_wish(&body)?;
    let player = verify_player(&state.store, body.player_id, Some(body.player_secret)).await?;
    let name = match &body.display_name {
        Some(name) => display_name(name)?,
        None => player.display_name,
    };
    let rating = current_mu(&state, body.player_id, body.players).await?;
    let token = Token::generate();
    let now = now_millis();
    let ticket = QueueTicket {
        id: Uuid::new_v4(),
        player_id: body.player_id,
        token_hash: token.hash(),
        display_name: name,
        min_players: body.players.min,
        max_players: body.players.max,
        match_key: match_key(&body.rules, body.clock, body.rated),
        rules: body.rules,
        clock: body.clock,
        rated: body.rated,
        rating,
        created_at: now,
        expires_at: now.saturating_add(state.queue.ticket_ttl.as_millis() as i64),
        status: TicketStatus::Waiting,
        lobby_id: None,
        seat: None,
    };
    match state.store.enqueue(&ticket, state.queue.max_waiting).await {
        Ok(true) => {}
        Ok(false) => return Err(AppError::QueueFull),
        Err(carcassonne_store::StoreError::Conflict(_)) => return Err(AppError::AlreadyQueued),
        Err(error) => return Err(error.into()),
    }
    tracing::info!(ticket = %ticket.id, player = %ticket.player_id, "queued");
    let created = TicketCreated {
        ticket: ticket_view(&state, &ticket, now),
        ticket_token: token.reveal().to_owned(),
    };
    Ok((StatusCode::CREATED, Json(created)))
}

fn validate_wish(body: &JoinQueue) -> Result<(), AppError> {
    let most = body.rules.max_players();
    let PlayerCount { min, max } = body.players;
    if !(2 <= min && min <= max && max <= most) {
        return Err(AppError::BadRequest(format!(
            "players must have 2 <= min <= max <= {most} with these rules"
        )));
    }
    body.rules
        .validate()
        .map_err(|error| AppError::BadRequest(format!("rules: {error}")))?;
    crate::api::lobbies::validate_clock(body.clock)
}

/// The player's mu in the pool the ticket aims at (the multiplayer pool for a ticket
/// that takes more than two players), or a new player's.
async fn current_mu(state: &AppState, player: Uuid, players: PlayerCount) -> Result<f64, AppError> {
    let pool = RatingPool::for_players(players.max);
    let ratings = state.store.player_ratings(player).await?;
    let skill = ratings
        .iter()
        .find(|rating| rating.pool == pool)
        .map_or_else(Rating::initial, |rating| rating.skill);
    Ok(skill.mu)
}

/// Tickets match only others with the same key. The expansions are sorted, so that the
/// order a client lists them in does not keep two players apart.
fn match_key(rules: &Rules, clock: TimeControl, rated: bool) -> String {
    let mut rules = rules.clone();
    rules.expansions.sort();
    serde_json::json!({ "rules": rules, "clock": clock, "rated": rated }).to_string()
}

fn ticket_view(state: &AppState, ticket: &QueueTicket, now: i64) -> TicketView {
    let waiting = ticket.status == TicketStatus::Waiting;
    TicketView {
        id: ticket.id,
        player_id: ticket.player_id,
        status: status_name(ticket.status).to_owned(),
        players: PlayerCount {
            min: ticket.min_players,
            max: ticket.max_players,
        },
        rules: ticket.rules.clone(),
        clock: ticket.clock,
        rated: ticket.rated,
        created_at: rfc3339(ticket.created_at),
        expires_at: rfc3339(ticket.expires_at),
        window: waiting.then(|| state.queue.policy.window(ticket, now)),
        lobby_id: ticket.lobby_id,
    }
}

fn status_name(status: TicketStatus) -> &'static str {
    match status {
        TicketStatus::Waiting => "waiting",
        TicketStatus::Matched => "matched",
        TicketStatus::Cancelled => "cancelled",
        TicketStatus::Expired => "expired",
    }
}

/// The ticket `id`, if the request carries its token. A wrong token and an unknown id
/// get the same `not_found`, so that ticket ids cannot be probed.
async fn owned_ticket(
    state: &AppState,
    id: Uuid,
    headers: &HeaderMap,
) -> Result<QueueTicket, AppError> {
    let token = bearer_token(headers)?;
    match state.store.queue_ticket(id).await? {
        Some(ticket) if ticket.token_hash == token.hash() => Ok(ticket),
        _ => Err(AppError::NotFound("no ticket with this id and token")),
    }
}

#[utoipa::path(get, path = "/api/queue/{id}", tag = "queue",
    params(("id" = Uuid, Path, description = "ticket id")),
    security(("seat_token" = [])),
    responses((status = 200, body = TicketView, description = "The ticket"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID"),
        (status = 401, body = ErrorResponse, description = "`missing_token`: no `Authorization: Bearer TICKET_TOKEN`"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no ticket with this id and token")))]
pub async fn show_ticket(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    headers: HeaderMap,
) -> Result<Json<TicketView>, AppError> {
    let ticket = owned_ticket(&state, id, &headers).await?;
    Ok(Json(ticket_view(&state, &ticket, now_millis())))
}

#[utoipa::path(delete, path = "/api/queue/{id}", tag = "queue",
    params(("id" = Uuid, Path, description = "ticket id")),
    security(("seat_token" = [])),
    responses((status = 204, description = "The ticket is cancelled"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID"),
        (status = 401, body = ErrorResponse, description = "`missing_token`: no `Authorization: Bearer TICKET_TOKEN`"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no ticket with this id and token"),
        (status = 409, body = ErrorResponse, description = "`ticket_not_waiting`: it was matched (play the game, or resign it), cancelled or expired already")))]
pub async fn cancel_ticket(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    headers: HeaderMap,
) -> Result<StatusCode, AppError> {
    let ticket = owned_ticket(&state, id, &headers).await?;
    if state.store.cancel_ticket(ticket.id).await? {
        return Ok(StatusCode::NO_CONTENT);
    }
    let now = state
        .store
        .queue_ticket(id)
        .await?
        .map(|ticket| ticket.status);
    Err(AppError::TicketNotWaiting(status_name(
        now.unwrap_or(ticket.status),
    )))
}

#[utoipa::path(get, path = "/api/queue/{id}/events", tag = "queue",
    params(("id" = Uuid, Path, description = "ticket id")),
    security(("seat_token" = [])),
    responses((status = 200, content_type = "text/event-stream", body = TicketMatched,
            description = "Server-sent events: `waiting` (a `TicketView`) now and every few seconds; then one of `matched` (a `TicketMatched`, with a fresh seat token), `cancelled` or `expired` (a `TicketView`), and the stream ends"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID"),
        (status = 401, body = ErrorResponse, description = "`missing_token`: no `Authorization: Bearer TICKET_TOKEN`"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no ticket with this id and token")))]
pub async fn ticket_events(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, AppError> {
    let ticket = owned_ticket(&state, id, &headers).await?;
    let stream = futures_util::stream::unfold(Watch::First(Box::new(ticket)), move |watch| {
        let state = state.clone();
        async move { watch.next(&state, id).await }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// Where an event stream stands.
enum Watch {
    /// The ticket as the request read it: its first event is sent at once.
    First(Box<QueueTicket>),
    /// Looking at the ticket every [`WATCH_INTERVAL`]; a waiting ticket is shown again
    /// every [`WAITING_EVERY`] millis.
    Polling {
        last_waiting_event: i64,
    },
    Done,
}

/// How often a waiting ticket is shown again, in milliseconds.
const WAITING_EVERY: i64 = 5_000;

impl Watch {
    /// The stream's next event, and what follows it.
    async fn next(self, state: &AppState, id: Uuid) -> Option<(Result<Event, Infallible>, Watch)> {
        let (mut ticket, mut last_waiting_event) = match self {
            Watch::Done => return None,
            Watch::First(ticket) => (Some(*ticket), None),
            Watch::Polling { last_waiting_event } => (None, Some(last_waiting_event)),
        };
        loop {
            let current = match ticket.take() {
                Some(ticket) => ticket,
                None => {
                    tokio::select! {
                        _ = tokio::time::sleep(WATCH_INTERVAL) => {}
                        _ = state.shutdown.cancelled() => return None,
                    }
                    match state.store.queue_ticket(id).await {
                        Ok(Some(ticket)) => ticket,
                        Ok(None) => return None,
                        // A database hiccup: look again next time.
                        Err(_) => continue,
                    }
                }
            };
            let now = now_millis();
            let event = |name: &str| ticket_event(state, &current, name, now);
            match current.status {
                TicketStatus::Waiting => {
                    let due = last_waiting_event.is_none_or(|last| now - last >= WAITING_EVERY);
                    if due {
                        let next = Watch::Polling {
                            last_waiting_event: now,
                        };
                        return Some((Ok(event("waiting")), next));
                    }
                    last_waiting_event = last_waiting_event.or(Some(now));
                }
                TicketStatus::Matched => match seat_for(state, &current).await {
                    // The matchmaker has written the game but not opened it yet.
                    Ok(None) => {}
                    Ok(Some(matched)) => {
                        let event = Event::default().event("matched").json_data(matched);
                        return Some((Ok(event.unwrap_or_default()), Watch::Done));
                    }
                    // The game's room is being opened, or moving between nodes: the
                    // next look finds it.
                    Err(error) if error.status() == StatusCode::SERVICE_UNAVAILABLE => {}
                    Err(error) => {
                        let event = Event::default().event("error").json_data(error.body());
                        return Some((Ok(event.unwrap_or_default()), Watch::Done));
                    }
                },
                TicketStatus::Cancelled => return Some((Ok(event("cancelled")), Watch::Done)),
                TicketStatus::Expired => return Some((Ok(event("expired")), Watch::Done)),
            }
        }
    }
}

fn ticket_event(state: &AppState, ticket: &QueueTicket, name: &str, now: i64) -> Event {
    Event::default()
        .event(name)
        .json_data(ticket_view(state, ticket, now))
        .unwrap_or_default()
}

/// The matched player's seat, with a fresh token; the game is started first if no node
/// has started it yet (its matchmaker died between writing it and starting it). None
/// while the game is written but its room not opened yet.
async fn seat_for(
    state: &AppState,
    ticket: &QueueTicket,
) -> Result<Option<TicketMatched>, AppError> {
    let Some(lobby_id) = ticket.lobby_id else {
        return Err(AppError::Internal);
    };
    let Some(room) = state.find_room(lobby_id).await? else {
        return match state.store.lobby(lobby_id).await? {
            Some((lobby, _))
                if matches!(lobby.status, LobbyStatus::Open | LobbyStatus::Playing) =>
            {
                Ok(None)
            }
            _ => Err(RoomError::GameOver.into()),
        };
    };
    start_matched_game(state, lobby_id).await?;
    let request = Request::Reclaim {
        player_id: ticket.player_id,
    };
    let joined: JoinedSeat = room.ask(request).await?;
    Ok(Some(TicketMatched {
        lobby_id,
        seat: joined.seat,
        seat_token: joined.token.reveal().to_owned(),
    }))
}
