//! The `mcts` level: Monte Carlo search over whole turns, on sampled deals.
//!
//! # Search
//!
//! The arms are the turns of [`candidate_turns`] (placement and action pairs in the
//! `PlaceTile` step), valued by the greedy evaluation. The arms within
//! [`PRUNE_MARGIN`] points of the best, at most [`MAX_ARMS`] of them (and never fewer
//! than [`MIN_ARMS`]), are searched; the rest are dropped, since the evaluation is rarely
//! that wrong and fewer arms get more playouts each.
//!
//! Each iteration deals a fresh determinization ([`HiddenGame::sample`]: the unseen tiles
//! in a random order, so the bot never uses the real one), plays the arm's turn and then
//! a rollout to the end of the game, and scores the end for the player to move (see
//! [`reward`]). The arm to try is the one with the highest UCB1 bound plus a
//! progressive bias, the greedy value, that fades as the arm is tried:
//!
//! ```text
//! mean + EXPLORATION × sqrt(ln(total) / tries) + PRIOR_WEIGHT × prior / (tries + 1)
//! ```
//!
//! where `prior` is the arm's greedy value less the best one's, over [`PRUNE_MARGIN`]
//! (from -1 to 0). Untried arms go first, best prior first. When the deadline comes the
//! most tried arm wins (ties: the best mean); if no iteration ran at all, the greedy
//! choice.
//!
//! # Rollouts
//!
//! Placements are uniformly random; an action is a pass with probability one half and
//! otherwise uniformly random among the legal actions, farmers left out except in one
//! case in [`FARMER_ODDS`]. Passing half the time keeps the rollout players from
//! spending every figure at once, which makes a figure in the supply worth something in
//! the playouts, as it is in real games. Fields are most of a tile's spots, so uniformly
//! random figures would mostly be farmers: laid at random they lock figures away for the
//! whole game and add large random farm scores to every playout, noise that hides the
//! difference between the turns searched.
//!
//! # The two steps of a turn
//!
//! The time budget is per turn: the placement search spends it on whole turns. Asked
//! again in the `Act` step (the function keeps no state between calls), the bot searches
//! the actions of the placed tile alone, spending a quarter ([`ACT_SHARE`]) of the time
//! left to the deadline: the same playouts that ranked the pair rank its action among few
//! arms, so a short search agrees with the choice made for the placement.

use crate::greedy::{TurnOption, candidate_turns};
use crate::pick_index;
use carcassonne_core::{Game, HiddenGame, Move, Phase, Seat, SegmentKind};
use rand_core::Rng;
use std::time::{Duration, Instant};

/// Arms whose greedy value is this many points below the best are not searched.
pub const PRUNE_MARGIN: f64 = 8.0;
/// The most arms searched.
pub const MAX_ARMS: usize = 24;
/// The fewest arms searched, whatever their greedy value (when there are so many).
pub const MIN_ARMS: usize = 4;
/// UCB1's exploration constant, for rewards between 0 and 1.
pub const EXPLORATION: f64 = 0.35;
/// The weight of the greedy prior in the progressive bias.
pub const PRIOR_WEIGHT: f64 = 0.2;
/// The share of the time left that the `Act` step search uses.
pub const ACT_SHARE: u32 = 4;
/// In a rollout, farmers may be placed on one figure placement in `FARMER_ODDS`.
pub const FARMER_ODDS: u32 = 8;
/// Score differences are squashed by `tanh(difference / REWARD_SCALE)`.
pub const REWARD_SCALE: f64 = 20.0;

/// When a search stops: at the deadline, or after a number of iterations (for tests
/// and reproducible analysis), whichever comes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchLimit {
    pub deadline: Instant,
    pub max_iterations: Option<u32>,
}

impl SearchLimit {
    /// Search until `deadline`.
    pub fn until(deadline: Instant) -> SearchLimit {
        SearchLimit {
            deadline,
            max_iterations: None,
        }
    }

    /// Search exactly `iterations` iterations, however long they take.
    pub fn iterations(iterations: u32) -> SearchLimit {
        SearchLimit {
            deadline: Instant::now() + Duration::from_secs(365 * 24 * 3600),
            max_iterations: Some(iterations),
        }
    }

    fn reached(&self, iterations: u32) -> bool {
        self.max_iterations.is_some_and(|max| iterations >= max) || Instant::now() >= self.deadline
    }
}

/// One searched turn and what its playouts gave.
#[derive(Clone, Copy, Debug)]
struct Arm {
    turn: TurnOption,
    prior: f64,
    tries: u32,
    total_reward: f64,
}

impl Arm {
    fn mean(&self) -> f64 {
        self.total_reward / f64::from(self.tries.max(1))
    }

    fn bound(&self, log_total: f64) -> f64 {
        let tries = f64::from(self.tries);
        self.mean()
            + EXPLORATION * (log_total / tries).sqrt()
            + PRIOR_WEIGHT * self.prior / (tries + 1.0)
    }
}

/// The move the search picks for the player to move in `view`; `None` once the game is
/// over. See the module documentation.
pub fn choose(view: &HiddenGame, limit: SearchLimit, rng: &mut impl Rng) -> Option<Move> {
    let game = view.game();
    let me = game.current_player()?;
    let limit = match game.phase() {
        Phase::Act => act_step_limit(limit),
        _ => limit,
    };
    let mut arms = searched_arms(candidate_turns(game));
    if arms.len() <= 1 {
        return arms.first().map(|arm| arm.turn.next_move());
    }
    let mut iterations = 0;
    while !limit.reached(iterations) {
        let index = arm_to_try(&arms, iterations);
        let reward = playout(view, &arms[index].turn, me, rng);
        arms[index].tries += 1;
        arms[index].total_reward += reward;
        iterations += 1;
    }
    most_tried(&arms).map(|arm| arm.turn.next_move())
}

/// The `Act` step's limit: [`ACT_SHARE`] of the time left to the deadline.
fn act_step_limit(limit: SearchLimit) -> SearchLimit {
    let left = limit.deadline.saturating_duration_since(Instant::now());
    SearchLimit {
        deadline: Instant::now() + left / ACT_SHARE,
        ..limit
    }
}

/// The arms to search, best greedy value first (see the module documentation).
fn searched_arms(mut options: Vec<TurnOption>) -> Vec<Arm> {
    // A stable sort keeps `legal_moves` order among equal values, as greedy does.
    options.sort_by(|a, b| b.value.total_cmp(&a.value));
    let Some(best) = options.first().map(|option| option.value) else {
        return Vec::new();
    };
    options
        .into_iter()
        .enumerate()
        .take_while(|(rank, option)| {
            *rank < MIN_ARMS || (*rank < MAX_ARMS && option.value >= best - PRUNE_MARGIN)
        })
        .map(|(_, turn)| Arm {
            turn,
            prior: ((turn.value - best) / PRUNE_MARGIN).max(-1.0),
            tries: 0,
            total_reward: 0.0,
        })
        .collect()
}

/// The first untried arm, or else the one with the highest bound.
fn arm_to_try(arms: &[Arm], iterations: u32) -> usize {
    if let Some(untried) = arms.iter().position(|arm| arm.tries == 0) {
        return untried;
    }
    let log_total = f64::from(iterations.max(1)).ln();
    let mut best = 0;
    for (index, arm) in arms.iter().enumerate() {
        if arm.bound(log_total) > arms[best].bound(log_total) {
            best = index;
        }
    }
    best
}

fn most_tried(arms: &[Arm]) -> Option<&Arm> {
    arms.iter().reduce(|best, arm| {
        let better = (arm.tries, arm.mean()) > (best.tries, best.mean());
        if better { arm } else { best }
    })
}

/// One iteration: a fresh deal, the arm's turn, a rollout, the reward for `me`.
fn playout(view: &HiddenGame, turn: &TurnOption, me: Seat, rng: &mut impl Rng) -> f64 {
    let mut game = view.sample(rng);
    let turn_moves = turn.placement.into_iter().chain([turn.action]);
    for mv in turn_moves {
        if game.play(mv).is_err() {
            // Cannot happen (the sample has the same board and tile); a wrong arm
            // simply earns nothing rather than stopping the search.
            return 0.0;
        }
    }
    rollout(&mut game, rng);
    reward(&game, me)
}

/// Plays the rollout policy of the module documentation to the end of the game.
pub fn rollout(game: &mut Game, rng: &mut impl Rng) {
    loop {
        let mv = match game.phase() {
            Phase::Over => return,
            Phase::PlaceTile => {
                let placements = game.legal_moves();
                placements[pick_index(rng, placements.len())]
            }
            Phase::Act => rollout_action(game, rng),
        };
        // Every move comes from `legal_moves`, which lists exactly what `play` accepts.
        game.play_unchecked(mv);
    }
}

fn rollout_action(game: &Game, rng: &mut impl Rng) -> Move {
    let roll = rng.next_u32();
    if roll & 1 == 0 {
        return Move::Pass;
    }
    // The low bit chose not to pass; the others are still uniformly random.
    let farmers_allowed = (roll >> 1).is_multiple_of(FARMER_ODDS);
    let actions: Vec<Move> = game
        .legal_moves()
        .into_iter()
        .filter(|&action| farmers_allowed || !is_farmer(action))
        .collect();
    actions
        .get(pick_index(rng, actions.len()))
        .copied()
        .unwrap_or(Move::Pass)
}

/// A figure laid in a field.
fn is_farmer(action: Move) -> bool {
    matches!(action, Move::PlaceFigure { spot, .. } if spot.kind() == SegmentKind::Field)
}

/// The value of a finished game for `me`, between 0 and 1: half for the result (1 for a
/// win, ½ for a shared first place, 0 for a loss) and half for the margin over the best
/// opponent, `½ + ½ tanh(margin / REWARD_SCALE)`, so that playouts also tell a big win
/// from a narrow one.
pub fn reward(game: &Game, me: Seat) -> f64 {
    let scores = game.scores();
    let mine = f64::from(scores[me as usize]);
    let best_other = scores
        .iter()
        .enumerate()
        .filter(|&(seat, _)| seat != me as usize)
        .map(|(_, &score)| f64::from(score))
        .fold(0.0, f64::max);
    let margin = mine - best_other;
    let result = match margin.partial_cmp(&0.0) {
        Some(std::cmp::Ordering::Greater) => 1.0,
        Some(std::cmp::Ordering::Equal) => 0.5,
        _ => 0.0,
    };
    0.5 * result + 0.5 * (0.5 + 0.5 * (margin / REWARD_SCALE).tanh())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{all_expansions_game, same_game_other_order};
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    #[test]
    fn the_choice_is_the_same_whatever_the_hidden_order() {
        for seed in 0..3 {
            let (first, second) = same_game_other_order(seed);
            let mut rng_first = ChaCha8Rng::seed_from_u64(seed);
            let mut rng_second = ChaCha8Rng::seed_from_u64(seed);
            let limit = SearchLimit::iterations(300);
            assert_eq!(
                choose(&first.hidden(), limit, &mut rng_first),
                choose(&second.hidden(), limit, &mut rng_second),
            );
        }
    }

    #[test]
    fn it_stops_at_its_deadline() {
        let game = all_expansions_game(5);
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let started = Instant::now();
        let chosen = choose(
            &game.hidden(),
            SearchLimit::until(started + Duration::from_millis(50)),
            &mut rng,
        );
        let spent = started.elapsed();
        assert!(game.legal_moves().contains(&chosen.expect("a move")));
        // One iteration (a deal and a rollout) takes well under a millisecond; the rest is
        // room for a loaded machine.
        assert!(spent < Duration::from_millis(150), "{spent:?}");
        assert!(spent >= Duration::from_millis(50), "{spent:?}");
    }

    #[test]
    fn a_passed_deadline_still_gives_the_greedy_move() {
        let game = all_expansions_game(6);
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let chosen = choose(&game.hidden(), SearchLimit::until(Instant::now()), &mut rng);
        assert_eq!(chosen, crate::greedy::choose(game.hidden().game()));
    }

    #[test]
    fn the_reward_orders_wins_ties_and_losses_by_margin() {
        let mut game = all_expansions_game(7);
        rollout(&mut game, &mut ChaCha8Rng::seed_from_u64(7));
        let (zero, one) = (reward(&game, 0), reward(&game, 1));
        assert!(
            (zero + one - 1.0).abs() < 1e-9,
            "two players: rewards mirror"
        );
        let scores = game.scores();
        assert_eq!(zero > one, scores[0] > scores[1]);
    }
}
