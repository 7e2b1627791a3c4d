//! The owner's side of a game: its relay, one task per room this node owns.
//!
//! The relay answers the requests other nodes send to the game's request subject by
//! asking the local room, exactly as a local connection or REST handler would, and
//! publishes each of the room's updates once on the game's update subject, for every
//! node with connections to the game. The room itself knows nothing of the cluster.

use crate::cluster::wire::{self, Answer, Published, Request};
use crate::cluster::{Cluster, NATS_WAIT, requests_subject, updates_subject};
use crate::error::AppError;
use crate::rooms::{Outgoing, RoomHandle, RoomRequest};
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
pub async fn listen(cluster: &Cluster, id: uuid::Uuid) -> Result<Subscriber, AppError> {
    let requests = cluster.nats.subscribe(requests_subject(id)).await;
    let requests = requests.map_err(|error| {
        tracing::error!(%error, game = %id, "cannot listen for other nodes' requests");
        AppError::ShuttingDown
    })?;
    if !cluster.flush().await {
        tracing::error!(game = %id, "NATS does not confirm a subscription");
        return Err(AppError::ShuttingDown);
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
    let Some(reply_to) = message.reply.clone() else {
        // Only a disconnect needs no answer.
        if let Ok(Request::Disconnect { token_hash }) = serde_json::from_slice(&message.payload) {
            let room = room.clone();
            tokio::spawn(async move { room.tell(RoomRequest::Disconnect { token_hash }).await });
        }
        return;
    };
    let (cluster, room, published_seq) = (cluster.clone(), room.clone(), published_seq.clone());
    tokio::spawn(async move {
        let answer = match serde_json::from_slice::<Request>(&message.payload) {
            Ok(Request::PublishedSeq) => Answer::Seq {
                seq: published_seq.load(Ordering::Relaxed),
            },
            Ok(request) => perform(&room, request).await,
            Err(error) => {
                tracing::error!(%error, "a node sent a request this node cannot read");
                Answer::Refused((&AppError::Internal).into())
            }
        };
        let payload = serde_json::to_vec(&answer).expect("serializable");
        let sent = cluster.nats.publish(reply_to, payload.into());
        match tokio::time::timeout(NATS_WAIT, sent).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%error, "cannot answer another node's request"),
            Err(_) => tracing::warn!("NATS took too long to take an answer"),
        }
    });
}

/// Asks the local room, as the remote caller would have.
async fn perform(room: &RoomHandle, request: Request) -> Answer {
    use RoomRequest as R;
    let outcome = match request {
        Request::Join {
            name,
            player_id,
            invite_code,
        } => room
            .ask(|reply| R::Join {
                name,
                player_id,
                invite_code,
                reply,
            })
            .await
            .map(|joined| Answer::Joined {
                seat: joined.seat,
                token: joined.token.reveal().to_owned(),
                lobby: joined.lobby,
            }),
        Request::Leave { token_hash } => room
            .ask(|reply| R::Leave { token_hash, reply })
            .await
            .map(|()| Answer::Done),
        Request::Start {
            token_hash,
            randomize_seats,
        } => room
            .ask(|reply| R::Start {
                token_hash,
                randomize_seats,
                reply,
            })
            .await
            .map(|lobby| Answer::Lobby { lobby }),
        Request::Cancel { token_hash } => room
            .ask(|reply| R::Cancel { token_hash, reply })
            .await
            .map(|()| Answer::Done),
        Request::AddBot {
            token_hash,
            level,
            name,
        } => room
            .ask(|reply| R::AddBot {
                token_hash,
                level,
                name,
                reply,
            })
            .await
            .map(|seat| Answer::Seat { seat }),
        Request::RemoveBot { token_hash, seat } => room
            .ask(|reply| R::RemoveBot {
                token_hash,
                seat,
                reply,
            })
            .await
            .map(|()| Answer::Done),
        Request::Resign { token_hash } => room
            .ask(|reply| R::Resign { token_hash, reply })
            .await
            .map(|()| Answer::Done),
        Request::Abort { token_hash } => room
            .ask(|reply| R::Abort { token_hash, reply })
            .await
            .map(|()| Answer::Done),
        Request::Reclaim { player_id } => room
            .ask(|reply| R::Reclaim { player_id, reply })
            .await
            .map(|joined| Answer::Joined {
                seat: joined.seat,
                token: joined.token.reveal().to_owned(),
                lobby: joined.lobby,
            }),
        other => perform_connection_request(room, other).await,
    };
    outcome.unwrap_or_else(|error| Answer::Refused((&error).into()))
}

async fn perform_connection_request(
    room: &RoomHandle,
    request: Request,
) -> Result<Answer, AppError> {
    use RoomRequest as R;
    match request {
        // The connection lives on the asking node, which listens to the update subject;
        // the subscription made here for a local connection is not needed.
        Request::Connect {
            token_hash,
            invite_code,
            last_seq,
        } => room
            .ask(|reply| R::Connect {
                token_hash,
                invite_code,
                last_seq,
                reply,
            })
            .await
            .map(|connected| Answer::Connected {
                seat: connected.seat,
                catch_up: wire::updates_of(&connected.catch_up),
            }),
        Request::Disconnect { token_hash } => {
            room.tell(R::Disconnect { token_hash }).await;
            Ok(Answer::Done)
        }
        // Answered by `answer_later` from what the relay published.
        Request::PublishedSeq => Err(AppError::Internal),
        Request::Resync {
            token_hash,
            last_seq,
        } => room
            .ask(|reply| R::Resync {
                token_hash,
                last_seq,
                reply,
            })
            .await
            .map(|updates| Answer::CatchUp {
                updates: wire::updates_of(&updates),
            }),
        Request::Command {
            token_hash,
            id,
            expected_seq,
            mv,
        } => room
            .ask(|reply| R::Command {
                token_hash,
                id,
                expected_seq,
                mv,
                reply,
            })
            .await
            .map(|seq| Answer::Seq { seq }),
        _ => unreachable!("lobby requests are performed by `perform`"),
    }
}
