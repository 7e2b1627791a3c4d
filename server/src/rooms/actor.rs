//! The room actor: the thin async shell around a [`RoomMachine`].
//!
//! Requests are handled one at a time, so there are no races between players. For each
//! one the machine decides a [`Change`] (or refuses with a typed error); the shell writes
//! it to the database, and only then has the machine apply it and broadcasts the update.
//! A database failure leaves the room exactly as it was and the client is told to try
//! again.
//!
//! A write whose outcome is unknown (the connection broke around the COMMIT, or the
//! database stopped answering) is *reconciled*: the room re-reads the stored `seq`, which
//! says whether the change landed, and answers the truth. If even that read fails, the
//! change is kept as unconfirmed and settled before the room writes anything else.
//!
//! Time is handled here too, as ordinary requests: the shell's `select!` sleeps until the
//! machine's next wakeup (a turn's deadline or a lobby's expiry), and waits for the bot
//! thinking about the seat to move. Bots think on the [`BotPool`]'s threads, never on the
//! async runtime, and their moves go through the same decide, write, apply path as a
//! player's. Once the room has ended it stops: nothing that can no longer change stays in
//! memory.

use crate::admission::Slot;
use crate::bots::BotPool;
use crate::clock::now_millis;
use crate::error::AppError;
use crate::metrics::Metrics;
use crate::rooms::machine::{BotJob, Change, Decision, RoomMachine};
use crate::rooms::view::{self, LobbyView};
use crate::rooms::{Connected, JoinedSeat, Outgoing, RoomRequest, RoomSettings};
use carcassonne_core::Move;
use carcassonne_store::{LiveGame, LobbyRow, Millis, SeatRow, Store, StoreError};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

/// Capacity of the broadcast; a client further behind is resynchronised.
pub const BROADCAST_CAPACITY: usize = 1024;
/// After a failed write of a change nobody asked for (a bot's move, a timeout's
/// consequence, an expiry), how long the room waits before trying again.
const RETRY_PAUSE: Duration = Duration::from_secs(1);

/// A bot's answer, with the job it answers.
type Thinking = Pin<Box<dyn Future<Output = (BotJob, Option<Move>)> + Send>>;

/// Whether a write whose reply was lost reached the database.
enum Landed {
    Yes,
    No,
    Unknown,
}

pub struct Room {
    machine: RoomMachine,
    store: Store,
    metrics: Arc<Metrics>,
    bots: BotPool,
    updates: broadcast::Sender<Arc<Outgoing>>,
    /// A change written with an unknown outcome, to settle before the next write.
    unconfirmed: Option<Change>,
    /// While the lobby is open: its place among the open lobbies its creator may hold.
    open_lobby_place: Option<Slot>,
    /// No unrequested change is tried before this, after one failed.
    retry_at: Option<Instant>,
    /// The database refused a write because another node owns the game now (cluster
    /// mode): the room must stop and let its connections find the owner.
    lost_lease: bool,
}

/// What a room needs besides its own rows.
#[derive(Clone, Debug)]
pub struct RoomServices {
    pub store: Store,
    pub metrics: Arc<Metrics>,
    pub bots: BotPool,
    pub settings: RoomSettings,
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
        Room {
            machine,
            store: services.store,
            metrics: services.metrics,
            bots: services.bots,
            updates: broadcast::channel(BROADCAST_CAPACITY).0,
            unconfirmed: None,
            open_lobby_place: None,
            retry_at: None,
            lost_lease: false,
        }
    }

    /// A receiver of every update this room broadcasts from now on: how the cluster's
    /// relay hears the room it publishes for other nodes.
    pub fn subscribe_updates(&self) -> broadcast::Receiver<Arc<Outgoing>> {
        self.updates.subscribe()
    }

    /// Keeps `place` while the lobby takes seats; it is given back when the game starts
    /// or the lobby is cancelled.
    pub fn hold_open_lobby_place(&mut self, place: Slot) {
        self.open_lobby_place = Some(place);
    }

    pub fn id(&self) -> uuid::Uuid {
        self.machine.id()
    }

    /// Handles requests, deadlines and bot answers until the room ends or the server
    /// shuts down.
    pub async fn run(
        mut self,
        mut requests: mpsc::Receiver<RoomRequest>,
        shutdown: CancellationToken,
    ) {
        let mut thinking: Option<(u64, Thinking)> = None;
        loop {
            self.make_due_changes().await;
            if self.lost_lease {
                self.announce_shutdown();
                break;
            }
            if self.machine.ended() {
                self.drain(&mut requests).await;
                break;
            }
            // An answer to an older state is of no use any more.
            thinking = thinking.filter(|(seq, _)| *seq == self.machine.seq());
            if thinking.is_none() {
                thinking = self.start_thinking();
            }
            let wakeup = self.wakeup_in();
            tokio::select! {
                request = requests.recv() => match request {
                    Some(RoomRequest::Unload) => self.lost_lease = true,
                    Some(request) => self.handle(request).await,
                    None => break,
                },
                _ = shutdown.cancelled() => {
                    self.announce_shutdown();
                    break;
                }
                (job, answer) = async { thinking.as_mut().expect("guarded").1.as_mut().await },
                    if thinking.is_some() => {
                    thinking = None;
                    self.on_bot_answer(job, answer).await;
                }
                _ = tokio::time::sleep(wakeup.unwrap_or_default()), if wakeup.is_some() => {
                    self.machine.time_out(now_millis());
                }
            }
        }
        tracing::info!(status = ?self.machine.status(), seq = self.machine.seq(), "room unloaded");
    }

    /// Tells every connection to reconnect: the server is stopping, or (cluster mode)
    /// another node decides the game from now on.
    fn announce_shutdown(&self) {
        let closing = Outgoing::closing("the server is restarting");
        let _ = self.updates.send(Arc::new(closing));
    }

    /// Answers what was already asked of an ended room, from its final state.
    async fn drain(&mut self, requests: &mut mpsc::Receiver<RoomRequest>) {
        requests.close();
        while let Some(request) = requests.recv().await {
            self.handle(request).await;
        }
    }

    /// How long to sleep before the machine's next deadline, paused after a failure.
    fn wakeup_in(&self) -> Option<Duration> {
        let at = self.machine.next_wakeup()?;
        let delay = Duration::from_millis((at - now_millis()).max(0) as u64);
        let pause = self.retry_at.map_or(Duration::ZERO, |retry| {
            retry.saturating_duration_since(Instant::now())
        });
        Some(delay.max(pause))
    }

    fn paused(&self) -> bool {
        self.retry_at.is_some_and(|retry| Instant::now() < retry)
    }

    fn pause_after_failure(&mut self, error: &AppError) {
        tracing::warn!(%error, "an unrequested change failed; retrying shortly");
        self.retry_at = Some(Instant::now() + RETRY_PAUSE);
    }

    /// Commits what is due without a request: an expired lobby, an abandoned seat.
    async fn make_due_changes(&mut self) {
        while !self.paused() {
            let Some(change) = self.machine.due_change(now_millis()) else {
                return;
            };
            let outcome = self.settle_then(|_, _| Ok(change)).await;
            if let Err(error) = outcome {
                self.pause_after_failure(&error);
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

    async fn on_bot_answer(&mut self, job: BotJob, answer: Option<Move>) {
        let Some(mv) = answer else {
            self.pause_after_failure(&AppError::ShuttingDown);
            return;
        };
        let outcome = match self.settle_then(|m, now| m.bot_move(&job, mv, now)).await {
            // A bot that errs must not stall the game: the first legal move instead.
            Err(AppError::IllegalMove(error)) => {
                tracing::error!(%error, level = %job.level, "a bot chose an illegal move");
                let fallback = job.view.game().legal_moves().first().copied();
                match fallback {
                    Some(mv) => self.settle_then(|m, now| m.bot_move(&job, mv, now)).await,
                    None => Err(AppError::Internal),
                }
            }
            other => other,
        };
        match outcome {
            Ok(()) | Err(AppError::StaleSeq { .. }) => {}
            Err(error) => self.pause_after_failure(&error),
        }
    }

    async fn handle(&mut self, request: RoomRequest) {
        match request {
            RoomRequest::Join {
                name,
                player_id,
                invite_code,
                reply,
            } => {
                let _ = reply.send(self.join(name, player_id, invite_code).await);
            }
            RoomRequest::Leave { token_hash, reply } => {
                let _ = reply.send(self.settle_then(|m, _| m.leave(&token_hash)).await);
            }
            RoomRequest::Start {
                token_hash,
                randomize_seats,
                reply,
            } => {
                let _ = reply.send(self.start(&token_hash, randomize_seats).await);
            }
            RoomRequest::Cancel { token_hash, reply } => {
                let _ = reply.send(self.settle_then(|m, _| m.cancel(&token_hash)).await);
            }
            RoomRequest::AddBot {
                token_hash,
                level,
                name,
                reply,
            } => {
                let _ = reply.send(self.add_bot(&token_hash, level, name).await);
            }
            RoomRequest::RemoveBot {
                token_hash,
                seat,
                reply,
            } => {
                let outcome = self
                    .settle_then(|m, _| m.remove_bot(&token_hash, seat))
                    .await;
                let _ = reply.send(outcome);
            }
            RoomRequest::Resign { token_hash, reply } => {
                let outcome = self.settle_then(|m, now| m.resign(&token_hash, now)).await;
                let _ = reply.send(outcome);
            }
            RoomRequest::Abort { token_hash, reply } => {
                let _ = reply.send(self.settle_then(|m, _| m.abort(&token_hash)).await);
            }
            RoomRequest::Reclaim { player_id, reply } => {
                let _ = reply.send(self.reclaim(player_id).await);
            }
            // Met by `run` first; an ended room has nothing to unload.
            RoomRequest::Unload => {}
            other => self.handle_connection_request(other).await,
        }
    }

    async fn handle_connection_request(&mut self, request: RoomRequest) {
        match request {
            RoomRequest::Connect {
                token_hash,
                invite_code,
                last_seq,
                reply,
            } => {
                let _ = reply.send(self.connect(token_hash, invite_code, last_seq).await);
            }
            RoomRequest::Disconnect { token_hash } => {
                if let Some(presence) = self.machine.disconnect(token_hash.as_deref()) {
                    let _ = self.updates.send(presence);
                }
            }
            RoomRequest::Resync {
                token_hash,
                last_seq,
                reply,
            } => {
                let catch_up = self
                    .machine
                    .catch_up(token_hash.as_deref(), last_seq, now_millis());
                let _ = reply.send(Ok(catch_up));
            }
            RoomRequest::Command {
                token_hash,
                id,
                expected_seq,
                mv,
                reply,
            } => {
                let _ = reply.send(self.timed_command(&token_hash, id, expected_seq, mv).await);
            }
            _ => unreachable!("lobby requests are handled by `handle`"),
        }
    }

    async fn join(
        &mut self,
        name: String,
        player_id: Option<uuid::Uuid>,
        invite_code: Option<String>,
    ) -> Result<JoinedSeat, AppError> {
        self.settle_unconfirmed().await?;
        let (change, token) =
            self.machine
                .join(name, player_id, invite_code.as_deref(), now_millis())?;
        let seat = match &change {
            Change::SeatTaken(row) => row.seat,
            _ => return Err(AppError::Internal),
        };
        self.commit(change).await?;
        Ok(JoinedSeat {
            seat,
            token,
            lobby: self.lobby_view(),
        })
    }

    /// The lobby as REST shows it, from what the room has committed.
    fn lobby_view(&self) -> LobbyView {
        view::lobby_view(self.machine.lobby(), self.machine.seats())
    }

    async fn add_bot(
        &mut self,
        token_hash: &str,
        level: carcassonne_bots::BotLevel,
        name: Option<String>,
    ) -> Result<u8, AppError> {
        self.settle_unconfirmed().await?;
        let change = self
            .machine
            .add_bot(token_hash, level, name, now_millis())?;
        let seat = match &change {
            Change::SeatTaken(row) => row.seat,
            _ => return Err(AppError::Internal),
        };
        self.commit(change).await?;
        Ok(seat)
    }

    async fn start(
        &mut self,
        token_hash: &str,
        randomize_seats: bool,
    ) -> Result<LobbyView, AppError> {
        let seats = self.machine.seats().len();
        let draw = crate::rooms::machine::StartDraw::random(seats, randomize_seats);
        self.settle_then(|m, now| m.start(token_hash, draw, now))
            .await?;
        Ok(self.lobby_view())
    }

    async fn reclaim(&mut self, player_id: uuid::Uuid) -> Result<JoinedSeat, AppError> {
        self.settle_unconfirmed().await?;
        let (change, token) = self.machine.reclaim(player_id)?;
        let seat = match &change {
            Change::SeatChanged { row, .. } => row.seat,
            _ => return Err(AppError::Internal),
        };
        self.commit(change).await?;
        Ok(JoinedSeat {
            seat,
            token,
            lobby: self.lobby_view(),
        })
    }

    async fn connect(
        &mut self,
        token_hash: Option<String>,
        invite_code: Option<String>,
        last_seq: Option<u64>,
    ) -> Result<Connected, AppError> {
        if let Some(hash) = &token_hash {
            // The owner of an abandoned seat takes it back by saying hello.
            self.settle_then_maybe(|m, now| m.reclaim_on_hello(hash, now))
                .await?;
        }
        let updates = self.updates.subscribe();
        let joined = self.machine.connect(
            token_hash.as_deref(),
            invite_code.as_deref(),
            last_seq,
            now_millis(),
        )?;
        if let Some(presence) = joined.presence {
            let _ = self.updates.send(presence);
        }
        Ok(Connected {
            seat: joined.seat,
            catch_up: joined.catch_up,
            updates,
        })
    }

    /// A command, with the latency of accepted moves recorded. Rejections are counted
    /// apart (by the connection, by code): they are cheap and would flatter the figure.
    async fn timed_command(
        &mut self,
        token_hash: &str,
        id: String,
        expected_seq: u64,
        mv: Move,
    ) -> Result<u64, AppError> {
        let started = Instant::now();
        let before = self.machine.seq();
        let outcome = self.command(token_hash, id, expected_seq, mv).await;
        if matches!(outcome, Ok(seq) if seq > before) {
            self.metrics
                .move_latency
                .observe(started.elapsed().as_secs_f64());
        }
        outcome
    }

    async fn command(
        &mut self,
        token_hash: &str,
        id: String,
        expected_seq: u64,
        mv: Move,
    ) -> Result<u64, AppError> {
        // Settle first: an unconfirmed move may be this very command, sent again.
        self.settle_unconfirmed().await?;
        let decision = self
            .machine
            .command(token_hash, id, expected_seq, mv, now_millis())?;
        match decision {
            Decision::Repeat(seq) => Ok(seq),
            Decision::Commit(change) => {
                self.commit(*change).await?;
                Ok(self.machine.seq())
            }
        }
    }

    /// Settles any unconfirmed change, then decides with the machine and commits.
    async fn settle_then(
        &mut self,
        decide: impl FnOnce(&RoomMachine, Millis) -> Result<Change, AppError>,
    ) -> Result<(), AppError> {
        self.settle_unconfirmed().await?;
        let change = decide(&self.machine, now_millis())?;
        self.commit(change).await
    }

    /// As [`Room::settle_then`], for a decision that may find nothing to change.
    async fn settle_then_maybe(
        &mut self,
        decide: impl FnOnce(&RoomMachine, Millis) -> Option<Change>,
    ) -> Result<(), AppError> {
        self.settle_unconfirmed().await?;
        match decide(&self.machine, now_millis()) {
            Some(change) => self.commit(change).await,
            None => Ok(()),
        }
    }

    /// Writes `change` as the next `seq`, then applies and announces it. When the write's
    /// outcome is unknown, the stored `seq` decides; nothing is applied unless it landed.
    async fn commit(&mut self, change: Change) -> Result<(), AppError> {
        let seq = self.machine.seq() + 1;
        match self.write(&change, seq).await {
            Ok(()) => {
                self.apply(change);
                Ok(())
            }
            Err(StoreError::Unavailable(cause)) => {
                tracing::warn!(%cause, seq, "a write's outcome is unknown; re-reading");
                if let Landed::Yes = self.await_landing(seq).await {
                    self.apply(change);
                    return Ok(());
                }
                // Not seen yet: settled before the next write, when a late commit has had
                // all the time it needs to show.
                self.unconfirmed = Some(change);
                Err(AppError::StorageUnavailable)
            }
            Err(StoreError::NotOwner(cause)) => {
                tracing::warn!(%cause, seq, "another node owns this game now; unloading");
                self.metrics.cluster_event("lease_lost");
                self.lost_lease = true;
                Err(AppError::ShuttingDown)
            }
            Err(other) => Err(AppError::from_store(other)),
        }
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
        let update = self.machine.apply(change, now_millis());
        // Nobody listening is fine: the machine also keeps the update for catch-ups.
        let _ = self.updates.send(update);
    }

    /// Re-reads the stored `seq` a few times over half a second: a COMMIT whose reply was
    /// lost may still be taking effect when the first read arrives.
    async fn await_landing(&self, seq: u64) -> Landed {
        const READS: u32 = 5;
        const PAUSE: Duration = Duration::from_millis(100);
        let mut outcome = self.landed(seq).await;
        for _ in 1..READS {
            // Only "not yet" is worth asking again; an unreachable database stays so.
            if !matches!(outcome, Landed::No) {
                break;
            }
            tokio::time::sleep(PAUSE).await;
            outcome = self.landed(seq).await;
        }
        outcome
    }

    /// Whether the write of `seq` reached the database, from the stored `seq`.
    async fn landed(&self, seq: u64) -> Landed {
        // Boxed for the reason given at `write`.
        match Box::pin(self.store.lobby(self.machine.id())).await {
            Ok(Some((stored, _))) if stored.seq >= seq => Landed::Yes,
            Ok(Some(_)) => Landed::No,
            Ok(None) => Landed::Unknown,
            Err(error) => {
                tracing::warn!(%error, seq, "cannot re-read the stored seq yet");
                Landed::Unknown
            }
        }
    }

    /// Settles a change whose write had an unknown outcome: applies it if it landed,
    /// forgets it if not, and refuses to write anything else while it cannot tell. A seat
    /// whose joiner was told the join failed is freed again: nobody holds its token.
    async fn settle_unconfirmed(&mut self) -> Result<(), AppError> {
        let Some(change) = self.unconfirmed.take() else {
            return Ok(());
        };
        let seq = self.machine.seq() + 1;
        match self.landed(seq).await {
            Landed::Yes => {
                let orphan_seat = match &change {
                    Change::SeatTaken(row) if row.bot.is_none() => Some(row.seat),
                    _ => None,
                };
                self.apply(change);
                if let Some(seat) = orphan_seat {
                    Box::pin(self.commit(Change::SeatFreed(seat))).await?;
                }
                Ok(())
            }
            Landed::No => Ok(()),
            Landed::Unknown => {
                self.unconfirmed = Some(change);
                Err(AppError::StorageUnavailable)
            }
        }
    }

    /// The database write of `change` as update `seq`.
    ///
    /// Each store call is boxed on its own. The store's futures (sqlx's above all) are
    /// kilobytes large; awaited in place they would make this future, and every future
    /// of the room that awaits it, as large as the largest of them, and the runtime
    /// copies a future whole each time it is moved or boxed. That copying was a tenth of
    /// the server's time under load. Boxed one by one, a move's write allocates only
    /// the small future that hands the move to the group-commit writer.
    async fn write(&self, change: &Change, seq: u64) -> Result<(), StoreError> {
        use carcassonne_store::FinalChange;
        let id = self.machine.id();
        let store = &self.store;
        match change {
            Change::SeatTaken(row) => Box::pin(store.add_seat(id, row, seq)).await,
            Change::SeatFreed(seat) => Box::pin(store.remove_seat(id, *seat, seq)).await,
            Change::Cancelled(_) => Box::pin(store.cancel_lobby(id, seq)).await,
            Change::Started { lobby, seats, .. } => {
                let (seed, started_at) = (lobby.seed.unwrap_or_default(), lobby.started_at);
                let salt = lobby.deck_salt.as_deref().unwrap_or_default();
                let started_at = started_at.unwrap_or_default();
                Box::pin(store.start_game(id, seats, seed, salt, started_at, seq)).await
            }
            Change::Moved {
                row,
                last: Some(last),
            } => Box::pin(store.finish_game(id, FinalChange::Move(row), &last.result)).await,
            Change::Moved { row, .. } => Box::pin(store.append_move(id, row)).await,
            Change::SeatChanged {
                row,
                result: Some(result),
                ..
            } => {
                let last = FinalChange::Seat { seat: row, seq };
                Box::pin(store.finish_game(id, last, result)).await
            }
            Change::SeatChanged { row, .. } => Box::pin(store.update_seat(id, row, seq)).await,
        }
    }
}
