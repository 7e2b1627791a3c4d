//! The lease keeper: one task per node that renews this node's leases, unloads the rooms
//! whose lease it lost, and takes over the games no live node holds.
//!
//! Leases are timed by the database's clock, never a node's, so nodes whose clocks
//! disagree still agree on who owns what. A node that cannot renew (the database is out
//! of reach) keeps its rooms: the fencing in the database refuses their writes once
//! another node has taken a game, and the next renewal that works unloads them.

use crate::cluster::{Cluster, take_over_orphans};
use crate::rooms::{RoomHandle, RoomRequest};
use crate::state::AppState;
use carcassonne_store::Store;
use std::collections::HashSet;
use std::time::Duration;
use uuid::Uuid;

/// How often a node looks for games whose owner died.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Renews and sweeps until shutdown.
pub async fn keep_leases(state: AppState, cluster: Cluster) {
    let mut renew = tokio::time::interval(cluster.lease_ttl / 3);
    let mut sweep = tokio::time::interval(SWEEP_EVERY);
    loop {
        tokio::select! {
            _ = renew.tick() => renew_leases(&state, &cluster).await,
            _ = sweep.tick() => {
                match take_over_orphans(&state, &cluster).await {
                    Ok(0) => {}
                    Ok(taken) => tracing::info!(taken, "took over games whose owner stopped"),
                    Err(error) => tracing::warn!(%error, "cannot look for games without an owner"),
                }
            }
            _ = state.shutdown.cancelled() => return,
        }
    }
}

/// Extends this node's leases and unloads the local rooms it no longer holds.
async fn renew_leases(state: &AppState, cluster: &Cluster) {
    let _registry = crate::cluster::hold_registry(cluster).await;
    let held = match state
        .store
        .renew_leases(&cluster.node, cluster.lease_ttl)
        .await
    {
        Ok(held) => held.into_iter().collect::<HashSet<_>>(),
        Err(error) => {
            tracing::warn!(%error, "cannot renew this node's leases");
            return;
        }
    };
    let local: Vec<RoomHandle> = state
        .rooms
        .all()
        .into_iter()
        .filter(|room| !room.is_remote())
        .collect();
    for room in &local {
        if !held.contains(&room.id) {
            tracing::warn!(game = %room.id, "lost the lease of a game; unloading it");
            room.tell(RoomRequest::Unload).await;
        }
    }
    // A lease this node holds for a game it no longer has in memory would keep the game
    // from everyone: give it up.
    let loaded: HashSet<Uuid> = local.iter().map(|room| room.id).collect();
    for id in held.difference(&loaded) {
        tracing::warn!(game = %id, "held the lease of a game not in memory; releasing it");
        let _ = state.store.release_lease(*id, &cluster.node).await;
    }
}

/// Gives up a game's lease as soon as its room stops here (a shutdown, a panic), so that
/// another node takes it over at once rather than when the lease would lapse. A room
/// that stopped because it lost its lease, or ended, has no lease left to give.
pub async fn release_when_stopped(store: Store, cluster: Cluster, room: RoomHandle) {
    room.closed().await;
    if let Err(error) = store.release_lease(room.id, &cluster.node).await {
        tracing::warn!(%error, game = %room.id, "cannot release a lease; it will lapse");
    }
}

/// Gives up every lease at the end of a clean shutdown, once the rooms have stopped, so
/// that other nodes take the games at once instead of after the leases lapse.
pub async fn release_leases(state: &AppState, cluster: &Cluster) {
    match state.store.release_leases(&cluster.node).await {
        Ok(released) => tracing::info!(released, "handed this node's games over"),
        Err(error) => tracing::warn!(%error, "cannot release this node's leases; they will lapse"),
    }
}
