//! The JSON shapes of the rules engine's types, for the OpenAPI document and the
//! WebSocket protocol's JSON Schema.
//!
//! The engine (`carcassonne-core`) knows nothing of OpenAPI, so these documentation types
//! describe how its values serialize: rules options, supplies, events, game records. They
//! are never built by the server; the tests validate real serialized values (a played
//! game's states, events and record) against the schemas generated from them, so they
//! cannot drift from what goes on the wire.

// Described, never constructed: utoipa reads their shapes, nothing builds their values.
#![expect(dead_code, reason = "schema-only types")]

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
    /// A road with an inn: double when completed, nothing at the end. Sent only when true.
    #[schema(required = false)]
    pub inn: bool,
    /// A city with a cathedral: 3 per tile and pennant when completed, nothing at the end.
    /// Sent only when true.
    #[schema(required = false)]
    pub cathedral: bool,
}

/// What happened, in order: lobby events, then the engine's own for moves.
#[derive(Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventSchema {
    SeatTaken {
        seat: u8,
        name: String,
        /// The level of the bot that took the seat; `null` for a person.
        bot: Option<String>,
    },
    SeatFreed {
        seat: u8,
    },
    /// For each new seat, the seat it had in the lobby.
    GameStarted {
        previous_seats: Vec<u8>,
    },
    LobbyCancelled {
        #[schema(inline)]
        reason: CancelReasonName,
    },
    /// `seat` aborted the game before every seat had placed a tile: it is no match.
    GameAborted {
        seat: u8,
    },
    /// A bot plays `seat` to the end; it cannot win.
    SeatResigned {
        seat: u8,
    },
    /// `seat` timed out 3 turns in a row; a bot plays it until its owner says hello.
    SeatAbandoned {
        seat: u8,
    },
    /// The owner of the abandoned `seat` is back.
    SeatReclaimed {
        seat: u8,
    },
    /// `seat` got a new token (recovered with the player secret); the old one is void.
    SeatTokenReplaced {
        seat: u8,
    },
    /// No human seat was left to a human: the game ended as it stood.
    GameAbandoned {},
    /// The turn of `seat` ran out; a bot plays the rest of it.
    TurnTimedOut {
        seat: u8,
        timeouts_in_row: u32,
    },
    /// This update's move was made by a bot for `seat`.
    BotMoved {
        seat: u8,
        #[schema(inline)]
        reason: BotMoveReason,
    },
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

/// Why a lobby was cancelled.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CancelReasonName {
    /// The creator cancelled it or left.
    Creator,
    /// No change for the lobby idle time.
    Expired,
}

/// Why a bot made a move.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BotMoveReason {
    /// The turn ran out of time.
    Timeout,
    /// A bot holds the seat.
    Bot,
    /// The seat is abandoned.
    Abandoned,
    /// The seat resigned.
    Resigned,
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
/// `name`, `seats`, `status`, `started_at`, `finished_at`, and the deck's proof).
#[derive(Serialize, ToSchema)]
pub struct GameRecordSchema {
    pub rules: RulesSchema,
    pub players: u8,
    /// The tiles drawn after the start tile, in order.
    pub draw_order: Vec<String>,
    /// One entry per placed tile.
    pub turns: Vec<TurnRecordSchema>,
    pub id: uuid::Uuid,
    pub name: String,
    /// The players' display names, by seat.
    pub seats: Vec<String>,
    pub status: MatchStatusName,
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

/// Who plays a seat.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SeatControlName {
    /// Its owner.
    Human,
    /// A bot, after repeated timeouts, until the owner says hello again.
    Abandoned,
    /// A bot, to the end of the game; the seat cannot win.
    Resigned,
}

/// A lobby's time control. When a turn runs out, a bot plays the rest of it.
#[derive(Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TimeControlSchema {
    /// Turns never run out.
    None,
    /// Each turn has `per_turn_ms`; an overrun is taken from the seat's `reserve_ms`.
    Turn {
        #[schema(minimum = 1000, maximum = 3600000)]
        per_turn_ms: u64,
        #[schema(minimum = 0, maximum = 86400000)]
        reserve_ms: u64,
    },
    /// Long turns (hours or days), no reserve.
    Correspondence {
        #[schema(minimum = 3600000, maximum = 2592000000u64)]
        per_turn_ms: u64,
    },
}
