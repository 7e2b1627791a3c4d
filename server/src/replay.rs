//! The `replay` subcommand: plays a game record through the engine and prints what
//! happened, exactly as `notation.md` specifies (exit 0, 1 for an illegal turn, 2 for a
//! malformed record).
//!
//! A record with a deck proof (`seed`, `deck_salt`, `deck_commitment`) is checked too:
//! the report then says `"deck_verified": true`; missing or ill-formed proof fields are a
//! malformed record (exit 2), and a proof that does not match is a failed replay (exit
//! 1) whose error has no `turn`, since no turn is at fault.

use carcassonne_core::record::{GameRecord, ReplayError, replay};
use serde_json::json;
use std::io::Read;
use std::path::Path;

/// What the command printed and the exit status it ends with.
#[derive(Debug, PartialEq, Eq)]
pub struct ReplayOutput {
    pub stdout: String,
    /// For a failed replay: what went wrong, in words, for standard error.
    pub message: Option<String>,
    pub exit_code: u8,
}

/// Reads a record from `path` (`-` for standard input) and replays it.
pub fn run(path: &Path, legal: bool) -> ReplayOutput {
    match read_input(path) {
        Ok(text) => replay_text(&text, legal),
        Err(error) => malformed(format!("cannot read {}: {error}", path.display())),
    }
}

fn read_input(path: &Path) -> std::io::Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        Ok(text)
    } else {
        std::fs::read_to_string(path)
    }
}

/// Replays the text of a game record.
pub fn replay_text(text: &str, legal: bool) -> ReplayOutput {
    let record: GameRecord = match serde_json::from_str(text) {
        Ok(record) => record,
        Err(error) => return malformed(format!("malformed game record: {error}")),
    };
    match replay(&record, legal) {
        Ok(report) => ReplayOutput {
            stdout: serde_json::to_string(&report).expect("a report serializes"),
            message: None,
            exit_code: 0,
        },
        Err(ReplayError::Setup(error)) => malformed(format!("malformed game record: {error}")),
        Err(ReplayError::Deck(error)) if error.is_malformed() => {
            malformed(format!("malformed game record: {error}"))
        }
        Err(ReplayError::Deck(error)) => ReplayOutput {
            stdout: json!({ "ok": false, "error": { "message": error.to_string() } }).to_string(),
            message: Some(format!("deck not verified: {error}")),
            exit_code: 1,
        },
        Err(ReplayError::IllegalTurn { turn, message }) => ReplayOutput {
            stdout: json!({ "ok": false, "error": { "turn": turn, "message": message } })
                .to_string(),
            message: Some(format!("illegal turn {turn}: {message}")),
            exit_code: 1,
        },
    }
}

fn malformed(message: String) -> ReplayOutput {
    ReplayOutput {
        stdout: json!({ "ok": false, "error": { "message": message } }).to_string(),
        message: Some(message),
        exit_code: 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = r#"{"rules":{"expansions":[]},"players":2,"draw_order":["E"],
        "turns":[{"tile":"E","x":0,"y":-1,"rotation":180,"action":{"place":"follower","spot":"c1"}}]}"#;

    #[test]
    fn a_legal_record_prints_scores_and_exits_zero() {
        let output = replay_text(RECORD, true);
        assert_eq!(output.exit_code, 0);
        let report: serde_json::Value = serde_json::from_str(&output.stdout).unwrap();
        // E north of the start tile closes a two-tile city: 4 points, scored at once.
        assert_eq!(report["turns"][0]["scores"], json!([4, 0]));
        assert_eq!(report["final_scores"], json!([4, 0]));
        assert!(
            report["turns"][0]["legal"]
                .as_array()
                .unwrap()
                .contains(&json!([0, -1, 180]))
        );
    }

    #[test]
    fn an_illegal_turn_exits_one_and_names_the_turn() {
        let illegal = RECORD.replace(r#""rotation":180"#, r#""rotation":0"#);
        let output = replay_text(&illegal, false);
        assert_eq!(output.exit_code, 1);
        let report: serde_json::Value = serde_json::from_str(&output.stdout).unwrap();
        assert_eq!(report["ok"], false);
        assert_eq!(report["error"]["turn"], 0);
        assert!(
            report["error"]["message"]
                .as_str()
                .unwrap()
                .contains("does not match")
        );
    }

    #[test]
    fn a_malformed_record_exits_two_and_says_what_is_wrong() {
        for (text, needle) in [
            ("{", "EOF"),
            (r#"{"players":2,"draw_order":["ZZ"],"turns":[]}"#, "ZZ"),
            (r#"{"players":9,"draw_order":[],"turns":[]}"#, "players"),
            (r#"{"players":2,"turns":[]}"#, "draw_order"),
            (
                r#"{"rules":{"farmer":false},"players":2,"draw_order":[],"turns":[]}"#,
                "unknown field `farmer`",
            ),
            (
                r#"{"rules":{"expansions":["river","river"]},"players":2,"draw_order":[],"turns":[]}"#,
                r#"expansion \"river\" is listed more than once"#,
            ),
            (
                r#"{"rules":{"tile_limit":0},"players":2,"draw_order":[],"turns":[]}"#,
                "tile_limit must be null or 1 to 71",
            ),
            (
                r#"{"rules":{"farmer_city_points":0},"players":2,"draw_order":[],"turns":[]}"#,
                "farmer_city_points must be 1 to 10",
            ),
            (
                r#"{"players":2,"draw_order":[],"turns":[],"deck_commitment":"00"}"#,
                "deck_commitment must be a string of 64 lowercase hex digits",
            ),
        ] {
            let output = replay_text(text, false);
            assert_eq!(output.exit_code, 2, "{text}");
            assert!(output.stdout.contains(needle), "{text}: {}", output.stdout);
        }
    }
}
