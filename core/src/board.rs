//! The board: placed tiles and the frontier of empty cells next to them, with the edge
//! constraint each one imposes, on one growable dense grid.
//!
//! The grid is a rectangular window around the tiles that grows as they reach its border,
//! up to a fixed size that no real game reaches; cells beyond it are kept in a map, so
//! that a contrived record laying a very long line of tiles costs memory in proportion
//! to its length rather than to its square. Each cell of the window says whether it
//! holds a tile, is on the frontier, or neither, so that placing a tile tests the window
//! once per cell it looks at rather than once per grid.
//!
//! Legal placement generation is the engine's hot loop, so every frontier cell keeps its
//! constraint (an [`EdgeConstraint`], the edge kind each side must show) up to date as
//! its neighbours are placed, and [`FrontierCell::fitting_rotations`] finds the
//! rotations of a tile that fit it with one lookup in the tile's table, without
//! neighbour lookups.
//!
//! The window also keeps, for each of its columns, a bitmap of the rows on the frontier,
//! so that [`Board::visit_fitting_cells_in_order`] reads the frontier in the order of the
//! notation's `legal` lists (by x, then y) without sorting anything and without keeping a
//! sorted list up to date.

use crate::geometry::{Pos, Rotation, Side};
use crate::tiles::{EdgeConstraint, EdgeKind, FitTable, TileDef, TileId};
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

/// What one cell of the board holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Content {
    Empty,
    /// The tile at this index of [`Board::placed`].
    Tile(u32),
    /// The frontier cell at this index of [`Board::frontier`].
    Frontier(u32),
}

impl Content {
    /// Set in a stored cell that holds a tile; the other bits are the tile's index.
    const TILE_BIT: u32 = 1 << 31;

    /// The cell as the grid stores it: 0 when empty, the tile's index with the top bit
    /// set, or 1 + the frontier cell's index.
    fn pack(self) -> u32 {
        match self {
            Content::Empty => 0,
            Content::Tile(index) => Content::TILE_BIT | index,
            Content::Frontier(index) => index + 1,
        }
    }

    #[inline]
    fn unpack(value: u32) -> Content {
        if value & Content::TILE_BIT != 0 {
            Content::Tile(value & !Content::TILE_BIT)
        } else if value == 0 {
            Content::Empty
        } else {
            Content::Frontier(value - 1)
        }
    }
}

/// Where a cell of the window is: its column and row, counted from the window's first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct WindowCell {
    column: u32,
    row: u32,
}

/// The window's extent along one axis: `len` coordinates from `first` on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    first: i32,
    len: u32,
}

impl Span {
    /// The most coordinates a window spans on an axis: 513 by 513 cells is about 1.6
    /// megabytes for a board. The largest real game has 112 tiles, so it never gets near;
    /// only a contrived record's long line of tiles gets past it and into the map.
    const MAX_LEN: u32 = 513;

    /// Room kept on each side of the start tile, and the least a window grows by.
    const MARGIN: u32 = 3;

    fn around_origin() -> Span {
        Span {
            first: -(Span::MARGIN as i32),
            len: 2 * Span::MARGIN + 1,
        }
    }

    fn last(self) -> i32 {
        self.first + self.len as i32 - 1
    }

    /// How far `coordinate` lies from the first, if the span holds it.
    #[inline]
    fn offset(self, coordinate: i32) -> Option<u32> {
        // Wrapping keeps every i32 in range of that test: a span always holds the origin
        // and is at most `MAX_LEN` long, so a coordinate before it, even i32::MIN, wraps
        // to a large unsigned value and is refused, as is one far after it.
        let offset = coordinate.wrapping_sub(self.first) as u32;
        (offset < self.len).then_some(offset)
    }

    /// Whether the span holds `coordinate` and both its neighbours.
    #[inline]
    fn holds_with_margin(self, coordinate: i32) -> bool {
        coordinate > self.first && coordinate < self.last()
    }

    /// The span grown to hold `coordinate` and its neighbours with some room beyond
    /// (a quarter of its length, so that a game going one way regrows its window a
    /// few times, not once a tile); itself when it holds them already or may not grow
    /// that far.
    fn grown_to_hold(self, coordinate: i32) -> Span {
        if self.holds_with_margin(coordinate) {
            return self;
        }
        let room = (self.len / 4).max(Span::MARGIN) as i64;
        let (first, last) = (i64::from(self.first), i64::from(self.last()));
        let coordinate = i64::from(coordinate);
        let first = first.min(coordinate - room);
        let last = last.max(coordinate + room);
        let len = (last - first + 1) as u64;
        if len > u64::from(Span::MAX_LEN) {
            return self;
        }
        Span {
            first: first as i32,
            len: len as u32,
        }
    }
}

/// A window of the plane, a rectangle around the tiles placed, and a map for the cells
/// beyond it. The window's cells are stored column by column; each column has a bitmap
/// of its rows that are on the frontier, and each frontier cell of the window has its
/// constraint beside its content, so that reading the frontier in order touches
/// nothing else. The window only ever grows, so it always holds the origin.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Grid {
    columns: Span,
    rows: Span,
    /// Packed [`Content`]: the cell in column `c` and row `r` is at `c * rows.len + r`.
    cells: Vec<u32>,
    /// The constraint of each frontier cell of the window, indexed as `cells`; other
    /// entries mean nothing.
    constraints: Vec<EdgeConstraint>,
    /// Each column's frontier bitmap takes `1 << column_shift` words of 64 rows: a power
    /// of two, so that the column and first row of a word are a shift and a mask away.
    column_shift: u32,
    /// Bit `row % 64` of word `(column << column_shift) + row / 64` is set when that
    /// cell is on the frontier.
    frontier_rows: Vec<u64>,
    far: HashMap<Pos, u32>,
}

impl Grid {
    fn with_spans(columns: Span, rows: Span) -> Grid {
        let cells = (columns.len * rows.len) as usize;
        let words_per_column = rows.len.div_ceil(u64::BITS).next_power_of_two();
        Grid {
            columns,
            rows,
            cells: vec![0; cells],
            constraints: vec![EdgeConstraint::default(); cells],
            column_shift: words_per_column.trailing_zeros(),
            frontier_rows: vec![0; (columns.len * words_per_column) as usize],
            far: HashMap::new(),
        }
    }

    /// The window's spans grown to hold `pos` and its four neighbours, as far as they
    /// may grow; the same spans when the window holds them already.
    fn spans_to_hold(&self, pos: Pos) -> (Span, Span) {
        (
            self.columns.grown_to_hold(pos.x),
            self.rows.grown_to_hold(pos.y),
        )
    }

    /// Where `pos` lies in the window, if it does.
    #[inline]
    fn locate(&self, pos: Pos) -> Option<WindowCell> {
        let column = self.columns.offset(pos.x)?;
        let row = self.rows.offset(pos.y)?;
        Some(WindowCell { column, row })
    }

    #[inline]
    fn index(&self, cell: WindowCell) -> usize {
        (cell.column * self.rows.len + cell.row) as usize
    }

    /// Looked up on every placement, check and scoring, so kept small enough to inline.
    #[inline]
    fn get(&self, pos: Pos) -> Content {
        self.content(pos, self.locate(pos))
    }

    /// What `pos` holds, given where [`Grid::locate`] found it.
    #[inline]
    fn content(&self, pos: Pos, cell: Option<WindowCell>) -> Content {
        let value = match cell {
            Some(cell) => self.cells[self.index(cell)],
            None => self.get_far(pos),
        };
        Content::unpack(value)
    }

    /// The stored value of a cell beyond the window; only contrived records get here.
    #[cold]
    #[inline(never)]
    fn get_far(&self, pos: Pos) -> u32 {
        self.far.get(&pos).copied().unwrap_or(0)
    }

    fn set(&mut self, pos: Pos, content: Content) {
        self.store(pos, self.locate(pos), content);
    }

    /// Sets what `pos` holds, given where [`Grid::locate`] found it.
    #[inline]
    fn store(&mut self, pos: Pos, cell: Option<WindowCell>, content: Content) {
        let value = content.pack();
        match cell {
            Some(cell) => {
                let index = self.index(cell);
                self.cells[index] = value;
                self.mark_frontier(cell, matches!(content, Content::Frontier(_)));
            }
            None if value == 0 => {
                self.far.remove(&pos);
            }
            None => {
                self.far.insert(pos, value);
            }
        }
    }

    /// Records the constraint of a frontier cell of the window; the map keeps none, as
    /// its frontier is only read through the board's list.
    #[inline]
    fn store_constraint(&mut self, cell: Option<WindowCell>, constraint: EdgeConstraint) {
        if let Some(cell) = cell {
            let index = self.index(cell);
            self.constraints[index] = constraint;
        }
    }

    /// Sets or clears the frontier bit of a cell of the window.
    #[inline]
    fn mark_frontier(&mut self, cell: WindowCell, on_frontier: bool) {
        let word = ((cell.column << self.column_shift) + cell.row / u64::BITS) as usize;
        let bit = 1u64 << (cell.row % u64::BITS);
        if on_frontier {
            self.frontier_rows[word] |= bit;
        } else {
            self.frontier_rows[word] &= !bit;
        }
    }

    /// Calls `visit` with every frontier cell of the window whose x lies in
    /// `first..=last` and that `table` finds a rotation for, by x, then y, with those
    /// rotations as bits 0 to 3.
    fn visit_fitting_cells(
        &self,
        (first, last): (i32, i32),
        table: &FitTable,
        mut visit: impl FnMut(Pos, u32),
    ) {
        let columns = self.columns;
        let column_of = |x: i32| (x.clamp(columns.first, columns.last()) - columns.first) as usize;
        let columns = column_of(first)..column_of(last) + 1;
        // Real games keep to windows of at most 64 rows, one word per column: spelt out
        // as a constant, that case computes a word's column and rows by counting.
        match self.column_shift {
            0 => self.visit_fitting_words(columns, 0, table, &mut visit),
            shift => self.visit_fitting_words(columns, shift, table, &mut visit),
        }
    }

    /// [`Grid::visit_fitting_cells`] for the columns `columns`, whose bitmaps take
    /// `1 << shift` words each.
    #[inline(always)]
    fn visit_fitting_words(
        &self,
        columns: std::ops::Range<usize>,
        shift: u32,
        table: &FitTable,
        visit: &mut impl FnMut(Pos, u32),
    ) {
        let words = &self.frontier_rows[columns.start << shift..columns.end << shift];
        // One pass over the columns' words, most of them empty: a loop per column cost
        // as much as the cells themselves, two of them per column on average.
        for (index, &word) in words.iter().enumerate() {
            let column = columns.start + (index >> shift);
            let x = self.columns.first + column as i32;
            let column_start = column * self.rows.len as usize;
            let first_row = (index & ((1 << shift) - 1)) * u64::BITS as usize;
            let mut rows = word;
            while rows != 0 {
                let row = first_row + rows.trailing_zeros() as usize;
                // Clear the lowest set bit: the rows come out in ascending order.
                rows &= rows - 1;
                let fits = table.rotations(self.constraints[column_start + row]);
                if fits != 0 {
                    visit(Pos::new(x, self.rows.first + row as i32), fits);
                }
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Board {
    placed: Vec<PlacedTile>,
    grid: Grid,
    frontier: Vec<FrontierCell>,
    /// The least and greatest x of the placed tiles: the frontier lies in the columns
    /// from one before the first to one after the last.
    min_x: i32,
    max_x: i32,
}

impl Board {
    /// An empty board with room for `tiles` tiles and the frontier around them.
    pub fn with_capacity(tiles: usize) -> Board {
        Board {
            placed: Vec::with_capacity(tiles),
            grid: Grid::with_spans(Span::around_origin(), Span::around_origin()),
            // Each tile adds at most two cells to the frontier net (four new, one filled).
            frontier: Vec::with_capacity(2 * tiles + 2),
            min_x: i32::MAX,
            max_x: i32::MIN,
        }
    }

    pub fn placed(&self) -> &[PlacedTile] {
        &self.placed
    }

    pub fn index_at(&self, pos: Pos) -> Option<usize> {
        match self.grid.get(pos) {
            Content::Tile(index) => Some(index as usize),
            _ => None,
        }
    }

    pub fn tile_at(&self, pos: Pos) -> Option<&PlacedTile> {
        self.index_at(pos).map(|i| &self.placed[i])
    }

    /// The frontier in the engine's own order, which [`crate::Game::legal_moves`] follows.
    pub fn frontier(&self) -> &[FrontierCell] {
        &self.frontier
    }

    pub fn frontier_cell(&self, pos: Pos) -> Option<&FrontierCell> {
        match self.grid.get(pos) {
            Content::Frontier(entry) => Some(&self.frontier[entry as usize]),
            _ => None,
        }
    }

    /// Whether every frontier cell lies in the window, which
    /// [`Board::visit_fitting_cells_in_order`] needs; only a contrived record's very long
    /// line of tiles takes one beyond it.
    pub fn frontier_in_window(&self) -> bool {
        self.grid.far.is_empty()
    }

    /// Calls `visit` with every frontier cell that `def` fits, in the order of the
    /// notation's `legal` lists (by x, then y), with the rotations that fit as bits 0 to
    /// 3. It reads the window's frontier bitmaps column by column, so it is only for a
    /// board whose frontier is in the window ([`Board::frontier_in_window`]).
    pub fn visit_fitting_cells_in_order(&self, def: &TileDef, visit: impl FnMut(Pos, u32)) {
        debug_assert!(
            self.frontier_in_window(),
            "the frontier is beyond the window"
        );
        if self.placed.is_empty() {
            return;
        }
        let columns = (self.min_x.saturating_sub(1), self.max_x.saturating_add(1));
        self.grid
            .visit_fitting_cells(columns, def.fit_table(), visit);
    }

    /// How many of the eight surrounding cells hold a tile.
    pub fn surrounding_tiles(&self, pos: Pos) -> u32 {
        pos.surrounding()
            .filter(|&p| self.index_at(p).is_some())
            .count() as u32
    }

    /// Puts a tile on an empty cell (the caller has checked that it may go there) and
    /// returns the index of the tile across each side (N, E, S, W), which the caller
    /// joins it to: the board looks at each neighbour anyway.
    pub fn place(
        &mut self,
        tile: TileId,
        pos: Pos,
        rotation: Rotation,
        node_base: u32,
    ) -> [Option<usize>; 4] {
        self.grow_to_hold(pos);
        let index = self.placed.len();
        self.placed.push(PlacedTile {
            tile,
            pos,
            rotation,
            node_base,
        });
        self.min_x = self.min_x.min(pos.x);
        self.max_x = self.max_x.max(pos.x);
        if let Content::Frontier(entry) = self.grid.get(pos) {
            self.remove_from_frontier(entry);
        }
        self.grid.set(pos, Content::Tile(index as u32));
        let def = tile.def();
        let mut neighbours = [None; 4];
        for side in Side::ALL {
            let neighbour = pos.step(side);
            let edge = def.edge(side, rotation);
            let cell = self.grid.locate(neighbour);
            match self.grid.content(neighbour, cell) {
                Content::Tile(index) => neighbours[side.index()] = Some(index as usize),
                Content::Frontier(entry) => {
                    let constraint = &mut self.frontier[entry as usize].constraint;
                    constraint.require(side.opposite(), edge);
                    let constraint = *constraint;
                    self.grid.store_constraint(cell, constraint);
                }
                Content::Empty => self.add_to_frontier(neighbour, cell, side.opposite(), edge),
            }
        }
        neighbours
    }

    /// Makes sure that `pos` and its neighbours have their place in the window, growing
    /// it if need be and if it may still grow.
    #[inline]
    fn grow_to_hold(&mut self, pos: Pos) {
        let spans = self.grid.spans_to_hold(pos);
        if spans != (self.grid.columns, self.grid.rows) {
            self.grow(spans);
        }
    }

    /// Moves the board into a window of `columns` by `rows`. A window costs 6 bytes a
    /// cell and is most of a live room's memory, so it follows the tiles rather than
    /// staying centred on the origin, and grows by a quarter at a time.
    #[inline(never)]
    fn grow(&mut self, (columns, rows): (Span, Span)) {
        let mut grown = Grid::with_spans(columns, rows);
        for (index, tile) in self.placed.iter().enumerate() {
            grown.set(tile.pos, Content::Tile(index as u32));
        }
        for (entry, frontier_cell) in self.frontier.iter().enumerate() {
            let cell = grown.locate(frontier_cell.pos);
            grown.store(frontier_cell.pos, cell, Content::Frontier(entry as u32));
            grown.store_constraint(cell, frontier_cell.constraint);
        }
        self.grid = grown;
    }

    /// Takes the frontier cell at `entry` out; the last cell takes its place. The caller
    /// puts a tile on the cell taken out, which clears its entry in the grid.
    fn remove_from_frontier(&mut self, entry: u32) {
        self.frontier.swap_remove(entry as usize);
        if let Some(moved) = self.frontier.get(entry as usize) {
            self.grid.set(moved.pos, Content::Frontier(entry));
        }
    }

    /// Adds the empty cell `pos`, found at `cell`, to the frontier: it must show `edge`
    /// on its side `side`.
    fn add_to_frontier(&mut self, pos: Pos, cell: Option<WindowCell>, side: Side, edge: EdgeKind) {
        let entry = self.frontier.len() as u32;
        let mut constraint = EdgeConstraint::default();
        constraint.require(side, edge);
        self.frontier.push(FrontierCell { pos, constraint });
        self.grid.store(pos, cell, Content::Frontier(entry));
        self.grid.store_constraint(cell, constraint);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tiles::catalogue;

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
            board.grid.far.is_empty(),
            "a real game's size never needs the map"
        );
    }

    #[test]
    fn a_line_beyond_the_largest_window_goes_on_in_the_map() {
        // A line of 600 tiles westwards from the origin: the window stops growing at its
        // widest and the tiles beyond it live in the map, with their frontier: the cells
        // north and south of each, and the one at the end of the line.
        let mut board = Board::with_capacity(0);
        let line = 600;
        for step in 0..line {
            board.place(tile("U"), Pos::new(-step, 0), Rotation::R0, 0);
        }
        let columns = board.grid.columns;
        assert!(columns.len > Span::MAX_LEN - 200, "{columns:?}");
        assert!(columns.len <= Span::MAX_LEN, "{columns:?}");
        // The tiles west of the window's first column are beyond it.
        let beyond = (line - 1 + columns.first) as usize;
        assert_eq!(board.grid.far.len(), 3 * beyond + 1);
        for step in 0..line {
            assert_eq!(board.index_at(Pos::new(-step, 0)), Some(step as usize));
            assert!(board.frontier_cell(Pos::new(-step, 1)).is_some());
        }
        assert!(board.frontier_cell(Pos::new(-line, 0)).is_some());
        assert_eq!(board.frontier().len(), 2 * line as usize + 2);
    }

    #[test]
    fn the_window_follows_the_tiles_rather_than_the_origin() {
        // Forty tiles eastwards and three rows: the window is a little more than the
        // rectangle they cover, not a square around the origin.
        let mut board = Board::with_capacity(0);
        for x in 0..40 {
            for y in 0..3 {
                board.place(tile("U"), Pos::new(x, y), Rotation::R0, 0);
            }
        }
        let (columns, rows) = (board.grid.columns, board.grid.rows);
        assert!(columns.first <= -1 && columns.last() >= 40, "{columns:?}");
        assert!(rows.first <= -1 && rows.last() >= 3, "{rows:?}");
        assert!(columns.len <= 42 * 5 / 4 + Span::MARGIN, "{columns:?}");
        assert!(rows.len <= 2 * Span::MARGIN + 5, "{rows:?}");
        assert!(board.grid.far.is_empty());
    }

    /// The frontier's cells sorted by x, then y, the obvious way.
    fn sorted_frontier(board: &Board) -> Vec<FrontierCell> {
        let mut cells = board.frontier().to_vec();
        cells.sort_unstable_by_key(|cell| (cell.pos.x, cell.pos.y));
        cells
    }

    /// The cells that `def` fits, with the rotations that do, as the board reads them
    /// in order and the obvious way.
    fn fitting_cells_both_ways(board: &Board, def: &TileDef) -> [Vec<(Pos, u32)>; 2] {
        let mut read = Vec::new();
        board.visit_fitting_cells_in_order(def, |pos, fits| read.push((pos, fits)));
        let sorted = sorted_frontier(board)
            .into_iter()
            .map(|cell| (cell.pos, cell.fitting_rotations(def)))
            .filter(|&(_, fits)| fits != 0)
            .collect();
        [read, sorted]
    }

    #[test]
    fn the_fitting_cells_in_order_are_the_frontier_sorted() {
        // A spiral-ish walk that fills cells already on the frontier, then a line that
        // makes the window grow again and again, past a column's first bitmap word.
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
        let line = (1..70).map(|step| (-1, -1 - step));
        let mut board = Board::with_capacity(0);
        for (step, (x, y)) in walk.into_iter().chain(line).enumerate() {
            board.place(tile("U"), Pos::new(x, y), Rotation::R0, 0);
            assert!(board.frontier_in_window());
            for (name, def) in catalogue().tiles() {
                let [read, sorted] = fitting_cells_both_ways(&board, def);
                assert_eq!(read, sorted, "step {step}, tile {name}");
            }
        }
        assert!(board.grid.rows.len > 64, "{:?}", board.grid.rows);
        assert!(board.grid.column_shift > 0);
    }

    #[test]
    fn a_frontier_beyond_the_window_is_said_to_be() {
        let mut board = Board::with_capacity(0);
        let mut step = 0;
        while board.frontier_in_window() {
            assert!(step < Span::MAX_LEN as i32, "step {step}");
            board.place(tile("U"), Pos::new(step, 0), Rotation::R0, 0);
            step += 1;
        }
        assert!(board.grid.columns.len > Span::MAX_LEN - 200);
    }
}
