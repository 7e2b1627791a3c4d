//! Live lobbies and games: one actor task per room, reached through a [`RoomHandle`].
//!
//! A room is a lobby that becomes a game when it starts (same id). Its actor owns all of
//! its state; everything else talks to it by message (an mpsc request with a oneshot
//! reply) and listens to its broadcast of updates. One room's load or failure cannot
//! touch another's: they share nothing but the database pool.

pub mod actor;
pub mod clocks;
pub mod machine;
pub mod names;
pub mod outcome;
pub mod patch;
pub mod tenure;
pub mod view;
pub mod wire;
pub mod writes;

use crate::auth::Token;
use crate::error::AppError;
use crate::rooms::view::LobbyView;
use axum::extract::ws::Utf8Bytes;
use carcassonne_bots::BotLevel;
use carcassonne_core::Move;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};
use uuid::Uuid;

pub type Reply<T> = oneshot::Sender<Result<T, AppError>>;

/// What can be asked of a room.
#[derive(Debug)]
pub enum RoomRequest {
    Join {
        name: String,
        player_id: Option<Uuid>,
        invite_code: Option<String>,
        reply: Reply<JoinedSeat>,
    },
    Leave {
        token_hash: String,
        reply: Reply<()>,
    },
    /// Answered with the started game's lobby, as REST shows it.
    Start {
        token_hash: String,
        randomize_seats: bool,
        reply: Reply<LobbyView>,
    },
    Cancel {
        token_hash: String,
        reply: Reply<()>,
    },
    /// The creator seats a bot.
    AddBot {
        token_hash: String,
        level: BotLevel,
        name: Option<String>,
        reply: Reply<u8>,
    },
    /// The creator frees a bot's seat.
    RemoveBot {
        token_hash: String,
        seat: u8,
        reply: Reply<()>,
    },
    Resign {
        token_hash: String,
        reply: Reply<()>,
    },
    Abort {
        token_hash: String,
        reply: Reply<()>,
    },
    /// A registered player (secret already checked) gets a new token for their seat.
    Reclaim {
        player_id: uuid::Uuid,
        reply: Reply<JoinedSeat>,
    },
    /// A WebSocket client said hello: a player (by token) or a spectator.
    Connect {
        token_hash: Option<String>,
        invite_code: Option<String>,
        last_seq: Option<u64>,
        reply: Reply<Connected>,
    },
    Disconnect {
        token_hash: Option<String>,
    },
    /// A client fell behind the broadcast: what it needs to catch up from `last_seq`.
    Resync {
        token_hash: Option<String>,
        last_seq: Option<u64>,
        reply: Reply<Vec<Arc<Outgoing>>>,
    },
    Command {
        token_hash: String,
        id: String,
        expected_seq: u64,
        mv: Move,
        reply: Reply<u64>,
    },
    /// The room stops where it stands and its connections reconnect: this node no longer
    /// holds the game's lease (cluster mode), so another node decides it now.
    Unload,
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
}

impl Default for RoomSettings {
    fn default() -> RoomSettings {
        RoomSettings {
            lobby_idle_timeout: Duration::from_secs(3600),
            bot_think: Duration::from_millis(1000),
            stand_in_bot: BotLevel::Greedy,
            stand_in_think: Duration::from_millis(200),
        }
    }
}

/// A seat taken (or reclaimed), with the lobby as it stands once the seat is taken: the
/// room holds exactly what it committed, so the REST answer needs no read of the
/// database (two round trips and a snapshot transaction on Postgres, every join).
#[derive(Debug)]
pub struct JoinedSeat {
    pub seat: u8,
    pub token: Token,
    pub lobby: LobbyView,
}

/// A client's subscription: what to send first, then the live broadcast.
#[derive(Debug)]
pub struct Connected {
    pub seat: Option<u8>,
    pub catch_up: Vec<Arc<Outgoing>>,
    pub updates: broadcast::Receiver<Arc<Outgoing>>,
}

/// A message on its way to every connection of a room, serialized once. The player to
/// move gets `for_mover` (with their legal moves), everyone else `for_others`.
#[derive(Debug)]
pub struct Outgoing {
    pub seq: Option<u64>,
    /// The token hash of the player to move after this message, if any.
    pub mover: Option<String>,
    pub for_mover: Utf8Bytes,
    pub for_others: Utf8Bytes,
    /// When seats were renumbered (a started game): each player's new seat by token hash.
    pub reseated: Option<Arc<HashMap<String, u8>>>,
    /// A whole-state snapshot rather than an update: sent even when not newer.
    pub snapshot: bool,
    /// The room is closing (server shutdown): connections should close too.
    pub closing: bool,
    /// Not a message to send: the game stands at `seq`, and a connection that has less
    /// asks for what it missed. A stand-in's check (cluster mode): updates published
    /// while NATS was away are lost, and nothing else would tell a waiting client.
    pub seq_check: bool,
}

impl Outgoing {
    /// The same text for everyone.
    pub fn plain(seq: Option<u64>, text: String) -> Outgoing {
        let text = Utf8Bytes::from(text);
        Outgoing {
            seq,
            mover: None,
            for_mover: text.clone(),
            for_others: text,
            reseated: None,
            snapshot: false,
            closing: false,
            seq_check: false,
        }
    }

    /// The check that tells connections behind `seq` to catch up.
    pub fn seq_check(seq: u64) -> Outgoing {
        let mut check = Outgoing::plain(Some(seq), String::new());
        check.seq_check = true;
        check
    }

    /// A `shutdown` message that closes every connection it reaches (1012): they
    /// reconnect, to this server once it is back or to the game's new owner.
    pub fn closing(message: &str) -> Outgoing {
        let shutdown = crate::protocol::ServerMessage::Shutdown {
            message: message.into(),
        };
        let mut closing = Outgoing::plain(None, shutdown.to_json());
        closing.closing = true;
        closing
    }

    pub fn text_for(&self, token_hash: Option<&str>) -> &Utf8Bytes {
        match (&self.mover, token_hash) {
            (Some(mover), Some(mine)) if mover == mine => &self.for_mover,
            _ => &self.for_others,
        }
    }
}

/// A handle to a room's actor, or to the stand-in for a room another node owns.
#[derive(Clone, Debug)]
pub struct RoomHandle {
    pub id: Uuid,
    sender: mpsc::Sender<RoomRequest>,
    remote: bool,
}

impl RoomHandle {
    pub fn new(id: Uuid, sender: mpsc::Sender<RoomRequest>) -> RoomHandle {
        RoomHandle {
            id,
            sender,
            remote: false,
        }
    }

    /// A handle to a stand-in that relays to the node owning the game (cluster mode).
    pub fn remote(id: Uuid, sender: mpsc::Sender<RoomRequest>) -> RoomHandle {
        RoomHandle {
            id,
            sender,
            remote: true,
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

    /// Sends a request and waits for its reply.
    pub async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> RoomRequest) -> Result<T, AppError> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(make(reply))
            .await
            .map_err(|_| AppError::ShuttingDown)?;
        answer.await.map_err(|_| AppError::ShuttingDown)?
    }

    /// Waits until the room's actor has stopped.
    pub async fn closed(&self) {
        self.sender.closed().await
    }

    /// Sends a request that needs no reply without waiting for room in the queue: false
    /// when the queue is full (or the room has stopped).
    pub fn try_tell(&self, request: RoomRequest) -> bool {
        self.sender.try_send(request).is_ok()
    }

    /// Sends a request that needs no reply.
    pub async fn tell(&self, request: RoomRequest) {
        // A room that has stopped no longer cares.
        let _ = self.sender.send(request).await;
    }
}

/// Every live room of this server, by id.
#[derive(Clone, Debug, Default)]
pub struct Rooms {
    inner: Arc<Mutex<HashMap<Uuid, RoomHandle>>>,
}

impl Rooms {
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
        self.lock().values().filter(|room| !room.remote).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, RoomHandle>> {
        // The map holds no invariant a panicking holder could break, so a poisoned lock
        // is still safe to use.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
