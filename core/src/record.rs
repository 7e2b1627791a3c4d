//! Game records (`notation.md`) and replaying them through the engine.
//!
//! A record is the setup (`rules`, `players`, `draw_order`) plus one entry per placed
//! tile. Fields a server adds (`seed`, `started_at`, seat names...) are kept in
//! [`GameRecord::extra`] and ignored by [`replay`], except the deck proof.
//!
//! # The deck proof
//!
//! A server commits to its shuffle when a game starts (see [`crate::deck`]) and writes
//! three optional fields into the record: `seed` (the `u64` of the shuffle),
//! `deck_salt` and `deck_commitment` (64 lowercase hex digits each). When a record has a
//! `deck_commitment`, [`replay`] checks it before the first turn: `seed` and `deck_salt`
//! must be there and well formed ([`DeckProofError::is_malformed`]), they must hash to
//! the commitment, and `draw_order` must be exactly the stack the seed shuffles for the
//! record's rules. Then the report says `"deck_verified": true`; without a commitment
//! the field is left out.

use crate::deck::{deck_commitment, shuffled_stack};
use crate::events::Event;
use crate::figures::{FigureKind, Seat};
use crate::game::{Game, Move, Setup, SetupError, Stack};
use crate::geometry::{Pos, Rotation};
use crate::rules::Rules;
use crate::tiles::{Spot, TileId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// A whole game as `notation.md` writes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GameRecord {
    #[serde(default)]
    pub rules: Rules,
    pub players: u8,
    pub draw_order: Vec<TileId>,
    pub turns: Vec<TurnRecord>,
    /// Any other fields, kept as they were.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One placed tile and what its player did next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(utoipa::ToSchema),
    schema(as = TurnRecordSchema)
)]
pub struct TurnRecord {
    #[cfg_attr(feature = "schema", schema(value_type = String))]
    pub tile: TileId,
    pub x: i32,
    pub y: i32,
    #[cfg_attr(
        feature = "schema",
        schema(value_type = u16, minimum = 0, maximum = 270, multiple_of = 90)
    )]
    pub rotation: Rotation,
    pub action: Action,
}

impl TurnRecord {
    /// The two engine moves of this turn: the placement, then the action.
    pub fn moves(&self) -> [Move; 2] {
        let place = Move::PlaceTile {
            pos: Pos::new(self.x, self.y),
            rotation: self.rotation,
        };
        [place, self.action.to_move()]
    }
}

/// The `action` of a turn, in the notation's shapes: `"pass"`, `"recall_abbot"`,
/// `{"place": FIGURE, "spot": SPOT}` or `{"festival_return": {"x", "y", "spot"}}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Pass,
    RecallAbbot,
    Place { figure: FigureKind, spot: Spot },
    FestivalReturn { pos: Pos, spot: Spot },
}

impl Action {
    pub fn to_move(self) -> Move {
        match self {
            Action::Pass => Move::Pass,
            Action::RecallAbbot => Move::RecallAbbot,
            Action::Place { figure, spot } => Move::PlaceFigure { figure, spot },
            Action::FestivalReturn { pos, spot } => Move::FestivalReturn { pos, spot },
        }
    }

    /// The action a second-step move stands for; `None` for a tile placement.
    pub fn from_move(mv: Move) -> Option<Action> {
        match mv {
            Move::PlaceTile { .. } => None,
            Move::Pass => Some(Action::Pass),
            Move::RecallAbbot => Some(Action::RecallAbbot),
            Move::PlaceFigure { figure, spot } => Some(Action::Place { figure, spot }),
            Move::FestivalReturn { pos, spot } => Some(Action::FestivalReturn { pos, spot }),
        }
    }

    fn to_value(self) -> Value {
        match self {
            Action::Pass => json!("pass"),
            Action::RecallAbbot => json!("recall_abbot"),
            Action::Place { figure, spot } => json!({ "place": figure, "spot": spot }),
            Action::FestivalReturn { pos, spot } => {
                json!({ "festival_return": { "x": pos.x, "y": pos.y, "spot": spot } })
            }
        }
    }

    fn from_value(value: Value) -> Result<Action, String> {
        match value {
            Value::String(word) => match word.as_str() {
                "pass" => Ok(Action::Pass),
                "recall_abbot" => Ok(Action::RecallAbbot),
                _ => Err(format!(
                    "unknown action {word:?}: expected \"pass\" or \"recall_abbot\""
                )),
            },
            Value::Object(mut object) => {
                if let Some(target) = object.remove("festival_return") {
                    let target: ReturnTarget = serde_json::from_value(target)
                        .map_err(|e| format!("festival_return: {e}"))?;
                    return Ok(Action::FestivalReturn {
                        pos: Pos::new(target.x, target.y),
                        spot: target.spot,
                    });
                }
                let placed: PlaceAction = serde_json::from_value(Value::Object(object))
                    .map_err(|e| format!("action: {e}"))?;
                Ok(Action::Place {
                    figure: placed.place,
                    spot: placed.spot,
                })
            }
            other => Err(format!("action must be a string or an object, not {other}")),
        }
    }
}

#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
struct ReturnTarget {
    x: i32,
    y: i32,
    #[cfg_attr(feature = "schema", schema(value_type = String))]
    spot: Spot,
}

#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
struct PlaceAction {
    place: FigureKind,
    #[cfg_attr(feature = "schema", schema(value_type = String))]
    spot: Spot,
}

/// The schema of [`Action`]'s hand-written serialization: the word, or the object
/// [`Action::from_value`] reads.
#[cfg(feature = "schema")]
impl utoipa::PartialSchema for Action {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
        let word = ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(["pass", "recall_abbot"]));
        let festival_return = ObjectBuilder::new()
            .property("festival_return", ReturnTarget::schema())
            .required("festival_return");
        OneOfBuilder::new()
            .item(word)
            .item(PlaceAction::schema())
            .item(festival_return)
            .description(Some(concat!(
                r#"`"pass"`, `"recall_abbot"`, `{"place": FIGURE, "spot": SPOT}` or"#,
                "\n",
                r#"`{"festival_return": {"x", "y", "spot"}}`."#,
            )))
            .into()
    }
}

#[cfg(feature = "schema")]
impl utoipa::ToSchema for Action {
    fn name() -> std::borrow::Cow<'static, str> {
        "ActionSchema".into()
    }

    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        // The place object refers to the figure's schema.
        <PlaceAction as utoipa::ToSchema>::schemas(schemas);
    }
}

impl Serialize for Action {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Action::from_value(Value::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

/// What replaying a record found, turn by turn, in the replay command's shape.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Replay {
    pub ok: bool,
    pub turns: Vec<TurnReport>,
    pub discarded: Vec<TileId>,
    pub final_scores: Vec<u32>,
    /// `Some(true)` when the record's deck proof checked out; `None` when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deck_verified: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TurnReport {
    pub player: Seat,
    pub tile: TileId,
    pub scores: Vec<u32>,
    /// Every legal placement before the tile was placed, as `[x, y, rotation]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub legal: Option<Vec<[i32; 3]>>,
}

/// Why a record could not be replayed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// The setup itself is impossible (a malformed record).
    #[error("{0}")]
    Setup(#[from] SetupError),
    /// The deck proof is malformed, or does not prove the record's draw order.
    #[error("{0}")]
    Deck(#[from] DeckProofError),
    /// Turn `turn` (0-based) breaks a rule, or the record stops before the game ends.
    #[error("turn {turn}: {message}")]
    IllegalTurn { turn: usize, message: String },
}

/// Why a record's deck proof (`seed`, `deck_salt`, `deck_commitment`) fails.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeckProofError {
    #[error("the record has a deck_commitment but no {field}")]
    Missing { field: &'static str },
    #[error("{field} must be {expected}")]
    Malformed {
        field: &'static str,
        expected: &'static str,
    },
    #[error("the revealed seed and deck_salt do not hash to the deck_commitment")]
    CommitmentMismatch,
    #[error(
        "the draw_order is not the stack the revealed seed shuffles: they differ first at index {index}"
    )]
    DrawOrderMismatch { index: usize },
}

impl DeckProofError {
    /// True when the fields are missing or ill-formed (a malformed record), false when
    /// they are well formed but prove something else (a record that does not check out).
    pub fn is_malformed(&self) -> bool {
        matches!(
            self,
            DeckProofError::Missing { .. } | DeckProofError::Malformed { .. }
        )
    }
}

/// The revealed seed and salt of a game, and the commitment published at its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeckProof {
    pub seed: u64,
    pub salt: [u8; 32],
    pub commitment: [u8; 32],
}

impl DeckProof {
    /// The proof for a game shuffled by `seed`, committed to with `salt`.
    pub fn new(seed: u64, salt: [u8; 32]) -> DeckProof {
        DeckProof {
            seed,
            salt,
            commitment: deck_commitment(seed, &salt),
        }
    }

    /// Writes `seed`, `deck_salt` and `deck_commitment` into a record's extra fields.
    pub fn write_to(&self, extra: &mut Map<String, Value>) {
        extra.insert("seed".into(), json!(self.seed));
        extra.insert("deck_salt".into(), json!(self.salt_hex()));
        extra.insert("deck_commitment".into(), json!(self.commitment_hex()));
    }

    /// The salt as a record and a lobby write it: 64 lowercase hex digits.
    pub fn salt_hex(&self) -> String {
        hex::encode(self.salt)
    }

    /// The commitment as a record and a lobby write it: 64 lowercase hex digits.
    pub fn commitment_hex(&self) -> String {
        hex::encode(self.commitment)
    }

    /// Reads the proof from a record's extra fields: `None` without a
    /// `deck_commitment`, an error when it is there but the fields are not all well formed.
    pub fn read_from(extra: &Map<String, Value>) -> Result<Option<DeckProof>, DeckProofError> {
        let Some(commitment) = extra.get("deck_commitment") else {
            return Ok(None);
        };
        let commitment = hex_digits(commitment, "deck_commitment")?;
        let seed = extra
            .get("seed")
            .ok_or(DeckProofError::Missing { field: "seed" })?
            .as_u64()
            .ok_or(DeckProofError::Malformed {
                field: "seed",
                expected: "an integer from 0 to 2^64 - 1",
            })?;
        let salt = extra
            .get("deck_salt")
            .ok_or(DeckProofError::Missing { field: "deck_salt" })?;
        let salt = hex_digits(salt, "deck_salt")?;
        Ok(Some(DeckProof {
            seed,
            salt,
            commitment,
        }))
    }

    /// Checks that the seed and salt hash to the commitment and that the seed shuffles
    /// to exactly `draw_order` for `rules`.
    pub fn verify(&self, rules: &Rules, draw_order: &[TileId]) -> Result<(), DeckProofError> {
        if deck_commitment(self.seed, &self.salt) != self.commitment {
            return Err(DeckProofError::CommitmentMismatch);
        }
        let shuffled = shuffled_stack(rules, self.seed);
        let differs = (0..shuffled.len().max(draw_order.len()))
            .find(|&index| shuffled.get(index) != draw_order.get(index));
        match differs {
            Some(index) => Err(DeckProofError::DrawOrderMismatch { index }),
            None => Ok(()),
        }
    }
}

/// 32 bytes written as exactly 64 lowercase hex digits.
fn hex_digits(value: &Value, field: &'static str) -> Result<[u8; 32], DeckProofError> {
    let malformed = DeckProofError::Malformed {
        field,
        expected: "a string of 64 lowercase hex digits",
    };
    let text = value.as_str().ok_or(malformed.clone())?;
    let lowercase = text
        .bytes()
        .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte));
    let mut bytes = [0; 32];
    if !lowercase || hex::decode_to_slice(text, &mut bytes).is_err() {
        return Err(malformed);
    }
    Ok(bytes)
}

impl GameRecord {
    /// Checks the record's deck proof, if it has one: `Ok(Some(true))` when it proves
    /// the draw order, `Ok(None)` when there is none to check.
    pub fn verify_deck(&self) -> Result<Option<bool>, DeckProofError> {
        let Some(proof) = DeckProof::read_from(&self.extra)? else {
            return Ok(None);
        };
        proof.verify(&self.rules, &self.draw_order)?;
        Ok(Some(true))
    }

    pub fn setup(&self) -> Setup {
        Setup {
            rules: self.rules.clone(),
            players: self.players,
            stack: Stack::Fixed(self.draw_order.clone()),
        }
    }
}

/// Plays `record` through the engine. With `legal`, each turn lists every legal
/// placement of its tile, sorted by x, then y, then rotation.
///
/// The setup is checked first, then the deck proof (see the module documentation),
/// then the turns in order.
pub fn replay(record: &GameRecord, legal: bool) -> Result<Replay, ReplayError> {
    let mut game = Game::new(record.setup())?;
    let deck_verified = record.verify_deck()?;
    let mut turns = Vec::with_capacity(record.turns.len());
    // One vector for the events of every move, rather than one allocated per move.
    let mut events = Vec::new();
    for (index, turn) in record.turns.iter().enumerate() {
        let report = replay_turn(&mut game, turn, legal, &mut events).map_err(|message| {
            ReplayError::IllegalTurn {
                turn: index,
                message,
            }
        })?;
        turns.push(report);
    }
    if let Some(tile) = game.current_tile() {
        return Err(ReplayError::IllegalTurn {
            turn: record.turns.len(),
            message: format!(
                "the record ends before the game does: tile {tile} is still to be placed"
            ),
        });
    }
    Ok(Replay {
        ok: true,
        turns,
        discarded: game.discarded().to_vec(),
        final_scores: game.scores().to_vec(),
        deck_verified,
    })
}

/// Plays one turn of a record; an error says what rule it breaks. With `legal`, the
/// report lists the legal placements. `events` is scratch space for the events of the
/// turn's moves.
fn replay_turn(
    game: &mut Game,
    turn: &TurnRecord,
    legal: bool,
    events: &mut Vec<Event>,
) -> Result<TurnReport, String> {
    let (Some(player), Some(tile)) = (game.current_player(), game.current_tile()) else {
        return Err("the game is already over".into());
    };
    if turn.tile != tile {
        return Err(format!(
            "the record says tile {} but the draw order gives {tile}",
            turn.tile
        ));
    }
    let legal = legal
        .then(|| game.sorted_placements(|pos, rotation| [pos.x, pos.y, rotation.degrees() as i32]));
    let [placement, action] = turn.moves();
    events.clear();
    game.play_into(placement, events)
        .map_err(|error| error.to_string())?;
    // The totals before the action, which become the turn's totals once the action's
    // points are added (see `add_turn_points`).
    let mut scores = game.scores().to_vec();
    events.clear();
    game.play_into(action, events)
        .map_err(|error| error.to_string())?;
    add_turn_points(&mut scores, events);
    Ok(TurnReport {
        player,
        tile,
        scores,
        legal,
    })
}

/// Turns the totals before a turn's action into the totals at the end of the turn,
/// before any end-of-game scoring that the action set off: the notation reports that
/// separately as `final_scores`. It adds what the action paid (an abbot's recall) and
/// what the features it completed paid. Counting forward, rather than taking the
/// end-of-game points off the final totals, stays exact even if a total ever saturates.
fn add_turn_points(scores: &mut [u32], events: &[Event]) {
    let mut credit = |seat: Seat, points: u32| {
        let score = &mut scores[seat as usize];
        *score = score.saturating_add(points);
    };
    for event in events {
        match event {
            Event::FeatureScored(score) if score.completed => {
                for &seat in &score.scorers {
                    credit(seat, score.points);
                }
            }
            Event::AbbotRecalled { figure, points } => credit(figure.player, *points),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_read_and_write_the_notation_shapes() {
        let texts = [
            r#""pass""#,
            r#""recall_abbot""#,
            r#"{"place":"big","spot":"c1"}"#,
            r#"{"festival_return":{"x":-2,"y":3,"spot":"f1"}}"#,
        ];
        for text in texts {
            let action: Action = serde_json::from_str(text).unwrap();
            let written = serde_json::to_value(action).unwrap();
            assert_eq!(written, serde_json::from_str::<Value>(text).unwrap());
        }
    }

    #[test]
    fn malformed_actions_say_what_is_wrong() {
        let cases = [
            (r#""dance""#, "unknown action"),
            (r#"{"place":"dragon","spot":"c1"}"#, "dragon"),
            (r#"{"place":"follower","spot":"q9"}"#, "q9"),
            (r#"{"festival_return":{"x":1}}"#, "festival_return"),
            ("3", "string or an object"),
        ];
        for (text, needle) in cases {
            let error = serde_json::from_str::<Action>(text)
                .unwrap_err()
                .to_string();
            assert!(error.contains(needle), "{text}: {error}");
        }
    }

    /// A short seeded game (two tiles, then the tile limit ends it) as a server writes
    /// it: the whole shuffled stack as the draw order, and the deck proof for `seed`.
    fn seeded_record(seed: u64, salt: [u8; 32]) -> GameRecord {
        let rules = Rules {
            tile_limit: Some(2),
            ..Rules::default()
        };
        let mut game = Game::new(Setup {
            rules: rules.clone(),
            players: 2,
            stack: Stack::Seeded(seed),
        })
        .unwrap();
        let mut turns = Vec::new();
        while let Some(tile) = game.current_tile() {
            let placement = game.legal_moves()[0];
            game.play(placement).unwrap();
            game.play(Move::Pass).unwrap();
            let Move::PlaceTile { pos, rotation } = placement else {
                unreachable!("the first step of a turn is a placement")
            };
            let (x, y) = (pos.x, pos.y);
            let action = Action::Pass;
            turns.push(TurnRecord {
                tile,
                x,
                y,
                rotation,
                action,
            });
        }
        let mut extra = Map::new();
        DeckProof::new(seed, salt).write_to(&mut extra);
        GameRecord {
            rules: rules.clone(),
            players: 2,
            draw_order: shuffled_stack(&rules, seed),
            turns,
            extra,
        }
    }

    const SALT: [u8; 32] = [7; 32];

    fn deck_error(record: &GameRecord) -> DeckProofError {
        match replay(record, false) {
            Err(ReplayError::Deck(error)) => error,
            other => panic!("expected a deck proof error, got {other:?}"),
        }
    }

    #[test]
    fn a_record_with_a_true_deck_proof_is_verified() {
        let record = seeded_record(99, SALT);
        assert_eq!(record.turns.len(), 2);
        assert_eq!(record.extra["seed"], 99);
        assert_eq!(record.extra["deck_salt"], "07".repeat(32));
        let replayed = replay(&record, false).unwrap();
        assert_eq!(replayed.deck_verified, Some(true));
        let written = serde_json::to_value(&replayed).unwrap();
        assert_eq!(written["deck_verified"], true);
        // The proof survives writing the record out and reading it back.
        let text = serde_json::to_string(&record).unwrap();
        let read: GameRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(replay(&read, false).unwrap().deck_verified, Some(true));
    }

    #[test]
    fn without_a_commitment_nothing_is_verified_or_reported() {
        let mut record = seeded_record(5, SALT);
        record.extra.remove("deck_commitment");
        record.extra.remove("deck_salt");
        let replayed = replay(&record, false).unwrap();
        assert_eq!(replayed.deck_verified, None);
        let written = serde_json::to_value(&replayed).unwrap();
        assert!(written.get("deck_verified").is_none());
    }

    #[test]
    fn a_missing_or_ill_formed_deck_field_is_malformed() {
        let record = seeded_record(5, SALT);
        let upper = "AB".repeat(32);
        let cases: [(&str, Option<Value>, DeckProofError); 5] = [
            (
                "deck_salt",
                None,
                DeckProofError::Missing { field: "deck_salt" },
            ),
            ("seed", None, DeckProofError::Missing { field: "seed" }),
            (
                "seed",
                Some(json!(-1)),
                malformed("seed", "an integer from 0 to 2^64 - 1"),
            ),
            ("deck_salt", Some(json!(upper)), malformed("deck_salt", HEX)),
            (
                "deck_commitment",
                Some(json!("ab")),
                malformed("deck_commitment", HEX),
            ),
        ];
        for (field, value, expected) in cases {
            let mut broken = record.clone();
            match value {
                Some(value) => broken.extra.insert(field.into(), value),
                None => broken.extra.remove(field),
            };
            let error = deck_error(&broken);
            assert!(error.is_malformed(), "{field}");
            assert_eq!(error, expected, "{field}");
        }
    }

    const HEX: &str = "a string of 64 lowercase hex digits";

    fn malformed(field: &'static str, expected: &'static str) -> DeckProofError {
        DeckProofError::Malformed { field, expected }
    }

    #[test]
    fn a_seed_that_does_not_match_the_commitment_is_refused() {
        let mut record = seeded_record(5, SALT);
        record.extra.insert("seed".into(), json!(6));
        let error = deck_error(&record);
        assert_eq!(error, DeckProofError::CommitmentMismatch);
        assert!(!error.is_malformed());
    }

    #[test]
    fn a_draw_order_the_seed_does_not_shuffle_is_refused() {
        let record = seeded_record(5, SALT);
        let first_other = (1..record.draw_order.len())
            .find(|&index| record.draw_order[index] != record.draw_order[0])
            .unwrap();
        let mut swapped = record.clone();
        swapped.draw_order.swap(0, first_other);
        assert_eq!(
            deck_error(&swapped),
            DeckProofError::DrawOrderMismatch { index: 0 }
        );
        let mut cut = record.clone();
        cut.draw_order.pop();
        let last = record.draw_order.len() - 1;
        let error = deck_error(&cut);
        assert_eq!(error, DeckProofError::DrawOrderMismatch { index: last });
        assert!(!error.is_malformed());
    }

    #[test]
    fn extra_fields_are_kept_and_ignored() {
        let text = r#"{"rules":{},"players":2,"draw_order":[],"turns":[],"seed":7}"#;
        let record: GameRecord = serde_json::from_str(text).unwrap();
        assert_eq!(record.extra["seed"], 7);
        let replayed = replay(&record, false).unwrap();
        assert_eq!(replayed.final_scores, vec![0, 0]);
    }
}
