//! The room actor: the single owner of one lobby's or game's state.
//!
//! Requests are handled one at a time, so there are no races between players: the engine
//! validates a move against the state it will be applied to, the resulting [`Change`] is
//! committed to the database, and only then is it applied, acknowledged and broadcast. A
//! database failure leaves the room exactly as it was and the client is told to try again.
//!
//! A write whose outcome is unknown (the connection broke around the COMMIT, or the
//! database stopped answering) is *reconciled*: the room re-reads the stored `seq`, which
//! says whether the change landed, and answers the truth. If even that read fails, the
//! change is kept as unconfirmed and settled before the room writes anything else.
//!
//! Every change gets the next `seq` and goes out as one update carrying the events and
//! an RFC 6902 patch from the previous public state. The last updates are kept so that a
//! client coming back with the last `seq` it saw can be sent just what it missed.

use crate::admission::Slot;
use crate::api::players::name_key;
use crate::auth::{Token, invite_code_matches};
use crate::clock::{now_millis, rfc3339};
use crate::error::AppError;
use crate::metrics::Metrics;
use crate::protocol::ServerMessage;
use crate::rooms::view::{legal_moves, public_state};
use crate::rooms::{Connected, JoinedSeat, Outgoing, RoomRequest};
use axum::extract::ws::Utf8Bytes;
use carcassonne_core::deck::shuffled_stack;
use carcassonne_core::record::{Action, DeckProof, GameRecord, TurnRecord};
use carcassonne_core::{Event, FeatureScore, Game, Move, Phase, Setup, Stack};
use carcassonne_store::{
    FinalChange, FinishedMatch, LiveGame, LobbyRow, LobbyStatus, MatchSeat, MatchStatus,
    MoveOrigin, MoveRow, SeatControl, SeatRow, Store, StoreError,
};
use rand::seq::SliceRandom;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

/// Updates kept for clients that reconnect; older gaps get a snapshot instead.
const RECENT_UPDATES: usize = 256;
/// Beyond this many missed updates a snapshot is cheaper than the patches.
const MAX_CATCH_UP: u64 = 64;
/// Capacity of the broadcast; a client further behind is resynchronised.
pub const BROADCAST_CAPACITY: usize = 1024;
/// How long a finished or cancelled room stays in memory once nobody watches it.
const ENDED_ROOM_LINGER: Duration = Duration::from_secs(60);

/// One committed change to a lobby or game: what is written, then applied and announced.
#[derive(Debug)]
enum Change {
    SeatTaken(SeatRow),
    SeatFreed(u8),
    Started {
        lobby: LobbyRow,
        seats: Vec<SeatRow>,
        game: Box<Game>,
        /// The events of the first draw: the first tile, or a game over at once.
        opening: Vec<Event>,
        previous_seats: Vec<u8>,
        randomized: bool,
    },
    Cancelled,
    Moved {
        game: Box<Game>,
        row: MoveRow,
        events: Vec<Event>,
    },
}

/// Whether a write whose reply was lost reached the database.
enum Landed {
    Yes,
    No,
    Unknown,
}

pub struct Room {
    store: Store,
    metrics: Arc<Metrics>,
    lobby: LobbyRow,
    seats: Vec<SeatRow>,
    game: Option<Game>,
    log: Vec<MoveRow>,
    /// Every feature scored so far, for the match summary.
    breakdown: Vec<FeatureScore>,
    /// Accepted commands by (seat, command id), with their `seq`: a repeat gets the same
    /// acknowledgement and is never applied twice.
    accepted: HashMap<(u8, String), u64>,
    state: Value,
    recent: VecDeque<Arc<Outgoing>>,
    updates: broadcast::Sender<Arc<Outgoing>>,
    /// Open connections per player token hash.
    connections: HashMap<String, u32>,
    ended_at: Option<Instant>,
    /// A change written with an unknown outcome, to settle before the next write.
    unconfirmed: Option<Change>,
    /// While the lobby is open: its place among the open lobbies its creator may hold.
    open_lobby_place: Option<Slot>,
}

impl Room {
    /// A freshly created lobby.
    pub fn open(lobby: LobbyRow, seats: Vec<SeatRow>, store: Store, metrics: Arc<Metrics>) -> Room {
        let state =
            serde_json::to_value(public_state(&lobby, &seats, None)).expect("state serializes");
        Room {
            store,
            metrics,
            lobby,
            seats,
            game: None,
            log: Vec::new(),
            breakdown: Vec::new(),
            accepted: HashMap::new(),
            state,
            recent: VecDeque::new(),
            updates: broadcast::channel(BROADCAST_CAPACITY).0,
            connections: HashMap::new(),
            ended_at: None,
            unconfirmed: None,
            open_lobby_place: None,
        }
    }

    /// Keeps `place` while the lobby takes seats; it is given back when the game starts
    /// or the lobby is cancelled.
    pub fn hold_open_lobby_place(&mut self, place: Slot) {
        self.open_lobby_place = Some(place);
    }

    /// Brings an unfinished lobby or game back from the database by replaying its log.
    pub fn restore(live: LiveGame, store: Store, metrics: Arc<Metrics>) -> Result<Room, String> {
        let mut room = Room::open(live.lobby, live.seats, store, metrics);
        if room.lobby.status == LobbyStatus::Playing {
            let mut game = room.new_game()?;
            for row in live.moves {
                let events = game
                    .play(row.mv)
                    .map_err(|error| format!("move {} does not replay: {error}", row.seq))?;
                room.remember(&row, &events);
                room.log.push(row);
            }
            room.game = Some(game);
        }
        room.state = room.current_state();
        Ok(room)
    }

    pub fn id(&self) -> uuid::Uuid {
        self.lobby.id
    }

    /// Handles requests until shutdown, or until an ended room is no longer watched.
    pub async fn run(
        mut self,
        mut requests: mpsc::Receiver<RoomRequest>,
        shutdown: CancellationToken,
    ) {
        let mut linger_check = tokio::time::interval(Duration::from_secs(5));
        loop {
            tokio::select! {
                request = requests.recv() => match request {
                    Some(request) => self.handle(request).await,
                    None => break,
                },
                _ = shutdown.cancelled() => {
                    let message = ServerMessage::Shutdown { message: "the server is restarting".into() };
                    let mut closing = Outgoing::plain(None, message.to_json());
                    closing.closing = true;
                    let _ = self.updates.send(Arc::new(closing));
                    break;
                }
                _ = linger_check.tick() => {
                    if self.ended_and_unwatched() {
                        break;
                    }
                }
            }
        }
        tracing::info!(status = ?self.lobby.status, seq = self.seq(), "room unloaded");
    }

    fn ended_and_unwatched(&self) -> bool {
        self.updates.receiver_count() == 0
            && self
                .ended_at
                .is_some_and(|ended| ended.elapsed() > ENDED_ROOM_LINGER)
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
                let _ = reply.send(self.leave(&token_hash).await);
            }
            RoomRequest::Start {
                token_hash,
                randomize_seats,
                reply,
            } => {
                let _ = reply.send(self.start(&token_hash, randomize_seats).await);
            }
            RoomRequest::Cancel { token_hash, reply } => {
                let _ = reply.send(self.cancel(&token_hash).await);
            }
            RoomRequest::Connect {
                token_hash,
                invite_code,
                last_seq,
                reply,
            } => {
                let _ = reply.send(self.connect(token_hash, invite_code, last_seq));
            }
            RoomRequest::Disconnect { token_hash } => self.disconnect(token_hash),
            RoomRequest::Resync {
                token_hash,
                last_seq,
                reply,
            } => {
                let _ = reply.send(Ok(self.catch_up(token_hash.as_deref(), last_seq)));
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
        }
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
        let before = self.seq();
        let outcome = self.command(token_hash, id, expected_seq, mv).await;
        if matches!(outcome, Ok(seq) if seq > before) {
            self.metrics
                .move_latency
                .observe(started.elapsed().as_secs_f64());
        }
        outcome
    }

    fn seq(&self) -> u64 {
        self.lobby.seq
    }

    fn seat_of(&self, token_hash: &str) -> Option<&SeatRow> {
        self.seats.iter().find(|seat| seat.token_hash == token_hash)
    }

    fn require_open(&self) -> Result<(), AppError> {
        match self.lobby.status {
            LobbyStatus::Open => Ok(()),
            LobbyStatus::Playing => Err(AppError::LobbyNotOpen("playing")),
            LobbyStatus::Finished => Err(AppError::LobbyNotOpen("finished")),
            LobbyStatus::Cancelled => Err(AppError::LobbyNotOpen("cancelled")),
        }
    }

    fn require_creator(&self, token_hash: &str) -> Result<(), AppError> {
        match self.seat_of(token_hash) {
            Some(seat) if seat.creator => Ok(()),
            Some(_) => Err(AppError::NotCreator),
            None => Err(AppError::BadToken),
        }
    }

    async fn join(
        &mut self,
        name: String,
        player_id: Option<uuid::Uuid>,
        invite_code: Option<String>,
    ) -> Result<JoinedSeat, AppError> {
        self.settle_unconfirmed().await?;
        self.require_open()?;
        if !self.invite_code_fits(invite_code.as_deref()) {
            return Err(AppError::BadInviteCode);
        }
        if self.seats.len() >= self.lobby.seat_count as usize {
            return Err(AppError::LobbyFull);
        }
        if player_id.is_some() && self.seats.iter().any(|seat| seat.player_id == player_id) {
            return Err(AppError::AlreadySeated(
                "this player already has a seat here",
            ));
        }
        if self
            .seats
            .iter()
            .any(|seat| name_key(&seat.display_name) == name_key(&name))
        {
            return Err(AppError::AlreadySeated("that name is taken in this lobby"));
        }
        let seat = (0..self.lobby.seat_count)
            .find(|number| self.seats.iter().all(|seat| seat.seat != *number))
            .ok_or(AppError::LobbyFull)?;
        let token = Token::generate();
        let row = SeatRow {
            seat,
            display_name: name,
            player_id,
            token_hash: token.hash(),
            creator: false,
            joined_at: now_millis(),
            control: SeatControl::Human,
            control_seq: 0,
            bot: None,
        };
        self.commit(Change::SeatTaken(row)).await?;
        Ok(JoinedSeat { seat, token })
    }

    /// Whether `code` opens this lobby: any code for a public one, the right one else.
    fn invite_code_fits(&self, code: Option<&str>) -> bool {
        match &self.lobby.invite_hash {
            None => true,
            Some(expected) => invite_code_matches(expected, code),
        }
    }

    async fn leave(&mut self, token_hash: &str) -> Result<(), AppError> {
        self.settle_unconfirmed().await?;
        self.require_open()?;
        let seat = self.seat_of(token_hash).ok_or(AppError::BadToken)?.clone();
        if seat.creator {
            // A lobby without its creator could never start: leaving cancels it.
            return self.cancel(token_hash).await;
        }
        self.commit(Change::SeatFreed(seat.seat)).await
    }

    async fn cancel(&mut self, token_hash: &str) -> Result<(), AppError> {
        self.settle_unconfirmed().await?;
        self.require_open()?;
        self.require_creator(token_hash)?;
        self.commit(Change::Cancelled).await
    }

    async fn start(&mut self, token_hash: &str, randomize_seats: bool) -> Result<(), AppError> {
        self.settle_unconfirmed().await?;
        self.require_open()?;
        self.require_creator(token_hash)?;
        if self.seats.len() < 2 {
            return Err(AppError::NotEnoughPlayers);
        }
        let mut seats: Vec<SeatRow> = self.seats.clone();
        if randomize_seats {
            seats.shuffle(&mut rand::rng());
        }
        let previous_seats: Vec<u8> = seats.iter().map(|seat| seat.seat).collect();
        for (number, seat) in seats.iter_mut().enumerate() {
            seat.seat = number as u8;
        }
        let mut lobby = self.lobby.clone();
        // The salt keeps the published commitment from giving the 64-bit seed away.
        lobby.deck_salt = Some(hex::encode(rand::random::<[u8; 32]>()));
        (lobby.status, lobby.seed, lobby.started_at) = (
            LobbyStatus::Playing,
            Some(rand::random()),
            Some(now_millis()),
        );
        let (game, opening) = Room::game_for(&lobby, seats.len()).map_err(|error| {
            tracing::error!(%error, "cannot set up a game");
            AppError::Internal
        })?;
        self.commit(Change::Started {
            lobby,
            seats,
            game: Box::new(game),
            opening,
            previous_seats,
            randomized: randomize_seats,
        })
        .await
    }

    fn new_game(&self) -> Result<Game, String> {
        Room::game_for(&self.lobby, self.seats.len()).map(|(game, _)| game)
    }

    /// The game a started lobby plays, with the events of its opening draw.
    fn game_for(lobby: &LobbyRow, players: usize) -> Result<(Game, Vec<Event>), String> {
        let seed = lobby.seed.ok_or("a started game without a seed")?;
        let setup = Setup {
            rules: lobby.rules.clone(),
            players: players as u8,
            stack: Stack::Seeded(seed),
        };
        Game::start(setup).map_err(|error| error.to_string())
    }

    fn connect(
        &mut self,
        token_hash: Option<String>,
        invite_code: Option<String>,
        last_seq: Option<u64>,
    ) -> Result<Connected, AppError> {
        let seat = match &token_hash {
            Some(hash) => Some(self.seat_of(hash).ok_or(AppError::BadToken)?.seat),
            None if !self.invite_code_fits(invite_code.as_deref()) => {
                return Err(AppError::PrivateGame);
            }
            None => None,
        };
        let updates = self.updates.subscribe();
        // Count the connection first, so that its own seat is among the connected ones in
        // the snapshot it is about to get.
        if let (Some(hash), Some(seat)) = (&token_hash, seat) {
            let count = self.connections.entry(hash.clone()).or_default();
            *count += 1;
            if *count == 1 {
                self.announce_presence(seat, true);
            }
        }
        let catch_up = self.catch_up(token_hash.as_deref(), last_seq);
        Ok(Connected {
            seat,
            catch_up,
            updates,
        })
    }

    fn disconnect(&mut self, token_hash: Option<String>) {
        let Some(hash) = token_hash else {
            return;
        };
        let Some(count) = self.connections.get_mut(&hash) else {
            return;
        };
        *count -= 1;
        if *count == 0 {
            self.connections.remove(&hash);
            if let Some(seat) = self.seat_of(&hash).map(|seat| seat.seat) {
                self.announce_presence(seat, false);
            }
        }
    }

    fn announce_presence(&self, seat: u8, connected: bool) {
        let message = ServerMessage::Presence { seat, connected };
        let _ = self
            .updates
            .send(Arc::new(Outgoing::plain(None, message.to_json())));
    }

    fn connected_seats(&self) -> Vec<u8> {
        let mut seats: Vec<u8> = self
            .connections
            .keys()
            .filter_map(|hash| self.seat_of(hash).map(|seat| seat.seat))
            .collect();
        seats.sort_unstable();
        seats
    }

    /// The updates after `last_seq` when they are still at hand and few, else a snapshot.
    /// A player to move who missed nothing is reminded of their legal moves, so that a
    /// reconnecting client never waits for a turn that is already its own.
    fn catch_up(&self, token_hash: Option<&str>, last_seq: Option<u64>) -> Vec<Arc<Outgoing>> {
        let seq = self.seq();
        match last_seq {
            Some(last) if last == seq => self.turn_reminder(token_hash).into_iter().collect(),
            Some(last)
                if last < seq && seq - last <= MAX_CATCH_UP && self.has_updates_after(last) =>
            {
                self.recent
                    .iter()
                    .filter(|update| update.seq.is_some_and(|s| s > last))
                    .cloned()
                    .collect()
            }
            _ => vec![self.snapshot(token_hash)],
        }
    }

    /// `your_turn` with the legal moves, for the player to move; `None` for anyone else.
    fn turn_reminder(&self, token_hash: Option<&str>) -> Option<Arc<Outgoing>> {
        let game = self.game.as_ref()?;
        if token_hash.is_none() || token_hash.map(str::to_owned) != self.mover() {
            return None;
        }
        let message = ServerMessage::YourTurn {
            seq: self.seq(),
            legal_moves: legal_moves(game),
        };
        // Not an update (it changes nothing): sent as is, never filtered as already seen.
        Some(Arc::new(Outgoing::plain(None, message.to_json())))
    }

    fn has_updates_after(&self, last: u64) -> bool {
        self.recent
            .front()
            .and_then(|update| update.seq)
            .is_some_and(|oldest| oldest <= last + 1)
    }

    fn snapshot(&self, token_hash: Option<&str>) -> Arc<Outgoing> {
        let to_move = token_hash.is_some() && token_hash.map(str::to_owned) == self.mover();
        let message = ServerMessage::Snapshot {
            seq: self.seq(),
            state: self.state.clone(),
            connected: self.connected_seats(),
            legal_moves: to_move.then(|| self.game.as_ref().map(legal_moves).unwrap_or_default()),
        };
        let mut outgoing = Outgoing::plain(Some(self.seq()), message.to_json());
        outgoing.snapshot = true;
        Arc::new(outgoing)
    }

    /// The token hash of the player to move.
    fn mover(&self) -> Option<String> {
        let seat = self.game.as_ref()?.current_player()?;
        self.seats
            .iter()
            .find(|row| row.seat == seat)
            .map(|row| row.token_hash.clone())
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
        let seat = self.seat_of(token_hash).ok_or(AppError::BadToken)?.seat;
        if let Some(&seq) = self.accepted.get(&(seat, id.clone())) {
            return Ok(seq);
        }
        let game = self.playable_game()?;
        if expected_seq != self.seq() {
            return Err(AppError::StaleSeq {
                expected: expected_seq,
                current: self.seq(),
            });
        }
        match game.current_player() {
            Some(current) if current != seat => return Err(AppError::NotYourTurn(current)),
            _ => {}
        }
        let mut next = game.clone();
        let events = next.play(mv)?;
        let row = MoveRow {
            seq: self.seq() + 1,
            seat,
            command_id: id,
            mv,
            created_at: now_millis(),
            origin: MoveOrigin::Player,
        };
        let change = Change::Moved {
            game: Box::new(next),
            row,
            events,
        };
        self.commit(change).await?;
        Ok(self.seq())
    }

    fn playable_game(&self) -> Result<&Game, AppError> {
        match self.lobby.status {
            LobbyStatus::Open => Err(AppError::GameNotStarted),
            LobbyStatus::Finished => Err(AppError::GameOver),
            LobbyStatus::Cancelled => Err(AppError::LobbyNotOpen("cancelled")),
            LobbyStatus::Playing => self.game.as_ref().ok_or(AppError::Internal),
        }
    }

    /// Writes `change` as the next `seq`, then applies and announces it. When the write's
    /// outcome is unknown, the stored `seq` decides; nothing is applied unless it landed.
    async fn commit(&mut self, change: Change) -> Result<(), AppError> {
        let seq = self.seq() + 1;
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
            Err(other) => Err(AppError::from_store(other)),
        }
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
        match self.store.lobby(self.lobby.id).await {
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
        let seq = self.seq() + 1;
        match self.landed(seq).await {
            Landed::Yes => {
                let orphan_seat = match &change {
                    Change::SeatTaken(row) => Some(row.seat),
                    _ => None,
                };
                self.apply(change);
                if let Some(seat) = orphan_seat {
                    self.commit(Change::SeatFreed(seat)).await?;
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
    async fn write(&self, change: &Change, seq: u64) -> Result<(), StoreError> {
        let id = self.lobby.id;
        match change {
            Change::SeatTaken(row) => self.store.add_seat(id, row, seq).await,
            Change::SeatFreed(seat) => self.store.remove_seat(id, *seat, seq).await,
            Change::Cancelled => self.store.cancel_lobby(id, seq).await,
            Change::Started { lobby, seats, .. } => {
                let (seed, started_at) = (lobby.seed.unwrap_or_default(), lobby.started_at);
                let salt = lobby.deck_salt.as_deref().unwrap_or_default();
                let started_at = started_at.unwrap_or_default();
                self.store
                    .start_game(id, seats, seed, salt, started_at, seq)
                    .await
            }
            Change::Moved { game, row, events } if game.phase() == Phase::Over => {
                let result = self.finished_match(game, row, events);
                let last = FinalChange::Move(row);
                self.store.finish_game(id, last, &result).await
            }
            Change::Moved { row, .. } => self.store.append_move(id, row).await,
        }
    }

    /// Takes a committed change into the room's state and announces it.
    fn apply(&mut self, change: Change) {
        match change {
            Change::SeatTaken(row) => {
                let event =
                    json!({ "type": "seat_taken", "seat": row.seat, "name": row.display_name });
                self.seats.push(row);
                self.seats.sort_by_key(|seat| seat.seat);
                self.publish(vec![event], None);
            }
            Change::SeatFreed(seat) => {
                self.seats.retain(|row| row.seat != seat);
                self.publish(vec![json!({ "type": "seat_freed", "seat": seat })], None);
            }
            Change::Cancelled => {
                self.open_lobby_place = None;
                self.lobby.status = LobbyStatus::Cancelled;
                self.ended_at = Some(Instant::now());
                tracing::info!("lobby cancelled");
                self.publish(vec![json!({ "type": "lobby_cancelled" })], None);
            }
            Change::Started {
                lobby,
                seats,
                game,
                opening,
                previous_seats,
                randomized,
            } => {
                let started = json!({ "type": "game_started", "previous_seats": previous_seats });
                self.apply_start(lobby, seats, *game, started, opening, randomized)
            }
            Change::Moved { game, row, events } => self.apply_move(*game, row, events),
        }
    }

    fn apply_start(
        &mut self,
        lobby: LobbyRow,
        seats: Vec<SeatRow>,
        game: Game,
        started: Value,
        opening: Vec<Event>,
        randomized: bool,
    ) {
        // Only a shuffle renumbers seats; without one every player keeps theirs.
        let reseated = randomized.then(|| {
            let seats_by_token = seats
                .iter()
                .map(|seat| (seat.token_hash.clone(), seat.seat))
                .collect();
            Arc::new(seats_by_token)
        });
        (self.lobby, self.seats, self.game) = (lobby, seats, Some(game));
        self.open_lobby_place = None;
        tracing::info!(players = self.seats.len(), rules = ?self.lobby.rules, "game started");
        let opening = opening
            .iter()
            .map(|event| serde_json::to_value(event).expect("events serialize"));
        self.publish(std::iter::once(started).chain(opening).collect(), reseated);
    }

    fn apply_move(&mut self, game: Game, row: MoveRow, events: Vec<Event>) {
        self.remember(&row, &events);
        self.log.push(row);
        if game.phase() == Phase::Over {
            self.lobby.status = LobbyStatus::Finished;
            self.ended_at = Some(Instant::now());
            tracing::info!(scores = ?game.scores(), "game finished");
        }
        self.game = Some(game);
        self.metrics.moves.inc();
        let events = events
            .iter()
            .map(|event| serde_json::to_value(event).expect("events serialize"))
            .collect();
        self.publish(events, None);
    }

    fn remember(&mut self, row: &MoveRow, events: &[Event]) {
        self.accepted
            .insert((row.seat, row.command_id.clone()), row.seq);
        self.breakdown
            .extend(events.iter().filter_map(|event| match event {
                Event::FeatureScored(score) => Some(score.clone()),
                _ => None,
            }));
    }

    fn finished_match(&self, game: &Game, last: &MoveRow, events: &[Event]) -> FinishedMatch {
        let winners = game.winners().unwrap_or_default();
        let seats = self
            .seats
            .iter()
            .map(|seat| MatchSeat {
                seat: seat.seat,
                display_name: seat.display_name.clone(),
                player_id: seat.player_id,
                score: game.scores()[seat.seat as usize],
                winner: winners.contains(&seat.seat),
                resigned: false,
            })
            .collect();
        let mut breakdown = self.breakdown.clone();
        breakdown.extend(events.iter().filter_map(|event| match event {
            Event::FeatureScored(score) => Some(score.clone()),
            _ => None,
        }));
        let finished_at = last.created_at;
        FinishedMatch {
            id: self.lobby.id,
            name: self.lobby.name.clone(),
            rules: self.lobby.rules.clone(),
            started_at: self.lobby.started_at.unwrap_or(finished_at),
            finished_at,
            status: MatchStatus::Finished,
            tiles_placed: game.tiles_placed(),
            seats,
            breakdown: serde_json::to_value(breakdown).expect("scores serialize"),
            record: self.game_record(game, last, finished_at),
        }
    }

    /// The finished game in the notation of `notation.md`, with the server's extras.
    fn game_record(&self, game: &Game, last: &MoveRow, finished_at: i64) -> Value {
        let moves: Vec<Move> = self.log.iter().chain([last]).map(|row| row.mv).collect();
        let turns = moves
            .chunks(2)
            .zip(game.tiles().iter().skip(1))
            .filter_map(|(pair, placed)| turn_record(pair, placed.tile))
            .collect();
        let seed = self.lobby.seed.unwrap_or_default();
        let mut extra = serde_json::Map::new();
        extra.insert("id".into(), json!(self.lobby.id));
        extra.insert("name".into(), json!(self.lobby.name));
        extra.insert("seed".into(), json!(seed));
        // The reveal: the seed and the salt of the commitment published at the start.
        if let Some(proof) = deck_proof(&self.lobby) {
            proof.write_to(&mut extra);
        }
        extra.insert(
            "seats".into(),
            json!(
                self.seats
                    .iter()
                    .map(|s| &s.display_name)
                    .collect::<Vec<_>>()
            ),
        );
        extra.insert(
            "started_at".into(),
            json!(self.lobby.started_at.map(rfc3339)),
        );
        extra.insert("finished_at".into(), json!(rfc3339(finished_at)));
        let record = GameRecord {
            rules: game.rules().clone(),
            players: game.players(),
            draw_order: shuffled_stack(game.rules(), seed),
            turns,
            extra,
        };
        serde_json::to_value(record).expect("records serialize")
    }

    fn current_state(&self) -> Value {
        let state = public_state(&self.lobby, &self.seats, self.game.as_ref());
        serde_json::to_value(state).expect("state serializes")
    }

    /// Announces a committed change: the next `seq`, its events, and the patch to it.
    fn publish(&mut self, events: Vec<Value>, reseated: Option<Arc<HashMap<String, u8>>>) {
        self.lobby.seq += 1;
        let seq = self.lobby.seq;
        let state = self.current_state();
        let patch =
            serde_json::to_value(json_patch::diff(&self.state, &state)).expect("patches serialize");
        self.state = state;
        let mover = self.mover();
        let update = |legal| ServerMessage::Update {
            seq,
            events: events.clone(),
            patch: patch.clone(),
            legal_moves: legal,
        };
        let for_others = Utf8Bytes::from(update(None).to_json());
        let for_mover = match (&mover, &self.game) {
            (Some(_), Some(game)) => Utf8Bytes::from(update(Some(legal_moves(game))).to_json()),
            _ => for_others.clone(),
        };
        let outgoing = Arc::new(Outgoing {
            seq: Some(seq),
            mover,
            for_mover,
            for_others,
            reseated,
            snapshot: false,
            closing: false,
        });
        self.recent.push_back(outgoing.clone());
        if self.recent.len() > RECENT_UPDATES {
            self.recent.pop_front();
        }
        // Nobody listening is fine: the update is also kept in `recent`.
        let _ = self.updates.send(outgoing);
    }
}

/// The seed and salt of a started game, with their commitment; `None` for games started
/// before decks were committed to.
pub fn deck_proof(lobby: &LobbyRow) -> Option<DeckProof> {
    let salt: [u8; 32] = hex::decode(lobby.deck_salt.as_deref()?)
        .ok()?
        .try_into()
        .ok()?;
    Some(DeckProof::new(lobby.seed?, salt))
}

fn turn_record(pair: &[Move], tile: carcassonne_core::TileId) -> Option<TurnRecord> {
    let [Move::PlaceTile { pos, rotation }, action] = pair else {
        return None;
    };
    Some(TurnRecord {
        tile,
        x: pos.x,
        y: pos.y,
        rotation: *rotation,
        action: Action::from_move(*action)?,
    })
}
