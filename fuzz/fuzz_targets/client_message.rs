//! Arbitrary text as a WebSocket frame from a client: parsing it gives a message or a
//! typed error reply, never a panic.

#![no_main]

use carcassonne_server::parse_client_message;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = parse_client_message(text);
});
