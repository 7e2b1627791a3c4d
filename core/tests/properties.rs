//! Properties that hold in every game, checked over thousands of random games.
//!
//! Each case draws random rules (any subset of expansions, farmers on or off, any farm
//! value, sometimes a tile limit), a seat count those rules allow, a stack seed and a
//! seed for the moves, then plays to the end choosing uniformly among `legal_moves()`.
//! The incremental features are compared with a from-scratch flood fill by the unit test
//! in `src/recompute.rs`, which needs the engine's internals.

use carcassonne_core::deck::shuffled_stack;
use carcassonne_core::record::{Action, GameRecord, TurnRecord, replay};
use carcassonne_core::{
    Expansion, FigureKind, Game, Move, Phase, PlacedTile, PointsByKind, Pos, Rotation, Rules, Seat,
    Setup, Side, Spot, Stack, TileId,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::collections::{HashMap, HashSet};

/// Whole games per run of the invariant property. Debug builds are some twenty times
/// slower, so they play a tenth; `cargo test --release` plays the full number.
const INVARIANT_GAMES: u32 = if cfg!(debug_assertions) { 300 } else { 3000 };

/// Whole games per run of the legal-move property, which tries many moves per step.
const AGREEMENT_GAMES: u32 = if cfg!(debug_assertions) { 50 } else { 500 };

fn any_rules() -> impl Strategy<Value = Rules> {
    (
        proptest::sample::subsequence(Expansion::ALL.to_vec(), 0..=4),
        any::<bool>(),
        1u32..=10,
        proptest::option::weighted(0.2, 1u32..=71),
    )
        .prop_map(
            |(expansions, farmers, farmer_city_points, tile_limit)| Rules {
                expansions,
                farmers,
                farmer_city_points,
                tile_limit,
            },
        )
}

/// Random rules, a seat count they allow (2 to 5, or 6 with Inns & Cathedrals) and a
/// seeded stack.
fn any_setup() -> impl Strategy<Value = Setup> {
    (any_rules(), any::<u64>()).prop_flat_map(|(rules, seed)| {
        let max: u8 = if has(&rules, Expansion::InnsAndCathedrals) {
            6
        } else {
            5
        };
        (2..=max).prop_map(move |players| Setup {
            rules: rules.clone(),
            players,
            stack: Stack::Seeded(seed),
        })
    })
}

fn has(rules: &Rules, expansion: Expansion) -> bool {
    rules.expansions.contains(&expansion)
}

/// How many tiles a seeded stack holds, from the totals of `tiles.md`: 71 base tiles
/// (72 less the start tile), 11 river tiles (12 less the spring), 18 Inns & Cathedrals,
/// 10 Festival.
fn seeded_stack_size(rules: &Rules) -> usize {
    let expansions = [
        (Expansion::River, 11),
        (Expansion::InnsAndCathedrals, 18),
        (Expansion::Festival, 10),
    ];
    71 + expansions
        .iter()
        .filter(|(expansion, _)| has(rules, *expansion))
        .map(|(_, tiles)| tiles)
        .sum::<usize>()
}

/// How many figures of `kind` each player starts with under `rules`.
fn starting_figures(rules: &Rules, kind: FigureKind) -> usize {
    match kind {
        FigureKind::Follower => 7,
        FigureKind::Big => has(rules, Expansion::InnsAndCathedrals) as usize,
        FigureKind::Abbot => has(rules, Expansion::Abbot) as usize,
    }
}

fn pick<T: Copy>(rng: &mut ChaCha8Rng, items: &[T]) -> T {
    items[rng.next_u64() as usize % items.len()]
}

/// Every figure is in its owner's supply or on the board, never both, never lost.
fn figures_are_conserved(game: &Game) -> Result<(), TestCaseError> {
    let on_board = game.figures();
    for player in 0..game.players() {
        for kind in FigureKind::ALL {
            let placed = on_board
                .iter()
                .filter(|f| f.player == player && f.figure == kind)
                .count();
            let in_supply = game.supply(player).count(kind) as usize;
            prop_assert_eq!(
                placed + in_supply,
                starting_figures(game.rules(), kind),
                "player {} {:?}",
                player,
                kind
            );
        }
    }
    Ok(())
}

/// Every tile of the stack is placed, discarded, waiting to be placed or still in the
/// stack; the start tile is the one extra tile on the board.
fn tiles_are_conserved(game: &Game) -> Result<(), TestCaseError> {
    let waiting = (game.phase() == Phase::PlaceTile) as usize;
    let accounted = game.tiles().len() + game.discarded().len() + game.tiles_left() + waiting;
    prop_assert_eq!(accounted, seeded_stack_size(game.rules()) + 1);
    Ok(())
}

/// Every side `tile` shares with a neighbour shows the same kind of edge on both tiles.
fn edges_match_around(game: &Game, tile: &PlacedTile) -> Result<(), TestCaseError> {
    for side in Side::ALL {
        if let Some(neighbour) = game.tile_at(tile.pos.step(side)) {
            let mine = tile.def().edge(side, tile.rotation);
            let theirs = neighbour.def().edge(side.opposite(), neighbour.rotation);
            prop_assert_eq!(
                mine,
                theirs,
                "{} at {} side {:?}",
                tile.tile,
                tile.pos,
                side
            );
        }
    }
    Ok(())
}

/// Every tile after the start tile shares a full edge with a tile placed before it.
fn every_tile_touched_an_earlier_one(game: &Game) -> Result<(), TestCaseError> {
    let order: HashMap<Pos, usize> = game
        .tiles()
        .iter()
        .enumerate()
        .map(|(index, tile)| (tile.pos, index))
        .collect();
    prop_assert_eq!(order.len(), game.tiles().len(), "two tiles on one cell");
    for (index, tile) in game.tiles().iter().enumerate().skip(1) {
        let touches_earlier = Side::ALL
            .into_iter()
            .filter_map(|side| order.get(&tile.pos.step(side)))
            .any(|&other| other < index);
        prop_assert!(touches_earlier, "{} at {}", tile.tile, tile.pos);
    }
    Ok(())
}

/// The checks made after every move: conservation, the placed tile's edges, scores that
/// only grow, and whose turn it is.
fn check_step(game: &Game, before: &Game, mv: Move) -> Result<(), TestCaseError> {
    figures_are_conserved(game)?;
    tiles_are_conserved(game)?;
    if let Move::PlaceTile { pos, .. } = mv {
        edges_match_around(game, game.tile_at(pos).expect("the tile just placed"))?;
    }
    for (now, then) in game.scores().iter().zip(before.scores()) {
        prop_assert!(now >= then, "a score fell from {} to {}", then, now);
    }
    let mover = before.current_player().expect("a move was made");
    let expected_next = match mv {
        Move::PlaceTile { .. } => mover,
        _ => (mover + 1) % game.players(),
    };
    if game.phase() != Phase::Over {
        prop_assert_eq!(game.current_player(), Some(expected_next));
    }
    Ok(())
}

/// The record of a finished game, as a server would export it.
fn record_of(setup: &Setup, seed: u64, moves: &[Move], tiles: &[TileId]) -> GameRecord {
    let turns = moves
        .chunks(2)
        .zip(tiles)
        .map(|(pair, &tile)| {
            let Move::PlaceTile { pos, rotation } = pair[0] else {
                panic!("a turn starts with a placement")
            };
            TurnRecord {
                tile,
                x: pos.x,
                y: pos.y,
                rotation,
                action: Action::from_move(pair[1]).expect("an action follows a placement"),
            }
        })
        .collect();
    GameRecord {
        rules: setup.rules.clone(),
        players: setup.players,
        draw_order: shuffled_stack(&setup.rules, seed),
        turns,
        extra: Default::default(),
    }
}

/// What a random game leaves to compare a replay with.
struct PlayedGame {
    moves: Vec<Move>,
    /// The totals after each turn that did not end the game.
    turn_scores: Vec<Vec<u32>>,
    end: Game,
}

/// Replaying the moves on a fresh game rebuilds the same game, a fixed stack in the
/// shuffled order behaves exactly like the seed, and the exported record replays to
/// the same totals after every turn and at the end.
fn replays_agree(setup: &Setup, seed: u64, played: &PlayedGame) -> Result<(), TestCaseError> {
    let PlayedGame {
        moves,
        turn_scores,
        end,
    } = played;
    let mut again = Game::new(setup.clone()).unwrap();
    let mut tiles = Vec::new();
    for &mv in moves {
        if matches!(mv, Move::PlaceTile { .. }) {
            tiles.extend(again.current_tile());
        }
        prop_assert!(again.play(mv).is_ok(), "{:?} refused on replay", mv);
    }
    prop_assert!(again == *end, "the replayed game differs");
    let fixed = Setup {
        stack: Stack::Fixed(shuffled_stack(&setup.rules, seed)),
        ..setup.clone()
    };
    prop_assert!(
        Game::new(fixed).unwrap() == Game::new(setup.clone()).unwrap(),
        "a fixed stack in the seeded order starts a different game"
    );
    let text = serde_json::to_string(&record_of(setup, seed, moves, &tiles)).unwrap();
    let record: GameRecord = serde_json::from_str(&text).unwrap();
    let replayed = replay(&record, false).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&replayed.final_scores[..], end.scores());
    prop_assert_eq!(replayed.turns.len(), end.tiles_placed() as usize);
    for (index, (turn, scores)) in replayed.turns.iter().zip(turn_scores).enumerate() {
        prop_assert_eq!(&turn.scores, scores, "turn {}", index);
    }
    prop_assert_eq!(&replayed.discarded[..], end.discarded());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(INVARIANT_GAMES))]

    /// Figures and tiles are conserved, shared edges match, scores never fall, turns go
    /// round the table, and replaying the moves rebuilds an identical game.
    #[test]
    fn random_games_keep_every_invariant(setup in any_setup(), move_seed in any::<u64>()) {
        let Stack::Seeded(seed) = setup.stack else { unreachable!("any_setup seeds") };
        let mut game = Game::new(setup.clone()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(move_seed);
        let mut moves = Vec::new();
        let mut turn_scores = Vec::new();
        let mut points = vec![PointsByKind::default(); usize::from(game.players())];
        figures_are_conserved(&game)?;
        tiles_are_conserved(&game)?;
        while game.phase() != Phase::Over {
            let before = game.clone();
            let mv = pick(&mut rng, &game.legal_moves());
            let ends = game.check_ends_game(mv);
            let events = game.play(mv);
            prop_assert!(events.is_ok());
            for (seat, points) in points.iter_mut().enumerate() {
                points.add_events(seat as Seat, events.as_deref().unwrap_or_default());
            }
            prop_assert_eq!(ends, Ok(game.phase() == Phase::Over), "{:?}", mv);
            check_step(&game, &before, mv)?;
            moves.push(mv);
            if game.phase() == Phase::PlaceTile {
                turn_scores.push(game.scores().to_vec());
            }
        }
        prop_assert!(game.legal_moves().is_empty());
        let totals: Vec<u32> = points.iter().map(PointsByKind::total).collect();
        prop_assert_eq!(&totals[..], game.scores(), "points by kind add up to the scores");
        for tile in game.tiles() {
            edges_match_around(&game, tile)?;
        }
        every_tile_touched_an_earlier_one(&game)?;
        if let Some(limit) = game.rules().tile_limit {
            prop_assert!(game.tiles_placed() <= limit);
        }
        let played = PlayedGame { moves, turn_scores, end: game };
        replays_agree(&setup, seed, &played)?;
    }
}

/// Spot labels to try on any tile: every label the catalogue uses, and some it does not.
const SPOT_LABELS: [&str; 16] = [
    "c1", "c2", "c3", "c4", "r1", "r2", "r3", "r4", "f1", "f2", "f3", "f4", "m", "g", "w1", "c9",
];

fn random_spot(rng: &mut ChaCha8Rng) -> Spot {
    pick(rng, &SPOT_LABELS).parse().unwrap()
}

/// Cells in and around the placed area: the bounding box of the board grown by two.
fn random_cell_near_board(game: &Game, rng: &mut ChaCha8Rng) -> Pos {
    let xs = game.tiles().iter().map(|t| t.pos.x);
    let ys = game.tiles().iter().map(|t| t.pos.y);
    let (x_min, x_max) = (xs.clone().min().unwrap() - 2, xs.max().unwrap() + 2);
    let (y_min, y_max) = (ys.clone().min().unwrap() - 2, ys.max().unwrap() + 2);
    let x = x_min + (rng.next_u64() % (x_max - x_min + 1) as u64) as i32;
    let y = y_min + (rng.next_u64() % (y_max - y_min + 1) as u64) as i32;
    Pos::new(x, y)
}

/// Moves worth trying now, legal or not: random cells near the board at every rotation,
/// every spot of the tile just placed with every figure kind, a recall, festival returns
/// of every figure on the board and of empty spots, and moves of the wrong step.
fn candidate_moves(game: &Game, rng: &mut ChaCha8Rng) -> Vec<Move> {
    let mut moves = vec![
        Move::Pass,
        Move::RecallAbbot,
        Move::PlaceFigure {
            figure: FigureKind::Follower,
            spot: random_spot(rng),
        },
    ];
    for _ in 0..12 {
        let pos = random_cell_near_board(game, rng);
        moves.extend(Rotation::ALL.map(|rotation| Move::PlaceTile { pos, rotation }));
        moves.push(Move::FestivalReturn {
            pos,
            spot: random_spot(rng),
        });
    }
    if let Some(placed) = game.placed_this_turn() {
        for segment in &placed.def().segments {
            moves.extend(FigureKind::ALL.map(|figure| Move::PlaceFigure {
                figure,
                spot: segment.spot,
            }));
        }
    }
    for figure in game.figures() {
        moves.push(Move::FestivalReturn {
            pos: figure.pos,
            spot: figure.spot,
        });
    }
    moves
}

/// `legal_moves()` lists each move once, `check` and `play` accept every listed move, and
/// of all the candidates exactly the listed ones are accepted; a refused `play` leaves
/// the game unchanged.
fn legal_moves_agree_with_play(game: &Game, rng: &mut ChaCha8Rng) -> Result<(), TestCaseError> {
    let legal = game.legal_moves();
    let listed: HashSet<Move> = legal.iter().copied().collect();
    prop_assert_eq!(listed.len(), legal.len(), "a move is listed twice");
    prop_assert_eq!(legal.is_empty(), game.phase() == Phase::Over);
    for &mv in &legal {
        prop_assert_eq!(game.check(mv), Ok(()), "{:?} is listed", mv);
    }
    if game.phase() == Phase::Act {
        // Every action open now agrees with playing it on whether the game ends.
        for &mv in &legal {
            let mut copy = game.clone();
            copy.play(mv).expect("a listed move");
            let ends = copy.phase() == Phase::Over;
            prop_assert_eq!(game.check_ends_game(mv), Ok(ends), "{:?}", mv);
        }
    }
    for _ in 0..3.min(legal.len()) {
        let mv = pick(rng, &legal);
        prop_assert!(game.clone().play(mv).is_ok(), "{:?} is listed", mv);
    }
    let mut refused = Vec::new();
    for mv in candidate_moves(game, rng) {
        let accepted = game.check(mv).is_ok();
        prop_assert_eq!(accepted, listed.contains(&mv), "{:?}", mv);
        prop_assert_eq!(game.check_ends_game(mv).is_ok(), accepted, "{:?}", mv);
        if !accepted {
            refused.push(mv);
        }
    }
    for _ in 0..3.min(refused.len()) {
        let mv = pick(rng, &refused);
        let mut copy = game.clone();
        prop_assert!(copy.play(mv).is_err(), "{:?} was refused by check", mv);
        prop_assert!(copy == *game, "refusing {:?} changed the game", mv);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(AGREEMENT_GAMES))]

    /// At every step of a random game, `legal_moves()` and `check`/`play` agree.
    #[test]
    fn legal_moves_and_play_agree_at_every_step(setup in any_setup(), move_seed in any::<u64>()) {
        let mut game = Game::new(setup).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(move_seed);
        loop {
            legal_moves_agree_with_play(&game, &mut rng)?;
            if game.phase() == Phase::Over {
                break;
            }
            let mv = pick(&mut rng, &game.legal_moves());
            prop_assert!(game.play(mv).is_ok());
        }
    }
}
