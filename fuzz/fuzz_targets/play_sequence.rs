//! Arbitrary bytes as a game: they choose the rules (now and then out of bounds), the
//! seat count and the seed, then at each step either a move from `legal_moves()` or any
//! move at all, legal or not. What must hold:
//!
//! * a setup starts a game exactly when its rules and seat count are within bounds;
//! * `play` accepts every move `legal_moves()` lists;
//! * any other move is refused and leaves the game equal to a copy taken before it, and
//!   a move that is accepted was listed.

#![no_main]

use carcassonne_core::{
    Expansion, FigureKind, Game, Move, Pos, Rotation, Rules, Setup, Spot, Stack,
};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

/// Spot labels to choose from: every label a tile has, and some no tile has.
const SPOTS: [&str; 16] = [
    "c1", "c2", "c3", "r1", "r2", "r3", "r4", "f1", "f2", "f3", "f4", "f5", "m", "g", "w1", "c9",
];

fuzz_target!(|data: &[u8]| {
    let mut input = Unstructured::new(data);
    // Running out of bytes ends the game where it stands; that is not a finding.
    let _ = play_game(&mut input);
});

fn play_game(input: &mut Unstructured) -> Result<()> {
    let setup = any_setup(input)?;
    let in_bounds =
        setup.rules.validate().is_ok() && (2..=setup.rules.max_players()).contains(&setup.players);
    let Ok(mut game) = Game::new(setup) else {
        assert!(!in_bounds, "a setup within bounds was refused");
        return Ok(());
    };
    assert!(in_bounds, "a setup out of bounds started a game");
    while !input.is_empty() {
        play_step(&mut game, input)?;
    }
    Ok(())
}

fn any_setup(input: &mut Unstructured) -> Result<Setup> {
    let mask: u8 = input.arbitrary()?;
    let expansions = Expansion::ALL
        .into_iter()
        .enumerate()
        .filter(|(bit, _)| mask & (1 << bit) != 0)
        .map(|(_, expansion)| expansion)
        .collect();
    let mut rules = Rules {
        expansions,
        farmers: input.arbitrary()?,
        farmer_city_points: input.int_in_range(1..=10)?,
        tile_limit: None,
    };
    if input.ratio(1, 4)? {
        rules.tile_limit = Some(input.int_in_range(1..=rules.max_tile_limit())?);
    }
    // Now and then a value out of bounds, which the setup must refuse.
    if input.ratio(1, 16)? {
        rules.farmer_city_points = input.arbitrary()?;
        rules.tile_limit = input.arbitrary()?;
    }
    Ok(Setup {
        rules,
        players: input.int_in_range(1..=7)?,
        stack: Stack::Seeded(input.arbitrary()?),
    })
}

/// One step: a listed legal move, which must be accepted, or any move, which must be
/// accepted exactly when it is listed and otherwise change nothing.
fn play_step(game: &mut Game, input: &mut Unstructured) -> Result<()> {
    let legal = game.legal_moves();
    if !legal.is_empty() && input.ratio(3, 4)? {
        let mv = *input.choose(&legal)?;
        if let Err(error) = game.play(mv) {
            panic!("the listed legal move {mv:?} was refused: {error}");
        }
        return Ok(());
    }
    let mv = any_move(game, input)?;
    let before = game.clone();
    match game.play(mv) {
        Ok(_) => assert!(legal.contains(&mv), "{mv:?} was accepted but not listed"),
        Err(error) => {
            assert!(!legal.contains(&mv), "listed {mv:?} refused: {error}");
            assert!(*game == before, "the refused {mv:?} changed the game");
        }
    }
    Ok(())
}

fn any_move(game: &Game, input: &mut Unstructured) -> Result<Move> {
    Ok(match input.int_in_range(0..=4)? {
        0 => Move::PlaceTile {
            pos: any_pos(game, input)?,
            rotation: *input.choose(&Rotation::ALL)?,
        },
        1 => Move::PlaceFigure {
            figure: *input.choose(&FigureKind::ALL)?,
            spot: any_spot(input)?,
        },
        2 => Move::Pass,
        3 => Move::RecallAbbot,
        _ => Move::FestivalReturn {
            pos: any_pos(game, input)?,
            spot: any_spot(input)?,
        },
    })
}

/// Mostly a cell on or next to the board, so that moves get past the first checks;
/// now and then any cell at all.
fn any_pos(game: &Game, input: &mut Unstructured) -> Result<Pos> {
    if input.ratio(1, 8)? {
        return Ok(Pos::new(input.arbitrary()?, input.arbitrary()?));
    }
    let near = input.choose(game.tiles())?.pos;
    let (dx, dy) = (input.int_in_range(-1..=1)?, input.int_in_range(-1..=1)?);
    Ok(Pos::new(
        near.x.saturating_add(dx),
        near.y.saturating_add(dy),
    ))
}

fn any_spot(input: &mut Unstructured) -> Result<Spot> {
    let label = input.choose(&SPOTS)?;
    Ok(label.parse().unwrap_or(Spot::MONASTERY))
}
