//! The `replay` subcommand as a user runs it: the real binary, files and standard input,
//! output and exit status exactly as `notation.md` specifies.

use carcassonne_core::record::{Action, DeckProof, GameRecord, TurnRecord};
use carcassonne_core::{Game, Move, Rules, Setup, Stack, deck::shuffled_stack};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/games")
        .join(name)
}

fn replay(args: &[&str], stdin: Option<&str>) -> (Output, Value) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_carcassonne-server"))
        .arg("replay")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut input = child.stdin.take().unwrap();
    input
        .write_all(stdin.unwrap_or_default().as_bytes())
        .unwrap();
    drop(input);
    let output = child.wait_with_output().unwrap();
    let printed = serde_json::from_slice(&output.stdout).expect("replay prints one JSON object");
    (output, printed)
}

#[test]
fn a_corpus_game_prints_the_expected_report_and_exits_zero() {
    for name in ["base-2p-001.json", "all-005.json", "scenario-discard.json"] {
        let path = corpus(name);
        let (output, printed) = replay(&[path.to_str().unwrap(), "--legal"], None);
        assert_eq!(output.status.code(), Some(0), "{name}");
        let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let expected = &file["expected"];
        assert_eq!(printed["ok"], true);
        // Corpus records carry no deck proof, so the report says nothing about one.
        assert!(printed.get("deck_verified").is_none(), "{name}");
        assert_eq!(printed["final_scores"], expected["final_scores"], "{name}");
        assert_eq!(printed["discarded"], expected["discarded"], "{name}");
        let turns = printed["turns"].as_array().unwrap();
        assert_eq!(turns.len(), expected["turns"].as_array().unwrap().len());
        for (got, want) in turns.iter().zip(expected["turns"].as_array().unwrap()) {
            assert_eq!(got["scores"], want["scores"], "{name}");
            if !want["legal"].is_null() {
                assert_eq!(got["legal"], want["legal"], "{name}");
            }
        }
    }
}

#[test]
fn without_legal_the_report_has_no_legal_lists_and_stdin_works() {
    let text = std::fs::read_to_string(corpus("scenario-farm.json")).unwrap();
    let (output, printed) = replay(&["-"], Some(&text));
    assert_eq!(output.status.code(), Some(0));
    assert!(printed["turns"][0].get("legal").is_none());
    assert_eq!(printed["final_scores"], serde_json::json!([6, 1]));
}

#[test]
fn an_illegal_turn_exits_one_naming_the_turn() {
    let text = std::fs::read_to_string(corpus("scenario-farm.json")).unwrap();
    let mut record: Value = serde_json::from_str(&text).unwrap();
    // Turn 1's E goes where nothing touches it.
    record["turns"][1]["x"] = 40.into();
    let (output, printed) = replay(&["-"], Some(&record.to_string()));
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(printed["ok"], false);
    assert_eq!(printed["error"]["turn"], 1);
    assert!(
        printed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("40,-1")
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("illegal turn 1"));
}

#[test]
fn a_malformed_record_exits_two() {
    for text in [
        "",
        "[]",
        r#"{"players":2,"draw_order":["D"],"turns":[{"tile":"D"}]}"#,
    ] {
        let (output, printed) = replay(&["-"], Some(text));
        assert_eq!(output.status.code(), Some(2), "{text:?}");
        assert_eq!(printed["ok"], false);
        assert!(!printed["error"]["message"].as_str().unwrap().is_empty());
    }
    let (output, printed) = replay(&["/no/such/file.json"], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        printed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/no/such/file.json")
    );
}

#[test]
fn a_rules_typo_exits_two_naming_the_key() {
    let text = std::fs::read_to_string(corpus("scenario-farm.json")).unwrap();
    let mut record: Value = serde_json::from_str(&text).unwrap();
    record["rules"]["farmer"] = json!(false);
    let (output, printed) = replay(&["-"], Some(&record.to_string()));
    assert_eq!(output.status.code(), Some(2));
    let message = printed["error"]["message"].as_str().unwrap();
    assert!(message.contains("unknown field `farmer`"), "{message}");
}

/// A short seeded game as a server writes it: the whole shuffled stack as the draw
/// order, the first legal placement and a pass each turn until the tile limit, and
/// the deck proof of `seed` with a fixed salt.
fn seeded_record(seed: u64) -> Value {
    let rules = Rules {
        tile_limit: Some(3),
        ..Rules::default()
    };
    let setup = Setup {
        rules: rules.clone(),
        players: 2,
        stack: Stack::Seeded(seed),
    };
    let mut game = Game::new(setup).unwrap();
    let mut turns = Vec::new();
    while let Some(tile) = game.current_tile() {
        let placement = game.legal_moves()[0];
        game.play(placement).unwrap();
        game.play(Move::Pass).unwrap();
        let Move::PlaceTile { pos, rotation } = placement else {
            panic!("the first step of a turn is a placement")
        };
        let (x, y, action) = (pos.x, pos.y, Action::Pass);
        turns.push(TurnRecord {
            tile,
            x,
            y,
            rotation,
            action,
        });
    }
    let mut extra = serde_json::Map::new();
    DeckProof::new(seed, [0x5a; 32]).write_to(&mut extra);
    let record = GameRecord {
        draw_order: shuffled_stack(&rules, seed),
        rules,
        players: 2,
        turns,
        extra,
    };
    serde_json::to_value(record).unwrap()
}

#[test]
fn a_record_whose_deck_proof_holds_reports_deck_verified() {
    let record = seeded_record(2026);
    assert_eq!(record["deck_salt"], "5a".repeat(32));
    let (output, printed) = replay(&["-"], Some(&record.to_string()));
    assert_eq!(output.status.code(), Some(0), "{printed}");
    assert_eq!(printed["ok"], true);
    assert_eq!(printed["deck_verified"], true);
    assert_eq!(printed["turns"].as_array().unwrap().len(), 3);
}

#[test]
fn a_deck_proof_that_does_not_hold_exits_one_without_a_turn() {
    let mut wrong_seed = seeded_record(2026);
    wrong_seed["seed"] = json!(2027);
    let mut wrong_order = seeded_record(2026);
    let order = wrong_order["draw_order"].as_array_mut().unwrap();
    let last = order.len() - 1;
    order.swap(0, last);
    for (record, needle) in [
        (wrong_seed, "do not hash to the deck_commitment"),
        (wrong_order, "differ first at index 0"),
    ] {
        let (output, printed) = replay(&["-"], Some(&record.to_string()));
        assert_eq!(output.status.code(), Some(1), "{printed}");
        assert_eq!(printed["ok"], false);
        assert!(printed["error"].get("turn").is_none(), "{printed}");
        let message = printed["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{message}");
    }
}

#[test]
fn a_deck_commitment_without_its_salt_exits_two() {
    let mut record = seeded_record(2026);
    record.as_object_mut().unwrap().remove("deck_salt");
    let (output, printed) = replay(&["-"], Some(&record.to_string()));
    assert_eq!(output.status.code(), Some(2));
    let message = printed["error"]["message"].as_str().unwrap();
    assert!(message.contains("no deck_salt"), "{message}");
}
