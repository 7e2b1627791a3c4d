//! Taking games over from an owner that stopped or stopped answering: a request's one
//! game, or every orphan a sweep finds, in as few round trips to the database as the
//! games allow.
//!
//! A sweep takes all the orphans it can claim in one statement and reads all their logs
//! in one round trip, so that what bounds a take-over is the lease's time to live, the
//! sweep's period and a handful of round trips, however many games the owner had (see
//! `ARCHITECTURE.md`, "Cluster mode"). Taken one at a time, each game cost several
//! round trips in a row: with a database 150 ms away, a node of 40 games took most of a
//! minute to replace.
//!
//! Safety rests where it always did: a lease is taken by a conditional update that
//! locks the game's row, the fencing trigger refuses every other node's change of the
//! game's `seq` from then on, and a node never takes back a game whose room it still has
//! loaded (its memory may be stale: the game may have moved on elsewhere meanwhile).

use crate::cluster::claims::Claim;
use crate::cluster::{Cluster, start_owned_room};
use crate::rooms::RoomHandle;
use crate::rooms::actor::Room;
use crate::rooms::error::RoomError;
use crate::rooms::registry::RoomRegistry;
use crate::rooms::tenure::{BootTime, Tenure};
use carcassonne_store::LiveGame;
use uuid::Uuid;

/// The most orphans one sweep takes; the next sweep, moments later, takes more.
const ORPHANS_PER_SWEEP: u32 = 64;

/// Takes game `id`'s lease and restores it from its log, for a request that found the
/// lease free or lapsed; the caller holds the game's claim. None when another node took
/// it first, or its old owner's write in flight holds its row (the request is asked
/// again shortly, once Postgres has ended that write's transaction).
pub async fn take_over(
    rooms: &RoomRegistry,
    cluster: &Cluster,
    id: Uuid,
) -> Result<Option<RoomHandle>, RoomError> {
    let asked = BootTime::now();
    let taken = rooms
        .store()
        .acquire_leases(&[id], &cluster.node, cluster.lease_ttl)
        .await?;
    if taken.is_empty() {
        return Ok(None);
    }
    let mut games = read_taken(rooms, cluster, &taken).await?;
    match games.pop() {
        Some(live) => start_taken(rooms, cluster, live, asked).await.map(Some),
        None => Ok(None),
    }
}

/// Takes over every game the sweep finds without a live owner (the games of a node that
/// died, froze or was cut off) that this node can claim now: their leases in one
/// statement, their logs in one round trip. How many it started.
pub async fn take_over_orphans(
    rooms: &RoomRegistry,
    cluster: &Cluster,
) -> Result<usize, RoomError> {
    let orphans = rooms.store().orphaned_games(ORPHANS_PER_SWEEP).await?;
    // Held until the rooms are registered, so that no request starts one meanwhile.
    let claims: Vec<Claim> = orphans
        .into_iter()
        .filter_map(|id| claim_orphan(rooms, cluster, id))
        .collect();
    if claims.is_empty() {
        return Ok(0);
    }
    let ids: Vec<Uuid> = claims.iter().map(Claim::id).collect();
    let asked = BootTime::now();
    let taken = rooms
        .store()
        .acquire_leases(&ids, &cluster.node, cluster.lease_ttl)
        .await?;
    if taken.is_empty() {
        return Ok(0);
    }
    let games = read_taken(rooms, cluster, &taken).await?;
    let starts = games
        .into_iter()
        .map(|live| start_taken(rooms, cluster, live, asked));
    let started = futures_util::future::join_all(starts).await;
    Ok(started.iter().filter(|started| started.is_ok()).count())
}

/// Claims orphan `id` for the sweep, unless a request is finding its room right now (it
/// takes the game itself), or this node still has the game's room loaded: a room whose
/// game was taken from it while this node was paused, which must not be trusted again.
/// A stand-in is no obstacle: the room started in its place replaces it in the registry,
/// and the room's relay announces `taken_over`, which closes it.
fn claim_orphan(rooms: &RoomRegistry, cluster: &Cluster, id: Uuid) -> Option<Claim> {
    let claim = cluster.claims.try_claim(id)?;
    match rooms.get(id) {
        Some(room) if !room.is_remote() => None,
        _ => Some(claim),
    }
}

/// The logs of the games whose leases this node just took. Should the read fail, the
/// leases are given back at once, so that this node or another takes the games at its
/// next sweep rather than after the keeper finds them owned and not loaded.
async fn read_taken(
    rooms: &RoomRegistry,
    cluster: &Cluster,
    taken: &[Uuid],
) -> Result<Vec<LiveGame>, RoomError> {
    match rooms.store().live_games_taken(taken).await {
        Ok(games) => Ok(games),
        Err(error) => {
            for id in taken {
                release(rooms, cluster, *id).await;
            }
            Err(error.into())
        }
    }
}

/// Restores a game whose lease this node took at `asked`, and starts its room and relay.
/// A game that cannot be restored or started is given back.
async fn start_taken(
    rooms: &RoomRegistry,
    cluster: &Cluster,
    live: LiveGame,
    asked: BootTime,
) -> Result<RoomHandle, RoomError> {
    let id = live.lobby.id;
    let mut room = match Room::restore(live, rooms.services.clone()) {
        Ok(room) => room,
        Err(error) => {
            tracing::error!(game = %id, %error, "cannot restore a game to take it over");
            release(rooms, cluster, id).await;
            return Err(RoomError::Internal);
        }
    };
    room.hold_tenure(Tenure::taken(cluster.lease.clone(), asked));
    match start_owned_room(rooms, cluster, room, true).await {
        Ok(handle) => {
            tracing::info!(game = %id, node = %cluster.node, "took the game over");
            rooms.metrics().cluster_event("taken_over");
            Ok(handle)
        }
        Err(error) => {
            release(rooms, cluster, id).await;
            Err(error)
        }
    }
}

async fn release(rooms: &RoomRegistry, cluster: &Cluster, id: Uuid) {
    if let Err(error) = rooms.store().release_lease(id, &cluster.node).await {
        // The lease keeper gives up a game it owns and has no room for.
        tracing::warn!(game = %id, %error, "cannot give a game back");
    }
}
