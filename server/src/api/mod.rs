//! The REST API under `/api`, with its OpenAPI document generated from the handlers.

pub mod extract;
pub mod lobbies;
pub mod matches;
pub mod players;
pub mod system;
pub mod tiles;

use crate::error::{ErrorBody, ErrorResponse};
use crate::state::AppState;
use axum::Json;
use axum::Router;
use axum::routing::{get, post};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(title = "Carcassonne server", description = "Lobbies, players and match history. Play happens over WebSocket at /ws/games/{id}; see docs/protocol.md."),
    paths(
        lobbies::create_lobby, lobbies::list_lobbies, lobbies::show_lobby, lobbies::join_lobby,
        lobbies::leave_lobby, lobbies::start_lobby, lobbies::cancel_lobby,
        players::create_player, players::show_player, matches::player_matches,
        matches::list_matches, matches::show_match, matches::match_record,
        tiles::list_tiles, system::healthz, system::metrics,
    ),
    components(schemas(ErrorBody, ErrorResponse)),
    modifiers(&SeatTokenAuth),
)]
pub struct ApiDoc;

/// Declares the `Authorization: Bearer SEAT_TOKEN` scheme used by leave, start, cancel.
struct SeatTokenAuth;

impl Modify for SeatTokenAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let scheme = HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build();
        components.add_security_scheme("seat_token", SecurityScheme::Http(scheme));
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
        .route("/lobbies/{id}", get(lobbies::show_lobby))
        .route("/lobbies/{id}/join", post(lobbies::join_lobby))
        .route("/lobbies/{id}/leave", post(lobbies::leave_lobby))
        .route("/lobbies/{id}/start", post(lobbies::start_lobby))
        .route("/lobbies/{id}/cancel", post(lobbies::cancel_lobby))
        .route("/players", post(players::create_player))
        .route("/players/{id}", get(players::show_player))
        .route("/players/{id}/matches", get(matches::player_matches))
        .route("/matches", get(matches::list_matches))
        .route("/matches/{id}", get(matches::show_match))
        .route("/matches/{id}/record", get(matches::match_record))
        .route("/tiles", get(tiles::list_tiles))
        .route("/openapi.json", get(openapi_json))
}
