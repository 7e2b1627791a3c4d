//! The conformance corpus: every game record in `conformance/games` must replay to
//! exactly the results an independent implementation computed for it (per-turn scores,
//! legal placements, discards, final scores). The comparison order is the one
//! `conformance/README.md` prescribes, and a failure names the file and the first turn
//! that differs.

use carcassonne_core::record::{GameRecord, Replay, replay};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/games")
}

fn corpus_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("conformance/games exists")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}

/// Compares a replay with a file's `expected`; returns the first difference.
fn first_difference(replayed: &Replay, expected: &Value) -> Option<String> {
    if expected["ok"] != Value::Bool(true) {
        return Some("expected.ok is not true".into());
    }
    let expected_turns = expected["turns"].as_array()?;
    for (index, (got, want)) in replayed.turns.iter().zip(expected_turns).enumerate() {
        let got = serde_json::to_value(got).unwrap();
        for key in ["player", "tile", "scores", "legal"] {
            if key == "legal" && want[key].is_null() {
                continue;
            }
            if got[key] != want[key] {
                return Some(format!(
                    "turn {index} ({}): {key} is {} but should be {}",
                    want["tile"], got[key], want[key]
                ));
            }
        }
    }
    if replayed.turns.len() != expected_turns.len() {
        return Some(format!(
            "{} turns, expected {}",
            replayed.turns.len(),
            expected_turns.len()
        ));
    }
    let got = serde_json::to_value(replayed).unwrap();
    for key in ["discarded", "final_scores"] {
        if got[key] != expected[key] {
            return Some(format!(
                "{key} is {} but should be {}",
                got[key], expected[key]
            ));
        }
    }
    None
}

fn check_file(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let document: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let record: GameRecord = serde_json::from_value(document.clone()).map_err(|e| e.to_string())?;
    let replayed = replay(&record, true).map_err(|e| e.to_string())?;
    match first_difference(&replayed, &document["expected"]) {
        Some(difference) => Err(difference),
        None => Ok(()),
    }
}

#[test]
fn every_corpus_game_replays_to_its_expected_results() {
    let files = corpus_files();
    assert!(files.len() >= 106, "the corpus has {} files", files.len());
    let failures: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            check_file(path).err().map(|why| format!("{name}: {why}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} files differ:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn the_corpus_copy_is_identical_to_the_shared_corpus_when_present() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance");
    if !shared.exists() {
        return;
    }
    let ours = corpus_dir().join("..");
    let mut names = vec![PathBuf::from("README.md")];
    for dir in [&shared, &ours] {
        for entry in std::fs::read_dir(dir.join("games")).unwrap() {
            names.push(Path::new("games").join(entry.unwrap().file_name()));
        }
    }
    names.sort();
    names.dedup();
    for name in names {
        let theirs = std::fs::read(shared.join(&name));
        let mine = std::fs::read(ours.join(&name));
        assert!(
            theirs.is_ok() && theirs.ok() == mine.ok(),
            "conformance/{} differs from ../shared/conformance: copy the corpus again",
            name.display()
        );
    }
}
