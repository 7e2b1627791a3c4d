//! The room actor: the thin async shell around a [`RoomMachine`].
//!
//! One task per room owns the machine, so there are no races between players. A request
//! that changes the room is decided by the machine (a [`Change`], or a typed refusal
//! that leaves everything as it was); the shell writes the change to the database, and
//! only then has the machine apply it and broadcasts the update. A failed write leaves
//! the room exactly as it was and the client is told to try again.
//!
//! **One write at a time, reads never wait.** At most one database operation is in flight
//! per room. While it is, requests that change the room wait in order behind it, but
//! hellos, catch-ups and disconnections are answered at once from what the room has
//! committed: a spectator never waits for the database, even while it is away.
//!
//! **Nothing unproved is told.** A write whose outcome is unknown (the connection broke
//! around the COMMIT, or the database stopped answering) is settled by reading back what
//! is stored at its `seq` (see [`writes`]): it is applied only if the stored move is this
//! very command and the game is still this node's. If that cannot be told yet, the change
//! is kept as unconfirmed and settled before the room writes anything else. In cluster
//! mode a room refuses nothing from memory (a stale `seq`, a move out of turn) unless its
//! [`Tenure`] says that no other node can have changed the game; when it cannot say, the
//! room asks for a renewal of the lease first. A room that finds its game lost stops, and
//! its clients reconnect to the node that owns the game now (close 1012).
//!
//! Time is handled here too, as ordinary work: the shell's `select!` sleeps until the
//! machine's next wakeup (a turn's deadline or a lobby's expiry), and waits for the bot
//! thinking about the seat to move. Bots think on the [`BotPool`]'s threads, never on the
//! async runtime, and their moves go through the same decide, write, apply path as a
//! player's. Once the room has ended it stops: nothing that can no longer change stays in
//! memory.

use crate::admission::Slot;
use crate::auth::Token;
use crate::bots::BotPool;
use crate::clock::now_millis;
use crate::metrics::Metrics;
use crate::rooms::chat::{ChatWrite, MuteChange, RECENT_CHAT};
use crate::rooms::error::RoomError;
use crate::rooms::machine::{BotJob, Change, Decision, RoomMachine, StartDraw};
use crate::rooms::registry::RoomOpener;
use crate::rooms::rematch::{RematchLobby, RematchStep};
use crate::rooms::tenure::{Confirmed, Tenure};
use crate::rooms::view::{self, LobbyView};
use crate::rooms::writes::{self, Attempt, Attempting, Landing};
use crate::rooms::{Answer, JoinedSeat, Mail, Outgoing, Reply, Request, RoomSettings, Welcomed};
use carcassonne_core::Move;
use carcassonne_store::ratings::RatingChange;
use carcassonne_store::{
    ChatEntryRow, ChatRead, LiveGame, LobbyRow, LobbyStatus, SeatRow, Store, StoreError,
};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

/// Capacity of the broadcast; a client further behind is resynchronised. Its slots are
/// allocated up front, about 40 bytes each: at 1,024 they were most of an idle room's
/// memory, for a backlog that a game's few messages a second never build. At 16 a
/// connection starved of CPU for a moment fell behind (presence and chat frames count
/// too), and on a node that stands in for the owner its resync must reach the owner,
/// which a node fault may have taken away (the cluster soak test failed once so, a
/// game's end never reaching two of its clients).
pub const BROADCAST_CAPACITY: usize = 128;
/// After a failed write of a change nobody asked for (a bot's move, a timeout's
/// consequence, an expiry), or a failed settling or reloading, how long the room waits
/// before trying again; doubled after each failure in a row, up to [`LONGEST_PAUSE`].
const RETRY_PAUSE: Duration = Duration::from_secs(1);
/// The longest pause between tries while the database stays away: once it is back, a
/// game nobody touches goes on within this.
const LONGEST_PAUSE: Duration = Duration::from_secs(4);
/// How many changing requests may wait behind a write before the room stops taking
/// requests (and senders wait on its queue instead).
const MOST_WAITING: usize = 256;

/// A bot's answer, with the job it answers.
type Thinking = Pin<Box<dyn Future<Output = (BotJob, Option<Move>)> + Send>>;

/// The room's one database operation in progress.
type InFlight = Pin<Box<dyn Future<Output = Done> + Send>>;

/// Work that may change the room, in the order it came.
#[derive(Debug)]
enum Work {
    /// A request, with the instant by which it must be answered.
    Request(Request, Reply, Instant),
    /// The bot's move for the seat to move, if it found one (the job boxed: its view of
    /// the game is large, and requests wait in this queue far more often).
    BotAnswer(Box<BotJob>, Option<Move>),
}

impl Work {
    /// Whether this work may be refused from memory, so that the room must be sure of its
    /// game first. A bot's move only ever writes, and the database fences writes.
    fn refuses_from_memory(&self) -> bool {
        matches!(self, Work::Request(..))
    }
}

/// Who waits for a write, and what they are told once it is written.
#[derive(Debug)]
enum Waiter {
    /// A change nobody asked for: an expiry, an abandoned or reclaimed seat, a bot's move.
    Nobody,
    Joined {
        reply: Reply,
        token: Token,
        seat: u8,
    },
    Seat {
        reply: Reply,
        seat: u8,
    },
    Done(Reply),
    Lobby(Reply),
    Command {
        reply: Reply,
        started: Instant,
        /// The command itself, decided again if the room must first reload its game:
        /// its one true answer is the reloaded game's.
        retry: Box<Request>,
        answer_by: Instant,
    },
}

/// What became of a write.
#[derive(Debug)]
enum Written {
    /// Written; with the rating changes the store announced with it, if it did.
    Yes(Option<Vec<RatingChange>>),
    /// This attempt was certainly not written.
    No(RoomError),
    /// Not known yet: it may still land, so it is settled before the next write.
    Unknown,
    /// Another change holds its `seq`: the room's memory is behind the database, and
    /// the room reads its game again from the log.
    Stale,
    /// The game is another node's now.
    Lost,
}

impl From<Attempt> for Written {
    fn from(attempt: Attempt) -> Written {
        match attempt {
            Attempt::Written(announced) => Written::Yes(announced),
            Attempt::Refused(error) => Written::No(error),
            // What else it wrote is read again (see `Room::announce_ratings_after`).
            Attempt::ReplyLost(Landing::Mine) | Attempt::SeqTaken(Landing::Mine) => {
                Written::Yes(None)
            }
            // A late COMMIT may still show.
            Attempt::ReplyLost(Landing::NotStored | Landing::Unknown) | Attempt::TimedOut => {
                Written::Unknown
            }
            Attempt::ReplyLost(Landing::Superseded) => Written::Stale,
            // A conflict says the room's memory disagrees with the database, whatever
            // the read-back could tell: the log decides.
            Attempt::SeqTaken(Landing::NotStored | Landing::Superseded | Landing::Unknown) => {
                Written::Stale
            }
            Attempt::ReplyLost(Landing::Lost) | Attempt::SeqTaken(Landing::Lost) => Written::Lost,
            Attempt::Fenced => Written::Lost,
        }
    }
}

/// A finished database operation.
enum Done {
    Write {
        change: Change,
        written: Written,
        waiter: Waiter,
    },
    /// An unconfirmed change, written again (see [`writes`]).
    Settle { change: Change, written: Written },
    /// The game as the database holds it, read to replace the room's memory of it.
    Reloaded(Result<Option<LiveGame>, StoreError>),
    /// The lease, renewed to tell whether the game is still this node's.
    Confirm(Confirmed),
    /// The rating changes of the rated game that ended, read back after its write's
    /// outcome was settled.
    RatingsRead(Result<Vec<RatingChange>, StoreError>),
    /// A chat entry's write.
    Chat {
        write: ChatWrite,
        outcome: Result<(), StoreError>,
        reply: Reply,
    },
    /// A mute's write.
    Mute {
        change: MuteChange,
        outcome: Result<(), StoreError>,
        reply: Reply,
    },
    /// The chat entries stored after the room's last, read back after a chat write
    /// went wrong.
    ChatReadBack(Result<Vec<ChatEntryRow>, StoreError>),
    /// A rematch's lobby, written (and started) or not.
    Rematch {
        formed: Box<RematchLobby>,
        last_to_accept: u8,
        outcome: Result<(), StoreError>,
        reply: Reply,
    },
}

/// Why a room stops before its game has ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    ShuttingDown,
    /// Another node decides the game now (cluster mode).
    LeaseLost,
}

pub struct Room {
    machine: RoomMachine,
    store: Store,
    metrics: Arc<Metrics>,
    bots: BotPool,
    opener: RoomOpener,
    tenure: Tenure,
    updates: broadcast::Sender<Arc<Outgoing>>,
    /// A change written with an unknown outcome, to settle before the next write.
    unconfirmed: Option<Change>,
    /// Set when the room's memory is found behind the database: its game is read again
    /// from the log before anything else is decided.
    stale: bool,
    /// The `seq` at which the room last read its game from the database.
    read_from_database_at: Option<u64>,
    /// How long the room takes at most to answer a request: the store's operation
    /// timeout (the database's acquire timeout and a second).
    answer_within: Duration,
    /// While the lobby is open: its place among the open lobbies its creator may hold.
    open_lobby_place: Option<Slot>,
    /// No unrequested change is tried before this, after one failed.
    retry_at: Option<Instant>,
    /// Failures in a row of the room's own writes, settlings and reloads: the pause
    /// before the next try grows with them, and only the first is logged as a warning.
    failures: u32,
    in_flight: Option<InFlight>,
    /// Work waiting for the operation in flight, oldest first.
    waiting: VecDeque<Work>,
    /// Set when the room must stop once its operation in flight is done.
    stopping: Option<Stop>,
    /// Set once the game has ended, for whoever holds the room's handle.
    ended: Arc<AtomicBool>,
}

/// What a room needs besides its own rows.
#[derive(Clone, Debug)]
pub struct RoomServices {
    pub store: Store,
    pub metrics: Arc<Metrics>,
    pub bots: BotPool,
    pub settings: RoomSettings,
    /// How a room has another opened (a rematch).
    pub opener: RoomOpener,
}

impl Room {
    /// A freshly created lobby.
    pub fn open(lobby: LobbyRow, seats: Vec<SeatRow>, services: RoomServices) -> Room {
        let machine = RoomMachine::open(lobby, seats, services.settings.clone(), now_millis());
        Room::around(machine, services)
    }

    /// Brings an unfinished lobby or game back from the database by replaying its log.
    pub fn restore(live: LiveGame, services: RoomServices) -> Result<Room, String> {
        let machine = RoomMachine::restore(live, services.settings.clone(), now_millis())?;
        Ok(Room::around(machine, services))
    }

    fn around(machine: RoomMachine, services: RoomServices) -> Room {
        let machine_ended = machine.ended();
        let answer_within = services.store.operation_timeout();
        Room {
            machine,
            store: services.store,
            metrics: services.metrics,
            bots: services.bots,
            opener: services.opener,
            tenure: Tenure::alone(),
            updates: broadcast::channel(BROADCAST_CAPACITY).0,
            unconfirmed: None,
            stale: false,
            read_from_database_at: None,
            answer_within,
            open_lobby_place: None,
            retry_at: None,
            failures: 0,
            in_flight: None,
            waiting: VecDeque::new(),
            stopping: None,
            ended: Arc::new(AtomicBool::new(machine_ended)),
        }
    }

    /// Set once the game has ended: what the room's handle tells.
    pub fn ended_flag(&self) -> Arc<AtomicBool> {
        self.ended.clone()
    }

    /// The room's broadcast of updates: what its handle subscribes connections to, and
    /// how the cluster's relay hears the room it publishes for other nodes.
    pub fn updates(&self) -> &broadcast::Sender<Arc<Outgoing>> {
        &self.updates
    }

    /// Keeps `place` while the lobby takes seats; it is given back when the game starts
    /// or the lobby is cancelled.
    pub fn hold_open_lobby_place(&mut self, place: Slot) {
        self.open_lobby_place = Some(place);
    }

    /// Decides the game under `tenure`: a cluster node's lease on it.
    pub fn hold_tenure(&mut self, tenure: Tenure) {
        self.tenure = tenure;
    }

    pub fn id(&self) -> uuid::Uuid {
        self.machine.id()
    }

    /// Handles requests, deadlines and bot answers until the room ends, the server shuts
    /// down or (cluster mode) the game is found to be another node's. The room comes
    /// boxed: an async fn holds an argument it takes by value twice (as it came, and
    /// moved into the body), and a room is 2.4 KB.
    pub async fn run(
        mut self: Box<Self>,
        mut requests: mpsc::Receiver<Mail>,
        shutdown: CancellationToken,
    ) {
        let mut thinking: Option<(u64, Thinking)> = None;
        // Waited on across the loop's turns rather than made again at each: every room and
        // connection shares one token, and each new wait registers with it under a lock.
        let shutdown = shutdown.cancelled_owned();
        tokio::pin!(shutdown);
        loop {
            self.take_up_waiting_work();
            if self.in_flight.is_none() {
                if let Some(stop) = self.stopping {
                    self.stop_now(stop);
                    break;
                }
                if self.machine.done_with_post_game(now_millis()) {
                    self.drain(&mut requests).await;
                    break;
                }
            }
            // An answer to an older state is of no use any more.
            thinking = thinking.filter(|(seq, _)| *seq == self.machine.seq());
            let idle = self.idle();
            if idle && thinking.is_none() {
                thinking = self.start_thinking();
            }
            let wakeup = self.wakeup_in().filter(|_| idle);
            let rest_after = self.machine.settings().rest_after;
            let settled = self.unconfirmed.is_none() && !self.stale;
            let may_rest = idle && settled && thinking.is_none() && self.machine.may_rest();
            let taking = self.stopping.is_none() && self.waiting.len() < MOST_WAITING;
            let overdue_at = self.first_answer_due();
            tokio::select! {
                done = async { self.in_flight.as_mut().expect("guarded").await },
                    if self.in_flight.is_some() => {
                    self.in_flight = None;
                    self.finish(done);
                }
                request = requests.recv(), if taking => match request {
                    Some(request) => {
                        self.receive(request);
                        // Started now, its write is under way one turn of the loop sooner.
                        self.take_up_waiting_work();
                    }
                    None => self.stopping = Some(Stop::ShuttingDown),
                },
                () = &mut shutdown, if self.stopping.is_none() => {
                    self.stopping = Some(Stop::ShuttingDown);
                }
                (job, answer) = async { thinking.as_mut().expect("guarded").1.as_mut().await },
                    if idle && thinking.is_some() => {
                    thinking = None;
                    self.waiting.push_back(Work::BotAnswer(Box::new(job), answer));
                }
                // Made only when polled: most turns of the loop cannot rest.
                () = async { tokio::time::sleep(rest_after).await }, if may_rest => {
                    if self.machine.rest() {
                        self.metrics.resting_games.inc();
                    }
                }
                // A request waiting behind a slow operation is told to try again when its
                // time to be answered is up, whatever the operation is doing.
                () = tokio::time::sleep_until(overdue_at.unwrap_or_else(Instant::now).into()),
                    if overdue_at.is_some() => self.refuse_overdue(),
                _ = tokio::time::sleep(wakeup.unwrap_or_default()), if wakeup.is_some() => {
                    if !self.wake_game() {
                        continue;
                    }
                    let now = now_millis();
                    self.machine.time_out(now);
                    if let Some(expired) = self.machine.expire_rematch(now) {
                        let _ = self.updates.send(expired);
                    }
                }
            }
        }
        if self.machine.is_resting() {
            self.metrics.resting_games.dec();
        }
        tracing::info!(status = ?self.machine.status(), seq = self.machine.seq(), "room unloaded");
    }

    /// Whether the room has nothing to do but wait: no operation in flight and no work.
    fn idle(&self) -> bool {
        self.in_flight.is_none() && self.waiting.is_empty() && self.stopping.is_none()
    }

    /// Takes up waiting work, then what is due, until an operation is in flight or there
    /// is nothing left to do.
    fn take_up_waiting_work(&mut self) {
        self.refuse_overdue();
        while self.in_flight.is_none() && self.stopping.is_none() {
            if let Some(work) = self.waiting.pop_front() {
                self.take_up(work);
                continue;
            }
            if self.paused() {
                return;
            }
            // Memory is put right as soon as the room is free, not only when someone
            // asks: a game nobody touches would otherwise stay behind the database.
            if self.unconfirmed.is_some() && self.wake_game() {
                let unconfirmed = self.unconfirmed.take().expect("checked");
                self.start_settling(unconfirmed);
                return;
            }
            if self.stale {
                self.start_reloading();
                return;
            }
            let Some(change) = self.machine.due_change(now_millis()) else {
                return;
            };
            if !self.wake_game() {
                return;
            }
            let deadline = Instant::now() + self.answer_within;
            self.start_write(change, Waiter::Nobody, deadline);
        }
    }

    /// Decides `work`, once nothing stands between the room's memory and the truth: an
    /// unconfirmed change is settled first, and (cluster mode) a doubtful lease renewed.
    fn take_up(&mut self, work: Work) {
        if let Some(unconfirmed) = self.unconfirmed.take() {
            self.waiting.push_front(work);
            self.start_settling(unconfirmed);
        } else if self.stale {
            self.waiting.push_front(work);
            self.start_reloading();
        } else if work.refuses_from_memory()
            && !self.machine.ended()
            && !self.tenure.trusted(self.id())
        {
            self.waiting.push_front(work);
            self.start_confirming();
        } else {
            self.decide(work);
        }
    }

    /// Takes mail in.
    fn receive(&mut self, mail: Mail) {
        match mail {
            Mail::Request(request, reply)
                if self.machine.answers_at_rest(&request) || self.wake_game() =>
            {
                self.take_in(*request, reply)
            }
            Mail::Request(_, reply) => reply.send(Err(RoomError::Internal)),
            Mail::Unload => self.lose_game(),
            Mail::CheckStoredSeq(stored) => self.check_stored_seq(stored),
        }
    }

    /// The supervisor read `stored` as the game's `seq` in the database. A room with
    /// nothing in flight and nothing unsettled is at least there (it writes one change
    /// at a time and applies each once committed), so a room behind it lost track of a
    /// write: it reloads its game from the log. This never happens while writes are
    /// settled as they must be; the metric says if it does.
    fn check_stored_seq(&mut self, stored: u64) {
        let settled = self.in_flight.is_none() && self.unconfirmed.is_none() && !self.stale;
        if settled && stored > self.machine.seq() {
            tracing::error!(
                stored,
                seq = self.machine.seq(),
                "the room is behind the database; reloading its game from the log"
            );
            self.metrics
                .room_reloads
                .with_label_values(&["supervisor"])
                .inc();
            self.stale = true;
        }
    }

    /// Rebuilds a resting room's game before work that needs it reaches the machine (all
    /// but what it [answers at rest](RoomMachine::answers_at_rest)). False when its
    /// log does not replay: the room cannot trust its memory and stops, its connections
    /// told to reconnect.
    fn wake_game(&mut self) -> bool {
        match self.machine.wake() {
            Ok(woke) => {
                if woke {
                    self.metrics.resting_games.dec();
                }
                true
            }
            Err(error) => {
                tracing::error!(%error, "a resting game does not replay; the room stops");
                self.stopping = Some(Stop::ShuttingDown);
                false
            }
        }
    }

    /// Takes a request in: reads are answered at once from what the room has committed,
    /// never waiting for the database; changes wait their turn.
    fn take_in(&mut self, request: Request, reply: Reply) {
        match request {
            Request::Connect {
                last_seq: Some(last_seq),
                ..
            }
            | Request::Resync {
                last_seq: Some(last_seq),
                ..
            } if self.machine.is_behind(Some(last_seq)) => {
                reply.send(Err(self.behind_the_client(last_seq)))
            }
            Request::Connect {
                token_hash,
                invite_code,
                last_seq,
                last_chat_seq,
            } => reply.send(self.connect(token_hash, invite_code, last_seq, last_chat_seq)),
            Request::Disconnect { token_hash } => {
                if let Some(presence) = self.machine.disconnect(token_hash.as_deref()) {
                    let _ = self.updates.send(presence);
                }
                reply.send(Ok(Answer::Done));
            }
            Request::Resync {
                token_hash,
                last_seq,
                last_chat_seq,
            } => {
                let (now, hash) = (now_millis(), token_hash.as_deref());
                let mut updates = self.machine.catch_up(hash, last_seq, now);
                updates.extend(self.machine.chat_catch_up(hash, last_chat_seq));
                reply.send(Ok(Answer::CatchUp { updates }));
            }
            change => {
                let answer_by = Instant::now() + self.answer_within;
                self.waiting
                    .push_back(Work::Request(change, reply, answer_by));
            }
        }
    }

    /// A client has seen more of the game than this room holds: the room is behind the
    /// database, or cannot rule it out, so it sends nothing older than what the client
    /// has. The client is told to come back shortly (close 1012), and the room finds
    /// out meanwhile: it settles its unconfirmed write, or (cluster mode) asks whether
    /// the game is still this node's, or reads its game again from the log.
    ///
    /// A room that has just read its game from the database, or whose game has ended,
    /// knows better: the client's `last_seq` names an update that does not exist.
    fn behind_the_client(&mut self, last_seq: u64) -> RoomError {
        let seq = self.machine.seq();
        let known = self.unconfirmed.is_none() && !self.stale;
        if known && (self.machine.ended() || self.read_from_database_at == Some(seq)) {
            tracing::info!(
                seq,
                last_seq,
                "a client named an update the game does not have"
            );
            return RoomError::UnknownSeq {
                last_seq,
                current: seq,
            };
        }
        tracing::warn!(
            seq,
            last_seq,
            "a client has seen more of the game than this room"
        );
        if known {
            if self.tenure.trusted(self.id()) {
                self.stale = true;
            } else if self.in_flight.is_none() {
                self.start_confirming();
            }
        }
        RoomError::ShuttingDown
    }

    /// A client said hello: answered from what the room has committed (the caller
    /// subscribed to the broadcast before asking). The owner of an abandoned seat takes
    /// it back as a due change.
    fn connect(
        &mut self,
        token_hash: Option<String>,
        invite_code: Option<String>,
        last_seq: Option<u64>,
        last_chat_seq: Option<u64>,
    ) -> Result<Answer, RoomError> {
        let joined = self.machine.connect(
            token_hash.as_deref(),
            invite_code.as_deref(),
            last_seq,
            last_chat_seq,
            now_millis(),
        )?;
        if let Some(presence) = joined.presence {
            let _ = self.updates.send(presence);
        }
        Ok(Answer::Connected(Welcomed {
            seat: joined.seat,
            catch_up: joined.catch_up,
            chat: self.machine.chat_policy(),
        }))
    }

    /// Has the machine decide `work`: a refusal is answered at once, a change is written.
    fn decide(&mut self, work: Work) {
        match work {
            Work::Request(request, reply, answer_by) => {
                self.decide_request(request, reply, answer_by)
            }
            Work::BotAnswer(job, answer) => self.decide_bot_move(*job, answer),
        }
    }

    fn decide_request(&mut self, request: Request, reply: Reply, answer_by: Instant) {
        use Request as R;
        let now = now_millis();
        if request.writes_chat()
            && let Some(after) = self.machine.chat_read_back_from()
        {
            self.waiting
                .push_front(Work::Request(request, reply, answer_by));
            self.start_chat_read_back(after);
            return;
        }
        let machine = &self.machine;
        match request {
            R::Say {
                token_hash,
                spectator,
                text,
            } => match self
                .machine
                .say(token_hash.as_deref(), spectator, &text, now)
            {
                Ok(write) => self.start_chat_write(write, reply),
                Err(error) => reply.send(Err(error)),
            },
            R::SetChatPolicy { token_hash, chat } => {
                match machine.set_chat_policy(&token_hash, chat, now) {
                    Ok(write) => self.start_chat_write(write, reply),
                    Err(error) => reply.send(Err(error)),
                }
            }
            R::DeleteChat { chat_seq, stored } => match machine.delete_chat(chat_seq, &stored, now)
            {
                Ok(write) => self.start_chat_write(write, reply),
                Err(error) => reply.send(Err(error)),
            },
            R::Mute {
                token_hash,
                author,
                muted,
            } => match machine.mute(&token_hash, author, muted) {
                Ok(Some(change)) => self.start_mute_write(change, reply),
                Ok(None) => reply.send(Ok(Answer::Done)),
                Err(error) => reply.send(Err(error)),
            },
            R::Join {
                name,
                player_id,
                invite_code,
            } => match machine.join(name, player_id, invite_code.as_deref(), now) {
                Ok((change, token)) => self.write_seat_for(change, token, reply, answer_by),
                Err(error) => reply.send(Err(error)),
            },
            R::Reclaim { player_id } => match machine.reclaim(player_id) {
                Ok((change, token)) => self.write_seat_for(change, token, reply, answer_by),
                Err(error) => reply.send(Err(error)),
            },
            R::AddBot {
                token_hash,
                level,
                name,
            } => match machine.add_bot(&token_hash, level, name, now) {
                Ok(change) => match seat_of(&change) {
                    Some(seat) => self.start_write(change, Waiter::Seat { reply, seat }, answer_by),
                    None => reply.send(Err(RoomError::Internal)),
                },
                Err(error) => reply.send(Err(error)),
            },
            R::Start {
                token_hash,
                randomize_seats,
            } => {
                let draw = StartDraw::random(machine.seats().len(), randomize_seats);
                let decided = machine.start(&token_hash, draw, now);
                self.write_or_refuse(decided, Waiter::Lobby(reply), answer_by);
            }
            R::StartMatched { in_seat_order } => {
                let draw = StartDraw::random(machine.seats().len(), !in_seat_order);
                let decided = machine.start_matched(draw, now);
                self.write_or_refuse(decided, Waiter::Lobby(reply), answer_by);
            }
            R::Rematch { token_hash, accept } => self.answer_rematch(&token_hash, accept, reply),
            R::Leave { token_hash } => {
                let decided = machine.leave(&token_hash);
                self.write_or_refuse(decided, Waiter::Done(reply), answer_by)
            }
            R::Cancel { token_hash } => {
                let decided = machine.cancel(&token_hash);
                self.write_or_refuse(decided, Waiter::Done(reply), answer_by)
            }
            R::RemoveBot { token_hash, seat } => {
                let decided = machine.remove_bot(&token_hash, seat);
                self.write_or_refuse(decided, Waiter::Done(reply), answer_by);
            }
            R::Resign { token_hash } => {
                let decided = machine.resign(&token_hash, now);
                self.write_or_refuse(decided, Waiter::Done(reply), answer_by)
            }
            R::Abort { token_hash } => {
                let decided = machine.abort(&token_hash);
                self.write_or_refuse(decided, Waiter::Done(reply), answer_by)
            }
            R::Command {
                token_hash,
                id,
                expected_seq,
                mv,
            } => {
                let started = Instant::now();
                let retry = Box::new(R::Command {
                    token_hash: token_hash.clone(),
                    id: id.clone(),
                    expected_seq,
                    mv,
                });
                match machine.command(&token_hash, id, expected_seq, mv, now) {
                    Ok(Decision::Repeat(seq)) => reply.send(Ok(Answer::Seq { seq })),
                    Ok(Decision::Commit(change)) => {
                        let waiter = Waiter::Command {
                            reply,
                            started,
                            retry,
                            answer_by,
                        };
                        self.start_write(*change, waiter, answer_by)
                    }
                    Err(error) => reply.send(Err(error)),
                }
            }
            read @ (R::Connect { .. } | R::Disconnect { .. } | R::Resync { .. }) => {
                self.take_in(read, reply)
            }
        }
    }

    /// Writes a seat taken or given a new token, for the player who asked.
    fn write_seat_for(&mut self, change: Change, token: Token, reply: Reply, answer_by: Instant) {
        match seat_of(&change) {
            Some(seat) => {
                let waiter = Waiter::Joined { reply, token, seat };
                self.start_write(change, waiter, answer_by)
            }
            None => reply.send(Err(RoomError::Internal)),
        }
    }

    fn write_or_refuse(
        &mut self,
        decided: Result<Change, RoomError>,
        waiter: Waiter,
        answer_by: Instant,
    ) {
        match decided {
            Ok(change) => self.start_write(change, waiter, answer_by),
            Err(error) => self.tell_failure(waiter, error),
        }
    }

    fn decide_bot_move(&mut self, job: BotJob, answer: Option<Move>) {
        let Some(mv) = answer else {
            self.pause_after_failure(&RoomError::ShuttingDown);
            return;
        };
        let now = now_millis();
        let decided = match self.machine.bot_move(&job, mv, now) {
            // A bot that errs must not stall the game: the first legal move instead.
            Err(RoomError::IllegalMove(error)) => {
                tracing::error!(%error, level = %job.level, "a bot chose an illegal move");
                match job.view.game().legal_moves().first().copied() {
                    Some(mv) => self.machine.bot_move(&job, mv, now),
                    None => Err(RoomError::Internal),
                }
            }
            other => other,
        };
        match decided {
            Ok(change) => {
                let deadline = Instant::now() + self.answer_within;
                self.start_write(change, Waiter::Nobody, deadline)
            }
            Err(RoomError::StaleSeq { .. }) => {}
            Err(error) => self.pause_after_failure(&error),
        }
    }

    /// Starts writing `change` as the next `seq`. When the write's outcome is unknown,
    /// what is stored decides (see [`writes`]); nothing is applied unless it is proved.
    /// Who waits hears by `deadline`: a write still unanswered then is settled later.
    fn start_write(&mut self, change: Change, waiter: Waiter, deadline: Instant) {
        let seq = self.machine.seq() + 1;
        let (store, game, node) = (self.store.clone(), self.id(), self.tenure.node());
        self.in_flight = Some(Box::pin(async move {
            let target = (game, seq, node.as_deref());
            let attempt =
                writes::attempt(&store, target, &change, deadline.into(), Attempting::First);
            let written = Written::from(attempt.await);
            Done::Write {
                change,
                written,
                waiter,
            }
        }));
    }

    /// Starts writing a chat entry: it takes no `seq`, and a failed write refuses it alone
    /// (the chat is read back before the next one, in case it landed after all).
    fn start_chat_write(&mut self, write: ChatWrite, reply: Reply) {
        let (store, game) = (self.store.clone(), self.id());
        self.in_flight = Some(Box::pin(async move {
            let outcome = store.append_chat(game, &write.row, &write.effect).await;
            Done::Chat {
                write,
                outcome,
                reply,
            }
        }));
    }

    fn start_mute_write(&mut self, change: MuteChange, reply: Reply) {
        let (store, game) = (self.store.clone(), self.id());
        self.in_flight = Some(Box::pin(async move {
            let author = change.author.stored();
            let outcome = store
                .set_chat_mute(game, change.seat, &author, change.muted)
                .await;
            Done::Mute {
                change,
                outcome,
                reply,
            }
        }));
    }

    /// A seated person's answer to the rematch: announced at once, or, when it is the
    /// last acceptance, the new lobby written and started before anyone is told.
    fn answer_rematch(&mut self, token_hash: &str, accept: bool, reply: Reply) {
        let last_to_accept = self.machine.seat_number(token_hash);
        match self
            .machine
            .answer_rematch(token_hash, accept, now_millis())
        {
            Ok(RematchStep::Announce(update)) => {
                let _ = self.updates.send(update);
                reply.send(Ok(Answer::Done));
            }
            Ok(RematchStep::Form(formed)) => {
                let (store, opener) = (self.store.clone(), self.opener.clone());
                let last_to_accept = last_to_accept.unwrap_or_default();
                self.in_flight = Some(Box::pin(async move {
                    let outcome = store
                        .create_seated_lobby(&formed.lobby, &formed.seats)
                        .await;
                    if outcome.is_ok() {
                        // Written, it is the rematch whatever the start does: should it
                        // fail, its creator can still start the full lobby.
                        let (lobby, seats) = (formed.lobby.clone(), formed.seats.clone());
                        if let Err(error) = opener.open_and_start(lobby, seats).await {
                            tracing::warn!(%error, lobby = %formed.lobby.id, "a rematch did not start");
                        }
                    }
                    Done::Rematch {
                        formed,
                        last_to_accept,
                        outcome,
                        reply,
                    }
                }));
            }
            Err(error) => reply.send(Err(error)),
        }
    }

    fn finish_rematch(
        &mut self,
        formed: &RematchLobby,
        last_to_accept: u8,
        outcome: Result<(), StoreError>,
        reply: Reply,
    ) {
        let now = now_millis();
        match outcome {
            Ok(()) => {
                tracing::info!(rematch = %formed.lobby.id, "rematch agreed");
                for update in self.machine.rematch_formed(Ok(formed), last_to_accept, now) {
                    let _ = self.updates.send(update);
                }
                reply.send(Ok(Answer::Done));
            }
            Err(error) => {
                self.machine.rematch_formed(Err(()), last_to_accept, now);
                reply.send(Err(RoomError::from(error)));
            }
        }
    }

    /// Starts reading the chat entries stored after `after`.
    fn start_chat_read_back(&mut self, after: u64) {
        let (store, game) = (self.store.clone(), self.id());
        let read = ChatRead {
            after: Some(after),
            before: None,
            limit: RECENT_CHAT as u32,
            players: true,
        };
        self.in_flight = Some(Box::pin(async move {
            Done::ChatReadBack(store.chat_entries(game, &read).await)
        }));
    }

    /// Starts settling an unconfirmed change by writing it again as the same `seq` (see
    /// [`writes`]): the database then holds it, or another change, but not both; a
    /// first attempt that lands later finds its `seq` taken. Bounded by the answer due
    /// first among the requests that wait for it.
    fn start_settling(&mut self, change: Change) {
        let seq = self.machine.seq() + 1;
        let (store, game, node) = (self.store.clone(), self.id(), self.tenure.node());
        let deadline = self
            .first_answer_due()
            .unwrap_or_else(|| Instant::now() + self.answer_within);
        self.in_flight = Some(Box::pin(async move {
            let target = (game, seq, node.as_deref());
            let attempt =
                writes::attempt(&store, target, &change, deadline.into(), Attempting::Again);
            let written = match Written::from(attempt.await) {
                // This attempt did not land, but the first may still.
                Written::No(_) => Written::Unknown,
                written => written,
            };
            Done::Settle { change, written }
        }));
    }

    /// Starts reading the game again from the database, to replace the room's memory of
    /// it.
    fn start_reloading(&mut self) {
        let (store, game) = (self.store.clone(), self.id());
        let deadline = self
            .first_answer_due()
            .unwrap_or_else(|| Instant::now() + self.answer_within);
        self.in_flight = Some(Box::pin(async move {
            let read = Box::pin(store.live_game(game));
            let read = match tokio::time::timeout_at(deadline.into(), read).await {
                Ok(read) => read,
                Err(_) => Err(StoreError::Unavailable(
                    "the game's log took too long to read".into(),
                )),
            };
            Done::Reloaded(read)
        }));
    }

    /// Starts asking whether the game is still this node's.
    fn start_confirming(&mut self) {
        let (tenure, game) = (self.tenure.clone(), self.id());
        self.in_flight = Some(Box::pin(async move {
            Done::Confirm(tenure.confirm(game).await)
        }));
    }

    /// Takes a finished operation's outcome in: applies what was written, answers who
    /// waited, and settles or stops as the outcome demands.
    fn finish(&mut self, done: Done) {
        match done {
            Done::Write {
                change,
                written,
                waiter,
            } => self.finish_write(change, written, waiter),
            Done::Settle { change, written } => self.finish_settling(change, written),
            Done::Reloaded(read) => self.finish_reloading(read),
            Done::Confirm(Confirmed::Owned) => {
                // Proved just now: the work that asked is decided without asking again.
                if let Some(work) = self.waiting.pop_front() {
                    self.decide(work);
                }
            }
            Done::Confirm(Confirmed::Lost) => self.lose_game(),
            Done::Confirm(Confirmed::Unknown) => {
                self.refuse_waiting(RoomError::StorageUnavailable);
            }
            Done::Chat {
                write,
                outcome,
                reply,
            } => self.finish_chat_write(write, outcome, reply),
            Done::Mute {
                change,
                outcome,
                reply,
            } => match outcome {
                Ok(()) => {
                    let _ = self.updates.send(self.machine.apply_mute(change));
                    reply.send(Ok(Answer::Done));
                }
                Err(error) => reply.send(Err(RoomError::from(error))),
            },
            Done::ChatReadBack(Ok(rows)) => {
                for update in self.machine.take_stored_chat(&rows) {
                    let _ = self.updates.send(update);
                }
            }
            Done::ChatReadBack(Err(error)) => {
                self.refuse_waiting_chat(RoomError::from(error));
            }
            Done::Rematch {
                formed,
                last_to_accept,
                outcome,
                reply,
            } => self.finish_rematch(&formed, last_to_accept, outcome, reply),
            Done::RatingsRead(Ok(changes)) => self.announce_ratings(changes),
            Done::RatingsRead(Err(error)) => {
                // Stored all the same: the match and the event log have them.
                tracing::warn!(%error, "cannot read the rating changes back to announce them");
            }
        }
    }

    fn finish_write(&mut self, change: Change, written: Written, waiter: Waiter) {
        match written {
            Written::Yes(announced) => {
                let rates_match = change.rates_match();
                self.apply(change);
                self.answer(waiter);
                if rates_match {
                    self.announce_ratings_after(announced);
                }
            }
            Written::No(error) => self.tell_failure(waiter, error),
            Written::Unknown => {
                tracing::warn!(
                    seq = self.machine.seq() + 1,
                    "a write's outcome is unknown; it is settled before anything else"
                );
                self.metrics.unknown_writes.inc();
                self.unconfirmed = Some(change);
                self.tell_failure(waiter, RoomError::StorageUnavailable);
            }
            Written::Stale => {
                self.find_memory_behind("superseded");
                self.decide_again_after_reloading(waiter);
            }
            Written::Lost => {
                self.lose_game();
                self.tell_failure(waiter, RoomError::ShuttingDown);
            }
        }
    }

    /// The room's memory is behind the database (`reason`: how it was found): its game
    /// is read again from the log before anything else is decided.
    fn find_memory_behind(&mut self, reason: &'static str) {
        tracing::warn!(
            reason,
            seq = self.machine.seq(),
            "the room is behind the database; reading its game again"
        );
        self.metrics.room_reloads.with_label_values(&[reason]).inc();
        self.unconfirmed = None;
        self.stale = true;
    }

    /// A command whose `seq` another change took is decided again on the game as the
    /// database holds it, once the room has read it: it gets the answer it would have
    /// had, had the room known (an `ack` if it is the command stored, else a refusal).
    /// Anyone else is told that nothing of theirs was written, and tries again.
    fn decide_again_after_reloading(&mut self, waiter: Waiter) {
        match waiter {
            Waiter::Command {
                reply,
                retry,
                answer_by,
                ..
            } => self
                .waiting
                .push_front(Work::Request(*retry, reply, answer_by)),
            other => self.tell_failure(other, RoomError::StorageUnavailable),
        }
    }

    /// Applies an unconfirmed change once it is written (by its first attempt or by this
    /// one), reloads the game if another change holds its `seq`, and keeps it while the
    /// database cannot say (refusing what waits, which would need it settled). A seat
    /// whose joiner was told the join failed is freed again: nobody holds its token.
    fn finish_settling(&mut self, change: Change, written: Written) {
        match written {
            Written::Yes(announced) => {
                let orphan_seat = match &change {
                    Change::SeatTaken(row) if row.bot.is_none() => Some(row.seat),
                    _ => None,
                };
                let rates_match = change.rates_match();
                self.apply(change);
                if let Some(seat) = orphan_seat {
                    let deadline = Instant::now() + self.answer_within;
                    self.start_write(Change::SeatFreed(seat), Waiter::Nobody, deadline);
                }
                if rates_match {
                    self.announce_ratings_after(announced);
                }
            }
            Written::Stale => self.find_memory_behind("superseded"),
            Written::Lost => self.lose_game(),
            Written::Unknown | Written::No(_) => {
                self.unconfirmed = Some(change);
                self.refuse_waiting(RoomError::StorageUnavailable);
                self.pause_after_failure(&RoomError::StorageUnavailable);
            }
        }
    }

    /// Takes the game as the database holds it in place of the room's memory, and shows
    /// every connection where it stands; keeps trying while the database cannot say, and
    /// stops the room if the game is no longer live (it ended or was cancelled
    /// elsewhere: the clients reconnect and find it so).
    fn finish_reloading(&mut self, read: Result<Option<LiveGame>, StoreError>) {
        let live = match read {
            Ok(Some(live)) => live,
            Ok(None) => {
                tracing::warn!("the game is no longer live in the database; the room stops");
                self.stale = false;
                self.stopping = Some(Stop::ShuttingDown);
                return;
            }
            Err(error) => {
                let error = match self.failures {
                    0 => RoomError::from(error),
                    _ => RoomError::from_repeated(error),
                };
                self.refuse_waiting(error.clone());
                self.pause_after_failure(&error);
                return;
            }
        };
        if self.machine.is_resting() {
            self.metrics.resting_games.dec();
        }
        if live.lobby.status != LobbyStatus::Open {
            self.open_lobby_place = None;
        }
        match self.machine.reload(live, now_millis()) {
            Ok(snapshot) => {
                self.stale = false;
                self.read_from_database_at = Some(self.machine.seq());
                self.ended.store(self.machine.ended(), Ordering::Relaxed);
                self.retry_at = None;
                self.failures = 0;
                tracing::info!(
                    seq = self.machine.seq(),
                    "the room read its game again from the log"
                );
                let _ = self.updates.send(snapshot);
            }
            Err(error) => {
                tracing::error!(%error, "the game's log does not replay; the room stops");
                self.stopping = Some(Stop::ShuttingDown);
            }
        }
    }

    /// After the write that ended a rated game: the store announced its rating changes
    /// in the same transaction (the update after the game's last), and the room
    /// broadcasts that update. When the write's outcome had to be read back, the changes
    /// are read again first.
    fn announce_ratings_after(&mut self, announced: Option<Vec<RatingChange>>) {
        if let Some(changes) = announced {
            self.announce_ratings(changes);
        } else if self.store.announces_ratings() {
            let (store, game) = (self.store.clone(), self.id());
            self.in_flight = Some(Box::pin(async move {
                Done::RatingsRead(Box::pin(store.match_ratings(game)).await)
            }));
        }
    }

    fn announce_ratings(&mut self, changes: Vec<RatingChange>) {
        let update = self.machine.announce_ratings(changes, now_millis());
        let _ = self.updates.send(update);
    }

    /// Broadcasts a written chat entry. A write that failed is refused; when it may have
    /// landed (its outcome unknown) or its `chat_seq` was taken (by another node that
    /// decided the game meanwhile), the chat is read back before the next entry.
    fn finish_chat_write(
        &mut self,
        write: ChatWrite,
        outcome: Result<(), StoreError>,
        reply: Reply,
    ) {
        match outcome {
            Ok(()) => {
                if let Some(update) = self.machine.apply_chat(&write) {
                    let _ = self.updates.send(update);
                }
                reply.send(Ok(Answer::Done));
            }
            Err(error) => {
                if matches!(error, StoreError::Unavailable(_) | StoreError::Conflict(_)) {
                    self.machine.mark_chat_stale();
                }
                let refusal = match error {
                    StoreError::Conflict(_) => RoomError::StorageUnavailable,
                    other => RoomError::from(other),
                };
                reply.send(Err(refusal));
            }
        }
    }

    /// Refuses the chat writes waiting for a read-back that failed; other work waits on.
    fn refuse_waiting_chat(&mut self, error: RoomError) {
        let waiting = std::mem::take(&mut self.waiting);
        for work in waiting {
            match work {
                Work::Request(request, reply, _) if request.writes_chat() => {
                    reply.send(Err(error.clone()))
                }
                other => self.waiting.push_back(other),
            }
        }
    }

    /// Another node decides the game now, or this node cannot prove it still does.
    fn lose_game(&mut self) {
        if self.machine.ended() {
            // A finished game has no lease left to lose: its moves can no longer change,
            // and its chat and rematch are written under keys of their own.
            return;
        }
        if self.stopping != Some(Stop::LeaseLost) {
            tracing::warn!("this node no longer owns the game; unloading");
        }
        self.stopping = Some(Stop::LeaseLost);
    }

    /// Stops: everything still waiting is told to try again, and every connection to
    /// reconnect (to this server once it is back, or to the game's new owner).
    fn stop_now(&mut self, stop: Stop) {
        if stop == Stop::LeaseLost {
            self.metrics.cluster_event("lease_lost");
        }
        self.refuse_waiting(RoomError::ShuttingDown);
        let closing = match stop {
            Stop::ShuttingDown => "the server is restarting",
            Stop::LeaseLost => "the game moved to another server; reconnect",
        };
        let _ = self.updates.send(Arc::new(Outgoing::closing(closing)));
    }

    /// Refuses every waiting request with `error`; a waiting bot answer is dropped (the
    /// bot thinks again once the room can write).
    fn refuse_waiting(&mut self, error: RoomError) {
        for work in std::mem::take(&mut self.waiting) {
            if let Work::Request(_, reply, _) = work {
                reply.send(Err(error.clone()));
            }
        }
    }

    /// Answers what was already asked of an ended room, from its final state: nothing can
    /// be written any more, so everything is read or refused.
    async fn drain(&mut self, requests: &mut mpsc::Receiver<Mail>) {
        requests.close();
        while let Some(request) = requests.recv().await {
            self.receive(request);
        }
        while let Some(work) = self.waiting.pop_front() {
            self.decide(work);
            // The machine refuses every change of an ended game; should one pass, it is
            // written before the room stops, as any other.
            if let Some(in_flight) = self.in_flight.take() {
                let done = in_flight.await;
                self.finish(done);
            }
        }
    }

    /// How long to sleep before the machine's next deadline, paused after a failure.
    /// A room whose memory is not yet put right (an unconfirmed write, a game to read
    /// again) wakes when its pause is over, whatever its game's deadlines.
    fn wakeup_in(&self) -> Option<Duration> {
        let pause = self.retry_at.map_or(Duration::ZERO, |retry| {
            retry.saturating_duration_since(Instant::now())
        });
        if self.unconfirmed.is_some() || self.stale {
            return Some(pause);
        }
        let at = self.machine.next_wakeup()?;
        let delay = Duration::from_millis((at - now_millis()).max(0) as u64);
        Some(delay.max(pause))
    }

    fn paused(&self) -> bool {
        self.retry_at.is_some_and(|retry| Instant::now() < retry)
    }

    /// Pauses the room's own writes after a failure, longer after each in a row. Only
    /// the first of a row is a warning: a database away for minutes makes one line per
    /// room, not one a second.
    fn pause_after_failure(&mut self, error: &RoomError) {
        self.failures += 1;
        let doublings = (self.failures - 1).min(8);
        let pause = (RETRY_PAUSE * 2u32.pow(doublings)).min(LONGEST_PAUSE);
        if self.failures == 1 {
            tracing::warn!(%error, "the room cannot write; trying again shortly");
        } else {
            tracing::debug!(%error, failures = self.failures, "the room still cannot write");
        }
        self.retry_at = Some(Instant::now() + pause);
    }

    /// When the first waiting request must be answered by.
    fn first_answer_due(&self) -> Option<Instant> {
        let due = self.waiting.iter().filter_map(|work| match work {
            Work::Request(_, _, answer_by) => Some(*answer_by),
            Work::BotAnswer(..) => None,
        });
        due.min()
    }

    /// Tells every waiting request whose answer is due to try again: the database did
    /// not let the room decide it in time. Nothing of it was written.
    fn refuse_overdue(&mut self) {
        let now = Instant::now();
        for work in std::mem::take(&mut self.waiting) {
            match work {
                Work::Request(_, reply, answer_by) if answer_by <= now => {
                    reply.send(Err(RoomError::StorageUnavailable))
                }
                other => self.waiting.push_back(other),
            }
        }
    }

    /// Asks the pool for the move of a seat a bot plays now, if any.
    fn start_thinking(&self) -> Option<(u64, Thinking)> {
        if self.paused() {
            return None;
        }
        let job = self.machine.bot_job()?;
        let (pool, metrics) = (self.bots.clone(), self.metrics.clone());
        let seq = job.seq;
        let thinking = async move {
            let asked = Instant::now();
            let answer = pool
                .choose(job.level, job.view.clone(), job.think, rand::random())
                .await;
            metrics.bot_think.observe(asked.elapsed().as_secs_f64());
            (job, answer)
        };
        Some((seq, Box::pin(thinking)))
    }

    /// Takes a written change into the machine and broadcasts its update.
    fn apply(&mut self, change: Change) {
        if matches!(change, Change::Started { .. } | Change::Cancelled(_)) {
            self.open_lobby_place = None;
        }
        if let Change::Moved { row, .. } = &change {
            self.metrics.moves.inc();
            if let Some(reason) = self.machine.bot_reason(row) {
                self.metrics.bot_moves.with_label_values(&[reason]).inc();
            }
        }
        self.retry_at = None;
        if self.failures > 0 {
            tracing::info!(failures = self.failures, "the room writes again");
            self.failures = 0;
        }
        let update = self.machine.apply(change, now_millis());
        if self.machine.ended() {
            self.ended.store(true, Ordering::Relaxed);
        }
        // Nobody listening is fine: the machine also keeps the update for catch-ups.
        let _ = self.updates.send(update);
    }

    /// Tells who waited that their change is written, with what they asked for.
    fn answer(&mut self, waiter: Waiter) {
        match waiter {
            Waiter::Nobody => {}
            Waiter::Joined { reply, token, seat } => {
                let lobby = self.lobby_view();
                reply.send(Ok(Answer::Joined(JoinedSeat { seat, token, lobby })));
            }
            Waiter::Seat { reply, seat } => reply.send(Ok(Answer::Seat { seat })),
            Waiter::Done(reply) => reply.send(Ok(Answer::Done)),
            Waiter::Lobby(reply) => reply.send(Ok(Answer::Lobby {
                lobby: self.lobby_view(),
            })),
            Waiter::Command { reply, started, .. } => {
                // Rejections are counted apart (by the connection, by code): they are
                // cheap and would flatter the figure.
                let latency = started.elapsed().as_secs_f64();
                self.metrics.move_latency.observe(latency);
                reply.send(Ok(Answer::Seq {
                    seq: self.machine.seq(),
                }));
            }
        }
    }

    /// Tells who waited that nothing changed; a change nobody asked for is tried again
    /// after a pause.
    fn tell_failure(&mut self, waiter: Waiter, error: RoomError) {
        match waiter {
            Waiter::Nobody if error == RoomError::ShuttingDown => {}
            Waiter::Nobody => self.pause_after_failure(&error),
            Waiter::Joined { reply, .. }
            | Waiter::Seat { reply, .. }
            | Waiter::Done(reply)
            | Waiter::Lobby(reply)
            | Waiter::Command { reply, .. } => reply.send(Err(error)),
        }
    }

    /// The lobby as REST shows it, from what the room has committed.
    fn lobby_view(&self) -> LobbyView {
        view::lobby_view(self.machine.lobby(), self.machine.seats())
    }
}

/// The seat a change takes or changes.
fn seat_of(change: &Change) -> Option<u8> {
    match change {
        Change::SeatTaken(row) | Change::SeatChanged { row, .. } => Some(row.seat),
        _ => None,
    }
}
