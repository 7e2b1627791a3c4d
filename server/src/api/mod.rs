//! The REST API under `/api`, with its OpenAPI document generated from the handlers.

pub mod chat;
mod cursor;
pub mod events;
pub mod extract;
pub mod headers;
pub mod lobbies;
pub mod matches;
pub mod players;
pub mod protocol_schema;
pub mod queue;
pub mod ratings;
pub mod seats;
pub mod system;
pub mod tiles;

use crate::error::{ErrorBody, ErrorResponse};
use crate::state::AppState;
use axum::Json;
use axum::Router;
use axum::routing::{delete, get, post};
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(title = "Carcassonne server", description = "Lobbies, quick play, players, ratings and match history. Play happens over WebSocket at /ws/games/{id}; see docs/protocol.md."),
    paths(
        lobbies::create_lobby, lobbies::list_lobbies, lobbies::list_games, lobbies::show_lobby, events::lobby_events, chat::game_chat, chat::delete_chat_message, lobbies::join_lobby,
        lobbies::leave_lobby, lobbies::start_lobby, lobbies::cancel_lobby,
        seats::add_bot, seats::remove_bot, seats::resign, seats::abort, seats::reclaim,
        players::create_player, players::sign_in, players::show_player, matches::player_matches, players::head_to_head,
        players::issue_recovery_code, players::recover,
        ratings::leaderboard, ratings::rating_history,
        queue::join_queue, queue::show_ticket, queue::cancel_ticket, queue::ticket_events,
        matches::list_matches, matches::show_match, matches::match_record,
        tiles::list_tiles, system::healthz, system::readyz, system::metrics,
    ),
    components(schemas(ErrorBody, ErrorResponse)),
    modifiers(&SeatTokenAuth, &CommonResponses),
)]
pub struct ApiDoc;

/// Adds the answers any `/api` operation can give: 429 when a client sends too many
/// requests or the server is over its capacity, 500 for a bug (logged, never detailed), 503 while the database is unreachable
/// or the server drains. Each operation documents its own 2xx and 4xx answers.
struct CommonResponses;

impl Modify for CommonResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let common = [
            (
                "429",
                "`rate_limited`: too many requests from this client, or `busy`: the \
                 server's database connections were all in use; see Retry-After",
            ),
            ("500", "`internal`: a server fault, logged with its cause"),
            (
                "503",
                "`storage_unavailable` or `shutting_down`: nothing changed, try again",
            ),
        ];
        for (path, item) in openapi.paths.paths.iter_mut() {
            if !path.starts_with("/api/") {
                continue;
            }
            for operation in operations_of(item) {
                for (status, description) in common {
                    let response = error_response(description);
                    operation
                        .responses
                        .responses
                        .entry(status.to_owned())
                        .or_insert(response);
                }
            }
        }
    }
}

fn operations_of(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        item.get.as_mut(),
        item.post.as_mut(),
        item.put.as_mut(),
        item.delete.as_mut(),
        item.patch.as_mut(),
    ]
    .into_iter()
    .flatten()
}

fn error_response(description: &str) -> RefOr<Response> {
    let content = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name("ErrorResponse")))
        .build();
    RefOr::T(
        ResponseBuilder::new()
            .description(description)
            .content("application/json", content)
            .build(),
    )
}

/// Declares the `Authorization: Bearer SEAT_TOKEN` scheme used by leave, start, cancel.
struct SeatTokenAuth;

impl Modify for SeatTokenAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let scheme = HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build();
        components.add_security_scheme("seat_token", SecurityScheme::Http(scheme));
        let account = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .bearer_format("JWT")
            .build();
        components.add_security_scheme("account_token", SecurityScheme::Http(account));
        let admin = HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build();
        components.add_security_scheme("admin_token", SecurityScheme::Http(admin));
    }
}

async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/lobbies",
            post(lobbies::create_lobby).get(lobbies::list_lobbies),
        )
        .route("/games", get(lobbies::list_games))
        .route("/lobbies/{id}", get(lobbies::show_lobby))
        .route("/lobbies/{id}/events", get(events::lobby_events))
        .route("/lobbies/{id}/chat", get(chat::game_chat))
        .route(
            "/lobbies/{id}/chat/{chat_seq}",
            delete(chat::delete_chat_message),
        )
        .route("/lobbies/{id}/join", post(lobbies::join_lobby))
        .route("/lobbies/{id}/leave", post(lobbies::leave_lobby))
        .route("/lobbies/{id}/start", post(lobbies::start_lobby))
        .route("/lobbies/{id}/cancel", post(lobbies::cancel_lobby))
        .route("/lobbies/{id}/bots", post(seats::add_bot))
        .route("/lobbies/{id}/bots/{seat}", delete(seats::remove_bot))
        .route("/lobbies/{id}/resign", post(seats::resign))
        .route("/lobbies/{id}/abort", post(seats::abort))
        .route("/lobbies/{id}/reclaim", post(seats::reclaim))
        .route("/players", post(players::create_player))
        .route("/players/sign-in", post(players::sign_in))
        .route("/players/{id}", get(players::show_player))
        .route("/players/recover", post(players::recover))
        .route(
            "/players/{id}/recovery-code",
            post(players::issue_recovery_code),
        )
        .route("/players/{id}/matches", get(matches::player_matches))
        .route(
            "/players/{id}/head-to-head/{opponent}",
            get(players::head_to_head),
        )
        .route("/players/{id}/ratings/{pool}", get(ratings::rating_history))
        .route("/leaderboards/{pool}", get(ratings::leaderboard))
        .route("/queue", post(queue::join_queue))
        .route(
            "/queue/{id}",
            get(queue::show_ticket).delete(queue::cancel_ticket),
        )
        .route("/queue/{id}/events", get(queue::ticket_events))
        .route("/matches", get(matches::list_matches))
        .route("/matches/{id}", get(matches::show_match))
        .route("/matches/{id}/record", get(matches::match_record))
        .route("/tiles", get(tiles::list_tiles))
        .route("/openapi.json", get(openapi_json))
        .route(
            "/protocol.schema.json",
            get(protocol_schema::protocol_schema_json),
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn document() -> Value {
        serde_json::to_value(ApiDoc::openapi()).expect("the document serializes")
    }

    fn operations(document: &Value) -> Vec<(String, String, Value)> {
        let paths = document["paths"].as_object().expect("paths");
        paths
            .iter()
            .flat_map(|(path, item)| {
                let item = item.as_object().expect("a path item");
                item.iter().map(move |(method, operation)| {
                    (path.clone(), method.clone(), operation.clone())
                })
            })
            .collect()
    }

    #[test]
    fn every_response_has_a_description() {
        for (path, method, operation) in operations(&document()) {
            for (status, response) in operation["responses"].as_object().expect("responses") {
                let description = response["description"].as_str().unwrap_or_default();
                assert!(
                    !description.is_empty(),
                    "{method} {path} {status} has no description"
                );
            }
        }
    }

    #[test]
    fn path_parameters_are_exactly_the_template_variables() {
        for (path, method, operation) in operations(&document()) {
            let parameters = operation["parameters"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for parameter in &parameters {
                let name = parameter["name"].as_str().expect("a name");
                let in_template = path.contains(&format!("{{{name}}}"));
                assert_eq!(
                    parameter["in"] == "path",
                    in_template,
                    "{method} {path}: parameter {name} is declared in {}",
                    parameter["in"]
                );
            }
        }
    }

    #[test]
    fn every_api_operation_documents_its_errors() {
        for (path, method, operation) in operations(&document()) {
            let responses = operation["responses"].as_object().expect("responses");
            let mut expected = vec!["429", "500", "503"];
            if path.contains('{') || method == "post" {
                expected.push("400");
            }
            for status in expected.iter().filter(|_| path.starts_with("/api/")) {
                assert!(
                    responses.contains_key(*status),
                    "{method} {path} lacks {status}"
                );
            }
        }
    }

    #[test]
    fn no_schema_is_left_untyped() {
        let text = serde_json::to_string(&document()).unwrap();
        if let Some(at) = text.find(r#"{"type":"object"}"#) {
            panic!(
                "an untyped object: ...{}",
                &text[at.saturating_sub(200)..at + 20]
            );
        }
    }
}
