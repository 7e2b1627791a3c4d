//! This node's live rooms, by id, and what starting one takes.
//!
//! The registry is what the edges (REST, WebSocket, the cluster's lease keeper, relay
//! and stand-ins) share about rooms: they find a room here, start one here, and count
//! them here. It knows nothing of the cluster: a stand-in for a game another node owns
//! is registered like any room, behind the same [`RoomHandle`].

use crate::metrics::Metrics;
use crate::rooms::RoomHandle;
use crate::rooms::actor::{Room, RoomServices};
use crate::rooms::error::RoomError;
use carcassonne_store::{LobbyRow, SeatRow, Store};
use futures_util::FutureExt;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;
use uuid::Uuid;

/// How many requests may wait for one room before senders are slowed down.
const ROOM_QUEUE: usize = 256;

/// Every live room of this node, and the services and tasks rooms run with.
#[derive(Clone, Debug)]
pub struct RoomRegistry {
    rooms: Arc<Mutex<HashMap<Uuid, RoomHandle>>>,
    /// What every room is started with.
    pub services: RoomServices,
    /// Every room's task, waited for before the server exits.
    pub tasks: TaskTracker,
    pub shutdown: CancellationToken,
}

impl RoomRegistry {
    pub fn new(
        services: RoomServices,
        tasks: TaskTracker,
        shutdown: CancellationToken,
    ) -> RoomRegistry {
        RoomRegistry {
            rooms: Arc::default(),
            services,
            tasks,
            shutdown,
        }
    }

    pub fn store(&self) -> &Store {
        &self.services.store
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.services.metrics
    }

    pub fn get(&self, id: Uuid) -> Option<RoomHandle> {
        self.lock().get(&id).cloned()
    }

    pub fn insert(&self, handle: RoomHandle) {
        self.lock().insert(handle.id, handle);
    }

    /// Removes `handle`'s room, unless another room of the same game has replaced it (a
    /// stand-in replaced by the game itself after a take-over, or the reverse).
    pub fn remove_handle(&self, handle: &RoomHandle) {
        let mut rooms = self.lock();
        if rooms
            .get(&handle.id)
            .is_some_and(|held| held.same_room(handle))
        {
            rooms.remove(&handle.id);
        }
    }

    /// Every registered room, local or stand-in.
    pub fn all(&self) -> Vec<RoomHandle> {
        self.lock().values().cloned().collect()
    }

    /// How many rooms this node runs itself: stand-ins for rooms of other nodes (cluster
    /// mode) are not counted.
    pub fn len(&self) -> usize {
        self.lock()
            .values()
            .filter(|room| !room.is_remote())
            .count()
    }

    /// Starts a room's actor and registers it. If the actor ever panics, the room is
    /// dropped from memory (its game stays safe in the database) and nothing else stops.
    ///
    /// In cluster mode a room also needs its relay: see `cluster::start_owned_room`.
    pub fn spawn_room(&self, room: Room) -> RoomHandle {
        let id = room.id();
        let (sender, requests) = mpsc::channel(ROOM_QUEUE);
        let handle = RoomHandle::new(id, sender, room.updates()).ending_with(room.ended_flag());
        self.insert(handle.clone());
        self.metrics().live_rooms.inc();
        let (registry, registered) = (self.clone(), handle.clone());
        let span = tracing::info_span!("room", game = %id);
        // Made here and boxed, not in the task: a room or a future moved into a task and
        // awaited there is held twice by it, its first place kept though emptied. The
        // task was 7.9 KB a room; it is now 0.3 KB, and the boxed run and room 2.8 KB.
        let run = Box::new(room).run(requests, self.shutdown.clone());
        let run = Box::pin(AssertUnwindSafe(run).catch_unwind());
        let task = async move {
            if run.await.is_err() {
                tracing::error!("room actor panicked; the room is unloaded");
            }
            registry.remove_handle(&registered);
            registry.metrics().live_rooms.dec();
        };
        self.tasks.spawn(task.instrument(span));
        handle
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, RoomHandle>> {
        // The map holds no invariant a panicking holder could break, so a poisoned lock
        // is still safe to use.
        self.rooms
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// How long a room waits for the room it asked for to start.
const OPEN_WAIT: Duration = Duration::from_secs(5);

/// How a room asks this node to open and start another room (a rematch's): a channel to
/// the node's task that holds the registry and the cluster (`crate::rematches`), so that
/// no room holds the registry it is part of.
#[derive(Clone, Debug, Default)]
pub struct RoomOpener(Option<mpsc::UnboundedSender<OpenOrder>>);

/// A full lobby, written already, to open and start in its seats' order.
#[derive(Debug)]
pub struct OpenOrder {
    pub lobby: LobbyRow,
    pub seats: Vec<SeatRow>,
    pub started: oneshot::Sender<Result<(), RoomError>>,
}

impl RoomOpener {
    pub fn channel() -> (RoomOpener, mpsc::UnboundedReceiver<OpenOrder>) {
        let (orders, received) = mpsc::unbounded_channel();
        (RoomOpener(Some(orders)), received)
    }

    /// Opens the lobby's room and starts its game; an opener of no node (a unit test's)
    /// refuses.
    pub async fn open_and_start(
        &self,
        lobby: LobbyRow,
        seats: Vec<SeatRow>,
    ) -> Result<(), RoomError> {
        let orders = self.0.as_ref().ok_or(RoomError::Internal)?;
        let (started, outcome) = oneshot::channel();
        let order = OpenOrder {
            lobby,
            seats,
            started,
        };
        orders.send(order).map_err(|_| RoomError::ShuttingDown)?;
        match tokio::time::timeout(OPEN_WAIT, outcome).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(RoomError::ShuttingDown),
            Err(_) => Err(RoomError::StorageUnavailable),
        }
    }
}
