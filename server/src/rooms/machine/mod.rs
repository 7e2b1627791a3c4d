//! The room state machine: everything a lobby or game decides, with no IO.
//!
//! Each request becomes a *decision*: a [`Change`] to commit (or a typed error), computed
//! from the state without touching it. The async shell ([`crate::rooms::actor`]) writes
//! the change to the database and only then calls [`RoomMachine::apply`], which takes it
//! into the state, gives it the next `seq` and returns the update to broadcast. Timers
//! are plain data too: [`RoomMachine::next_wakeup`] says when the shell must come back,
//! and a deadline that has passed is handled like any request.
//!
//! Because nothing here waits or writes, the whole behaviour of a room (turn order,
//! clocks, timeouts, abandonment, resignation, expiry) is unit tested without sockets or
//! a database.

use crate::auth::{Token, invite_code_matches};
use crate::rooms::chat::ChatLog;
use crate::rooms::clocks::{Clocks, TIMEOUTS_TO_ABANDON};
use crate::rooms::error::RoomError;
use crate::rooms::frames::RoomFrame;
use crate::rooms::machine::events::{BotMoveReason, LobbyCancelReason, RoomEvent};
use crate::rooms::machine::kept_updates::KeptUpdates;
use crate::rooms::machine::move_log::MoveLog;
use crate::rooms::names::name_key;
use crate::rooms::outcome::{Ending, MatchBuilder};
use crate::rooms::patch::patch_between;
use crate::rooms::rematch::Rematch;
use crate::rooms::view::{ClockSource, PublicState, legal_moves, public_state};
use crate::rooms::{Outgoing, RoomSettings, Text};
use carcassonne_bots::BotLevel;
use carcassonne_core::{
    Event, FeatureScore, Game, HiddenGame, Move, Phase, PointsByKind, Setup, Stack,
};
use carcassonne_store::{
    ChatEntryRow, FinishedMatch, LiveGame, LobbyRow, LobbyStatus, MatchStatus, Millis, MoveOrigin,
    MoveRow, SeatControl, SeatRow,
};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

mod apply;
mod connections;
pub mod events;
pub mod history;
mod kept_updates;
mod move_log;
mod post_game;
mod rest;
mod talk;
mod timers;

#[cfg(test)]
mod tests;

/// Beyond this many missed updates a client gets a snapshot instead of the patches.
/// Each update kept costs its room its text and 48 bytes.
const MAX_CATCH_UP: u64 = 16;
/// Updates kept for clients that reconnect: as many as a catch-up may send, and no more
/// (a whole game's would stay in memory).
const RECENT_UPDATES: usize = MAX_CATCH_UP as usize;
/// The texts of the kept updates but the newest, at most: a game's updates are about 240
/// bytes each, so six of them, half a minute of a game at human pace (a move every 5 s),
/// as long as a network blip or a phone's screen lock lasts. That is about what the
/// snapshot a client further behind gets costs (0.8 KB at a game's start, 1.8 KB at its
/// end): a longer catch-up saves the client nothing.
const CATCH_UP_TEXT_BYTES: usize = 1536;

/// One change to a lobby or game: decided here, written by the shell, then applied.
#[derive(Debug)]
pub enum Change {
    SeatTaken(SeatRow),
    SeatFreed(u8),
    Started {
        lobby: LobbyRow,
        seats: Vec<SeatRow>,
        game: Box<Game>,
        /// The events of the first draw.
        opening: Vec<Event>,
        previous_seats: Vec<u8>,
        randomized: bool,
    },
    Cancelled(CancelReason),
    Moved {
        row: MoveRow,
        /// Present when this move ends the game: the match's result, which takes the
        /// end-of-game scoring to know. Every move is only checked when it is decided,
        /// and played on the room's game once it is written.
        result: Option<Box<FinishedMatch>>,
    },
    /// A seat's control or token changed; `row` is the seat as it will be stored.
    SeatChanged {
        row: SeatRow,
        reason: SeatChange,
        /// Present when this change ends the game as abandoned.
        result: Option<Box<FinishedMatch>>,
    },
}

impl Change {
    /// The events of this change's update, unless it is a move: what the update
    /// announces, and what the store keeps with the change (a move's events come from
    /// replaying the move log instead, see [`crate::rooms::history`]). Made from the
    /// change alone, before it is written, so that the stored events and the broadcast
    /// ones are the same text.
    pub fn logged_events(&self) -> Option<Vec<EventText>> {
        let events = match self {
            Change::SeatTaken(row) => vec![room_event(RoomEvent::SeatTaken {
                seat: row.seat,
                name: row.display_name.clone(),
                bot: row.bot.clone(),
            })],
            Change::SeatFreed(seat) => vec![room_event(RoomEvent::SeatFreed { seat: *seat })],
            Change::Cancelled(reason) => vec![room_event(match *reason {
                CancelReason::Creator => RoomEvent::LobbyCancelled {
                    reason: LobbyCancelReason::Creator,
                },
                CancelReason::Expired => RoomEvent::LobbyCancelled {
                    reason: LobbyCancelReason::Expired,
                },
                CancelReason::Aborted { seat } => RoomEvent::GameAborted { seat },
            })],
            Change::Started {
                opening,
                previous_seats,
                ..
            } => {
                let started = room_event(RoomEvent::GameStarted {
                    previous_seats: previous_seats.clone(),
                });
                std::iter::once(started)
                    .chain(opening.iter().map(event_json))
                    .collect()
            }
            Change::SeatChanged {
                row,
                reason,
                result,
            } => {
                let changed = room_event(reason.event(row.seat));
                let abandoned = result
                    .is_some()
                    .then(|| room_event(RoomEvent::GameAbandoned {}));
                std::iter::once(changed).chain(abandoned).collect()
            }
            Change::Moved { .. } => return None,
        };
        Some(events)
    }

    /// Whether this change ends a game and rates its match: the store then announces
    /// the rating changes with it ([`carcassonne_store::Store::finish_game`]).
    pub fn rates_match(&self) -> bool {
        let result = match self {
            Change::Moved {
                result: Some(result),
                ..
            } => result,
            Change::SeatChanged {
                result: Some(result),
                ..
            } => result,
            _ => return false,
        };
        result.rating.is_some()
    }

    /// [`Change::logged_events`] as the JSON text of the update's `events` array.
    pub fn logged_events_text(&self) -> Option<String> {
        let events = self.logged_events()?;
        Some(serde_json::to_string(&events).expect("events serialize"))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelReason {
    /// The creator cancelled the lobby (or left it).
    Creator,
    /// The open lobby saw no activity for the configured time.
    Expired,
    /// A player aborted the game before every seat had placed a tile.
    Aborted { seat: u8 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeatChange {
    Resigned,
    /// Too many timeouts in a row: a bot plays the seat until its owner comes back.
    Abandoned,
    /// The owner of an abandoned seat came back.
    Reclaimed,
    /// The seat's token was replaced (recovery with the player's secret).
    TokenReplaced,
}

impl SeatChange {
    fn event(self, seat: u8) -> RoomEvent {
        match self {
            SeatChange::Resigned => RoomEvent::SeatResigned { seat },
            SeatChange::Abandoned => RoomEvent::SeatAbandoned { seat },
            SeatChange::Reclaimed => RoomEvent::SeatReclaimed { seat },
            SeatChange::TokenReplaced => RoomEvent::SeatTokenReplaced { seat },
        }
    }
}

/// What a command comes to: a repeat of one already accepted, or a change to commit.
#[derive(Debug)]
pub enum Decision {
    Repeat(u64),
    Commit(Box<Change>),
}

/// A move a bot must choose now, for the seat to move.
#[derive(Clone, Debug)]
pub struct BotJob {
    /// The `seq` the move is decided on: a later state makes the answer stale.
    pub seq: u64,
    pub seat: u8,
    pub level: BotLevel,
    pub origin: MoveOrigin,
    pub view: HiddenGame,
    pub think: Duration,
}

/// A new connection: its seat, what to send it first, and a presence announcement.
#[derive(Debug)]
pub struct Joined {
    pub seat: Option<u8>,
    pub catch_up: Vec<Arc<Outgoing>>,
    pub presence: Option<Arc<Outgoing>>,
}

/// The state of one lobby or game.
pub struct RoomMachine {
    lobby: LobbyRow,
    seats: Vec<SeatRow>,
    game: Option<Game>,
    /// Set while the room rests without its game (see [`rest`]).
    resting: Option<rest::Resting>,
    log: MoveLog,
    /// Every feature scored so far, for the match summary.
    breakdown: Vec<FeatureScore>,
    /// Each seat's points so far by the kind of feature that paid them.
    points: Vec<PointsByKind>,
    clocks: Option<Clocks>,
    /// How the game ended, once it has.
    outcome: Option<Ending>,
    /// The public state at `seq`, which the next patch starts from.
    view: PublicState,
    recent: KeptUpdates,
    /// Open connections per player token hash.
    connections: HashMap<String, u32>,
    /// Abandoned seats whose owner said hello since: each is taken back as a due change.
    reclaims: Vec<u8>,
    /// The last change to an open lobby (or its creation), for expiry.
    last_activity: Millis,
    settings: RoomSettings,
    ended: bool,
    /// The game's chat, numbered apart from `seq`.
    chat: ChatLog,
    /// Once the game has finished: the offer to play again.
    rematch: Rematch,
    /// Once the game has finished: until when the room stays for its players.
    post_game_until: Option<Millis>,
}

impl RoomMachine {
    /// A freshly created lobby.
    pub fn open(
        lobby: LobbyRow,
        seats: Vec<SeatRow>,
        settings: RoomSettings,
        now: Millis,
    ) -> RoomMachine {
        RoomMachine {
            view: public_state(&lobby, &seats, None, None, None),
            chat: ChatLog::new(lobby.chat_policy),
            last_activity: now.max(lobby.created_at),
            lobby,
            seats,
            game: None,
            resting: None,
            log: MoveLog::default(),
            breakdown: Vec::new(),
            points: Vec::new(),
            clocks: None,
            outcome: None,
            recent: KeptUpdates::new(RECENT_UPDATES, CATCH_UP_TEXT_BYTES),
            connections: HashMap::new(),
            reclaims: Vec::new(),
            settings,
            ended: false,
            rematch: Rematch::default(),
            post_game_until: None,
        }
    }

    /// Brings an unfinished lobby or game back from the database by replaying its log.
    /// An open lobby's last activity is its newest seat (leaving is not timestamped); a
    /// running turn gets at least one whole allowance from `now` (see `clocks`).
    pub fn restore(
        live: LiveGame,
        settings: RoomSettings,
        now: Millis,
    ) -> Result<RoomMachine, String> {
        let joined = live.seats.iter().map(|seat| seat.joined_at).max();
        let mut machine = RoomMachine::open(live.lobby, live.seats, settings, 0);
        machine.chat = ChatLog::restore(machine.lobby.chat_policy, &live.chat, &live.chat_mutes);
        machine.last_activity = joined.unwrap_or(0).max(machine.lobby.created_at);
        if machine.lobby.status == LobbyStatus::Playing {
            machine.replay(live.moves)?;
            if let Some(clocks) = machine.clocks.as_mut() {
                clocks.resume(now);
            }
        }
        machine.view = machine.current_view(now);
        Ok(machine)
    }

    /// Replaces what the room holds of its game by what the database holds (`live`), read
    /// because the room found its memory behind the store: a write of its own found its
    /// `seq` taken, or the stored `seq` was seen ahead of the room's. Who is connected,
    /// and which abandoned seats their owners want back, are the room's own and stay.
    /// Returns the snapshot every connection is sent: the updates that led to the stored
    /// state were never the room's to send, and a snapshot newer than what a client has
    /// always passes.
    pub fn reload(&mut self, live: LiveGame, now: Millis) -> Result<Arc<Outgoing>, String> {
        let mut reloaded = RoomMachine::restore(live, self.settings.clone(), now)?;
        reloaded.connections = std::mem::take(&mut self.connections);
        reloaded.reclaims = std::mem::take(&mut self.reclaims);
        *self = reloaded;
        Ok(self.snapshot_for_everyone(now))
    }

    fn replay(&mut self, moves: Vec<MoveRow>) -> Result<(), String> {
        let (mut game, _) = game_for(&self.lobby, self.seats.len())?;
        let mut clocks = self.clocks_at_start(&game);
        for row in moves {
            let events = game
                .play(row.mv)
                .map_err(|error| format!("move {} does not replay: {error}", row.seq))?;
            clocks.record(&row, game.current_player());
            self.remember(&events);
            self.log.push(&row);
        }
        // A seat whose control changed after its last timeout was taken back since.
        for seat in &self.seats {
            if seat.control_seq >= clocks.streak(seat.seat).1 {
                clocks.clear_streak(seat.seat);
            }
        }
        self.clocks = Some(clocks);
        self.game = Some(game);
        Ok(())
    }

    fn clocks_at_start(&self, game: &Game) -> Clocks {
        let started_at = self.lobby.started_at.unwrap_or(self.lobby.created_at);
        Clocks::start(self.lobby.clock, game.players(), started_at)
    }

    pub fn id(&self) -> uuid::Uuid {
        self.lobby.id
    }

    pub fn seq(&self) -> u64 {
        self.lobby.seq
    }

    pub fn status(&self) -> LobbyStatus {
        self.lobby.status
    }

    pub fn lobby(&self) -> &LobbyRow {
        &self.lobby
    }

    pub fn seats(&self) -> &[SeatRow] {
        &self.seats
    }

    /// Whether the room can no longer change (finished, abandoned or cancelled).
    pub fn ended(&self) -> bool {
        self.ended
    }

    fn seat_of(&self, token_hash: &str) -> Option<&SeatRow> {
        self.seats.iter().find(|seat| seat.token_hash == token_hash)
    }

    fn seat_row(&self, seat: u8) -> Option<&SeatRow> {
        self.seats.iter().find(|row| row.seat == seat)
    }

    fn require_open(&self) -> Result<(), RoomError> {
        match self.lobby.status {
            LobbyStatus::Open => Ok(()),
            LobbyStatus::Playing => Err(RoomError::LobbyNotOpen("playing")),
            LobbyStatus::Finished => Err(RoomError::LobbyNotOpen("finished")),
            LobbyStatus::Cancelled => Err(RoomError::LobbyNotOpen("cancelled")),
        }
    }

    fn require_creator(&self, token_hash: &str) -> Result<(), RoomError> {
        match self.seat_of(token_hash) {
            Some(seat) if seat.creator => Ok(()),
            Some(_) => Err(RoomError::NotCreator),
            None => Err(RoomError::BadToken),
        }
    }

    /// Whether `code` opens this lobby: any code for a public one, the right one else.
    pub fn invite_code_fits(&self, code: Option<&str>) -> bool {
        match &self.lobby.invite_hash {
            None => true,
            Some(expected) => invite_code_matches(expected, code),
        }
    }

    // ---- Lobby decisions -------------------------------------------------------------

    /// A guest or registered player takes the first free seat.
    pub fn join(
        &self,
        name: String,
        player_id: Option<uuid::Uuid>,
        invite_code: Option<&str>,
        now: Millis,
    ) -> Result<(Change, Token), RoomError> {
        self.require_open()?;
        if !self.invite_code_fits(invite_code) {
            return Err(RoomError::BadInviteCode);
        }
        if self.lobby.rated && player_id.is_none() {
            return Err(RoomError::RatedPlayersOnly);
        }
        if player_id.is_some() && self.seats.iter().any(|seat| seat.player_id == player_id) {
            return Err(RoomError::AlreadySeated(
                "this player already has a seat here",
            ));
        }
        let token = Token::generate();
        let row = self.new_seat(name, player_id, token.hash(), None, now)?;
        Ok((Change::SeatTaken(row), token))
    }

    /// The creator seats a bot. Nobody ever holds a bot seat's token.
    pub fn add_bot(
        &self,
        token_hash: &str,
        level: BotLevel,
        name: Option<String>,
        now: Millis,
    ) -> Result<Change, RoomError> {
        self.require_open()?;
        self.require_creator(token_hash)?;
        let pool_allows_bots = self.settings.rated_bot_pools.allow(self.lobby.seat_count);
        if self.lobby.rated && !pool_allows_bots {
            return Err(RoomError::RatedPlayersOnly);
        }
        let free = self.free_seat()?;
        let name = name.unwrap_or_else(|| default_bot_name(level, free));
        let hash = Token::generate().hash();
        let row = self.new_seat(name, None, hash, Some(level), now)?;
        Ok(Change::SeatTaken(row))
    }

    /// The creator frees a seat a bot holds.
    pub fn remove_bot(&self, token_hash: &str, seat: u8) -> Result<Change, RoomError> {
        self.require_open()?;
        self.require_creator(token_hash)?;
        match self.seat_row(seat) {
            Some(row) if row.bot.is_some() => Ok(Change::SeatFreed(seat)),
            _ => Err(RoomError::NotABot(seat)),
        }
    }

    fn free_seat(&self) -> Result<u8, RoomError> {
        (0..self.lobby.seat_count)
            .find(|number| self.seats.iter().all(|seat| seat.seat != *number))
            .ok_or(RoomError::LobbyFull)
    }

    fn new_seat(
        &self,
        name: String,
        player_id: Option<uuid::Uuid>,
        token_hash: String,
        bot: Option<BotLevel>,
        now: Millis,
    ) -> Result<SeatRow, RoomError> {
        let seat = self.free_seat()?;
        let key = name_key(&name);
        if self.seats.iter().any(|s| name_key(&s.display_name) == key) {
            return Err(RoomError::AlreadySeated("that name is taken in this lobby"));
        }
        Ok(SeatRow {
            seat,
            display_name: name,
            player_id,
            token_hash,
            creator: false,
            joined_at: now,
            control: SeatControl::Human,
            control_seq: 0,
            bot: bot.map(|level| level.to_string()),
        })
    }

    pub fn leave(&self, token_hash: &str) -> Result<Change, RoomError> {
        self.require_open()?;
        let seat = self.seat_of(token_hash).ok_or(RoomError::BadToken)?;
        if seat.creator {
            // A lobby without its creator could never start: leaving cancels it.
            return Ok(Change::Cancelled(CancelReason::Creator));
        }
        Ok(Change::SeatFreed(seat.seat))
    }

    pub fn cancel(&self, token_hash: &str) -> Result<Change, RoomError> {
        self.require_open()?;
        self.require_creator(token_hash)?;
        Ok(Change::Cancelled(CancelReason::Creator))
    }

    /// Starts the game; `seed`, `salt` and `order` (a permutation of the seats when they
    /// are shuffled) are the caller's randomness, so that tests can fix them.
    pub fn start(
        &self,
        token_hash: &str,
        start: StartDraw,
        now: Millis,
    ) -> Result<Change, RoomError> {
        self.require_open()?;
        self.require_creator(token_hash)?;
        if self.seats.len() < 2 {
            return Err(RoomError::NotEnoughPlayers);
        }
        self.started(start, now)
    }

    /// Starts a game the quick-play queue seated: no creator starts it, and it starts
    /// only once every seat is taken, as the matchmaker writes it. Asked again of a
    /// started game, it is refused as `lobby_not_open`, which the queue takes as done.
    pub fn start_matched(&self, start: StartDraw, now: Millis) -> Result<Change, RoomError> {
        self.require_open()?;
        if self.seats.len() != usize::from(self.lobby.seat_count) {
            return Err(RoomError::NotEnoughPlayers);
        }
        self.started(start, now)
    }

    fn started(&self, start: StartDraw, now: Millis) -> Result<Change, RoomError> {
        let randomized = start.order.is_some();
        let mut seats: Vec<SeatRow> = match &start.order {
            Some(order) => order
                .iter()
                .filter_map(|&i| self.seats.get(i).cloned())
                .collect(),
            None => self.seats.clone(),
        };
        if seats.len() != self.seats.len() {
            return Err(RoomError::Internal);
        }
        let previous_seats: Vec<u8> = seats.iter().map(|seat| seat.seat).collect();
        for (number, seat) in seats.iter_mut().enumerate() {
            seat.seat = number as u8;
        }
        let mut lobby = self.lobby.clone();
        lobby.deck_salt = Some(hex::encode(start.salt));
        (lobby.status, lobby.seed, lobby.started_at) =
            (LobbyStatus::Playing, Some(start.seed), Some(now));
        let (game, opening) = game_for(&lobby, seats.len()).map_err(|error| {
            tracing::error!(%error, "cannot set up a game");
            RoomError::Internal
        })?;
        Ok(Change::Started {
            lobby,
            seats,
            game: Box::new(game),
            opening,
            previous_seats,
            randomized,
        })
    }

    // ---- Game decisions --------------------------------------------------------------

    /// A player's move.
    pub fn command(
        &self,
        token_hash: &str,
        id: String,
        expected_seq: u64,
        mv: Move,
        now: Millis,
    ) -> Result<Decision, RoomError> {
        let seat = self.seat_of(token_hash).ok_or(RoomError::BadToken)?;
        if let Some(seq) = self.accepted_seq(seat.seat, &id) {
            return Ok(Decision::Repeat(seq));
        }
        let game = self.playable_game()?;
        match seat.control {
            SeatControl::Human => {}
            SeatControl::Abandoned => return Err(RoomError::SeatAbandoned),
            SeatControl::Resigned => return Err(RoomError::Resigned),
        }
        if expected_seq != self.seq() {
            return Err(RoomError::StaleSeq {
                expected: expected_seq,
                current: self.seq(),
            });
        }
        match game.current_player() {
            Some(current) if current != seat.seat => return Err(RoomError::NotYourTurn(current)),
            _ => {}
        }
        if self.clocks.as_ref().is_some_and(Clocks::turn_timed_out) {
            return Err(RoomError::TurnTimedOut);
        }
        let change = self.move_change(seat.seat, id, mv, MoveOrigin::Player, now)?;
        Ok(Decision::Commit(Box::new(change)))
    }

    /// The `seq` at which `seat`'s command `id` was accepted, if it was: a repeat gets the
    /// same acknowledgement and is never applied twice. Looked up in the move log (a
    /// game's few hundred moves) rather than kept in a map of its own, which held a
    /// second copy of every command id.
    fn accepted_seq(&self, seat: u8, id: &str) -> Option<u64> {
        self.log.accepted_seq(seat, id)
    }

    /// A bot's answer to `job`; stale when anything changed since the job was given.
    pub fn bot_move(&self, job: &BotJob, mv: Move, now: Millis) -> Result<Change, RoomError> {
        if job.seq != self.seq() {
            return Err(RoomError::StaleSeq {
                expected: job.seq,
                current: self.seq(),
            });
        }
        let mut id = format!("bot:{}", job.seq);
        while self.accepted_seq(job.seat, &id).is_some() {
            id.push('+');
        }
        self.move_change(job.seat, id, mv, job.origin, now)
    }

    fn move_change(
        &self,
        seat: u8,
        command_id: String,
        mv: Move,
        origin: MoveOrigin,
        now: Millis,
    ) -> Result<Change, RoomError> {
        let game = self.playable_game()?;
        // Checked, not played: a refused move changes nothing, and an accepted one is
        // played on the room's game only once written, so no move clones the game.
        let ends = game.check_ends_game(mv)?;
        let row = MoveRow {
            seq: self.seq() + 1,
            seat,
            command_id,
            mv,
            created_at: now,
            origin,
        };
        let result = match ends {
            true => Some(Box::new(self.last_move_result(game, &row, now)?)),
            false => None,
        };
        Ok(Change::Moved { row, result })
    }

    /// The result a game's last move comes to, for its write to carry: the move is played
    /// ahead on a copy of the game, dropped at once rather than kept while the write is
    /// under way (about 13 KB a game, for every game ending in the same batch).
    fn last_move_result(
        &self,
        game: &Game,
        row: &MoveRow,
        now: Millis,
    ) -> Result<FinishedMatch, RoomError> {
        let mut game = game.clone();
        let events = game.play(row.mv)?;
        Ok(self.finished_match(&game, &self.seats, Some(row), &events, now))
    }

    fn playable_game(&self) -> Result<&Game, RoomError> {
        match self.lobby.status {
            LobbyStatus::Open => Err(RoomError::GameNotStarted),
            LobbyStatus::Finished => Err(RoomError::GameOver),
            LobbyStatus::Cancelled => Err(RoomError::LobbyNotOpen("cancelled")),
            LobbyStatus::Playing => self.game.as_ref().ok_or(RoomError::Internal),
        }
    }

    /// A player resigns: a bot plays the seat to the end, and it cannot win. When no
    /// seat is left to a human, the game ends at once as abandoned.
    pub fn resign(&self, token_hash: &str, now: Millis) -> Result<Change, RoomError> {
        let seat = self.seat_of(token_hash).ok_or(RoomError::BadToken)?;
        self.playable_game()?;
        if seat.control == SeatControl::Resigned {
            return Err(RoomError::Resigned);
        }
        Ok(self.seat_change(seat, SeatControl::Resigned, SeatChange::Resigned, now))
    }

    /// A player aborts the game while some seat has not yet placed a tile.
    pub fn abort(&self, token_hash: &str) -> Result<Change, RoomError> {
        let seat = self.seat_of(token_hash).ok_or(RoomError::BadToken)?;
        let game = self.playable_game()?;
        if game.tiles_placed() >= u32::from(game.players()) {
            return Err(RoomError::TooLateToAbort);
        }
        Ok(Change::Cancelled(CancelReason::Aborted { seat: seat.seat }))
    }

    /// A registered player recovers their seat with a new token; an abandoned seat is
    /// taken back at the same time.
    pub fn reclaim(&self, player_id: uuid::Uuid) -> Result<(Change, Token), RoomError> {
        let seat = self
            .seats
            .iter()
            .find(|seat| seat.player_id == Some(player_id))
            .ok_or(RoomError::NotFound("this player holds no seat here"))?;
        if self.ended {
            return Err(RoomError::GameOver);
        }
        let token = Token::generate();
        let mut row = seat.clone();
        row.token_hash = token.hash();
        row.control_seq = self.seq() + 1;
        if row.control == SeatControl::Abandoned {
            row.control = SeatControl::Human;
        }
        let change = Change::SeatChanged {
            row,
            reason: SeatChange::TokenReplaced,
            result: None,
        };
        Ok((change, token))
    }

    /// The abandoned seat whose owner said hello, taken back: the seat is theirs again.
    pub(super) fn seat_to_reclaim(&self, now: Millis) -> Option<Change> {
        self.playable_game().ok()?;
        let seat = self.seats.iter().find(|seat| {
            seat.control == SeatControl::Abandoned && self.reclaims.contains(&seat.seat)
        })?;
        Some(self.seat_change(seat, SeatControl::Human, SeatChange::Reclaimed, now))
    }

    fn seat_change(
        &self,
        seat: &SeatRow,
        control: SeatControl,
        reason: SeatChange,
        now: Millis,
    ) -> Change {
        let mut row = seat.clone();
        row.control = control;
        row.control_seq = self.seq() + 1;
        let seats: Vec<SeatRow> = self
            .seats
            .iter()
            .map(|s| {
                if s.seat == row.seat {
                    row.clone()
                } else {
                    s.clone()
                }
            })
            .collect();
        let result = self.abandoned_result(&seats, now).map(Box::new);
        Change::SeatChanged {
            row,
            reason,
            result,
        }
    }

    /// The abandoned game's match when `seats` leave no human seat to a human.
    fn abandoned_result(&self, seats: &[SeatRow], now: Millis) -> Option<FinishedMatch> {
        let human = |seat: &&SeatRow| seat.bot.is_none();
        let someone_plays = seats
            .iter()
            .filter(human)
            .any(|seat| seat.control == SeatControl::Human);
        let game = self.game.as_ref()?;
        if someone_plays || !seats.iter().any(|seat| seat.bot.is_none()) {
            return None;
        }
        Some(self.finished_match(game, seats, None, &[], now))
    }

    fn finished_match(
        &self,
        game: &Game,
        seats: &[SeatRow],
        last: Option<&MoveRow>,
        events: &[Event],
        now: Millis,
    ) -> FinishedMatch {
        let status = if game.phase() == Phase::Over {
            MatchStatus::Finished
        } else {
            MatchStatus::Abandoned
        };
        let builder = MatchBuilder {
            lobby: &self.lobby,
            seats,
            game,
            moves: self.log.moves().collect(),
            last,
            breakdown: &self.breakdown,
            points: &self.points,
            events,
            status,
            finished_at: last.map_or(now, |row| row.created_at),
        };
        builder.finished_match()
    }
}

/// The randomness of a game's start, drawn by the caller.
#[derive(Clone, Debug)]
pub struct StartDraw {
    pub seed: u64,
    pub salt: [u8; 32],
    /// The seats' new order (indices into the lobby's seats), when shuffled.
    pub order: Option<Vec<usize>>,
}

impl StartDraw {
    /// A fresh draw from the thread's generator.
    pub fn random(seats: usize, shuffle: bool) -> StartDraw {
        use rand::seq::SliceRandom;
        let order = shuffle.then(|| {
            let mut order: Vec<usize> = (0..seats).collect();
            order.shuffle(&mut rand::rng());
            order
        });
        StartDraw {
            seed: rand::random(),
            // The salt keeps the published commitment from giving the 64-bit seed away.
            salt: rand::random(),
            order,
        }
    }
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

/// An event as the JSON text an update carries. Events go straight to text: building
/// each as a `serde_json::Value` tree first cost an allocation per key and string.
type EventText = Box<serde_json::value::RawValue>;

fn event_json(event: &Event) -> EventText {
    serde_json::value::to_raw_value(event).expect("events serialize")
}

fn room_event(event: RoomEvent) -> EventText {
    serde_json::value::to_raw_value(&event).expect("events serialize")
}

fn presence_message(seat: u8, connected: bool) -> Arc<Outgoing> {
    let message = RoomFrame::Presence { seat, connected };
    Arc::new(Outgoing::plain(None, message.to_json()))
}

/// "Greedy bot 2" for a greedy bot in seat 1: seats are counted from 1 for people.
pub(crate) fn default_bot_name(level: BotLevel, seat: u8) -> String {
    let mut title = level.to_string();
    if let Some(first) = title.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    format!("{title} bot {}", seat + 1)
}

/// Why a bot made a move: `timeout`, `bot` (a bot's own seat), `abandoned` or `resigned`.
fn origin_reason(origin: MoveOrigin, seat: Option<&SeatRow>) -> BotMoveReason {
    match (origin, seat) {
        (MoveOrigin::Timeout, _) => BotMoveReason::Timeout,
        (_, Some(row)) if row.bot.is_some() => BotMoveReason::Bot,
        (_, Some(row)) if row.control == SeatControl::Resigned => BotMoveReason::Resigned,
        (_, Some(row)) if row.control == SeatControl::Abandoned => BotMoveReason::Abandoned,
        _ => BotMoveReason::Bot,
    }
}
