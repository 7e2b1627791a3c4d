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

/// Where one player's points came from, by the kind of feature that paid them. An
/// abbot's recall counts for the monastery or garden it stood on. Over every event of a
/// game the five add up to the player's score.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct PointsByKind {
    pub road: u32,
    pub city: u32,
    pub monastery: u32,
    pub garden: u32,
    pub field: u32,
}

impl PointsByKind {
    /// The sum of the five kinds.
    pub fn total(&self) -> u32 {
        [
            self.road,
            self.city,
            self.monastery,
            self.garden,
            self.field,
        ]
        .into_iter()
        .fold(0, u32::saturating_add)
    }

    /// Adds what `events` paid `seat`.
    pub fn add_events(&mut self, seat: Seat, events: &[Event]) {
        for event in events {
            match event {
                Event::FeatureScored(score) if score.scorers.contains(&seat) => {
                    self.add(score.kind, score.points)
                }
                Event::AbbotRecalled { figure, points } if figure.player == seat => {
                    self.add(figure.spot.kind(), *points)
                }
                _ => {}
            }
        }
    }

    fn add(&mut self, kind: SegmentKind, points: u32) {
        let slot = match kind {
            SegmentKind::Road => &mut self.road,
            SegmentKind::City => &mut self.city,
            SegmentKind::Monastery => &mut self.monastery,
            SegmentKind::Garden => &mut self.garden,
            SegmentKind::Field => &mut self.field,
            // Rivers belong to nobody and never score.
            SegmentKind::River => return,
        };
        *slot = slot.saturating_add(points);
    }
}
