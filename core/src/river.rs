//! The River: where the river is still open, and the no-U-turn rule.
//!
//! A river tile must join the open end of the river with one of its river edges; its
//! other river edge (if any) becomes the new open end. **Choice** (rules.md): a bend may
//! not turn the same way as the river tile placed immediately before it when that one
//! was also a bend, which rules out the U-turns that would make the river run into itself.

use crate::geometry::{Pos, Rotation, Side};
use crate::tiles::{EdgeKind, TileDef};

/// Which way a river bend turns, seen in the direction the river flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bend {
    Left,
    Right,
}

/// Why a river tile may not go where it was put.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RiverProblem {
    /// The river has no open end (it reached the lake, or this game has no river).
    Closed,
    /// The tile does not continue the river at its open end.
    NotAtOpenEnd { cell: Pos, side: Side },
    /// The bend would turn the same way as the bend just before it.
    UTurn,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct River {
    /// The tile whose river edge on `Side` still faces an empty cell.
    open_end: Option<(Pos, Side)>,
    /// The turn of the last river tile, when it was a bend.
    last_bend: Option<Bend>,
}

impl River {
    /// The river as the start tile leaves it: open wherever the start tile has a river edge.
    pub fn from_start(def: &TileDef) -> River {
        let open_end = Side::ALL
            .into_iter()
            .find(|&side| def.edge(side, Rotation::R0) == EdgeKind::River)
            .map(|side| (Pos::ORIGIN, side));
        River {
            open_end,
            last_bend: None,
        }
    }

    /// The empty cell where the next river tile must go.
    pub fn next_cell(&self) -> Option<Pos> {
        self.open_end.map(|(pos, side)| pos.step(side))
    }

    /// Whether a river tile `def` may go at `pos` with `rotation`, as far as the river is
    /// concerned (ordinary edge matching is checked separately).
    pub fn problem(&self, def: &TileDef, pos: Pos, rotation: Rotation) -> Option<RiverProblem> {
        let Some((end, flow)) = self.open_end else {
            return Some(RiverProblem::Closed);
        };
        let cell = end.step(flow);
        if pos != cell || def.edge(flow.opposite(), rotation) != EdgeKind::River {
            return Some(RiverProblem::NotAtOpenEnd { cell, side: flow });
        }
        let bend = exit_side(def, rotation, flow).and_then(|exit| bend_of(flow, exit));
        if bend.is_some() && bend == self.last_bend {
            return Some(RiverProblem::UTurn);
        }
        None
    }

    /// Moves the open end past a river tile that was just placed at the open end.
    pub fn advance(&mut self, def: &TileDef, pos: Pos, rotation: Rotation) {
        let Some((_, flow)) = self.open_end else {
            return;
        };
        let exit = exit_side(def, rotation, flow);
        self.last_bend = exit.and_then(|exit| bend_of(flow, exit));
        self.open_end = exit.map(|exit| (pos, exit));
    }
}

/// The river edge through which the river leaves a tile it enters flowing towards `flow`.
fn exit_side(def: &TileDef, rotation: Rotation, flow: Side) -> Option<Side> {
    let entry = flow.opposite();
    Side::ALL
        .into_iter()
        .find(|&side| side != entry && def.edge(side, rotation) == EdgeKind::River)
}

fn bend_of(flow: Side, exit: Side) -> Option<Bend> {
    if exit == flow.rotated(Rotation::R90) {
        Some(Bend::Right)
    } else if exit == flow.rotated(Rotation::R270) {
        Some(Bend::Left)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tiles::TileId;

    fn def(name: &str) -> &'static TileDef {
        TileId::from_name(name).unwrap().def()
    }

    #[test]
    fn the_spring_leaves_the_river_open_to_the_east() {
        let river = River::from_start(def("R01"));
        assert_eq!(river.next_cell(), Some(Pos::new(1, 0)));
        assert_eq!(River::from_start(def("D")).next_cell(), None);
    }

    #[test]
    fn a_river_tile_must_continue_at_the_open_end() {
        let river = River::from_start(def("R01"));
        // R07 runs W-E at rotation 0: it continues the river at 1,0.
        assert_eq!(
            river.problem(def("R07"), Pos::new(1, 0), Rotation::R0),
            None
        );
        assert!(matches!(
            river.problem(def("R07"), Pos::new(1, 0), Rotation::R90),
            Some(RiverProblem::NotAtOpenEnd { .. })
        ));
        assert!(matches!(
            river.problem(def("R07"), Pos::new(0, 1), Rotation::R0),
            Some(RiverProblem::NotAtOpenEnd { .. })
        ));
    }

    #[test]
    fn two_bends_the_same_way_in_a_row_are_a_u_turn() {
        let mut river = River::from_start(def("R01"));
        // R10 has its river W and S: entering from the west it turns right (south).
        let bend = def("R10");
        assert_eq!(river.problem(bend, Pos::new(1, 0), Rotation::R0), None);
        river.advance(bend, Pos::new(1, 0), Rotation::R0);
        assert_eq!(river.next_cell(), Some(Pos::new(1, 1)));
        // Flowing south, R10 at 90 (river N and W) turns right again, to the west.
        assert_eq!(
            river.problem(bend, Pos::new(1, 1), Rotation::R90),
            Some(RiverProblem::UTurn)
        );
        // At 180 (river N and E) it turns left, to the east: allowed.
        assert_eq!(river.problem(bend, Pos::new(1, 1), Rotation::R180), None);
        // A straight piece resets the rule.
        river.advance(def("R07"), Pos::new(1, 1), Rotation::R90);
        assert_eq!(river.problem(bend, Pos::new(1, 2), Rotation::R90), None);
    }

    #[test]
    fn the_lake_closes_the_river() {
        let mut river = River::from_start(def("R01"));
        // The lake R02 has its river on the west side.
        river.advance(def("R02"), Pos::new(1, 0), Rotation::R0);
        assert_eq!(river.next_cell(), None);
        assert_eq!(
            river.problem(def("R07"), Pos::new(2, 0), Rotation::R0),
            Some(RiverProblem::Closed)
        );
    }
}
