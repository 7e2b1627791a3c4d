//! Game records (`notation.md`) and replaying them through the engine.
//!
//! A record is the setup (`rules`, `players`, `draw_order`) plus one entry per placed
//! tile. Fields a server adds (`seed`, `started_at`, seat names...) are kept in
//! [`GameRecord::extra`] and ignored by [`replay`].

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
pub struct TurnRecord {
    pub tile: TileId,
    pub x: i32,
    pub y: i32,
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
struct ReturnTarget {
    x: i32,
    y: i32,
    spot: Spot,
}

#[derive(Deserialize)]
struct PlaceAction {
    place: FigureKind,
    spot: Spot,
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
    /// Turn `turn` (0-based) breaks a rule, or the record stops before the game ends.
    #[error("turn {turn}: {message}")]
    IllegalTurn { turn: usize, message: String },
}

impl GameRecord {
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
pub fn replay(record: &GameRecord, legal: bool) -> Result<Replay, ReplayError> {
    let mut game = Game::new(record.setup())?;
    let mut turns = Vec::with_capacity(record.turns.len());
    for (index, turn) in record.turns.iter().enumerate() {
        let illegal = |message: String| ReplayError::IllegalTurn {
            turn: index,
            message,
        };
        let (Some(player), Some(tile)) = (game.current_player(), game.current_tile()) else {
            return Err(illegal("the game is already over".into()));
        };
        if turn.tile != tile {
            return Err(illegal(format!(
                "the record says tile {} but the draw order gives {tile}",
                turn.tile
            )));
        }
        let legal = legal.then(|| sorted_placements(&game));
        let [placement, action] = turn.moves();
        game.play(placement)
            .map_err(|error| illegal(error.to_string()))?;
        let before_action = game.scores().to_vec();
        let events = game
            .play(action)
            .map_err(|error| illegal(error.to_string()))?;
        let scores = scores_before_end_of_game(&before_action, &events);
        turns.push(TurnReport {
            player,
            tile,
            scores,
            legal,
        });
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
    })
}

/// The totals at the end of the turn, before any end-of-game scoring that the turn's
/// last move set off: the notation reports that separately as `final_scores`. They are
/// the totals before the action plus what the action paid (an abbot's recall) and what
/// the features it completed paid. Counting forward, rather than taking the end-of-game
/// points off the final totals, stays exact when an absurd farm value saturates them.
fn scores_before_end_of_game(before_action: &[u32], events: &[Event]) -> Vec<u32> {
    let mut scores = before_action.to_vec();
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
    scores
}

fn sorted_placements(game: &Game) -> Vec<[i32; 3]> {
    let mut placements: Vec<[i32; 3]> = game
        .legal_placements()
        .into_iter()
        .map(|(pos, rotation)| [pos.x, pos.y, rotation.degrees() as i32])
        .collect();
    placements.sort_unstable();
    placements
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

    #[test]
    fn extra_fields_are_kept_and_ignored() {
        let text = r#"{"rules":{},"players":2,"draw_order":[],"turns":[],"seed":7}"#;
        let record: GameRecord = serde_json::from_str(text).unwrap();
        assert_eq!(record.extra["seed"], 7);
        let replayed = replay(&record, false).unwrap();
        assert_eq!(replayed.final_scores, vec![0, 0]);
    }
}
