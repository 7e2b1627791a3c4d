//! Arbitrary bytes as a game record: reading it and replaying it (with the legal
//! placement lists, the most work replay does) must answer `Ok` or `Err`, never panic.

#![no_main]

use carcassonne_core::record::{GameRecord, replay};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(record) = serde_json::from_slice::<GameRecord>(data) {
        let _ = replay(&record, true);
    }
});
