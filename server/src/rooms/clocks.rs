//! Turn clocks: each seat's reserve, the deadline of the turn in progress, and the
//! timeouts in a row that make a seat abandoned.
//!
//! The server is the only clock, and everything here is derived from committed
//! timestamps: the game's `started_at` and each move's `created_at`. A turn starts when
//! the previous turn's last move was committed (or the game started) and ends when the
//! seat's action (the second move of the turn) is committed. An overrun beyond the
//! per-turn allowance is taken from the seat's reserve, never below zero.
//!
//! A restart does not stop the clocks: deadlines are absolute times rebuilt from the
//! move log. But the turn in progress is given at least one whole per-turn allowance from
//! the moment the game is restored, so that a player is never timed out by time the
//! server was down; the reserve it then uses is charged as usual (and clamps at zero).

use carcassonne_core::Move;
use carcassonne_store::{Millis, MoveOrigin, MoveRow, TimeControl};

/// After this many timed-out turns in a row a seat is abandoned.
pub const TIMEOUTS_TO_ABANDON: u32 = 3;

/// The clocks of one game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clocks {
    control: TimeControl,
    /// Each seat's reserve at the start of its current or next turn, in milliseconds.
    reserves: Vec<u64>,
    /// When the turn in progress began (a committed timestamp).
    turn_started_at: Millis,
    /// The deadline of the turn in progress; `None` without a time control or once over.
    deadline: Option<Millis>,
    /// Timed-out turns in a row per seat, and the `seq` of the last one.
    streaks: Vec<(u32, u64)>,
    /// Whether a move of the turn in progress was played because time ran out.
    turn_timed_out: bool,
}

impl Clocks {
    /// The clocks at the start of a game: every reserve full, the first turn running.
    pub fn start(control: TimeControl, players: u8, started_at: Millis) -> Clocks {
        let reserve = match control {
            TimeControl::Turn { reserve_ms, .. } => reserve_ms,
            TimeControl::None | TimeControl::Correspondence { .. } => 0,
        };
        let mut clocks = Clocks {
            control,
            reserves: vec![reserve; players as usize],
            turn_started_at: started_at,
            deadline: None,
            streaks: vec![(0, 0); players as usize],
            turn_timed_out: false,
        };
        clocks.deadline = clocks.deadline_for(0);
        clocks
    }

    pub fn control(&self) -> TimeControl {
        self.control
    }

    pub fn reserves(&self) -> &[u64] {
        &self.reserves
    }

    pub fn turn_started_at(&self) -> Millis {
        self.turn_started_at
    }

    pub fn deadline(&self) -> Option<Millis> {
        self.deadline
    }

    /// Whether a move of the turn in progress was played because its time ran out.
    pub fn turn_timed_out(&self) -> bool {
        self.turn_timed_out
    }

    /// The seat's timed-out turns in a row, and the `seq` of the last of them.
    pub fn streak(&self, seat: u8) -> (u32, u64) {
        self.streaks.get(seat as usize).copied().unwrap_or((0, 0))
    }

    /// Forgets a seat's timeouts: its owner took it back.
    pub fn clear_streak(&mut self, seat: u8) {
        if let Some(streak) = self.streaks.get_mut(seat as usize) {
            *streak = (0, 0);
        }
    }

    /// The turn in progress ran out: the rest of it is played for the seat.
    pub fn mark_timed_out(&mut self) {
        self.turn_timed_out = true;
    }

    /// Takes a committed move into the clocks. `next_seat` is the seat to move after it
    /// (`None` once the game is over).
    pub fn record(&mut self, row: &MoveRow, next_seat: Option<u8>) {
        if row.origin == MoveOrigin::Timeout {
            self.turn_timed_out = true;
        }
        if matches!(row.mv, Move::PlaceTile { .. }) && next_seat == Some(row.seat) {
            // The tile is down and the same seat acts next: the turn goes on.
            return;
        }
        self.end_turn(row);
        self.deadline = next_seat.and_then(|seat| self.deadline_for(seat));
    }

    fn end_turn(&mut self, row: &MoveRow) {
        let seat = row.seat as usize;
        let used = (row.created_at - self.turn_started_at).max(0) as u64;
        let overrun = used.saturating_sub(self.per_turn().unwrap_or(u64::MAX));
        if let Some(reserve) = self.reserves.get_mut(seat) {
            *reserve = reserve.saturating_sub(overrun);
        }
        if let Some(streak) = self.streaks.get_mut(seat) {
            *streak = match (self.turn_timed_out, row.origin) {
                (true, _) => (streak.0 + 1, row.seq),
                (false, MoveOrigin::Player) => (0, 0),
                // A bot playing an abandoned or resigned seat neither adds nor forgives.
                (false, _) => *streak,
            };
        }
        self.turn_started_at = row.created_at;
        self.turn_timed_out = false;
    }

    /// The game is over: no turn runs any more.
    pub fn stop(&mut self) {
        self.deadline = None;
    }

    /// After a restart: the turn in progress gets at least one whole allowance from `now`.
    pub fn resume(&mut self, now: Millis) {
        if let (Some(deadline), Some(per_turn)) = (self.deadline, self.per_turn()) {
            self.deadline = Some(deadline.max(now + per_turn as Millis));
        }
    }

    fn per_turn(&self) -> Option<u64> {
        match self.control {
            TimeControl::None => None,
            TimeControl::Turn { per_turn_ms, .. } | TimeControl::Correspondence { per_turn_ms } => {
                Some(per_turn_ms)
            }
        }
    }

    fn deadline_for(&self, seat: u8) -> Option<Millis> {
        let per_turn = self.per_turn()?;
        let reserve = self.reserves.get(seat as usize).copied().unwrap_or(0);
        Some(self.turn_started_at + (per_turn + reserve) as Millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use carcassonne_core::{Pos, Rotation};

    const PER_TURN: u64 = 30_000;
    const RESERVE: u64 = 300_000;

    fn turn_control() -> TimeControl {
        TimeControl::Turn {
            per_turn_ms: PER_TURN,
            reserve_ms: RESERVE,
        }
    }

    fn row(seq: u64, seat: u8, mv: Move, at: Millis, origin: MoveOrigin) -> MoveRow {
        MoveRow {
            seq,
            seat,
            command_id: format!("c{seq}"),
            mv,
            created_at: at,
            origin,
        }
    }

    fn place() -> Move {
        Move::PlaceTile {
            pos: Pos::new(1, 0),
            rotation: Rotation::R0,
        }
    }

    /// Plays one whole turn for `seat`, its tile at `tile_at` and its action at `act_at`.
    fn turn(clocks: &mut Clocks, seq: u64, seat: u8, tile_at: Millis, act_at: Millis) {
        let origin = MoveOrigin::Player;
        clocks.record(&row(seq, seat, place(), tile_at, origin), Some(seat));
        clocks.record(
            &row(seq + 1, seat, Move::Pass, act_at, origin),
            Some(1 - seat),
        );
    }

    #[test]
    fn the_first_deadline_is_the_allowance_plus_the_reserve_from_the_start() {
        let clocks = Clocks::start(turn_control(), 2, 1_000);
        assert_eq!(clocks.deadline(), Some(1_000 + 330_000));
        assert_eq!(clocks.reserves(), &[RESERVE, RESERVE]);
    }

    #[test]
    fn an_overrun_is_taken_from_the_reserve_and_a_quick_turn_costs_nothing() {
        let mut clocks = Clocks::start(turn_control(), 2, 0);
        // Seat 0 takes 50 s: 20 s over the allowance.
        turn(&mut clocks, 1, 0, 10_000, 50_000);
        assert_eq!(clocks.reserves(), &[RESERVE - 20_000, RESERVE]);
        assert_eq!(clocks.deadline(), Some(50_000 + 330_000));
        // Seat 1 answers in 5 s.
        turn(&mut clocks, 3, 1, 52_000, 55_000);
        assert_eq!(clocks.reserves(), &[RESERVE - 20_000, RESERVE]);
        assert_eq!(clocks.deadline(), Some(55_000 + 30_000 + 280_000));
    }

    #[test]
    fn the_reserve_never_goes_below_zero() {
        let mut clocks = Clocks::start(turn_control(), 2, 0);
        turn(&mut clocks, 1, 0, 1_000, 10_000_000);
        assert_eq!(clocks.reserves()[0], 0);
    }

    #[test]
    fn correspondence_has_no_reserve_and_no_clock_has_no_deadline() {
        let per_turn_ms = 86_400_000;
        let clocks = Clocks::start(TimeControl::Correspondence { per_turn_ms }, 3, 5);
        assert_eq!(clocks.deadline(), Some(5 + 86_400_000));
        assert_eq!(clocks.reserves(), &[0, 0, 0]);
        let mut none = Clocks::start(TimeControl::None, 2, 5);
        turn(&mut none, 1, 0, 10, 20);
        assert_eq!(none.deadline(), None);
    }

    #[test]
    fn timed_out_turns_count_in_a_row_until_the_seat_moves_itself() {
        let mut clocks = Clocks::start(turn_control(), 2, 0);
        for n in 0..2u64 {
            let seq = 1 + 4 * n;
            clocks.mark_timed_out();
            let bot = MoveOrigin::Timeout;
            clocks.record(&row(seq, 0, place(), 1, bot), Some(0));
            clocks.record(&row(seq + 1, 0, Move::Pass, 2, bot), Some(1));
            turn(&mut clocks, seq + 2, 1, 3, 4);
        }
        assert_eq!(clocks.streak(0), (2, 6));
        turn(&mut clocks, 9, 0, 5, 6);
        assert_eq!(clocks.streak(0), (0, 0));
    }

    #[test]
    fn a_turn_whose_tile_the_player_placed_still_times_out_on_its_action() {
        let mut clocks = Clocks::start(turn_control(), 2, 0);
        clocks.record(&row(1, 0, place(), 1, MoveOrigin::Player), Some(0));
        let action = row(2, 0, Move::Pass, 400_000, MoveOrigin::Timeout);
        clocks.record(&action, Some(1));
        assert_eq!(clocks.streak(0), (1, 2));
        assert_eq!(clocks.reserves()[0], 0);
    }

    #[test]
    fn a_restored_turn_gets_a_whole_allowance_from_the_restart() {
        let mut clocks = Clocks::start(turn_control(), 2, 0);
        clocks.resume(1_000_000);
        assert_eq!(clocks.deadline(), Some(1_000_000 + 30_000));
        // A deadline still far ahead is kept.
        let mut early = Clocks::start(turn_control(), 2, 0);
        early.resume(1_000);
        assert_eq!(early.deadline(), Some(330_000));
    }
}
