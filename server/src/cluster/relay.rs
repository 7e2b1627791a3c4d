//! The owner's side of a game: its relay, one task per room this node owns.
//!
//! The relay answers the requests other nodes send to the game's request subject by
//! asking the local room, exactly as a local connection or REST handler would, and
//! publishes each of the room's updates once on the game's update subject, for every
//! node with connections to the game. The room itself knows nothing of the cluster.

use crate::cluster::{Cluster, NATS_WAIT, requests_subject, updates_subject};
use crate::rooms::error::RoomError;
use crate::rooms::{Answer, Outgoing, RoomHandle};
use crate::wire::nats::{FromOwner, Published, RelayQuestion, ToOwner};
use async_nats::Subscriber;
use carcassonne_store::Store;
use futures_util::StreamExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::broadcast::{self, error::RecvError};

/// Relays for `room` until it ends. `takeover` says the room was restored from its log
/// on this node while it may have had connections elsewhere, which are told to
/// reconnect so the room knows them.
pub async fn relay(
    cluster: Cluster,
    store: Store,
    room: RoomHandle,
    mut requests: Subscriber,
    mut updates: broadcast::Receiver<Arc<Outgoing>>,
    takeover: bool,
) {
    let id = room.id;
    if takeover {
        publish(&cluster, id, &Published::TakenOver).await;
    }
    let published_seq = Arc::new(AtomicU64::new(0));
    let mut closing = false;
    loop {
        tokio::select! {
            message = requests.next() => match message {
                Some(message) => answer_later(&cluster, &room, &published_seq, message),
                None => break,
            },
            update = updates.recv() => match update {
                Ok(outgoing) => {
                    closing |= outgoing.closing;
                    let seq = outgoing.seq;
                    publish(&cluster, id, &Published::Update(outgoing)).await;
                    if let Some(seq) = seq {
                        published_seq.fetch_max(seq, Ordering::Relaxed);
                    }
                }
                // Other nodes' connections see the gap in `seq` and resynchronise.
                Err(RecvError::Lagged(skipped)) => {
                    tracing::warn!(skipped, game = %id, "the relay fell behind its room");
                }
                Err(RecvError::Closed) => {
                    // A room that closes for a shutdown or a lost lease said so; one that
                    // stopped otherwise (a panic) leaves a game that lives on elsewhere.
                    if !closing {
                        publish(&cluster, id, &end_of(&store, id).await).await;
                    }
                    break;
                }
            },
        }
    }
}

/// What to tell other nodes when a room stopped without saying why: `Ended` if the game
/// is no longer live, or else that it moves (its connections reconnect and find it).
async fn end_of(store: &Store, id: uuid::Uuid) -> Published {
    match store.lease_holder(id).await {
        Ok(None) => Published::Ended,
        Ok(Some(_)) | Err(_) => Published::TakenOver,
    }
}

/// Subscribes to game `id`'s request subject and waits until NATS has the subscription.
pub async fn listen(cluster: &Cluster, id: uuid::Uuid) -> Result<Subscriber, RoomError> {
    let requests = cluster.nats.subscribe(requests_subject(id)).await;
    let requests = requests.map_err(|error| {
        tracing::error!(%error, game = %id, "cannot listen for other nodes' requests");
        RoomError::ShuttingDown
    })?;
    if !cluster.flush().await {
        tracing::error!(game = %id, "NATS does not confirm a subscription");
        return Err(RoomError::ShuttingDown);
    }
    Ok(requests)
}

/// Publishes to other nodes, within [`NATS_WAIT`]. An update lost here (NATS is away) is
/// found missing by the stand-ins' checks of the published `seq`.
async fn publish(cluster: &Cluster, id: uuid::Uuid, published: &Published) {
    let (headers, payload) = published.encode();
    let subject = updates_subject(id);
    let sent = cluster.nats.publish_with_headers(subject, headers, payload);
    match tokio::time::timeout(NATS_WAIT, sent).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => {
            tracing::warn!(%error, game = %id, "cannot publish an update to other nodes")
        }
        Err(_) => tracing::warn!(game = %id, "NATS took too long to take an update"),
    }
}

/// Starts answering one request. Requests are answered in their own tasks so that a slow
/// one (a join waiting on the database) never holds up the room's updates; the order
/// that matters (one connection's commands) is kept by the caller, who waits for each.
fn answer_later(
    cluster: &Cluster,
    room: &RoomHandle,
    published_seq: &Arc<AtomicU64>,
    message: async_nats::Message,
) {
    let request = serde_json::from_slice::<ToOwner>(&message.payload);
    let (cluster, room, published_seq) = (cluster.clone(), room.clone(), published_seq.clone());
    tokio::spawn(async move {
        let outcome = match request {
            Ok(ToOwner::Relay(RelayQuestion::PublishedSeq)) => Ok(Answer::Seq {
                seq: published_seq.load(Ordering::Relaxed),
            }),
            // A disconnection is told, not asked.
            Ok(ToOwner::Room(request)) if message.reply.is_none() => {
                room.tell(request).await;
                return;
            }
            Ok(ToOwner::Room(request)) => room.ask::<Answer>(request).await,
            Err(error) => {
                tracing::error!(%error, "a node sent a request this node cannot read");
                Err(RoomError::Internal)
            }
        };
        let Some(reply_to) = message.reply else {
            return;
        };
        let payload = serde_json::to_vec(&FromOwner::from(outcome)).expect("serializable");
        let sent = cluster.nats.publish(reply_to, payload.into());
        match tokio::time::timeout(NATS_WAIT, sent).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%error, "cannot answer another node's request"),
            Err(_) => tracing::warn!("NATS took too long to take an answer"),
        }
    });
}
