//! Garbage in: reading and replaying a game record never panics, whatever the input.
//!
//! A server reads records from users, so `serde_json::from_str::<GameRecord>` followed by
//! `record::replay` must answer every input with `Ok` or `Err`. The inputs here are random
//! bytes, random JSON, random record-shaped JSON, corpus records cut short at every kind
//! of position, and corpus records with values swapped, numbers changed, keys removed
//! and strings replaced. Where the answer is known it is checked too: a record cut short
//! is an error, and any replay that succeeds reports one entry per turn and one score
//! per seat.

use carcassonne_core::SetupError;
use carcassonne_core::record::{GameRecord, Replay, ReplayError, replay};
use carcassonne_core::rules::RulesError;
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::path::Path;
use std::sync::LazyLock;

/// Every corpus record, without the `expected` results and `description`, which replay
/// ignores, so that mutations land on what replay reads. The farm value is written out
/// (3, the default, so every record still replays the same) to give mutations a
/// multiplier to change.
static CORPUS: LazyLock<Vec<(String, Value)>> = LazyLock::new(|| {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/games");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("conformance/games exists")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let mut record: Value = serde_json::from_str(&text).unwrap();
            let object = record.as_object_mut().unwrap();
            object.remove("expected");
            object.remove("description");
            object
                .entry("rules")
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .unwrap()
                .insert("farmer_city_points".into(), json!(3));
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, record)
        })
        .collect()
});

/// Words a record uses, and some it should reject, for keys and string values.
const WORDS: [&str; 40] = [
    "rules",
    "players",
    "draw_order",
    "turns",
    "tile",
    "x",
    "y",
    "rotation",
    "action",
    "place",
    "spot",
    "festival_return",
    "expansions",
    "farmers",
    "farmer_city_points",
    "tile_limit",
    "pass",
    "recall_abbot",
    "follower",
    "big",
    "abbot",
    "river",
    "inns_and_cathedrals",
    "festival",
    "D",
    "R01",
    "R02",
    "IC01",
    "FE10",
    "Vg",
    "c1",
    "r2",
    "f3",
    "m",
    "g",
    "w1",
    "c0",
    "",
    "dragon",
    "\u{0}é",
];

/// Numbers that sit on the edges of the types a record uses.
const NUMBERS: [i64; 16] = [
    0,
    1,
    -1,
    2,
    5,
    6,
    7,
    90,
    270,
    255,
    256,
    i32::MAX as i64,
    i32::MIN as i64,
    u32::MAX as i64,
    i64::MAX,
    i64::MIN,
];

/// Reads and replays `text`, with and without legal lists. Panics only if the engine
/// does; checks what a successful replay must look like.
fn read_and_replay(text: &str) -> Result<(), TestCaseError> {
    let Ok(record) = serde_json::from_str::<GameRecord>(text) else {
        return Ok(());
    };
    for legal in [false, true] {
        if let Ok(replayed) = replay(&record, legal) {
            check_successful_replay(&record, &replayed)?;
        }
    }
    Ok(())
}

fn check_successful_replay(record: &GameRecord, replayed: &Replay) -> Result<(), TestCaseError> {
    let seats = record.players as usize;
    prop_assert_eq!(replayed.turns.len(), record.turns.len());
    prop_assert_eq!(replayed.final_scores.len(), seats);
    for turn in &replayed.turns {
        prop_assert_eq!(turn.scores.len(), seats);
    }
    Ok(())
}

fn any_word() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(WORDS.to_vec()).prop_map(String::from),
        ".{0,6}",
    ]
}

fn any_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => proptest::sample::select(NUMBERS.to_vec()).prop_map(Value::from),
        2 => (-4i64..=4).prop_map(Value::from),
        1 => any::<f64>().prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
    ]
}

/// Any JSON, with keys and strings mostly drawn from the record's vocabulary.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any_number(),
        any_word().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            proptest::collection::vec((any_word(), inner), 0..8)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn any_action() -> impl Strategy<Value = Value> {
    let spot = proptest::sample::select(vec!["c1", "c2", "r1", "r2", "f1", "f2", "m", "g", "w1"]);
    let figure = proptest::sample::select(vec!["follower", "big", "abbot"]);
    prop_oneof![
        Just(json!("pass")),
        Just(json!("recall_abbot")),
        (figure, spot.clone()).prop_map(|(figure, spot)| json!({ "place": figure, "spot": spot })),
        (-3i64..=3, proptest::sample::select(NUMBERS.to_vec()), spot).prop_map(|(x, y, spot)| {
            json!({ "festival_return": { "x": x, "y": y, "spot": spot } })
        }),
    ]
}

/// A record-shaped object: valid rules, tile ids and actions, random seats and cells,
/// so that many get past reading and into the game.
fn any_record_shape() -> impl Strategy<Value = Value> {
    let tile = proptest::sample::select(vec![
        "A", "B", "C", "D", "E", "U", "V", "X", "Ug", "R02", "R07", "R10", "IC01", "IC16", "FE05",
        "FE10",
    ]);
    let expansions = proptest::sample::subsequence(
        vec!["river", "abbot", "inns_and_cathedrals", "festival"],
        0..=4,
    );
    let rules = (
        expansions,
        any::<bool>(),
        0u32..6,
        proptest::option::of(0u32..6),
    )
        .prop_map(|(expansions, farmers, points, limit)| {
            json!({ "expansions": expansions, "farmers": farmers,
                    "farmer_city_points": points, "tile_limit": limit })
        });
    let coordinate = || {
        prop_oneof![
            4 => -3i64..=3,
            1 => proptest::sample::select(NUMBERS.to_vec()),
        ]
    };
    let turn = (
        tile.clone(),
        coordinate(),
        coordinate(),
        proptest::sample::select(vec![0, 90, 180, 270, 45]),
        any_action(),
    )
        .prop_map(|(tile, x, y, rotation, action)| {
            json!({ "tile": tile, "x": x, "y": y, "rotation": rotation, "action": action })
        });
    (
        rules,
        0u8..=7,
        proptest::collection::vec(tile, 0..12),
        proptest::collection::vec(turn, 0..12),
    )
        .prop_map(|(rules, players, draw_order, turns)| {
            json!({ "rules": rules, "players": players, "draw_order": draw_order, "turns": turns })
        })
}

/// The JSON pointer (`/turns/3/x`) of every value in `value`, the root (`""`) first.
fn pointers(value: &Value) -> Vec<String> {
    fn walk(value: &Value, here: &str, out: &mut Vec<String>) {
        out.push(here.to_owned());
        match value {
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    walk(item, &format!("{here}/{index}"), out);
                }
            }
            Value::Object(entries) => {
                for (key, item) in entries {
                    // RFC 6901 escapes: `~` as `~0`, then `/` as `~1`.
                    let key = key.replace('~', "~0").replace('/', "~1");
                    walk(item, &format!("{here}/{key}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, "", &mut out);
    out
}

/// The pointers of `record` whose value passes `keep`, or all of them if none does.
fn pointers_where(record: &Value, keep: impl Fn(&Value) -> bool) -> Vec<String> {
    let all = pointers(record);
    let kept: Vec<String> = all
        .iter()
        .filter(|pointer| record.pointer(pointer).is_some_and(&keep))
        .cloned()
        .collect();
    if kept.is_empty() { all } else { kept }
}

fn at<'a>(record: &'a mut Value, pointer: &str) -> &'a mut Value {
    record
        .pointer_mut(pointer)
        .expect("a pointer taken from this record")
}

/// One change to a record. Paths are chosen by index modulo the number of candidates.
#[derive(Clone, Debug)]
enum Mutation {
    /// Swap the values at two paths.
    Swap(usize, usize),
    /// Replace a number of the record with this value.
    Number(usize, Value),
    /// Nudge a number of the record by this much.
    Nudge(usize, i64),
    /// Remove a key from an object of the record.
    RemoveKey(usize, usize),
    /// Put this value (a word, null, or any JSON) at a path.
    Replace(usize, Value),
}

fn any_mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
        (any::<usize>(), any_number()).prop_map(|(a, n)| Mutation::Number(a, n)),
        (any::<usize>(), -3i64..=3).prop_map(|(a, by)| Mutation::Nudge(a, by)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, k)| Mutation::RemoveKey(a, k)),
        (any::<usize>(), any_word()).prop_map(|(a, w)| Mutation::Replace(a, Value::String(w))),
        (any::<usize>(), any_json()).prop_map(|(a, v)| Mutation::Replace(a, v)),
    ]
}

fn mutate(record: &mut Value, mutation: &Mutation) {
    let all = pointers(record);
    let any = |index: usize| all[index % all.len()].clone();
    // Numbers and objects are a small part of a record; aim at them directly so that
    // coordinates, rotations and seat counts get changed often.
    let numbers = pointers_where(record, Value::is_number);
    let number = |index: usize| numbers[index % numbers.len()].clone();
    let objects = pointers_where(record, Value::is_object);
    let object = |index: usize| objects[index % objects.len()].clone();
    match mutation {
        Mutation::Swap(a, b) => {
            let (a, b) = (any(*a), any(*b));
            // Swapping a value with one inside it is not a swap; skip those pairs.
            let inside = |outer: &str, inner: &str| {
                inner == outer || inner.starts_with(&format!("{outer}/"))
            };
            if inside(&a, &b) || inside(&b, &a) {
                return;
            }
            let taken = std::mem::take(at(record, &a));
            let other = std::mem::replace(at(record, &b), taken);
            *at(record, &a) = other;
        }
        Mutation::Number(a, value) => *at(record, &number(*a)) = value.clone(),
        Mutation::Nudge(a, by) => {
            let target = at(record, &number(*a));
            if let Some(value) = target.as_i64() {
                *target = Value::from(value.saturating_add(*by));
            }
        }
        Mutation::RemoveKey(a, key) => {
            if let Value::Object(entries) = at(record, &object(*a))
                && !entries.is_empty()
            {
                let name = entries.keys().nth(key % entries.len()).unwrap().clone();
                entries.remove(&name);
            }
        }
        Mutation::Replace(a, value) => *at(record, &any(*a)) = value.clone(),
    }
}

fn any_corpus_index() -> impl Strategy<Value = usize> {
    0..CORPUS.len()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_are_refused_or_replayed(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        read_and_replay(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn random_json_is_refused_or_replayed(value in any_json()) {
        read_and_replay(&value.to_string())?;
    }

    #[test]
    fn random_record_shapes_are_refused_or_replayed(value in any_record_shape()) {
        read_and_replay(&value.to_string())?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Cutting a record's text anywhere before its end (inside a key, a string, a number,
    /// between tokens) leaves JSON that does not parse.
    #[test]
    fn corpus_text_cut_short_is_refused(file in any_corpus_index(), fraction in 0.0f64..1.0) {
        let text = serde_json::to_string_pretty(&CORPUS[file].1).unwrap();
        let mut cut = (fraction * text.len() as f64) as usize;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        prop_assert!(serde_json::from_str::<GameRecord>(&text[..cut]).is_err());
        read_and_replay(&text[..cut])?;
    }

    /// A record whose turns stop early is an error naming the first missing turn; one
    /// whose draw order is cut is refused or replayed, never a panic.
    #[test]
    fn corpus_records_cut_short_are_refused(file in any_corpus_index(), fraction in 0.0f64..1.0) {
        let (name, full) = &CORPUS[file];
        let mut record = full.clone();
        let turns = record["turns"].as_array_mut().unwrap();
        let kept = (fraction * turns.len() as f64) as usize;
        turns.truncate(kept);
        let parsed: GameRecord = serde_json::from_value(record).unwrap();
        match replay(&parsed, false) {
            Err(ReplayError::IllegalTurn { turn, .. }) => prop_assert_eq!(turn, kept, "{}", name),
            other => prop_assert!(false, "{}: cut at turn {} gave {:?}", name, kept, other),
        }
        let mut record = full.clone();
        let draw_order = record["draw_order"].as_array_mut().unwrap();
        draw_order.truncate((fraction * draw_order.len() as f64) as usize);
        read_and_replay(&record.to_string())?;
    }

    /// Corpus records with values swapped, numbers changed, keys removed and values
    /// replaced are refused or replayed, never a panic.
    #[test]
    fn mutated_corpus_records_are_refused_or_replayed(
        file in any_corpus_index(),
        mutations in proptest::collection::vec(any_mutation(), 1..4),
    ) {
        let mut record = CORPUS[file].1.clone();
        for mutation in &mutations {
            mutate(&mut record, mutation);
        }
        read_and_replay(&record.to_string())?;
    }
}

#[test]
fn every_corpus_record_replays_before_it_is_mutated() {
    // The mutation tests start from records that replay; otherwise they would only ever
    // exercise the error paths.
    for (name, record) in CORPUS.iter() {
        let parsed: GameRecord = serde_json::from_value(record.clone()).unwrap();
        let replayed = replay(&parsed, false).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(replayed.turns.len(), parsed.turns.len(), "{name}");
    }
}

#[test]
fn an_absurd_farm_value_is_refused_before_the_first_turn() {
    // scenario-farm replays at the default farm value; at u32::MAX, which a typo or a
    // hostile record could carry, the setup is refused as malformed instead of the farm
    // scoring an absurd total.
    let (_, record) = CORPUS
        .iter()
        .find(|(name, _)| name == "scenario-farm.json")
        .expect("the corpus has scenario-farm");
    let mut record = record.clone();
    record["rules"]["farmer_city_points"] = json!(u32::MAX);
    let parsed: GameRecord = serde_json::from_value(record).unwrap();
    assert_eq!(
        replay(&parsed, false),
        Err(ReplayError::Setup(SetupError::Rules(
            RulesError::FarmerCityPoints(u32::MAX)
        )))
    );
}
