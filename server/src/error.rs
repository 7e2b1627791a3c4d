//! One error type for the whole service, with a stable code for clients: every code a
//! client can be sent, REST or WebSocket, is named in [`AppError::code`] (a room's
//! refusals, the domain's [`RoomError`], in the function it calls) and nowhere else.
//!
//! REST handlers return `Result<_, AppError>`; the response is
//! `{"error": {"code": "...", "message": "..."}}` with a fitting HTTP status. WebSocket
//! replies use the same codes. Internal errors are logged with their cause and reach
//! the client only as `internal`.

use crate::rooms::error::RoomError;
use axum::Json;
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use carcassonne_store::StoreError;
use serde::Serialize;
use utoipa::ToSchema;

/// How long a client refused as `busy` is asked to wait (`Retry-After`): about the time
/// a burst of requests takes to drain from the database pool.
const BUSY_RETRY_AFTER_SECONDS: u16 = 1;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AppError {
    /// A room refused, or could not answer.
    #[error(transparent)]
    Room(#[from] RoomError),
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(&'static str),
    #[error("a seat token is required (Authorization: Bearer TOKEN)")]
    MissingToken,
    #[error("the player id or secret is wrong")]
    BadPlayerSecret,
    /// An account token that is not the configured issuer's, badly signed, or out of date.
    #[error("the account token is not valid here")]
    BadAccountToken,
    /// A recovery code that is unknown, used, replaced or expired.
    #[error("the recovery code is not valid (used, replaced or expired codes never are)")]
    BadRecoveryCode,
    #[error("spectators cannot play")]
    NotAPlayer,
    /// An operator's request without the configured admin token (or none is configured).
    #[error("this needs the operator's admin token (Authorization: Bearer TOKEN)")]
    BadAdminToken,
    #[error("too many connections; try again later")]
    TooManyConnections,
    #[error("{0}")]
    TooManyLobbies(&'static str),
    #[error("too many requests; slow down")]
    RateLimited,
    /// Quick play: the player already has a waiting ticket.
    #[error("this player already waits in the queue: cancel that ticket first")]
    AlreadyQueued,
    /// Quick play: as many tickets wait as the server allows.
    #[error("the queue is full; try again shortly")]
    QueueFull,
    /// Quick play: the ticket was matched, cancelled or expired already.
    #[error("the ticket is {0}, not waiting")]
    TicketNotWaiting(&'static str),
    #[error("this endpoint does not take that method")]
    MethodNotAllowed,
    #[error("internal error")]
    Internal,
    /// A WebSocket text frame that is not JSON.
    #[error("{0}")]
    MalformedJson(String),
    /// A WebSocket message without a `type` the server knows.
    #[error("{0}")]
    UnknownType(String),
    /// A known WebSocket message with missing or wrong fields, or a binary frame.
    #[error("{0}")]
    BadMessage(String),
    #[error("say hello first")]
    HelloRequired,
    #[error("this connection has already said hello")]
    AlreadyWelcomed,
    /// A WebSocket connection over its message rate, just before it is closed.
    #[error("too many messages")]
    TooManyMessages,
    /// `/readyz`: the server is draining before it stops.
    #[error("the server is shutting down")]
    Draining,
    /// `/readyz`: the database does not answer its ping.
    #[error("the database does not answer")]
    DatabaseUnavailable,
}

impl AppError {
    /// The stable machine-readable code.
    pub fn code(&self) -> &str {
        match self {
            AppError::Room(refusal) => room_code(refusal),
            AppError::BadRequest(_) => "bad_request",
            AppError::NotFound(_) => "not_found",
            AppError::MissingToken => "missing_token",
            AppError::BadPlayerSecret => "bad_player_secret",
            AppError::BadAccountToken => "bad_account_token",
            AppError::BadRecoveryCode => "bad_recovery_code",
            AppError::NotAPlayer => "not_a_player",
            AppError::BadAdminToken => "bad_admin_token",
            AppError::TooManyConnections => "too_many_connections",
            AppError::TooManyLobbies(_) => "too_many_lobbies",
            AppError::RateLimited => "rate_limited",
            AppError::AlreadyQueued => "already_queued",
            AppError::QueueFull => "queue_full",
            AppError::TicketNotWaiting(_) => "ticket_not_waiting",
            AppError::MethodNotAllowed => "method_not_allowed",
            AppError::Internal => "internal",
            AppError::MalformedJson(_) => "malformed_json",
            AppError::UnknownType(_) => "unknown_type",
            AppError::BadMessage(_) => "bad_message",
            AppError::HelloRequired => "hello_required",
            AppError::AlreadyWelcomed => "already_welcomed",
            AppError::TooManyMessages => "rate_limited",
            AppError::Draining => "draining",
            AppError::DatabaseUnavailable => "database_unavailable",
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            AppError::Room(refusal) => room_status(refusal),
            AppError::BadRequest(_)
            | AppError::MalformedJson(_)
            | AppError::UnknownType(_)
            | AppError::BadMessage(_)
            | AppError::HelloRequired => StatusCode::BAD_REQUEST,
            AppError::NotFound(_) => StatusCode::NOT_FOUND,
            AppError::MissingToken
            | AppError::BadPlayerSecret
            | AppError::BadAccountToken
            | AppError::BadRecoveryCode
            | AppError::BadAdminToken => StatusCode::UNAUTHORIZED,
            AppError::NotAPlayer => StatusCode::FORBIDDEN,
            AppError::AlreadyWelcomed | AppError::AlreadyQueued | AppError::TicketNotWaiting(_) => {
                StatusCode::CONFLICT
            }
            AppError::TooManyConnections
            | AppError::Draining
            | AppError::DatabaseUnavailable
            | AppError::QueueFull => StatusCode::SERVICE_UNAVAILABLE,
            AppError::TooManyLobbies(_) | AppError::RateLimited | AppError::TooManyMessages => {
                StatusCode::TOO_MANY_REQUESTS
            }
            AppError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            AppError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            code: self.code().to_owned(),
            message: self.to_string(),
        }
    }
}

/// The code of a room's refusal.
fn room_code(refusal: &RoomError) -> &str {
    match refusal {
        RoomError::NotFound(_) => "not_found",
        RoomError::BadToken => "bad_token",
        RoomError::NotCreator => "not_creator",
        RoomError::BadInviteCode => "bad_invite_code",
        RoomError::LobbyFull => "lobby_full",
        RoomError::AlreadySeated(_) => "already_seated",
        RoomError::LobbyNotOpen(_) => "lobby_not_open",
        RoomError::NotEnoughPlayers => "not_enough_players",
        RoomError::GameNotStarted => "game_not_started",
        RoomError::GameOver => "game_over",
        RoomError::NotYourTurn(_) => "not_your_turn",
        RoomError::StaleSeq { .. } => "stale_seq",
        RoomError::UnknownSeq { .. } => "unknown_seq",
        RoomError::IllegalMove(error) => error.code(),
        RoomError::TurnTimedOut => "turn_timed_out",
        RoomError::SeatAbandoned => "seat_abandoned",
        RoomError::Resigned => "resigned",
        RoomError::TooLateToAbort => "too_late_to_abort",
        RoomError::NotABot(_) => "not_a_bot",
        RoomError::PrivateGame => "private_game",
        RoomError::RatedPlayersOnly => "rated_players_only",
        RoomError::BadChatText(_) => "bad_chat_text",
        RoomError::ChatClosed(_) => "chat_closed",
        RoomError::ChatRateLimited => "chat_rate_limited",
        RoomError::SpectatorUnknown => "spectator_unknown",
        RoomError::RematchUnavailable(_) => "rematch_unavailable",
        RoomError::StorageUnavailable => "storage_unavailable",
        RoomError::Busy => "busy",
        RoomError::ShuttingDown => "shutting_down",
        RoomError::Internal => "internal",
        RoomError::Relayed { code, .. } => code,
    }
}

fn room_status(refusal: &RoomError) -> StatusCode {
    match refusal {
        RoomError::IllegalMove(_) | RoomError::BadChatText(_) => StatusCode::BAD_REQUEST,
        RoomError::ChatRateLimited | RoomError::Busy => StatusCode::TOO_MANY_REQUESTS,
        RoomError::NotFound(_) => StatusCode::NOT_FOUND,
        RoomError::BadToken => StatusCode::UNAUTHORIZED,
        RoomError::NotCreator
        | RoomError::BadInviteCode
        | RoomError::PrivateGame
        | RoomError::RatedPlayersOnly
        | RoomError::ChatClosed(_)
        | RoomError::SpectatorUnknown => StatusCode::FORBIDDEN,
        RoomError::LobbyFull
        | RoomError::AlreadySeated(_)
        | RoomError::LobbyNotOpen(_)
        | RoomError::NotEnoughPlayers
        | RoomError::GameNotStarted
        | RoomError::GameOver
        | RoomError::NotYourTurn(_)
        | RoomError::StaleSeq { .. }
        | RoomError::UnknownSeq { .. }
        | RoomError::TurnTimedOut
        | RoomError::SeatAbandoned
        | RoomError::Resigned
        | RoomError::TooLateToAbort
        | RoomError::NotABot(_)
        | RoomError::RematchUnavailable(_) => StatusCode::CONFLICT,
        RoomError::StorageUnavailable | RoomError::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
        RoomError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        RoomError::Relayed { status, .. } => {
            StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
        }
    }
}

/// A storage failure as the client may see it: as a room sees it (see
/// [`RoomError`]'s conversion, which logs the cause once).
impl From<StoreError> for AppError {
    fn from(error: StoreError) -> AppError {
        AppError::Room(RoomError::from(error))
    }
}

impl From<crate::rooms::names::NameError> for AppError {
    fn from(error: crate::rooms::names::NameError) -> AppError {
        AppError::BadRequest(error.to_string())
    }
}

/// The `error` member of every error response and rejection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, ToSchema)]
pub struct ErrorBody {
    /// A stable machine-readable code, e.g. `lobby_full`.
    pub code: String,
    /// A human-readable explanation.
    pub message: String,
}

/// The JSON body of an error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorResponse {
    pub error: ErrorBody,
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let busy = matches!(self, AppError::Room(RoomError::Busy));
        let body = ErrorResponse { error: self.body() };
        let mut response = (self.status(), Json(body)).into_response();
        // Backpressure: the client is told when to try again, as for a rate limit.
        if busy {
            let retry_after = HeaderValue::from(BUSY_RETRY_AFTER_SECONDS);
            response.headers_mut().insert(RETRY_AFTER, retry_after);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rooms::names::display_name;

    #[test]
    fn a_storage_failure_reaches_the_client_only_as_a_code() {
        let fails = |error| AppError::from(error).code().to_owned();
        assert_eq!(
            fails(StoreError::Unreachable("pool timed out".into())),
            "storage_unavailable"
        );
        assert_eq!(
            fails(StoreError::NotOwner("node b".into())),
            "shutting_down"
        );
        let corrupt = AppError::from(StoreError::Corrupt("column rules: secret detail".into()));
        assert_eq!(corrupt.code(), "internal");
        assert!(!corrupt.body().message.contains("secret detail"));
    }

    #[test]
    fn a_busy_database_pool_is_backpressure_with_retry_after_not_an_outage() {
        let busy = AppError::from(StoreError::Busy("pool timed out".into()));
        assert_eq!(busy.code(), "busy");
        let response = busy.into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[RETRY_AFTER], "1");
        let outage = AppError::from(StoreError::Unreachable("pool timed out".into()));
        let response = outage.into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(response.headers().get(RETRY_AFTER).is_none());
    }

    #[test]
    fn a_bad_name_is_a_bad_request_that_says_the_rule() {
        let error = AppError::from(display_name("\u{202E}nna").unwrap_err());
        assert_eq!(error.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            error.body().message,
            "a display name is 1 to 32 printable characters, without invisible or formatting \
             characters"
        );
    }
}
