//! How good a position is for one player, in points: the evaluation of `greedy`, and the
//! prior that orders and prunes the turns `mcts` searches.
//!
//! For each player `p`:
//!
//! ```text
//! worth(p) = scores_if_ended_now(p) + reserve × figures_in_supply(p)
//! reserve  = FIGURE_IN_SUPPLY_POINTS × tiles_left / (tiles_left + tiles_placed)
//! ```
//!
//! * `scores_if_ended_now` ([`Game::scores_if_ended_now`]) is the score plus what every
//!   claimed feature would pay at the end as it stands: roads 1 per tile, cities 1 per
//!   tile and pennant (nothing with a cathedral), monasteries and gardens 1 + their
//!   neighbours, farms `farmer_city_points` per bordering completed city. So points
//!   scored this turn count in full, and a figure's prospects count at their end value.
//! * A figure still in the supply is worth `reserve` points: a figure can score again
//!   later, the more so the more tiles are left, so placing one costs up to
//!   [`FIGURE_IN_SUPPLY_POINTS`] early and nothing at the end. With it a figure goes out
//!   only onto a feature that already pays more than that, not onto every new one.
//!
//! The value of a position for `me` is `worth(me) - max(worth(o))` over the others `o`:
//! points for me and points denied to the best opponent count alike.

use carcassonne_core::{Game, Seat, Supply};

/// What a figure in the supply is worth at the start of the game, in points.
pub const FIGURE_IN_SUPPLY_POINTS: f64 = 1.0;

/// The value of `game` for `me`, as the module documentation defines it.
pub fn position_value(game: &Game, me: Seat) -> f64 {
    let worth = worth_of_each_player(game);
    let mine = worth.get(me as usize).copied().unwrap_or(0.0);
    let best_other = worth
        .iter()
        .enumerate()
        .filter(|&(seat, _)| seat != me as usize)
        .map(|(_, &value)| value)
        .fold(f64::NEG_INFINITY, f64::max);
    mine - best_other
}

/// `worth(p)` of the module documentation for every seat.
pub fn worth_of_each_player(game: &Game) -> Vec<f64> {
    let reserve = figure_reserve_value(game);
    game.scores_if_ended_now()
        .into_iter()
        .enumerate()
        .map(|(seat, points)| {
            let figures = figures_in(game.supply(seat as Seat));
            f64::from(points) + reserve * f64::from(figures)
        })
        .collect()
}

/// `reserve` of the module documentation: the worth of one figure in the supply.
fn figure_reserve_value(game: &Game) -> f64 {
    let left = game.tiles_left() as f64;
    let total = left + f64::from(game.tiles_placed());
    if total == 0.0 {
        return 0.0;
    }
    FIGURE_IN_SUPPLY_POINTS * left / total
}

fn figures_in(supply: Supply) -> u32 {
    u32::from(supply.follower) + u32::from(supply.big) + u32::from(supply.abbot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use carcassonne_core::{Move, Phase, Rules, Setup, Stack};

    #[test]
    fn at_the_start_the_value_is_even_and_a_placed_figure_costs_its_reserve() {
        let mut game = Game::new(Setup {
            rules: Rules::default(),
            players: 2,
            stack: Stack::Seeded(4),
        })
        .expect("a valid setup");
        assert_eq!(position_value(&game, 0), 0.0);
        let placement = game.legal_moves()[0];
        game.play(placement).expect("legal");
        assert_eq!(game.phase(), Phase::Act);
        let figure = game
            .legal_moves()
            .into_iter()
            .find(|mv| matches!(mv, Move::PlaceFigure { .. }))
            .expect("a figure may go somewhere on a fresh tile");
        let mut with_figure = game.clone();
        with_figure.play(figure).expect("legal");
        let ended_now = with_figure.scores_if_ended_now();
        let reserve = FIGURE_IN_SUPPLY_POINTS * with_figure.tiles_left() as f64
            / (with_figure.tiles_left() as f64 + 1.0);
        let expected = f64::from(ended_now[0]) - f64::from(ended_now[1]) - reserve;
        assert!((position_value(&with_figure, 0) - expected).abs() < 1e-9);
        assert!((position_value(&with_figure, 1) + expected).abs() < 1e-9);
    }
}
