//! The JSON shape of the game record `GET /api/matches/{id}/record` serves, for the
//! OpenAPI document.
//!
//! Every other shape the server sends is described by its own type (the engine's and the
//! store's through their `schema` features). The record has none: the engine's
//! `GameRecord` keeps the server's extras in a free-form map, which
//! `rooms::outcome::MatchBuilder` fills, so this type says which extras it writes. The
//! tests of the end-to-end suite read real records back.

use carcassonne_core::Rules;
use carcassonne_core::record::TurnRecord;
use carcassonne_store::MatchStatus;
use serde::Serialize;
use utoipa::ToSchema;

/// A finished game in the notation of `notation.md`, with the server's extras (`id`,
/// `name`, `seats`, `status`, `started_at`, `finished_at`, and the deck's proof).
#[derive(Serialize, ToSchema)]
pub struct GameRecordSchema {
    pub rules: Rules,
    pub players: u8,
    /// The tiles drawn after the start tile, in order.
    pub draw_order: Vec<String>,
    /// One entry per placed tile.
    pub turns: Vec<TurnRecord>,
    pub id: uuid::Uuid,
    pub name: String,
    /// The players' display names, by seat.
    pub seats: Vec<String>,
    pub status: MatchStatus,
    /// RFC 3339.
    pub started_at: Option<String>,
    /// RFC 3339.
    pub finished_at: String,
    /// The deck's 64-bit seed: with `deck_salt`, it hashes to `deck_commitment`, and it
    /// shuffles to `draw_order` (`carcassonne-server replay` checks both).
    pub seed: u64,
    /// The commitment's 32-byte salt, as 64 lowercase hex digits.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub deck_salt: Option<String>,
    /// The SHA-256 published at the start of the game, as 64 lowercase hex digits.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub deck_commitment: Option<String>,
}
