//! Moves as they travel over the wire: flat JSON objects that clients send as commands,
//! e.g. `{"type":"place_tile","x":1,"y":0,"rotation":90}`, and the legal moves the
//! player to move receives, grouped ([`LegalMoves`]).

use carcassonne_core::{FigureKind, Move, Pos, Rotation, Spot};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum WireMove {
    /// Place the drawn tile at `x,y` turned clockwise by `rotation` degrees.
    PlaceTile {
        x: i32,
        y: i32,
        #[schema(value_type = u16, minimum = 0, maximum = 270, multiple_of = 90)]
        rotation: Rotation,
    },
    /// Place a figure from the supply on a spot (segment label) of the tile just placed.
    PlaceFigure {
        figure: FigureKind,
        #[schema(value_type = String)]
        spot: Spot,
    },
    /// Place no figure.
    Pass,
    /// Take the abbot back and score its monastery or garden now.
    RecallAbbot,
    /// After a festival tile: take one of your figures back from `x,y` `spot`, unscored.
    FestivalReturn {
        x: i32,
        y: i32,
        #[schema(value_type = String)]
        spot: Spot,
    },
}

impl From<WireMove> for Move {
    fn from(wire: WireMove) -> Move {
        match wire {
            WireMove::PlaceTile { x, y, rotation } => Move::PlaceTile {
                pos: Pos::new(x, y),
                rotation,
            },
            WireMove::PlaceFigure { figure, spot } => Move::PlaceFigure { figure, spot },
            WireMove::Pass => Move::Pass,
            WireMove::RecallAbbot => Move::RecallAbbot,
            WireMove::FestivalReturn { x, y, spot } => Move::FestivalReturn {
                pos: Pos::new(x, y),
                spot,
            },
        }
    }
}

impl From<Move> for WireMove {
    fn from(mv: Move) -> WireMove {
        match mv {
            Move::PlaceTile { pos, rotation } => WireMove::PlaceTile {
                x: pos.x,
                y: pos.y,
                rotation,
            },
            Move::PlaceFigure { figure, spot } => WireMove::PlaceFigure { figure, spot },
            Move::Pass => WireMove::Pass,
            Move::RecallAbbot => WireMove::RecallAbbot,
            Move::FestivalReturn { pos, spot } => WireMove::FestivalReturn {
                x: pos.x,
                y: pos.y,
                spot,
            },
        }
    }
}

/// Every legal move now, grouped so that it stays short on the wire: a mid-game tile has
/// dozens of placements, which as flat moves would make up most of every update. Each
/// entry stands for the flat moves a command sends (`moves()` lists them).
///
/// `{"place_tile": [[1, 0, [0, 180]], [-1, 0, [90]]]}` in phase `place_tile`;
/// `{"pass": true, "place_figure": {"follower": ["c1", "f2"]}, "recall_abbot": true}` in
/// phase `act`. Fields with nothing legal are left out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct LegalMoves {
    /// Each cell where the drawn tile fits, as `[x, y, [rotations]]`, rotations ascending.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Vec<serde_json::Value>>, example = json!([[1, 0, [0, 180]]]))]
    pub place_tile: Vec<CellPlacements>,
    /// Whether the player may place no figure.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pass: bool,
    /// For each kind of figure in the supply, the spots of the placed tile it may take.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = BTreeMap<String, Vec<String>>, example = json!({"follower": ["c1", "f2"]}))]
    pub place_figure: BTreeMap<FigureKind, Vec<Spot>>,
    /// Whether the abbot may be recalled.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub recall_abbot: bool,
    /// After a festival tile: the figures that may be taken back, as `[x, y, spot]`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Vec<serde_json::Value>>, example = json!([[2, -1, "r1"]]))]
    pub festival_return: Vec<(i32, i32, Spot)>,
}

/// The rotations that fit at one cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CellPlacements {
    pub x: i32,
    pub y: i32,
    /// One bit per rotation, by quarter turns. A set of bits instead of a vector per
    /// cell: the mover's legal moves are grouped on every move, and allocating a vector
    /// for each of a few dozen cells was most of that. It also keeps them ascending.
    fits: u8,
}

impl CellPlacements {
    /// The rotations that fit, ascending.
    pub fn rotations(&self) -> impl Iterator<Item = Rotation> + '_ {
        Rotation::ALL
            .into_iter()
            .filter(|rotation| self.fits & bit(*rotation) != 0)
    }
}

fn bit(rotation: Rotation) -> u8 {
    1 << rotation.quarter_turns()
}

impl Serialize for CellPlacements {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (self.x, self.y, Rotations(self)).serialize(serializer)
    }
}

/// A cell's rotations as the JSON array of their degrees.
struct Rotations<'a>(&'a CellPlacements);

impl Serialize for Rotations<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.rotations())
    }
}

impl LegalMoves {
    /// Groups the engine's legal moves.
    pub fn of(moves: impl IntoIterator<Item = Move>) -> LegalMoves {
        let mut legal = LegalMoves::default();
        for mv in moves {
            legal.add(mv);
        }
        legal
    }

    /// The same moves at the length they hold: grouping grows the lists by doubling, up to
    /// twice what a room resting with them needs to keep.
    pub fn compacted(mut self) -> LegalMoves {
        self.place_tile.shrink_to_fit();
        self.festival_return.shrink_to_fit();
        self.place_figure.values_mut().for_each(Vec::shrink_to_fit);
        self
    }

    fn add(&mut self, mv: Move) {
        match mv {
            Move::PlaceTile { pos, rotation } => self.add_placement(pos, rotation),
            Move::PlaceFigure { figure, spot } => {
                self.place_figure.entry(figure).or_default().push(spot);
            }
            Move::Pass => self.pass = true,
            Move::RecallAbbot => self.recall_abbot = true,
            Move::FestivalReturn { pos, spot } => self.festival_return.push((pos.x, pos.y, spot)),
        }
    }

    /// The engine lists a cell's rotations together, so the cell is nearly always the
    /// last one; the search backwards covers any other order.
    fn add_placement(&mut self, pos: Pos, rotation: Rotation) {
        let cell = self
            .place_tile
            .iter_mut()
            .rev()
            .find(|cell| (cell.x, cell.y) == (pos.x, pos.y));
        match cell {
            Some(cell) => cell.fits |= bit(rotation),
            None => self.place_tile.push(CellPlacements {
                x: pos.x,
                y: pos.y,
                fits: bit(rotation),
            }),
        }
    }

    /// Every legal move as the flat move a command sends: how the tests check the
    /// grouping against the engine.
    #[cfg(test)]
    pub fn moves(&self) -> Vec<WireMove> {
        let placements = self.place_tile.iter().flat_map(|cell| {
            let (x, y) = (cell.x, cell.y);
            cell.rotations()
                .map(move |rotation| WireMove::PlaceTile { x, y, rotation })
        });
        let figures = self.place_figure.iter().flat_map(|(&figure, spots)| {
            spots
                .iter()
                .map(move |&spot| WireMove::PlaceFigure { figure, spot })
        });
        let returns = self
            .festival_return
            .iter()
            .map(|&(x, y, spot)| WireMove::FestivalReturn { x, y, spot });
        let pass = self.pass.then_some(WireMove::Pass);
        let recall = self.recall_abbot.then_some(WireMove::RecallAbbot);
        placements
            .chain(pass)
            .chain(figures)
            .chain(recall)
            .chain(returns)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use carcassonne_core::{Game, Rules, Setup, Stack};
    use std::collections::HashSet;

    /// Plays the first legal move until the game ends, checking at every step that the
    /// grouped moves stand for exactly the engine's legal moves.
    #[test]
    fn grouped_legal_moves_stand_for_exactly_the_engines() {
        let rules = Rules {
            expansions: carcassonne_core::Expansion::ALL.to_vec(),
            ..Rules::default()
        };
        let setup = Setup {
            rules,
            players: 3,
            stack: Stack::Seeded(11),
        };
        let (mut game, _) = Game::start(setup).unwrap();
        while game.current_tile().is_some() {
            let engine = game.legal_moves();
            let grouped = LegalMoves::of(engine.clone());
            let expanded: Vec<Move> = grouped.moves().into_iter().map(Move::from).collect();
            assert_eq!(expanded.len(), engine.len(), "no move lost or doubled");
            let engine: HashSet<Move> = engine.into_iter().collect();
            assert_eq!(expanded.iter().copied().collect::<HashSet<_>>(), engine);
            game.play(expanded[expanded.len() / 2]).unwrap();
        }
    }

    #[test]
    fn grouped_legal_moves_serialize_compactly() {
        let moves = [
            Move::PlaceTile {
                pos: Pos::new(1, 0),
                rotation: Rotation::R180,
            },
            Move::PlaceTile {
                pos: Pos::new(1, 0),
                rotation: Rotation::R0,
            },
            Move::PlaceTile {
                pos: Pos::new(-1, 0),
                rotation: Rotation::R90,
            },
        ];
        let json = serde_json::to_string(&LegalMoves::of(moves)).unwrap();
        assert_eq!(json, r#"{"place_tile":[[1,0,[0,180]],[-1,0,[90]]]}"#);
    }
}
