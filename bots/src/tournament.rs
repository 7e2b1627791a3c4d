//! Bot against bot: many 2-player base games (default rules), to measure strength.
//!
//! Games come in pairs dealt from the same deck seed, with the seats swapped, so each bot
//! plays both sides of each deal and neither gains from a lucky deal. The deck seed of
//! pair `k` is `seed + k`; the bots' generators are seeded from `seed`, the game number
//! and the seat. `threads` games run at once on scoped std threads. A bot is asked for
//! every move (placement, then action), each with `think` from the moment it is asked.

use crate::{BotLevel, choose_move, deadline_after};
use carcassonne_core::{Game, Phase, Rules, Setup, Stack};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use serde::Serialize;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// What one bot did over a tournament.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BotRecord {
    pub level: Option<BotLevel>,
    pub wins: u32,
    pub losses: u32,
    pub draws: u32,
    /// Its mean final score.
    pub mean_score: f64,
    /// Moves it was asked for (placements and actions).
    pub moves: u64,
    /// Its mean thinking time per move, in milliseconds.
    pub mean_move_ms: f64,
    /// Its longest thinking time for one move, in milliseconds.
    pub max_move_ms: f64,
}

/// The outcome of [`tournament`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TournamentReport {
    pub games: u32,
    pub think_ms: u64,
    pub threads: usize,
    pub seed: u64,
    pub a: BotRecord,
    pub b: BotRecord,
    /// `a`'s wins over all games (draws count as not won).
    pub a_win_rate: f64,
    pub total_seconds: f64,
}

/// One finished game, seen from `a`'s side.
#[derive(Clone, Copy, Debug, Default)]
struct GameResult {
    scores: [u32; 2],
    think: [Duration; 2],
    max_think: [Duration; 2],
    moves: [u64; 2],
}

/// Plays `games` games of `a` against `b` as the module documentation says.
pub fn tournament(
    a: BotLevel,
    b: BotLevel,
    games: u32,
    think: Duration,
    threads: usize,
    seed: u64,
) -> TournamentReport {
    let started = Instant::now();
    let next_game = AtomicU32::new(0);
    let results = Mutex::new(Vec::with_capacity(games as usize));
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                loop {
                    let number = next_game.fetch_add(1, Ordering::Relaxed);
                    if number >= games {
                        return;
                    }
                    let result = play_game([a, b], number, think, seed);
                    results
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(result);
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    report([a, b], &results, think, threads, seed, started.elapsed())
}

/// Game `number`: deal of pair `number / 2`; `a` sits first in even games.
fn play_game(levels: [BotLevel; 2], number: u32, think: Duration, seed: u64) -> GameResult {
    let a_seat = (number % 2) as usize;
    let deck_seed = seed.wrapping_add(u64::from(number / 2));
    let mut game = new_base_game(deck_seed);
    let mut rngs = [0u64, 1].map(|bot| {
        ChaCha8Rng::seed_from_u64(seed ^ (u64::from(number) << 8) ^ (bot << 1) ^ 0x5eed)
    });
    let mut result = GameResult::default();
    while let Some(seat) = game.current_player() {
        // Bot 0 is `a`; it sits at `a_seat`.
        let bot = usize::from(seat as usize != a_seat);
        let asked = Instant::now();
        let deadline = deadline_after(think);
        let chosen = choose_move(levels[bot], &game.hidden(), deadline, &mut rngs[bot]);
        let spent = asked.elapsed();
        result.think[bot] += spent;
        result.max_think[bot] = result.max_think[bot].max(spent);
        result.moves[bot] += 1;
        if game.play(chosen).is_err() || game.phase() == Phase::Over {
            break;
        }
    }
    let scores = game.scores();
    result.scores = [scores[a_seat], scores[1 - a_seat]];
    result
}

fn new_base_game(deck_seed: u64) -> Game {
    Game::new(Setup {
        rules: Rules::default(),
        players: 2,
        stack: Stack::Seeded(deck_seed),
    })
    .expect("the default rules with 2 players are a valid setup")
}

fn report(
    levels: [BotLevel; 2],
    results: &[GameResult],
    think: Duration,
    threads: usize,
    seed: u64,
    elapsed: Duration,
) -> TournamentReport {
    let [a, b] = [0, 1].map(|bot| bot_record(levels[bot], bot, results));
    let games = results.len() as u32;
    TournamentReport {
        games,
        think_ms: think.as_millis() as u64,
        threads,
        seed,
        a_win_rate: f64::from(a.wins) / f64::from(games.max(1)),
        a,
        b,
        total_seconds: elapsed.as_secs_f64(),
    }
}

fn bot_record(level: BotLevel, bot: usize, results: &[GameResult]) -> BotRecord {
    let other = 1 - bot;
    let mut record = BotRecord {
        level: Some(level),
        ..BotRecord::default()
    };
    let mut think = Duration::ZERO;
    let mut max_think = Duration::ZERO;
    let mut score_sum = 0u64;
    for result in results {
        match result.scores[bot].cmp(&result.scores[other]) {
            std::cmp::Ordering::Greater => record.wins += 1,
            std::cmp::Ordering::Less => record.losses += 1,
            std::cmp::Ordering::Equal => record.draws += 1,
        }
        score_sum += u64::from(result.scores[bot]);
        think += result.think[bot];
        max_think = max_think.max(result.max_think[bot]);
        record.moves += result.moves[bot];
    }
    record.mean_score = score_sum as f64 / results.len().max(1) as f64;
    record.mean_move_ms = think.as_secs_f64() * 1000.0 / record.moves.max(1) as f64;
    record.max_move_ms = max_think.as_secs_f64() * 1000.0;
    record
}

impl TournamentReport {
    /// The report as a few readable lines.
    pub fn to_text(&self) -> String {
        let line = |record: &BotRecord, name: &str| {
            format!(
                "{name} {:<7} wins {:>4}  losses {:>4}  draws {:>3}  mean score {:>6.1}  \
                 {:>6} moves, mean {:.2} ms, max {:.1} ms per move\n",
                record.level.map_or("?", BotLevel::name),
                record.wins,
                record.losses,
                record.draws,
                record.mean_score,
                record.moves,
                record.mean_move_ms,
                record.max_move_ms,
            )
        };
        format!(
            "{} games (2-player base, seats swapped per deal), think {} ms a move, {} threads, \
             seed {}\n{}{}win rate of a: {:.1} %\ntotal time: {:.1} s\n",
            self.games,
            self.think_ms,
            self.threads,
            self.seed,
            line(&self.a, "a"),
            line(&self.b, "b"),
            self.a_win_rate * 100.0,
            self.total_seconds,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_tournament_counts_every_game_for_both_sides() {
        let report = tournament(
            BotLevel::Greedy,
            BotLevel::Random,
            6,
            Duration::from_millis(1),
            2,
            9,
        );
        assert_eq!(report.games, 6);
        for record in [&report.a, &report.b] {
            assert_eq!(record.wins + record.losses + record.draws, 6);
            assert!(
                record.moves > 6 * 30,
                "each bot moves dozens of times a game"
            );
        }
        assert_eq!(report.a.wins, report.b.losses);
        assert_eq!(report.a_win_rate, f64::from(report.a.wins) / 6.0);
        assert!(report.to_text().contains("win rate of a"));
    }

    #[test]
    fn the_two_games_of_a_pair_share_the_deal_with_seats_swapped() {
        // Two random bots with the same seeds: the deal is the same for games 0 and 1, so
        // the same number of tiles is drawn whoever sits where.
        let first = play_game([BotLevel::Greedy, BotLevel::Greedy], 0, Duration::ZERO, 3);
        let second = play_game([BotLevel::Greedy, BotLevel::Greedy], 1, Duration::ZERO, 3);
        // Greedy is deterministic: swapping two identical bots swaps the scores.
        assert_eq!(first.scores, [second.scores[1], second.scores[0]]);
    }
}
