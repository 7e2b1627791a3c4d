//! Lasting player identities: `POST /api/players`, `POST /api/players/sign-in` (an
//! account of another site, by its JWT), `GET /api/players/{id}` (with the player's
//! record, points by kind, ratings and newest matches), and
//! `GET /api/players/{id}/head-to-head/{opponent}`.
//!
//! An identity is an id and a secret (shown once, stored hashed). Joining a seat with it
//! puts the match in the player's history; a guest joins with a display name only.

use crate::api::extract::{AppJson, AppPath};
use crate::api::headers::bearer_token;
use crate::api::matches::{MatchView, match_view};
use crate::api::ratings::PlayerRatingView;
use crate::auth::Token;
use crate::clock::{now_millis, rfc3339};
use crate::error::{AppError, ErrorResponse};
use crate::rooms::names::display_name;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use carcassonne_core::PointsByKind;
use carcassonne_store::{HeadToHead, MatchFilter, PlayerRow, PlayerStats, Store};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreatePlayer {
    /// 1 to 32 visible characters.
    #[schema(min_length = 1, max_length = 32)]
    pub display_name: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PlayerCreated {
    pub id: Uuid,
    pub display_name: String,
    /// Shown once: keep it to join seats as this player.
    pub secret: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PlayerView {
    pub id: Uuid,
    pub display_name: String,
    pub created_at: String,
    pub games: u64,
    pub wins: u64,
    pub average_score: f64,
    /// Every point of the player's matches, by the kind of feature that paid it.
    pub points: PointsByKind,
    /// The player's rating in each pool they have played rated games in.
    pub ratings: Vec<PlayerRatingView>,
    /// The player's newest public matches, at most five: `GET
    /// /api/players/{id}/matches` lists them all.
    pub recent_matches: Vec<MatchView>,
}

/// Two players' record in the matches both played (private ones counted too), seen
/// from `player`.
#[derive(Debug, Serialize, ToSchema)]
pub struct HeadToHeadView {
    pub player: PlayerName,
    pub opponent: PlayerName,
    #[serde(flatten)]
    pub record: HeadToHead,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PlayerName {
    pub id: Uuid,
    pub display_name: String,
}

/// Who is taking a seat: a lasting identity (id and secret), or a guest by name.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct Identity {
    /// A guest's name, or a different name for this seat than the identity's own: 1 to 32
    /// visible characters.
    #[schema(min_length = 1, max_length = 32)]
    pub display_name: Option<String>,
    pub player_id: Option<Uuid>,
    pub player_secret: Option<String>,
}

/// The stored player `id` if `secret` is theirs; `bad_player_secret` for a wrong or
/// missing secret and for an unknown id alike, so that ids cannot be probed.
pub async fn verify_player(
    store: &Store,
    id: Uuid,
    secret: Option<String>,
) -> Result<carcassonne_store::PlayerRow, AppError> {
    let secret = secret.ok_or(AppError::BadPlayerSecret)?;
    let player = store.player(id).await?.ok_or(AppError::BadPlayerSecret)?;
    if Token::from_client(secret).hash() != player.secret_hash {
        return Err(AppError::BadPlayerSecret);
    }
    Ok(player)
}

/// The name and identity a seat will carry, with the player's secret checked.
pub async fn resolve_identity(
    store: &Store,
    identity: Identity,
) -> Result<(String, Option<Uuid>), AppError> {
    let Some(player_id) = identity.player_id else {
        let name = identity.display_name.ok_or(AppError::BadRequest(
            "give a display_name, or a player_id and player_secret".into(),
        ))?;
        return Ok((display_name(&name)?, None));
    };
    let player = verify_player(store, player_id, identity.player_secret).await?;
    let name = match identity.display_name {
        Some(name) => display_name(&name)?,
        None => player.display_name,
    };
    Ok((name, Some(player_id)))
}

#[utoipa::path(post, path = "/api/players", tag = "players",
    request_body = CreatePlayer,
    responses((status = 201, body = PlayerCreated, description = "The new identity and its secret (shown only here)"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: a malformed body or display name")))]
pub async fn create_player(
    State(state): State<AppState>,
    AppJson(body): AppJson<CreatePlayer>,
) -> Result<(StatusCode, Json<PlayerCreated>), AppError> {
    let display_name = display_name(&body.display_name)?;
    let secret = Token::generate();
    let row = PlayerRow {
        id: Uuid::new_v4(),
        display_name: display_name.clone(),
        secret_hash: secret.hash(),
        created_at: now_millis(),
    };
    state.store.create_player(&row).await?;
    let created = PlayerCreated {
        id: row.id,
        display_name,
        secret: secret.reveal().to_owned(),
    };
    Ok((StatusCode::CREATED, Json(created)))
}

/// How long a recovery code stays usable.
const RECOVERY_CODE_LIFETIME_MS: i64 = 24 * 60 * 60 * 1000;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlayerSecret {
    pub player_secret: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RecoveryCodeIssued {
    /// Shown once: entered on another device (`POST /api/players/recover`), it moves the
    /// identity there. It works once, and replaces any earlier code.
    pub recovery_code: String,
    /// RFC 3339; the code is refused from then on.
    pub expires_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Recover {
    pub recovery_code: String,
}

#[utoipa::path(post, path = "/api/players/{id}/recovery-code", tag = "players",
    params(("id" = Uuid, Path, description = "player id")), request_body = PlayerSecret,
    responses((status = 201, body = RecoveryCodeIssued, description = "A one-time code that moves this identity to another device"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID, or the body is malformed"),
        (status = 401, body = ErrorResponse, description = "`bad_player_secret`: the secret is not this player's (or there is no such player)")))]
pub async fn issue_recovery_code(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
    AppJson(body): AppJson<PlayerSecret>,
) -> Result<(StatusCode, Json<RecoveryCodeIssued>), AppError> {
    verify_player(&state.store, id, Some(body.player_secret)).await?;
    let code = Token::generate();
    let expires_at = now_millis() + RECOVERY_CODE_LIFETIME_MS;
    if !state
        .store
        .issue_recovery_code(id, &code.hash(), expires_at)
        .await?
    {
        return Err(AppError::BadPlayerSecret);
    }
    let issued = RecoveryCodeIssued {
        recovery_code: code.reveal().to_owned(),
        expires_at: rfc3339(expires_at),
    };
    Ok((StatusCode::CREATED, Json(issued)))
}

#[utoipa::path(post, path = "/api/players/recover", tag = "players",
    request_body = Recover,
    responses((status = 200, body = PlayerCreated, description = "The identity, with a new secret: the old one stops working"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: a malformed body"),
        (status = 401, body = ErrorResponse, description = "`bad_recovery_code`: unknown, already used, replaced by a newer one, or expired")))]
pub async fn recover(
    State(state): State<AppState>,
    AppJson(body): AppJson<Recover>,
) -> Result<Json<PlayerCreated>, AppError> {
    let code = Token::from_client(body.recovery_code.trim());
    let secret = Token::generate();
    let recovered = state
        .store
        .recover_player(&code.hash(), now_millis(), &secret.hash())
        .await?;
    let player = recovered.ok_or(AppError::BadRecoveryCode)?;
    Ok(Json(PlayerCreated {
        id: player.id,
        display_name: player.display_name,
        secret: secret.reveal().to_owned(),
    }))
}

#[utoipa::path(post, path = "/api/players/sign-in", tag = "players",
    security(("account_token" = [])),
    responses((status = 201, body = PlayerCreated, description = "The account's first sign-in: a new player bound to it, and its secret"),
        (status = 200, body = PlayerCreated, description = "The account's player, with a new secret (the one an earlier sign-in gave stops working)"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: a malformed request"),
        (status = 401, body = ErrorResponse, description = "`missing_token`: no `Authorization: Bearer JWT`; `bad_account_token`: not the configured issuer's, badly signed, or out of date"),
        (status = 404, body = ErrorResponse, description = "`not_found`: this server signs in no other site's accounts")))]
pub async fn sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<(StatusCode, Json<PlayerCreated>), AppError> {
    // A request without a token is refused as such, whether or not accounts are set up.
    let token = bearer_token(&headers)?;
    let issuer = (state.accounts.as_ref()).ok_or(AppError::NotFound(
        "this server signs in no other site's accounts",
    ))?;
    let claims = issuer.verify(token.reveal())?;
    let name = [&claims.name, &claims.preferred_username]
        .into_iter()
        .flatten()
        .find_map(|name| display_name(name).ok())
        .unwrap_or_else(|| "Player".to_owned());
    let secret = Token::generate();
    let candidate = PlayerRow {
        id: Uuid::new_v4(),
        display_name: name,
        secret_hash: secret.hash(),
        created_at: now_millis(),
    };
    let signed_in = state
        .store
        .sign_in(&issuer.issuer, &claims.sub, &candidate)
        .await;
    let (player, created) = match signed_in {
        // Another first sign-in of the same account won the race: it is bound now.
        Err(carcassonne_store::StoreError::Conflict(_)) => {
            state
                .store
                .sign_in(&issuer.issuer, &claims.sub, &candidate)
                .await?
        }
        other => other?,
    };
    tracing::info!(player = %player.id, created, "signed in by account");
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let body = PlayerCreated {
        id: player.id,
        display_name: player.display_name,
        secret: secret.reveal().to_owned(),
    };
    Ok((status, Json(body)))
}

#[utoipa::path(get, path = "/api/players/{id}", tag = "players",
    params(("id" = Uuid, Path, description = "player id")),
    responses((status = 200, body = PlayerView, description = "The player and their record"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: the id is not a UUID, or the body is malformed"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no player with this id")))]
pub async fn show_player(
    State(state): State<AppState>,
    AppPath(id): AppPath<Uuid>,
) -> Result<Json<PlayerView>, AppError> {
    let not_found = || AppError::NotFound("no player with this id");
    let player = state.store.player(id).await?.ok_or_else(not_found)?;
    let stats: PlayerStats = state.store.player_stats(id).await?.ok_or_else(not_found)?;
    let ratings = state.store.player_ratings(id).await?;
    let theirs = MatchFilter {
        player: Some(id),
        ..MatchFilter::default()
    };
    let recent = state.store.matches(&theirs, None, RECENT_MATCHES).await?;
    Ok(Json(PlayerView {
        id,
        display_name: player.display_name,
        created_at: rfc3339(player.created_at),
        games: stats.games,
        wins: stats.wins,
        average_score: stats.average_score,
        points: stats.points,
        ratings: ratings.into_iter().map(PlayerRatingView::from).collect(),
        recent_matches: recent.items.into_iter().map(match_view).collect(),
    }))
}

/// How many matches a profile shows.
const RECENT_MATCHES: u32 = 5;

#[utoipa::path(get, path = "/api/players/{id}/head-to-head/{opponent}", tag = "players",
    params(("id" = Uuid, Path, description = "player id"),
        ("opponent" = Uuid, Path, description = "the other player's id")),
    responses((status = 200, body = HeadToHeadView, description = "The two players' record against each other"),
        (status = 400, body = ErrorResponse, description = "`bad_request`: an id is not a UUID, or both are the same player"),
        (status = 404, body = ErrorResponse, description = "`not_found`: no player with one of these ids")))]
pub async fn head_to_head(
    State(state): State<AppState>,
    AppPath((id, opponent)): AppPath<(Uuid, Uuid)>,
) -> Result<Json<HeadToHeadView>, AppError> {
    if id == opponent {
        return Err(AppError::BadRequest(
            "a player has no record against themselves".into(),
        ));
    }
    let player = player_name(&state.store, id).await?;
    let opponent = player_name(&state.store, opponent).await?;
    let record = state.store.head_to_head(player.id, opponent.id).await?;
    Ok(Json(HeadToHeadView {
        player,
        opponent,
        record,
    }))
}

async fn player_name(store: &Store, id: Uuid) -> Result<PlayerName, AppError> {
    let player = store.player(id).await?;
    let player = player.ok_or(AppError::NotFound("no player with this id"))?;
    Ok(PlayerName {
        id,
        display_name: player.display_name,
    })
}
