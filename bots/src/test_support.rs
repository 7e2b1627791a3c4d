//! Games for the tests: one with every expansion, and pairs that differ only in the
//! order of their remaining stack.

use carcassonne_core::deck::shuffled_stack;
use carcassonne_core::{Expansion, Game, Phase, Rules, Setup, Stack};

/// A seeded 2-player game with every expansion on.
pub fn all_expansions_game(seed: u64) -> Game {
    Game::new(Setup {
        rules: Rules::with_expansions(&Expansion::ALL),
        players: 2,
        stack: Stack::Seeded(seed),
    })
    .expect("a valid setup")
}

/// Two base games dealt the same first 30 tiles, played alike for 16 moves (each the
/// first legal one), whose remaining stacks hold the same tiles in different orders.
pub fn same_game_other_order(seed: u64) -> (Game, Game) {
    let rules = Rules::default();
    let stack = shuffled_stack(&rules, seed);
    let mut reordered = stack.clone();
    reordered[30..].reverse();
    let mut games = [stack, reordered].map(|tiles| {
        Game::new(Setup {
            rules: rules.clone(),
            players: 2,
            stack: Stack::Fixed(tiles),
        })
        .expect("a valid setup")
    });
    for game in &mut games {
        for _ in 0..16 {
            if game.phase() == Phase::Over {
                break;
            }
            let first = game.legal_moves()[0];
            game.play(first).expect("a listed move is legal");
        }
    }
    let [first, second] = games;
    assert_ne!(first, second, "the remaining orders differ");
    (first, second)
}
