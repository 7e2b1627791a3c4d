//! A game's chat over REST: its history, paged from the newest back, for a client that
//! wants more than the recent entries a WebSocket hello brings, and for a finished
//! match (the chat is kept with it; the game record leaves it out); and an operator's
//! deletion of a message, which reaches every connected client as a chat entry.

use crate::api::extract::{AppPath, AppQuery};
use crate::api::headers::{bearer_token, may_see_private};
use crate::api::lobbies::require_private_access;
use crate::auth::Token;
use crate::clock::now_millis;
use crate::error::{AppError, ErrorResponse};
use crate::rooms::Request;
use crate::rooms::chat::{ChatEntry, deletion};
use crate::rooms::error::RoomError;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use carcassonne_store::{ChatEntryRow, ChatRead, SeatRow, Store, StoreError};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

const DEFAULT_LIMIT: u32 = 100;
const MAX_LIMIT: u32 = 200;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChatQuery {
    /// Only entries before this `chat_seq` (default: up to the newest). Pass the
    /// previous page's `next_before`.
    #[param(minimum = 1)]
    pub before: Option<u64>,
    /// Entries per page, 1 to 200 (default 100).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
}

/// One entry of a game's chat, as the WebSocket's `chat` frame carries it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatItem {
    #[schema(minimum = 1)]
    pub chat_seq: u64,
    /// When it was written, Unix milliseconds.
    pub at: i64,
    pub entry: ChatEntry,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ChatPage {
    /// Oldest first.
    pub items: Vec<ChatItem>,
    /// Pass as `before` for the older page; `null` at the start of the chat.
    pub next_before: Option<u64>,
}

#[utoipa::path(get, path = "/api/lobbies/{id}/chat", tag = "lobbies",
    params(("id" = Uuid, Path, description = "lobby, game or match id"), ChatQuery,
        ("x-invite-code" = Option<String>, Header, description = "a private game's invite code")),
    security((), ("seat_token" = [])),
    responses((status = 200, body = ChatPage, description = "The newest chat entries before `before`: the spectators' chat, and the players' too for a request with one of the game's seat tokens"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID, or `before` or `limit` is out of range"),
        (status = 403, body = ErrorResponse, description = "`private_game`: a private game, without its invite code or a seat token"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no lobby with this id")))]
pub async fn game_chat(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    AppQuery(query): AppQuery<ChatQuery>,
    headers: HeaderMap,
) -> Result<Json<ChatPage>, AppError> {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    // `before` is an int64 in the schema, as the numbers it pages are.
    let before_in_range = query
        .before
        .is_none_or(|before| (1..=i64::MAX as u64).contains(&before));
    if !(1..=MAX_LIMIT).contains(&limit) || !before_in_range {
        return Err(AppError::BadRequest(format!(
            "limit must be 1 to {MAX_LIMIT}, and before 1 to {}",
            i64::MAX
        )));
    }
    let (lobby, seats) = state
        .store
        .lobby(id)
        .await?
        .ok_or(AppError::NotFound("no lobby with this id"))?;
    require_private_access(&lobby, &seats, &headers)?;
    let read = ChatRead {
        after: None,
        before: query.before,
        limit,
        players: holds_a_seat(&seats, &headers),
    };
    let rows = state.store.chat_entries(id, &read).await?;
    let next_before = (rows.len() == limit as usize)
        .then(|| rows.first().map(|row| row.chat_seq))
        .flatten()
        .filter(|&oldest| oldest > 1);
    let items = rows.into_iter().filter_map(chat_item).collect();
    Ok(Json(ChatPage { items, next_before }))
}

/// Whether the request carries one of the game's seat tokens: the same check that
/// opens a private game, without an invite code to accept.
fn holds_a_seat(seats: &[SeatRow], headers: &HeaderMap) -> bool {
    let token_hashes: Vec<&str> = seats.iter().map(|seat| seat.token_hash.as_str()).collect();
    may_see_private(None, &token_hashes, headers)
}

fn chat_item(row: ChatEntryRow) -> Option<ChatItem> {
    match serde_json::from_str(&row.entry) {
        Ok(entry) => Some(ChatItem {
            chat_seq: row.chat_seq,
            at: row.created_at,
            entry,
        }),
        Err(error) => {
            tracing::error!(%error, chat_seq = row.chat_seq, "unreadable chat entry");
            None
        }
    }
}

#[utoipa::path(delete, path = "/api/lobbies/{id}/chat/{chat_seq}", tag = "lobbies",
    params(("id" = Uuid, Path, description = "lobby, game or match id"),
        ("chat_seq" = u64, Path, description = "the message's `chat_seq`")),
    security(("admin_token" = [])),
    responses((status = 204, description = "Deleted: its text is gone from the database, and every connected client is sent a `deletion` entry"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID or `chat_seq` not a number"),
        (status = 401, body = ErrorResponse, description = "`bad_admin_token`: no admin token, a wrong one, or none configured"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no such game, or no message with this `chat_seq` in it"),
        (status = 503, body = ErrorResponse, description = "`storage_unavailable`: nothing was deleted; try again")))]
pub async fn delete_chat_message(
    State(state): State<AppState>,
    AppPath((id, chat_seq)): AppPath<(Uuid, u64)>,
    headers: HeaderMap,
) -> Result<StatusCode, AppError> {
    require_admin(&state, &headers)?;
    let stored = stored_entry(&state.store, id, chat_seq).await?;
    let room = state.find_room(id).await?;
    let asked = match &room {
        Some(room) => {
            let request = Request::DeleteChat {
                chat_seq,
                stored: stored.clone(),
            };
            room.ask::<()>(request).await
        }
        None => Err(RoomError::ShuttingDown),
    };
    match asked {
        // No room holds the game, or the one that did is stopping (the game ended):
        // the deletion is written to its history directly.
        Err(RoomError::ShuttingDown) => {
            delete_from_history(&state.store, id, chat_seq, &stored).await?
        }
        other => other?,
    }
    tracing::info!(game = %id, chat_seq, "chat message deleted by the operator");
    Ok(StatusCode::NO_CONTENT)
}

/// The request carries the operator's admin token, compared by its hash.
fn require_admin(state: &AppState, headers: &HeaderMap) -> Result<(), AppError> {
    let expected = state
        .admin_token_sha256
        .as_deref()
        .ok_or(AppError::BadAdminToken)?;
    let given: Token = bearer_token(headers).map_err(|_| AppError::BadAdminToken)?;
    if given.hash() == expected {
        Ok(())
    } else {
        Err(AppError::BadAdminToken)
    }
}

/// Entry `chat_seq` of the game's chat as the store holds it.
async fn stored_entry(store: &Store, game: Uuid, chat_seq: u64) -> Result<ChatEntry, AppError> {
    let missing = AppError::NotFound("no chat entry with this chat_seq in this game");
    // Keys are 1 to i64::MAX: anything else names no entry (and `chat_seq ± 1` stays
    // in range below).
    if chat_seq == 0 || chat_seq >= i64::MAX as u64 {
        return Err(missing);
    }
    let row = one_entry(store, game, Some(chat_seq - 1), Some(chat_seq + 1))
        .await?
        .ok_or(missing)?;
    serde_json::from_str(&row.entry).map_err(|error| {
        tracing::error!(%error, %game, chat_seq, "unreadable chat entry");
        AppError::Internal
    })
}

/// Deletes a message of a game no room holds (ended, or not loaded anywhere): the
/// deletion is the chat's next entry, so a concurrent entry makes it try again.
async fn delete_from_history(
    store: &Store,
    game: Uuid,
    chat_seq: u64,
    stored: &ChatEntry,
) -> Result<(), AppError> {
    for _ in 0..3 {
        let newest = one_entry(store, game, None, None).await?;
        let next_seq = newest.map_or(1, |row| row.chat_seq + 1);
        let write = deletion(chat_seq, stored, next_seq, now_millis())?;
        match store.append_chat(game, &write.row, &write.effect).await {
            Err(StoreError::Conflict(_)) => continue,
            outcome => return Ok(outcome?),
        }
    }
    Err(RoomError::StorageUnavailable.into())
}

/// The newest entry between `after` and `before`, any audience.
async fn one_entry(
    store: &Store,
    game: Uuid,
    after: Option<u64>,
    before: Option<u64>,
) -> Result<Option<ChatEntryRow>, AppError> {
    let read = ChatRead {
        after,
        before,
        limit: 1,
        players: true,
    };
    Ok(store.chat_entries(game, &read).await?.pop())
}
