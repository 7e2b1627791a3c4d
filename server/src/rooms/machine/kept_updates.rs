//! The last updates of a room, kept for clients that reconnect: a catch-up sends them
//! rather than a whole snapshot.
//!
//! Only the newest is kept whole, with its mover's text (the legal moves of the state a
//! catch-up ends at); an older one is kept as everyone but its mover saw it, its text and
//! little else, 48 bytes beside the text where a whole message took about 180.
//!
//! The older ones are kept up to a number and a size of their texts together: a catch-up
//! longer than a snapshot saves the client nothing, and a 2-player game's snapshot is
//! 0.8 KB at its start and 1.8 KB at its end, where sixteen of its updates take 3.8 KB.

use crate::rooms::{Outgoing, Text};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// An update older than the newest: what a catch-up sends of it.
#[derive(Debug)]
struct OlderUpdate {
    seq: u64,
    text: Text,
    /// The seats' new numbers, in the update that started the game.
    reseated: Option<Arc<HashMap<String, u8>>>,
}

impl OlderUpdate {
    fn of(update: &Outgoing) -> Option<OlderUpdate> {
        Some(OlderUpdate {
            seq: update.seq?,
            text: update.for_others.clone(),
            reseated: update.reseated.clone(),
        })
    }

    fn to_outgoing(&self) -> Arc<Outgoing> {
        let mut outgoing = Outgoing::plain(Some(self.seq), String::new());
        outgoing.for_mover = self.text.clone();
        outgoing.for_others = self.text.clone();
        outgoing.reseated = self.reseated.clone();
        Arc::new(outgoing)
    }
}

/// At most `capacity` updates, the newest last, and of the older ones at most
/// `older_text_bytes` of text.
#[derive(Debug)]
pub struct KeptUpdates {
    older: VecDeque<OlderUpdate>,
    newest: Option<Arc<Outgoing>>,
    capacity: usize,
    older_text_bytes: usize,
}

impl KeptUpdates {
    pub fn new(capacity: usize, older_text_bytes: usize) -> KeptUpdates {
        KeptUpdates {
            older: VecDeque::new(),
            newest: None,
            capacity,
            older_text_bytes,
        }
    }

    /// Keeps `update`, the room's newest (it has a `seq`), and lets the oldest go.
    pub fn push(&mut self, update: Arc<Outgoing>) {
        if let Some(previous) = self.newest.replace(update) {
            self.older.extend(OlderUpdate::of(&previous));
        }
        while self.len() > self.capacity || self.older_text_len() > self.older_text_bytes {
            self.older.pop_front();
        }
    }

    /// The length of the older updates' texts together (at most `capacity` of them).
    fn older_text_len(&self) -> usize {
        self.older.iter().map(|older| older.text.len()).sum()
    }

    pub fn len(&self) -> usize {
        self.older.len() + usize::from(self.newest.is_some())
    }

    /// Whether every update after `last` is kept.
    pub fn has_updates_after(&self, last: u64) -> bool {
        let oldest = match self.older.front() {
            Some(older) => Some(older.seq),
            None => self.newest.as_ref().and_then(|newest| newest.seq),
        };
        oldest.is_some_and(|oldest| oldest <= last + 1)
    }

    /// The kept updates after `last`, oldest first.
    pub fn after(&self, last: u64) -> Vec<Arc<Outgoing>> {
        let older = self
            .older
            .iter()
            .filter(|older| older.seq > last)
            .map(OlderUpdate::to_outgoing);
        let newest = self
            .newest
            .iter()
            .filter(|newest| newest.seq.is_some_and(|seq| seq > last))
            .cloned();
        older.chain(newest).collect()
    }
}
