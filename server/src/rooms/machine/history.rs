//! A game's event log, rebuilt from the database: the `events` of every update it had,
//! by `seq`, exactly as each `update` message carried them.
//!
//! Two sources make it up. Every change but a move stored its update's events with it
//! (seats taken and freed, the start with its opening draw, a cancellation, seat changes;
//! see [`Change::logged_events`]). A move's events are replayed: the stored moves are
//! played in order on the same engine, from the same seed, and the events the room put
//! before a bot's move (`turn_timed_out`, `bot_moved`) are made the way
//! [`RoomMachine::apply`] makes them, from the clocks and the seats' control as they
//! stood, which the stored seat changes tell.

use super::*;
use carcassonne_store::GameLog;
use serde_json::value::RawValue;

/// One update's events: its `seq` and the JSON array its `events` field held.
#[derive(Debug)]
pub struct LoggedUpdate {
    pub seq: u64,
    pub events: Box<RawValue>,
}

/// A page of the log: updates after a `seq`, and where the next page starts.
#[derive(Debug)]
pub struct LogPage {
    pub items: Vec<LoggedUpdate>,
    /// The last `seq` of `items` when more updates follow it; `None` at the end.
    pub next_after_seq: Option<u64>,
}

/// The updates of `log` with a `seq` above `after_seq`, at most `limit` of them, in
/// `seq` order.
pub fn log_page(log: GameLog, after_seq: u64, limit: usize) -> Result<LogPage, String> {
    let mut updates = rebuild(
        log,
        after_seq.saturating_add(limit as u64).saturating_add(1),
    )?;
    updates.retain(|update| update.seq > after_seq);
    let more = updates.len() > limit;
    updates.truncate(limit);
    let next_after_seq = match more {
        true => updates.last().map(|update| update.seq),
        false => None,
    };
    Ok(LogPage {
        items: updates,
        next_after_seq,
    })
}

/// Every update of `log` up to `seq` `until` (inclusive), in `seq` order. An update that
/// is neither a move nor stored with its events (a lobby's changes before the server kept
/// them) is left out.
pub fn rebuild(log: GameLog, until: u64) -> Result<Vec<LoggedUpdate>, String> {
    let GameLog {
        lobby,
        seats,
        moves,
        events: stored,
    } = log;
    let mut replay = match lobby.seed {
        Some(_) => Some(MoveReplay::start(&lobby, seats)?),
        None => None,
    };
    let mut stored = stored.into_iter().peekable();
    let mut updates = Vec::new();
    for row in moves {
        // The stored updates before this move, in order.
        while let Some((seq, text)) = stored.next_if(|(seq, _)| *seq < row.seq) {
            if let Some(replay) = replay.as_mut() {
                replay.seat_changed(&text)?;
            }
            updates.push(LoggedUpdate::stored(seq, text)?);
        }
        if row.seq > until {
            break;
        }
        let replay = replay
            .as_mut()
            .ok_or("a move in a game that never started")?;
        let events = replay.play(row)?;
        updates.push(events);
    }
    for (seq, text) in stored.take_while(|(seq, _)| *seq <= until) {
        updates.push(LoggedUpdate::stored(seq, text)?);
    }
    updates.retain(|update| update.seq <= until);
    Ok(updates)
}

impl LoggedUpdate {
    fn stored(seq: u64, text: String) -> Result<LoggedUpdate, String> {
        let events = RawValue::from_string(text)
            .map_err(|error| format!("the stored events of update {seq}: {error}"))?;
        Ok(LoggedUpdate { seq, events })
    }
}

/// A game replayed move by move, with what the room knew when each move came.
struct MoveReplay {
    game: Game,
    clocks: Clocks,
    /// The seats as they stood: their control changes as the stored seat changes say.
    seats: Vec<SeatRow>,
    last: Option<MoveRow>,
}

impl MoveReplay {
    fn start(lobby: &LobbyRow, mut seats: Vec<SeatRow>) -> Result<MoveReplay, String> {
        let (game, _) = game_for(lobby, seats.len())?;
        let started_at = lobby.started_at.unwrap_or(lobby.created_at);
        let clocks = Clocks::start(lobby.clock, game.players(), started_at);
        for seat in &mut seats {
            seat.control = SeatControl::Human;
        }
        Ok(MoveReplay {
            game,
            clocks,
            seats,
            last: None,
        })
    }

    /// Takes a stored update into the seats' control, if it changed a seat.
    fn seat_changed(&mut self, text: &str) -> Result<(), String> {
        let events: Vec<Value> =
            serde_json::from_str(text).map_err(|error| format!("stored events: {error}"))?;
        for event in events {
            let seat = event["seat"]
                .as_u64()
                .and_then(|seat| u8::try_from(seat).ok());
            let Some(row) = seat.and_then(|seat| self.seats.iter_mut().find(|s| s.seat == seat))
            else {
                continue;
            };
            match event["type"].as_str() {
                Some("seat_resigned") => row.control = SeatControl::Resigned,
                Some("seat_abandoned") => row.control = SeatControl::Abandoned,
                Some("seat_reclaimed" | "seat_token_replaced") => {
                    // As the room does: the seat is its owner's again, the streak is over.
                    if row.control == SeatControl::Abandoned {
                        row.control = SeatControl::Human;
                    }
                    self.clocks.clear_streak(row.seat);
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Plays a stored move: its update's events, as [`RoomMachine::apply`] made them.
    fn play(&mut self, row: MoveRow) -> Result<LoggedUpdate, String> {
        let mut events = Vec::new();
        let announced = self
            .last
            .as_ref()
            .is_some_and(|last| last.seat == row.seat && last.origin == MoveOrigin::Timeout)
            && !matches!(row.mv, Move::PlaceTile { .. });
        if row.origin == MoveOrigin::Timeout && !announced {
            let timeouts = self.clocks.streak(row.seat).0 + 1;
            events.push(room_event(RoomEvent::TurnTimedOut {
                seat: row.seat,
                timeouts_in_row: timeouts,
            }));
        }
        if row.origin != MoveOrigin::Player {
            let seat = self.seats.iter().find(|seat| seat.seat == row.seat);
            events.push(room_event(RoomEvent::BotMoved {
                seat: row.seat,
                reason: origin_reason(row.origin, seat),
            }));
        }
        let played = self
            .game
            .play(row.mv)
            .map_err(|error| format!("move {} does not replay: {error}", row.seq))?;
        self.clocks.record(&row, self.game.current_player());
        events.extend(played.iter().map(event_json));
        let text = serde_json::to_string(&events).expect("events serialize");
        let seq = row.seq;
        self.last = Some(row);
        LoggedUpdate::stored(seq, text)
    }
}
