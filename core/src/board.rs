//! The board: placed tiles on a growable dense grid, and the frontier of empty cells
//! next to them with the edge constraint each one imposes.
//!
//! The grid is a square window around the origin that doubles as tiles reach its border,
//! up to a fixed size that no real game reaches; cells beyond it are kept in a map, so
//! that a contrived record laying a very long line of tiles costs memory in proportion
//! to its length rather than to its square.
//!
//! Legal placement generation is the engine's hot loop, so every frontier cell keeps its
//! constraint (an [`EdgeConstraint`], the edge kind each side must show) up to date as
//! its neighbours are placed, and [`FrontierCell::fitting_rotations`] finds the
//! rotations of a tile that fit it with one lookup in the tile's table, without
//! neighbour lookups.

use crate::geometry::{Pos, Rotation, Side};
use crate::tiles::{EdgeConstraint, EdgeKind, TileDef, TileId};
use std::collections::HashMap;

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
    /// The edge kind each side with a neighbour must have.
    pub constraint: EdgeConstraint,
}

impl FrontierCell {
    /// A cell with no neighbour yet.
    fn unconstrained(pos: Pos) -> FrontierCell {
        FrontierCell {
            pos,
            constraint: EdgeConstraint::default(),
        }
    }

    /// Records that this cell must show `edge` on its side `side`.
    fn constrain(&mut self, side: Side, edge: EdgeKind) {
        self.constraint.require(side, edge);
    }

    #[cfg(test)]
    pub fn accepts(&self, def: &TileDef, rotation: Rotation) -> bool {
        self.fitting_rotations(def) & (1 << rotation.quarter_turns()) != 0
    }

    /// The rotations at which `def` fits this cell, as bits 0 to 3 (0, 90, 180, 270).
    #[inline]
    pub fn fitting_rotations(&self, def: &TileDef) -> u32 {
        def.fitting_rotations(self.constraint)
    }

    /// The first side where `def` at `rotation` does not match its neighbour.
    pub fn mismatched_side(&self, def: &TileDef, rotation: Rotation) -> Option<Side> {
        // Every move is checked here, nearly always a fitting one: the table says so at
        // once, and only a refused move pays for reading the constraint side by side.
        if self.fitting_rotations(def) & (1 << rotation.quarter_turns()) != 0 {
            return None;
        }
        self.constraint.mismatched_side(def, rotation)
    }
}

/// A square window of the plane, centred on the origin, that doubles when a tile comes
/// near its border, up to [`Grid::MAX_RADIUS`], and a map for the cells beyond it.
/// Cells hold 1 + an index (0 is empty).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Grid {
    radius: i32,
    cells: Vec<u32>,
    far: HashMap<Pos, u32>,
}

impl Grid {
    /// The largest window: two megabytes for both grids of a board. The largest real game
    /// has 112 tiles, so its tiles stay within a radius of 128; only a contrived record
    /// ever gets past 256 and into the map.
    const MAX_RADIUS: i32 = 256;

    fn with_radius(radius: i32) -> Grid {
        let width = (2 * radius + 1) as usize;
        Grid {
            radius,
            cells: vec![0; width * width],
            far: HashMap::new(),
        }
    }

    /// How far `pos` lies from the origin along its farther axis.
    fn reach(pos: Pos) -> u32 {
        // Not `abs`: `i32::MIN.abs()` overflows. An earlier bounds test built on `abs`
        // let a record naming cell -2147483648,y index outside the grid (a panic) or
        // alias another cell in release builds.
        pos.x.unsigned_abs().max(pos.y.unsigned_abs())
    }

    #[inline]
    fn slot(&self, pos: Pos) -> Option<usize> {
        // Shifted by the radius, the window is 0..width on both axes. Wrapping keeps every
        // i32 in range of that test: a cell beyond the window, even at i32::MIN or
        // i32::MAX, wraps to a large unsigned value and is refused.
        let width = (2 * self.radius + 1) as u32;
        let column = pos.x.wrapping_add(self.radius) as u32;
        let row = pos.y.wrapping_add(self.radius) as u32;
        (column < width && row < width).then(|| (row * width + column) as usize)
    }

    /// Looked up on every placement, check and scoring, so kept small enough to inline.
    #[inline]
    fn get(&self, pos: Pos) -> Option<u32> {
        let value = match self.slot(pos) {
            Some(slot) => self.cells[slot],
            None => self.get_far(pos),
        };
        (value != 0).then(|| value - 1)
    }

    /// The stored value of a cell beyond the window; only contrived records get here.
    #[cold]
    #[inline(never)]
    fn get_far(&self, pos: Pos) -> u32 {
        self.far.get(&pos).copied().unwrap_or(0)
    }

    fn set(&mut self, pos: Pos, index: Option<u32>) {
        let value = index.map_or(0, |i| i + 1);
        match self.slot(pos) {
            Some(slot) => self.cells[slot] = value,
            None if value == 0 => {
                self.far.remove(&pos);
            }
            None => {
                self.far.insert(pos, value);
            }
        }
    }

    /// A larger copy when `pos` or a cell next to it would fall outside the window and
    /// the window may still grow.
    fn grown_to_hold(&self, pos: Pos) -> Option<Grid> {
        if Grid::reach(pos) < self.radius as u32 || self.radius >= Grid::MAX_RADIUS {
            return None;
        }
        let mut radius = self.radius;
        while Grid::reach(pos) >= radius as u32 && radius < Grid::MAX_RADIUS {
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
        for (&pos, &value) in &self.far {
            grown.set(pos, Some(value - 1));
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

    /// An empty board with room for `tiles` tiles and the frontier around them.
    pub fn with_capacity(tiles: usize) -> Board {
        Board {
            placed: Vec::with_capacity(tiles),
            tiles: Grid::with_radius(Board::INITIAL_RADIUS),
            frontier_slots: Grid::with_radius(Board::INITIAL_RADIUS),
            // Each tile adds at most two cells to the frontier net (four new, one filled).
            frontier: Vec::with_capacity(2 * tiles + 2),
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
                self.frontier.push(FrontierCell::unconstrained(pos));
                let slot = self.frontier.len() - 1;
                self.frontier_slots.set(pos, Some(slot as u32));
                slot
            }
        };
        self.frontier[slot].constrain(side, edge);
    }
}

/// The frontier's cells in the order of the notation's `legal` lists (by x, then y),
/// with their constraints, kept up to date tile by tile for a caller that lists every
/// turn's placements in that order. Sorting the fitting cells afresh each turn cost
/// more than the rest of listing them, and looking each cell's constraint up on the
/// board cost about as much again; a tile changes this list by one removal and at most
/// four insertions or updates.
///
/// It follows one game: [`OrderedFrontier::catch_up`] reads the tiles placed since its
/// last call, so it must always be given the same board.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OrderedFrontier {
    /// Every frontier cell as its [`order_key`] and constraint, by ascending key. The
    /// position is read back from the key, which keeps an entry at 16 bytes: inserting
    /// and removing move the tail of this vector.
    cells: Vec<(u64, EdgeConstraint)>,
    /// How many of the board's tiles have been taken into account.
    tiles_seen: usize,
}

impl OrderedFrontier {
    /// Brings the list up to date with the tiles placed on `board` since the last call.
    ///
    /// After tile `k` is taken in, the list holds every cell that touches one of the
    /// tiles `0..=k` and is empty on the board as it is now, constrained by those tiles:
    /// the cell of each tile is taken out, and each of its empty neighbours goes in or is
    /// constrained further. Once every tile is in, that is exactly the frontier, whatever
    /// order the tiles came in, and each side of each tile constrained its cell once.
    pub fn catch_up(&mut self, board: &Board) {
        let start = self.tiles_seen.min(board.placed().len());
        for tile in &board.placed()[start..] {
            self.take_in(board, tile);
        }
        self.tiles_seen = board.placed().len();
    }

    /// Takes one tile's cell out and its empty neighbours in.
    ///
    /// In the list's order, the cells north and south of a tile come right before and
    /// right after its own cell, so they are found or placed there without a search,
    /// and a new one takes over the tile's own entry instead of moving the tail twice.
    /// The cells west and east are each a column away and are searched for.
    fn take_in(&mut self, board: &Board, tile: &PlacedTile) {
        let key = order_key(tile.pos);
        let (mut index, mut vacant) = match self.position(key) {
            Ok(index) => (index, true),
            Err(index) => (index, false),
        };
        // From here on, `index` is where the next cell in order after the ones handled
        // goes, and `vacant` says the entry there is the tile's own, free to reuse.
        let north = tile.pos.step(Side::North);
        debug_assert_eq!(
            order_key(north) + 1,
            key,
            "no tile lies at the end of a column"
        );
        if index > 0 && self.cells[index - 1].0 == key - 1 {
            self.constrain_at(index - 1, tile, Side::North);
        } else if board.index_at(north).is_none() {
            self.put_new_at(index, vacant, north, tile, Side::North);
            index += 1;
            vacant = false;
        }
        let south = tile.pos.step(Side::South);
        let after = index + usize::from(vacant);
        if self
            .cells
            .get(after)
            .is_some_and(|&(next, _)| next == key + 1)
        {
            self.constrain_at(after, tile, Side::South);
        } else if board.index_at(south).is_none() {
            self.put_new_at(index, vacant, south, tile, Side::South);
            vacant = false;
        }
        if vacant {
            self.cells.remove(index);
        }
        for side in [Side::West, Side::East] {
            self.constrain_searched(board, tile, side);
        }
    }

    /// Adds the empty cell `pos` across `side` of `tile` at `index`, over the tile's
    /// own entry when `vacant` says it is there.
    fn put_new_at(&mut self, index: usize, vacant: bool, pos: Pos, tile: &PlacedTile, side: Side) {
        let entry = (order_key(pos), EdgeConstraint::default());
        if vacant {
            self.cells[index] = entry;
        } else {
            self.cells.insert(index, entry);
        }
        self.constrain_at(index, tile, side);
    }

    /// Finds the cell across `side` of `tile`, adds it if it is new and empty, and
    /// constrains it.
    fn constrain_searched(&mut self, board: &Board, tile: &PlacedTile, side: Side) {
        let neighbour = tile.pos.step(side);
        let index = match self.position(order_key(neighbour)) {
            Ok(index) => index,
            Err(_) if board.index_at(neighbour).is_some() => return,
            Err(index) => {
                let entry = (order_key(neighbour), EdgeConstraint::default());
                self.cells.insert(index, entry);
                index
            }
        };
        self.constrain_at(index, tile, side);
    }

    /// Records what `tile` asks of the listed cell at `index`, which lies across `side`.
    fn constrain_at(&mut self, index: usize, tile: &PlacedTile, side: Side) {
        let edge = tile.def().edge(side, tile.rotation);
        self.cells[index].1.require(side.opposite(), edge);
    }

    /// Where the cell with the order key `key` is in the list, or where it would go.
    fn position(&self, key: u64) -> Result<usize, usize> {
        self.cells.binary_search_by_key(&key, |&(key, _)| key)
    }

    /// The frontier cells, in order. The list must have caught up with the board.
    pub fn cells(&self) -> impl Iterator<Item = FrontierCell> + '_ {
        self.cells.iter().map(|&(key, constraint)| FrontierCell {
            pos: position_of_key(key),
            constraint,
        })
    }
}

/// An integer that orders positions by x, then y: flipping the sign bit maps each `i32`
/// onto a `u32` in the same order, and x goes in the high half.
pub(crate) fn order_key(pos: Pos) -> u64 {
    let flip = |coordinate: i32| u64::from(coordinate as u32 ^ 0x8000_0000);
    (flip(pos.x) << 32) | flip(pos.y)
}

/// The position whose [`order_key`] is `key`.
fn position_of_key(key: u64) -> Pos {
    let unflip = |half: u64| (half as u32 ^ 0x8000_0000) as i32;
    Pos::new(unflip(key >> 32), unflip(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tile(name: &str) -> TileId {
        TileId::from_name(name).unwrap()
    }

    #[test]
    fn frontier_tracks_empty_neighbours_and_their_constraints() {
        let mut board = Board::with_capacity(0);
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
    fn cells_at_the_ends_of_the_coordinate_range_are_empty_and_alias_nothing() {
        // Records can name any i32 cell; none of these may panic or find the start tile.
        let mut board = Board::with_capacity(0);
        board.place(tile("D"), Pos::ORIGIN, Rotation::R0, 0);
        let extremes = [i32::MIN, i32::MIN + 1, -17, 17, i32::MAX];
        for x in extremes {
            for y in extremes.into_iter().chain([0]) {
                let pos = Pos::new(x, y);
                assert_eq!(board.index_at(pos), None, "{pos}");
                assert!(board.frontier_cell(pos).is_none(), "{pos}");
            }
        }
        assert_eq!(board.index_at(Pos::ORIGIN), Some(0));
    }

    #[test]
    fn the_grid_grows_without_losing_tiles() {
        let mut board = Board::with_capacity(0);
        for x in 0..100 {
            board.place(tile("U"), Pos::new(x, 0), Rotation::R0, 0);
        }
        for x in 0..100 {
            assert_eq!(board.index_at(Pos::new(x, 0)), Some(x as usize));
        }
        assert!(board.frontier_cell(Pos::new(100, 0)).is_some());
        assert_eq!(board.frontier().len(), 2 * 100 + 2);
        assert!(
            board.tiles.far.is_empty(),
            "a real game's size never needs the map"
        );
    }

    #[test]
    fn a_line_beyond_the_largest_window_goes_on_in_the_map() {
        // A line of 600 tiles westwards from the origin: the window stops growing at
        // radius 256 and the 343 tiles beyond it, with their frontier, live in the map.
        let mut board = Board::with_capacity(0);
        let line = 600;
        for step in 0..line {
            board.place(tile("U"), Pos::new(-step, 0), Rotation::R0, 0);
        }
        assert_eq!(board.tiles.radius, Grid::MAX_RADIUS);
        assert_eq!(
            board.tiles.far.len(),
            (line - 1 - Grid::MAX_RADIUS) as usize
        );
        for step in 0..line {
            assert_eq!(board.index_at(Pos::new(-step, 0)), Some(step as usize));
            assert!(board.frontier_cell(Pos::new(-step, 1)).is_some());
        }
        assert!(board.frontier_cell(Pos::new(-line, 0)).is_some());
        assert_eq!(board.frontier().len(), 2 * line as usize + 2);
    }

    #[test]
    fn order_keys_order_positions_by_x_then_y() {
        let values = [
            i32::MIN,
            i32::MIN + 1,
            -300,
            -1,
            0,
            1,
            300,
            i32::MAX - 1,
            i32::MAX,
        ];
        let mut positions = Vec::new();
        for x in values {
            for y in values {
                positions.push(Pos::new(x, y));
            }
        }
        let mut by_key = positions.clone();
        by_key.sort_unstable_by_key(|&pos| order_key(pos));
        positions.sort_unstable_by_key(|&pos| (pos.x, pos.y));
        assert_eq!(by_key, positions);
        for pos in positions {
            assert_eq!(position_of_key(order_key(pos)), pos);
        }
    }

    /// The frontier's cells sorted by x, then y, the obvious way.
    fn sorted_frontier(board: &Board) -> Vec<FrontierCell> {
        let mut cells = board.frontier().to_vec();
        cells.sort_unstable_by_key(|cell| (cell.pos.x, cell.pos.y));
        cells
    }

    #[test]
    fn the_ordered_frontier_is_the_frontier_sorted_whenever_it_catches_up() {
        // A spiral-ish walk that fills cells the frontier already listed, with catch-ups
        // after every tile, after several, and only at the end.
        let walk = [
            (0, 0),
            (1, 0),
            (1, 1),
            (0, 1),
            (-1, 1),
            (-1, 0),
            (-1, -1),
            (0, -1),
            (1, -1),
            (2, -1),
            (2, 0),
            (3, 0),
        ];
        for every in [1, 3, walk.len()] {
            let mut board = Board::with_capacity(0);
            let mut order = OrderedFrontier::default();
            for (step, &(x, y)) in walk.iter().enumerate() {
                board.place(tile("U"), Pos::new(x, y), Rotation::R0, 0);
                if (step + 1) % every == 0 {
                    order.catch_up(&board);
                    let listed: Vec<FrontierCell> = order.cells().collect();
                    assert_eq!(listed, sorted_frontier(&board), "step {step}");
                }
            }
        }
    }
}
