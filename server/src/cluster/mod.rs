//! Cluster mode: several nodes on one Postgres, talking over NATS.
//!
//! Every live game (an open lobby or a game in play) is decided by exactly one node, its
//! owner, which holds the game's lease in Postgres (`lobbies.owner_node`, renewed every
//! third of its time to live). Any node accepts any request: for a game it does not own,
//! a [`remote::RemoteRoom`] stands in the room registry and relays requests to the owner
//! as NATS requests on `carcassonne.game.{id}.requests`; the owner's [`relay`] answers
//! them from its room and publishes each update once on `carcassonne.game.{id}.updates`.
//!
//! A game whose lease is free or lapsed is taken over by the first node that needs it
//! (a request for it) or finds it (the [`lease`] keeper's sweep, twice a second), by
//! replaying its move log, as at start-up ([`takeover`]). The database fences writers: a
//! node that is not the recorded owner can never advance a game's `seq` (a trigger
//! checks the session's node name), so two nodes that both believe they own a game
//! cannot fork it.
//!
//! Without `--nats` none of this runs and a single node serves everything, as before.

pub mod claims;
pub mod lease;
pub mod relay;
pub mod remote;
pub mod takeover;

use crate::cluster::claims::Claims;
use crate::cluster::remote::Reaching;
use crate::rooms::RoomHandle;
use crate::rooms::actor::Room;
use crate::rooms::error::RoomError;
use crate::rooms::registry::RoomRegistry;
use crate::rooms::tenure::{BootTime, NodeLease, Tenure};
use async_nats::RequestErrorKind;
use bytes::Bytes;
use carcassonne_store::LeaseHolder;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use uuid::Uuid;

/// How a node joins a cluster.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// The NATS server, e.g. `nats://127.0.0.1:4222`.
    pub nats_url: String,
    /// This node's name: unique in the cluster, recorded as the owner of its games.
    pub node: String,
    /// How long a lease lasts unless renewed: a killed node's games wait this long.
    pub lease_ttl: Duration,
}

impl ClusterConfig {
    pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(5);

    /// A node name that no other node has: a random one.
    pub fn random_node_name() -> String {
        format!("node-{}", &Uuid::new_v4().simple().to_string()[..12])
    }
}

/// This node's place in the cluster, shared by every handler.
#[derive(Clone, Debug)]
pub struct Cluster {
    pub node: Arc<str>,
    pub nats: async_nats::Client,
    pub lease_ttl: Duration,
    /// This node's lease on its games, as the lease keeper last renewed it.
    pub lease: Arc<NodeLease>,
    /// Counts NATS's reconnections: a stand-in that sees it change asks its owner for
    /// the `seq`, since updates published while NATS was away are lost.
    pub reconnections: tokio::sync::watch::Receiver<u64>,
    /// The games whose room this node is finding or starting now, so that two tasks
    /// never restore one game twice.
    claims: Arc<Claims>,
    /// Turns for requests to ask the database about games this node has no room for.
    resolving: Arc<Semaphore>,
}

/// How many requests for games this node has no room for may ask the database at once
/// (who holds the lease, and a take-over when nobody does). More would take the pool's
/// connections from the rooms and from the lease keeper, whose renewals must not wait:
/// a renewal late by the lease's time to live loses every game of the node.
const RESOLVING_AT_ONCE: usize = 4;

impl Cluster {
    /// Connects to NATS. Fails when NATS does not answer: a node that cannot reach the
    /// others must not take games.
    pub async fn connect(config: &ClusterConfig) -> Result<Cluster, async_nats::ConnectError> {
        let (reconnected, reconnections) = tokio::sync::watch::channel(0);
        let nats = async_nats::ConnectOptions::new()
            .name(format!("carcassonne {}", config.node))
            .request_timeout(Some(REQUEST_WAIT))
            .event_callback(move |event| {
                let reconnected = reconnected.clone();
                async move { note_nats_event(event, &reconnected) }
            })
            .connect(config.nats_url.as_str())
            .await?;
        let node: Arc<str> = config.node.as_str().into();
        Ok(Cluster {
            lease: NodeLease::new(node.clone(), config.lease_ttl),
            node,
            nats,
            lease_ttl: config.lease_ttl,
            reconnections,
            claims: Arc::default(),
            resolving: Arc::new(Semaphore::new(RESOLVING_AT_ONCE)),
        })
    }

    /// Waits until NATS has every subscription and publication made so far, at most
    /// [`NATS_WAIT`]: false when NATS is away.
    ///
    /// The client's own `flush` only writes them out: NATS may not have read them yet,
    /// and a request another node sends meanwhile to a subject just subscribed to finds
    /// no responder. So this asks NATS a question only NATS answers (a request to a
    /// subject nobody listens on, which NATS refuses as "no responders"), and NATS reads
    /// a connection's messages in order: its answer comes after everything before it.
    pub async fn flush(&self) -> bool {
        let probe = self.nats.request(FLUSH_SUBJECT, Bytes::new());
        match tokio::time::timeout(NATS_WAIT, probe).await {
            Ok(Err(error)) => error.kind() == RequestErrorKind::NoResponders,
            // Nobody listens there; should anything answer, NATS has read the probe too.
            Ok(Ok(_)) => true,
            Err(_) => false,
        }
    }
}

/// Where [`Cluster::flush`] asks NATS its question: a subject nobody subscribes to.
const FLUSH_SUBJECT: &str = "carcassonne.flush";

/// The longest a publication or a flush waits while NATS is away. Past it the caller
/// treats NATS as away: nothing waits for NATS without a bound, shutdown least of all.
pub const NATS_WAIT: Duration = Duration::from_secs(3);

/// The longest a request to another node waits for its answer: more than the owner may
/// take to answer a command while its database is away (the acquire timeout, 3 s by
/// default, and a second), so that the client hears `storage_unavailable` rather than
/// being sent to reconnect.
pub const REQUEST_WAIT: Duration = Duration::from_secs(5);

fn note_nats_event(event: async_nats::Event, reconnected: &tokio::sync::watch::Sender<u64>) {
    match event {
        async_nats::Event::Connected => {
            tracing::info!("NATS connection (re)established");
            reconnected.send_modify(|count| *count += 1);
        }
        async_nats::Event::Disconnected => tracing::warn!("NATS connection lost; reconnecting"),
        other => tracing::debug!(event = %other, "NATS event"),
    }
}

pub fn requests_subject(game: Uuid) -> String {
    format!("carcassonne.game.{game}.requests")
}

pub fn updates_subject(game: Uuid) -> String {
    format!("carcassonne.game.{game}.updates")
}

/// The room for game `id` on this node: its own if it owns (or can take) the game, or a
/// stand-in that reaches the owner, or the node where a finished game's room stays for
/// its post-game. None when there is no live game with this id, nor a finished one whose
/// room may still be up.
pub async fn resolve(
    rooms: &RoomRegistry,
    cluster: &Cluster,
    id: Uuid,
) -> Result<Option<RoomHandle>, RoomError> {
    let _claim = cluster.claims.claim(id).await;
    if let Some(room) = rooms.get(id) {
        return Ok(Some(room));
    }
    let _turn = cluster
        .resolving
        .acquire()
        .await
        .map_err(|_| RoomError::ShuttingDown)?;
    match rooms.store().lease_holder(id).await? {
        None => finished_elsewhere(rooms, cluster, id).await,
        Some(holder) if !free_for(&holder, cluster) => reach(rooms, cluster, id).await,
        Some(_) => take_or_reach(rooms, cluster, id).await,
    }
}

/// Takes over game `id`, whose lease was free or lapsed a moment ago, or reaches the
/// node that took it first.
async fn take_or_reach(
    rooms: &RoomRegistry,
    cluster: &Cluster,
    id: Uuid,
) -> Result<Option<RoomHandle>, RoomError> {
    if let Some(room) = takeover::take_over(rooms, cluster, id).await? {
        return Ok(Some(room));
    }
    // Taken by another node just now (reach it there), or held by its old owner's write
    // in flight (ask again shortly).
    match rooms.store().lease_holder(id).await? {
        Some(holder) if !free_for(&holder, cluster) => reach(rooms, cluster, id).await,
        _ => Err(RoomError::ShuttingDown),
    }
}

/// A stand-in for live game `id`, which another node owns.
async fn reach(
    rooms: &RoomRegistry,
    cluster: &Cluster,
    id: Uuid,
) -> Result<Option<RoomHandle>, RoomError> {
    remote::spawn(rooms, cluster, id, Reaching::LiveGame)
        .await
        .map(Some)
}

/// Whether this node may take a game held so: nobody holds it, its owner's lease
/// lapsed, or it is this node's own.
fn free_for(holder: &LeaseHolder, cluster: &Cluster) -> bool {
    holder.owner.is_none() || holder.lapsed || holder.owner.as_deref() == Some(&*cluster.node)
}

/// A stand-in for finished game `id` when its room may still be up on the live node that
/// owned it last. Its room on this node, had it one, was found above; a game this node
/// finished whose room has stopped is over for good.
async fn finished_elsewhere(
    rooms: &RoomRegistry,
    cluster: &Cluster,
    id: Uuid,
) -> Result<Option<RoomHandle>, RoomError> {
    match rooms.store().finished_game_host(id).await? {
        Some(host) if host != *cluster.node => {
            remote::spawn(rooms, cluster, id, Reaching::FinishedGame)
                .await
                .map(Some)
        }
        _ => Ok(None),
    }
}

/// Starts the room of a lobby just created on this node. In cluster mode the lobby is
/// this node's from its insert; taking its lease here also renews the node's own, so the
/// node cannot look dead to the others before its keeper's first renewal. Should the
/// game be another node's after all (this node's lease had lapsed and a sweep took it),
/// that node serves it and this one does not.
pub async fn start_new_room(
    rooms: &RoomRegistry,
    cluster: Option<&Cluster>,
    mut room: Room,
) -> Result<(), RoomError> {
    let Some(cluster) = cluster else {
        rooms.spawn_room(room);
        return Ok(());
    };
    let id = room.id();
    let _claim = cluster.claims.claim(id).await;
    if rooms.get(id).is_some() {
        // Restored here already: a lobby is this node's from its insert, so a request
        // for it that came first found it free for this node and took it from its log.
        return Ok(());
    }
    let store = rooms.store();
    let asked = BootTime::now();
    if store
        .acquire_lease(id, &cluster.node, cluster.lease_ttl)
        .await?
    {
        room.hold_tenure(Tenure::taken(cluster.lease.clone(), asked));
        start_owned_room(rooms, cluster, room, false).await?;
    }
    Ok(())
}

/// Starts a room this node owns, with its relay. The relay listens for other nodes'
/// requests before the room is announced anywhere, so that no node asking right after
/// (a join just after the create) finds nobody answering. `taken_over` says the game was
/// restored from its log while other nodes may have connections to it.
pub async fn start_owned_room(
    rooms: &RoomRegistry,
    cluster: &Cluster,
    room: Room,
    taken_over: bool,
) -> Result<RoomHandle, RoomError> {
    let requests = relay::listen(cluster, room.id()).await?;
    let updates = room.updates().subscribe();
    let handle = rooms.spawn_room(room);
    let (store, owner) = (rooms.store().clone(), cluster.clone());
    rooms
        .tasks
        .spawn(lease::release_when_stopped(store, owner, handle.clone()));
    let relay = relay::relay(
        cluster.clone(),
        rooms.store().clone(),
        handle.clone(),
        requests,
        updates,
        taken_over,
    );
    rooms.tasks.spawn(relay);
    Ok(handle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    /// NATS at `TEST_NATS_URL` (default the local one), or None (said on stderr) when it
    /// does not answer and `REQUIRE_NATS=1` is not set.
    async fn cluster_or_skip(node: &str) -> Option<Cluster> {
        let url = std::env::var("TEST_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
        let config = ClusterConfig {
            nats_url: url.clone(),
            node: node.into(),
            lease_ttl: ClusterConfig::DEFAULT_LEASE_TTL,
        };
        let connecting = tokio::time::timeout(Duration::from_secs(2), Cluster::connect(&config));
        match connecting.await {
            Ok(Ok(cluster)) => Some(cluster),
            _ if std::env::var_os("REQUIRE_NATS").is_some() => panic!("no NATS at {url}"),
            _ => {
                eprintln!("skipped: no NATS at {url}");
                None
            }
        }
    }

    /// What every room start relies on: once `flush` returns, another node's request to a
    /// subject this node just subscribed to reaches it. Writing the subscription out is
    /// not enough; NATS must have read it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn after_a_flush_other_nodes_requests_reach_a_new_subscription() {
        let (Some(owner), Some(other)) = (
            cluster_or_skip("flush-a").await,
            cluster_or_skip("flush-b").await,
        ) else {
            return;
        };
        for round in 0..300 {
            let subject = format!("carcassonne.test.{}.{round}", Uuid::new_v4());
            let mut requests = owner.nats.subscribe(subject.clone()).await.unwrap();
            assert!(owner.flush().await);
            let answering = tokio::spawn(async move {
                let request = requests.next().await.expect("a request");
                (request.reply.expect("a reply subject"), requests)
            });
            let asked = other.nats.request(subject, "ping".into());
            let (reply, _requests) = tokio::select! {
                asked = asked => panic!("round {round}: answered before the owner did: {asked:?}"),
                answered = answering => answered.unwrap(),
            };
            owner.nats.publish(reply, "pong".into()).await.unwrap();
        }
    }
}
