//! Bringing a single node's unfinished games back after a start, without making the
//! first request wait for all of them.
//!
//! At start the node reads only the ids of its unfinished games and begins to listen.
//! A request for one of them restores that game at once, from its own log
//! ([`Store::live_game`]); meanwhile a background task reads every unfinished game in
//! one go ([`Store::live_games`]) and starts the rooms nobody asked for yet, so that
//! clocks run out and bots move in games nobody is connected to.
//!
//! Why the background's one read may be used after requests restored some games: on a
//! single node only a game's room changes it, so a game without a room is as the read
//! found it; and a game is restored under one lock by whoever finds it still in the set
//! of unrestored ones, from a read made while it had no room, and leaves the set only
//! once its room is registered: never twice, and never missing in between.

use crate::rooms::RoomHandle;
use crate::rooms::actor::Room;
use crate::rooms::error::RoomError;
use crate::rooms::registry::RoomRegistry;
use carcassonne_store::LiveGame;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uuid::Uuid;

/// How long the background waits before reading the games again after a failed read.
const RETRY_PAUSE: Duration = Duration::from_secs(1);

/// The unfinished games of this node that have no room yet.
#[derive(Clone, Debug, Default)]
pub struct Unrestored {
    ids: Arc<Mutex<HashSet<Uuid>>>,
    /// Held while a game is taken out of `ids` and its room started: one at a time.
    restoring: Arc<tokio::sync::Mutex<()>>,
}

impl Unrestored {
    /// Notes the games to restore.
    pub fn extend(&self, ids: impl IntoIterator<Item = Uuid>) {
        self.lock().extend(ids);
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    fn contains(&self, id: Uuid) -> bool {
        self.lock().contains(&id)
    }

    /// The room of game `id` if it is one not restored yet: restored now from its log.
    /// `None` for any other game (or one no longer unfinished).
    pub async fn restore(
        &self,
        rooms: &RoomRegistry,
        id: Uuid,
    ) -> Result<Option<RoomHandle>, RoomError> {
        // An id leaves the set only once its room is registered (or cannot be restored),
        // so a game not in the set has its room by now, or none at all.
        if !self.contains(id) {
            return Ok(rooms.get(id));
        }
        // Read outside the lock, so that the games first asked for after a restart are
        // read side by side; the read is used only by whoever restores the game.
        let live = rooms.store().live_game(id).await?;
        let _one_at_a_time = self.restoring.lock().await;
        if !self.contains(id) {
            // Restored meanwhile, by the background or another request.
            return Ok(rooms.get(id));
        }
        let room = live.and_then(|game| start(rooms, game));
        self.lock().remove(&id);
        Ok(room)
    }

    /// Reads every unfinished game and starts the rooms of those still unrestored;
    /// retries the read until it succeeds or the server stops.
    pub async fn restore_the_rest(self, rooms: RoomRegistry) {
        if self.len() == 0 {
            return;
        }
        let live = loop {
            let read = tokio::select! {
                read = rooms.store().live_games() => read,
                () = rooms.shutdown.cancelled() => return,
            };
            match read {
                Ok(live) => break live,
                Err(error) => tracing::warn!(%error, "cannot read the unfinished games; retrying"),
            }
            tokio::time::sleep(RETRY_PAUSE).await;
        };
        let mut restored = 0;
        for game in live {
            if rooms.shutdown.is_cancelled() {
                return;
            }
            let _one_at_a_time = self.restoring.lock().await;
            let id = game.lobby.id;
            if self.contains(id) {
                restored += usize::from(start(&rooms, game).is_some());
                self.lock().remove(&id);
            }
        }
        // Games finished or cancelled between the ids' read and this one have nothing
        // to restore.
        self.lock().clear();
        tracing::info!(restored, "unfinished games restored in the background");
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<Uuid>> {
        // A set of ids holds no invariant a panicking holder could break.
        self.ids
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Starts the room of `game`; `None` (logged) when its log does not replay.
fn start(rooms: &RoomRegistry, game: LiveGame) -> Option<RoomHandle> {
    let id = game.lobby.id;
    match Room::restore(game, rooms.services.clone()) {
        Ok(room) => Some(rooms.spawn_room(room)),
        Err(error) => {
            tracing::error!(room = %id, %error, "cannot restore; left in the database");
            None
        }
    }
}
