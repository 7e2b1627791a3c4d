//! The `greedy` level: every turn the player could take now, each valued by
//! [`position_value`] of the position right after it; the best one is played.
//!
//! In the `PlaceTile` step a turn is a (placement, action) pair, and the bot plays the
//! best pair's placement. In the `Act` step it values each action for the tile already
//! placed; being the same positions as before, that picks the action of the pair chosen
//! for the placement. Ties go to the first turn in `legal_moves` order (passing comes
//! first among actions, so a figure goes out only for a strictly better value).

use crate::evaluation::position_value;
use carcassonne_core::{Game, Move, Phase, Seat};

/// One turn the player to move could take, and its value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TurnOption {
    /// The tile placement, or `None` when the tile is placed already (the `Act` step).
    pub placement: Option<Move>,
    /// The action after the placement.
    pub action: Move,
    /// [`position_value`] for the player to move of the position after the turn.
    pub value: f64,
}

impl TurnOption {
    /// The move to play now: the placement, or the action once the tile is down.
    pub fn next_move(&self) -> Move {
        self.placement.unwrap_or(self.action)
    }
}

/// Every turn open to the player to move, valued: all (placement, action) pairs in the
/// `PlaceTile` step, the actions in the `Act` step, nothing once the game is over.
pub fn candidate_turns(game: &Game) -> Vec<TurnOption> {
    let Some(me) = game.current_player() else {
        return Vec::new();
    };
    match game.phase() {
        Phase::PlaceTile => game
            .legal_moves()
            .into_iter()
            .flat_map(|placement| {
                let mut placed = game.clone();
                match placed.play(placement) {
                    Ok(_) => action_options(&placed, me, Some(placement)),
                    Err(_) => Vec::new(),
                }
            })
            .collect(),
        Phase::Act => action_options(game, me, None),
        Phase::Over => Vec::new(),
    }
}

/// The actions open in `placed` (an `Act` step), each valued for `me`.
fn action_options(placed: &Game, me: Seat, placement: Option<Move>) -> Vec<TurnOption> {
    placed
        .legal_moves()
        .into_iter()
        .filter_map(|action| {
            let mut after = placed.clone();
            after.play(action).ok()?;
            Some(TurnOption {
                placement,
                action,
                value: position_value(&after, me),
            })
        })
        .collect()
}

/// The first option with the highest value.
pub fn best(options: &[TurnOption]) -> Option<&TurnOption> {
    options.iter().reduce(|best, option| {
        if option.value > best.value {
            option
        } else {
            best
        }
    })
}

/// The greedy move for the player to move; `None` once the game is over.
pub fn choose(game: &Game) -> Option<Move> {
    best(&candidate_turns(game)).map(TurnOption::next_move)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::all_expansions_game;

    #[test]
    fn the_action_chosen_after_the_placement_is_the_one_of_the_best_pair() {
        let mut game = all_expansions_game(8);
        for _ in 0..30 {
            let view = game.hidden();
            let options = candidate_turns(view.game());
            let pair = *best(&options).expect("the game goes on");
            let placement = choose(view.game()).expect("a move");
            assert_eq!(Some(placement), pair.placement);
            game.play(placement).expect("legal");
            let action = choose(game.hidden().game()).expect("an action");
            assert_eq!(action, pair.action);
            game.play(action).expect("legal");
        }
    }

    #[test]
    fn it_takes_points_lying_on_the_table() {
        // Seat 0 draws a straight road next to the start tile's road; putting a follower
        // on the road (worth 2 at the end) beats passing, which is worth nothing.
        let options = candidate_turns(&game_after_one_road());
        let best = best(&options).expect("options");
        assert!(matches!(best.action, Move::PlaceFigure { .. }), "{best:?}");
        let pass = options
            .iter()
            .filter(|option| option.action == Move::Pass)
            .map(|option| option.value)
            .fold(f64::NEG_INFINITY, f64::max);
        assert!(best.value > pass);
    }

    fn game_after_one_road() -> Game {
        use carcassonne_core::{Rules, Setup, Stack, TileId};
        let tiles = ["U", "U", "U"].map(|name| TileId::from_name(name).expect("a tile"));
        Game::new(Setup {
            rules: Rules::default(),
            players: 2,
            stack: Stack::Fixed(tiles.to_vec()),
        })
        .expect("a valid setup")
    }
}
