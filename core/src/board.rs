//! The board: placed tiles on a growable dense grid, and the frontier of empty cells
//! next to them with the edge constraint each one imposes.
//!
//! Legal placement generation is the engine's hot loop, so every frontier cell keeps a
//! packed constraint (two bits per side, see [`TileDef::packed_edges`]) that is updated
//! when a neighbour is placed. A tile fits a cell at a rotation when
//! `edges & mask == value`: one instruction per candidate, no neighbour lookups.

use crate::geometry::{Pos, Rotation, Side};
use crate::tiles::{EdgeKind, TileDef, TileId};

/// A tile on the board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PlacedTile {
    pub tile: TileId,
    pub pos: Pos,
    pub rotation: Rotation,
    /// The first feature-graph node of this tile's segments (one node per segment).
    pub(crate) node_base: u32,
}

impl PlacedTile {
    pub fn def(&self) -> &'static TileDef {
        self.tile.def()
    }
}

/// An empty cell that touches at least one placed tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FrontierCell {
    pub pos: Pos,
    /// Two bits set per side that has a neighbour.
    pub mask: u8,
    /// The edge kind each such side must have, packed like [`TileDef::packed_edges`].
    pub value: u8,
}

impl FrontierCell {
    pub fn accepts(&self, def: &TileDef, rotation: Rotation) -> bool {
        def.packed_edges(rotation) & self.mask == self.value
    }

    /// The first side where `def` at `rotation` does not match its neighbour.
    pub fn mismatched_side(&self, def: &TileDef, rotation: Rotation) -> Option<Side> {
        let diff = (def.packed_edges(rotation) & self.mask) ^ self.value;
        Side::ALL
            .into_iter()
            .find(|side| diff & (0b11 << (2 * side.index())) != 0)
    }
}

/// A square window of the plane, centred on the origin, that doubles when a tile comes
/// near its border. Cells hold 1 + an index (0 is empty).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Grid {
    radius: i32,
    cells: Vec<u32>,
}

impl Grid {
    fn with_radius(radius: i32) -> Grid {
        let width = (2 * radius + 1) as usize;
        Grid {
            radius,
            cells: vec![0; width * width],
        }
    }

    fn slot(&self, pos: Pos) -> Option<usize> {
        let r = self.radius;
        if pos.x.abs() > r || pos.y.abs() > r {
            return None;
        }
        let width = 2 * r + 1;
        Some(((pos.y + r) * width + (pos.x + r)) as usize)
    }

    fn get(&self, pos: Pos) -> Option<u32> {
        let value = self.cells[self.slot(pos)?];
        (value != 0).then(|| value - 1)
    }

    /// Stores `index` at `pos`, which the caller has made sure lies inside the grid.
    fn set(&mut self, pos: Pos, index: Option<u32>) {
        let slot = self.slot(pos).expect("grid grown before writing");
        self.cells[slot] = index.map_or(0, |i| i + 1);
    }

    fn grown_to_hold(&self, pos: Pos) -> Option<Grid> {
        if pos.x.abs() < self.radius && pos.y.abs() < self.radius {
            return None;
        }
        let mut radius = self.radius;
        while pos.x.abs() >= radius || pos.y.abs() >= radius {
            radius *= 2;
        }
        let mut grown = Grid::with_radius(radius);
        let r = self.radius;
        for y in -r..=r {
            for x in -r..=r {
                let pos = Pos::new(x, y);
                grown.set(pos, self.get(pos));
            }
        }
        Some(grown)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Board {
    placed: Vec<PlacedTile>,
    tiles: Grid,
    frontier_slots: Grid,
    frontier: Vec<FrontierCell>,
}

impl Board {
    const INITIAL_RADIUS: i32 = 16;

    pub fn new() -> Board {
        Board {
            placed: Vec::new(),
            tiles: Grid::with_radius(Board::INITIAL_RADIUS),
            frontier_slots: Grid::with_radius(Board::INITIAL_RADIUS),
            frontier: Vec::new(),
        }
    }

    pub fn placed(&self) -> &[PlacedTile] {
        &self.placed
    }

    pub fn index_at(&self, pos: Pos) -> Option<usize> {
        self.tiles.get(pos).map(|i| i as usize)
    }

    pub fn tile_at(&self, pos: Pos) -> Option<&PlacedTile> {
        self.index_at(pos).map(|i| &self.placed[i])
    }

    pub fn frontier(&self) -> &[FrontierCell] {
        &self.frontier
    }

    pub fn frontier_cell(&self, pos: Pos) -> Option<&FrontierCell> {
        self.frontier_slots
            .get(pos)
            .map(|slot| &self.frontier[slot as usize])
    }

    /// How many of the eight surrounding cells hold a tile.
    pub fn surrounding_tiles(&self, pos: Pos) -> u32 {
        pos.surrounding()
            .filter(|&p| self.index_at(p).is_some())
            .count() as u32
    }

    /// Puts a tile on an empty cell (the caller has checked that it may go there) and
    /// returns its index in placement order.
    pub fn place(&mut self, tile: TileId, pos: Pos, rotation: Rotation, node_base: u32) -> usize {
        self.grow_to_hold(pos);
        let index = self.placed.len();
        self.placed.push(PlacedTile {
            tile,
            pos,
            rotation,
            node_base,
        });
        self.tiles.set(pos, Some(index as u32));
        self.remove_from_frontier(pos);
        let def = tile.def();
        for side in Side::ALL {
            let neighbour = pos.step(side);
            if self.index_at(neighbour).is_none() {
                self.constrain(neighbour, side.opposite(), def.edge(side, rotation));
            }
        }
        index
    }

    fn grow_to_hold(&mut self, pos: Pos) {
        // Frontier cells lie one step beyond placed tiles, so keep a margin of one.
        if let Some(grown) = self.tiles.grown_to_hold(pos) {
            self.tiles = grown;
            self.frontier_slots = self
                .frontier_slots
                .grown_to_hold(pos)
                .expect("both grids share a radius");
        }
    }

    fn remove_from_frontier(&mut self, pos: Pos) {
        let Some(slot) = self.frontier_slots.get(pos) else {
            return;
        };
        self.frontier_slots.set(pos, None);
        self.frontier.swap_remove(slot as usize);
        if let Some(moved) = self.frontier.get(slot as usize) {
            self.frontier_slots.set(moved.pos, Some(slot));
        }
    }

    /// Records that the empty cell `pos` must show `edge` on its side `side`.
    fn constrain(&mut self, pos: Pos, side: Side, edge: EdgeKind) {
        let slot = match self.frontier_slots.get(pos) {
            Some(slot) => slot as usize,
            None => {
                self.frontier.push(FrontierCell {
                    pos,
                    mask: 0,
                    value: 0,
                });
                let slot = self.frontier.len() - 1;
                self.frontier_slots.set(pos, Some(slot as u32));
                slot
            }
        };
        let shift = 2 * side.index();
        let cell = &mut self.frontier[slot];
        cell.mask |= 0b11 << shift;
        cell.value |= (edge as u8) << shift;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tile(name: &str) -> TileId {
        TileId::from_name(name).unwrap()
    }

    #[test]
    fn frontier_tracks_empty_neighbours_and_their_constraints() {
        let mut board = Board::new();
        board.place(tile("D"), Pos::ORIGIN, Rotation::R0, 0);
        assert_eq!(board.frontier().len(), 4);
        let north = board.frontier_cell(Pos::new(0, -1)).unwrap();
        // The cell north of D must show a city on its south side.
        let e = tile("E").def();
        assert!(north.accepts(e, Rotation::R180));
        assert!(!north.accepts(e, Rotation::R0));
        assert_eq!(north.mismatched_side(e, Rotation::R0), Some(Side::South));
        board.place(tile("E"), Pos::new(0, -1), Rotation::R180, 10);
        assert!(board.frontier_cell(Pos::new(0, -1)).is_none());
        assert_eq!(board.frontier().len(), 6);
        assert_eq!(board.surrounding_tiles(Pos::new(1, 0)), 2);
    }

    #[test]
    fn the_grid_grows_without_losing_tiles() {
        let mut board = Board::new();
        for x in 0..100 {
            board.place(tile("U"), Pos::new(x, 0), Rotation::R0, 0);
        }
        for x in 0..100 {
            assert_eq!(board.index_at(Pos::new(x, 0)), Some(x as usize));
        }
        assert!(board.frontier_cell(Pos::new(100, 0)).is_some());
        assert_eq!(board.frontier().len(), 2 * 100 + 2);
    }
}
