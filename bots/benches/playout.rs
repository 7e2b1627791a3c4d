//! Criterion benchmark of one `mcts` iteration's work: deal a determinization of a
//! position (`HiddenGame::sample`) and play the rollout policy to the end of the game.
//! `playout/opening` starts from the first turn of a 2-player base game, the longest
//! rollout there is; `playout/mid_game` from the turn after 35 tiles.

use carcassonne_bots::mcts::rollout;
use carcassonne_core::{Game, HiddenGame, Phase, Rules, Setup, Stack};
use criterion::{Criterion, criterion_group, criterion_main};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::hint::black_box;

fn position(tiles_placed: u32) -> HiddenGame {
    let setup = Setup {
        rules: Rules::default(),
        players: 2,
        stack: Stack::Seeded(17),
    };
    let mut game = Game::new(setup).expect("a valid setup");
    while game.tiles_placed() < tiles_placed && game.phase() != Phase::Over {
        // Play the first legal move: any path to a mid-game position will do.
        let first = game.legal_moves()[0];
        game.play(first).expect("a listed move is legal");
    }
    game.hidden()
}

fn playouts(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("playout");
    for (name, tiles) in [("opening", 0), ("mid_game", 35)] {
        let view = position(tiles);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        group.bench_function(name, |bench| {
            bench.iter(|| {
                let mut game = view.sample(&mut rng);
                rollout(&mut game, &mut rng);
                black_box(game.scores()[0])
            })
        });
    }
    group.finish();
}

criterion_group!(benches, playouts);
criterion_main!(benches);
