//! The frames a room sends to its connections, each encoded once for all of them: the
//! state (snapshots and updates), a reminder of the mover's legal moves, presence, and
//! the notice that the room is closing. What a connection answers its own client
//! (welcome, acks, errors, pongs) is in [`crate::wire`], as is the schema of both.

use crate::rooms::chat::{Author, ChatEntry};
use crate::rooms::machine::events::UpdateEvent;
use crate::rooms::moves::LegalMoves;
use crate::rooms::patch::Operation;
use crate::rooms::rematch::RematchStatus;
use crate::rooms::view::PublicState;
use serde::Serialize;
use serde_json::value::RawValue;
use std::sync::Arc;
use utoipa::ToSchema;
use uuid::Uuid;

/// A frame for every connection of a room. The player to move gets theirs with their
/// legal moves.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RoomFrame {
    /// The whole public state at `seq`, the seats now connected, and, for the player to
    /// move, every legal move.
    Snapshot {
        seq: u64,
        state: Box<PublicState>,
        connected: Vec<u8>,
        #[serde(skip_serializing_if = "Option::is_none")]
        legal_moves: Option<LegalMoves>,
        /// Milliseconds left in the turn in progress when this message was made, when
        /// the game has a clock (the absolute deadline is in the state's `game.clock`).
        #[serde(skip_serializing_if = "Option::is_none")]
        turn_ms_left: Option<u64>,
    },
    /// One accepted change: the events it caused and the patch from `seq - 1` to `seq`.
    Update {
        seq: u64,
        // Serialized once and shared by every copy of the update.
        #[schema(value_type = Vec<UpdateEvent>)]
        events: Arc<RawValue>,
        /// An RFC 6902 JSON Patch from the state at `seq - 1`.
        #[schema(value_type = Vec<Operation>)]
        patch: Arc<RawValue>,
        #[serde(skip_serializing_if = "Option::is_none")]
        legal_moves: Option<LegalMoves>,
        /// Milliseconds left in the turn in progress when this message was made, when
        /// the game has a clock (the absolute deadline is in the state's `game.clock`).
        #[serde(skip_serializing_if = "Option::is_none")]
        turn_ms_left: Option<u64>,
    },
    /// To a player to move who reconnected having missed nothing: their legal moves at
    /// `seq` (the state is unchanged, so this carries no patch and no new `seq`).
    YourTurn {
        seq: u64,
        legal_moves: LegalMoves,
        /// Milliseconds left in the turn in progress when this message was made, when
        /// the game has a clock (the absolute deadline is in the state's `game.clock`).
        #[serde(skip_serializing_if = "Option::is_none")]
        turn_ms_left: Option<u64>,
    },
    Presence {
        seat: u8,
        connected: bool,
    },
    /// An entry of the game's chat, numbered by its own `chat_seq` (never a move's
    /// `seq`): a message, an operator's deletion, or a change of who may write. A
    /// spectator receives only the spectators' room's entries.
    Chat {
        chat_seq: u64,
        /// When it was written, Unix milliseconds.
        at: i64,
        entry: ChatEntry,
    },
    /// To a seated player's connections: the authors whose messages they are no longer
    /// sent (the whole list, after each change).
    ChatMutes {
        muted: Vec<Author>,
    },
    /// Where the finished game's rematch stands (see `docs/protocol.md`, "Rematch"): an
    /// offer and its answers so far, or how it ended.
    Rematch {
        status: RematchStatus,
        /// Who offered (`offered`, `expired`, `agreed`) or declined (`declined`).
        #[serde(skip_serializing_if = "Option::is_none")]
        by: Option<u8>,
        /// The seats that accepted (the offerer among them).
        accepted: Vec<u8>,
        /// The seats still to answer.
        waiting_for: Vec<u8>,
        /// When an offer waiting for answers expires, Unix milliseconds.
        #[serde(skip_serializing_if = "Option::is_none")]
        expires_at: Option<i64>,
        /// The new game, once agreed (already started).
        #[serde(skip_serializing_if = "Option::is_none")]
        lobby: Option<Uuid>,
    },
    /// To one seat's connections once a rematch is agreed: the seat its player holds in
    /// the new game, and the seat token to play it (shown only here).
    RematchSeat {
        lobby: Uuid,
        seat: u8,
        token: String,
    },
    Shutdown {
        message: String,
    },
}

impl RoomFrame {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("room frames serialize")
    }
}
