//! What a room refuses, and why. These are the domain's errors: the codes and HTTP
//! statuses clients see for them are given in the service's error module, which wraps them, so that
//! every client-facing code stays in one place.

use carcassonne_core::PlayError;
use carcassonne_store::StoreError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoomError {
    #[error("{0}")]
    NotFound(&'static str),
    #[error("the seat token is not valid for this game")]
    BadToken,
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
    #[error("it is seat {0}'s turn")]
    NotYourTurn(u8),
    #[error(
        "the command expects update {expected} but the game is at {current}; apply the missed updates and retry"
    )]
    StaleSeq { expected: u64, current: u64 },
    #[error(
        "the game has no update {last_seq}: its newest is {current}; say hello without last_seq for a snapshot"
    )]
    UnknownSeq { last_seq: u64, current: u64 },
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
    #[error(
        "a rated game seats registered players only: join with player_id and player_secret (bots do not play rated lobbies)"
    )]
    RatedPlayersOnly,
    #[error("{0}")]
    BadChatText(String),
    #[error("{0}")]
    ChatClosed(&'static str),
    #[error("too many chat messages; wait a few seconds")]
    ChatRateLimited,
    #[error("to write in the spectators' chat, say hello with a player_id and player_secret")]
    SpectatorUnknown,
    #[error("{0}")]
    RematchUnavailable(&'static str),
    /// Nothing was changed: the database did not answer.
    #[error("the database is unavailable; nothing was changed, try again")]
    StorageUnavailable,
    /// Nothing was changed: every database connection of this node was in use for the
    /// whole wait. The database answers; the node is over its capacity for a moment.
    #[error("the server is busy; nothing was changed, try again in a moment")]
    Busy,
    /// The room is stopping here (a shutdown), or its game is decided by another node
    /// now: the client reconnects and finds it.
    #[error("the server is shutting down; reconnect shortly")]
    ShuttingDown,
    #[error("internal error")]
    Internal,
    /// A refusal another node's room gave (cluster mode), passed on as the client would
    /// have had it from that node.
    #[error("{message}")]
    Relayed {
        code: String,
        message: String,
        status: u16,
    },
}

/// A storage failure as the room (and its client) may see it. The cause is logged here,
/// where the error is converted (once: `?` converts it on its way out), and reaches the
/// client only as a code.
impl From<StoreError> for RoomError {
    fn from(error: StoreError) -> RoomError {
        match error {
            StoreError::Unavailable(cause) | StoreError::Unreachable(cause) => {
                tracing::warn!(%cause, "database unavailable");
                RoomError::StorageUnavailable
            }
            StoreError::Busy(cause) => {
                tracing::info!(%cause, "database pool busy: refused with backpressure");
                RoomError::Busy
            }
            StoreError::NotFound => RoomError::NotFound("no such record"),
            // Another node decides the game now: the client tries again and finds it.
            StoreError::NotOwner(cause) => {
                tracing::info!(%cause, "refused: another node owns the game");
                RoomError::ShuttingDown
            }
            other => {
                tracing::error!(error = %other, "storage error");
                RoomError::Internal
            }
        }
    }
}

impl RoomError {
    /// What a storage failure means to the client, without logging its cause: for a
    /// room's retries while the database stays away, whose first failure was logged.
    pub fn from_repeated(error: StoreError) -> RoomError {
        match error {
            StoreError::Unavailable(_) | StoreError::Unreachable(_) => {
                RoomError::StorageUnavailable
            }
            StoreError::Busy(_) => RoomError::Busy,
            other => RoomError::from(other),
        }
    }
}
