//! The room contract: every request a room takes and every answer it gives.
//!
//! REST handlers, WebSocket connections and the cluster relay all speak these two types.
//! Both serialize, so a request for a game another node owns travels to it as it is, and
//! the owner's relay only decodes, asks its room and encodes the answer. Adding a request
//! is one [`Request`] variant, one machine method, one arm in the actor and its caller.

use crate::auth::Token;
use crate::rooms::Outgoing;
use crate::rooms::chat::{Author, ChatEntry, SpectatorIdentity};
use crate::rooms::view::LobbyView;
use carcassonne_bots::BotLevel;
use carcassonne_core::Move;
use carcassonne_store::ChatPolicy;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use uuid::Uuid;

/// What can be asked of a room. Seat tokens appear only as their hashes.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// Take a seat: answered with [`JoinedSeat`].
    Join {
        name: String,
        player_id: Option<Uuid>,
        invite_code: Option<String>,
    },
    Leave {
        token_hash: String,
    },
    /// Answered with the started game's lobby, as REST shows it.
    Start {
        token_hash: String,
        randomize_seats: bool,
    },
    /// Starts a full lobby the quick-play queue or a rematch formed (no creator's
    /// token): answered with the started game's lobby. The queue's seats are shuffled; a
    /// rematch's are kept in the order it wrote them.
    StartMatched {
        #[serde(default)]
        in_seat_order: bool,
    },
    Cancel {
        token_hash: String,
    },
    /// The creator seats a bot: answered with its seat.
    AddBot {
        token_hash: String,
        level: BotLevel,
        name: Option<String>,
    },
    /// The creator frees a bot's seat.
    RemoveBot {
        token_hash: String,
        seat: u8,
    },
    Resign {
        token_hash: String,
    },
    Abort {
        token_hash: String,
    },
    /// A registered player (secret already checked) gets a new token for their seat.
    Reclaim {
        player_id: Uuid,
    },
    /// A WebSocket client said hello: a player (by token) or a spectator. Answered with
    /// its seat and what it must be sent before the live updates.
    Connect {
        token_hash: Option<String>,
        invite_code: Option<String>,
        last_seq: Option<u64>,
        /// The last chat entry the client has.
        #[serde(default)]
        last_chat_seq: Option<u64>,
    },
    /// A connection closed. Told, never asked.
    Disconnect {
        token_hash: Option<String>,
    },
    /// A client fell behind the broadcast: what it needs to catch up from `last_seq`.
    Resync {
        token_hash: Option<String>,
        last_seq: Option<u64>,
        #[serde(default)]
        last_chat_seq: Option<u64>,
    },
    /// A chat message from a seated player (by token) or a spectator (by their player
    /// identity, its secret already checked).
    Say {
        token_hash: Option<String>,
        spectator: Option<SpectatorIdentity>,
        text: String,
    },
    /// A seated player stops (or starts again) receiving an author's messages.
    Mute {
        token_hash: String,
        author: Author,
        muted: bool,
    },
    /// The lobby's creator changes who may write in the chat.
    SetChatPolicy {
        token_hash: String,
        chat: ChatPolicy,
    },
    /// An operator deletes a chat message (the admin token already checked).
    DeleteChat {
        chat_seq: u64,
        /// The message as the store holds it (a room keeps only the newest entries).
        stored: ChatEntry,
    },
    /// A seated person offers or accepts a rematch of the finished game (`accept`), or
    /// declines the offer waiting.
    Rematch {
        token_hash: String,
        accept: bool,
    },
    /// A move: answered with the `seq` it was written at.
    Command {
        token_hash: String,
        id: String,
        expected_seq: u64,
        mv: Move,
    },
}

impl Request {
    /// Whether granting it writes an entry to the chat log.
    pub fn writes_chat(&self) -> bool {
        matches!(
            self,
            Request::Say { .. } | Request::SetChatPolicy { .. } | Request::DeleteChat { .. }
        )
    }
}

/// A room's answer to a [`Request`] it granted.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Answer {
    Done,
    Seat {
        seat: u8,
    },
    Joined(JoinedSeat),
    /// The lobby as it stands after the request (a start).
    Lobby {
        lobby: LobbyView,
    },
    Connected(Welcomed),
    CatchUp {
        updates: Vec<Arc<Outgoing>>,
    },
    Seq {
        seq: u64,
    },
}

/// A seat taken (or reclaimed), with the lobby as it stands once the seat is taken: the
/// room holds exactly what it committed, so the REST answer needs no read of the
/// database (two round trips and a snapshot transaction on Postgres, every join).
///
/// The one place a token crosses between nodes in clear: the owner made it, and the node
/// the player asked must hand it over.
#[derive(Debug, Serialize, Deserialize)]
pub struct JoinedSeat {
    pub seat: u8,
    #[serde(with = "revealed")]
    pub token: Token,
    pub lobby: LobbyView,
}

/// The kind of answer a caller expects from its request. Another kind is a bug, or a
/// node of another version: the caller gets an internal error.
pub trait Expected: Sized {
    fn from_answer(answer: Answer) -> Option<Self>;
}

impl Expected for Answer {
    fn from_answer(answer: Answer) -> Option<Answer> {
        Some(answer)
    }
}

impl Expected for () {
    fn from_answer(answer: Answer) -> Option<()> {
        matches!(answer, Answer::Done).then_some(())
    }
}

/// A seat number.
impl Expected for u8 {
    fn from_answer(answer: Answer) -> Option<u8> {
        match answer {
            Answer::Seat { seat } => Some(seat),
            _ => None,
        }
    }
}

/// The `seq` a command was written at.
impl Expected for u64 {
    fn from_answer(answer: Answer) -> Option<u64> {
        match answer {
            Answer::Seq { seq } => Some(seq),
            _ => None,
        }
    }
}

impl Expected for JoinedSeat {
    fn from_answer(answer: Answer) -> Option<JoinedSeat> {
        match answer {
            Answer::Joined(joined) => Some(joined),
            _ => None,
        }
    }
}

impl Expected for LobbyView {
    fn from_answer(answer: Answer) -> Option<LobbyView> {
        match answer {
            Answer::Lobby { lobby } => Some(lobby),
            _ => None,
        }
    }
}

/// A hello's answer: the seat (none for a spectator), what to send first, and who may
/// write in the chat.
#[derive(Debug, Serialize, Deserialize)]
pub struct Welcomed {
    pub seat: Option<u8>,
    pub catch_up: Vec<Arc<Outgoing>>,
    #[serde(default)]
    pub chat: ChatPolicy,
}

impl Expected for Welcomed {
    fn from_answer(answer: Answer) -> Option<Welcomed> {
        match answer {
            Answer::Connected(welcomed) => Some(welcomed),
            _ => None,
        }
    }
}

/// A catch-up.
impl Expected for Vec<Arc<Outgoing>> {
    fn from_answer(answer: Answer) -> Option<Vec<Arc<Outgoing>>> {
        match answer {
            Answer::CatchUp { updates } => Some(updates),
            _ => None,
        }
    }
}

/// A token serialized as itself (it has no `Serialize` of its own, so that no other
/// value that holds one can print it by accident).
mod revealed {
    use crate::auth::Token;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(token: &Token, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(token.reveal())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Token, D::Error> {
        String::deserialize(deserializer).map(Token::from_client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_and_its_answer_cross_the_wire_unchanged() {
        let request = Request::Command {
            token_hash: "hash".into(),
            id: "c1".into(),
            expected_seq: 4,
            mv: Move::Pass,
        };
        let text = serde_json::to_string(&request).unwrap();
        assert!(text.starts_with(r#"{"type":"command","#), "{text}");
        let back: Request = serde_json::from_str(&text).unwrap();
        assert_eq!(format!("{back:?}"), format!("{request:?}"));
        let answer: Answer = serde_json::from_str(r#"{"type":"seq","seq":5}"#).unwrap();
        assert_eq!(u64::from_answer(answer), Some(5));
    }

    #[test]
    fn an_answer_of_another_kind_is_not_taken_for_the_expected_one() {
        assert_eq!(u64::from_answer(Answer::Seat { seat: 2 }), None);
        assert_eq!(<()>::from_answer(Answer::Seq { seq: 1 }), None);
        assert_eq!(u8::from_answer(Answer::Seat { seat: 2 }), Some(2));
    }
}
