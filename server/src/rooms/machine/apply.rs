//! Applying committed changes: the next `seq`, the new public state, and the update
//! (events, patch, legal moves for the player to move) that goes to every connection.

use super::*;
use crate::rooms::outgoing::Audience;
use crate::rooms::patch::{Operation, patch_of_move};
use crate::rooms::view;
use carcassonne_store::ratings::RatingChange;

impl RoomMachine {
    /// Takes a committed change into the state: the next `seq`, and the update to send.
    pub fn apply(&mut self, change: Change, now: Millis) -> Arc<Outgoing> {
        // A change that is not a move announces the events the store keeps with it.
        let events = change.logged_events().unwrap_or_default();
        match change {
            Change::SeatTaken(row) => {
                self.seats.push(row);
                self.seats.sort_by_key(|seat| seat.seat);
                self.last_activity = now;
                self.publish(events, None, now)
            }
            Change::SeatFreed(seat) => {
                self.seats.retain(|row| row.seat != seat);
                self.last_activity = now;
                self.publish(events, None, now)
            }
            Change::Cancelled(reason) => self.apply_cancel(reason, events, now),
            Change::Started {
                lobby,
                seats,
                game,
                randomized,
                ..
            } => self.apply_start(lobby, seats, *game, events, randomized, now),
            Change::Moved { row, result } => self.apply_move(row, result, now),
            Change::SeatChanged {
                row,
                reason,
                result,
            } => self.apply_seat_change(row, reason, result.as_deref(), events, now),
        }
    }

    pub(super) fn apply_cancel(
        &mut self,
        reason: CancelReason,
        events: Vec<EventText>,
        now: Millis,
    ) -> Arc<Outgoing> {
        tracing::info!(?reason, "lobby cancelled");
        self.lobby.status = LobbyStatus::Cancelled;
        self.ended = true;
        if let Some(clocks) = self.clocks.as_mut() {
            clocks.stop();
        }
        self.publish(events, None, now)
    }

    pub(super) fn apply_start(
        &mut self,
        lobby: LobbyRow,
        seats: Vec<SeatRow>,
        game: Game,
        events: Vec<EventText>,
        randomized: bool,
        now: Millis,
    ) -> Arc<Outgoing> {
        // Only a shuffle renumbers seats; without one every player keeps theirs.
        let reseated = randomized.then(|| {
            let seats_by_token = seats
                .iter()
                .map(|seat| (seat.token_hash.clone(), seat.seat))
                .collect();
            Arc::new(seats_by_token)
        });
        self.clocks = Some(Clocks::start(lobby.clock, game.players(), now));
        (self.lobby, self.seats, self.game) = (lobby, seats, Some(game));
        tracing::info!(players = self.seats.len(), rules = ?self.lobby.rules, "game started");
        self.publish(events, reseated, now)
    }

    pub(super) fn apply_move(
        &mut self,
        row: MoveRow,
        result: Option<Box<FinishedMatch>>,
        now: Millis,
    ) -> Arc<Outgoing> {
        let mut announced = Vec::new();
        if row.origin == MoveOrigin::Timeout && !self.turn_timed_out_announced(&row) {
            let timeouts = self.clocks.as_ref().map_or(0, |c| c.streak(row.seat).0) + 1;
            announced.push(room_event(RoomEvent::TurnTimedOut {
                seat: row.seat,
                timeouts_in_row: timeouts,
            }));
        }
        if row.origin != MoveOrigin::Player {
            announced.push(room_event(RoomEvent::BotMoved {
                seat: row.seat,
                reason: origin_reason(row.origin, self.seat_row(row.seat)),
            }));
        }
        let events = self.play_written(row.mv);
        let next = self.game.as_ref().and_then(Game::current_player);
        if let Some(clocks) = self.clocks.as_mut() {
            clocks.record(&row, next);
        }
        self.remember(&events);
        self.log.push(&row);
        if let Some(result) = &result {
            self.finish(result, now);
        }
        announced.extend(events.iter().map(event_json));
        self.publish_move(announced, now)
    }

    /// Plays a written move on the room's game and returns its events.
    fn play_written(&mut self, mv: Move) -> Vec<Event> {
        let game = self
            .game
            .as_mut()
            .expect("moves are decided on a game in play");
        // The move was checked on this very state when it was decided, and the room
        // applies no other change between deciding a move and applying it once written
        // (an unconfirmed write is settled before anything else), so it cannot be
        // refused now; a refusal would mean the stored log and the room disagree.
        game.play(mv)
            .expect("a written move was checked on this state")
    }

    /// Whether the timeout of this move's turn was already announced (with its tile).
    pub(super) fn turn_timed_out_announced(&self, row: &MoveRow) -> bool {
        self.log
            .last()
            .is_some_and(|last| last.seat == row.seat && last.origin == MoveOrigin::Timeout)
            && !matches!(row.mv, Move::PlaceTile { .. })
    }

    pub(super) fn apply_seat_change(
        &mut self,
        row: SeatRow,
        reason: SeatChange,
        result: Option<&FinishedMatch>,
        events: Vec<EventText>,
        now: Millis,
    ) -> Arc<Outgoing> {
        let seat = row.seat;
        // Whatever changed the seat settles a wish to take it back.
        self.reclaims.retain(|&wanted| wanted != seat);
        if matches!(reason, SeatChange::Reclaimed | SeatChange::TokenReplaced)
            && let Some(clocks) = self.clocks.as_mut()
        {
            clocks.clear_streak(seat);
        }
        if let Some(slot) = self.seats.iter_mut().find(|s| s.seat == seat) {
            // A replaced token ends the old token's connections' claim to the seat.
            if slot.token_hash != row.token_hash {
                self.connections.remove(&slot.token_hash);
            }
            *slot = row;
        }
        if let Some(result) = result {
            self.finish(result, now);
        }
        tracing::info!(seat, ?reason, "seat changed");
        self.publish(events, None, now)
    }

    pub(super) fn finish(&mut self, result: &FinishedMatch, now: Millis) {
        self.outcome = Some(Ending::of(result));
        self.lobby.status = LobbyStatus::Finished;
        self.lobby.finished_at = Some(result.finished_at);
        self.ended = true;
        // The result was made from it, and nothing reads it in the post-game stay.
        self.breakdown = Vec::new();
        self.begin_post_game(now);
        if let Some(clocks) = self.clocks.as_mut() {
            clocks.stop();
        }
        tracing::info!(status = ?result.status, "game finished");
    }

    pub(super) fn remember(&mut self, events: &[Event]) {
        self.breakdown
            .extend(events.iter().filter_map(|event| match event {
                Event::FeatureScored(score) => Some(score.clone()),
                _ => None,
            }));
        self.points
            .resize(self.seats.len(), PointsByKind::default());
        for (seat, points) in self.points.iter_mut().enumerate() {
            points.add_events(seat as u8, events);
        }
    }

    // ---- Publishing ------------------------------------------------------------------

    pub(super) fn current_view(&self, _now: Millis) -> PublicState {
        debug_assert!(self.resting.is_none(), "the view of a resting room");
        public_state(
            &self.lobby,
            &self.seats,
            self.game.as_ref(),
            self.clock_source(),
            self.outcome.as_ref(),
        )
    }

    fn clock_source(&self) -> Option<ClockSource<'_>> {
        self.clocks.as_ref().map(|clocks| ClockSource {
            clocks,
            running: !self.ended,
        })
    }

    /// Announces the rating changes of the rated game that just ended, which the store
    /// wrote as the update after its last ([`events::ratings_announcement`]): the same
    /// events, and no change to the state.
    pub fn announce_ratings(&mut self, changes: Vec<RatingChange>, now: Millis) -> Arc<Outgoing> {
        let event = room_event(RoomEvent::RatingsChanged { changes });
        self.publish(vec![event], None, now)
    }

    /// Announces a committed change: the next `seq`, its events, and the patch to it.
    pub(super) fn publish(
        &mut self,
        events: Vec<EventText>,
        reseated: Option<Arc<HashMap<String, u8>>>,
        now: Millis,
    ) -> Arc<Outgoing> {
        let view = self.current_view(now);
        let patch = patch_between(&self.view, &view);
        self.view = view;
        self.announce(events, &patch, reseated, now)
    }

    /// Announces a committed move. A move changes only the game and, when it ends it,
    /// the status, so only those parts of the view are rebuilt and compared: the rest
    /// (names, rules, seats, the deck commitment and its SHA-256) is kept as it was.
    pub(super) fn publish_move(&mut self, events: Vec<EventText>, now: Millis) -> Arc<Outgoing> {
        let game = self
            .game
            .as_ref()
            .map(|game| view::game_view(game, self.clock_source(), self.outcome.as_ref()));
        let status_before = std::mem::replace(&mut self.view.status, self.lobby.status);
        let game_before = std::mem::replace(&mut self.view.game, game);
        let patch = patch_of_move(status_before, game_before.as_ref(), &self.view);
        self.announce(events, &patch, None, now)
    }

    /// Gives a change the next `seq` and makes its update from its events and patch.
    fn announce(
        &mut self,
        events: Vec<EventText>,
        patch: &[Operation],
        reseated: Option<Arc<HashMap<String, u8>>>,
        now: Millis,
    ) -> Arc<Outgoing> {
        self.lobby.seq += 1;
        let seq = self.lobby.seq;
        let mover = self.mover();
        let turn_ms_left = self.turn_ms_left(now);
        // Serialized once, for the mover's copy and everyone else's.
        let (events, patch) = (raw_json(&events), raw_json(patch));
        let update = |legal| RoomFrame::Update {
            seq,
            events: events.clone(),
            patch: patch.clone(),
            legal_moves: legal,
            turn_ms_left,
        };
        let for_others = Text::from(update(None).to_json());
        let for_mover = match (&mover, &self.game) {
            (Some(_), Some(game)) => Text::from(update(Some(legal_moves(game))).to_json()),
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
            seq_check: false,
            audience: Audience::Everyone,
            chat: None,
            mutes: None,
        });
        self.recent.push(outgoing.clone());
        outgoing
    }
}

/// `value` as JSON text, shared by every message that carries it.
fn raw_json<T: serde::Serialize + ?Sized>(value: &T) -> Arc<serde_json::value::RawValue> {
    let text = serde_json::to_string(value).expect("updates serialize");
    Arc::from(serde_json::value::RawValue::from_string(text).expect("serde_json writes JSON"))
}
