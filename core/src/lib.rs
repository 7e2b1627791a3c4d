//! The Carcassonne rules engine.
//!
//! Pure: no IO, no clock, no global randomness. A [`Setup`] (rules, seats, stack) becomes
//! a [`Game`] through [`Game::new`]; the game changes only through [`Game::play`], which
//! validates a [`Move`] and either applies it, returning the [`Event`]s it caused, or
//! returns a [`PlayError`] and leaves the game exactly as it was. [`Game::legal_moves`]
//! lists every move `play` would accept.
//!
//! Rules: `docs/spec/rules.md` (base game, River, Abbot and gardens, Inns & Cathedrals,
//! The Festival, house rules). Tile data: [`tiles`], parsed from the binding `tiles.md`.
//! Notation and game records: [`record`].

pub mod board;
pub mod deck;
pub mod events;
mod features;
pub mod figures;
pub mod game;
pub mod geometry;
pub mod hidden;
#[cfg(test)]
mod recompute;
pub mod record;
pub mod river;
pub mod rules;
mod scoring;
pub mod tiles;

pub use board::PlacedTile;
pub use events::{Event, FeatureScore, PointsByKind};
pub use figures::{FigureKind, PlacedFigure, Seat, Supply};
pub use game::{Game, Move, Phase, PlayError, Setup, SetupError, Stack};
pub use geometry::{BySide, HalfSide, Pos, Rotation, Side};
pub use hidden::HiddenGame;
pub use rules::{Expansion, Rules};
pub use tiles::{EdgeKind, SegmentKind, Spot, TileDef, TileId, TileSet, catalogue};
