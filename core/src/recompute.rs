//! A from-scratch recomputation of every feature, to check the union-find against.
//!
//! [`crate::features`] keeps features incrementally: each placement merges sets and
//! adjusts counters at the roots, and a slip there would only show as a wrong score much
//! later. This module forgets all of that and rebuilds every feature from the board alone,
//! by flood fill over the segments of the placed tiles, using only the printed sides and
//! half-sides of the catalogue and the rotation and facing rules of `tiles.md`. The
//! property test below plays random games under every rules variant and, after every
//! move, compares each feature's members, open edges, figures and pennants.

use crate::board::PlacedTile;
use crate::game::Game;
use crate::geometry::Pos;
use crate::tiles::{SegmentKind, Spot};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// A segment of a placed tile: the tile's index in placement order, then the segment's
/// index in the tile's definition.
type SegmentRef = (usize, usize);

/// What a feature adds up to, in a form both computations can produce and compare.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct FeatureSummary {
    members: BTreeSet<SegmentRef>,
    kind: SegmentKind,
    open_edges: u32,
    figures: u32,
    pennants: u32,
    inn: bool,
    cathedral: bool,
}

/// Every feature as the union-find holds it, sorted by members. River segments are left
/// out: they are never joined and nothing can stand on them.
fn features_from_union_find(game: &Game) -> Vec<FeatureSummary> {
    let features = &game.features;
    let mut members_by_root: BTreeMap<u32, BTreeSet<SegmentRef>> = BTreeMap::new();
    for id in 0..features.len() as u32 {
        let node = features.node(id);
        let tile = &game.board.placed()[node.tile as usize];
        assert_eq!(
            tile.node_base + node.segment as u32,
            id,
            "node {id} is not where its tile's node base says"
        );
        if node.kind != SegmentKind::River {
            let member = (node.tile as usize, node.segment as usize);
            members_by_root
                .entry(features.find(id))
                .or_default()
                .insert(member);
        }
    }
    let mut summaries: Vec<FeatureSummary> = members_by_root
        .into_iter()
        .map(|(root, members)| {
            let stats = features.stats(root);
            FeatureSummary {
                members,
                kind: features.node(root).kind,
                open_edges: stats.open_edges,
                figures: u32::from(stats.figures),
                pennants: stats.pennants,
                inn: stats.inn,
                cathedral: stats.cathedral,
            }
        })
        .collect();
    summaries.sort();
    summaries
}

/// Every feature rebuilt by flood fill over the board, sorted by members.
fn features_by_flood_fill(game: &Game) -> Vec<FeatureSummary> {
    let placed = game.board.placed();
    let figures: HashSet<(Pos, Spot)> = game
        .figures()
        .into_iter()
        .map(|figure| (figure.pos, figure.spot))
        .collect();
    let mut visited: HashSet<SegmentRef> = HashSet::new();
    let mut summaries = Vec::new();
    for (tile, placed_tile) in placed.iter().enumerate() {
        for (segment, def) in placed_tile.def().segments.iter().enumerate() {
            if def.kind() == SegmentKind::River || visited.contains(&(tile, segment)) {
                continue;
            }
            let summary = flood_fill_from(game, (tile, segment), &figures);
            visited.extend(summary.members.iter().copied());
            summaries.push(summary);
        }
    }
    summaries.sort();
    summaries
}

/// Collects the feature that contains `start` by following shared sides (roads and
/// cities) and half-sides (fields) to the neighbouring tiles.
fn flood_fill_from(
    game: &Game,
    start: SegmentRef,
    figures: &HashSet<(Pos, Spot)>,
) -> FeatureSummary {
    let placed = game.board.placed();
    let kind = placed[start.0].def().segments[start.1].kind();
    let mut summary = FeatureSummary {
        members: BTreeSet::from([start]),
        kind,
        open_edges: 0,
        figures: 0,
        pennants: 0,
        inn: false,
        cathedral: false,
    };
    let mut pending = vec![start];
    while let Some((tile, segment)) = pending.pop() {
        let here = &placed[tile];
        let def = &here.def().segments[segment];
        summary.pennants += def.pennants as u32;
        summary.inn |= def.inn;
        summary.cathedral |= def.cathedral;
        summary.figures += figures.contains(&(here.pos, def.spot)) as u32;
        let (across, open_edges) = segments_across(game, here, segment);
        summary.open_edges += open_edges;
        for next in across {
            let next_kind = placed[next.0].def().segments[next.1].kind();
            assert_eq!(
                next_kind, kind,
                "{kind:?} meets {next_kind:?} across an edge"
            );
            if summary.members.insert(next) {
                pending.push(next);
            }
        }
    }
    summary
}

/// The segments of neighbouring tiles that `segment` of `here` touches, and how many of
/// its road or city sides face an empty cell.
fn segments_across(game: &Game, here: &PlacedTile, segment: usize) -> (Vec<SegmentRef>, u32) {
    let def = &here.def().segments[segment];
    let mut across = Vec::new();
    let mut open_edges = 0;
    match def.kind() {
        SegmentKind::Road | SegmentKind::City => {
            for printed in def.sides() {
                let side = printed.rotated(here.rotation);
                match neighbour(game, here.pos.step(side)) {
                    None => open_edges += 1,
                    Some((index, there)) => {
                        let their_printed = side.opposite().unrotated(there.rotation);
                        let found = there.def().segments.iter().position(|s| {
                            s.kind() != SegmentKind::Field && s.sides().any(|x| x == their_printed)
                        });
                        across.extend(found.map(|j| (index, j)));
                    }
                }
            }
        }
        SegmentKind::Field => {
            for printed in def.halves() {
                let half = printed.rotated(here.rotation);
                if let Some((index, there)) = neighbour(game, here.pos.step(half.side())) {
                    let their_printed = half.facing().unrotated(there.rotation);
                    let found = there.def().segments.iter().position(|s| {
                        s.kind() == SegmentKind::Field && s.halves().any(|x| x == their_printed)
                    });
                    across.extend(found.map(|j| (index, j)));
                }
            }
        }
        SegmentKind::Monastery | SegmentKind::Garden | SegmentKind::River => {}
    }
    (across, open_edges)
}

/// The tile at `pos` with its index, found by scanning the placed tiles rather than
/// through the board's grid, so that the check shares no code with what it checks.
fn neighbour(game: &Game, pos: Pos) -> Option<(usize, &PlacedTile)> {
    let placed = game.board.placed();
    placed
        .iter()
        .position(|tile| tile.pos == pos)
        .map(|index| (index, &placed[index]))
}

/// Panics with both views when the union-find and the flood fill disagree.
fn assert_features_match(game: &Game) {
    let incremental = features_from_union_find(game);
    let rebuilt = features_by_flood_fill(game);
    if incremental != rebuilt {
        let only_incremental: Vec<_> = incremental
            .iter()
            .filter(|f| !rebuilt.contains(f))
            .collect();
        let only_rebuilt: Vec<_> = rebuilt
            .iter()
            .filter(|f| !incremental.contains(f))
            .collect();
        panic!(
            "features differ after {} tiles\nunion-find only: {only_incremental:#?}\nflood fill only: {only_rebuilt:#?}",
            game.tiles().len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::{Move, Phase, Setup, Stack};
    use crate::geometry::Rotation;
    use crate::rules::{Expansion, Rules};
    use crate::tiles::TileId;
    use proptest::prelude::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};

    /// Random rules: any subset of expansions, farmers on or off, any farm value allowed, and
    /// now and then a tile limit; then a seat count the rules allow and a stack seed.
    fn any_setup() -> impl Strategy<Value = Setup> {
        let rules = (
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
            );
        (rules, any::<u64>()).prop_flat_map(|(rules, seed)| {
            (2..=rules.max_players()).prop_map(move |players| Setup {
                rules: rules.clone(),
                players,
                stack: Stack::Seeded(seed),
            })
        })
    }

    fn tile(name: &str) -> TileId {
        TileId::from_name(name).unwrap()
    }

    #[test]
    fn a_city_that_enters_one_tile_twice_is_one_feature_with_that_tile_once() {
        // A ring of four cities around a corner: I at 1,2 has two separate city segments
        // (north and west) that the ring joins. Both computations must see one closed
        // city whose members include both segments of I.
        let stack = ["N", "N", "N", "I"].map(tile).to_vec();
        let mut game = Game::new(Setup {
            rules: Rules::default(),
            players: 2,
            stack: Stack::Fixed(stack),
        })
        .unwrap();
        let placements = [(0, 1, Rotation::R180), (1, 1, Rotation::R270)];
        let placements = placements
            .into_iter()
            .chain([(0, 2, Rotation::R90), (1, 2, Rotation::R0)]);
        for (x, y, rotation) in placements {
            let pos = Pos::new(x, y);
            game.play(Move::PlaceTile { pos, rotation }).unwrap();
            game.play(Move::Pass).unwrap();
            assert_features_match(&game);
        }
        let ring = features_from_union_find(&game)
            .into_iter()
            .find(|feature| feature.kind == SegmentKind::City && feature.members.len() == 5)
            .expect("one city of five segments");
        assert_eq!(ring.open_edges, 0);
    }

    /// Whole games to compare move by move. Debug builds are some twenty times slower,
    /// so they play a tenth; `cargo test --release` plays the full number.
    const GAMES: u32 = if cfg!(debug_assertions) { 40 } else { 400 };

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(GAMES))]

        /// Plays a random game, choosing uniformly among the legal moves, and compares the
        /// union-find with the flood fill after every move.
        #[test]
        fn incremental_features_equal_a_flood_fill_after_every_move(
            setup in any_setup(),
            move_seed in any::<u64>(),
        ) {
            let mut game = Game::new(setup).unwrap();
            let mut rng = ChaCha8Rng::seed_from_u64(move_seed);
            assert_features_match(&game);
            while game.phase() != Phase::Over {
                let moves = game.legal_moves();
                let mv = moves[rng.next_u64() as usize % moves.len()];
                game.play(mv).unwrap();
                assert_features_match(&game);
            }
        }
    }
}
