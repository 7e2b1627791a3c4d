//! What the server sends on a game's WebSocket. A frame is either a room's, encoded once
//! for all of its connections ([`RoomFrame`]: snapshots, updates, presence, the mover's
//! reminder, shutdown), or a connection's own answer to its client ([`ConnectionFrame`]:
//! welcome, acks, refusals, errors, pongs). [`ServerMessage`] is the schema of both.

use crate::error::{AppError, ErrorBody};
use crate::rooms::frames::RoomFrame;
use carcassonne_store::ChatPolicy;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{OneOf, Schema};
use utoipa::{PartialSchema, ToSchema};
use uuid::Uuid;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Player,
    Spectator,
}

/// What a connection tells its own client.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ConnectionFrame {
    Welcome {
        game_id: Uuid,
        role: Role,
        seat: Option<u8>,
        /// Who may write in the chat when the client said hello (later changes arrive
        /// as `chat` entries of kind `policy`).
        chat: ChatPolicy,
    },
    Ack {
        id: String,
        seq: u64,
    },
    Rejected {
        id: String,
        error: ErrorBody,
    },
    Error {
        error: ErrorBody,
    },
    Pong,
}

impl ConnectionFrame {
    pub fn error(error: &AppError) -> ConnectionFrame {
        ConnectionFrame::Error {
            error: error.body(),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("connection frames serialize")
    }
}

/// The order `docs/protocol.md` lists the frames in, which the schema keeps.
const FRAME_ORDER: [&str; 14] = [
    "welcome",
    "snapshot",
    "update",
    "your_turn",
    "ack",
    "rejected",
    "error",
    "presence",
    "chat",
    "chat_mutes",
    "rematch",
    "rematch_seat",
    "pong",
    "shutdown",
];

/// Any frame the server sends: a room's or a connection's own. Only a schema (each part
/// is encoded by its own type), so it has no values.
pub enum ServerMessage {}

impl PartialSchema for ServerMessage {
    /// One `oneOf` of every frame, each told apart by its `type`.
    fn schema() -> RefOr<Schema> {
        let mut frames = OneOf::new();
        frames.description = Some("What the server sends.".into());
        for part in [ConnectionFrame::schema(), RoomFrame::schema()] {
            if let RefOr::T(Schema::OneOf(part)) = part {
                frames.items.extend(part.items);
            }
        }
        frames.items.sort_by_key(|frame| {
            let frame = serde_json::to_value(frame).unwrap_or_default();
            let kind = &frame["properties"]["type"]["enum"][0];
            FRAME_ORDER
                .iter()
                .position(|known| kind == &Value::from(*known))
        });
        RefOr::T(Schema::OneOf(frames))
    }
}

impl ToSchema for ServerMessage {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        ConnectionFrame::schemas(schemas);
        RoomFrame::schemas(schemas);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_has_every_frame_once_in_the_documented_order() {
        let schema = serde_json::to_value(ServerMessage::schema()).unwrap();
        let kinds: Vec<&str> = schema["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|frame| frame["properties"]["type"]["enum"][0].as_str().unwrap())
            .collect();
        assert_eq!(kinds, FRAME_ORDER);
    }
}
