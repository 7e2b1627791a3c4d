//! The chat in the state machine: who is speaking, and whether they may. The chat itself
//! ([`ChatLog`]) is numbered apart from the game's `seq`; the machine only answers for
//! who holds which seat, who created the lobby and whether the game is on.

use super::*;
use crate::rooms::chat::{Author, ChatEntry, ChatWrite, MuteChange, Speaker, SpectatorIdentity};
use carcassonne_store::{ChatEffect, ChatPolicy};

impl RoomMachine {
    /// What a player (by seat token) or a spectator (by player identity) saying `text`
    /// writes to the chat, or why they may not.
    pub fn say(
        &mut self,
        token_hash: Option<&str>,
        spectator: Option<SpectatorIdentity>,
        text: &str,
        now: Millis,
    ) -> Result<ChatWrite, RoomError> {
        self.require_chat_open()?;
        let speaker = match (token_hash, spectator) {
            (Some(hash), _) => {
                let seat = self.seat_of(hash).ok_or(RoomError::BadToken)?;
                Speaker {
                    author: Author::Seat(seat.seat),
                    name: seat.display_name.clone(),
                }
            }
            (None, Some(identity)) => Speaker {
                author: Author::Player(identity.player_id),
                name: identity.name,
            },
            (None, None) => return Err(RoomError::SpectatorUnknown),
        };
        self.chat.say(speaker, text, now)
    }

    /// A seated player's mute of `author`, or its end: a change to store, or `None` when
    /// nothing would change.
    pub fn mute(
        &self,
        token_hash: &str,
        author: Author,
        muted: bool,
    ) -> Result<Option<MuteChange>, RoomError> {
        let seat = self.seat_of(token_hash).ok_or(RoomError::BadToken)?.seat;
        self.chat.mute(seat, author, muted)
    }

    /// The lobby's creator changes who may write.
    pub fn set_chat_policy(
        &self,
        token_hash: &str,
        chat: ChatPolicy,
        now: Millis,
    ) -> Result<ChatWrite, RoomError> {
        self.require_creator(token_hash)?;
        Ok(self.chat.set_policy(chat, now))
    }

    /// An operator deletes a message.
    pub fn delete_chat(
        &self,
        chat_seq: u64,
        stored: &ChatEntry,
        now: Millis,
    ) -> Result<ChatWrite, RoomError> {
        self.chat.delete(chat_seq, stored, now)
    }

    /// Takes a written chat entry in: its update, for the connections that may read it.
    pub fn apply_chat(&mut self, write: &ChatWrite) -> Option<Arc<Outgoing>> {
        if let ChatEffect::Policy(chat) = write.effect {
            self.lobby.chat_policy = chat;
        }
        self.chat.apply(write)
    }

    pub fn apply_mute(&mut self, change: MuteChange) -> Arc<Outgoing> {
        self.chat.apply_mute(change)
    }

    /// Entries read back from the store after a chat write went wrong: their updates.
    pub fn take_stored_chat(&mut self, rows: &[ChatEntryRow]) -> Vec<Arc<Outgoing>> {
        let updates = self.chat.take_stored(rows);
        self.lobby.chat_policy = self.chat.policy();
        updates
    }

    /// Whether the chat must be read back before its next write, and from where.
    pub fn chat_read_back_from(&self) -> Option<u64> {
        self.chat.is_stale().then(|| self.chat.last_seq())
    }

    pub fn mark_chat_stale(&mut self) {
        self.chat.mark_stale();
    }

    pub fn chat_policy(&self) -> ChatPolicy {
        self.chat.policy()
    }

    /// The chat entries after `last_chat_seq` that `token_hash`'s connection may read.
    pub fn chat_catch_up(
        &self,
        token_hash: Option<&str>,
        last_chat_seq: Option<u64>,
    ) -> Vec<Arc<Outgoing>> {
        let seat = token_hash
            .and_then(|hash| self.seat_of(hash))
            .map(|s| s.seat);
        self.chat
            .catch_up(last_chat_seq, seat)
            .into_iter()
            .filter(|outgoing| outgoing.audience.reaches(seat))
            .collect()
    }

    /// Chat is open while the game is played and while its room stays after the end
    /// ("good game"): seats are numbered for good only once it starts, and a cancelled
    /// lobby's room stops at once.
    fn require_chat_open(&self) -> Result<(), RoomError> {
        match self.lobby.status {
            LobbyStatus::Playing | LobbyStatus::Finished => Ok(()),
            LobbyStatus::Open => Err(RoomError::GameNotStarted),
            LobbyStatus::Cancelled => Err(RoomError::GameOver),
        }
    }
}
