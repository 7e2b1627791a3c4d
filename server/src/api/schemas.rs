//! The JSON shapes of the rules engine's types, for the OpenAPI document and the
//! WebSocket protocol's JSON Schema.
//!
//! The engine (`carcassonne-core`) knows nothing of OpenAPI, so these documentation types
//! describe how its values serialize: rules options, supplies, events, game records. They
//! are never built by the server; the tests validate real serialized values (a played
//! game's states, events and record) against the schemas generated from them, so they
//! cannot drift from what goes on the wire.

use serde::Serialize;
use utoipa::{PartialSchema, ToSchema};

/// An expansion's name in rules options.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExpansionName {
    River,
    Abbot,
    InnsAndCathedrals,
    Festival,
}

/// Rules options as `notation.md` writes them. Every field is optional; unknown fields and
/// repeated expansions are refused.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RulesSchema {
    /// Any subset of the expansions, each at most once. Default: none (the base game).
    #[schema(schema_with = expansion_list, nullable = false)]
    pub expansions: Option<Vec<ExpansionName>>,
    /// House rule: `false` means no farmers and fields never score. Default `true`.
    #[schema(nullable = false)]
    pub farmers: Option<bool>,
    /// Points per completed city a farm supplies: 1 to 10 (default 3; the first
    /// edition's house rule uses 4).
    #[schema(minimum = 1, maximum = 10, nullable = false)]
    pub farmer_city_points: Option<u32>,
    /// House rule for short games: the game ends after this many tiles are placed (the
    /// start tile not counted); at least 1 and at most the tiles in the stack.
    #[schema(minimum = 1)]
    pub tile_limit: Option<u32>,
}

/// A list of distinct expansion names.
fn expansion_list() -> utoipa::openapi::Array {
    utoipa::openapi::ArrayBuilder::new()
        .items(ExpansionName::schema())
        .unique_items(true)
        .description(Some(
            "Any subset of the expansions, each at most once. Default: none.",
        ))
        .build()
}

/// A figure: `follower` (a farmer on a field), `big` (Inns & Cathedrals) or `abbot`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FigureName {
    Follower,
    Big,
    Abbot,
}

/// The kind of a feature or segment.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FeatureKind {
    Road,
    City,
    Monastery,
    Garden,
    Field,
    River,
}

/// The figures a player has in hand.
#[derive(Serialize, ToSchema)]
pub struct SupplySchema {
    pub follower: u8,
    pub big: u8,
    pub abbot: u8,
}

/// A cell of the board: x grows east, y grows south.
#[derive(Serialize, ToSchema)]
pub struct PosSchema {
    pub x: i32,
    pub y: i32,
}

/// A figure on the board.
#[derive(Serialize, ToSchema)]
pub struct PlacedFigureSchema {
    pub player: u8,
    pub figure: FigureName,
    pub pos: PosSchema,
    /// A segment label of the tile at `pos` (`GET /api/tiles`).
    pub spot: String,
}

/// A scored feature: completed during the game, or unfinished (and every farm) at the end.
#[derive(Serialize, ToSchema)]
pub struct FeatureScoreSchema {
    pub kind: FeatureKind,
    /// `false` for end-of-game scoring.
    pub completed: bool,
    /// What each scoring seat earned.
    pub points: u32,
    /// Every seat that scored `points` (ties score in full).
    pub scorers: Vec<u8>,
    /// The cells of the feature.
    pub tiles: Vec<PosSchema>,
    /// The figures on it; sent home when completed during the game.
    pub figures: Vec<PlacedFigureSchema>,
    /// For a farm: how many completed cities it supplies.
    #[schema(required = false)]
    pub completed_cities: Option<u32>,
}

/// What happened, in order: lobby events, then the engine's own for moves.
#[derive(Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventSchema {
    SeatTaken {
        seat: u8,
        name: String,
    },
    SeatFreed {
        seat: u8,
    },
    /// For each new seat, the seat it had in the lobby.
    GameStarted {
        previous_seats: Vec<u8>,
    },
    LobbyCancelled {},
    /// `player` drew `tile` and must place it.
    TileDrawn {
        player: u8,
        tile: String,
    },
    /// `tile` fitted nowhere and left the game; `player` draws again.
    TileDiscarded {
        player: u8,
        tile: String,
    },
    TilePlaced {
        player: u8,
        tile: String,
        pos: PosSchema,
        #[schema(minimum = 0, maximum = 270, multiple_of = 90)]
        rotation: u16,
    },
    FigurePlaced {
        figure: PlacedFigureSchema,
    },
    Passed {
        player: u8,
    },
    AbbotRecalled {
        figure: PlacedFigureSchema,
        points: u32,
    },
    FigureTakenBack {
        figure: PlacedFigureSchema,
    },
    FeatureScored(FeatureScoreSchema),
    GameOver {
        final_scores: Vec<u32>,
        winners: Vec<u8>,
    },
}

/// One operation of an RFC 6902 JSON Patch.
#[derive(Serialize, ToSchema)]
pub struct PatchOperation {
    #[schema(inline)]
    pub op: PatchOp,
    /// A JSON Pointer into the public state.
    pub path: String,
    /// For `add`, `replace` and `test`.
    #[schema(required = false)]
    pub value: Option<serde_json::Value>,
    /// For `move` and `copy`.
    #[schema(required = false)]
    pub from: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PatchOp {
    Add,
    Remove,
    Replace,
    Move,
    Copy,
    Test,
}

/// A finished game in the notation of `notation.md`, with the server's extras (`id`,
/// `name`, `seats`, `started_at`, `finished_at`, and the deck's `seed`).
#[derive(Serialize, ToSchema)]
pub struct GameRecordSchema {
    pub rules: RulesSchema,
    pub players: u8,
    /// The tiles drawn after the start tile, in order.
    pub draw_order: Vec<String>,
    /// One entry per placed tile.
    pub turns: Vec<TurnRecordSchema>,
}

/// One placed tile and what its player did next.
#[derive(Serialize, ToSchema)]
pub struct TurnRecordSchema {
    pub tile: String,
    pub x: i32,
    pub y: i32,
    #[schema(minimum = 0, maximum = 270, multiple_of = 90)]
    pub rotation: u16,
    pub action: ActionSchema,
}

/// `"pass"`, `"recall_abbot"`, `{"place": FIGURE, "spot": SPOT}` or
/// `{"festival_return": {"x", "y", "spot"}}`.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum ActionSchema {
    Word(#[schema(inline)] ActionWord),
    Place {
        place: FigureName,
        spot: String,
    },
    FestivalReturn {
        #[schema(inline)]
        festival_return: FestivalTarget,
    },
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActionWord {
    Pass,
    RecallAbbot,
}

#[derive(Serialize, ToSchema)]
pub struct FestivalTarget {
    pub x: i32,
    pub y: i32,
    pub spot: String,
}

/// A lobby's or game's status.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusName {
    /// Taking seats.
    Open,
    Playing,
    Finished,
    Cancelled,
}

/// How a match ended.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MatchStatusName {
    /// Played to its last tile.
    Finished,
    /// Ended early, scored as it stood, when no human played any of its seats any more.
    Abandoned,
}

/// Which step of the turn the game waits for.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseName {
    PlaceTile,
    /// The tile is down: place a figure, pass, or take another action.
    Act,
    Over,
}
