//! The `random` level: a uniformly random legal move.

use crate::pick_index;
use carcassonne_core::{Game, Move};
use rand_core::Rng;

/// A uniformly random move of `game.legal_moves()`; `None` once the game is over.
pub fn choose(game: &Game, rng: &mut impl Rng) -> Option<Move> {
    let moves = game.legal_moves();
    if moves.is_empty() {
        return None;
    }
    Some(moves[pick_index(rng, moves.len())])
}
