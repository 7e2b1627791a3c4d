//! Figures (followers, big meeples, abbots) and each player's supply.

use crate::geometry::Pos;
use crate::rules::{Expansion, Rules};
use crate::tiles::Spot;
use serde::{Deserialize, Serialize};

/// A seat at the table: 0 plays first, then 1, and so on.
pub type Seat = u8;

/// A figure: `follower` (a farmer on a field), `big` (Inns & Cathedrals) or `abbot`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema), schema(as = FigureName))]
#[serde(rename_all = "snake_case")]
pub enum FigureKind {
    /// A normal meeple: thief, knight, monk, or farmer when on a field.
    Follower,
    /// The Inns & Cathedrals big meeple, which counts as two followers in a majority.
    Big,
    /// The abbot: monasteries and gardens only.
    Abbot,
}

impl FigureKind {
    pub const ALL: [FigureKind; 3] = [FigureKind::Follower, FigureKind::Big, FigureKind::Abbot];

    /// How much the figure weighs when majorities are counted.
    pub fn weight(self) -> u32 {
        match self {
            FigureKind::Big => 2,
            FigureKind::Follower | FigureKind::Abbot => 1,
        }
    }
}

/// A figure with its owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Figure {
    pub player: Seat,
    pub kind: FigureKind,
}

/// A figure on the board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(utoipa::ToSchema),
    schema(as = PlacedFigureSchema)
)]
pub struct PlacedFigure {
    #[cfg_attr(feature = "schema", schema(value_type = u8))]
    pub player: Seat,
    pub figure: FigureKind,
    pub pos: Pos,
    /// A segment label of the tile at `pos`.
    #[cfg_attr(feature = "schema", schema(value_type = String))]
    pub spot: Spot,
}

/// The figures a player has in hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema), schema(as = SupplySchema))]
pub struct Supply {
    pub follower: u8,
    pub big: u8,
    pub abbot: u8,
}

impl Supply {
    pub const FOLLOWERS: u8 = 7;

    /// What every player starts with under `rules`.
    pub fn initial(rules: &Rules) -> Supply {
        Supply {
            follower: Supply::FOLLOWERS,
            big: rules.has(Expansion::InnsAndCathedrals) as u8,
            abbot: rules.has(Expansion::Abbot) as u8,
        }
    }

    pub fn count(&self, kind: FigureKind) -> u8 {
        match kind {
            FigureKind::Follower => self.follower,
            FigureKind::Big => self.big,
            FigureKind::Abbot => self.abbot,
        }
    }

    pub(crate) fn slot(&mut self, kind: FigureKind) -> &mut u8 {
        match kind {
            FigureKind::Follower => &mut self.follower,
            FigureKind::Big => &mut self.big,
            FigureKind::Abbot => &mut self.abbot,
        }
    }
}
