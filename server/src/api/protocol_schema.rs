//! `GET /api/protocol.schema.json`: a JSON Schema (draft 2020-12) of every WebSocket
//! message, generated from the protocol's own types (`wire/`), so that it cannot
//! drift from what the server sends and parses.
//!
//! The schemas come from the same `ToSchema` derives as the OpenAPI document; OpenAPI 3.1
//! schema objects are JSON Schema 2020-12, so only their references move from
//! `#/components/schemas/` to `#/$defs/`. A copy is kept in `docs/protocol.schema.json`
//! and a test keeps it identical.

use crate::wire::client::ClientMessage;
use crate::wire::frames::ServerMessage;
use axum::Json;
use serde_json::{Value, json};
use std::sync::LazyLock;
use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(components(schemas(ServerMessage, ClientMessage)))]
struct ProtocolComponents;

/// The whole schema document: `$defs` holds every type; a frame is a `ServerMessage` or a
/// `ClientMessage`.
pub fn protocol_schema() -> Value {
    let components = ProtocolComponents::openapi()
        .components
        .expect("the protocol declares components");
    let defs = serde_json::to_string(&components.schemas)
        .expect("schemas serialize")
        .replace("#/components/schemas/", "#/$defs/");
    let defs: Value = serde_json::from_str(&defs).expect("schemas are JSON");
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://carcassonne.invalid/protocol.schema.json",
        "title": "Carcassonne WebSocket protocol",
        "description": "Every message on /ws/games/{id}: what the server sends (ServerMessage) and what a client may send (ClientMessage). See docs/protocol.md.",
        "oneOf": [
            { "$ref": "#/$defs/ServerMessage" },
            { "$ref": "#/$defs/ClientMessage" }
        ],
        "$defs": defs,
    })
}

pub async fn protocol_schema_json() -> Json<&'static Value> {
    static SCHEMA: LazyLock<Value> = LazyLock::new(protocol_schema);
    Json(&SCHEMA)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHECKED_IN: &str = include_str!("../../../docs/protocol.schema.json");

    /// `docs/protocol.schema.json` is what the server serves. Regenerate it with
    /// `UPDATE_PROTOCOL_SCHEMA=1 cargo test -p carcassonne-server --lib protocol_schema`.
    #[test]
    fn the_checked_in_copy_is_current() {
        let generated = serde_json::to_string_pretty(&protocol_schema()).unwrap() + "\n";
        if std::env::var_os("UPDATE_PROTOCOL_SCHEMA").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/protocol.schema.json");
            std::fs::write(path, &generated).unwrap();
            return;
        }
        assert!(
            CHECKED_IN == generated,
            "docs/protocol.schema.json is stale: regenerate it (see this test's comment)"
        );
    }
}
