//! A game owned by another node, as this node's connections and REST handlers see it.
//!
//! A [`RemoteRoom`] stands in the room registry where a local room would, behind the same
//! [`RoomHandle`], so nothing that talks to rooms knows the difference. Each request it
//! receives goes to the owner as one NATS request (answered by the owner's relay); the
//! owner's updates arrive on the game's update subject and are re-broadcast here, once
//! for every local connection. When the owner stops answering, is replaced, or the game
//! ends, the stand-in closes its connections (they reconnect and find the new owner)
//! and leaves the registry.
//!
//! NATS delivers at most once: an update published while NATS reconnects is lost, and a
//! client waiting for its turn would wait forever. So a stand-in that has connections
//! and heard nothing for [`QUIET_CHECK`], or whose NATS connection was just made again,
//! asks the owner for the `seq` of the last update it published; if that is further than
//! what came through, its connections are told ([`Outgoing::seq_check`]) and those that
//! are behind catch up from the owner.

use crate::cluster::{Cluster, NATS_WAIT, requests_subject, updates_subject};
use crate::metrics::Metrics;
use crate::rooms::actor::BROADCAST_CAPACITY;
use crate::rooms::error::RoomError;
use crate::rooms::registry::RoomRegistry;
use crate::rooms::{Expected, Mail, Outgoing, Reply, Request, RoomHandle};
use crate::wire::nats::{FromOwner, Published, RelayQuestion, ToOwner};
use async_nats::{RequestErrorKind, Subscriber};
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// A stand-in with no connection and no request for this long leaves memory.
const IDLE_UNLOAD: Duration = Duration::from_secs(60);
/// A stand-in with connections that heard no update for this long checks that it missed
/// none: the longest a client waits for an update NATS lost, once NATS is back.
pub const QUIET_CHECK: Duration = Duration::from_secs(2);
/// How long after NATS is back a stand-in checks: every node reconnects at about the
/// same moment, and an owner whose subscriptions NATS does not have yet answers nothing.
const RECONNECT_GRACE: Duration = Duration::from_millis(500);
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
    /// The highest `seq` relayed to the local connections, and when anything last came.
    relayed_seq: Option<u64>,
    last_heard: Instant,
    /// The owner's answers to this stand-in's checks of the published `seq`.
    checked: mpsc::UnboundedSender<Option<u64>>,
    checking: bool,
    /// Which game the stand-in reaches: a live one, or a finished one in its owner's
    /// post-game stay.
    reaching: Reaching,
}

/// What a stand-in reaches on the owner's node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reaching {
    /// A live game: an owner that stops answering moved it, and its connections
    /// reconnect to find where.
    LiveGame,
    /// A finished game's room, up for its post-game stay (chat, rematch). An owner
    /// that stops answering closed it, or stopped: either way the game is over, and
    /// there is nowhere to reconnect to.
    FinishedGame,
}

/// Starts a stand-in for game `id` and registers it.
pub async fn spawn(
    rooms: &RoomRegistry,
    cluster: &Cluster,
    id: Uuid,
    reaching: Reaching,
) -> Result<RoomHandle, RoomError> {
    let subscription = cluster
        .nats
        .subscribe(updates_subject(id))
        .await
        .map_err(|error| {
            tracing::warn!(%error, game = %id, "cannot subscribe to a game's updates");
            RoomError::ShuttingDown
        })?;
    // The owner must see the subscription before it is asked anything, or an update it
    // publishes just after its answer could miss this node.
    if !cluster.flush().await {
        return Err(RoomError::ShuttingDown);
    }
    let (sender, requests) = mpsc::channel(QUEUE);
    let updates = broadcast::channel(BROADCAST_CAPACITY).0;
    let handle = RoomHandle::remote(id, sender, &updates);
    let (owner_lost, lost) = mpsc::unbounded_channel();
    let (checked, checks) = mpsc::unbounded_channel();
    let room = RemoteRoom {
        id,
        cluster: cluster.clone(),
        updates,
        owner_lost,
        stopped: CancellationToken::new(),
        last_used: Instant::now(),
        metrics: rooms.metrics().clone(),
        relayed_seq: None,
        last_heard: Instant::now(),
        checked,
        checking: false,
        reaching,
    };
    rooms.insert(handle.clone());
    rooms.metrics().stand_ins.inc();
    let (registry, registered) = (rooms.clone(), handle.clone());
    let heard = Heard {
        published: subscription,
        owner_lost: lost,
        checks,
    };
    rooms.tasks.spawn(async move {
        room.run(requests, heard, registry.shutdown.clone()).await;
        registry.remove_handle(&registered);
        registry.metrics().stand_ins.dec();
    });
    tracing::debug!(game = %id, "reaching a game owned by another node");
    Ok(handle)
}

/// What a stand-in hears besides its requests.
struct Heard {
    /// The owner's updates.
    published: Subscriber,
    /// Told by a request's task that the owner did not answer.
    owner_lost: mpsc::UnboundedReceiver<()>,
    /// The owner's answers to checks of the published `seq` (None: no answer).
    checks: mpsc::UnboundedReceiver<Option<u64>>,
}

impl RemoteRoom {
    async fn run(
        mut self,
        mut requests: mpsc::Receiver<Mail>,
        mut heard: Heard,
        shutdown: CancellationToken,
    ) {
        let mut idle_check = tokio::time::interval(IDLE_UNLOAD / 4);
        let mut quiet_check = tokio::time::interval(QUIET_CHECK);
        let mut reconnections = self.cluster.reconnections.clone();
        reconnections.mark_unchanged();
        let stop = loop {
            tokio::select! {
                request = requests.recv() => match request {
                    Some(Mail::Unload) => break Stop::Reconnect,
                    // The owner's supervisor checks the owner's room.
                    Some(Mail::CheckStoredSeq(_)) => {}
                    Some(Mail::Request(request, reply)) => self.forward(*request, reply),
                    None => break Stop::Idle,
                },
                message = heard.published.next() => match message.map(|m| Published::decode(m.headers.as_ref(), m.payload)) {
                    Some(Ok(Published::Update(outgoing))) => {
                        if self.relay(outgoing) {
                            break Stop::Reconnect;
                        }
                    }
                    Some(Ok(Published::Ended)) => break Stop::Ended,
                    Some(Ok(Published::TakenOver)) | None => break Stop::Reconnect,
                    Some(Err(error)) => tracing::error!(%error, "an update this node cannot read"),
                },
                Some(()) = heard.owner_lost.recv() => break match self.reaching {
                    Reaching::LiveGame => Stop::Reconnect,
                    Reaching::FinishedGame => Stop::Ended,
                },
                Some(checked) = heard.checks.recv() => self.on_checked(checked),
                _ = quiet_check.tick() => if self.quiet() { self.check_published_seq(Duration::ZERO) },
                Ok(()) = reconnections.changed() => self.check_published_seq(RECONNECT_GRACE),
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
        while let Some(mail) = requests.recv().await {
            if let Mail::Request(_, reply) = mail {
                reply.send(Err(RoomError::ShuttingDown));
            }
        }
        tracing::debug!(game = %self.id, "stopped reaching a game owned by another node");
    }

    fn idle(&self) -> bool {
        self.updates.receiver_count() == 0 && self.last_used.elapsed() >= IDLE_UNLOAD
    }

    /// Passes an update of the owner on to the local connections; true when it closes
    /// them (the owner is stopping).
    fn relay(&mut self, outgoing: Arc<Outgoing>) -> bool {
        self.last_heard = Instant::now();
        if outgoing.seq > self.relayed_seq {
            self.relayed_seq = outgoing.seq;
        }
        let closing = outgoing.closing;
        let _ = self.updates.send(outgoing);
        closing
    }

    /// Whether connections have heard nothing from the owner for a while.
    fn quiet(&self) -> bool {
        self.updates.receiver_count() > 0 && self.last_heard.elapsed() >= QUIET_CHECK
    }

    /// Asks the owner, in a task of its own and after `delay`, which `seq` it last
    /// published. A check that gets no answer proves nothing (the owner's subscriptions
    /// may not be back yet): the next quiet tick asks again, and an owner that is gone is
    /// found by the requests that need it, or replaced by a node that says so.
    fn check_published_seq(&mut self, delay: Duration) {
        if self.checking || self.updates.receiver_count() == 0 {
            return;
        }
        self.checking = true;
        let question = ToOwner::Relay(RelayQuestion::PublishedSeq);
        let payload = serde_json::to_vec(&question).expect("serializable");
        let (nats, subject) = (self.cluster.nats.clone(), requests_subject(self.id));
        let checked = self.checked.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let seq = match nats.request(subject, payload.into()).await {
                Ok(message) => match serde_json::from_slice(&message.payload) {
                    Ok(FromOwner::Answer(answer)) => u64::from_answer(*answer),
                    _ => None,
                },
                Err(error) => {
                    tracing::debug!(%error, "cannot check a game's published seq");
                    None
                }
            };
            let _ = checked.send(seq);
        });
    }

    /// The owner published up to `checked`: connections behind it catch up. Before the
    /// first update came through, the stand-in cannot tell what its connections got in
    /// their hellos' catch-ups, so they are told all the same and each compares.
    fn on_checked(&mut self, checked: Option<u64>) {
        self.checking = false;
        // Without an answer, the next quiet tick asks again.
        let Some(seq) = checked else {
            return;
        };
        self.last_heard = Instant::now();
        if Some(seq) <= self.relayed_seq {
            return;
        }
        if let Some(relayed) = self.relayed_seq {
            tracing::info!(game = %self.id, seq, relayed, "updates were lost on their way here; connections catch up");
            self.metrics.cluster_event("lost_updates_found");
        }
        self.relayed_seq = Some(seq);
        let _ = self.updates.send(Arc::new(Outgoing::seq_check(seq)));
    }

    /// Local connections close with 1012 and come back to whichever node owns the game.
    fn tell_connections_to_reconnect(&self) {
        let closing = Outgoing::closing("the game moved to another server; reconnect");
        let _ = self.updates.send(Arc::new(closing));
    }

    /// Sends one request to the owner and answers its caller in a task of its own.
    fn forward(&mut self, request: Request, reply: Reply) {
        self.last_used = Instant::now();
        let payload = serde_json::to_vec(&ToOwner::Room(request)).expect("serializable");
        let (nats, subject, lost) = (
            self.cluster.nats.clone(),
            requests_subject(self.id),
            self.owner_lost.clone(),
        );
        let (stopped, metrics) = (self.stopped.clone(), self.metrics.clone());
        let reaching = self.reaching;
        metrics.cluster_event("relayed");
        tokio::spawn(async move {
            if !reply.is_awaited() {
                let told = nats.publish(subject, payload.into());
                if !matches!(tokio::time::timeout(NATS_WAIT, told).await, Ok(Ok(()))) {
                    tracing::warn!("cannot tell the owner of a game");
                }
                return;
            }
            let asked = tokio::select! {
                asked = nats.request(subject, payload.into()) => asked,
                () = stopped.cancelled() => {
                    reply.send(Err(RoomError::ShuttingDown));
                    return;
                }
            };
            let outcome = match asked {
                Ok(message) => match serde_json::from_slice::<FromOwner>(&message.payload) {
                    Ok(answered) => answered.into(),
                    Err(error) => {
                        tracing::error!(%error, "an answer this node cannot read");
                        Err(RoomError::Internal)
                    }
                },
                Err(error) => {
                    let unreachable = matches!(
                        error.kind(),
                        RequestErrorKind::NoResponders | RequestErrorKind::TimedOut
                    );
                    if unreachable {
                        metrics.cluster_event("owner_unreachable");
                        let _ = lost.send(());
                    }
                    match reaching {
                        // Its post-game stay is over: there is no room to reconnect to.
                        Reaching::FinishedGame if unreachable => Err(RoomError::NotFound(
                            "this game has ended and its room is closed",
                        )),
                        _ => {
                            tracing::warn!(%error, "the owner of a game did not answer");
                            Err(RoomError::ShuttingDown)
                        }
                    }
                }
            };
            reply.send(outcome);
        });
    }
}
