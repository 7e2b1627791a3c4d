//! One error type for the whole service, with a stable code for clients.
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
            AppError::Relayed { code, .. } => code,
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            AppError::BadRequest(_) | AppError::IllegalMove(_) => StatusCode::BAD_REQUEST,
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
            | AppError::NotABot(_) => StatusCode::CONFLICT,
            AppError::StorageUnavailable
            | AppError::TooManyConnections
            | AppError::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
            AppError::TooManyLobbies(_) | AppError::RateLimited => StatusCode::TOO_MANY_REQUESTS,
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

    /// Turns a storage failure into what the client may see, logging the cause.
    pub fn from_store(error: StoreError) -> AppError {
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
