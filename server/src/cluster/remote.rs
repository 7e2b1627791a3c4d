//! A game owned by another node, as this node's connections and REST handlers see it.
//!
//! A [`RemoteRoom`] stands in the room registry where a local room would, behind the same
//! [`RoomHandle`], so nothing that talks to rooms knows the difference. Each request it
//! receives goes to the owner as one NATS request (answered by the owner's relay); the
//! owner's updates arrive on the game's update subject and are re-broadcast here, once
//! for every local connection. When the owner stops answering, is replaced, or the game
//! ends, the stand-in closes its connections (they reconnect and find the new owner)
//! and leaves the registry.

use crate::cluster::wire::{self, Published};
use crate::cluster::{Cluster, requests_subject, updates_subject};
use crate::error::AppError;
use crate::metrics::Metrics;
use crate::rooms::{Outgoing, RoomHandle, RoomRequest};
use crate::state::AppState;
use async_nats::{RequestErrorKind, Subscriber};
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// A stand-in with no connection and no request for this long leaves memory.
const IDLE_UNLOAD: Duration = Duration::from_secs(60);
/// How many requests may wait for the stand-in, as for a local room.
const QUEUE: usize = 256;

/// Why a stand-in stops.
enum Stop {
    /// The owner is gone or replaced: connections reconnect and find the new one.
    Reconnect,
    /// The game ended: connections close as they would on its owner.
    Ended,
    /// Nothing uses it any more.
    Idle,
}

pub struct RemoteRoom {
    id: Uuid,
    cluster: Cluster,
    updates: broadcast::Sender<Arc<Outgoing>>,
    /// Told by a request's task that the owner did not answer.
    owner_lost: mpsc::UnboundedSender<()>,
    /// Cancelled when the stand-in stops: requests still waiting for the old owner are
    /// answered at once ("reconnect shortly") rather than at their timeout.
    stopped: CancellationToken,
    last_used: Instant,
    metrics: Arc<Metrics>,
}

/// Starts a stand-in for game `id` and registers it.
pub async fn spawn(state: &AppState, cluster: &Cluster, id: Uuid) -> Result<RoomHandle, AppError> {
    let subscription = cluster
        .nats
        .subscribe(updates_subject(id))
        .await
        .map_err(|error| {
            tracing::warn!(%error, game = %id, "cannot subscribe to a game's updates");
            AppError::ShuttingDown
        })?;
    // The owner must see the subscription before it is asked anything, or an update it
    // publishes just after its answer could miss this node.
    cluster
        .nats
        .flush()
        .await
        .map_err(|_| AppError::ShuttingDown)?;
    let (sender, requests) = mpsc::channel(QUEUE);
    let handle = RoomHandle::remote(id, sender);
    let (owner_lost, lost) = mpsc::unbounded_channel();
    let room = RemoteRoom {
        id,
        cluster: cluster.clone(),
        updates: broadcast::channel(crate::rooms::actor::BROADCAST_CAPACITY).0,
        owner_lost,
        stopped: CancellationToken::new(),
        last_used: Instant::now(),
        metrics: state.metrics.clone(),
    };
    state.rooms.insert(handle.clone());
    state.metrics.stand_ins.inc();
    let (rooms, registered, shutdown) =
        (state.rooms.clone(), handle.clone(), state.shutdown.clone());
    let metrics = state.metrics.clone();
    state.tasks.spawn(async move {
        room.run(requests, subscription, lost, shutdown).await;
        rooms.remove_handle(&registered);
        metrics.stand_ins.dec();
    });
    tracing::debug!(game = %id, "reaching a game owned by another node");
    Ok(handle)
}

impl RemoteRoom {
    async fn run(
        mut self,
        mut requests: mpsc::Receiver<RoomRequest>,
        mut published: Subscriber,
        mut lost: mpsc::UnboundedReceiver<()>,
        shutdown: CancellationToken,
    ) {
        let mut idle_check = tokio::time::interval(IDLE_UNLOAD / 4);
        let stop = loop {
            tokio::select! {
                request = requests.recv() => match request {
                    Some(RoomRequest::Unload) => break Stop::Reconnect,
                    Some(request) => self.forward(request),
                    None => break Stop::Idle,
                },
                message = published.next() => match message.map(|m| Published::decode(m.headers.as_ref(), m.payload)) {
                    Some(Ok(Published::Update(outgoing))) => {
                        let closing = outgoing.closing;
                        let _ = self.updates.send(outgoing);
                        if closing {
                            break Stop::Reconnect;
                        }
                    }
                    Some(Ok(Published::Ended)) => break Stop::Ended,
                    Some(Ok(Published::TakenOver)) | None => break Stop::Reconnect,
                    Some(Err(error)) => tracing::error!(%error, "an update this node cannot read"),
                },
                Some(()) = lost.recv() => break Stop::Reconnect,
                _ = idle_check.tick() => if self.idle() { break Stop::Idle },
                _ = shutdown.cancelled() => break Stop::Idle,
            }
        };
        requests.close();
        // Requests already with a replaced owner will get no answer; those with an owner
        // whose game just ended will (the last move's ack among them).
        if let Stop::Reconnect = stop {
            self.stopped.cancel();
            self.tell_connections_to_reconnect();
        }
        // Requests already queued are answered: the caller retries and finds the owner.
        while let Some(request) = requests.recv().await {
            if let Some((_, Some(waiter))) = wire::split(request, &self.updates) {
                waiter.answer(Err(AppError::ShuttingDown));
            }
        }
        tracing::debug!(game = %self.id, "stopped reaching a game owned by another node");
    }

    fn idle(&self) -> bool {
        self.updates.receiver_count() == 0 && self.last_used.elapsed() >= IDLE_UNLOAD
    }

    /// Local connections close with 1012 and come back to whichever node owns the game.
    fn tell_connections_to_reconnect(&self) {
        let closing = Outgoing::closing("the game moved to another server; reconnect");
        let _ = self.updates.send(Arc::new(closing));
    }

    /// Sends one request to the owner and answers its caller in a task of its own.
    fn forward(&mut self, request: RoomRequest) {
        self.last_used = Instant::now();
        let Some((request, waiter)) = wire::split(request, &self.updates) else {
            return;
        };
        let payload = serde_json::to_vec(&request).expect("serializable");
        let (nats, subject, lost) = (
            self.cluster.nats.clone(),
            requests_subject(self.id),
            self.owner_lost.clone(),
        );
        let (stopped, metrics) = (self.stopped.clone(), self.metrics.clone());
        metrics.cluster_event("relayed");
        tokio::spawn(async move {
            let Some(waiter) = waiter else {
                if let Err(error) = nats.publish(subject, payload.into()).await {
                    tracing::warn!(%error, "cannot tell the owner of a game");
                }
                return;
            };
            let asked = tokio::select! {
                asked = nats.request(subject, payload.into()) => asked,
                () = stopped.cancelled() => {
                    waiter.answer(Err(AppError::ShuttingDown));
                    return;
                }
            };
            let answer = match asked {
                Ok(message) => serde_json::from_slice(&message.payload).map_err(|error| {
                    tracing::error!(%error, "an answer this node cannot read");
                    AppError::Internal
                }),
                Err(error) => {
                    if matches!(
                        error.kind(),
                        RequestErrorKind::NoResponders | RequestErrorKind::TimedOut
                    ) {
                        metrics.cluster_event("owner_unreachable");
                        let _ = lost.send(());
                    }
                    tracing::warn!(%error, "the owner of a game did not answer");
                    Err(AppError::ShuttingDown)
                }
            };
            waiter.answer(answer);
        });
    }
}
