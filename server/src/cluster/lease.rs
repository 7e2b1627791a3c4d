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
    let mut unloaded = HashSet::new();
    loop {
        tokio::select! {
            _ = renew.tick() => unloaded = renew_leases(&state, &cluster, &unloaded).await,
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

/// Extends this node's leases and unloads the local rooms it no longer holds. Returns the
/// games it owns without having them in memory; those it also owned so at the last
/// renewal (`unloaded_before`) are given up.
async fn renew_leases(
    state: &AppState,
    cluster: &Cluster,
    unloaded_before: &HashSet<Uuid>,
) -> HashSet<Uuid> {
    let _registry = crate::cluster::hold_registry(cluster).await;
    let held = match state
        .store
        .renew_leases(&cluster.node, cluster.lease_ttl)
        .await
    {
        Ok(held) => held.into_iter().collect::<HashSet<_>>(),
        Err(error) => {
            tracing::warn!(%error, "cannot renew this node's leases");
            return HashSet::new();
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
            state.metrics.cluster_event("lease_lost");
            room.tell(RoomRequest::Unload).await;
        }
    }
    // A game this node owns but no longer has in memory (its room panicked) would be
    // kept from everyone: give it up. Only at the second renewal that finds it so: a
    // lobby is owned from its first row, a moment before its room starts.
    let loaded: HashSet<Uuid> = local.iter().map(|room| room.id).collect();
    let unloaded: HashSet<Uuid> = held.difference(&loaded).copied().collect();
    for id in unloaded.intersection(unloaded_before) {
        tracing::warn!(game = %id, "owned a game not in memory; releasing it");
        let _ = state.store.release_lease(*id, &cluster.node).await;
    }
    unloaded
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
