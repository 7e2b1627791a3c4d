//! Ratings over REST: a pool's leaderboard, and a player's rating history in a pool.
//!
//! Rated games change ratings as they are recorded (see the store's `ratings` module);
//! these reads page with keyset cursors, so that a deep page costs what the first does.

use crate::api::cursor::{self, bad_cursor};
use crate::api::extract::{AppPath, AppQuery};
use crate::clock::rfc3339;
use crate::error::{AppError, ErrorResponse};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use carcassonne_store::ratings::{Rating, RatingPool};
use carcassonne_store::{LeaderboardCursor, LeaderboardEntry, PlayerRating};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// Entries per page when the client does not say.
const DEFAULT_PAGE: u32 = 50;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RatingPageQuery {
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Entries per page, 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
}

/// A page of a pool's leaderboard: ranked players, best first.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeaderboardPage {
    pub pool: RatingPool,
    pub items: Vec<LeaderboardEntry>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// A player's rating in one pool, as profiles show it.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlayerRatingView {
    pub pool: RatingPool,
    /// The conservative estimate `mu - 3 sigma` leaderboards order by.
    pub rating: f64,
    pub skill: Rating,
    /// Rated games finished in the pool.
    pub games: u32,
    /// Too few rated games in the pool to be ranked on its leaderboard yet.
    pub provisional: bool,
    /// When the player's last rated match in the pool ended.
    pub updated_at: String,
}

impl From<PlayerRating> for PlayerRatingView {
    fn from(rating: PlayerRating) -> PlayerRatingView {
        PlayerRatingView {
            pool: rating.pool,
            rating: rating.rating,
            skill: rating.skill,
            games: rating.games,
            provisional: rating.provisional,
            updated_at: rfc3339(rating.updated_at),
        }
    }
}

/// One rated match of a player's history.
#[derive(Debug, Serialize, ToSchema)]
pub struct RatedMatchView {
    pub match_id: Uuid,
    pub finished_at: String,
    pub seat: u8,
    /// 1 for first; tied seats share a place.
    pub place: u8,
    pub before: Rating,
    pub after: Rating,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RatingHistoryPage {
    pub pool: RatingPool,
    /// Newest first.
    pub items: Vec<RatedMatchView>,
    /// Pass as `cursor` for the next (older) page; absent on the last page.
    pub next_cursor: Option<String>,
}

#[utoipa::path(get, path = "/api/leaderboards/{pool}", tag = "ratings",
    params(("pool" = RatingPool, Path, description = "`two_player` or `multiplayer`"), RatingPageQuery),
    responses((status = 200, body = LeaderboardPage, description = "Ranked players, best first; provisional players are left out"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: a malformed cursor or limit"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no such pool")))]
pub async fn leaderboard(
    State(state): State<AppState>,
    AppPath(pool): AppPath<String>,
    AppQuery(query): AppQuery<RatingPageQuery>,
) -> Result<Json<LeaderboardPage>, AppError> {
    let pool = parse_pool(&pool)?;
    let limit = page_limit(query.limit)?;
    let after = query
        .cursor
        .as_deref()
        .map(decode_leaderboard_cursor)
        .transpose()?;
    let mut items = state.store.leaderboard(pool, after, limit + 1).await?;
    let next_cursor = cut_page(&mut items, limit).map(|last| {
        encode_leaderboard_cursor(LeaderboardCursor {
            rating: last.rating,
            player_id: last.player_id,
        })
    });
    Ok(Json(LeaderboardPage {
        pool,
        items,
        next_cursor,
    }))
}

#[utoipa::path(get, path = "/api/players/{id}/ratings/{pool}", tag = "ratings",
    params(("id" = Uuid, Path, description = "player id"),
        ("pool" = RatingPool, Path, description = "`two_player` or `multiplayer`"), RatingPageQuery),
    responses((status = 200, body = RatingHistoryPage, description = "The player's rated matches in the pool, newest first, with their rating before and after each"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: a malformed id, cursor or limit"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no such player or pool")))]
pub async fn rating_history(
    State(state): State<AppState>,
    AppPath((id, pool)): AppPath<(Uuid, String)>,
    AppQuery(query): AppQuery<RatingPageQuery>,
) -> Result<Json<RatingHistoryPage>, AppError> {
    let pool = parse_pool(&pool)?;
    let limit = page_limit(query.limit)?;
    let before = query
        .cursor
        .as_deref()
        .map(decode_history_cursor)
        .transpose()?;
    if state.store.player(id).await?.is_none() {
        return Err(AppError::NotFound("no player with this id"));
    }
    let mut entries = state
        .store
        .rating_history(id, pool, before, limit + 1)
        .await?;
    let next_cursor =
        cut_page(&mut entries, limit).map(|last| cursor::encode(&last.rating_seq.to_string()));
    let items = entries
        .into_iter()
        .map(|entry| RatedMatchView {
            match_id: entry.match_id,
            finished_at: rfc3339(entry.finished_at),
            seat: entry.change.seat,
            place: entry.change.place,
            before: entry.change.before,
            after: entry.change.after,
        })
        .collect();
    Ok(Json(RatingHistoryPage {
        pool,
        items,
        next_cursor,
    }))
}

fn parse_pool(name: &str) -> Result<RatingPool, AppError> {
    RatingPool::from_name(name).ok_or(AppError::NotFound(
        "no such rating pool: the pools are two_player and multiplayer",
    ))
}

fn page_limit(limit: Option<u32>) -> Result<u32, AppError> {
    match limit.unwrap_or(DEFAULT_PAGE) {
        limit @ 1..=carcassonne_store::MAX_LEADERBOARD_PAGE => Ok(limit),
        _ => Err(AppError::BadRequest("limit must be 1 to 200".into())),
    }
}

/// Drops the extra entry of a page fetched one entry long; when there was one, the page's
/// last entry is where the next page starts.
fn cut_page<T>(items: &mut Vec<T>, limit: u32) -> Option<&T> {
    let limit = limit as usize;
    if items.len() <= limit {
        return None;
    }
    items.truncate(limit);
    items.last()
}

/// The rating's exact bits and the player: a float printed in decimal might not read back
/// as the same number, and the next page must start exactly after this entry.
fn encode_leaderboard_cursor(cursor: LeaderboardCursor) -> String {
    cursor::encode(&format!(
        "{:016x}:{}",
        cursor.rating.to_bits(),
        cursor.player_id
    ))
}

fn decode_leaderboard_cursor(text: &str) -> Result<LeaderboardCursor, AppError> {
    let text = cursor::decode(text)?;
    let (bits, id) = text.split_once(':').ok_or_else(bad_cursor)?;
    let bits = u64::from_str_radix(bits, 16).map_err(|_| bad_cursor())?;
    let rating = f64::from_bits(bits);
    if !rating.is_finite() {
        return Err(bad_cursor());
    }
    Ok(LeaderboardCursor {
        rating,
        player_id: id.parse().map_err(|_| bad_cursor())?,
    })
}

fn decode_history_cursor(text: &str) -> Result<i64, AppError> {
    cursor::decode(text)?.parse().map_err(|_| bad_cursor())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    #[test]
    fn leaderboard_cursors_round_trip_exactly_and_garbage_is_rejected() {
        let cursor = LeaderboardCursor {
            rating: 0.1 + 0.2,
            player_id: Uuid::from_u128(7),
        };
        assert_eq!(
            decode_leaderboard_cursor(&encode_leaderboard_cursor(cursor)).unwrap(),
            cursor
        );
        assert!(decode_leaderboard_cursor("nope").is_err());
        let infinite =
            URL_SAFE_NO_PAD.encode(format!("{:016x}:{}", f64::INFINITY.to_bits(), Uuid::nil()));
        assert!(decode_leaderboard_cursor(&infinite).is_err());
        assert!(decode_history_cursor(&URL_SAFE_NO_PAD.encode("x")).is_err());
    }

    #[test]
    fn pages_are_bounded_and_pools_named() {
        assert!(page_limit(Some(0)).is_err());
        assert!(page_limit(Some(201)).is_err());
        assert_eq!(page_limit(None).unwrap(), DEFAULT_PAGE);
        assert!(parse_pool("two_player").is_ok());
        assert!(matches!(parse_pool("chess"), Err(AppError::NotFound(_))));
    }
}
