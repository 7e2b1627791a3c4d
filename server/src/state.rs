//! The state every handler shares: the store, the live rooms, metrics and limits, the
//! admission counters, and the shutdown signal with the tracker of every task that must
//! finish before exit.

use crate::admission::{PendingPool, RequestLimiter, SlotPool};
use crate::bots::BotPool;
use crate::cluster::{self, Cluster};
use crate::config::Limits;
use crate::error::AppError;
use crate::metrics::Metrics;
use crate::rooms::actor::{Room, RoomServices};
use crate::rooms::{RoomHandle, RoomSettings, Rooms};
use carcassonne_store::Store;
use futures_util::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

/// How many requests may wait for one room before senders are slowed down.
const ROOM_QUEUE: usize = 256;

#[derive(Clone, Debug)]
pub struct AppState {
    pub store: Store,
    pub rooms: Rooms,
    pub metrics: Arc<Metrics>,
    pub limits: Arc<Limits>,
    pub shutdown: CancellationToken,
    pub tasks: TaskTracker,
    /// Every open WebSocket connection holds one permit.
    pub connection_slots: Arc<Semaphore>,
    /// WebSocket connections that have not said hello yet, in total and per client
    /// prefix; the oldest is evicted to make room.
    pub pending_slots: Arc<PendingPool>,
    /// Every open TCP connection, HTTP or WebSocket, in total and per client prefix.
    pub tcp_slots: Arc<SlotPool>,
    /// REST requests per client prefix.
    pub request_limiter: Arc<RequestLimiter>,
    /// Open lobbies, in all and per creating client prefix: each open lobby's room holds
    /// one place until the lobby starts, is cancelled, or is unloaded.
    pub open_lobby_slots: Arc<SlotPool>,
    /// Lobby expiry and the bots that play for seats.
    pub room_settings: RoomSettings,
    /// The threads bots think on.
    pub bots: BotPool,
    /// This node's place in a cluster; None for a single node.
    pub cluster: Option<Cluster>,
}

impl AppState {
    /// Whether the server is draining (shutdown has begun).
    pub fn draining(&self) -> bool {
        self.shutdown.is_cancelled()
    }

    pub fn new(store: Store, limits: Limits, shutdown: CancellationToken) -> AppState {
        AppState {
            store,
            rooms: Rooms::default(),
            metrics: Arc::new(Metrics::new()),
            connection_slots: Arc::new(Semaphore::new(limits.max_connections)),
            pending_slots: PendingPool::new(
                limits.max_pending_connections,
                limits.max_pending_connections_per_ip,
            ),
            tcp_slots: SlotPool::new(limits.max_tcp_connections, limits.max_connections_per_ip),
            request_limiter: Arc::new(RequestLimiter::new(
                limits.requests_per_second,
                limits.request_burst,
            )),
            open_lobby_slots: SlotPool::new(
                limits.max_open_lobbies,
                limits.max_open_lobbies_per_client,
            ),
            limits: Arc::new(limits),
            shutdown,
            tasks: TaskTracker::new(),
            room_settings: RoomSettings::default(),
            bots: BotPool::new(1),
            cluster: None,
        }
    }

    /// The same state as a node of `cluster`.
    pub fn in_cluster(mut self, cluster: Cluster) -> AppState {
        self.cluster = Some(cluster);
        self
    }

    /// The room of game `id`: this node's own, or (cluster mode) the one another node
    /// owns, reached through a stand-in, or taken over if nobody holds it. None when no
    /// live game has this id.
    pub async fn find_room(&self, id: uuid::Uuid) -> Result<Option<RoomHandle>, AppError> {
        if let Some(room) = self.rooms.get(id) {
            return Ok(Some(room));
        }
        match &self.cluster {
            Some(cluster) => cluster::resolve(self, cluster, id).await,
            None => Ok(None),
        }
    }

    /// The same state with these room settings and bot pool.
    pub fn with_rooms(mut self, settings: RoomSettings, bots: BotPool) -> AppState {
        (self.room_settings, self.bots) = (settings, bots);
        self
    }

    /// What a room needs from the server.
    pub fn room_services(&self) -> RoomServices {
        RoomServices {
            store: self.store.clone(),
            metrics: self.metrics.clone(),
            bots: self.bots.clone(),
            settings: self.room_settings.clone(),
        }
    }

    /// Starts a room's actor and registers it. If the actor ever panics, the room is
    /// dropped from memory (its game stays safe in the database) and nothing else stops.
    ///
    /// In cluster mode a room also needs its relay: see [`cluster::start_owned_room`].
    pub fn spawn_room(&self, room: Room) -> RoomHandle {
        let id = room.id();
        let (sender, requests) = mpsc::channel(ROOM_QUEUE);
        let handle = RoomHandle::new(id, sender, room.updates());
        self.rooms.insert(handle.clone());
        self.metrics.live_rooms.inc();
        let (rooms, registered, metrics, shutdown) = (
            self.rooms.clone(),
            handle.clone(),
            self.metrics.clone(),
            self.shutdown.clone(),
        );
        let span = tracing::info_span!("room", game = %id);
        let task = async move {
            let outcome = AssertUnwindSafe(room.run(requests, shutdown))
                .catch_unwind()
                .await;
            if outcome.is_err() {
                tracing::error!("room actor panicked; the room is unloaded");
            }
            rooms.remove_handle(&registered);
            metrics.live_rooms.dec();
        };
        self.tasks.spawn(task.instrument(span));
        handle
    }
}
