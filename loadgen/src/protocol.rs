//! Everything the load generator knows about the game's WebSocket messages, in one place:
//! the update format (the patch and the shape of `legal_moves`) is about to change, and a
//! change should touch only this module.
//!
//! A client here needs only a frame's `type`, `seq`, `legal_moves`, and the `id` that ties
//! an `ack` or `rejected` to its command. Frames are parsed into borrowed structs: legal
//! moves stay raw JSON slices of the received text and are sent back verbatim, so no
//! `Value` tree is ever built (the load generator shares its cores with the server).

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// The close code with which the server ends every connection of a game that is over.
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
    pub legal_moves: Option<Vec<&'a RawValue>>,
    #[serde(default, borrow)]
    pub patch: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub error: Option<ErrorBody<'a>>,
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

/// A command that plays `chosen` (a legal move exactly as the server sent it) at `seq`.
pub fn command_text(id: &str, seq: u64, chosen: &RawValue) -> String {
    // The id is ours (letters and digits), so it needs no escaping.
    format!(
        r#"{{"type":"command","id":"{id}","seq":{seq},"move":{}}}"#,
        chosen.get()
    )
}

/// A command of a typical size, for the echo baseline's frames.
pub fn sample_command_text() -> String {
    let sample =
        RawValue::from_string(r#"{"type":"place_tile","x":-3,"y":2,"rotation":270}"#.into())
            .expect("a JSON move");
    command_text("c123", 87, &sample)
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

    /// One of `moves`, or `None` when there are none.
    pub fn pick<'a>(&mut self, moves: &[&'a RawValue]) -> Option<&'a RawValue> {
        if moves.is_empty() {
            return None;
        }
        Some(moves[self.rng.random_range(0..moves.len())])
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
        "legal_moves":[{"type":"place_tile","x":1,"y":0,"rotation":0},{"type":"place_tile","x":0,"y":1,"rotation":90}]}"#;

    #[test]
    fn an_update_gives_its_seq_moves_and_patch_without_copying_them() {
        let frame = parse_frame(MOVER_UPDATE).unwrap();
        assert_eq!(frame.classify(), FrameKind::Update);
        assert_eq!(frame.seq, Some(14));
        let moves = frame.legal_moves.as_ref().unwrap();
        assert_eq!(
            moves[1].get(),
            r#"{"type":"place_tile","x":0,"y":1,"rotation":90}"#
        );
        let patch = r#"[{"op":"replace","path":"/game/tiles_left","value":68}]"#;
        assert_eq!(frame.compact_patch_length(), Some(patch.len()));
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
    fn a_command_is_valid_json_with_the_move_verbatim() {
        let frame = parse_frame(MOVER_UPDATE).unwrap();
        let chosen = frame.legal_moves.as_ref().unwrap()[0];
        let command: serde_json::Value =
            serde_json::from_str(&command_text("c1", 14, chosen)).unwrap();
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
                .map(|_| picker.pick(&moves).unwrap().get().to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(picks(3), picks(3));
        let chosen = picks(3);
        assert!(moves.iter().all(|mv| chosen.contains(&mv.get().to_owned())));
        assert!(MovePicker::new(1).pick(&[]).is_none());
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
