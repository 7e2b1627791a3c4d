//! Computer players for Carcassonne, and a tournament runner to measure them.
//!
//! A bot sees a game only through a [`HiddenGame`]: the order of the remaining stack is
//! not in it, so no bot can cheat by knowing the next tiles (the tests check that a bot's
//! choice is the same for two games that differ only in that order). [`choose_move`]
//! returns one [`Move`] for the player to move: the tile placement in the
//! [`carcassonne_core::Phase::PlaceTile`] step, the action in the `Act` step.
//!
//! Levels ([`BotLevel`]):
//! * `random` ([`random`]): a uniformly random legal move.
//! * `greedy` ([`greedy`]): the turn (placement and action) with the best immediate
//!   evaluation ([`evaluation`]).
//! * `mcts` ([`mcts`]): Monte Carlo search over whole turns on sampled deals, until the
//!   deadline.
//!
//! Randomness comes from a caller's [`ChaCha8Rng`], so a choice is reproducible from the
//! generator's state and, for `mcts`, the number of iterations the deadline allowed.
//! Nothing here is async; `mcts` reads the clock ([`Instant`]) to stop at its deadline.

pub mod evaluation;
pub mod greedy;
pub mod mcts;
pub mod random;
pub mod tournament;

use carcassonne_core::{HiddenGame, Move};
use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// How strong a bot plays. Written `random`, `greedy` or `mcts` (serde, `FromStr`,
/// `Display`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BotLevel {
    Random,
    Greedy,
    Mcts,
}

impl BotLevel {
    /// Every level, weakest first.
    pub const ALL: [BotLevel; 3] = [BotLevel::Random, BotLevel::Greedy, BotLevel::Mcts];

    /// The level's name as written in options and on the wire.
    pub fn name(self) -> &'static str {
        match self {
            BotLevel::Random => "random",
            BotLevel::Greedy => "greedy",
            BotLevel::Mcts => "mcts",
        }
    }
}

impl fmt::Display for BotLevel {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// A level name that is none of `random`, `greedy`, `mcts`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownBotLevel(pub String);

impl fmt::Display for UnknownBotLevel {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "unknown bot level {:?} (expected random, greedy or mcts)",
            self.0
        )
    }
}

impl std::error::Error for UnknownBotLevel {}

impl FromStr for BotLevel {
    type Err = UnknownBotLevel;

    fn from_str(text: &str) -> Result<BotLevel, UnknownBotLevel> {
        BotLevel::ALL
            .into_iter()
            .find(|level| level.name() == text)
            .ok_or_else(|| UnknownBotLevel(text.to_owned()))
    }
}

/// Chooses the next move for the player to move in `view`: a legal move of
/// `view.game().legal_moves()`, or [`Move::Pass`] if the game is over (which no caller
/// should ask). `deadline` bounds the thinking of `mcts`; the other levels answer at
/// once and ignore it. Deterministic for a given `rng` state and work done.
pub fn choose_move(
    level: BotLevel,
    view: &HiddenGame,
    deadline: Instant,
    rng: &mut ChaCha8Rng,
) -> Move {
    let chosen = match level {
        BotLevel::Random => random::choose(view.game(), rng),
        BotLevel::Greedy => greedy::choose(view.game()),
        BotLevel::Mcts => mcts::choose(view, mcts::SearchLimit::until(deadline), rng),
    };
    chosen.unwrap_or(Move::Pass)
}

/// The moment `think` from now: the deadline to give [`choose_move`]. An absurd `think`
/// (beyond what the clock can add) gives a deadline a year away rather than a panic.
pub fn deadline_after(think: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(think)
        .or_else(|| now.checked_add(Duration::from_secs(365 * 24 * 3600)))
        .unwrap_or(now)
}

/// A uniform index in `0..len` (`len > 0`), by the multiply-high method: its bias, under
/// `len / 2^64`, is far below anything a game could notice.
pub(crate) fn pick_index(rng: &mut impl Rng, len: usize) -> usize {
    ((u128::from(rng.next_u64()) * len as u128) >> 64) as usize
}

#[cfg(test)]
pub(crate) mod test_support;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{all_expansions_game, same_game_other_order};
    use rand_core::SeedableRng;

    #[test]
    fn an_absurd_thinking_time_gives_a_far_deadline_not_a_panic() {
        assert!(deadline_after(Duration::MAX) > Instant::now() + Duration::from_secs(3600));
        let soon = deadline_after(Duration::from_millis(5));
        assert!(soon <= Instant::now() + Duration::from_millis(5));
    }

    #[test]
    fn levels_round_trip_through_their_names() {
        for level in BotLevel::ALL {
            assert_eq!(level.to_string().parse::<BotLevel>(), Ok(level));
            let json = serde_json::to_string(&level).expect("serializable");
            assert_eq!(json, format!("\"{level}\""));
            assert_eq!(serde_json::from_str::<BotLevel>(&json).ok(), Some(level));
        }
        assert!("expert".parse::<BotLevel>().is_err());
    }

    #[test]
    fn every_level_plays_whole_games_with_every_expansion_legally() {
        for (index, level) in BotLevel::ALL.into_iter().enumerate() {
            let mut game = all_expansions_game(index as u64);
            let mut rng = ChaCha8Rng::seed_from_u64(index as u64);
            while game.phase() != carcassonne_core::Phase::Over {
                let deadline = Instant::now() + Duration::from_millis(2);
                let chosen = choose_move(level, &game.hidden(), deadline, &mut rng);
                assert!(game.legal_moves().contains(&chosen), "{level}: {chosen:?}");
                game.play(chosen).expect("a legal move");
            }
        }
    }

    #[test]
    fn random_and_greedy_choose_alike_whatever_the_hidden_order() {
        for level in [BotLevel::Random, BotLevel::Greedy] {
            for seed in 0..5 {
                let (first, second) = same_game_other_order(seed);
                let far = Instant::now() + Duration::from_secs(60);
                let mut rng_first = ChaCha8Rng::seed_from_u64(seed);
                let mut rng_second = ChaCha8Rng::seed_from_u64(seed);
                assert_eq!(
                    choose_move(level, &first.hidden(), far, &mut rng_first),
                    choose_move(level, &second.hidden(), far, &mut rng_second),
                );
            }
        }
    }
}
