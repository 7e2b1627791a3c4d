//! The supervisor: a periodic check that no room of this node is behind the database.
//!
//! A room writes one change at a time and applies each once it is committed, and a write
//! whose outcome is unknown is settled before the next (see `writes`): so a room with
//! nothing in flight holds at least the `seq` its game has in the database. Should that
//! ever fail (a bug, a hand-made change to the database), the room would refuse every
//! command against a state the database has left behind, and the game would never move
//! again. Every [`CHECK_EVERY`] this task reads the stored `seq` of every live game this
//! node serves, in one statement, and tells each room; a room behind it reads its game
//! again from the log and counts it (`carcassonne_room_reloads_total{reason="supervisor"}`,
//! which should stay at zero).

use crate::rooms::registry::RoomRegistry;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// How often the stored `seq`s are compared with the rooms'.
const CHECK_EVERY: Duration = Duration::from_secs(5);

/// Checks this node's rooms until shutdown. `node` is this node's name in cluster mode
/// (its own games are those it owns), `None` on a single node.
pub async fn supervise(rooms: RoomRegistry, node: Option<Arc<str>>) {
    let mut every = tokio::time::interval(CHECK_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    every.tick().await;
    loop {
        tokio::select! {
            _ = every.tick() => {}
            () = rooms.shutdown.cancelled() => return,
        }
        check_rooms(&rooms, node.as_deref()).await;
    }
}

/// One check: the stored `seq` of each live game, told to its room on this node.
async fn check_rooms(rooms: &RoomRegistry, node: Option<&str>) {
    let stored = match rooms.store().live_seqs(node).await {
        Ok(stored) => stored.into_iter().collect::<HashMap<_, _>>(),
        Err(error) => {
            tracing::debug!(%error, "cannot read the stored seqs; checking next time");
            return;
        }
    };
    for room in rooms.all() {
        if room.is_remote() {
            continue;
        }
        if let Some(&seq) = stored.get(&room.id) {
            room.try_check_stored_seq(seq);
        }
    }
}
