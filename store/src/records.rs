//! The rows and records the store takes and returns: players, lobbies and their seats,
//! moves, live games and their logs, and the history of finished matches.
//!
//! Plain data, with no behaviour beyond serde's: the crate root re-exports every type, so
//! callers name them `carcassonne_store::LobbyRow` and so on. How each is written and read
//! is the business of `queries/`, and how its values fit the columns of `convert`.

use crate::ratings::{RatedMatch, Rating, RatingChange, RatingPool};
use carcassonne_core::{Expansion, Move, PointsByKind, Rules};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use uuid::Uuid;

/// Milliseconds since the Unix epoch, UTC.
pub type Millis = i64;

/// A lasting player identity. The secret is only ever stored hashed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayerRow {
    pub id: Uuid,
    pub display_name: String,
    pub secret_hash: String,
    pub created_at: Millis,
}

/// A lobby's or game's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema), schema(as = StatusName))]
#[serde(rename_all = "snake_case")]
pub enum LobbyStatus {
    /// Taking seats.
    Open,
    Playing,
    Finished,
    Cancelled,
}

/// A lobby's time control. When a turn runs out, a bot plays the rest of it.
// Chosen at creation (JSON in `lobbies.clock`); the store keeps it, the server runs the
// clock and checks the bounds the schema states (`api/lobbies.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(utoipa::ToSchema),
    schema(as = TimeControlSchema)
)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TimeControl {
    /// Turns never run out.
    #[default]
    None,
    /// Each turn has `per_turn_ms`; an overrun is taken from the seat's `reserve_ms`.
    Turn {
        #[cfg_attr(feature = "schema", schema(minimum = 1000, maximum = 3600000))]
        per_turn_ms: u64,
        #[cfg_attr(feature = "schema", schema(minimum = 0, maximum = 86400000))]
        reserve_ms: u64,
    },
    /// Long turns (hours or days), no reserve.
    Correspondence {
        #[cfg_attr(feature = "schema", schema(minimum = 3600000, maximum = 2592000000u64))]
        per_turn_ms: u64,
    },
}

/// Who plays a seat.
// Stored in `seats.control`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema), schema(as = SeatControlName))]
#[serde(rename_all = "snake_case")]
pub enum SeatControl {
    /// The player who took the seat (or, for a seat a bot took in the lobby, that bot).
    #[default]
    Human,
    /// The player stopped playing; a bot plays the seat until the player takes it back.
    Abandoned,
    /// The player resigned; a bot plays the seat to the end, and the seat never wins.
    Resigned,
}

/// Who made a move (`moves.origin`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveOrigin {
    /// The seat's own player.
    #[default]
    Player,
    /// A bot, for a seat whose turn ran out.
    Timeout,
    /// A bot: one that holds the seat from the lobby on, or one playing an abandoned or
    /// resigned seat.
    Bot,
}

/// How a match ended.
// Stored in `matches.status`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema), schema(as = MatchStatusName))]
#[serde(rename_all = "snake_case")]
pub enum MatchStatus {
    /// Played to its last tile.
    #[default]
    Finished,
    /// Ended early, scored as it stood, because no human played any of its seats any more.
    Abandoned,
}

/// Who may write in a game's chat, chosen by the lobby's creator.
// Stored in `lobbies.chat_policy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ChatPolicy {
    /// Players and spectators.
    #[default]
    All,
    /// Only the seated players.
    Players,
    /// Nobody.
    Off,
}

/// Who may read a chat entry.
// Stored in `chat_entries.audience`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ChatAudience {
    /// Only the seated players.
    Players,
    /// Players and spectators.
    Everyone,
}

/// One entry of a game's chat: a message, a deletion's notice, a change of policy. The
/// server makes the entry's JSON and the store keeps it as text, never reading it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatEntryRow {
    /// The entry's number in its game's chat, from 1; its own count, not the game's `seq`.
    pub chat_seq: u64,
    pub audience: ChatAudience,
    pub created_at: Millis,
    /// The JSON text of the entry, as the server made it.
    pub entry: String,
}

/// What else a chat entry's write changes, in the same transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChatEffect {
    None,
    /// An operator's deletion: the text of entry `chat_seq` becomes `entry`, so that the
    /// deleted words are gone from the database too, not only hidden.
    Redact {
        chat_seq: u64,
        entry: String,
    },
    /// The lobby's chat policy becomes this one.
    Policy(ChatPolicy),
}

/// Which chat entries [`Store::chat_entries`](crate::Store::chat_entries) reads: of those
/// numbered after `after` and before `before` (each bound left out when `None`), the newest
/// `limit`, in ascending order. The newest 100 are `after: None, before: None, limit: 100`;
/// the page before entry `x`, `before: Some(x)`; what came after `x`, `after: Some(x)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChatRead {
    pub after: Option<u64>,
    pub before: Option<u64>,
    pub limit: u32,
    /// Whether the entries only the players may read are included too.
    pub players: bool,
}

/// A lobby, which becomes a game with the same id when it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LobbyRow {
    pub id: Uuid,
    pub name: String,
    pub public: bool,
    /// The SHA-256 (lowercase hex, see [`sha256_hex`](crate::sha256_hex)) of the invite
    /// code needed to join a private lobby; `None` for public ones. The code itself is
    /// never stored.
    pub invite_hash: Option<String>,
    pub seat_count: u8,
    pub rules: Rules,
    /// The time control, chosen at creation.
    pub clock: TimeControl,
    pub status: LobbyStatus,
    /// Set when the game starts: the stack is `deck::shuffled_stack(rules, seed)`.
    pub seed: Option<u64>,
    /// Set when the game starts: the salt of the deck commitment, 64 hex characters.
    pub deck_salt: Option<String>,
    /// The last update number written for this lobby or game.
    pub seq: u64,
    pub created_at: Millis,
    pub started_at: Option<Millis>,
    pub finished_at: Option<Millis>,
    /// Whether the game, when it ends, changes its players' ratings (chosen at creation).
    pub rated: bool,
    /// Who may write in the game's chat: chosen at creation, changed by its creator.
    pub chat_policy: ChatPolicy,
}

/// A taken seat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeatRow {
    pub seat: u8,
    pub display_name: String,
    /// The lasting identity that joined, if the player was not a guest.
    pub player_id: Option<Uuid>,
    /// SHA-256 of the seat token, hex.
    pub token_hash: String,
    /// The seat of the player who created the lobby (who may start or cancel it).
    pub creator: bool,
    pub joined_at: Millis,
    /// Who plays the seat now.
    pub control: SeatControl,
    /// The `seq` of the update that last changed `control` or `token_hash`; 0 when
    /// neither has changed since the seat was taken.
    pub control_seq: u64,
    /// The level name of the bot that holds this seat from the lobby on (e.g. `greedy`);
    /// `None` for a seat a person took. The store does not interpret it.
    pub bot: Option<String>,
}

/// One accepted command of a game, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MoveRow {
    pub seq: u64,
    pub seat: u8,
    /// The client-chosen command id, unique per game and seat.
    pub command_id: String,
    pub mv: Move,
    pub created_at: Millis,
    /// Who made the move.
    pub origin: MoveOrigin,
}

/// What [`Store::stored_at`](crate::Store::stored_at) reads: enough to settle a write whose
/// outcome was lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredAt {
    /// The game's stored `seq`: the update number of its last write.
    pub seq: u64,
    /// The node that owns the game (cluster mode); `None` when no node does.
    pub owner: Option<String>,
    /// Whether the owner's lease is live by the database's clock (`alive_until >= now()`).
    /// Always false without an owner.
    pub owner_alive: bool,
    /// The seat and command id of the move stored under the asked `seq`, if a move is.
    pub command_at: Option<(u8, String)>,
}

/// An unfinished lobby or game, everything needed to bring it back to life.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveGame {
    pub lobby: LobbyRow,
    pub seats: Vec<SeatRow>,
    /// In `seq` order.
    pub moves: Vec<MoveRow>,
    /// The newest [`LIVE_CHAT_ENTRIES`](crate::LIVE_CHAT_ENTRIES) entries of its chat,
    /// both audiences, in `chat_seq` order.
    pub chat: Vec<ChatEntryRow>,
    /// Who mutes whom in its chat: `(seat, author)`, by seat then author.
    pub chat_mutes: Vec<(u8, String)>,
}

/// What [`Store::game_log`](crate::Store::game_log) reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameLog {
    pub lobby: LobbyRow,
    pub seats: Vec<SeatRow>,
    /// In `seq` order.
    pub moves: Vec<MoveRow>,
    /// The stored events of every other update, by `seq`, in `seq` order: each the JSON
    /// text of an update's `events` array.
    pub events: Vec<(u64, String)>,
}

/// A seat's result in a finished match.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchSeat {
    pub seat: u8,
    pub display_name: String,
    pub player_id: Option<Uuid>,
    pub score: u32,
    pub winner: bool,
    /// Whether the seat's player resigned before the end.
    pub resigned: bool,
    /// Where the score came from, by kind of feature.
    #[serde(default)]
    pub points: PointsByKind,
}

/// Everything written when a game ends.
#[derive(Clone, Debug, PartialEq)]
pub struct FinishedMatch {
    pub id: Uuid,
    pub name: String,
    pub rules: Rules,
    pub started_at: Millis,
    pub finished_at: Millis,
    /// Played to the end, or abandoned.
    pub status: MatchStatus,
    /// Tiles placed, the start tile not counted.
    pub tiles_placed: u32,
    pub seats: Vec<MatchSeat>,
    /// Per-feature scoring (the engine's `FeatureScored` events), as JSON.
    pub breakdown: JsonText,
    /// The game record of `notation.md`, as JSON.
    pub record: JsonText,
    /// What the match does to its players' ratings; `None` for an unrated match.
    pub rating: Option<RatedMatch>,
}

/// A JSON document kept as its text until it is written. A game's record and breakdown
/// as `serde_json::Value` trees took thousands of small allocations each, all alive from
/// the game's last move until the group commit wrote them; as text each is one.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JsonText(Box<RawValue>);

impl JsonText {
    /// `value` as JSON text.
    pub fn of<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<JsonText> {
        serde_json::value::to_raw_value(value).map(JsonText)
    }

    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// The document as a tree.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(self.0.get()).expect("a RawValue holds valid JSON")
    }
}

/// The same document, whatever the spacing or the order of keys of either text.
impl PartialEq for JsonText {
    fn eq(&self, other: &JsonText) -> bool {
        self.as_str() == other.as_str() || self.to_value() == other.to_value()
    }
}

impl From<serde_json::Value> for JsonText {
    fn from(value: serde_json::Value) -> JsonText {
        JsonText::of(&value).expect("a Value serializes")
    }
}

/// A finished match as lists show it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchSummary {
    pub id: Uuid,
    pub name: String,
    pub rules: Rules,
    pub player_count: u8,
    pub started_at: Millis,
    pub finished_at: Millis,
    /// Played to the end, or abandoned.
    pub status: MatchStatus,
    pub tiles_placed: u32,
    pub seats: Vec<MatchSeat>,
    /// Whether the lobby was public; a private match is listed only on request.
    pub public: bool,
}

/// One match with its scoring breakdown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchDetail {
    pub summary: MatchSummary,
    pub breakdown: serde_json::Value,
}

/// Filters for the match list; every given filter must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MatchFilter {
    /// Matches this player identity took a seat in.
    pub player: Option<Uuid>,
    /// Matches this other player identity took a seat in too.
    pub opponent: Option<Uuid>,
    /// Finished at or after.
    pub from: Option<Millis>,
    /// Finished before.
    pub to: Option<Millis>,
    /// Matches whose rules include every one of these expansions.
    pub expansions: Vec<Expansion>,
    /// Matches with exactly this many seats.
    pub players: Option<u8>,
    /// Matches that ended so.
    pub status: Option<MatchStatus>,
    /// List private matches too (for a player's own history); public ones only when
    /// `false`.
    pub include_private: bool,
}

/// Where a page of matches ends: lists run newest first by `(finished_at, id)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchCursor {
    pub finished_at: Millis,
    pub id: Uuid,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MatchPage {
    pub items: Vec<MatchSummary>,
    /// Pass back to get the next page; `None` on the last page.
    pub next: Option<MatchCursor>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlayerStats {
    pub games: u64,
    pub wins: u64,
    /// Mean final score over the player's matches; 0 with no matches.
    pub average_score: f64,
    /// Every point of those matches, by the kind of feature that paid it.
    pub points: PointsByKind,
}

/// Two players' record in the matches they both played, each seen from `player`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct HeadToHead {
    pub games: u64,
    /// Matches `player` won (a shared win counts for both).
    pub wins: u64,
    pub opponent_wins: u64,
    /// Matches `player` ended with more points than the opponent.
    pub ahead: u64,
    pub opponent_ahead: u64,
    /// Mean final scores over those matches; 0 with none.
    pub average_score: f64,
    pub opponent_average_score: f64,
}

/// Where the next page of a leaderboard starts: the last entry's rating and player.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeaderboardCursor {
    pub rating: f64,
    pub player_id: Uuid,
}

/// A ranked player of a pool's leaderboard.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct LeaderboardEntry {
    pub player_id: Uuid,
    pub display_name: String,
    /// The conservative estimate `mu - 3 sigma` the board is ordered by.
    pub rating: f64,
    /// The Weng-Lin estimate and its uncertainty.
    pub skill: Rating,
    /// Rated games finished in the pool.
    pub games: u32,
}

/// A player's rating in one pool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct PlayerRating {
    pub pool: RatingPool,
    /// The conservative estimate `mu - 3 sigma`.
    pub rating: f64,
    pub skill: Rating,
    pub games: u32,
    /// Fewer rated games in the pool than the leaderboard needs to rank the player.
    pub provisional: bool,
    /// When the player's last rated match in the pool ended, in Unix milliseconds.
    pub updated_at: Millis,
}

/// A rated match in a player's rating history.
#[derive(Clone, Debug, PartialEq)]
pub struct RatedMatchEntry {
    pub match_id: Uuid,
    /// The match's number in the rating ledger: the history pages on it.
    pub rating_seq: i64,
    pub finished_at: Millis,
    pub change: RatingChange,
}

/// What a rebuild of the ratings went through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RatingsRebuilt {
    /// Rated matches replayed.
    pub matches: u64,
    /// Player ratings written (one per player and pool).
    pub ratings: u64,
}

/// Where a quick-play ticket stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TicketStatus {
    Waiting,
    /// Seated in a lobby the matchmaker formed.
    Matched,
    Cancelled,
    /// Nobody matched it before its expiry.
    Expired,
}

/// One player's wish for a quick-play game, and what became of it.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueTicket {
    pub id: Uuid,
    pub player_id: Uuid,
    /// SHA-256 of the ticket's token, hex.
    pub token_hash: String,
    /// The name the player's seat will carry.
    pub display_name: String,
    pub min_players: u8,
    pub max_players: u8,
    pub rules: Rules,
    pub clock: TimeControl,
    pub rated: bool,
    /// Only tickets with the same key are matched together.
    pub match_key: String,
    /// The player's mu in the ticket's pool when it was made.
    pub rating: f64,
    pub created_at: Millis,
    pub expires_at: Millis,
    pub status: TicketStatus,
    /// The lobby and seat of a matched ticket.
    pub lobby_id: Option<Uuid>,
    pub seat: Option<u8>,
}

/// A lobby the matchmaker formed: written with its seats in the round that took its
/// tickets, each ticket marked matched with its seat.
#[derive(Clone, Debug)]
pub struct QueuedLobby {
    pub lobby: LobbyRow,
    pub seats: Vec<SeatRow>,
    /// `(ticket, seat)` for every seat a ticket's player takes.
    pub tickets: Vec<(Uuid, u8)>,
}

/// How a matchmaking round forms lobbies from the waiting tickets (oldest first): a
/// plain function, so that the store need not know how players are matched.
pub type MatchPlanner = Box<dyn FnOnce(&[QueueTicket]) -> Vec<QueuedLobby> + Send>;

/// What one matchmaking round did.
#[derive(Debug, Default)]
pub struct QueueRound {
    /// False when another node's matchmaker was in a round, so this one did nothing.
    pub ran: bool,
    /// Waiting tickets whose time ran out, now expired.
    pub expired: u64,
    /// The lobbies formed, written with their seats, their tickets marked matched.
    pub lobbies: Vec<QueuedLobby>,
}
