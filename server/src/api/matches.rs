//! Match history: finished games, newest first, with filters and cursor paging.

use crate::api::cursor::{self, bad_cursor};
use crate::api::extract::{AppPath, AppQuery};
use crate::api::lobbies::{in_range, require_private_access};
use crate::clock::{parse_rfc3339, rfc3339};
use crate::error::{AppError, ErrorResponse};
use crate::rooms::outcome::MatchRecord;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use carcassonne_core::{Expansion, FeatureScore, PointsByKind, Rules};
use carcassonne_store::ratings::RatingChange;
use carcassonne_store::{MatchCursor, MatchFilter, MatchSeat, MatchStatus, MatchSummary};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

const MAX_LIMIT: u32 = 100;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MatchQuery {
    /// Only matches this player identity played.
    pub player: Option<Uuid>,
    /// Only matches this player identity played too: with `player` (or on a player's
    /// list), the two players' matches together.
    pub opponent: Option<Uuid>,
    /// Finished at or after this RFC 3339 time.
    #[param(format = DateTime)]
    pub from: Option<String>,
    /// Finished before this RFC 3339 time.
    #[param(format = DateTime)]
    pub to: Option<String>,
    /// Comma-separated expansions every listed match must include, e.g. `river,abbot`.
    #[param(
        pattern = "^((river|abbot|inns_and_cathedrals|festival)(,(river|abbot|inns_and_cathedrals|festival))*)?$"
    )]
    pub expansions: Option<String>,
    /// Only matches with this many players (2 to 6).
    #[param(minimum = 2, maximum = 6)]
    pub players: Option<u8>,
    /// Only matches that ended so: `finished` (played to the end) or `abandoned`.
    pub status: Option<MatchStatus>,
    /// The `next_cursor` of the previous page.
    #[param(pattern = "^[A-Za-z0-9_-]+$")]
    pub cursor: Option<String>,
    /// Matches per page, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MatchView {
    pub id: Uuid,
    pub name: String,
    pub rules: Rules,
    pub player_count: u8,
    pub started_at: String,
    pub finished_at: String,
    /// `finished` when played to the end, `abandoned` when it ended early because no
    /// human played any of its seats any more (scored as it stood).
    pub status: MatchStatus,
    pub tiles_placed: u32,
    pub seats: Vec<SeatResult>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SeatResult {
    pub seat: u8,
    pub display_name: String,
    pub player_id: Option<Uuid>,
    pub score: u32,
    pub winner: bool,
    /// Whether the seat's player resigned before the end (a resigned seat never wins).
    pub resigned: bool,
    /// Where `score` came from, by kind of feature (an abbot's recall counts for its
    /// monastery or garden).
    pub points: PointsByKind,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MatchPageView {
    pub items: Vec<MatchView>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MatchDetailView {
    #[serde(flatten)]
    pub summary: MatchView,
    /// Every feature scored, during the game and at the end, as the engine reported it.
    #[schema(value_type = Vec<FeatureScore>)]
    pub breakdown: Value,
    /// A rated match's rating changes, by seat; empty for an unrated one.
    pub ratings: Vec<RatingChange>,
}

pub fn match_view(summary: MatchSummary) -> MatchView {
    MatchView {
        id: summary.id,
        name: summary.name,
        rules: summary.rules,
        player_count: summary.player_count,
        started_at: rfc3339(summary.started_at),
        finished_at: rfc3339(summary.finished_at),
        status: summary.status,
        tiles_placed: summary.tiles_placed,
        seats: summary.seats.into_iter().map(seat_result).collect(),
    }
}

fn seat_result(seat: MatchSeat) -> SeatResult {
    SeatResult {
        seat: seat.seat,
        display_name: seat.display_name,
        player_id: seat.player_id,
        score: seat.score,
        winner: seat.winner,
        resigned: seat.resigned,
        points: seat.points,
    }
}

pub fn encode_cursor(cursor: MatchCursor) -> String {
    cursor::encode(&format!("{}:{}", cursor.finished_at, cursor.id))
}

pub fn decode_cursor(text: &str) -> Result<MatchCursor, AppError> {
    let text = cursor::decode(text)?;
    let (millis, id) = text.split_once(':').ok_or_else(bad_cursor)?;
    Ok(MatchCursor {
        finished_at: millis.parse().map_err(|_| bad_cursor())?,
        id: id.parse().map_err(|_| bad_cursor())?,
    })
}

fn parse_expansions(text: &str) -> Result<Vec<Expansion>, AppError> {
    text.split(',')
        .filter(|name| !name.is_empty())
        .map(|name| {
            Expansion::ALL
                .into_iter()
                .find(|expansion| expansion.name() == name)
                .ok_or_else(|| AppError::BadRequest(format!("unknown expansion {name:?}")))
        })
        .collect()
}

fn parse_time(field: &str, text: Option<&str>) -> Result<Option<i64>, AppError> {
    text.map(|text| {
        parse_rfc3339(text)
            .ok_or_else(|| AppError::BadRequest(format!("{field} must be an RFC 3339 time")))
    })
    .transpose()
}

fn filter_of(query: &MatchQuery) -> Result<MatchFilter, AppError> {
    Ok(MatchFilter {
        player: query.player,
        opponent: query.opponent,
        from: parse_time("from", query.from.as_deref())?,
        to: parse_time("to", query.to.as_deref())?,
        expansions: parse_expansions(query.expansions.as_deref().unwrap_or_default())?,
        players: query
            .players
            .map(|players| in_range("players", players.into(), 2, 6).map(|n| n as u8))
            .transpose()?,
        status: query.status,
        include_private: false,
    })
}

async fn page_of(
    state: &AppState,
    filter: MatchFilter,
    query: &MatchQuery,
) -> Result<MatchPageView, AppError> {
    let after = query.cursor.as_deref().map(decode_cursor).transpose()?;
    let limit = in_range("limit", query.limit.unwrap_or(20), 1, MAX_LIMIT)?;
    let page = state.store.matches(&filter, after, limit).await?;
    Ok(MatchPageView {
        items: page.items.into_iter().map(match_view).collect(),
        next_cursor: page.next.map(encode_cursor),
    })
}

#[utoipa::path(get, path = "/api/matches", tag = "matches", params(MatchQuery),
    responses((status = 200, body = MatchPageView, description = "Finished public matches, newest first"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: a malformed filter or cursor")))]
pub async fn list_matches(
    State(state): State<AppState>,
    AppQuery(query): AppQuery<MatchQuery>,
) -> Result<Json<MatchPageView>, AppError> {
    let filter = filter_of(&query)?;
    Ok(Json(page_of(&state, filter, &query).await?))
}

#[utoipa::path(get, path = "/api/players/{id}/matches", tag = "players",
    params(("id" = Uuid, Path, description = "player id"), MatchQuery),
    responses((status = 200, body = MatchPageView, description = "The player's finished public matches, newest first"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: a malformed id, filter or cursor")))]
pub async fn player_matches(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    AppQuery(query): AppQuery<MatchQuery>,
) -> Result<Json<MatchPageView>, AppError> {
    let mut filter = filter_of(&query)?;
    filter.player = Some(id);
    Ok(Json(page_of(&state, filter, &query).await?))
}

#[utoipa::path(get, path = "/api/matches/{id}", tag = "matches",
    params(("id" = Uuid, Path, description = "match id (the game's id)"),
        ("x-invite-code" = Option<String>, Header, description = "a private game's invite code")),
    security((), ("seat_token" = [])),
    responses((status = 200, body = MatchDetailView, description = "The match with every scored feature"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID, or the body is malformed"),
        (status = 403, body = ErrorResponse, description = "`private_game`: a private game, without its invite code or a seat token"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no finished match with this id")))]
pub async fn show_match(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    headers: HeaderMap,
) -> Result<Json<MatchDetailView>, AppError> {
    require_match_access(&state, id, &headers).await?;
    let detail = state
        .store
        .match_detail(id)
        .await?
        .ok_or(AppError::NotFound("no finished match with this id"))?;
    let ratings = state.store.match_ratings(id).await?;
    Ok(Json(MatchDetailView {
        summary: match_view(detail.summary),
        breakdown: detail.breakdown,
        ratings,
    }))
}

#[utoipa::path(get, path = "/api/matches/{id}/record", tag = "matches",
    params(("id" = Uuid, Path, description = "match id"),
        ("x-invite-code" = Option<String>, Header, description = "a private game's invite code")),
    security((), ("seat_token" = [])),
    responses((status = 200, body = MatchRecord, description = "The game record of notation.md; `carcassonne-server replay` verifies it"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID, or the body is malformed"),
        (status = 403, body = ErrorResponse, description = "`private_game`: a private game, without its invite code or a seat token"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no finished match with this id")))]
pub async fn match_record(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    headers: HeaderMap,
) -> Result<Json<Value>, AppError> {
    require_match_access(&state, id, &headers).await?;
    let record = state
        .store
        .match_record(id)
        .await?
        .ok_or(AppError::NotFound("no finished match with this id"))?;
    Ok(Json(record))
}

/// A private game's match is shown only to the holders of its invite code or seat tokens.
async fn require_match_access(
    state: &AppState,
    id: Uuid,
    headers: &HeaderMap,
) -> Result<(), AppError> {
    match state.store.lobby(id).await? {
        Some((lobby, seats)) => require_private_access(&lobby, &seats, headers),
        // Imported history has no lobby, and a missing match is reported by the caller.
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::extract::Query;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use utoipa::OpenApi;

    #[test]
    fn cursors_round_trip_and_garbage_is_rejected() {
        let cursor = MatchCursor {
            finished_at: 1_796_000_000_000,
            id: Uuid::new_v4(),
        };
        assert_eq!(decode_cursor(&encode_cursor(cursor)).unwrap(), cursor);
        assert!(decode_cursor("not-a-cursor").is_err());
        assert!(decode_cursor(&URL_SAFE_NO_PAD.encode("12:nope")).is_err());
    }

    #[test]
    fn the_status_filter_reaches_the_store() {
        let query_of = |uri: &str| Query::<MatchQuery>::try_from_uri(&uri.parse().unwrap());
        let Query(abandoned) = query_of("/api/matches?status=abandoned").unwrap();
        let filter = filter_of(&abandoned).unwrap();
        assert_eq!(filter.status, Some(MatchStatus::Abandoned));
        let Query(finished) = query_of("/api/matches?status=finished&players=2").unwrap();
        assert_eq!(
            filter_of(&finished).unwrap().status,
            Some(MatchStatus::Finished)
        );
        let Query(any) = query_of("/api/matches").unwrap();
        assert_eq!(filter_of(&any).unwrap().status, None);
        assert!(query_of("/api/matches?status=paused").is_err());
    }

    #[test]
    fn the_document_shows_status_and_resignations() {
        let document = serde_json::to_value(crate::api::ApiDoc::openapi()).unwrap();
        let schemas = &document["components"]["schemas"];
        let status = &schemas["MatchView"]["properties"]["status"];
        assert!(status.to_string().contains("MatchStatusName"), "{status}");
        assert!(
            schemas["MatchView"]["required"]
                .as_array()
                .unwrap()
                .contains(&"status".into())
        );
        let resigned = &schemas["SeatResult"]["properties"]["resigned"];
        assert_eq!(resigned["type"], "boolean", "{resigned}");
        let names = schemas["MatchStatusName"].to_string();
        assert!(
            names.contains("finished") && names.contains("abandoned"),
            "{names}"
        );
        let parameters = &document["paths"]["/api/matches"]["get"]["parameters"];
        let documented = parameters.as_array().unwrap().iter().any(|parameter| {
            parameter["name"] == "status" && parameter.to_string().contains("MatchStatusName")
        });
        assert!(documented, "{parameters}");
    }

    #[test]
    fn expansion_filters_parse_by_notation_name() {
        assert_eq!(
            parse_expansions("river,inns_and_cathedrals").unwrap(),
            vec![Expansion::River, Expansion::InnsAndCathedrals]
        );
        assert!(parse_expansions("").unwrap().is_empty());
        assert!(parse_expansions("dragons").is_err());
    }
}
