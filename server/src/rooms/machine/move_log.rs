//! A game's moves as its room keeps them: what the match record, the clocks and a
//! repeated command need, in 32 bytes a move.
//!
//! The database holds every move in full ([`MoveRow`]); a live room keeps only the move,
//! who made it, its `seq`, and a keyed digest of its command id. A repeated command is
//! found by its digest: the key is random and per room, so a client cannot choose two
//! ids that collide, and two ids colliding by chance (one in 2^64 per pair) is far
//! rarer than the database losing a row. A whole game's log is about 4.6 KB, where full
//! rows with their command ids took twice that and more.

use carcassonne_core::Move;
use carcassonne_store::{MoveOrigin, MoveRow};
use std::hash::{BuildHasher, RandomState};

/// How many moves the log grows by when full: a log is read whole only at a game's end,
/// and one grown by doubling would hold up to twice its moves until then.
const MOVES_AT_A_TIME: usize = 24;

/// One move of the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoggedMove {
    pub seq: u64,
    /// The digest of the move's command id, keyed by the log's key.
    command: u64,
    pub mv: Move,
    pub seat: u8,
    pub origin: MoveOrigin,
}

/// The moves of a game in play, in order.
#[derive(Debug, Default)]
pub struct MoveLog {
    moves: Vec<LoggedMove>,
    /// Keys the command ids' digests: random, and new with every room (a restored room
    /// digests the stored ids again with its own).
    key: RandomState,
}

impl MoveLog {
    pub fn push(&mut self, row: &MoveRow) {
        if self.moves.len() == self.moves.capacity() {
            self.moves.reserve_exact(MOVES_AT_A_TIME);
        }
        self.moves.push(LoggedMove {
            seq: row.seq,
            command: self.digest(row.seat, &row.command_id),
            mv: row.mv,
            seat: row.seat,
            origin: row.origin,
        });
    }

    /// The `seq` at which `seat`'s command `id` was accepted, if it was. Newest first, as
    /// a retry is of a recent command.
    pub fn accepted_seq(&self, seat: u8, id: &str) -> Option<u64> {
        let command = self.digest(seat, id);
        self.moves
            .iter()
            .rev()
            .find(|logged| logged.command == command && logged.seat == seat)
            .map(|logged| logged.seq)
    }

    pub fn last(&self) -> Option<&LoggedMove> {
        self.moves.last()
    }

    /// Every move, in the order played.
    pub fn moves(&self) -> impl Iterator<Item = Move> + '_ {
        self.moves.iter().map(|logged| logged.mv)
    }

    fn digest(&self, seat: u8, id: &str) -> u64 {
        self.key.hash_one((seat, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use carcassonne_core::{Pos, Rotation};

    fn row(seq: u64, seat: u8, id: &str) -> MoveRow {
        MoveRow {
            seq,
            seat,
            command_id: id.into(),
            mv: Move::PlaceTile {
                pos: Pos::new(seq as i32, 0),
                rotation: Rotation::R0,
            },
            created_at: 0,
            origin: MoveOrigin::Player,
        }
    }

    #[test]
    fn a_command_is_found_by_its_seat_and_id_only() {
        let mut log = MoveLog::default();
        log.push(&row(3, 0, "a"));
        log.push(&row(4, 1, "a"));
        log.push(&row(6, 0, "b"));
        assert_eq!(log.accepted_seq(0, "a"), Some(3));
        assert_eq!(log.accepted_seq(1, "a"), Some(4));
        assert_eq!(log.accepted_seq(0, "b"), Some(6));
        assert_eq!(log.accepted_seq(1, "b"), None);
        assert_eq!(log.accepted_seq(0, "c"), None);
        assert_eq!(log.accepted_seq(0, "a "), None);
        assert_eq!(log.last().map(|logged| logged.seq), Some(6));
        let moves: Vec<Move> = log.moves().collect();
        assert_eq!(
            moves,
            vec![row(3, 0, "").mv, row(4, 0, "").mv, row(6, 0, "").mv]
        );
    }

    #[test]
    fn a_logged_move_takes_32_bytes() {
        assert_eq!(std::mem::size_of::<LoggedMove>(), 32);
    }
}
