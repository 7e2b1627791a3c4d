//! `GET /api/tiles`: the tile catalogue, so clients can draw tiles and name spots.

use axum::Json;
use carcassonne_core::{EdgeKind, SegmentKind, Side, TileDef, TileSet, catalogue};
use serde::Serialize;
use std::sync::LazyLock;
use utoipa::ToSchema;

#[derive(Debug, Serialize, ToSchema)]
pub struct TileView {
    pub id: String,
    #[schema(value_type = String)]
    pub set: TileSet,
    /// Copies in its set.
    pub count: u8,
    /// Edges at rotation 0, in the order N, E, S, W.
    #[schema(value_type = Vec<String>)]
    pub edges: [EdgeKind; 4],
    pub segments: Vec<SegmentView>,
    /// Carries the festival symbol.
    pub festival: bool,
}

/// A spot of a tile at rotation 0. Labels do not change with rotation.
#[derive(Debug, Serialize, ToSchema)]
pub struct SegmentView {
    /// The spot label: `c1`, `r2`, `f3`, `w1`, `m` or `g`.
    pub spot: String,
    #[schema(value_type = String)]
    pub kind: SegmentKind,
    /// Sides a road, city or river reaches: `N`, `E`, `S`, `W`.
    pub sides: Vec<String>,
    /// Half-sides a field reaches: `Nw Ne En Es Se Sw Ws Wn`; empty for an inner field.
    pub halves: Vec<String>,
    pub pennants: u8,
    pub inn: bool,
    pub cathedral: bool,
    /// For a field: the city spots it borders (these decide which cities a farm supplies).
    pub borders: Vec<String>,
}

fn tile_view(def: &TileDef) -> TileView {
    let segments = def
        .segments
        .iter()
        .map(|segment| SegmentView {
            spot: segment.spot.to_string(),
            kind: segment.kind(),
            sides: segment
                .sides()
                .map(|side: Side| side.letter().to_string())
                .collect(),
            halves: segment
                .halves()
                .map(|half| half.name().to_owned())
                .collect(),
            pennants: segment.pennants,
            inn: segment.inn,
            cathedral: segment.cathedral,
            borders: segment
                .borders
                .iter()
                .map(|&index| def.segments[index as usize].spot.to_string())
                .collect(),
        })
        .collect();
    TileView {
        id: def.id.clone(),
        set: def.set,
        count: def.count,
        edges: def.edges.0,
        segments,
        festival: def.festival,
    }
}

#[utoipa::path(get, path = "/api/tiles", tag = "tiles",
    responses((status = 200, body = Vec<TileView>, description = "Every tile type of tiles.md")))]
pub async fn list_tiles() -> Json<&'static [TileView]> {
    static TILES: LazyLock<Vec<TileView>> =
        LazyLock::new(|| catalogue().tiles().map(|(_, def)| tile_view(def)).collect());
    Json(&TILES)
}
