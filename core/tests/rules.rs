//! One test per rule of `docs/spec/rules.md`, each a small hand-made game.
//!
//! Every game starts from the start tile D at 0,0 (rotation 0: city north, road west to
//! east, field south) or the spring R01 with the River, and draws from a fixed stack, so
//! each test reads as a list of turns. The expected numbers were worked out by hand from
//! the rules, and each test's comments say how; none was copied from the engine's output.
//!
//! Edges of a rotated tile, for reading the layouts: a tile at rotation 90 shows its
//! printed west side to the north, its printed north side to the east, and so on.

use carcassonne_core::{
    Event, Expansion, FeatureScore, FigureKind, Game, Move, Phase, PlacedFigure, PlayError, Pos,
    Rotation, Rules, SegmentKind, Setup, SetupError, Side, Spot, Stack, Supply, TileId, TileSet,
    rules::RulesError,
};
use std::collections::{BTreeSet, HashSet};

fn tile(name: &str) -> TileId {
    TileId::from_name(name).unwrap_or_else(|| panic!("no tile {name}"))
}

fn spot(label: &str) -> Spot {
    label.parse().unwrap()
}

fn rotation(degrees: i64) -> Rotation {
    Rotation::from_degrees(degrees).unwrap()
}

/// A game of `players` seats that draws exactly `stack`, in order.
fn game_with(rules: Rules, players: u8, stack: &[&str]) -> Game {
    let stack = stack.iter().map(|name| tile(name)).collect();
    Game::new(Setup {
        rules,
        players,
        stack: Stack::Fixed(stack),
    })
    .unwrap()
}

fn base_game(stack: &[&str]) -> Game {
    game_with(Rules::default(), 2, stack)
}

fn with_expansions(expansions: &[Expansion]) -> Rules {
    Rules::with_expansions(expansions)
}

fn place_tile(x: i32, y: i32, degrees: i64) -> Move {
    Move::PlaceTile {
        pos: Pos::new(x, y),
        rotation: rotation(degrees),
    }
}

fn put(figure: FigureKind, label: &str) -> Move {
    Move::PlaceFigure {
        figure,
        spot: spot(label),
    }
}

fn follower(label: &str) -> Move {
    put(FigureKind::Follower, label)
}

fn festival_return(x: i32, y: i32, label: &str) -> Move {
    Move::FestivalReturn {
        pos: Pos::new(x, y),
        spot: spot(label),
    }
}

/// Plays a move that the test expects to be legal, naming it if it is not.
fn play(game: &mut Game, mv: Move) -> Vec<Event> {
    game.play(mv)
        .unwrap_or_else(|error| panic!("{mv:?} was refused: {error}"))
}

/// Plays one whole turn: the drawn tile at `x, y, degrees`, then `action`. Returns the
/// events of the action step, which include the scoring and the next draw.
fn turn(game: &mut Game, (x, y, degrees): (i32, i32, i64), action: Move) -> Vec<Event> {
    play(game, place_tile(x, y, degrees));
    play(game, action)
}

fn scored(events: &[Event]) -> Vec<&FeatureScore> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::FeatureScored(score) => Some(score),
            _ => None,
        })
        .collect()
}

/// Plays turns until the game is over, and returns the events of the last one.
fn play_turns(game: &mut Game, turns: &[((i32, i32, i64), Move)]) -> Vec<Event> {
    let mut events = Vec::new();
    for &(placement, action) in turns {
        events = turn(game, placement, action);
    }
    events
}

fn spots_for(game: &Game, figure: FigureKind) -> BTreeSet<String> {
    game.legal_moves()
        .into_iter()
        .filter_map(|mv| match mv {
            Move::PlaceFigure { figure: f, spot } if f == figure => Some(spot.to_string()),
            _ => None,
        })
        .collect()
}

fn positions(cells: &[(i32, i32)]) -> BTreeSet<Pos> {
    cells.iter().map(|&(x, y)| Pos::new(x, y)).collect()
}

// ---------------------------------------------------------------------------------------
// Cities, roads, monasteries and majorities: the rulebook examples.
// ---------------------------------------------------------------------------------------

#[test]
fn a_completed_three_tile_city_with_one_pennant_scores_eight() {
    // Rule: a completed city scores 2 per tile + 2 per pennant.
    // D's city opens north. F at 0,-1 rotation 90 is a city north-south with a pennant;
    // E at 0,-2 rotation 180 closes it from the north. 3 tiles + 1 pennant: 2*3 + 2*1 = 8.
    let mut game = base_game(&["F", "E"]);
    turn(&mut game, (0, -1, 90), follower("c1"));
    let events = turn(&mut game, (0, -2, 180), Move::Pass);
    let city = scored(&events)[0];
    assert_eq!(
        (city.kind, city.completed, city.points),
        (SegmentKind::City, true, 8)
    );
    assert_eq!(city.scorers, vec![0]);
    assert_eq!(city.tiles.len(), 3);
    assert_eq!(game.scores(), &[8, 0]);
}

#[test]
fn a_completed_two_tile_city_scores_four_and_the_figure_placed_on_it_comes_back_at_once() {
    // Rules: a two-tile city scores 2*2 = 4; a figure placed on a feature that the same
    // tile completes is scored and returned in that same turn.
    // E at 0,-1 rotation 180 shows its city south, closing D's city.
    let mut game = base_game(&["E", "U"]);
    let placed = play(&mut game, place_tile(0, -1, 180));
    assert_eq!(
        placed,
        vec![Event::TilePlaced {
            player: 0,
            tile: tile("E"),
            pos: Pos::new(0, -1),
            rotation: Rotation::R180,
        }]
    );
    let events = play(&mut game, follower("c1"));
    let knight = PlacedFigure {
        player: 0,
        figure: FigureKind::Follower,
        pos: Pos::new(0, -1),
        spot: spot("c1"),
    };
    assert_eq!(events[0], Event::FigurePlaced { figure: knight });
    let city = scored(&events)[0];
    assert_eq!(
        (city.kind, city.completed, city.points),
        (SegmentKind::City, true, 4)
    );
    assert_eq!(city.scorers, vec![0]);
    assert_eq!(city.figures, vec![knight]);
    assert_eq!(
        city.tiles.iter().copied().collect::<BTreeSet<_>>(),
        positions(&[(0, 0), (0, -1)])
    );
    assert_eq!(
        events.last(),
        Some(&Event::TileDrawn {
            player: 1,
            tile: tile("U")
        })
    );
    assert_eq!(game.scores(), &[4, 0]);
    assert_eq!(
        game.supply(0).follower,
        7,
        "the knight is back in the supply"
    );
    assert!(game.figures().is_empty());
}

#[test]
fn an_incomplete_monastery_with_five_neighbours_scores_six_at_the_end() {
    // Rule: an incomplete monastery scores 1 + each surrounding tile at the end.
    // B at 0,1 gets a monk. Around it: D at 0,0, roads U at 1,0 and -1,0, and E tiles at
    // -1,1 (rotation 270, city west) and 1,1 (rotation 90, city east), all showing fields
    // to the monastery. Five neighbours: 1 + 5 = 6.
    let mut game = base_game(&["B", "U", "U", "E", "E"]);
    let events = play_turns(
        &mut game,
        &[
            ((0, 1, 0), follower("m")),
            ((1, 0, 0), Move::Pass),
            ((-1, 0, 0), Move::Pass),
            ((-1, 1, 270), Move::Pass),
            ((1, 1, 90), Move::Pass),
        ],
    );
    assert_eq!(game.phase(), Phase::Over);
    let monastery = scored(&events)[0];
    assert_eq!(
        (monastery.kind, monastery.completed, monastery.points),
        (SegmentKind::Monastery, false, 6)
    );
    assert_eq!(monastery.scorers, vec![0]);
    assert_eq!(
        events.last(),
        Some(&Event::GameOver {
            final_scores: vec![6, 0],
            winners: vec![0],
        })
    );
}

#[test]
fn scores_if_ended_now_values_the_unfinished_monastery_as_it_stands_and_changes_nothing() {
    // The layout of the test above, one turn short: four neighbours, 1 + 4 = 5 if the game
    // ended now, while the real scores stay 0 and the game goes on.
    let mut game = base_game(&["B", "U", "U", "E", "E"]);
    play_turns(
        &mut game,
        &[
            ((0, 1, 0), follower("m")),
            ((1, 0, 0), Move::Pass),
            ((-1, 0, 0), Move::Pass),
            ((-1, 1, 270), Move::Pass),
        ],
    );
    let before = game.clone();
    assert_eq!(game.scores_if_ended_now(), vec![5, 0]);
    assert_eq!(game, before);
    assert_eq!(game.scores(), &[0, 0]);
    play_turns(&mut game, &[((1, 1, 90), Move::Pass)]);
    assert_eq!(game.phase(), Phase::Over);
    assert_eq!(game.scores_if_ended_now(), vec![6, 0]);
}

#[test]
fn a_surrounded_monastery_scores_nine_at_once_and_the_monk_returns() {
    // Rule: a monastery with all eight surrounding squares filled scores 9 during the game.
    // The five-neighbour layout of the test above (B at 0,1 with a monk; D; U at 1,0 and
    // -1,0; E at -1,1 and 1,1 showing fields to it), then three more B tiles, all fields,
    // at -1,2, 0,2 and 1,2. The eighth neighbour completes the monastery.
    let mut game = base_game(&["B", "U", "U", "E", "E", "B", "B", "B"]);
    let last = play_turns(
        &mut game,
        &[
            ((0, 1, 0), follower("m")),
            ((1, 0, 0), Move::Pass),
            ((-1, 0, 0), Move::Pass),
            ((-1, 1, 270), Move::Pass),
            ((1, 1, 90), Move::Pass),
            ((-1, 2, 0), Move::Pass),
            ((0, 2, 0), Move::Pass),
            ((1, 2, 0), Move::Pass),
        ],
    );
    let monastery = scored(&last)[0];
    assert_eq!(
        (monastery.kind, monastery.completed, monastery.points),
        (SegmentKind::Monastery, true, 9)
    );
    assert_eq!(monastery.tiles.len(), 9);
    assert_eq!(game.scores(), &[9, 0]);
    assert_eq!(game.supply(0).follower, 7);
}

#[test]
fn tied_knights_both_score_the_full_city() {
    // Rules: players tied for the most followers all score in full; two players can share
    // a feature by claiming separate pieces that are joined later.
    // Seat 0: N at 0,-1 rotation 180 (city south and east, joined to D) with a knight.
    // Seat 1: K at 1,0 (road west continuing D's road, city north) with a knight on its
    // own one-tile city. Seat 0: N at 1,-1 rotation 270 (city west and south) joins both
    // pieces and closes the city: D, N, N, K = 4 tiles, no pennant: 8 each.
    let mut game = base_game(&["N", "K", "N"]);
    turn(&mut game, (0, -1, 180), follower("c1"));
    turn(&mut game, (1, 0, 0), follower("c1"));
    let events = turn(&mut game, (1, -1, 270), Move::Pass);
    let city = scored(&events)[0];
    assert_eq!((city.kind, city.points), (SegmentKind::City, 8));
    assert_eq!(city.scorers, vec![0, 1]);
    assert_eq!(city.tiles.len(), 4);
    assert_eq!(game.scores(), &[8, 8]);
}

#[test]
fn a_big_meeple_outweighs_a_single_follower_in_a_city() {
    // Rule: the big meeple counts as two followers in a majority; others score nothing.
    // The tied-knights layout, but seat 1's knight is the big meeple: 2 against 1, so
    // only seat 1 scores the 8 points.
    let mut game = game_with(
        with_expansions(&[Expansion::InnsAndCathedrals]),
        2,
        &["N", "K", "N"],
    );
    turn(&mut game, (0, -1, 180), follower("c1"));
    turn(&mut game, (1, 0, 0), put(FigureKind::Big, "c1"));
    let events = turn(&mut game, (1, -1, 270), Move::Pass);
    assert_eq!(scored(&events)[0].scorers, vec![1]);
    assert_eq!(game.scores(), &[0, 8]);
    assert_eq!(
        game.supply(1).big,
        1,
        "the big meeple returns like any figure"
    );
}

/// The farm of the rulebook example: a farmer on H (two cities, a field between them)
/// whose field also reaches D's south field and an E tile with an open city.
///
/// * Seat 0: H at 0,1 rotation 90 (cities east and west, field north and south), farmer.
/// * Seat 1: E at 1,1 rotation 270 closes H's east city (2 tiles).
/// * Seat 0: E at -1,1 rotation 90 closes H's west city (2 tiles).
/// * Seat 1: E at 0,2 rotation 180: its field joins the farm, its city stays open;
///   seat 1 puts a knight on that open city.
fn farm_example(rules: Rules, farmer: Move) -> Game {
    let mut game = game_with(rules, 2, &["H", "E", "E", "E"]);
    play_turns(
        &mut game,
        &[
            ((0, 1, 90), farmer),
            ((1, 1, 270), Move::Pass),
            ((-1, 1, 90), Move::Pass),
            ((0, 2, 180), follower("c1")),
        ],
    );
    game
}

#[test]
fn a_farm_bordering_two_completed_cities_and_an_open_one_scores_six() {
    // Rule: a field scores 3 per completed city it borders; unfinished cities pay nothing.
    // Two completed cities: 2 * 3 = 6 for the farmer. Seat 1's open one-tile city scores
    // 1 per tile at the end: 1. The completed cities had no knights, so nobody scored
    // them during the game.
    let game = farm_example(Rules::default(), follower("f1"));
    assert_eq!(game.phase(), Phase::Over);
    assert_eq!(game.scores(), &[6, 1]);
}

#[test]
fn the_first_edition_farmer_value_pays_four_per_city() {
    // House rule `farmer_city_points: 4`: the same farm pays 2 * 4 = 8.
    let rules = Rules {
        farmer_city_points: 4,
        ..Rules::default()
    };
    let game = farm_example(rules, follower("f1"));
    assert_eq!(game.scores(), &[8, 1]);
}

#[test]
fn without_farmers_no_figure_may_lie_in_a_field_and_fields_never_score() {
    // House rule `farmers: false`: no farmers are placed and fields never score.
    let rules = Rules {
        farmers: false,
        ..Rules::default()
    };
    let mut game = game_with(rules.clone(), 2, &["H", "E", "E", "E"]);
    play(&mut game, place_tile(0, 1, 90));
    assert_eq!(
        game.check(follower("f1")),
        Err(PlayError::SpotNotAllowed {
            figure: FigureKind::Follower,
            spot: spot("f1"),
        })
    );
    let spots = spots_for(&game, FigureKind::Follower);
    assert_eq!(spots, ["c1", "c2"].map(String::from).into());
    let game = farm_example(rules, Move::Pass);
    assert_eq!(game.scores(), &[0, 1]);
}

#[test]
fn a_big_meeple_counts_as_two_farmers() {
    // Rule: the big meeple counts as two followers, also as a farmer.
    // Seat 0: B at 0,1 with a farmer in its field, which joins D's south field.
    // Seat 1: U at -1,0, a big meeple in its north field, which joins D's north strip.
    // Seat 0: A at 1,0 rotation 90 ends D's road at its monastery; its one field touches
    // both of D's fields and joins the two farms. Seat 1: E at 0,-1 rotation 180 closes
    // D's city, which the north strip borders. One completed city: 3 points, and the big
    // meeple (2) beats the follower (1).
    let rules = with_expansions(&[Expansion::InnsAndCathedrals]);
    let farms = |seat_one: FigureKind| {
        let mut game = game_with(rules.clone(), 2, &["B", "U", "A", "E"]);
        play_turns(
            &mut game,
            &[
                ((0, 1, 0), follower("f1")),
                ((-1, 0, 0), put(seat_one, "f1")),
                ((1, 0, 90), Move::Pass),
                ((0, -1, 180), Move::Pass),
            ],
        );
        game.scores().to_vec()
    };
    assert_eq!(farms(FigureKind::Big), vec![0, 3]);
    // The same farm with an ordinary follower for seat 1 is a tie: both score 3.
    assert_eq!(farms(FigureKind::Follower), vec![3, 3]);
}

#[test]
fn a_big_meeple_may_go_wherever_a_follower_may() {
    // Rule: the big meeple may be placed wherever a follower may: road, city, monastery,
    // field.
    let mut game = game_with(
        with_expansions(&[Expansion::InnsAndCathedrals]),
        2,
        &["A", "L"],
    );
    // A at 1,0 rotation 90: monastery, a road ending there from D, one field.
    play(&mut game, place_tile(1, 0, 90));
    let expected: BTreeSet<String> = ["f1", "m", "r1"].map(String::from).into();
    assert_eq!(spots_for(&game, FigureKind::Follower), expected);
    assert_eq!(spots_for(&game, FigureKind::Big), expected);
    play(&mut game, put(FigureKind::Big, "m"));
    // L at -1,0: city north, three roads, three fields, none of them claimed.
    play(&mut game, place_tile(-1, 0, 0));
    let all_seven: BTreeSet<String> = ["c1", "f1", "f2", "f3", "r1", "r2", "r3"]
        .map(String::from)
        .into();
    assert_eq!(spots_for(&game, FigureKind::Follower), all_seven);
    assert_eq!(spots_for(&game, FigureKind::Big), all_seven);
}

#[test]
fn a_feature_is_counted_once_per_tile_even_when_it_enters_a_tile_twice() {
    // Rule: count tiles, not segments.
    // A ring of city around a corner south of D: N at 0,1 rotation 180 (city south, east),
    // N at 1,1 rotation 270 (west, south), N at 0,2 rotation 90 (north, east), and I at
    // 1,2, whose two separate city segments (north and west) both join the ring. Four
    // tiles (not five segments): 2 * 4 = 8.
    let mut game = base_game(&["N", "N", "N", "I"]);
    let events = play_turns(
        &mut game,
        &[
            ((0, 1, 180), follower("c1")),
            ((1, 1, 270), Move::Pass),
            ((0, 2, 90), Move::Pass),
            ((1, 2, 0), Move::Pass),
        ],
    );
    let city = scored(&events)[0];
    assert_eq!(
        (city.kind, city.completed, city.points),
        (SegmentKind::City, true, 8)
    );
    assert_eq!(
        city.tiles.iter().copied().collect::<BTreeSet<_>>(),
        positions(&[(0, 1), (1, 1), (0, 2), (1, 2)])
    );
    assert_eq!(game.scores(), &[8, 0]);
}

// ---------------------------------------------------------------------------------------
// Placing tiles and figures.
// ---------------------------------------------------------------------------------------

#[test]
fn a_tile_must_share_a_full_edge_and_match_every_shared_edge() {
    // Rule: a tile shares at least one full edge with a placed tile (a corner is not
    // enough) and every shared edge matches.
    let mut game = base_game(&["E", "U", "E"]);
    // 1,1 only touches D at a corner.
    assert_eq!(
        game.check(place_tile(1, 1, 0)),
        Err(PlayError::NotAdjacent {
            pos: Pos::new(1, 1)
        })
    );
    assert_eq!(
        game.check(place_tile(0, 0, 0)),
        Err(PlayError::CellOccupied { pos: Pos::ORIGIN })
    );
    turn(&mut game, (0, -1, 180), Move::Pass);
    turn(&mut game, (1, 0, 0), Move::Pass);
    // 1,-1 has two neighbours, both showing fields: E (rotated 180) to the west and U to
    // the south. E at 270 matches the south but puts its city against the west field; at
    // 180 it matches the west but puts its city against the south field.
    let mismatch = |degrees, side| {
        Err(PlayError::EdgeMismatch {
            pos: Pos::new(1, -1),
            rotation: rotation(degrees),
            side,
        })
    };
    assert_eq!(
        game.check(place_tile(1, -1, 270)),
        mismatch(270, Side::West)
    );
    assert_eq!(
        game.check(place_tile(1, -1, 180)),
        mismatch(180, Side::South)
    );
    let here: Vec<Rotation> = game
        .legal_placements()
        .into_iter()
        .filter(|&(pos, _)| pos == Pos::new(1, -1))
        .map(|(_, rotation)| rotation)
        .collect();
    assert_eq!(here, vec![Rotation::R0, Rotation::R90]);
}

#[test]
fn a_figure_goes_only_on_the_tile_just_placed_and_only_on_an_unclaimed_feature() {
    // Rules: a figure goes on the tile just placed, never an older one, and not on a
    // feature that already holds a figure anywhere along it, not even one's own.
    let mut game = base_game(&["U", "U", "U"]);
    let events = turn(&mut game, (1, 0, 0), follower("r1"));
    let Event::FigurePlaced { figure } = events[0] else {
        panic!("expected a figure first, got {events:?}");
    };
    assert_eq!(figure.pos, Pos::new(1, 0), "on the tile just placed");
    // Seat 1 extends the same road: its thief would join seat 0's.
    play(&mut game, place_tile(2, 0, 0));
    let occupied = Err(PlayError::FeatureOccupied { spot: spot("r1") });
    assert_eq!(game.check(follower("r1")), occupied);
    assert!(!game.legal_moves().contains(&follower("r1")));
    // The field north of the road is still free. D's city is on an older tile: U has no
    // spot c1, so it cannot be named.
    assert_eq!(game.check(follower("f1")), Ok(()));
    assert_eq!(
        game.check(follower("c1")),
        Err(PlayError::UnknownSpot {
            tile: tile("U"),
            spot: spot("c1"),
        })
    );
    play(&mut game, Move::Pass);
    // Seat 0 extends the road at the other end, three tiles from its own thief.
    play(&mut game, place_tile(-1, 0, 0));
    assert_eq!(game.check(follower("r1")), occupied);
}

#[test]
fn an_unplaceable_tile_is_discarded_and_the_same_player_draws_again() {
    // Rule: a drawn tile with no legal placement anywhere leaves the game and the same
    // player draws the next one.
    // After E closes D's city, every open cell demands a road or a field on some side,
    // so C (all city) fits nowhere.
    let mut game = base_game(&["E", "C", "U"]);
    let events = turn(&mut game, (0, -1, 180), Move::Pass);
    let draws: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::TileDiscarded { .. } | Event::TileDrawn { .. }))
        .collect();
    assert_eq!(
        draws,
        [
            &Event::TileDiscarded {
                player: 1,
                tile: tile("C")
            },
            &Event::TileDrawn {
                player: 1,
                tile: tile("U")
            },
        ]
    );
    assert_eq!(game.discarded(), &[tile("C")]);
    assert_eq!(game.current_player(), Some(1));
    assert_eq!(game.current_tile(), Some(tile("U")));
    assert_eq!(game.tiles_placed(), 1);
}

#[test]
fn the_game_ends_when_the_stack_is_empty() {
    // Rule: the game ends after the turn in which the last tile is placed.
    let mut game = base_game(&["U"]);
    let events = turn(&mut game, (1, 0, 0), Move::Pass);
    assert_eq!(game.phase(), Phase::Over);
    assert_eq!(game.current_player(), None);
    assert!(game.legal_moves().is_empty());
    assert_eq!(game.check(Move::Pass), Err(PlayError::GameOver));
    assert_eq!(
        events.last(),
        Some(&Event::GameOver {
            final_scores: vec![0, 0],
            winners: vec![0, 1],
        })
    );
}

#[test]
fn a_move_is_known_to_end_the_game_before_it_is_played() {
    // A server writes the last move with the match's result, so `check_ends_game` says
    // whether a move ends the game without playing it, also when tiles are left that
    // fit nowhere (R03 has no river to continue without the River expansion).
    let mut game = base_game(&["U", "R03"]);
    assert_eq!(game.check_ends_game(place_tile(1, 0, 0)), Ok(false));
    play(&mut game, place_tile(1, 0, 0));
    assert_eq!(game.tiles_left(), 1);
    assert_eq!(game.check_ends_game(Move::Pass), Ok(true));
    assert_eq!(
        game.check_ends_game(place_tile(2, 0, 0)),
        Err(PlayError::TileAlreadyPlaced)
    );
    play(&mut game, Move::Pass);
    assert_eq!(game.phase(), Phase::Over);
    assert_eq!(game.check_ends_game(Move::Pass), Err(PlayError::GameOver));

    // A tile that fits after the unplaceable one keeps the game going.
    let mut game = base_game(&["U", "R03", "V"]);
    play(&mut game, place_tile(1, 0, 0));
    assert_eq!(game.check_ends_game(Move::Pass), Ok(false));

    // The tile limit ends the game with fitting tiles left.
    let rules = Rules {
        tile_limit: Some(1),
        ..Rules::default()
    };
    let mut game = game_with(rules, 2, &["U", "V"]);
    play(&mut game, place_tile(1, 0, 0));
    assert_eq!(game.check_ends_game(Move::Pass), Ok(true));
}

#[test]
fn the_game_ends_after_tile_limit_tiles() {
    // House rule `tile_limit: N`: the game ends after N placed tiles (the start tile not
    // counted), even with tiles left in the stack.
    let rules = Rules {
        tile_limit: Some(2),
        ..Rules::default()
    };
    let mut game = game_with(rules, 2, &["U", "U", "U"]);
    turn(&mut game, (1, 0, 0), Move::Pass);
    assert_eq!(game.phase(), Phase::PlaceTile);
    turn(&mut game, (2, 0, 0), Move::Pass);
    assert_eq!(game.phase(), Phase::Over);
    assert_eq!(game.tiles_placed(), 2);
    assert_eq!(game.tiles_left(), 1);
}

#[test]
fn a_tile_limit_of_zero_or_beyond_the_stack_is_refused() {
    // Bounds: a game of no tiles is a typo, and a limit above the whole stack (71 base
    // tiles) could never be reached. Both are refused before anything is set up.
    for (limit, max) in [(0, 71), (72, 71)] {
        let setup = Setup {
            rules: Rules {
                tile_limit: Some(limit),
                ..Rules::default()
            },
            players: 2,
            stack: Stack::Seeded(1),
        };
        let error = Game::new(setup).unwrap_err();
        assert_eq!(
            error,
            SetupError::Rules(RulesError::TileLimit { limit, max })
        );
        assert_eq!(error.code(), "tile_limit_out_of_range");
    }
}

#[test]
fn a_farm_value_out_of_bounds_is_refused_at_setup() {
    let setup = Setup {
        rules: Rules {
            farmer_city_points: 0,
            ..Rules::default()
        },
        players: 2,
        stack: Stack::Seeded(1),
    };
    assert_eq!(
        Game::start(setup),
        Err(SetupError::Rules(RulesError::FarmerCityPoints(0)))
    );
}

/// A two-seat base game that draws exactly `stack`.
fn base_setup(stack: &[&str]) -> Setup {
    Setup {
        rules: Rules::default(),
        players: 2,
        stack: Stack::Fixed(stack.iter().map(|name| tile(name)).collect()),
    }
}

/// Starts a two-seat base game on a fixed stack and returns its opening events.
fn start_base_game(stack: &[&str]) -> (Game, Vec<Event>) {
    Game::start(base_setup(stack)).unwrap()
}

#[test]
fn the_opening_draw_reports_the_tile_drawn() {
    let (game, events) = start_base_game(&["U", "V"]);
    assert_eq!(
        events,
        [Event::TileDrawn {
            player: 0,
            tile: tile("U")
        }]
    );
    // `Game::new` is the same start without the events.
    assert_eq!(game, Game::new(base_setup(&["U", "V"])).unwrap());
}

#[test]
fn a_game_with_an_empty_stack_reports_game_over_at_its_start() {
    // Rule: the game ends when the stack is empty; here it is empty before the first
    // turn, and the start reports the end rather than dropping it.
    let (game, events) = start_base_game(&[]);
    assert_eq!(game.phase(), Phase::Over);
    assert_eq!(
        events,
        [Event::GameOver {
            final_scores: vec![0, 0],
            winners: vec![0, 1],
        }]
    );
}

#[test]
fn a_game_whose_only_tile_fits_nowhere_reports_the_discard_then_game_over() {
    // Without the River expansion a river tile has no open river to continue, so it
    // fits nowhere: it is discarded at the first draw and the stack is then empty.
    let (game, events) = start_base_game(&["R03"]);
    assert_eq!(game.phase(), Phase::Over);
    assert_eq!(game.discarded(), &[tile("R03")]);
    assert_eq!(
        events,
        [
            Event::TileDiscarded {
                player: 0,
                tile: tile("R03")
            },
            Event::GameOver {
                final_scores: vec![0, 0],
                winners: vec![0, 1],
            }
        ]
    );
}

#[test]
fn each_player_has_seven_followers_and_cannot_place_an_eighth() {
    // Setup: 7 followers each (plus a big meeple with Inns & Cathedrals and an abbot with
    // the Abbot); with none left in the supply no follower can be placed.
    let everything = with_expansions(&[Expansion::InnsAndCathedrals, Expansion::Abbot]);
    let full = game_with(everything, 2, &["B"]);
    let expected = Supply {
        follower: 7,
        big: 1,
        abbot: 1,
    };
    assert_eq!(full.supply(1), expected);
    // A row of monasteries south of D: seat 0 goes east putting a monk on each, seat 1
    // goes west and passes. Monasteries in a row never complete.
    let mut game = base_game(&["B"; 16]);
    for step in 0..7 {
        turn(&mut game, (step, 1, 0), follower("m"));
        assert_eq!(game.supply(0).follower, 6 - step as u8);
        turn(&mut game, (-1 - step, 1, 0), Move::Pass);
    }
    play(&mut game, place_tile(7, 1, 0));
    assert_eq!(
        game.check(follower("m")),
        Err(PlayError::NoFigureInSupply {
            figure: FigureKind::Follower
        })
    );
    assert_eq!(game.legal_moves(), vec![Move::Pass]);
}

// ---------------------------------------------------------------------------------------
// Inns & Cathedrals.
// ---------------------------------------------------------------------------------------

#[test]
fn a_completed_road_with_an_inn_scores_two_per_tile() {
    // Rule: a completed road with an inn scores 2 per tile.
    // IC16 at 1,0 (road west-south with an inn) continues D's road; A at -1,0 rotation
    // 270 ends it at a monastery in the west and A at 1,1 rotation 180 in the south.
    // 4 tiles: 2 * 4 = 8.
    let mut game = game_with(
        with_expansions(&[Expansion::InnsAndCathedrals]),
        2,
        &["IC16", "A", "A"],
    );
    let events = play_turns(
        &mut game,
        &[
            ((1, 0, 0), follower("r1")),
            ((-1, 0, 270), Move::Pass),
            ((1, 1, 180), Move::Pass),
        ],
    );
    let road = scored(&events)[0];
    assert_eq!(
        (road.kind, road.completed, road.points),
        (SegmentKind::Road, true, 8)
    );
    // The score says why it is doubled, so a table of points can show inns apart.
    assert!(road.inn && !road.cathedral);
    assert_eq!(game.scores(), &[8, 0]);
}

#[test]
fn an_unfinished_road_with_an_inn_scores_nothing_at_the_end() {
    // Rule: an incomplete road with an inn scores 0; a plain incomplete road 1 per tile.
    // Seat 0: IC16 at 1,0 with a thief (D + IC16, open at both ends). Seat 1: V at 0,1,
    // its own one-tile road, with a thief: 1.
    let mut game = game_with(
        with_expansions(&[Expansion::InnsAndCathedrals]),
        2,
        &["IC16", "V"],
    );
    let events = play_turns(
        &mut game,
        &[((1, 0, 0), follower("r1")), ((0, 1, 0), follower("r1"))],
    );
    let roads: BTreeSet<(SegmentKind, bool, u32, Vec<u8>, bool)> = scored(&events)
        .iter()
        .map(|score| {
            (
                score.kind,
                score.completed,
                score.points,
                score.scorers.clone(),
                score.inn,
            )
        })
        .collect();
    let expected = [
        (SegmentKind::Road, false, 0, vec![0], true),
        (SegmentKind::Road, false, 1, vec![1], false),
    ];
    assert_eq!(roads, expected.into());
    assert_eq!(game.scores(), &[0, 1]);
}

#[test]
fn a_completed_city_with_a_cathedral_scores_three_per_tile_and_pennant() {
    // Rule: a completed city with a cathedral scores 3 per tile + 3 per pennant.
    // IC01 (all city, cathedral) at 0,-1 joins D's city. E at 1,-1 (rotation 270) and
    // at -1,-1 (rotation 90) close its east and west sides; F at 0,-2 (rotation 90, a
    // pennant) and E at 0,-3 (rotation 180) close the north. 6 tiles + 1 pennant:
    // 3 * 7 = 21.
    let mut game = game_with(
        with_expansions(&[Expansion::InnsAndCathedrals]),
        2,
        &["IC01", "E", "E", "F", "E"],
    );
    let events = play_turns(
        &mut game,
        &[
            ((0, -1, 0), follower("c1")),
            ((1, -1, 270), Move::Pass),
            ((-1, -1, 90), Move::Pass),
            ((0, -2, 90), Move::Pass),
            ((0, -3, 180), Move::Pass),
        ],
    );
    let city = scored(&events)[0];
    assert_eq!(
        (city.kind, city.completed, city.points),
        (SegmentKind::City, true, 21)
    );
    assert_eq!(city.tiles.len(), 6);
    assert!(city.cathedral && !city.inn);
    assert_eq!(game.scores(), &[21, 0]);
}

#[test]
fn an_unfinished_city_with_a_cathedral_scores_nothing_at_the_end() {
    // Rule: an incomplete city with a cathedral scores 0; a plain one 1 per tile.
    // Seat 0: IC01 at 0,-1 with a knight (D + IC01, open). Seat 1: K at 1,0 with a knight
    // on its own one-tile city: 1.
    let mut game = game_with(
        with_expansions(&[Expansion::InnsAndCathedrals]),
        2,
        &["IC01", "K"],
    );
    play_turns(
        &mut game,
        &[((0, -1, 0), follower("c1")), ((1, 0, 0), follower("c1"))],
    );
    assert_eq!(game.scores(), &[0, 1]);
}

// ---------------------------------------------------------------------------------------
// The River.
// ---------------------------------------------------------------------------------------

fn river_rules() -> Rules {
    with_expansions(&[Expansion::River])
}

#[test]
fn a_river_tile_must_continue_the_open_end_of_the_river() {
    // Rule: a river tile's river edge joins the open end of the river. The spring R01 at
    // 0,0 opens east, so the straight R07 goes at 1,0, running west-east (0 or 180).
    let mut game = game_with(river_rules(), 2, &["R07", "U"]);
    assert_eq!(game.tiles()[0].tile, tile("R01"));
    assert_eq!(
        game.legal_placements(),
        vec![
            (Pos::new(1, 0), Rotation::R0),
            (Pos::new(1, 0), Rotation::R180)
        ]
    );
    // South of the spring the edges match (fields), but the river would not continue.
    assert_eq!(
        game.check(place_tile(0, 1, 0)),
        Err(PlayError::RiverNotContinued {
            cell: Pos::new(1, 0),
            side: Side::East,
        })
    );
    // Once placed, the straight moves the open end one cell further east.
    turn(&mut game, (1, 0, 0), Move::Pass);
    assert_eq!(game.river_next_cell(), Some(Pos::new(2, 0)));
}

#[test]
fn a_river_bend_may_not_turn_the_same_way_as_the_bend_before_it() {
    // Choice (no U-turn): R10 at 1,0 turns the river right (east to south). At 1,1 the
    // bend R10g may turn left (rotation 180, on to the east) but not right again
    // (rotation 90, back west), although the edges there would match.
    let mut game = game_with(river_rules(), 2, &["R10", "R10g"]);
    turn(&mut game, (1, 0, 0), Move::Pass);
    assert_eq!(game.river_next_cell(), Some(Pos::new(1, 1)));
    assert_eq!(game.check(place_tile(1, 1, 90)), Err(PlayError::RiverUTurn));
    assert_eq!(
        game.legal_placements(),
        vec![(Pos::new(1, 1), Rotation::R180)]
    );
}

#[test]
fn the_lake_closes_the_river() {
    // Rule: the lake ends the river; a river tile drawn after it fits nowhere and is
    // discarded (the same player draws again).
    let mut game = game_with(river_rules(), 2, &["R07", "R02", "R07", "U"]);
    turn(&mut game, (1, 0, 0), Move::Pass);
    turn(&mut game, (2, 0, 0), Move::Pass);
    assert_eq!(game.river_next_cell(), None);
    assert_eq!(game.discarded(), &[tile("R07")]);
    assert_eq!(game.current_player(), Some(0));
    assert_eq!(game.current_tile(), Some(tile("U")));
}

#[test]
fn a_seeded_river_game_draws_the_river_first_and_the_lake_last_of_it() {
    // Rule: with the River, the spring is the start tile, the other river tiles are drawn
    // first (shuffled) with the lake last among them, then the land tiles, of which the
    // base D start tile is not one (three D remain of four).
    for seed in 0..20 {
        let mut game = Game::new(Setup {
            rules: river_rules(),
            players: 3,
            stack: Stack::Seeded(seed),
        })
        .unwrap();
        let mut drawn: Vec<TileId> = game.discarded().to_vec();
        drawn.extend(game.current_tile());
        while game.phase() != Phase::Over {
            let mv = game.legal_moves()[0];
            for event in play(&mut game, mv) {
                if let Event::TileDrawn { tile, .. } | Event::TileDiscarded { tile, .. } = event {
                    drawn.push(tile);
                }
            }
        }
        let names: Vec<&str> = drawn.iter().map(|t| t.name()).collect();
        assert_eq!(drawn.len(), 10 + 1 + 71, "seed {seed}: {names:?}");
        let mut river: Vec<&str> = names[..10].to_vec();
        river.sort_unstable();
        let expected = [
            "R03", "R04", "R05", "R06", "R07", "R07", "R08", "R09", "R10", "R10g",
        ];
        assert_eq!(river, expected, "seed {seed}");
        assert_eq!(names[10], "R02", "seed {seed}: the lake is last");
        assert!(drawn[11..].iter().all(|t| t.def().set != TileSet::River));
        assert_eq!(names[11..].iter().filter(|&&n| n == "D").count(), 3);
    }
}

// ---------------------------------------------------------------------------------------
// The Abbot and gardens.
// ---------------------------------------------------------------------------------------

fn abbot_rules() -> Rules {
    with_expansions(&[Expansion::Abbot])
}

#[test]
fn the_abbot_goes_only_on_monasteries_and_gardens_and_followers_never_on_gardens() {
    // Rules: the abbot only on a monastery or garden; followers never on gardens.
    let mut game = game_with(abbot_rules(), 2, &["Ug", "B"]);
    // Ug at 1,0: a road continuing D's, fields north and south, a garden.
    play(&mut game, place_tile(1, 0, 0));
    let abbot_spots: BTreeSet<String> = ["g".to_string()].into();
    assert_eq!(spots_for(&game, FigureKind::Abbot), abbot_spots);
    let follower_spots: BTreeSet<String> = ["f1", "f2", "r1"].map(String::from).into();
    assert_eq!(spots_for(&game, FigureKind::Follower), follower_spots);
    assert_eq!(
        game.check(follower("g")),
        Err(PlayError::SpotNotAllowed {
            figure: FigureKind::Follower,
            spot: Spot::GARDEN,
        })
    );
    assert_eq!(
        game.check(put(FigureKind::Abbot, "r1")),
        Err(PlayError::SpotNotAllowed {
            figure: FigureKind::Abbot,
            spot: spot("r1"),
        })
    );
    play(&mut game, Move::Pass);
    // B at 0,1: a monastery takes either an abbot or a monk.
    play(&mut game, place_tile(0, 1, 0));
    assert!(spots_for(&game, FigureKind::Abbot).contains("m"));
    assert!(spots_for(&game, FigureKind::Follower).contains("m"));
}

#[test]
fn without_the_abbot_expansion_gardens_take_no_figure() {
    // Rule: the Abbot expansion makes gardens live; without it nobody has an abbot.
    let mut game = base_game(&["Ug"]);
    play(&mut game, place_tile(1, 0, 0));
    assert_eq!(game.supply(0).abbot, 0);
    assert!(!spots_for(&game, FigureKind::Follower).contains("g"));
    assert!(spots_for(&game, FigureKind::Abbot).is_empty());
}

/// Ug at 0,1 (road west-east, fields north and south); U tiles at 1,0, -1,0, -1,1 and
/// 1,1 continue the two rows of road; B tiles at -1,2, 0,2 and 1,2 fill the row below.
const GARDEN_SURROUNDED: [&str; 8] = ["Ug", "U", "U", "U", "U", "B", "B", "B"];

/// Plays [`GARDEN_SURROUNDED`], taking `first_action` after the garden tile; returns the
/// events of the last turn, in which the eighth neighbour surrounds the garden.
fn surround_the_garden(game: &mut Game, first_action: Move) -> Vec<Event> {
    let cells = [
        (0, 1),
        (1, 0),
        (-1, 0),
        (-1, 1),
        (1, 1),
        (-1, 2),
        (0, 2),
        (1, 2),
    ];
    let turns: Vec<_> = cells
        .iter()
        .enumerate()
        .map(|(index, &(x, y))| {
            (
                (x, y, 0),
                if index == 0 { first_action } else { Move::Pass },
            )
        })
        .collect();
    play_turns(game, &turns)
}

#[test]
fn a_surrounded_garden_scores_nine_at_once_and_the_abbot_returns() {
    // Rule: a garden scores like a monastery: 9 when surrounded, at once.
    // Ug at 0,1 (road west-east, fields north and south) with the abbot; U tiles at 1,0,
    // -1,0, -1,1 and 1,1 continue the two rows of road; B tiles at -1,2, 0,2 and 1,2
    // fill the row below. The eighth neighbour scores it.
    let mut game = game_with(abbot_rules(), 2, &GARDEN_SURROUNDED);
    let events = surround_the_garden(&mut game, put(FigureKind::Abbot, "g"));
    let garden = scored(&events)[0];
    assert_eq!(
        (garden.kind, garden.completed, garden.points),
        (SegmentKind::Garden, true, 9)
    );
    assert_eq!(game.scores(), &[9, 0]);
    assert_eq!(game.supply(0).abbot, 1);
}

#[test]
fn without_the_abbot_a_surrounded_garden_is_not_a_feature_that_scores() {
    // Rule: the Abbot expansion makes gardens live; without it a garden is a picture, so
    // surrounding one reports nothing, while the B monasteries around it still count.
    let mut game = base_game(&GARDEN_SURROUNDED);
    let events = surround_the_garden(&mut game, Move::Pass);
    assert!(
        scored(&events)
            .iter()
            .all(|score| score.kind != SegmentKind::Garden),
        "no garden is scored without the Abbot"
    );
    assert_eq!(game.scores(), &[0, 0]);
}

#[test]
fn an_abbot_left_on_an_unfinished_garden_scores_one_plus_neighbours_at_the_end() {
    // Rule: an incomplete garden scores 1 + each surrounding tile at the end.
    // Ug at 1,0 with the abbot; U at 2,0. Neighbours: D and U: 1 + 2 = 3.
    let mut game = game_with(abbot_rules(), 2, &["Ug", "U"]);
    play_turns(
        &mut game,
        &[
            ((1, 0, 0), put(FigureKind::Abbot, "g")),
            ((2, 0, 0), Move::Pass),
        ],
    );
    assert_eq!(game.scores(), &[3, 0]);
}

#[test]
fn recalling_the_abbot_scores_one_plus_neighbours_at_once() {
    // Rule: instead of placing a figure, a player may recall the abbot from an incomplete
    // monastery or garden, scoring 1 + the tiles around it at once.
    // Ug at 1,0 with the abbot; seat 1 plays U at 2,0; seat 0 plays B at 0,1 and recalls.
    // Around 1,0: D, U and B: 1 + 3 = 4.
    let mut game = game_with(abbot_rules(), 2, &["Ug", "U", "B", "U"]);
    assert_eq!(game.check(Move::RecallAbbot), Err(PlayError::TileNotPlaced));
    play(&mut game, place_tile(1, 0, 0));
    assert_eq!(
        game.check(Move::RecallAbbot),
        Err(PlayError::AbbotNotOnBoard)
    );
    play(&mut game, put(FigureKind::Abbot, "g"));
    turn(&mut game, (2, 0, 0), Move::Pass);
    let events = turn(&mut game, (0, 1, 0), Move::RecallAbbot);
    let abbot = PlacedFigure {
        player: 0,
        figure: FigureKind::Abbot,
        pos: Pos::new(1, 0),
        spot: Spot::GARDEN,
    };
    assert_eq!(
        events[0],
        Event::AbbotRecalled {
            figure: abbot,
            points: 4
        }
    );
    assert_eq!(game.scores(), &[4, 0]);
    assert_eq!(game.supply(0).abbot, 1);
    assert!(game.figures().is_empty());
}

// ---------------------------------------------------------------------------------------
// The Festival.
// ---------------------------------------------------------------------------------------

#[test]
fn a_festival_tile_lets_a_player_take_back_any_own_figure_unscored() {
    // Rule: after placing a festival tile a player may, instead of placing a figure, take
    // one of their own figures of any kind back to the supply, unscored.
    let rules = with_expansions(&[
        Expansion::Abbot,
        Expansion::InnsAndCathedrals,
        Expansion::Festival,
    ]);
    let stack = [
        "B", "U", "U", "U", "E", "U", "FE10", "U", "FE05", "U", "FE07",
    ];
    let mut game = game_with(rules, 2, &stack);
    // Seat 0: the abbot on B's monastery at 0,1.
    turn(&mut game, (0, 1, 0), put(FigureKind::Abbot, "m"));
    turn(&mut game, (1, 0, 0), Move::Pass);
    // Seat 0: a thief on U at -1,0. U is no festival tile: no taking back here.
    play(&mut game, place_tile(-1, 0, 0));
    assert_eq!(
        game.check(festival_return(0, 1, "m")),
        Err(PlayError::NotAFestivalTile)
    );
    play(&mut game, follower("r1"));
    turn(&mut game, (2, 0, 0), Move::Pass);
    // Seat 0: the big meeple on E's city at -1,-1.
    turn(&mut game, (-1, -1, 0), put(FigureKind::Big, "c1"));
    turn(&mut game, (3, 0, 0), Move::Pass);
    // Seat 0: FE10 (festival) at the end of the road; the thief comes back.
    let events = turn(&mut game, (4, 0, 0), festival_return(-1, 0, "r1"));
    assert!(matches!(events[0], Event::FigureTakenBack { figure }
        if figure.figure == FigureKind::Follower && figure.pos == Pos::new(-1, 0)));
    assert_eq!(game.supply(0).follower, 7);
    // Seat 1: a farmer north of the road at 5,0.
    turn(&mut game, (5, 0, 0), follower("f1"));
    // Seat 0: FE05 at -2,0. Only seat 0's own figures may be taken back.
    play(&mut game, place_tile(-2, 0, 0));
    assert_eq!(
        game.check(festival_return(5, 0, "f1")),
        Err(PlayError::NoOwnFigureThere {
            pos: Pos::new(5, 0),
            spot: spot("f1"),
        })
    );
    let returns: HashSet<Move> = game
        .legal_moves()
        .into_iter()
        .filter(|mv| matches!(mv, Move::FestivalReturn { .. }))
        .collect();
    let own = [festival_return(-1, -1, "c1"), festival_return(0, 1, "m")];
    assert_eq!(returns, own.into());
    play(&mut game, festival_return(-1, -1, "c1"));
    assert_eq!(game.supply(0).big, 1);
    turn(&mut game, (6, 0, 0), Move::Pass);
    // Seat 0: FE07 at 1,1 rotation 270; the abbot comes back and, unlike a recall
    // (which would score 1 + 4 here), scores nothing.
    turn(&mut game, (1, 1, 270), festival_return(0, 1, "m"));
    assert_eq!(game.supply(0).abbot, 1);
    assert_eq!(game.scores()[0], 0);
}

#[test]
fn festival_tiles_do_nothing_special_without_the_festival_expansion() {
    // Rule: taking a figure back is part of The Festival; a festival tile in another game
    // is an ordinary tile.
    let mut game = base_game(&["U", "FE10"]);
    turn(&mut game, (1, 0, 0), follower("f1"));
    play(&mut game, place_tile(2, 0, 0));
    assert_eq!(
        game.check(festival_return(1, 0, "f1")),
        Err(PlayError::NotAFestivalTile)
    );
}

// ---------------------------------------------------------------------------------------
// The engine's contract.
// ---------------------------------------------------------------------------------------

/// Plays `mv`, expects `error`, and checks that the game did not change at all.
fn assert_refused_without_change(game: &mut Game, mv: Move, error: PlayError) {
    let before = game.clone();
    assert_eq!(game.play(mv), Err(error), "{mv:?}");
    assert!(*game == before, "{mv:?} changed the game");
}

#[test]
fn a_refused_move_leaves_the_game_exactly_as_it_was() {
    // Contract: `play` either applies a legal move or returns why not and changes nothing.
    let rules = with_expansions(&[Expansion::Abbot, Expansion::Festival]);
    let mut game = game_with(rules, 2, &["N", "K", "N"]);
    turn(&mut game, (0, -1, 180), follower("c1"));
    let pos = Pos::new(1, 0);
    let refusals = [
        (
            place_tile(0, 0, 0),
            PlayError::CellOccupied { pos: Pos::ORIGIN },
        ),
        (
            place_tile(5, 5, 0),
            PlayError::NotAdjacent {
                pos: Pos::new(5, 5),
            },
        ),
        (
            place_tile(1, 0, 180),
            PlayError::EdgeMismatch {
                pos,
                rotation: Rotation::R180,
                side: Side::West,
            },
        ),
        (Move::Pass, PlayError::TileNotPlaced),
    ];
    for (mv, error) in refusals {
        assert_refused_without_change(&mut game, mv, error);
    }
    play(&mut game, place_tile(1, 0, 0));
    let refusals = [
        (place_tile(2, 0, 0), PlayError::TileAlreadyPlaced),
        (
            follower("c2"),
            PlayError::UnknownSpot {
                tile: tile("K"),
                spot: spot("c2"),
            },
        ),
        (Move::RecallAbbot, PlayError::AbbotNotOnBoard),
        (festival_return(0, -1, "c1"), PlayError::NotAFestivalTile),
        (
            put(FigureKind::Big, "c1"),
            PlayError::NoFigureInSupply {
                figure: FigureKind::Big,
            },
        ),
    ];
    for (mv, error) in refusals {
        assert_refused_without_change(&mut game, mv, error);
    }
    play(&mut game, Move::Pass);
    // The N at 1,-1 closes the city with seat 0's knight on it: 8 points.
    turn(&mut game, (1, -1, 270), Move::Pass);
    assert_eq!(game.scores(), &[8, 0]);
    assert_refused_without_change(&mut game, Move::Pass, PlayError::GameOver);
}
