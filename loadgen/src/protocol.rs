//! Everything the load generator knows about the game's WebSocket messages, in one place:
//! the update format (the patch and the shape of `legal_moves`) is about to change, and a
//! change should touch only this module.
//!
//! A client here needs only a frame's `type`, `seq`, `legal_moves`, and the `id` that ties
//! an `ack` or `rejected` to its command. Frames are parsed into borrowed structs (spot
//! labels and figure names stay slices of the received text), so no `Value` tree is ever
//! built: the load generator shares its cores with the server.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// The close code with which the server ends every connection of a game that is over
/// (at the end of its post-game stay) or cancelled.
pub const GAME_ENDED_CLOSE_CODE: u16 = 1000;

/// The parts of one server frame the load generator reads; every other field is skipped
/// without being built.
#[derive(Debug, Deserialize)]
pub struct ServerFrame<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
    #[serde(default)]
    pub seq: Option<u64>,
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub legal_moves: Option<LegalMoves<'a>>,
    #[serde(default, borrow)]
    pub patch: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub error: Option<ErrorBody<'a>>,
    /// An update's events, by type only.
    #[serde(default, borrow)]
    pub events: Vec<EventType<'a>>,
}

/// One event of an update: only its `type` is read, the rest skipped.
#[derive(Debug, Deserialize)]
pub struct EventType<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
}

/// The grouped legal moves of `docs/protocol.md` ("Legal moves"); absent fields are empty.
#[derive(Debug, Default, Deserialize)]
pub struct LegalMoves<'a> {
    #[serde(default)]
    pub place_tile: Vec<(i32, i32, Vec<u16>)>,
    #[serde(default)]
    pub pass: bool,
    #[serde(default, borrow)]
    pub place_figure: BTreeMap<&'a str, Vec<&'a str>>,
    #[serde(default)]
    pub recall_abbot: bool,
    #[serde(default, borrow)]
    pub festival_return: Vec<(i32, i32, &'a str)>,
}

impl LegalMoves<'_> {
    /// How many flat moves the groups stand for.
    pub fn count(&self) -> usize {
        let placements: usize = self.place_tile.iter().map(|cell| cell.2.len()).sum();
        let figures: usize = self.place_figure.values().map(Vec::len).sum();
        placements
            + usize::from(self.pass)
            + figures
            + usize::from(self.recall_abbot)
            + self.festival_return.len()
    }

    /// The `index`-th flat move, as the JSON a command sends, in the protocol's order:
    /// placements, pass, figures, abbot recall, festival returns.
    pub fn move_json(&self, mut index: usize) -> Option<String> {
        for (x, y, rotations) in &self.place_tile {
            match rotations.get(index) {
                Some(rotation) => {
                    return Some(format!(
                        r#"{{"type":"place_tile","x":{x},"y":{y},"rotation":{rotation}}}"#
                    ));
                }
                None => index -= rotations.len(),
            }
        }
        if self.pass {
            if index == 0 {
                return Some(r#"{"type":"pass"}"#.to_owned());
            }
            index -= 1;
        }
        self.action_json(index)
    }

    fn action_json(&self, mut index: usize) -> Option<String> {
        for (figure, spots) in &self.place_figure {
            match spots.get(index) {
                Some(spot) => {
                    return Some(format!(
                        r#"{{"type":"place_figure","figure":"{figure}","spot":"{spot}"}}"#
                    ));
                }
                None => index -= spots.len(),
            }
        }
        if self.recall_abbot {
            if index == 0 {
                return Some(r#"{"type":"recall_abbot"}"#.to_owned());
            }
            index -= 1;
        }
        let (x, y, spot) = self.festival_return.get(index)?;
        Some(format!(
            r#"{{"type":"festival_return","x":{x},"y":{y},"spot":"{spot}"}}"#
        ))
    }
}

/// The `error` of a `rejected` or `error` frame: only its stable code is kept.
#[derive(Debug, Deserialize)]
pub struct ErrorBody<'a> {
    #[serde(borrow)]
    pub code: Cow<'a, str>,
}

/// What a frame means to a playing client.
#[derive(Debug, PartialEq)]
pub enum FrameKind {
    /// A state change; `has_legal_moves` tells whether this copy is the mover's.
    Update,
    /// A snapshot or `your_turn`: may carry legal moves, but is not an update.
    TurnInfo,
    Ack,
    Rejected,
    Error,
    /// Welcome, presence, pong, shutdown: nothing to do for a load generator.
    Other,
}

impl ServerFrame<'_> {
    /// Sorts the frame by what a playing client does with it.
    pub fn classify(&self) -> FrameKind {
        match self.kind.as_ref() {
            "update" => FrameKind::Update,
            "snapshot" | "your_turn" => FrameKind::TurnInfo,
            "ack" => FrameKind::Ack,
            "rejected" => FrameKind::Rejected,
            "error" => FrameKind::Error,
            _ => FrameKind::Other,
        }
    }

    /// The error code of a `rejected` or `error` frame, or `unknown` when it has none.
    pub fn error_code(&self) -> &str {
        self.error
            .as_ref()
            .map_or("unknown", |error| error.code.as_ref())
    }

    /// The size of the frame's `patch` written compactly, when it has one.
    /// Whether this update ends the game (`game_over`, or `game_abandoned`). The game's
    /// room stays up a while after it for chat and a rematch, so a player that has
    /// nothing more to say leaves then rather than waiting for the room to close.
    pub fn ends_the_game(&self) -> bool {
        self.events
            .iter()
            .any(|event| matches!(event.kind.as_ref(), "game_over" | "game_abandoned"))
    }

    pub fn compact_patch_length(&self) -> Option<usize> {
        self.patch.map(|patch| compact_length(patch.get()))
    }
}

/// Parses one text frame from the server, borrowing from `text`.
pub fn parse_frame(text: &str) -> Result<ServerFrame<'_>, serde_json::Error> {
    serde_json::from_str(text)
}

/// The first message of a connection: a seat's hello, or a spectator's without a token.
pub fn hello_text(token: Option<&str>) -> String {
    serde_json::json!({ "type": "hello", "token": token, "last_seq": null }).to_string()
}

/// A resync request for a fresh snapshot, sent after a rejected command so that the
/// client gets the legal moves of the current state and can play on.
pub fn resync_text() -> String {
    r#"{"type":"resync","last_seq":null}"#.to_owned()
}

/// A command that plays `chosen` (the JSON of a flat move) at `seq`.
pub fn command_text(id: &str, seq: u64, chosen: &str) -> String {
    // The id is ours (letters and digits), so it needs no escaping.
    format!(r#"{{"type":"command","id":"{id}","seq":{seq},"move":{chosen}}}"#)
}

/// A command of a typical size, for the echo baseline's frames.
pub fn sample_command_text() -> String {
    command_text(
        "c123",
        87,
        r#"{"type":"place_tile","x":-3,"y":2,"rotation":270}"#,
    )
}

/// Picks moves uniformly at random from a seeded generator, so that a run can be repeated.
pub struct MovePicker {
    rng: StdRng,
}

impl MovePicker {
    pub fn new(seed: u64) -> MovePicker {
        MovePicker {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// A fraction drawn uniformly from 0 to 1.
    pub fn fraction(&mut self) -> f64 {
        self.rng.random_range(0.0..1.0)
    }

    /// An index below `count` (which is not 0).
    pub fn index(&mut self, count: usize) -> usize {
        self.rng.random_range(0..count)
    }

    /// One of the legal moves, as the JSON a command sends, or `None` when there are none.
    pub fn pick(&mut self, moves: &LegalMoves<'_>) -> Option<String> {
        let count = moves.count();
        if count == 0 {
            return None;
        }
        moves.move_json(self.rng.random_range(0..count))
    }
}

/// The length of the JSON text `raw` once the whitespace between its tokens is removed,
/// which is what re-serializing it compactly gives (string contents are kept as sent).
pub fn compact_length(raw: &str) -> usize {
    let mut length = 0;
    let mut in_string = false;
    let mut escaped = false;
    for byte in raw.bytes() {
        if in_string {
            length += 1;
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
        } else if !byte.is_ascii_whitespace() {
            length += 1;
            in_string = byte == b'"';
        }
    }
    length
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOVER_UPDATE: &str = r#"{"type":"update","seq":14,"events":[{"type":"passed","player":0}],
        "patch":[{"op":"replace","path":"/game/tiles_left","value":68}],
        "legal_moves":{"place_tile":[[1,0,[0]],[0,1,[90,180]]]}}"#;

    const ACTION_MOVES: &str = r#"{"pass":true,"place_figure":{"abbot":["m"],"follower":["c1","f2"]},
        "recall_abbot":true,"festival_return":[[2,-1,"r1"]]}"#;

    #[test]
    fn an_update_gives_its_seq_moves_and_patch_without_copying_them() {
        let frame = parse_frame(MOVER_UPDATE).unwrap();
        assert_eq!(frame.classify(), FrameKind::Update);
        assert_eq!(frame.seq, Some(14));
        let moves = frame.legal_moves.as_ref().unwrap();
        assert_eq!(moves.count(), 3);
        assert_eq!(
            moves.move_json(1).unwrap(),
            r#"{"type":"place_tile","x":0,"y":1,"rotation":90}"#
        );
        assert_eq!(
            moves.move_json(2).unwrap(),
            r#"{"type":"place_tile","x":0,"y":1,"rotation":180}"#
        );
        assert_eq!(moves.move_json(3), None);
        let patch = r#"[{"op":"replace","path":"/game/tiles_left","value":68}]"#;
        assert_eq!(frame.compact_patch_length(), Some(patch.len()));
    }

    #[test]
    fn the_update_with_game_over_or_game_abandoned_ends_the_game() {
        let last = r#"{"type":"update","seq":9,"patch":[],"events":[{"type":"feature_scored","kind":"road","tiles":[[0,0]]},{"type":"game_over","final_scores":[3,4],"winners":[1]}]}"#;
        assert!(parse_frame(last).unwrap().ends_the_game());
        let abandoned =
            r#"{"type":"update","seq":9,"patch":[],"events":[{"type":"game_abandoned"}]}"#;
        assert!(parse_frame(abandoned).unwrap().ends_the_game());
        let move_made =
            r#"{"type":"update","seq":8,"patch":[],"events":[{"type":"tile_placed","x":1,"y":0}]}"#;
        assert!(!parse_frame(move_made).unwrap().ends_the_game());
        assert!(
            !parse_frame(r#"{"type":"ack","id":"c7","seq":15}"#)
                .unwrap()
                .ends_the_game()
        );
    }

    #[test]
    fn acks_and_rejections_carry_their_id_and_code() {
        let ack = parse_frame(r#"{"type":"ack","id":"c7","seq":15}"#).unwrap();
        assert_eq!(
            (ack.classify(), ack.id.as_deref()),
            (FrameKind::Ack, Some("c7"))
        );
        let text = r#"{"type":"rejected","id":"c8","error":{"code":"stale_seq","message":"m"}}"#;
        let rejected = parse_frame(text).unwrap();
        assert_eq!(rejected.classify(), FrameKind::Rejected);
        assert_eq!(rejected.error_code(), "stale_seq");
    }

    #[test]
    fn every_grouped_action_expands_to_its_flat_move_in_order() {
        let moves: LegalMoves<'_> = serde_json::from_str(ACTION_MOVES).unwrap();
        let flat: Vec<serde_json::Value> = (0..moves.count())
            .map(|index| serde_json::from_str(&moves.move_json(index).unwrap()).unwrap())
            .collect();
        let types: Vec<&str> = flat.iter().map(|mv| mv["type"].as_str().unwrap()).collect();
        let expected = ["pass", "place_figure", "place_figure", "place_figure"];
        assert_eq!(types[..4], expected);
        assert_eq!(types[4..], ["recall_abbot", "festival_return"]);
        assert_eq!(flat[1]["figure"], "abbot");
        assert_eq!(flat[5]["spot"], "r1");
    }

    #[test]
    fn a_command_is_valid_json_with_the_move_verbatim() {
        let frame = parse_frame(MOVER_UPDATE).unwrap();
        let chosen = frame.legal_moves.as_ref().unwrap().move_json(0).unwrap();
        let command: serde_json::Value =
            serde_json::from_str(&command_text("c1", 14, &chosen)).unwrap();
        assert_eq!(command["seq"], 14);
        assert_eq!(command["move"]["type"], "place_tile");
        assert_eq!(command["id"], "c1");
    }

    #[test]
    fn the_picker_repeats_with_its_seed_and_reaches_every_move() {
        let frame = parse_frame(MOVER_UPDATE).unwrap();
        let moves = frame.legal_moves.unwrap();
        let picks = |seed| {
            let mut picker = MovePicker::new(seed);
            (0..64)
                .map(|_| picker.pick(&moves).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(picks(3), picks(3));
        let chosen = picks(3);
        assert!((0..3).all(|index| chosen.contains(&moves.move_json(index).unwrap())));
        assert!(MovePicker::new(1).pick(&LegalMoves::default()).is_none());
    }

    #[test]
    fn compact_length_drops_whitespace_outside_strings_only() {
        assert_eq!(
            compact_length(r#"[ { "a" : "x y" } ]"#),
            r#"[{"a":"x y"}]"#.len()
        );
        assert_eq!(compact_length(r#"["q\" ",1]"#), r#"["q\" ",1]"#.len());
        assert_eq!(compact_length(" \n"), 0);
    }
}
