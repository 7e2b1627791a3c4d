//! Time and bots in the state machine: when the shell must wake up, what a passed
//! deadline changes, and which seat a bot must move for.

use super::*;

impl RoomMachine {
    /// When the shell must come back: the lobby's expiry or the running turn's deadline.
    pub fn next_wakeup(&self) -> Option<Millis> {
        match self.lobby.status {
            LobbyStatus::Open => Some(self.expires_at()),
            LobbyStatus::Playing if self.human_to_move() && !self.turn_timed_out() => {
                self.clocks.as_ref()?.deadline()
            }
            LobbyStatus::Finished => self.post_game_wakeup(),
            _ => None,
        }
    }

    pub(super) fn expires_at(&self) -> Millis {
        self.last_activity + self.settings.lobby_idle_timeout.as_millis() as Millis
    }

    pub(super) fn turn_timed_out(&self) -> bool {
        self.clocks.as_ref().is_some_and(Clocks::turn_timed_out)
    }

    /// Whether the seat to move is a human's own (not a bot's, abandoned or resigned).
    pub(super) fn human_to_move(&self) -> bool {
        self.seat_to_move()
            .is_some_and(|row| row.bot.is_none() && row.control == SeatControl::Human)
    }

    pub(super) fn seat_to_move(&self) -> Option<&SeatRow> {
        self.seat_row(self.player_to_move()?)
    }

    /// The turn in progress ran past its deadline: the rest of it is played for the
    /// seat (by [`RoomMachine::bot_job`]). Returns whether that just happened.
    pub fn time_out(&mut self, now: Millis) -> bool {
        let due = self.next_wakeup().is_some_and(|deadline| now >= deadline);
        if self.lobby.status != LobbyStatus::Playing || !due {
            return false;
        }
        match self.clocks.as_mut() {
            Some(clocks) => clocks.mark_timed_out(),
            None => return false,
        }
        tracing::info!(seq = self.seq(), "a turn ran out of time");
        true
    }

    /// A change that is due without any request: an expired lobby, an abandoned seat
    /// whose owner came back, or a seat that timed out too often and is now abandoned.
    pub fn due_change(&self, now: Millis) -> Option<Change> {
        match self.lobby.status {
            LobbyStatus::Open if now >= self.expires_at() => {
                Some(Change::Cancelled(CancelReason::Expired))
            }
            LobbyStatus::Playing => self
                .seat_to_reclaim(now)
                .or_else(|| self.seat_to_abandon(now)),
            _ => None,
        }
    }

    pub(super) fn seat_to_abandon(&self, now: Millis) -> Option<Change> {
        let clocks = self.clocks.as_ref()?;
        let seat = self.seats.iter().find(|seat| {
            let (timeouts, _) = clocks.streak(seat.seat);
            seat.bot.is_none()
                && seat.control == SeatControl::Human
                && timeouts >= TIMEOUTS_TO_ABANDON
        })?;
        Some(self.seat_change(seat, SeatControl::Abandoned, SeatChange::Abandoned, now))
    }

    /// The move a bot must choose now, if the seat to move is played by one: a bot's
    /// seat, an abandoned or resigned seat, or a turn that ran out of time.
    pub fn bot_job(&self) -> Option<BotJob> {
        if self.lobby.status != LobbyStatus::Playing {
            return None;
        }
        let game = self.game.as_ref()?;
        let row = self.seat_to_move()?;
        let settings = &self.settings;
        let (level, origin, think) = match (&row.bot, row.control) {
            (Some(level), _) => (
                level.parse().unwrap_or(settings.stand_in_bot),
                MoveOrigin::Bot,
                self.bot_think(),
            ),
            (None, SeatControl::Abandoned | SeatControl::Resigned) => (
                settings.stand_in_bot,
                MoveOrigin::Bot,
                settings.stand_in_think,
            ),
            (None, SeatControl::Human) if self.turn_timed_out() => (
                settings.stand_in_bot,
                MoveOrigin::Timeout,
                settings.stand_in_think,
            ),
            (None, SeatControl::Human) => return None,
        };
        Some(BotJob {
            seq: self.seq(),
            seat: row.seat,
            level,
            origin,
            view: game.hidden(),
            think,
        })
    }

    /// A bot's thinking time: the configured time, but never more than a quarter of a
    /// turn's allowance, so that a bot never runs out of time itself.
    pub(super) fn bot_think(&self) -> Duration {
        let think = self.settings.bot_think;
        match self.lobby.clock {
            carcassonne_store::TimeControl::Turn { per_turn_ms, .. }
            | carcassonne_store::TimeControl::Correspondence { per_turn_ms } => {
                think.min(Duration::from_millis(per_turn_ms / 4))
            }
            carcassonne_store::TimeControl::None => think,
        }
    }

    /// The metric label of a bot's move (`None` for a player's own).
    pub fn bot_reason(&self, row: &MoveRow) -> Option<&'static str> {
        match origin_reason(row.origin, self.seat_row(row.seat)) {
            _ if row.origin == MoveOrigin::Player => None,
            BotMoveReason::Timeout => Some("timeout"),
            BotMoveReason::Bot => Some("bot"),
            BotMoveReason::Abandoned | BotMoveReason::Resigned => Some("stand_in"),
        }
    }
}
