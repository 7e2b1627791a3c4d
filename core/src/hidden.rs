//! What a player may know of a game: everything but the order of the stack.
//!
//! [`Game::hidden`] makes a [`HiddenGame`]: a copy of the game whose tiles not yet drawn
//! are put in one canonical order (sorted by [`TileId`]), so that two games that differ
//! only in the order of their remaining stack have equal hidden views. The tile drawn
//! this turn is known to every player and stays; so does everything already drawn or
//! discarded. A bot that sees only a `HiddenGame` therefore cannot learn the draw order,
//! whatever it does with it.
//!
//! [`HiddenGame::sample`] deals one determinization: the unseen tiles shuffled uniformly,
//! keeping the structure a real deck has (see [`crate::deck::shuffled_stack`]): with the
//! River, the unseen river tiles come first and the lake last of them, then the land
//! tiles. A `tile_limit` needs nothing special: it counts tiles placed, not tiles in the
//! stack, so the sampled game ends exactly when the real one would with the same draws.

use crate::deck::{lake, shuffle};
use crate::game::Game;
use crate::tiles::TileId;
use rand_core::Rng;

/// A game with the order of its remaining stack forgotten. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HiddenGame {
    game: Game,
    unseen: Vec<TileId>,
}

impl Game {
    /// This game as a player sees it: the remaining stack in canonical (sorted) order.
    pub fn hidden(&self) -> HiddenGame {
        let mut unseen = self.remaining_stack().to_vec();
        unseen.sort_unstable();
        let mut game = self.clone();
        game.replace_remaining_stack(unseen.iter().copied());
        HiddenGame { game, unseen }
    }
}

impl HiddenGame {
    /// The canonical copy of the game: every read and `legal_moves` work on it as on the
    /// real game, but its remaining stack is sorted, not the real order.
    pub fn game(&self) -> &Game {
        &self.game
    }

    /// The tiles not drawn yet, sorted.
    pub fn unseen(&self) -> &[TileId] {
        &self.unseen
    }

    /// A game the real one could be: the unseen tiles in a uniformly random order that
    /// keeps the deck's structure (river tiles first, the lake last of them).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Game {
        let (mut river, mut land): (Vec<TileId>, Vec<TileId>) =
            self.unseen.iter().partition(|tile| tile.def().is_river());
        let lake_unseen = river.iter().position(|&tile| tile == lake());
        if let Some(index) = lake_unseen {
            river.swap_remove(index);
        }
        shuffle(&mut river, rng);
        shuffle(&mut land, rng);
        let order = river
            .into_iter()
            .chain(lake_unseen.map(|_| lake()))
            .chain(land);
        let mut game = self.game.clone();
        game.replace_remaining_stack(order);
        game
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deck::shuffled_stack;
    use crate::game::{Phase, Setup, Stack};
    use crate::rules::{Expansion, Rules};
    use crate::tiles::TileSet;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    fn game_with_stack(rules: &Rules, stack: Vec<TileId>) -> Game {
        let setup = Setup {
            rules: rules.clone(),
            players: 2,
            stack: Stack::Fixed(stack),
        };
        Game::new(setup).expect("a valid setup")
    }

    /// Plays `steps` moves, each the first legal move, so that two games dealt the same
    /// first tiles are played the same way.
    fn play_first_moves(game: &mut Game, steps: usize) {
        for _ in 0..steps {
            let Some(&first) = game.legal_moves().first() else {
                return;
            };
            game.play(first).expect("a listed move is legal");
        }
    }

    fn play_randomly_to_the_end(game: &mut Game, rng: &mut ChaCha8Rng) {
        while game.phase() != Phase::Over {
            let moves = game.legal_moves();
            let pick = (rng.next_u64() % moves.len() as u64) as usize;
            game.play(moves[pick]).expect("a listed move is legal");
        }
    }

    #[test]
    fn games_that_differ_only_in_the_remaining_order_look_the_same() {
        let rules = Rules::default();
        let stack = shuffled_stack(&rules, 5);
        let mut reordered = stack.clone();
        reordered[20..].reverse();
        let (mut first, mut second) = (
            game_with_stack(&rules, stack),
            game_with_stack(&rules, reordered),
        );
        // Ten turns draw ten tiles of the twenty dealt alike (discards draw a few more).
        play_first_moves(&mut first, 20);
        play_first_moves(&mut second, 20);
        assert_ne!(first, second, "the real games differ in their stacks");
        assert_eq!(first.hidden(), second.hidden());
        assert_eq!(first.hidden().game().current_tile(), first.current_tile());
    }

    #[test]
    fn a_sample_keeps_the_unseen_tiles_and_the_river_structure() {
        let rules = Rules::with_expansions(&Expansion::ALL);
        let game = Game::new(Setup {
            rules,
            players: 3,
            stack: Stack::Seeded(11),
        })
        .expect("a valid setup");
        let hidden = game.hidden();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut orders = Vec::new();
        for _ in 0..20 {
            let sampled = hidden.sample(&mut rng);
            let order = sampled.remaining_stack().to_vec();
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, hidden.unseen());
            let rivers = order
                .iter()
                .filter(|t| t.def().set == TileSet::River)
                .count();
            assert!(order[..rivers].iter().all(|t| t.def().is_river()));
            assert_eq!(order[rivers - 1], lake());
            assert_eq!(sampled.current_tile(), game.current_tile());
            orders.push(order);
        }
        orders.dedup();
        assert!(orders.len() > 1, "samples are shuffled");
    }

    #[test]
    fn a_sampled_game_plays_to_the_end_with_legal_moves() {
        let rules = Rules {
            tile_limit: Some(40),
            ..Rules::with_expansions(&Expansion::ALL)
        };
        let mut game = Game::new(Setup {
            rules,
            players: 2,
            stack: Stack::Seeded(3),
        })
        .expect("a valid setup");
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        play_first_moves(&mut game, 30);
        let mut sampled = game.hidden().sample(&mut rng);
        play_randomly_to_the_end(&mut sampled, &mut rng);
        assert!(sampled.tiles_placed() <= 40);
        assert_eq!(sampled.phase(), Phase::Over);
    }
}
