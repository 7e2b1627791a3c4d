//! The state every handler shares: the store, the live rooms, metrics and limits, the
//! admission counters, and the shutdown signal with the tracker of every task that must
//! finish before exit.

use crate::accounts::AccountIssuer;
use crate::admission::{PendingPool, RequestLimiter, SlotPool};
use crate::bots::BotPool;
use crate::cluster::{self, Cluster};
use crate::config::Limits;
use crate::error::AppError;
use crate::metrics::Metrics;
use crate::queue::QueueSettings;
use crate::rooms::actor::RoomServices;
use crate::rooms::registry::{RoomOpener, RoomRegistry};
use crate::rooms::restore::Unrestored;
use crate::rooms::{RoomHandle, RoomSettings};
use carcassonne_store::Store;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

#[derive(Clone, Debug)]
pub struct AppState {
    pub store: Store,
    /// This node's live rooms, and what starting one takes.
    pub rooms: RoomRegistry,
    /// A single node's unfinished games that have no room yet, after a start.
    pub unrestored: Unrestored,
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
    /// This node's place in a cluster; None for a single node.
    pub cluster: Option<Cluster>,
    /// How quick play matches and bounds its tickets.
    pub queue: Arc<QueueSettings>,
    /// The other site whose accounts sign players in, if one is configured.
    pub accounts: Option<Arc<AccountIssuer>>,
    /// The SHA-256 of the operator's admin token, if one is configured.
    pub admin_token_sha256: Option<Arc<str>>,
}

impl AppState {
    /// Whether the server is draining (shutdown has begun).
    pub fn draining(&self) -> bool {
        self.shutdown.is_cancelled()
    }

    pub fn new(store: Store, limits: Limits, shutdown: CancellationToken) -> AppState {
        let metrics = Arc::new(Metrics::new());
        let tasks = TaskTracker::new();
        let services = RoomServices {
            store: store.clone(),
            metrics: metrics.clone(),
            bots: BotPool::new(1),
            settings: RoomSettings::default(),
            opener: RoomOpener::default(),
        };
        AppState {
            rooms: RoomRegistry::new(services, tasks.clone(), shutdown.clone()),
            unrestored: Unrestored::default(),
            store,
            metrics,
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
            tasks,
            cluster: None,
            queue: Arc::default(),
            accounts: None,
            admin_token_sha256: None,
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
            Some(cluster) => Ok(cluster::resolve(&self.rooms, cluster, id).await?),
            None => Ok(self.unrestored.restore(&self.rooms, id).await?),
        }
    }

    /// The same state, signing in the accounts of `issuer`.
    pub fn with_accounts(mut self, issuer: Option<Arc<AccountIssuer>>) -> AppState {
        self.accounts = issuer;
        self
    }

    /// The same state, taking operator requests that carry the token hashed as `sha256`.
    pub fn with_admin_token(mut self, sha256: Option<String>) -> AppState {
        self.admin_token_sha256 = sha256.map(Arc::from);
        self
    }

    /// The same state with these quick-play settings.
    pub fn with_queue(mut self, settings: QueueSettings) -> AppState {
        self.queue = Arc::new(settings);
        self
    }

    /// The same state with these room settings, bot pool, and the way rooms have others
    /// opened.
    pub fn with_rooms(
        mut self,
        settings: RoomSettings,
        bots: BotPool,
        opener: RoomOpener,
    ) -> AppState {
        let services = RoomServices {
            settings,
            bots,
            opener,
            ..self.rooms.services.clone()
        };
        self.rooms = RoomRegistry::new(services, self.tasks.clone(), self.shutdown.clone());
        self
    }
}
