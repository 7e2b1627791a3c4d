//! Criterion benchmarks of the rules engine.
//!
//! * `random_game/base_2p` plays a whole 2-player base game from `Game::new` to game over,
//!   every move chosen uniformly among `legal_moves()`. The random numbers that pick the
//!   moves are drawn before the timed part (a game never needs more than a few hundred),
//!   so the timing covers the engine alone: setup and shuffle, legal-move generation,
//!   validation, play, scoring and end-of-game scoring.
//! * `legal_placements/mid_game` lists the legal placements of the drawn tile on
//!   positions half-way through random base games.
//! * `replay/base_2p` and `replay/base_2p_legal` replay a recorded 2-player base game
//!   (`conformance/games/base-2p-001.json`, read and parsed before the timed part) as the
//!   `replay` command does, without and with the sorted legal placements of every turn.
//!
//! The target (`docs/performance.md`) is a median under 100 microseconds per whole game.
//!
//! The benchmarks allocate with mimalloc, the allocator of the server binary, which is
//! what runs the engine for players and for `carcassonne-server replay`.

use carcassonne_core::record::{GameRecord, replay};
use carcassonne_core::{Game, Phase, Rules, Setup, Stack};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::hint::black_box;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// More random numbers than a base game has moves (71 tiles, two moves each).
const CHOICES_PER_GAME: usize = 160;

/// How many tiles the mid-game positions have had placed.
const MID_GAME_TILES: u32 = 35;

fn base_setup(seed: u64) -> Setup {
    Setup {
        rules: Rules::default(),
        players: 2,
        stack: Stack::Seeded(seed),
    }
}

fn random_numbers(seed: u64, count: usize) -> Vec<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count).map(|_| rng.next_u64()).collect()
}

/// Plays a whole game, taking the move for each step from the next random number.
fn play_random_game(setup: Setup, choices: &[u64]) -> Game {
    let mut game = Game::new(setup).expect("a valid setup");
    let mut choices = choices.iter().cycle();
    while game.phase() != Phase::Over {
        let moves = game.legal_moves();
        let pick = *choices.next().expect("cycle never ends") as usize % moves.len();
        game.play(moves[pick]).expect("a listed move is legal");
    }
    game
}

/// Plays random moves until `tiles` tiles are placed and the next tile is waiting.
fn mid_game_position(seed: u64, tiles: u32) -> Game {
    let mut game = Game::new(base_setup(seed)).expect("a valid setup");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    while game.phase() != Phase::Over
        && !(game.phase() == Phase::PlaceTile && game.tiles_placed() >= tiles)
    {
        let moves = game.legal_moves();
        let pick = rng.next_u64() as usize % moves.len();
        game.play(moves[pick]).expect("a listed move is legal");
    }
    game
}

fn whole_random_game(c: &mut Criterion) {
    let mut group = c.benchmark_group("random_game");
    group.throughput(Throughput::Elements(1));
    let mut seed = 0u64;
    group.bench_function("base_2p", |b| {
        b.iter_batched(
            || {
                // A different game every iteration, so the median is over many games.
                seed += 1;
                (base_setup(seed), random_numbers(seed, CHOICES_PER_GAME))
            },
            |(setup, choices)| black_box(play_random_game(setup, &choices)),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn legal_placements_mid_game(c: &mut Criterion) {
    let positions: Vec<Game> = (1..=32)
        .map(|seed| mid_game_position(seed, MID_GAME_TILES))
        .filter(|game| game.phase() == Phase::PlaceTile)
        .collect();
    let mut group = c.benchmark_group("legal_placements");
    group.throughput(Throughput::Elements(positions.len() as u64));
    group.bench_function("mid_game", |b| {
        b.iter(|| {
            for game in &positions {
                black_box(game.legal_placements());
            }
        })
    });
    group.finish();
}

/// A full-length recorded base game: 71 tiles drawn, figures placed and scored.
const RECORDED_BASE_GAME: &str = include_str!("../../conformance/games/base-2p-001.json");

fn replay_recorded_game(c: &mut Criterion) {
    let record: GameRecord =
        serde_json::from_str(RECORDED_BASE_GAME).expect("the corpus file is a game record");
    let mut group = c.benchmark_group("replay");
    group.throughput(Throughput::Elements(1));
    for (name, legal) in [("base_2p", false), ("base_2p_legal", true)] {
        group.bench_function(name, |b| {
            b.iter(|| black_box(replay(black_box(&record), legal).expect("a legal record")))
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    whole_random_game,
    legal_placements_mid_game,
    replay_recorded_game
);
criterion_main!(benches);
