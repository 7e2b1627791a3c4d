//! `GET /api/tiles`: the tile catalogue, so clients can draw tiles and name spots.
//!
//! The catalogue is fixed for a given binary, so it is serialised and gzipped once
//! ([`Precompressed`]), with an ETag from its content. It is served `no-cache`: a browser
//! keeps it and asks at each load whether it is still current, and the answer is a
//! `304 Not Modified` without a body (the JSON is 40 kB, under 2 kB gzipped). A `max-age`
//! would save that one revalidation, but for its whole length after an upgrade a browser
//! could draw with the old catalogue next to new modules (which are revalidated at every
//! load, see `crate::web`); since the ETag is the content's, an upgrade that leaves the
//! catalogue alone still answers 304.

use crate::web::Precompressed;
use axum::http::HeaderMap;
use axum::response::Response;
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
pub async fn list_tiles(headers: HeaderMap) -> Response {
    CATALOGUE.respond(&headers, "application/json", "no-cache")
}

/// The catalogue as JSON, with its gzipped copy and ETag.
static CATALOGUE: LazyLock<Precompressed> = LazyLock::new(|| {
    let tiles: Vec<TileView> = catalogue().tiles().map(|(_, def)| tile_view(def)).collect();
    Precompressed::new(serde_json::to_vec(&tiles).expect("the catalogue serialises"))
});

/// The catalogue's size as JSON, and gzipped.
#[cfg(test)]
fn catalogue_bytes() -> (usize, usize) {
    (CATALOGUE.len(), CATALOGUE.encoded_len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::header::{CONTENT_ENCODING, ETAG};
    use axum::http::{HeaderValue, StatusCode};

    #[tokio::test]
    async fn the_catalogue_is_gzipped_and_answers_304_to_its_etag() {
        let (plain, gzipped) = catalogue_bytes();
        println!("GET /api/tiles: {plain} bytes, {gzipped} gzipped");
        assert!(gzipped * 4 < plain, "{gzipped} of {plain} bytes");
        let mut headers = HeaderMap::new();
        headers.insert("accept-encoding", HeaderValue::from_static("gzip"));
        let first = list_tiles(headers.clone()).await;
        assert_eq!(first.status(), StatusCode::OK);
        assert_eq!(first.headers()[CONTENT_ENCODING], "gzip");
        assert_eq!(first.headers()["cache-control"], "no-cache");
        headers.insert("if-none-match", first.headers()[ETAG].clone());
        let again = list_tiles(headers).await;
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        let body = axum::body::to_bytes(again.into_body(), usize::MAX).await;
        assert!(body.unwrap().is_empty());
    }
}
