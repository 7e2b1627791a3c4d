//! What playing a move did, so that a server can show players why scores moved.

use crate::figures::{PlacedFigure, Seat};
use crate::geometry::{Pos, Rotation};
use crate::tiles::{SegmentKind, TileId};
use serde::{Deserialize, Serialize};

/// One thing that happened during a move, in the order it happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// `player` drew `tile` and must place it.
    TileDrawn {
        #[cfg_attr(feature = "schema", schema(value_type = u8))]
        player: Seat,
        #[cfg_attr(feature = "schema", schema(value_type = String))]
        tile: TileId,
    },
    /// `tile` fitted nowhere and left the game; `player` draws again.
    TileDiscarded {
        #[cfg_attr(feature = "schema", schema(value_type = u8))]
        player: Seat,
        #[cfg_attr(feature = "schema", schema(value_type = String))]
        tile: TileId,
    },
    TilePlaced {
        #[cfg_attr(feature = "schema", schema(value_type = u8))]
        player: Seat,
        #[cfg_attr(feature = "schema", schema(value_type = String))]
        tile: TileId,
        pos: Pos,
        #[cfg_attr(
            feature = "schema",
            schema(value_type = u16, minimum = 0, maximum = 270, multiple_of = 90)
        )]
        rotation: Rotation,
    },
    FigurePlaced {
        figure: PlacedFigure,
    },
    /// The player placed no figure and took no other action.
    Passed {
        #[cfg_attr(feature = "schema", schema(value_type = u8))]
        player: Seat,
    },
    /// The abbot came home and scored its monastery or garden as it stood.
    AbbotRecalled {
        figure: PlacedFigure,
        points: u32,
    },
    /// A festival tile let the player take this figure back, unscored.
    FigureTakenBack {
        figure: PlacedFigure,
    },
    FeatureScored(FeatureScore),
    GameOver {
        final_scores: Vec<u32>,
        #[cfg_attr(feature = "schema", schema(value_type = Vec<u8>))]
        winners: Vec<Seat>,
    },
}

/// A scored feature: completed during the game, or unfinished (and every farm) at the end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(utoipa::ToSchema),
    schema(as = FeatureScoreSchema)
)]
pub struct FeatureScore {
    pub kind: SegmentKind,
    /// True when the feature was completed during the game; false for end-of-game scoring.
    pub completed: bool,
    /// What each scoring player earned.
    pub points: u32,
    /// The players with the most weight on the feature; all of them score `points`.
    #[cfg_attr(feature = "schema", schema(value_type = Vec<u8>))]
    pub scorers: Vec<Seat>,
    /// The cells the feature covers, each once.
    pub tiles: Vec<Pos>,
    /// The figures on it. After a completion during the game they are back in supply.
    pub figures: Vec<PlacedFigure>,
    /// For a farm: how many completed cities it supplies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_cities: Option<u32>,
    /// A road with an inn (Inns & Cathedrals): double when completed, nothing at the end.
    /// Written only when true.
    // So that the records of games without one read as before.
    #[serde(default, skip_serializing_if = "is_false")]
    pub inn: bool,
    /// A city with a cathedral: 3 per tile and pennant when completed, nothing at the end.
    /// Written only when true.
    #[serde(default, skip_serializing_if = "is_false")]
    pub cathedral: bool,
}

fn is_false(value: &bool) -> bool {
    !value
}
