//! The game: a validated [`Setup`] becomes a [`Game`], which only changes through
//! [`Game::play`] (validates, then applies or returns a typed error and changes nothing)
//! or [`Game::play_unchecked`] (for trusted replays); [`Game::play_into`] is `play` for
//! callers that keep one event vector for many moves.
//!
//! A turn has two steps, each one [`Move`]: place the drawn tile, then one action (place
//! a figure, pass, recall the abbot, or take a figure back with a festival tile). After
//! the action every feature the tile completed is scored, the next player draws, and a
//! tile that fits nowhere is discarded and replaced at once.

use crate::board::{Board, PlacedTile};
use crate::deck::{shuffled_stack, start_tile};
use crate::events::Event;
use crate::features::{Features, NodeId};
use crate::figures::{Figure, FigureKind, PlacedFigure, Seat, Supply};
use crate::geometry::{HalfSide, Pos, Rotation, Side};
use crate::river::{River, RiverProblem};
use crate::rules::{Expansion, Rules, RulesError};
use crate::tiles::{SegmentKind, Spot, TileId};
use serde::{Deserialize, Serialize};

/// Where the draw stack comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stack {
    /// The whole stack for the rules, shuffled by the stable shuffle of [`crate::deck`].
    Seeded(u64),
    /// Exactly these tiles, in this order (a game record's `draw_order`).
    Fixed(Vec<TileId>),
}

/// Everything needed to start a game.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setup {
    pub rules: Rules,
    pub players: u8,
    pub stack: Stack,
}

/// Why a [`Setup`] cannot start a game.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    #[error("a game with these rules needs 2 to {max} players, not {players}")]
    PlayerCount { players: u8, max: u8 },
    /// A rules option is out of its bounds (see [`crate::rules`]).
    #[error("{0}")]
    Rules(#[from] RulesError),
}

impl SetupError {
    /// A stable, machine-readable name for the error, for protocols and logs.
    pub fn code(&self) -> &'static str {
        match self {
            SetupError::PlayerCount { .. } => "player_count",
            SetupError::Rules(error) => error.code(),
        }
    }
}

/// One step of a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Move {
    /// Place the drawn tile.
    PlaceTile { pos: Pos, rotation: Rotation },
    /// Place a figure from the supply on a spot of the tile just placed.
    PlaceFigure { figure: FigureKind, spot: Spot },
    /// Place no figure.
    Pass,
    /// Take the abbot back and score its monastery or garden as it stands.
    RecallAbbot,
    /// After placing a festival tile: take one of one's own figures back, unscored.
    FestivalReturn { pos: Pos, spot: Spot },
}

/// Which step of the turn the game waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema), schema(as = PhaseName))]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    PlaceTile,
    /// The tile is down; the player places a figure, passes, or takes another action.
    Act,
    Over,
}

/// Why a move was refused. The game is unchanged whenever one of these is returned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlayError {
    #[error("the game is over")]
    GameOver,
    #[error("the tile is already placed this turn: place a figure, pass or take another action")]
    TileAlreadyPlaced,
    #[error("place the drawn tile first")]
    TileNotPlaced,
    #[error("cell {pos} already holds a tile")]
    CellOccupied { pos: Pos },
    #[error("a tile at {pos} would not share an edge with any placed tile")]
    NotAdjacent { pos: Pos },
    #[error("at {pos} rotation {rotation} the {side:?} edge does not match its neighbour")]
    EdgeMismatch {
        pos: Pos,
        rotation: Rotation,
        side: Side,
    },
    #[error("the river has no open end left to continue")]
    RiverClosed,
    #[error(
        "a river tile must continue the river: its river edge must join the open end at {cell} from the {side:?}"
    )]
    RiverNotContinued { cell: Pos, side: Side },
    #[error("this river bend would turn the same way as the bend just before it (a U-turn)")]
    RiverUTurn,
    #[error("tile {tile} has no spot {spot}")]
    UnknownSpot { tile: TileId, spot: Spot },
    #[error("a {figure:?} may not stand on spot {spot}")]
    SpotNotAllowed { figure: FigureKind, spot: Spot },
    #[error("the feature of spot {spot} already holds a figure")]
    FeatureOccupied { spot: Spot },
    #[error("no {figure:?} left in the supply")]
    NoFigureInSupply { figure: FigureKind },
    #[error("the player's abbot is not on the board")]
    AbbotNotOnBoard,
    #[error("only a festival tile lets a player take a figure back")]
    NotAFestivalTile,
    #[error("the player has no figure at {pos} {spot}")]
    NoOwnFigureThere { pos: Pos, spot: Spot },
}

impl PlayError {
    /// A stable, machine-readable name for the error, for protocols and logs.
    pub fn code(&self) -> &'static str {
        match self {
            PlayError::GameOver => "game_over",
            PlayError::TileAlreadyPlaced => "tile_already_placed",
            PlayError::TileNotPlaced => "tile_not_placed",
            PlayError::CellOccupied { .. } => "cell_occupied",
            PlayError::NotAdjacent { .. } => "not_adjacent",
            PlayError::EdgeMismatch { .. } => "edge_mismatch",
            PlayError::RiverClosed => "river_closed",
            PlayError::RiverNotContinued { .. } => "river_not_continued",
            PlayError::RiverUTurn => "river_u_turn",
            PlayError::UnknownSpot { .. } => "unknown_spot",
            PlayError::SpotNotAllowed { .. } => "spot_not_allowed",
            PlayError::FeatureOccupied { .. } => "feature_occupied",
            PlayError::NoFigureInSupply { .. } => "no_figure_in_supply",
            PlayError::AbbotNotOnBoard => "abbot_not_on_board",
            PlayError::NotAFestivalTile => "not_a_festival_tile",
            PlayError::NoOwnFigureThere { .. } => "no_own_figure_there",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Turn {
    PlaceTile { player: Seat, tile: TileId },
    Act { player: Seat, placed: usize },
    Over,
}

/// A game in progress or finished. Fields are private: it changes only through moves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Game {
    pub(crate) rules: Rules,
    players: u8,
    stack: Vec<TileId>,
    drawn: usize,
    pub(crate) board: Board,
    pub(crate) features: Features,
    pub(crate) scores: Vec<u32>,
    pub(crate) supplies: Vec<Supply>,
    /// The node each player's abbot stands on.
    pub(crate) abbots: Vec<Option<NodeId>>,
    turn: Turn,
    tiles_placed: u32,
    discarded: Vec<TileId>,
    river: River,
    /// The monasteries and gardens that score once surrounded and are not surrounded
    /// yet, as their cell and node, so that a placement looks at the few of them near
    /// it rather than at the nine cells around it (see `score_completed_features`).
    pub(crate) open_centres: Vec<(Pos, NodeId)>,
}

impl Game {
    /// The most tiles [`Game::new`] reserves room for: every tile of every expansion.
    const RESERVED_TILES: usize = 128;

    /// Starts a game: the start tile at `0,0`, seat 0 to draw. The events of that first
    /// draw are dropped; [`Game::start`] returns them.
    pub fn new(setup: Setup) -> Result<Game, SetupError> {
        Game::start(setup).map(|(game, _)| game)
    }

    /// Starts a game as [`Game::new`] does and returns the events of the opening draw:
    /// [`Event::TileDrawn`] after any [`Event::TileDiscarded`], or, when no tile can be
    /// placed at all (an empty or unplayable fixed stack), the end-of-game scoring and
    /// [`Event::GameOver`].
    pub fn start(setup: Setup) -> Result<(Game, Vec<Event>), SetupError> {
        setup.rules.validate()?;
        let max = setup.rules.max_players();
        if !(2..=max).contains(&setup.players) {
            return Err(SetupError::PlayerCount {
                players: setup.players,
                max,
            });
        }
        let mut game = Game::before_first_draw(setup);
        let mut events = Vec::new();
        game.draw_for(0, &mut events);
        Ok((game, events))
    }

    /// A checked setup with the start tile placed and nothing drawn yet.
    fn before_first_draw(setup: Setup) -> Game {
        let mut rules = setup.rules;
        // One canonical order, so that equal rules compare equal whatever order the
        // options listed them in.
        rules.expansions.sort();
        let stack = match setup.stack {
            Stack::Seeded(seed) => shuffled_stack(&rules, seed),
            Stack::Fixed(tiles) => tiles,
        };
        let players = setup.players as usize;
        let start = start_tile(&rules);
        // Room for the whole game up front, but no more than a long real game needs, so
        // that a record listing a million tiles cannot make us reserve memory for them.
        // The feature graph gets exactly a node per segment of those tiles: it is a
        // third of a live room's memory, and a vector grown by doubling near the end of
        // a game would hold up to twice what it needs.
        let tiles = (stack.len() + 1).min(Game::RESERVED_TILES);
        let segments = std::iter::once(&start)
            .chain(&stack)
            .take(tiles)
            .map(|tile| tile.def().segments.len())
            .sum();
        let mut game = Game {
            supplies: vec![Supply::initial(&rules); players],
            rules,
            players: setup.players,
            stack,
            drawn: 0,
            board: Board::with_capacity(tiles),
            features: Features::with_capacity(segments),
            scores: vec![0; players],
            abbots: vec![None; players],
            turn: Turn::Over,
            tiles_placed: 0,
            discarded: Vec::new(),
            river: River::from_start(start.def()),
            open_centres: Vec::new(),
        };
        game.put_tile(start, Pos::ORIGIN, Rotation::R0);
        game
    }

    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    pub fn players(&self) -> u8 {
        self.players
    }

    pub fn phase(&self) -> Phase {
        match self.turn {
            Turn::PlaceTile { .. } => Phase::PlaceTile,
            Turn::Act { .. } => Phase::Act,
            Turn::Over => Phase::Over,
        }
    }

    /// The player to move, until the game is over.
    pub fn current_player(&self) -> Option<Seat> {
        match self.turn {
            Turn::PlaceTile { player, .. } | Turn::Act { player, .. } => Some(player),
            Turn::Over => None,
        }
    }

    /// The tile drawn this turn (placed already in the [`Phase::Act`] step).
    pub fn current_tile(&self) -> Option<TileId> {
        match self.turn {
            Turn::PlaceTile { tile, .. } => Some(tile),
            Turn::Act { placed, .. } => Some(self.board.placed()[placed].tile),
            Turn::Over => None,
        }
    }

    /// The tile placed this turn, while its player still has to act.
    pub fn placed_this_turn(&self) -> Option<&PlacedTile> {
        match self.turn {
            Turn::Act { placed, .. } => Some(&self.board.placed()[placed]),
            _ => None,
        }
    }

    /// Every tile on the board, in the order they were placed (the start tile first).
    pub fn tiles(&self) -> &[PlacedTile] {
        self.board.placed()
    }

    pub fn tile_at(&self, pos: Pos) -> Option<&PlacedTile> {
        self.board.tile_at(pos)
    }

    pub fn scores(&self) -> &[u32] {
        &self.scores
    }

    pub fn supply(&self, player: Seat) -> Supply {
        self.supplies[player as usize]
    }

    /// Tiles still in the stack, not counting the one drawn this turn.
    pub fn tiles_left(&self) -> usize {
        self.stack.len() - self.drawn
    }

    /// The tiles still to be drawn, in draw order. Crate-private: the order is the one
    /// secret of a game (see [`crate::hidden`]).
    pub(crate) fn remaining_stack(&self) -> &[TileId] {
        &self.stack[self.drawn..]
    }

    /// Replaces the tiles still to be drawn by `tiles`, keeping every tile drawn so far.
    /// The caller passes a reordering of [`Game::remaining_stack`], so that the game stays
    /// one the same setup could have dealt; the count is kept in any case by the caller.
    pub(crate) fn replace_remaining_stack(&mut self, tiles: impl IntoIterator<Item = TileId>) {
        self.stack.truncate(self.drawn);
        self.stack.extend(tiles);
    }

    /// Tiles placed so far, the start tile not counted.
    pub fn tiles_placed(&self) -> u32 {
        self.tiles_placed
    }

    /// Tiles that fitted nowhere when drawn, in draw order.
    pub fn discarded(&self) -> &[TileId] {
        &self.discarded
    }

    /// The cell where the next river tile must go, while the river is open.
    pub fn river_next_cell(&self) -> Option<Pos> {
        self.river.next_cell()
    }

    /// Every figure on the board, in placement order of their tiles.
    pub fn figures(&self) -> Vec<PlacedFigure> {
        (0..self.features.len() as NodeId)
            .filter_map(|node| self.placed_figure(node))
            .collect()
    }

    /// The players with the highest total, once the game is over.
    pub fn winners(&self) -> Option<Vec<Seat>> {
        (self.turn == Turn::Over).then(|| leaders(&self.scores))
    }

    /// Every legal move now: placements of the drawn tile, or the actions after placing.
    pub fn legal_moves(&self) -> Vec<Move> {
        match self.turn {
            Turn::PlaceTile { tile, .. } => {
                self.collect_placements(tile, |pos, rotation| Move::PlaceTile { pos, rotation })
            }
            Turn::Act { .. } => self.legal_actions(),
            Turn::Over => Vec::new(),
        }
    }

    /// Every cell and rotation where the drawn tile may go (empty outside that step).
    pub fn legal_placements(&self) -> Vec<(Pos, Rotation)> {
        let Turn::PlaceTile { tile, .. } = self.turn else {
            return Vec::new();
        };
        self.collect_placements(tile, |pos, rotation| (pos, rotation))
    }

    /// Every legal placement of `tile`, each turned into a `T` by `make`.
    fn collect_placements<T>(&self, tile: TileId, make: impl Fn(Pos, Rotation) -> T) -> Vec<T> {
        // Growing the vector step by step was a fifth of a whole game. Random base
        // games average 0.9 legal placements per frontier cell and only 2 % of turns
        // have more than one per cell plus 8, so this is nearly always one allocation.
        let mut placements = Vec::with_capacity(self.board.frontier().len() + 8);
        self.for_each_placement(tile, |pos, rotation| {
            placements.push(make(pos, rotation));
            false
        });
        placements
    }

    /// Every legal placement of the drawn tile in the order of the notation's `legal`
    /// lists (by x, then y, then rotation), each turned into a `T` by `make`; empty
    /// outside the placement step. The board reads its frontier in that order (see
    /// [`Board::visit_fitting_cells_in_order`]), so that no turn sorts anything.
    pub(crate) fn sorted_placements<T>(&self, make: impl Fn(Pos, Rotation) -> T) -> Vec<T> {
        let Turn::PlaceTile { tile, .. } = self.turn else {
            return Vec::new();
        };
        let def = tile.def();
        if def.is_river() {
            // A river tile fits one cell only, and its rotations come out in order.
            return self.collect_placements(tile, make);
        }
        if !self.board.frontier_in_window() {
            return self.placements_sorted_afresh(tile, make);
        }
        let mut placements = Vec::with_capacity(self.board.frontier().len() + 8);
        self.board.visit_fitting_cells_in_order(def, |pos, fits| {
            // A cell's rotations go in at once, with one capacity check rather than one
            // per placement.
            let rotations = Rotation::set(fits).iter();
            placements.extend(rotations.map(|&rotation| make(pos, rotation)));
        });
        placements
    }

    /// [`Game::sorted_placements`] by sorting the legal placements, for the contrived
    /// boards whose frontier goes beyond the window.
    #[cold]
    fn placements_sorted_afresh<T>(
        &self,
        tile: TileId,
        make: impl Fn(Pos, Rotation) -> T,
    ) -> Vec<T> {
        let mut placements = self.collect_placements(tile, |pos, rotation| (pos, rotation));
        placements.sort_unstable_by_key(|&(pos, rotation)| (pos.x, pos.y, rotation));
        placements
            .into_iter()
            .map(|(pos, rotation)| make(pos, rotation))
            .collect()
    }

    /// Checks a move without playing it.
    pub fn check(&self, mv: Move) -> Result<(), PlayError> {
        match (self.turn, mv) {
            (Turn::Over, _) => Err(PlayError::GameOver),
            (Turn::PlaceTile { tile, .. }, Move::PlaceTile { pos, rotation }) => self
                .placement_problem(tile, pos, rotation)
                .map_or(Ok(()), Err),
            (Turn::PlaceTile { .. }, _) => Err(PlayError::TileNotPlaced),
            (Turn::Act { .. }, Move::PlaceTile { .. }) => Err(PlayError::TileAlreadyPlaced),
            (Turn::Act { player, placed }, action) => self.action_problem(player, placed, action),
        }
    }

    /// Checks a move as [`Game::check`] does and says whether playing it would end the
    /// game, without playing it. A server writes a game's last move differently from
    /// the others (with the match's result), so it must know this before the write, and
    /// finding it out by playing a copy of the game would cost a clone of the board and
    /// the features on every move.
    pub fn check_ends_game(&self, mv: Move) -> Result<bool, PlayError> {
        self.check(mv)?;
        Ok(match self.turn {
            // A placement always leaves the action of the same turn to play.
            Turn::PlaceTile { .. } | Turn::Over => false,
            Turn::Act { .. } => self.no_tile_to_draw(),
        })
    }

    /// Whether the draw after this turn's action would end the game: the tile limit is
    /// reached or no tile left in the stack fits anywhere. An action changes neither the
    /// board, the river nor the count of placed tiles, so the board as it stands answers
    /// for the board the draw will see (see [`Game::draw_for`]).
    fn no_tile_to_draw(&self) -> bool {
        let limit_reached = self
            .rules
            .tile_limit
            .is_some_and(|limit| self.tiles_placed >= limit);
        limit_reached
            || !self.stack[self.drawn..]
                .iter()
                .any(|&tile| self.has_placement(tile))
    }

    /// Plays a move if it is legal; otherwise returns why not and changes nothing.
    pub fn play(&mut self, mv: Move) -> Result<Vec<Event>, PlayError> {
        let mut events = Vec::new();
        self.play_into(mv, &mut events)?;
        Ok(events)
    }

    /// Plays a move as [`Game::play`] does, but appends its events to `events`, so that a
    /// caller playing many moves (a replay) reuses one vector instead of allocating one
    /// per move. On an error nothing is appended and the game is unchanged.
    pub fn play_into(&mut self, mv: Move, events: &mut Vec<Event>) -> Result<(), PlayError> {
        self.check(mv)?;
        self.apply(mv, events);
        Ok(())
    }

    /// Plays a move known to be legal (a replay of moves the engine accepted before).
    /// An illegal move leaves the game in an unspecified but memory-safe state.
    pub fn play_unchecked(&mut self, mv: Move) -> Vec<Event> {
        debug_assert_eq!(
            self.check(mv),
            Ok(()),
            "play_unchecked given an illegal move"
        );
        let mut events = Vec::new();
        self.apply(mv, &mut events);
        events
    }

    /// Applies a checked move, appending the events it causes.
    fn apply(&mut self, mv: Move, events: &mut Vec<Event>) {
        match (self.turn, mv) {
            (Turn::PlaceTile { player, tile }, Move::PlaceTile { pos, rotation }) => {
                let placed = self.put_tile(tile, pos, rotation);
                self.tiles_placed += 1;
                self.turn = Turn::Act { player, placed };
                events.push(Event::TilePlaced {
                    player,
                    tile,
                    pos,
                    rotation,
                });
            }
            (Turn::Act { player, placed }, action) => {
                self.act(player, action, events);
                self.score_completed_features(placed, events);
                self.draw_for((player + 1) % self.players, events);
            }
            _ => {}
        }
    }

    /// Calls `found` for each legal placement of `tile` until it returns true.
    fn for_each_placement(&self, tile: TileId, mut found: impl FnMut(Pos, Rotation) -> bool) {
        let def = tile.def();
        if def.is_river() {
            // A river tile can only go at the open end of the river.
            let Some(cell) = self.river.next_cell() else {
                return;
            };
            for rotation in Rotation::ALL {
                if self.placement_problem(tile, cell, rotation).is_none() && found(cell, rotation) {
                    return;
                }
            }
            return;
        }
        for cell in self.board.frontier() {
            let mut fits = cell.fitting_rotations(def);
            while fits != 0 {
                let rotation = Rotation::ALL[fits.trailing_zeros() as usize];
                if found(cell.pos, rotation) {
                    return;
                }
                // Clear the lowest set bit: the rotations come out in ascending order.
                fits &= fits - 1;
            }
        }
    }

    fn has_placement(&self, tile: TileId) -> bool {
        let mut any = false;
        self.for_each_placement(tile, |_, _| {
            any = true;
            true
        });
        any
    }

    fn placement_problem(&self, tile: TileId, pos: Pos, rotation: Rotation) -> Option<PlayError> {
        // A frontier cell is empty: only a refused move looks the cell up again.
        let Some(cell) = self.board.frontier_cell(pos) else {
            return Some(match self.board.index_at(pos) {
                Some(_) => PlayError::CellOccupied { pos },
                None => PlayError::NotAdjacent { pos },
            });
        };
        let def = tile.def();
        if let Some(side) = cell.mismatched_side(def, rotation) {
            return Some(PlayError::EdgeMismatch {
                pos,
                rotation,
                side,
            });
        }
        if !def.is_river() {
            return None;
        }
        self.river
            .problem(def, pos, rotation)
            .map(|problem| match problem {
                RiverProblem::Closed => PlayError::RiverClosed,
                RiverProblem::NotAtOpenEnd { cell, side } => {
                    PlayError::RiverNotContinued { cell, side }
                }
                RiverProblem::UTurn => PlayError::RiverUTurn,
            })
    }

    /// Puts a tile down and joins its segments to the features across its sides.
    fn put_tile(&mut self, tile: TileId, pos: Pos, rotation: Rotation) -> usize {
        let def = tile.def();
        let index = self.board.placed().len();
        let node_base = self.features.add_tile(index as u32, def);
        let neighbours = self.board.place(tile, pos, rotation, node_base);
        self.connect_to_neighbours(index, neighbours);
        if let Some(node) = self.scoring_centre(index) {
            self.open_centres.push((pos, node));
        }
        if def.is_river() && index > 0 {
            self.river.advance(def, pos, rotation);
        }
        index
    }

    /// Joins the segments of the tile at `index` to those of its `neighbours`, the
    /// indices of the tiles across its sides N, E, S, W.
    fn connect_to_neighbours(&mut self, index: usize, neighbours: [Option<usize>; 4]) {
        let mine = self.board.placed()[index];
        let def = mine.def();
        for side in Side::ALL {
            let Some(theirs) = neighbours[side.index()].map(|i| self.board.placed()[i]) else {
                continue;
            };
            let their_def = theirs.def();
            let across = side.opposite();
            if let (Some(a), Some(b)) = (
                def.segment_on_side(side, mine.rotation),
                their_def.segment_on_side(across, theirs.rotation),
            ) && def.segments[a].kind() != SegmentKind::River
            {
                let (a, b) = (mine.node_base + a as u32, theirs.node_base + b as u32);
                self.features.connect(a, b, true);
            }
            for half in HalfSide::of_side(side) {
                if let (Some(a), Some(b)) = (
                    def.field_on_half(half, mine.rotation),
                    their_def.field_on_half(half.facing(), theirs.rotation),
                ) {
                    let (a, b) = (mine.node_base + a as u32, theirs.node_base + b as u32);
                    self.features.connect(a, b, false);
                }
            }
        }
    }

    fn action_problem(&self, player: Seat, placed: usize, action: Move) -> Result<(), PlayError> {
        match action {
            Move::PlaceTile { .. } => Err(PlayError::TileAlreadyPlaced),
            Move::Pass => Ok(()),
            Move::PlaceFigure { figure, spot } => self.figure_problem(player, placed, figure, spot),
            Move::RecallAbbot => match self.abbots[player as usize] {
                Some(_) => Ok(()),
                None => Err(PlayError::AbbotNotOnBoard),
            },
            Move::FestivalReturn { pos, spot } => self.festival_problem(player, placed, pos, spot),
        }
    }

    fn figure_problem(
        &self,
        player: Seat,
        placed: usize,
        figure: FigureKind,
        spot: Spot,
    ) -> Result<(), PlayError> {
        let tile = self.board.placed()[placed];
        let segment = tile
            .def()
            .segment_index(spot)
            .ok_or(PlayError::UnknownSpot {
                tile: tile.tile,
                spot,
            })?;
        if !self.may_stand_on(figure, spot.kind()) {
            return Err(PlayError::SpotNotAllowed { figure, spot });
        }
        if self.supplies[player as usize].count(figure) == 0 {
            return Err(PlayError::NoFigureInSupply { figure });
        }
        let node = tile.node_base + segment as u32;
        if self.features.stats(node).figures > 0 {
            return Err(PlayError::FeatureOccupied { spot });
        }
        Ok(())
    }

    fn may_stand_on(&self, figure: FigureKind, kind: SegmentKind) -> bool {
        match (figure, kind) {
            (_, SegmentKind::River) => false,
            (FigureKind::Abbot, SegmentKind::Monastery | SegmentKind::Garden) => {
                self.rules.has(Expansion::Abbot)
            }
            (FigureKind::Abbot, _) | (_, SegmentKind::Garden) => false,
            (_, SegmentKind::Field) => self.rules.farmers,
            (_, SegmentKind::Road | SegmentKind::City | SegmentKind::Monastery) => true,
        }
    }

    fn festival_allowed(&self, placed: usize) -> bool {
        self.rules.has(Expansion::Festival) && self.board.placed()[placed].def().festival
    }

    fn festival_problem(
        &self,
        player: Seat,
        placed: usize,
        pos: Pos,
        spot: Spot,
    ) -> Result<(), PlayError> {
        if !self.festival_allowed(placed) {
            return Err(PlayError::NotAFestivalTile);
        }
        match self
            .node_at(pos, spot)
            .and_then(|node| self.features.node(node).figure)
        {
            Some(figure) if figure.player == player => Ok(()),
            _ => Err(PlayError::NoOwnFigureThere { pos, spot }),
        }
    }

    /// Every action open to `player` after placing a tile.
    fn legal_actions(&self) -> Vec<Move> {
        let Turn::Act { player, placed } = self.turn else {
            return Vec::new();
        };
        let tile = self.board.placed()[placed];
        let supply = self.supplies[player as usize];
        let mut moves = Vec::with_capacity(16);
        moves.push(Move::Pass);
        for (index, segment) in tile.def().segments.iter().enumerate() {
            // The same tests as `figure_problem`, but the feature is looked up once per
            // segment, and only when some figure in the supply may stand there.
            let mut figures = FigureKind::ALL.into_iter().filter(|&figure| {
                supply.count(figure) > 0 && self.may_stand_on(figure, segment.kind())
            });
            let Some(first) = figures.next() else {
                continue;
            };
            if self.features.stats(tile.node_base + index as u32).figures > 0 {
                continue;
            }
            let spot = segment.spot;
            moves.extend(
                std::iter::once(first)
                    .chain(figures)
                    .map(|figure| Move::PlaceFigure { figure, spot }),
            );
        }
        if self.abbots[player as usize].is_some() {
            moves.push(Move::RecallAbbot);
        }
        if self.festival_allowed(placed) {
            let own = self.figures().into_iter().filter(|f| f.player == player);
            moves.extend(own.map(|f| Move::FestivalReturn {
                pos: f.pos,
                spot: f.spot,
            }));
        }
        moves
    }

    fn act(&mut self, player: Seat, action: Move, events: &mut Vec<Event>) {
        match action {
            Move::Pass | Move::PlaceTile { .. } => events.push(Event::Passed { player }),
            Move::PlaceFigure { figure, spot } => {
                let placed = self
                    .placed_this_turn()
                    .copied()
                    .expect("acting on a placed tile");
                let segment = placed.def().segment_index(spot).expect("checked spot");
                let node = placed.node_base + segment as u32;
                *self.supplies[player as usize].slot(figure) -= 1;
                self.features.set_figure(
                    node,
                    Some(Figure {
                        player,
                        kind: figure,
                    }),
                );
                if figure == FigureKind::Abbot {
                    self.abbots[player as usize] = Some(node);
                }
                let figure = self.placed_figure(node).expect("just placed");
                events.push(Event::FigurePlaced { figure });
            }
            Move::RecallAbbot => {
                let node = self.abbots[player as usize].expect("checked abbot");
                let pos = self.node_pos(node);
                let points = 1 + self.board.surrounding_tiles(pos);
                let score = &mut self.scores[player as usize];
                *score = score.saturating_add(points);
                let figure = self.return_home(node);
                events.push(Event::AbbotRecalled { figure, points });
            }
            Move::FestivalReturn { pos, spot } => {
                let node = self.node_at(pos, spot).expect("checked figure");
                let figure = self.return_home(node);
                events.push(Event::FigureTakenBack { figure });
            }
        }
    }

    /// Takes the figure on `node` back to its owner's supply.
    pub(crate) fn return_home(&mut self, node: NodeId) -> PlacedFigure {
        let figure = self.placed_figure(node).expect("a figure to return");
        self.features.set_figure(node, None);
        *self.supplies[figure.player as usize].slot(figure.figure) += 1;
        if figure.figure == FigureKind::Abbot {
            self.abbots[figure.player as usize] = None;
        }
        figure
    }

    /// Draws for `player` until a tile fits somewhere, or ends the game. What ends it
    /// here must agree with [`Game::no_tile_to_draw`].
    fn draw_for(&mut self, player: Seat, events: &mut Vec<Event>) {
        loop {
            let limit_reached = self
                .rules
                .tile_limit
                .is_some_and(|limit| self.tiles_placed >= limit);
            if limit_reached || self.drawn == self.stack.len() {
                self.turn = Turn::Over;
                self.score_end_of_game(events);
                return;
            }
            let tile = self.stack[self.drawn];
            self.drawn += 1;
            if self.has_placement(tile) {
                self.turn = Turn::PlaceTile { player, tile };
                events.push(Event::TileDrawn { player, tile });
                return;
            }
            self.discarded.push(tile);
            events.push(Event::TileDiscarded { player, tile });
        }
    }

    pub(crate) fn node_pos(&self, node: NodeId) -> Pos {
        self.board.placed()[self.features.node(node).tile as usize].pos
    }

    fn node_at(&self, pos: Pos, spot: Spot) -> Option<NodeId> {
        let tile = self.board.tile_at(pos)?;
        let segment = tile.def().segment_index(spot)?;
        Some(tile.node_base + segment as u32)
    }

    pub(crate) fn placed_figure(&self, node: NodeId) -> Option<PlacedFigure> {
        let info = self.features.node(node);
        let figure = info.figure?;
        let tile = self.board.placed()[info.tile as usize];
        Some(PlacedFigure {
            player: figure.player,
            figure: figure.kind,
            pos: tile.pos,
            spot: tile.def().segments[info.segment as usize].spot,
        })
    }
}

/// Every seat with the highest value; all of them when everyone is tied.
pub(crate) fn leaders(values: &[u32]) -> Vec<Seat> {
    let best = values.iter().copied().max().unwrap_or(0);
    (0..values.len() as Seat)
        .filter(|&seat| values[seat as usize] == best)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The placements in the order the notation lists them, the slow obvious way.
    fn sorted_the_obvious_way(game: &Game) -> Vec<(Pos, Rotation)> {
        let mut placements = game.legal_placements();
        placements.sort_unstable_by_key(|&(pos, rotation)| (pos.x, pos.y, rotation));
        placements
    }

    /// Plays seeded games with simple move choices and checks every placement step.
    fn check_sorted_placements_through_games(rules: Rules) {
        for seed in 0..6 {
            let setup = Setup {
                rules: rules.clone(),
                players: 2,
                stack: Stack::Seeded(seed),
            };
            let mut game = Game::new(setup).unwrap();
            let mut step = seed as usize;
            while game.phase() != Phase::Over {
                if game.phase() == Phase::PlaceTile {
                    let sorted = game.sorted_placements(|pos, r| (pos, r));
                    assert_eq!(sorted, sorted_the_obvious_way(&game), "seed {seed}");
                }
                let moves = game.legal_moves();
                step = step.wrapping_mul(31).wrapping_add(7);
                game.play(moves[step % moves.len()]).unwrap();
            }
        }
    }

    #[test]
    fn sorted_placements_are_the_legal_placements_in_notation_order() {
        check_sorted_placements_through_games(Rules::default());
        check_sorted_placements_through_games(Rules {
            expansions: Expansion::ALL.to_vec(),
            ..Rules::default()
        });
    }

    #[test]
    fn sorted_placements_stay_sorted_beyond_the_window() {
        // A road of 600 tiles eastwards from the start tile takes the frontier beyond
        // the largest window (513 columns), where the board cannot read it in order.
        let straight_road = TileId::from_name("U").unwrap();
        let setup = Setup {
            rules: Rules::default(),
            players: 2,
            stack: Stack::Fixed(vec![straight_road; 600]),
        };
        let mut game = Game::new(setup).unwrap();
        while game.phase() != Phase::Over {
            let sorted = game.sorted_placements(|pos, r| (pos, r));
            assert_eq!(sorted, sorted_the_obvious_way(&game));
            let (pos, rotation) = *sorted.last().unwrap();
            game.play(Move::PlaceTile { pos, rotation }).unwrap();
            game.play(Move::Pass).unwrap();
        }
        assert!(!game.board.frontier_in_window());
        assert_eq!(game.tiles_placed(), 600);
    }
}
