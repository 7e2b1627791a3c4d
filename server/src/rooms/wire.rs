//! Moves as they travel over the wire: flat JSON objects that clients send as commands
//! and receive as legal moves, e.g. `{"type":"place_tile","x":1,"y":0,"rotation":90}`.

use crate::api::schemas::FigureName;
use carcassonne_core::{FigureKind, Move, Pos, Rotation, Spot};
use serde::{Deserialize, Serialize};
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
        #[schema(value_type = FigureName)]
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
