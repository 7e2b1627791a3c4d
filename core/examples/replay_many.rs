//! Replays one game record many times, for instruction counts under
//! `valgrind --tool=callgrind` (`docs/performance.md`, "Replaying with legal placements").
//!
//! Usage: `replay_many FILE COUNT [legal]`. Reading and parsing the file happen once, so
//! the difference between two counts divided by the difference of `COUNT`s is the cost
//! of one replay alone. It allocates with the system allocator, as the benchmarks do;
//! `replay_many_mimalloc` is the same program with the server binary's allocator.

use carcassonne_core::record::{GameRecord, replay};
use std::hint::black_box;
use std::process::ExitCode;

pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(count)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: replay_many FILE COUNT [legal]");
        return ExitCode::from(2);
    };
    let Ok(count) = count.parse::<u32>() else {
        eprintln!("COUNT must be a whole number, not {count}");
        return ExitCode::from(2);
    };
    let legal = args.get(3).is_some_and(|word| word == "legal");
    let record: GameRecord = match std::fs::read_to_string(path)
        .map_err(|error| error.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|error| error.to_string()))
    {
        Ok(record) => record,
        Err(error) => {
            eprintln!("cannot read {path}: {error}");
            return ExitCode::from(2);
        }
    };
    for _ in 0..count {
        if let Err(error) = replay(black_box(&record), legal) {
            eprintln!("replay failed: {error}");
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}
