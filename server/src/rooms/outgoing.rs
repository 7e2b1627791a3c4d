//! A message on its way to a room's connections, serialized once for all of them.

use crate::rooms::chat::Author;
use crate::rooms::frames::RoomFrame;
use bytes::Bytes;
use carcassonne_store::Millis;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashMap;
use std::sync::Arc;

/// A frame's JSON text, shared by every connection that sends it: cloning it is counting
/// one more reference. Always UTF-8 (it is made from a `String`, or checked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Text(Bytes);

impl Text {
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The text as shared bytes, for a transport that takes them.
    pub fn to_bytes(&self) -> Bytes {
        self.0.clone()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<String> for Text {
    /// Kept at its length: serializing grows a `String` by doubling, and a room keeps its
    /// recent texts for catch-ups, so their spare capacity (up to half of each) would
    /// stay for as long.
    fn from(text: String) -> Text {
        Text(Bytes::from(text.into_boxed_str().into_boxed_bytes()))
    }
}

impl From<&'static str> for Text {
    fn from(text: &'static str) -> Text {
        Text(Bytes::from_static(text.as_bytes()))
    }
}

impl TryFrom<Bytes> for Text {
    type Error = std::str::Utf8Error;

    /// Bytes from elsewhere (another node), checked once here.
    fn try_from(bytes: Bytes) -> Result<Text, std::str::Utf8Error> {
        std::str::from_utf8(&bytes)?;
        Ok(Text(bytes))
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&String::from_utf8_lossy(&self.0))
    }
}

/// A message on its way to every connection of a room, serialized once. The player to
/// move gets `for_mover` (with their legal moves), everyone else `for_others`.
#[derive(Debug)]
pub struct Outgoing {
    pub seq: Option<u64>,
    /// The token hash of the player to move after this message, if any.
    pub mover: Option<String>,
    pub for_mover: Text,
    pub for_others: Text,
    /// When seats were renumbered (a started game): each player's new seat by token hash.
    pub reseated: Option<Arc<HashMap<String, u8>>>,
    /// A whole-state snapshot rather than an update: sent even when not newer.
    pub snapshot: bool,
    /// The room is closing (server shutdown): connections should close too.
    pub closing: bool,
    /// Not a message to send: the game stands at `seq`, and a connection that has less
    /// asks for what it missed. A stand-in's check (cluster mode): updates published
    /// while NATS was away are lost, and nothing else would tell a waiting client.
    pub seq_check: bool,
    /// Which connections may receive it.
    pub audience: Audience,
    /// A chat entry: its place in the chat, and its author (for mutes).
    pub chat: Option<ChatMark>,
    /// A seat's new mute list: that seat's connections filter chat by it from now on.
    pub mutes: Option<Arc<Vec<Author>>>,
}

/// Which of a room's connections a message is for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Audience {
    #[default]
    Everyone,
    /// Seated players only (the players' chat).
    Players,
    /// The connections of one seat (its mute list).
    Seat(u8),
}

impl Audience {
    /// Whether a connection playing `seat` (none: a spectator) receives it.
    pub fn reaches(self, seat: Option<u8>) -> bool {
        match self {
            Audience::Everyone => true,
            Audience::Players => seat.is_some(),
            Audience::Seat(only) => seat == Some(only),
        }
    }
}

/// What a connection needs to know of a chat entry without reading its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMark {
    pub chat_seq: u64,
    pub at: Millis,
    pub author: Option<Author>,
}

impl Outgoing {
    /// The same text for everyone.
    pub fn plain(seq: Option<u64>, text: String) -> Outgoing {
        let text = Text::from(text);
        Outgoing {
            seq,
            mover: None,
            for_mover: text.clone(),
            for_others: text,
            reseated: None,
            snapshot: false,
            closing: false,
            seq_check: false,
            audience: Audience::Everyone,
            chat: None,
            mutes: None,
        }
    }

    /// The check that tells connections behind `seq` to catch up.
    pub fn seq_check(seq: u64) -> Outgoing {
        let mut check = Outgoing::plain(Some(seq), String::new());
        check.seq_check = true;
        check
    }

    /// A `shutdown` message that closes every connection it reaches (1012): they
    /// reconnect, to this server once it is back or to the game's new owner.
    pub fn closing(message: &str) -> Outgoing {
        let shutdown = RoomFrame::Shutdown {
            message: message.into(),
        };
        let mut closing = Outgoing::plain(None, shutdown.to_json());
        closing.closing = true;
        closing
    }

    pub fn text_for(&self, token_hash: Option<&str>) -> &Text {
        match (&self.mover, token_hash) {
            (Some(mover), Some(mine)) if mover == mine => &self.for_mover,
            _ => &self.for_others,
        }
    }
}

/// An [`Outgoing`] between nodes (see [`crate::rooms::Answer`]): `for_mover` is left out when it
/// equals `for_others`.
#[derive(Serialize, Deserialize)]
struct OutgoingText {
    seq: Option<u64>,
    mover: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    for_mover: Option<String>,
    for_others: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reseated: Option<HashMap<String, u8>>,
    #[serde(default)]
    snapshot: bool,
    #[serde(default)]
    closing: bool,
    #[serde(default, skip_serializing_if = "is_everyone")]
    audience: Audience,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    chat: Option<ChatMark>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mutes: Option<Vec<Author>>,
}

fn is_everyone(audience: &Audience) -> bool {
    *audience == Audience::Everyone
}

impl Serialize for Outgoing {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let same = self.for_mover == self.for_others;
        OutgoingText {
            seq: self.seq,
            mover: self.mover.clone(),
            for_mover: (!same).then(|| self.for_mover.to_string()),
            for_others: self.for_others.to_string(),
            reseated: self.reseated.as_deref().cloned(),
            snapshot: self.snapshot,
            closing: self.closing,
            audience: self.audience,
            chat: self.chat,
            mutes: self.mutes.as_deref().cloned(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Outgoing {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Outgoing, D::Error> {
        let text = OutgoingText::deserialize(deserializer)?;
        let for_others = Text::from(text.for_others);
        Ok(Outgoing {
            seq: text.seq,
            mover: text.mover,
            for_mover: text
                .for_mover
                .map_or_else(|| for_others.clone(), Text::from),
            for_others,
            reseated: text.reseated.map(Arc::new),
            snapshot: text.snapshot,
            closing: text.closing,
            seq_check: false,
            audience: text.audience,
            chat: text.chat,
            mutes: text.mutes.map(Arc::new),
        })
    }
}
