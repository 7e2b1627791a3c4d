//! The lease keeper: two tasks per node. One renews this node's leases (every third of
//! their time to live, and at once when a room asks to be sure of its game), records
//! what each renewal proved in the node's [`NodeLease`] (which rooms read to know
//! whether they may still decide their games from memory), and unloads the rooms whose
//! lease it lost. The other takes over the games no live node holds.
//!
//! They are apart, and the keeper waits for nothing the sweep or a request holds, so
//! that a long sweep (restoring dozens of games from their logs) or a crowd of requests
//! for games taken over can never hold up a renewal and let this node's own leases lapse.
//!
//! Leases are timed by the database's clock, never a node's, so nodes whose clocks
//! disagree still agree on who owns what. A node that cannot renew (the database is out
//! of reach) keeps its rooms: the fencing in the database refuses their writes once
//! another node has taken a game, their [`Tenure`](crate::rooms::tenure::Tenure) stops
//! trusting memory once the last renewal is too old, and the next renewal that works
//! unloads them.

use crate::cluster::Cluster;
use crate::cluster::takeover::take_over_orphans;
use crate::rooms::RoomHandle;
use crate::rooms::registry::RoomRegistry;
use crate::rooms::tenure::BootTime;
use carcassonne_store::Store;
use std::collections::HashSet;
use std::time::Duration;
use uuid::Uuid;

/// How often a node looks for games whose owner died: a game is taken over at most this
/// long after its lease lapsed, and a few round trips to the database (see
/// `ARCHITECTURE.md`, "Cluster mode"). Each look is one read of the live games' owners.
const SWEEP_EVERY: Duration = Duration::from_millis(500);

/// Renews this node's leases until shutdown.
pub async fn keep_leases(rooms: RoomRegistry, cluster: Cluster) {
    let mut renew = tokio::time::interval(cluster.lease_ttl / 3);
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut keeper = Keeper::default();
    loop {
        tokio::select! {
            _ = renew.tick() => {}
            () = cluster.lease.renewal_wanted() => {}
            _ = rooms.shutdown.cancelled() => return,
        }
        keeper.renew(&rooms, &cluster).await;
    }
}

/// Takes over games whose owner stopped, died or froze, every [`SWEEP_EVERY`], until
/// shutdown.
pub async fn sweep_orphans(rooms: RoomRegistry, cluster: Cluster) {
    let mut sweep = tokio::time::interval(SWEEP_EVERY);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = sweep.tick() => {}
            _ = rooms.shutdown.cancelled() => return,
        }
        match take_over_orphans(&rooms, &cluster).await {
            Ok(0) => {}
            Ok(taken) => tracing::info!(taken, "took over games whose owner stopped"),
            Err(error) => tracing::warn!(%error, "cannot look for games without an owner"),
        }
    }
}

/// What the renewing task remembers from one renewal to the next.
#[derive(Default)]
struct Keeper {
    /// Games this node owned without having them in memory at the last renewal.
    unloaded: HashSet<Uuid>,
    /// Rooms already told to unload, so each is told (and logged) once.
    told_to_unload: HashSet<Uuid>,
}

impl Keeper {
    /// Extends this node's leases, records what that proved, and unloads the local rooms
    /// it no longer holds. A game this node owns but no longer has in memory (its room
    /// panicked) would be kept from everyone: it is given up, at the second renewal that
    /// finds it so (a lobby is owned from its first row, a moment before its room starts).
    ///
    /// Games are taken over while this runs, and it must not wait for them: only rooms
    /// loaded before the renewal was asked can have been lost by then (a room started
    /// since may hold a lease the renewal's read came too early to see), and a game
    /// owned while still claimed is being started.
    async fn renew(&mut self, rooms: &RoomRegistry, cluster: &Cluster) {
        let loaded_before = local_rooms(rooms);
        let asked = BootTime::now();
        let held = match rooms
            .store()
            .renew_leases(&cluster.node, cluster.lease_ttl)
            .await
        {
            Ok(held) => held.into_iter().collect::<HashSet<_>>(),
            Err(error) => {
                cluster.lease.renewal_failed(asked);
                tracing::warn!(%error, "cannot renew this node's leases");
                return;
            }
        };
        self.unload_lost(&loaded_before, &held);
        self.release_unloaded(rooms, cluster, &held).await;
        cluster.lease.renewed(asked, held);
    }

    /// Tells each room of `loaded_before` whose game the renewal did not find this
    /// node's to unload. A finished game's room stays a while for its players with no
    /// lease to hold.
    fn unload_lost(&mut self, loaded_before: &[RoomHandle], held: &HashSet<Uuid>) {
        let loaded: HashSet<Uuid> = loaded_before.iter().map(|room| room.id).collect();
        self.told_to_unload.retain(|id| loaded.contains(id));
        let unheld = loaded_before
            .iter()
            .filter(|room| !held.contains(&room.id) && !room.has_ended());
        for room in unheld {
            // A room whose queue is full is told at the next renewal; meanwhile its
            // tenure, renewed below without it, keeps it from deciding anything.
            if !self.told_to_unload.contains(&room.id) && room.try_unload() {
                tracing::warn!(game = %room.id, "lost the lease of a game; unloading it");
                self.told_to_unload.insert(room.id);
            }
        }
    }

    /// Gives up the games of `held` that this node has had neither loaded nor claimed
    /// at two renewals in a row. The claims are read before the rooms: a take-over
    /// registers its room before it lets go of its claim, so a game taken by the time
    /// of the renewal's read is seen one way or the other.
    async fn release_unloaded(
        &mut self,
        rooms: &RoomRegistry,
        cluster: &Cluster,
        held: &HashSet<Uuid>,
    ) {
        let unclaimed: Vec<Uuid> = held
            .iter()
            .filter(|id| !cluster.claims.is_claimed(**id))
            .copied()
            .collect();
        let loaded: HashSet<Uuid> = local_rooms(rooms).iter().map(|room| room.id).collect();
        let unloaded: HashSet<Uuid> = unclaimed
            .into_iter()
            .filter(|id| !loaded.contains(id))
            .collect();
        for id in unloaded.intersection(&self.unloaded) {
            tracing::warn!(game = %id, "owned a game not in memory; releasing it");
            let _ = rooms.store().release_lease(*id, &cluster.node).await;
        }
        self.unloaded = unloaded;
    }
}

/// This node's own rooms, stand-ins left out.
fn local_rooms(rooms: &RoomRegistry) -> Vec<RoomHandle> {
    rooms
        .all()
        .into_iter()
        .filter(|room| !room.is_remote())
        .collect()
}

/// Gives up a game's lease as soon as its room stops here (a shutdown, a panic), so that
/// another node takes it over at once rather than when the lease would lapse. A room
/// that stopped because it lost its lease has no lease left to give; a finished game's,
/// at the end of its post-game stay, gives the game up so that no other node sends its
/// late visitors here (`finished_game_host`).
pub async fn release_when_stopped(store: Store, cluster: Cluster, room: RoomHandle) {
    room.closed().await;
    if let Err(error) = store.release_lease(room.id, &cluster.node).await {
        tracing::warn!(%error, game = %room.id, "cannot release a lease; it will lapse");
    }
}

/// Gives up every lease at the end of a clean shutdown, once the rooms have stopped, so
/// that other nodes take the games at once instead of after the leases lapse.
pub async fn release_leases(store: &Store, cluster: &Cluster) {
    match store.release_leases(&cluster.node).await {
        Ok(released) => tracing::info!(released, "handed this node's games over"),
        Err(error) => tracing::warn!(%error, "cannot release this node's leases; they will lapse"),
    }
}
