//! What a client may send on a game's WebSocket, and how a text frame is read: every
//! message is one JSON text frame with a `type` (see `docs/protocol.md`).

use crate::error::AppError;
use crate::rooms::chat::Author;
use crate::rooms::moves::WireMove;
use carcassonne_store::ChatPolicy;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

/// What a client may send.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientMessage {
    /// The first message: a seat token to play, none to watch a public game (or an
    /// invite code for a private one), and the last `seq` seen when resuming.
    Hello {
        token: Option<String>,
        invite_code: Option<String>,
        last_seq: Option<u64>,
        /// The last chat entry seen when resuming (none: the recent chat is sent).
        last_chat_seq: Option<u64>,
        /// A spectator's player identity, needed to write in the spectators' chat.
        player_id: Option<Uuid>,
        player_secret: Option<String>,
    },
    /// A move, with a client-chosen id and the `seq` of the state it was decided on.
    Command {
        id: String,
        seq: u64,
        #[serde(rename = "move")]
        mv: WireMove,
    },
    /// Ask for the updates after `last_seq`, or a snapshot (and the chat after
    /// `last_chat_seq`).
    Resync {
        last_seq: Option<u64>,
        last_chat_seq: Option<u64>,
    },
    /// A chat message, at most 500 characters: a seated player's goes to the players'
    /// chat, a spectator's (one who said hello with a player identity) to the
    /// spectators'.
    Say { text: String },
    /// A seated player stops receiving an author's chat messages, or starts again.
    Mute { author: Author, muted: bool },
    /// The lobby's creator changes who may write in the chat.
    ChatPolicy { chat: ChatPolicy },
    /// Once the game has finished, a seated player offers a rematch or accepts the offer
    /// waiting (`accept: true`), or declines it (`false`).
    Rematch { accept: bool },
    /// An application-level ping for clients that cannot send WebSocket pings.
    Ping,
}

const CLIENT_TYPES: [&str; 8] = [
    "hello",
    "command",
    "resync",
    "say",
    "mute",
    "chat_policy",
    "rematch",
    "ping",
];

/// A text frame that is not a client message: the error to reply with and, when the
/// frame is a `command` with a string `id`, that id (so the reply can be `rejected`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadFrame {
    pub error: AppError,
    pub command_id: Option<String>,
}

/// Parses a text frame. A frame that is not a client message gets code `malformed_json`
/// (not JSON), `unknown_type` (no known `type`) or `bad_message` (a known type with
/// missing or wrong fields), and the connection stays.
pub fn parse_client_message(text: &str) -> Result<ClientMessage, BadFrame> {
    // Nearly every frame is well formed: parse it straight into its message, and only
    // take the slower path through a JSON tree to say what is wrong with one that is not.
    if let Ok(message) = serde_json::from_str(text) {
        return Ok(message);
    }
    let reject = |error: AppError, command_id: Option<String>| BadFrame { error, command_id };
    let value: Value = serde_json::from_str(text).map_err(|e| {
        reject(
            AppError::MalformedJson(format!("malformed JSON: {e}")),
            None,
        )
    })?;
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !CLIENT_TYPES.contains(&kind) {
        let message = format!("unknown message type {kind:?}; expected one of {CLIENT_TYPES:?}");
        return Err(reject(AppError::UnknownType(message), None));
    }
    let kind = kind.to_owned();
    let command_id = match (kind.as_str(), value.get("id")) {
        ("command", Some(Value::String(id))) => Some(id.clone()),
        _ => None,
    };
    serde_json::from_value(value).map_err(|e| {
        reject(
            AppError::BadMessage(format!("bad {kind} message: {e}")),
            command_id,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_with_their_move() {
        let text = r#"{"type":"command","id":"c1","seq":4,"move":{"type":"place_tile","x":1,"y":0,"rotation":90}}"#;
        let ClientMessage::Command { id, seq, mv } = parse_client_message(text).unwrap() else {
            panic!("not a command");
        };
        assert_eq!((id.as_str(), seq), ("c1", 4));
        assert!(matches!(mv, WireMove::PlaceTile { x: 1, y: 0, .. }));
    }

    fn code_of(text: &str) -> String {
        parse_client_message(text)
            .unwrap_err()
            .error
            .code()
            .to_owned()
    }

    #[test]
    fn bad_frames_get_distinct_codes() {
        assert_eq!(code_of("{nope"), "malformed_json");
        assert_eq!(code_of(r#"{"type":"dance"}"#), "unknown_type");
        assert_eq!(code_of(r#"{"x":1}"#), "unknown_type");
        assert_eq!(code_of(r#"{"type":"command","id":5}"#), "bad_message");
        let bad_rotation = r#"{"type":"command","id":"a","seq":1,"move":{"type":"place_tile","x":0,"y":1,"rotation":45}}"#;
        assert_eq!(code_of(bad_rotation), "bad_message");
    }

    #[test]
    fn a_bad_command_keeps_its_string_id_for_the_reply() {
        let id_of = |text: &str| parse_client_message(text).unwrap_err().command_id;
        let bad_move = r#"{"type":"command","id":"c7","seq":1,"move":{"type":"fly"}}"#;
        assert_eq!(id_of(bad_move).as_deref(), Some("c7"));
        assert_eq!(
            id_of(r#"{"type":"command","id":"c8"}"#).as_deref(),
            Some("c8")
        );
        assert_eq!(id_of(r#"{"type":"command","id":5}"#), None);
        assert_eq!(id_of(r#"{"type":"resync","id":"c9","last_seq":"x"}"#), None);
    }
}
