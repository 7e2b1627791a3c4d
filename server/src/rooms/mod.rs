//! Live lobbies and games: one actor task per room, reached through a [`RoomHandle`].
//!
//! A room is a lobby that becomes a game when it starts (same id). Its actor owns all of
//! its state; everything else talks to it by message (a [`Request`] of the room contract
//! on an mpsc queue, with a oneshot for its [`Answer`] or [`error::RoomError`]) and
//! listens to its broadcast of updates. One room's load or failure cannot touch
//! another's: they share nothing but the database pool.

pub mod actor;
pub mod chat;
pub mod clocks;
pub mod contract;
pub mod error;
pub mod frames;
pub mod machine;
pub mod moves;
pub mod names;
pub mod outcome;
pub mod outgoing;
pub mod patch;
pub mod registry;
pub mod rematch;
pub mod restore;
pub mod supervisor;
pub mod tenure;
pub mod view;
pub mod writes;

use crate::rooms::error::RoomError;
use crate::rooms::outcome::RatedBotPools;
use carcassonne_bots::BotLevel;
use carcassonne_store::ChatPolicy;
pub use contract::{Answer, Expected, JoinedSeat, Request, Welcomed};
pub use outgoing::{Outgoing, Text};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};
use uuid::Uuid;

/// Where a request's answer goes: nowhere for a request that was told, not asked.
#[derive(Debug)]
pub struct Reply(Option<oneshot::Sender<Result<Answer, RoomError>>>);

impl Reply {
    /// A reply nobody waits for.
    pub fn nobody() -> Reply {
        Reply(None)
    }

    /// Whether anybody waits for the answer.
    pub fn is_awaited(&self) -> bool {
        self.0.is_some()
    }

    /// Gives the asker its answer (or refusal); an asker that stopped waiting no longer
    /// cares.
    pub fn send(self, outcome: Result<Answer, RoomError>) {
        if let Some(sender) = self.0 {
            let _ = sender.send(outcome);
        }
    }
}

/// What a room's queue carries. The request is boxed: the queue allocates its slots 32 at
/// a time, the first 32 with the room, and a request inline (88 bytes) made that first
/// block 3.3 KB of every room, idle ones included.
#[derive(Debug)]
pub enum Mail {
    Request(Box<Request>, Reply),
    /// The room stops where it stands and its connections reconnect: this node no longer
    /// holds the game's lease (cluster mode), so another node decides it now. Never sent
    /// between nodes.
    Unload,
    /// The supervisor read this `seq` for the game in the database: a room found behind
    /// it reads its game again (see `supervisor`). Never sent between nodes.
    CheckStoredSeq(u64),
}

/// How rooms run their games: lobby expiry and the bots that play for seats.
#[derive(Clone, Debug)]
pub struct RoomSettings {
    /// An open lobby with no change for this long is cancelled.
    pub lobby_idle_timeout: Duration,
    /// How long a bot that holds a seat thinks about a move (never more than a quarter
    /// of a turn's allowance).
    pub bot_think: Duration,
    /// The bot that plays timed-out turns, abandoned and resigned seats.
    pub stand_in_bot: BotLevel,
    /// How long that stand-in thinks about a move.
    pub stand_in_think: Duration,
    /// The pools whose rated lobbies may seat bots.
    pub rated_bot_pools: RatedBotPools,
    /// How long a finished game's room stays for its players (post-game chat, rematch).
    pub post_game: Duration,
    /// How long a game waits untouched, a human to move, before its room lets go of
    /// the engine's game and replays it when next needed (see `machine::rest`).
    pub rest_after: Duration,
    /// How long a rematch offer waits for every player's answer.
    pub rematch_offer: Duration,
}

impl Default for RoomSettings {
    fn default() -> RoomSettings {
        RoomSettings {
            lobby_idle_timeout: Duration::from_secs(3600),
            bot_think: Duration::from_millis(1000),
            stand_in_bot: BotLevel::Greedy,
            stand_in_think: Duration::from_millis(200),
            rated_bot_pools: RatedBotPools::default(),
            post_game: Duration::from_secs(120),
            rematch_offer: Duration::from_secs(60),
            rest_after: Duration::from_secs(1),
        }
    }
}

/// A client's subscription: what to send first, then the live broadcast.
#[derive(Debug)]
pub struct Connected {
    pub seat: Option<u8>,
    pub catch_up: Vec<Arc<Outgoing>>,
    /// Who may write in the chat now.
    pub chat: ChatPolicy,
    pub updates: broadcast::Receiver<Arc<Outgoing>>,
}

/// A handle to a room's actor, or to the stand-in for a room another node owns.
#[derive(Clone, Debug)]
pub struct RoomHandle {
    pub id: Uuid,
    sender: mpsc::Sender<Mail>,
    /// The room's broadcast, held weakly: it closes when the room stops, which is how
    /// its connections learn that it did.
    updates: broadcast::WeakSender<Arc<Outgoing>>,
    remote: bool,
    /// Set by the room once its game has ended (it stays a while after a finish).
    ended: Arc<AtomicBool>,
}

impl RoomHandle {
    pub fn new(
        id: Uuid,
        sender: mpsc::Sender<Mail>,
        updates: &broadcast::Sender<Arc<Outgoing>>,
    ) -> RoomHandle {
        RoomHandle {
            id,
            sender,
            updates: updates.downgrade(),
            remote: false,
            ended: Arc::default(),
        }
    }

    /// The same handle, telling whether the room's game has ended by `ended`.
    pub fn ending_with(self, ended: Arc<AtomicBool>) -> RoomHandle {
        RoomHandle { ended, ..self }
    }

    /// Whether the room's game has ended: a finished game's room stays a while for its
    /// players, holding no lease (cluster mode) and deciding nothing of the game.
    pub fn has_ended(&self) -> bool {
        self.ended.load(Ordering::Relaxed)
    }

    /// A handle to a stand-in that relays to the node owning the game (cluster mode).
    pub fn remote(
        id: Uuid,
        sender: mpsc::Sender<Mail>,
        updates: &broadcast::Sender<Arc<Outgoing>>,
    ) -> RoomHandle {
        RoomHandle {
            remote: true,
            ..RoomHandle::new(id, sender, updates)
        }
    }

    /// Whether the game is decided by another node.
    pub fn is_remote(&self) -> bool {
        self.remote
    }

    /// Whether both handles reach the same actor.
    pub fn same_room(&self, other: &RoomHandle) -> bool {
        self.sender.same_channel(&other.sender)
    }

    /// Sends a request and waits for its answer, of the kind the caller expects.
    pub async fn ask<T: Expected>(&self, request: Request) -> Result<T, RoomError> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(Mail::Request(Box::new(request), Reply(Some(reply))))
            .await
            .map_err(|_| RoomError::ShuttingDown)?;
        let answer = answer.await.map_err(|_| RoomError::ShuttingDown)??;
        T::from_answer(answer).ok_or_else(|| {
            tracing::error!("a room answered a request with the wrong kind of answer");
            RoomError::Internal
        })
    }

    /// Says hello for a WebSocket client: its seat, what to send it first, then the live
    /// broadcast. Subscribed before the request leaves, so no update made after the
    /// room's answer can be missed; the connection drops what it already has.
    pub async fn connect(
        &self,
        token_hash: Option<String>,
        invite_code: Option<String>,
        last_seq: Option<u64>,
        last_chat_seq: Option<u64>,
    ) -> Result<Connected, RoomError> {
        let updates = self.updates.upgrade().ok_or(RoomError::ShuttingDown)?;
        let updates = updates.subscribe();
        let request = Request::Connect {
            token_hash,
            invite_code,
            last_seq,
            last_chat_seq,
        };
        let welcomed: Welcomed = self.ask(request).await?;
        Ok(Connected {
            seat: welcomed.seat,
            catch_up: welcomed.catch_up,
            chat: welcomed.chat,
            updates,
        })
    }

    /// Waits until the room's actor has stopped.
    pub async fn closed(&self) {
        self.sender.closed().await
    }

    /// Tells the room to unload without waiting for room in its queue: false when the
    /// queue is full (or the room has stopped).
    pub fn try_unload(&self) -> bool {
        self.sender.try_send(Mail::Unload).is_ok()
    }

    /// Tells the room the `seq` its game has in the database, without waiting for room
    /// in its queue (a full queue is a busy room, checked next time).
    pub fn try_check_stored_seq(&self, stored: u64) {
        let _ = self.sender.try_send(Mail::CheckStoredSeq(stored));
    }

    /// Sends a request whose answer nobody waits for.
    pub async fn tell(&self, request: Request) {
        // A room that has stopped no longer cares.
        let _ = self
            .sender
            .send(Mail::Request(Box::new(request), Reply::nobody()))
            .await;
    }
}
