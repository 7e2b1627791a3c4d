//! Connections in the state machine: who is connected, and what a connecting or
//! lagging client is sent to catch up.

use super::*;

impl RoomMachine {
    /// A client said hello: a player by token, or a spectator.
    pub fn connect(
        &mut self,
        token_hash: Option<&str>,
        invite_code: Option<&str>,
        last_seq: Option<u64>,
        last_chat_seq: Option<u64>,
        now: Millis,
    ) -> Result<Joined, RoomError> {
        let seat = match token_hash {
            Some(hash) => Some(self.seat_of(hash).ok_or(RoomError::BadToken)?.seat),
            None if !self.invite_code_fits(invite_code) => return Err(RoomError::PrivateGame),
            None => None,
        };
        // Count the connection first, so that its own seat is among the connected ones in
        // the snapshot it is about to get.
        let mut presence = None;
        if let (Some(hash), Some(seat)) = (token_hash, seat) {
            self.want_reclaim(seat);
            let count = self.connections.entry(hash.to_owned()).or_default();
            *count += 1;
            if *count == 1 {
                presence = Some(presence_message(seat, true));
            }
        }
        let mut catch_up = self.catch_up(token_hash, last_seq, now);
        catch_up.extend(self.chat_catch_up(token_hash, last_chat_seq));
        catch_up.extend(self.rematch.catch_up(seat));
        Ok(Joined {
            seat,
            catch_up,
            presence,
        })
    }

    /// The owner of an abandoned seat takes it back by saying hello. The hello is
    /// answered at once, from memory; the seat is taken back as a due change, written
    /// when the room is free to write (and tried again after a failed write).
    fn want_reclaim(&mut self, seat: u8) {
        let abandoned = self
            .seat_row(seat)
            .is_some_and(|row| row.control == SeatControl::Abandoned);
        if abandoned && !self.reclaims.contains(&seat) {
            self.reclaims.push(seat);
        }
    }

    /// A connection closed; the presence announcement when it was the seat's last.
    pub fn disconnect(&mut self, token_hash: Option<&str>) -> Option<Arc<Outgoing>> {
        let hash = token_hash?;
        let count = self.connections.get_mut(hash)?;
        *count -= 1;
        if *count > 0 {
            return None;
        }
        self.connections.remove(hash);
        let seat = self.seat_of(hash)?.seat;
        Some(presence_message(seat, false))
    }

    pub(super) fn connected_seats(&self) -> Vec<u8> {
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
    pub fn catch_up(
        &self,
        token_hash: Option<&str>,
        last_seq: Option<u64>,
        now: Millis,
    ) -> Vec<Arc<Outgoing>> {
        let seq = self.seq();
        match last_seq {
            Some(last) if last == seq => self.turn_reminder(token_hash, now).into_iter().collect(),
            Some(last)
                if last < seq && seq - last <= MAX_CATCH_UP && self.has_updates_after(last) =>
            {
                self.recent.after(last)
            }
            _ => vec![self.snapshot(token_hash, now)],
        }
    }

    /// `your_turn` with the legal moves, for the player to move; `None` for anyone else.
    pub(super) fn turn_reminder(
        &self,
        token_hash: Option<&str>,
        now: Millis,
    ) -> Option<Arc<Outgoing>> {
        if token_hash.is_none() || token_hash.map(str::to_owned) != self.mover() {
            return None;
        }
        let message = RoomFrame::YourTurn {
            seq: self.seq(),
            legal_moves: self.legal_moves_now()?,
            turn_ms_left: self.turn_ms_left(now),
        };
        // Not an update (it changes nothing): sent as is, never filtered as already seen.
        Some(Arc::new(Outgoing::plain(None, message.to_json())))
    }

    pub(super) fn has_updates_after(&self, last: u64) -> bool {
        self.recent.has_updates_after(last)
    }

    pub(super) fn snapshot(&self, token_hash: Option<&str>, now: Millis) -> Arc<Outgoing> {
        let to_move = token_hash.is_some() && token_hash.map(str::to_owned) == self.mover();
        let message = RoomFrame::Snapshot {
            seq: self.seq(),
            state: Box::new(self.view.clone()),
            connected: self.connected_seats(),
            legal_moves: to_move.then(|| self.legal_moves_now().unwrap_or_default()),
            turn_ms_left: self.turn_ms_left(now),
        };
        let mut outgoing = Outgoing::plain(Some(self.seq()), message.to_json());
        outgoing.snapshot = true;
        Arc::new(outgoing)
    }

    /// The snapshot for every connection at once: the mover's with their legal moves,
    /// everyone else's without.
    pub fn snapshot_for_everyone(&self, now: Millis) -> Arc<Outgoing> {
        let for_others = self.snapshot(None, now);
        let Some(mover) = self.mover() else {
            return for_others;
        };
        let for_mover = self.snapshot(Some(&mover), now);
        let mut outgoing = Outgoing::plain(Some(self.seq()), String::new());
        outgoing.for_mover = for_mover.for_mover.clone();
        outgoing.for_others = for_others.for_others.clone();
        outgoing.mover = Some(mover);
        outgoing.snapshot = true;
        Arc::new(outgoing)
    }

    /// Whether a client that says it has seen update `last_seq` has seen more of the
    /// game than this room holds: then the room is behind the database (another node
    /// wrote the game, or a write of its own landed unseen), or the client is wrong.
    /// Either way the room must not answer it from memory.
    pub fn is_behind(&self, last_seq: Option<u64>) -> bool {
        last_seq.is_some_and(|last| last > self.seq())
    }

    /// Milliseconds left in the turn in progress, when it has a deadline.
    pub(super) fn turn_ms_left(&self, now: Millis) -> Option<u64> {
        if self.ended {
            return None;
        }
        let deadline = self.clocks.as_ref()?.deadline()?;
        Some((deadline - now).max(0) as u64)
    }

    /// The token hash of the human player to move, who gets the legal moves.
    pub(super) fn mover(&self) -> Option<String> {
        if self.lobby.status != LobbyStatus::Playing {
            return None;
        }
        let row = self.seat_to_move()?;
        (row.bot.is_none() && row.control == SeatControl::Human && !self.turn_timed_out())
            .then(|| row.token_hash.clone())
    }
}
