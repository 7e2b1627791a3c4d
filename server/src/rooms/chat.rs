//! A game's chat: the players' room and the spectators' room, numbered by a sequence of
//! their own (`chat_seq`), so that talking never takes a move's `seq` nor waits for one.
//!
//! Everything said is an entry of one log: messages, an operator's deletion of a message,
//! and the creator's change of who may write. Catch-up after a reconnect is then one rule
//! (send the entries after the client's last `chat_seq`), and a deletion reaches a client
//! that was away when it was made. An entry is stored before anyone hears of it, as the
//! JSON text of [`ChatEntry`]; a deleted message's stored text is replaced by a tombstone.
//!
//! Who reads what: seated players read both rooms (a client may hide the spectators'),
//! spectators only theirs. Players write in the players' room, spectators (under their
//! player identity) in the spectators'. A seated player may mute an author: the server
//! then never sends that author's messages to the muter's connections.
//!
//! [`ChatLog`] is the room's chat state, kept by the [`RoomMachine`]: pure, like it. It
//! keeps the newest [`RECENT_CHAT`] entries for catch-up; older ones are read over REST.
//!
//! [`RoomMachine`]: crate::rooms::machine::RoomMachine

use crate::rooms::error::RoomError;
use crate::rooms::frames::RoomFrame;
use crate::rooms::names::printable_text;
use crate::rooms::outgoing::{Audience, ChatMark, Outgoing};
use carcassonne_store::{
    ChatAudience, ChatEffect, ChatEntryRow, ChatPolicy, LIVE_CHAT_ENTRIES, Millis,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use utoipa::ToSchema;
use uuid::Uuid;

/// The longest message, in characters.
pub const MAX_CHAT_CHARS: usize = 500;
/// Entries kept in memory for catch-up: as many as a restored room reads back.
pub const RECENT_CHAT: usize = LIVE_CHAT_ENTRIES;
/// Each author may send this many messages at once ...
const AUTHOR_BURST: f64 = 5.0;
/// ... and then one every two seconds, however many connections they use.
const AUTHOR_MESSAGES_PER_MS: f64 = 0.5 / 1000.0;
/// Authors one seat may mute: more than any game has players and watchers who talk.
const MOST_MUTES: usize = 64;

/// Which of a game's two chats a message is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChatRoom {
    Players,
    Spectators,
}

impl ChatRoom {
    fn audience(self) -> ChatAudience {
        match self {
            ChatRoom::Players => ChatAudience::Players,
            ChatRoom::Spectators => ChatAudience::Everyone,
        }
    }
}

/// Who wrote a message: a seat of the game, or a spectator by their player identity.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Author {
    Seat(u8),
    Player(Uuid),
}

impl Author {
    /// The form the store keeps a mute in.
    pub fn stored(self) -> String {
        match self {
            Author::Seat(seat) => format!("seat:{seat}"),
            Author::Player(id) => format!("player:{id}"),
        }
    }

    fn from_stored(text: &str) -> Option<Author> {
        match text.split_once(':')? {
            ("seat", seat) => seat.parse().ok().map(Author::Seat),
            ("player", id) => Uuid::parse_str(id).ok().map(Author::Player),
            _ => None,
        }
    }
}

/// One entry of a game's chat log, as clients read it and the store keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChatEntry {
    Message {
        room: ChatRoom,
        author: Author,
        /// The author's name when they wrote it.
        name: String,
        text: String,
    },
    /// A message an operator deleted: where it was, without its text.
    Deleted {
        room: ChatRoom,
        author: Author,
        name: String,
    },
    /// An operator deleted entry `deletes` (now a `deleted` entry).
    Deletion { deletes: u64, room: ChatRoom },
    /// The lobby's creator changed who may write.
    Policy { chat: ChatPolicy },
}

impl ChatEntry {
    fn audience(&self) -> ChatAudience {
        match self {
            ChatEntry::Message { room, .. }
            | ChatEntry::Deleted { room, .. }
            | ChatEntry::Deletion { room, .. } => room.audience(),
            ChatEntry::Policy { .. } => ChatAudience::Everyone,
        }
    }

    fn author(&self) -> Option<Author> {
        match self {
            ChatEntry::Message { author, .. } => Some(*author),
            _ => None,
        }
    }
}

/// Who is speaking, as the room knows them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Speaker {
    pub author: Author,
    pub name: String,
}

impl Speaker {
    fn room(&self) -> ChatRoom {
        match self.author {
            Author::Seat(_) => ChatRoom::Players,
            Author::Player(_) => ChatRoom::Spectators,
        }
    }
}

/// A spectator who writes: their player identity (its secret checked by the connection
/// that says so) and display name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpectatorIdentity {
    pub player_id: Uuid,
    pub name: String,
}

/// An entry to store, with what else its write changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatWrite {
    pub row: ChatEntryRow,
    pub effect: ChatEffect,
}

/// A seat's mute of an author, or its end, to store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MuteChange {
    pub seat: u8,
    pub author: Author,
    pub muted: bool,
}

/// An author's allowance of messages: a token bucket on the room's clock.
#[derive(Clone, Copy, Debug)]
struct Allowance {
    tokens: f64,
    at: Millis,
}

/// A room's chat: who may write, the newest entries, allowances and mutes.
#[derive(Debug)]
pub struct ChatLog {
    policy: ChatPolicy,
    /// The last entry written: the next is one more.
    last_seq: u64,
    /// The newest entries, oldest first, each with its entry to rewrite on deletion.
    recent: VecDeque<Recent>,
    allowances: HashMap<Author, Allowance>,
    mutes: HashMap<u8, BTreeSet<Author>>,
    /// A write failed with an unknown outcome, or found its `chat_seq` taken: the log is
    /// read back from the store before the next entry is written.
    stale: bool,
}

#[derive(Debug)]
struct Recent {
    chat_seq: u64,
    entry: ChatEntry,
    outgoing: Arc<Outgoing>,
}

impl ChatLog {
    /// A new lobby's chat.
    pub fn new(policy: ChatPolicy) -> ChatLog {
        ChatLog {
            policy,
            last_seq: 0,
            recent: VecDeque::new(),
            allowances: HashMap::new(),
            mutes: HashMap::new(),
            stale: false,
        }
    }

    /// A restored game's chat, from its newest stored entries and its mutes.
    pub fn restore(policy: ChatPolicy, rows: &[ChatEntryRow], mutes: &[(u8, String)]) -> ChatLog {
        let mut log = ChatLog::new(policy);
        log.take_stored(rows);
        for (seat, author) in mutes {
            if let Some(author) = Author::from_stored(author) {
                log.mutes.entry(*seat).or_default().insert(author);
            }
        }
        log
    }

    pub fn policy(&self) -> ChatPolicy {
        self.policy
    }

    pub fn is_stale(&self) -> bool {
        self.stale
    }

    pub fn mark_stale(&mut self) {
        self.stale = true;
    }

    /// The last entry applied: what a read-back starts after.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Takes entries read back from the store in (those after the last applied), and
    /// returns their updates to broadcast: the store holds them, so they may be told.
    pub fn take_stored(&mut self, rows: &[ChatEntryRow]) -> Vec<Arc<Outgoing>> {
        self.stale = false;
        let known = self.last_seq;
        rows.iter()
            .filter(|row| row.chat_seq > known)
            .filter_map(|row| {
                let entry: ChatEntry = match serde_json::from_str(&row.entry) {
                    Ok(entry) => entry,
                    Err(error) => {
                        tracing::error!(%error, chat_seq = row.chat_seq, "unreadable chat entry");
                        return None;
                    }
                };
                if let ChatEntry::Policy { chat } = entry {
                    self.policy = chat;
                }
                Some(self.remember(row.chat_seq, row.created_at, entry))
            })
            .collect()
    }

    /// What `speaker` saying `text` writes, or why they may not: the text's rules, the
    /// policy, and the author's allowance (spent only when the entry is written).
    pub fn say(
        &mut self,
        speaker: Speaker,
        text: &str,
        now: Millis,
    ) -> Result<ChatWrite, RoomError> {
        let text = printable_text(text, MAX_CHAT_CHARS, "a chat message")
            .map_err(|error| RoomError::BadChatText(error.to_string()))?;
        let room = speaker.room();
        match (self.policy, room) {
            (ChatPolicy::Off, _) => return Err(RoomError::ChatClosed("the chat is off")),
            (ChatPolicy::Players, ChatRoom::Spectators) => {
                return Err(RoomError::ChatClosed("the chat is for players only"));
            }
            _ => {}
        }
        self.spend_allowance(speaker.author, now)?;
        let entry = ChatEntry::Message {
            room,
            author: speaker.author,
            name: speaker.name,
            text,
        };
        Ok(self.write(entry, now, ChatEffect::None))
    }

    /// The creator's change of who may write.
    pub fn set_policy(&self, chat: ChatPolicy, now: Millis) -> ChatWrite {
        self.write(ChatEntry::Policy { chat }, now, ChatEffect::Policy(chat))
    }

    /// An operator's deletion of message `chat_seq` (`stored`, as the store holds it): a
    /// new entry that says so, written with the message's text replaced by a tombstone.
    /// The room's own copy, when it keeps one, is the newer (it may be deleted already).
    pub fn delete(
        &self,
        chat_seq: u64,
        stored: &ChatEntry,
        now: Millis,
    ) -> Result<ChatWrite, RoomError> {
        let kept = self
            .recent
            .iter()
            .find(|recent| recent.chat_seq == chat_seq);
        let entry = kept.map_or(stored, |recent| &recent.entry);
        deletion(chat_seq, entry, self.last_seq + 1, now)
    }

    fn write(&self, entry: ChatEntry, now: Millis, effect: ChatEffect) -> ChatWrite {
        entry_write(self.last_seq + 1, entry, now, effect)
    }

    /// Takes a written entry in: returns its update for the room's connections.
    pub fn apply(&mut self, write: &ChatWrite) -> Option<Arc<Outgoing>> {
        if let ChatEffect::Redact { chat_seq, .. } = &write.effect {
            self.redact(*chat_seq);
        }
        self.take_stored(std::slice::from_ref(&write.row)).pop()
    }

    /// Replaces a deleted message, in memory, by its tombstone.
    fn redact(&mut self, chat_seq: u64) {
        let Some(recent) = self.recent.iter_mut().find(|r| r.chat_seq == chat_seq) else {
            return;
        };
        if let ChatEntry::Message {
            room, author, name, ..
        } = &recent.entry
        {
            let tombstone = ChatEntry::Deleted {
                room: *room,
                author: *author,
                name: name.clone(),
            };
            let at = recent.outgoing_at();
            recent.outgoing = chat_outgoing(chat_seq, at, &tombstone);
            recent.entry = tombstone;
        }
    }

    fn remember(&mut self, chat_seq: u64, at: Millis, entry: ChatEntry) -> Arc<Outgoing> {
        let outgoing = chat_outgoing(chat_seq, at, &entry);
        self.last_seq = self.last_seq.max(chat_seq);
        self.recent.push_back(Recent {
            chat_seq,
            entry,
            outgoing: outgoing.clone(),
        });
        while self.recent.len() > RECENT_CHAT {
            self.recent.pop_front();
        }
        outgoing
    }

    /// Takes one message from `author`'s allowance, or refuses it.
    fn spend_allowance(&mut self, author: Author, now: Millis) -> Result<(), RoomError> {
        let allowance = self.allowances.entry(author).or_insert(Allowance {
            tokens: AUTHOR_BURST,
            at: now,
        });
        let elapsed = (now - allowance.at).max(0) as f64;
        allowance.tokens = (allowance.tokens + elapsed * AUTHOR_MESSAGES_PER_MS).min(AUTHOR_BURST);
        allowance.at = now;
        if allowance.tokens < 1.0 {
            return Err(RoomError::ChatRateLimited);
        }
        allowance.tokens -= 1.0;
        Ok(())
    }

    /// For a seat, its mutes, then the entries after `after` (all kept ones when
    /// `None`). The mutes come first: the connection filters the entries by them.
    pub fn catch_up(&self, after: Option<u64>, seat: Option<u8>) -> Vec<Arc<Outgoing>> {
        let after = after.unwrap_or(0);
        let mutes = seat.and_then(|seat| {
            let muted = self.mutes.get(&seat).filter(|muted| !muted.is_empty())?;
            Some(mutes_outgoing(seat, muted))
        });
        let entries = self
            .recent
            .iter()
            .filter(|recent| recent.chat_seq > after)
            .map(|recent| recent.outgoing.clone());
        mutes.into_iter().chain(entries).collect()
    }

    /// Whether `seat` may mute `author` to `muted`: a change to store, or `None` when
    /// nothing would change.
    pub fn mute(
        &self,
        seat: u8,
        author: Author,
        muted: bool,
    ) -> Result<Option<MuteChange>, RoomError> {
        if author == Author::Seat(seat) {
            return Err(RoomError::BadChatText(
                "a player cannot mute themselves".into(),
            ));
        }
        let current = self.mutes.get(&seat);
        let has = current.is_some_and(|set| set.contains(&author));
        if has == muted {
            return Ok(None);
        }
        if muted && current.is_some_and(|set| set.len() >= MOST_MUTES) {
            return Err(RoomError::BadChatText(format!(
                "a player may mute at most {MOST_MUTES} authors"
            )));
        }
        Ok(Some(MuteChange {
            seat,
            author,
            muted,
        }))
    }

    /// Takes a stored mute in: returns the seat's new mute list, for its connections.
    pub fn apply_mute(&mut self, change: MuteChange) -> Arc<Outgoing> {
        let muted = self.mutes.entry(change.seat).or_default();
        if change.muted {
            muted.insert(change.author);
        } else {
            muted.remove(&change.author);
        }
        mutes_outgoing(change.seat, muted)
    }
}

impl Recent {
    fn outgoing_at(&self) -> Millis {
        self.outgoing.chat.as_ref().map_or(0, |mark| mark.at)
    }
}

/// The write that deletes message `chat_seq` (`entry`), as entry `next_seq`: a room's
/// when the game is live, the operator's request's own once it has ended.
pub fn deletion(
    chat_seq: u64,
    entry: &ChatEntry,
    next_seq: u64,
    now: Millis,
) -> Result<ChatWrite, RoomError> {
    let ChatEntry::Message {
        room, author, name, ..
    } = entry
    else {
        return Err(RoomError::NotFound("that chat entry is not a message"));
    };
    let tombstone = ChatEntry::Deleted {
        room: *room,
        author: *author,
        name: name.clone(),
    };
    let effect = ChatEffect::Redact {
        chat_seq,
        entry: entry_text(&tombstone),
    };
    let deletion = ChatEntry::Deletion {
        deletes: chat_seq,
        room: *room,
    };
    Ok(entry_write(next_seq, deletion, now, effect))
}

fn entry_write(chat_seq: u64, entry: ChatEntry, now: Millis, effect: ChatEffect) -> ChatWrite {
    ChatWrite {
        row: ChatEntryRow {
            chat_seq,
            audience: entry.audience(),
            created_at: now,
            entry: entry_text(&entry),
        },
        effect,
    }
}

fn entry_text(entry: &ChatEntry) -> String {
    serde_json::to_string(entry).expect("chat entries serialize")
}

/// A chat entry's frame, for the connections allowed to read it.
fn chat_outgoing(chat_seq: u64, at: Millis, entry: &ChatEntry) -> Arc<Outgoing> {
    let frame = RoomFrame::Chat {
        chat_seq,
        at,
        entry: entry.clone(),
    };
    let mut outgoing = Outgoing::plain(None, frame.to_json());
    outgoing.audience = match entry.audience() {
        ChatAudience::Players => Audience::Players,
        ChatAudience::Everyone => Audience::Everyone,
    };
    outgoing.chat = Some(ChatMark {
        chat_seq,
        at,
        author: entry.author(),
    });
    Arc::new(outgoing)
}

/// A seat's mute list, for that seat's connections: they filter by it.
fn mutes_outgoing(seat: u8, muted: &BTreeSet<Author>) -> Arc<Outgoing> {
    let muted: Vec<Author> = muted.iter().copied().collect();
    let frame = RoomFrame::ChatMutes {
        muted: muted.clone(),
    };
    let mut outgoing = Outgoing::plain(None, frame.to_json());
    outgoing.audience = Audience::Seat(seat);
    outgoing.mutes = Some(Arc::new(muted));
    Arc::new(outgoing)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ann() -> Speaker {
        Speaker {
            author: Author::Seat(0),
            name: "Ann".into(),
        }
    }

    fn written(log: &mut ChatLog, write: ChatWrite) -> Arc<Outgoing> {
        log.apply(&write).expect("an update")
    }

    #[test]
    fn messages_are_numbered_by_their_own_sequence_and_checked_like_names() {
        let mut log = ChatLog::new(ChatPolicy::All);
        let write = log.say(ann(), "  good game  ", 1_000).unwrap();
        assert_eq!(write.row.chat_seq, 1);
        assert_eq!(write.row.audience, ChatAudience::Players);
        let outgoing = written(&mut log, write);
        let frame: serde_json::Value =
            serde_json::from_str(&outgoing.for_others.to_string()).unwrap();
        assert_eq!(frame["type"], "chat");
        assert_eq!(frame["chat_seq"], 1);
        assert_eq!(frame["entry"]["text"], "good game");
        assert_eq!(frame["entry"]["author"], serde_json::json!({"seat": 0}));
        assert_eq!(log.say(ann(), "x", 1_000).unwrap().row.chat_seq, 2);
        let refused = |text: &str| log_says(text).unwrap_err();
        assert!(matches!(refused("a\u{200B}b"), RoomError::BadChatText(_)));
        assert!(matches!(refused("a\u{202E}b"), RoomError::BadChatText(_)));
        assert!(matches!(
            refused(&"x".repeat(501)),
            RoomError::BadChatText(_)
        ));
        assert!(log_says(&"x".repeat(500)).is_ok());
    }

    fn log_says(text: &str) -> Result<ChatWrite, RoomError> {
        ChatLog::new(ChatPolicy::All).say(ann(), text, 0)
    }

    #[test]
    fn an_author_floods_into_the_rate_limit_and_is_let_back_in_time() {
        let mut log = ChatLog::new(ChatPolicy::All);
        for _ in 0..5 {
            log.say(ann(), "hi", 0).unwrap();
        }
        assert_eq!(log.say(ann(), "hi", 0), Err(RoomError::ChatRateLimited));
        assert!(log.say(ann(), "hi", 2_000).is_ok());
        let bob = Speaker {
            author: Author::Seat(1),
            name: "Bob".into(),
        };
        assert!(
            log.say(bob, "hi", 2_000).is_ok(),
            "allowances are per author"
        );
    }

    #[test]
    fn the_policy_closes_rooms() {
        let spectator = Speaker {
            author: Author::Player(Uuid::nil()),
            name: "Watcher".into(),
        };
        let mut log = ChatLog::new(ChatPolicy::Players);
        assert!(matches!(
            log.say(spectator.clone(), "hi", 0),
            Err(RoomError::ChatClosed(_))
        ));
        assert!(log.say(ann(), "hi", 0).is_ok());
        let off = log.set_policy(ChatPolicy::Off, 0);
        written(&mut log, off);
        assert_eq!(log.policy(), ChatPolicy::Off);
        assert!(matches!(
            log.say(ann(), "hi", 0),
            Err(RoomError::ChatClosed(_))
        ));
        let all = log.set_policy(ChatPolicy::All, 0);
        written(&mut log, all);
        let write = log.say(spectator, "hi", 0).unwrap();
        assert_eq!(write.row.audience, ChatAudience::Everyone);
    }

    #[test]
    fn a_deletion_is_an_entry_and_leaves_a_tombstone_for_late_readers() {
        let mut log = ChatLog::new(ChatPolicy::All);
        let message = log.say(ann(), "rude", 0).unwrap();
        written(&mut log, message);
        let stored: ChatEntry = serde_json::from_str(&message_row(&log, 1)).unwrap();
        let deletion = log.delete(1, &stored, 5).unwrap();
        let ChatEffect::Redact { chat_seq: 1, entry } = &deletion.effect else {
            panic!("not a redaction: {:?}", deletion.effect);
        };
        assert!(!entry.contains("rude"));
        written(&mut log, deletion);
        let texts: Vec<String> = log
            .catch_up(None, Some(0))
            .iter()
            .map(|outgoing| outgoing.for_others.to_string())
            .collect();
        assert_eq!(texts.len(), 2);
        assert!(texts.iter().all(|text| !text.contains("rude")), "{texts:?}");
        assert!(texts[1].contains(r#""deletes":1"#));
        let stored: ChatEntry = serde_json::from_str(&message_row(&log, 2)).unwrap();
        assert!(
            log.delete(2, &stored, 6).is_err(),
            "a deletion is not a message"
        );
        assert!(
            log.delete(
                1,
                &ChatEntry::Policy {
                    chat: ChatPolicy::All
                },
                6
            )
            .is_err()
        );
    }

    /// Entry `chat_seq`'s text, as the store would hold it.
    fn message_row(log: &ChatLog, chat_seq: u64) -> String {
        let recent = log.recent.iter().find(|r| r.chat_seq == chat_seq).unwrap();
        entry_text(&recent.entry)
    }

    #[test]
    fn catch_up_starts_with_the_seats_mutes_then_the_entries_after_the_clients_last() {
        let mut log = ChatLog::new(ChatPolicy::All);
        for n in 0..3 {
            let write = log.say(ann(), &format!("m{n}"), n * 10_000).unwrap();
            written(&mut log, write);
        }
        assert_eq!(log.catch_up(Some(1), None).len(), 2);
        let mute = log.mute(1, Author::Seat(0), true).unwrap().unwrap();
        let update = log.apply_mute(mute);
        assert_eq!(update.audience, Audience::Seat(1));
        assert_eq!(update.mutes.as_deref(), Some(&vec![Author::Seat(0)]));
        let for_seat_one = log.catch_up(Some(2), Some(1));
        assert_eq!(for_seat_one.len(), 2);
        assert!(
            for_seat_one[0].mutes.is_some(),
            "mutes before the entries they filter"
        );
        assert_eq!(for_seat_one[1].chat.map(|mark| mark.chat_seq), Some(3));
        assert_eq!(log.mute(1, Author::Seat(0), true).unwrap(), None);
        assert!(log.mute(1, Author::Seat(1), true).is_err());
    }

    #[test]
    fn a_restored_log_continues_its_sequence_and_keeps_policy_and_mutes() {
        let mut first = ChatLog::new(ChatPolicy::All);
        let hello = first.say(ann(), "hello", 0).unwrap();
        first.apply(&hello);
        let players_only = first.set_policy(ChatPolicy::Players, 1);
        first.apply(&players_only);
        let rows = [hello.row, players_only.row];
        let restored = ChatLog::restore(ChatPolicy::All, &rows, &[(1, "seat:0".into())]);
        assert_eq!(restored.policy(), ChatPolicy::Players);
        assert_eq!(restored.last_seq(), 2);
        assert_eq!(restored.catch_up(None, Some(1)).len(), 3);
        assert_eq!(
            Author::from_stored(&Author::Player(Uuid::nil()).stored()),
            Some(Author::Player(Uuid::nil()))
        );
    }
}
