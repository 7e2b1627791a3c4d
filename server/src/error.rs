//! One error type for the whole service, with a stable code for clients: every code a
//! client can be sent, REST or WebSocket, is named in [`AppError::code`] and nowhere else.
//!
//! REST handlers return `Result<_, AppError>`; the response is
//! `{"error": {"code": "...", "message": "..."}}` with a fitting HTTP status. WebSocket
//! replies use the same codes. Internal errors are logged with their cause and reach
//! the client only as `internal`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use carcassonne_core::PlayError;
use carcassonne_store::StoreError;
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AppError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(&'static str),
    #[error("a seat token is required (Authorization: Bearer TOKEN)")]
    MissingToken,
    #[error("the seat token is not valid for this game")]
    BadToken,
    #[error("the player id or secret is wrong")]
    BadPlayerSecret,
    #[error("only the lobby's creator may do this")]
    NotCreator,
    #[error("the invite code is missing or wrong")]
    BadInviteCode,
    #[error("every seat is taken")]
    LobbyFull,
    #[error("{0}")]
    AlreadySeated(&'static str),
    #[error("the lobby is {0}, not open")]
    LobbyNotOpen(&'static str),
    #[error("at least two seats must be taken to start")]
    NotEnoughPlayers,
    #[error("the game has not started")]
    GameNotStarted,
    #[error("the game is over")]
    GameOver,
    #[error("spectators cannot play")]
    NotAPlayer,
    #[error("it is seat {0}'s turn")]
    NotYourTurn(u8),
    #[error(
        "the command expects update {expected} but the game is at {current}; apply the missed updates and retry"
    )]
    StaleSeq { expected: u64, current: u64 },
    #[error("{0}")]
    IllegalMove(#[from] PlayError),
    #[error("this turn ran out of time and is being played for the seat")]
    TurnTimedOut,
    #[error("the seat was abandoned after repeated timeouts; say hello again to take it back")]
    SeatAbandoned,
    #[error("the seat has resigned; a bot plays it to the end")]
    Resigned,
    #[error("every seat has placed a tile: the game can no longer be aborted (resign instead)")]
    TooLateToAbort,
    #[error("seat {0} is not held by a bot")]
    NotABot(u8),
    #[error("this game is private")]
    PrivateGame,
    #[error("the database is unavailable; nothing was changed, try again")]
    StorageUnavailable,
    #[error("too many connections; try again later")]
    TooManyConnections,
    #[error("{0}")]
    TooManyLobbies(&'static str),
    #[error("too many requests; slow down")]
    RateLimited,
    #[error("this endpoint does not take that method")]
    MethodNotAllowed,
    #[error("the server is shutting down; reconnect shortly")]
    ShuttingDown,
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
    /// An error another node (the game's owner, in cluster mode) gave, passed on as the
    /// client would have had it from that node.
    #[error("{message}")]
    Relayed {
        code: String,
        message: String,
        status: u16,
    },
}

impl AppError {
    /// The stable machine-readable code.
    pub fn code(&self) -> &str {
        match self {
            AppError::BadRequest(_) => "bad_request",
            AppError::NotFound(_) => "not_found",
            AppError::MissingToken => "missing_token",
            AppError::BadToken => "bad_token",
            AppError::BadPlayerSecret => "bad_player_secret",
            AppError::NotCreator => "not_creator",
            AppError::BadInviteCode => "bad_invite_code",
            AppError::LobbyFull => "lobby_full",
            AppError::AlreadySeated(_) => "already_seated",
            AppError::LobbyNotOpen(_) => "lobby_not_open",
            AppError::NotEnoughPlayers => "not_enough_players",
            AppError::GameNotStarted => "game_not_started",
            AppError::GameOver => "game_over",
            AppError::NotAPlayer => "not_a_player",
            AppError::NotYourTurn(_) => "not_your_turn",
            AppError::StaleSeq { .. } => "stale_seq",
            AppError::IllegalMove(error) => error.code(),
            AppError::TurnTimedOut => "turn_timed_out",
            AppError::SeatAbandoned => "seat_abandoned",
            AppError::Resigned => "resigned",
            AppError::TooLateToAbort => "too_late_to_abort",
            AppError::NotABot(_) => "not_a_bot",
            AppError::PrivateGame => "private_game",
            AppError::StorageUnavailable => "storage_unavailable",
            AppError::TooManyConnections => "too_many_connections",
            AppError::TooManyLobbies(_) => "too_many_lobbies",
            AppError::RateLimited => "rate_limited",
            AppError::MethodNotAllowed => "method_not_allowed",
            AppError::ShuttingDown => "shutting_down",
            AppError::Internal => "internal",
            AppError::MalformedJson(_) => "malformed_json",
            AppError::UnknownType(_) => "unknown_type",
            AppError::BadMessage(_) => "bad_message",
            AppError::HelloRequired => "hello_required",
            AppError::AlreadyWelcomed => "already_welcomed",
            AppError::TooManyMessages => "rate_limited",
            AppError::Draining => "draining",
            AppError::DatabaseUnavailable => "database_unavailable",
            AppError::Relayed { code, .. } => code,
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            AppError::BadRequest(_)
            | AppError::IllegalMove(_)
            | AppError::MalformedJson(_)
            | AppError::UnknownType(_)
            | AppError::BadMessage(_)
            | AppError::HelloRequired => StatusCode::BAD_REQUEST,
            AppError::NotFound(_) => StatusCode::NOT_FOUND,
            AppError::MissingToken | AppError::BadToken | AppError::BadPlayerSecret => {
                StatusCode::UNAUTHORIZED
            }
            AppError::NotCreator
            | AppError::BadInviteCode
            | AppError::NotAPlayer
            | AppError::PrivateGame => StatusCode::FORBIDDEN,
            AppError::LobbyFull
            | AppError::AlreadySeated(_)
            | AppError::LobbyNotOpen(_)
            | AppError::NotEnoughPlayers
            | AppError::GameNotStarted
            | AppError::GameOver
            | AppError::NotYourTurn(_)
            | AppError::StaleSeq { .. }
            | AppError::TurnTimedOut
            | AppError::SeatAbandoned
            | AppError::Resigned
            | AppError::TooLateToAbort
            | AppError::NotABot(_)
            | AppError::AlreadyWelcomed => StatusCode::CONFLICT,
            AppError::StorageUnavailable
            | AppError::TooManyConnections
            | AppError::ShuttingDown
            | AppError::Draining
            | AppError::DatabaseUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            AppError::TooManyLobbies(_) | AppError::RateLimited | AppError::TooManyMessages => {
                StatusCode::TOO_MANY_REQUESTS
            }
            AppError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            AppError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            AppError::Relayed { status, .. } => {
                StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            }
        }
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            code: self.code().to_owned(),
            message: self.to_string(),
        }
    }
}

/// A storage failure as the client may see it. The cause is logged here, where the error
/// is converted (once: `?` converts it on its way out), and reaches the client only as a
/// code.
impl From<StoreError> for AppError {
    fn from(error: StoreError) -> AppError {
        match error {
            StoreError::Unavailable(cause) | StoreError::Unreachable(cause) => {
                tracing::warn!(%cause, "database unavailable");
                AppError::StorageUnavailable
            }
            StoreError::NotFound => AppError::NotFound("no such record"),
            // Another node decides the game now: the client tries again and finds it.
            StoreError::NotOwner(cause) => {
                tracing::info!(%cause, "refused: another node owns the game");
                AppError::ShuttingDown
            }
            other => {
                tracing::error!(error = %other, "storage error");
                AppError::Internal
            }
        }
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
        let body = ErrorResponse { error: self.body() };
        (self.status(), Json(body)).into_response()
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
