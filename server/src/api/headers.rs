//! What a REST request carries in its headers: a seat token (`Authorization: Bearer`)
//! and a private lobby's invite code (`X-Invite-Code`).

use crate::auth::{Token, invite_code_matches};
use crate::error::AppError;
use crate::rooms::error::RoomError;
use axum::http::HeaderMap;

/// The header that carries a private lobby's invite code on REST reads.
pub const INVITE_CODE_HEADER: &str = "x-invite-code";

/// Whether the request may see a private lobby or match: it carries the invite code whose
/// hash is `invite_hash` (`X-Invite-Code`) or the seat token of one of its seats
/// (`Authorization: Bearer`).
pub fn may_see_private(
    invite_hash: Option<&str>,
    seat_token_hashes: &[&str],
    headers: &HeaderMap,
) -> bool {
    let header = |name| headers.get(name).and_then(|value| value.to_str().ok());
    let given = header(INVITE_CODE_HEADER).map(str::trim);
    let code_fits = invite_hash.is_some_and(|expected| invite_code_matches(expected, given));
    let holds_seat =
        bearer_token(headers).is_ok_and(|token| seat_token_hashes.contains(&token.hash().as_str()));
    code_fits || holds_seat
}

/// The token of an `Authorization: Bearer TOKEN` header.
pub fn bearer_token(headers: &HeaderMap) -> Result<Token, AppError> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)
        .ok_or(AppError::MissingToken)?;
    let text = value.to_str().map_err(|_| RoomError::BadToken)?;
    let token = text
        .strip_prefix("Bearer ")
        .ok_or(AppError::MissingToken)?
        .trim();
    if token.is_empty() {
        return Err(AppError::MissingToken);
    }
    Ok(Token::from_client(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_header_is_required_and_parsed() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer_token(&headers), Err(AppError::MissingToken));
        headers.insert("authorization", "Bearer abc".parse().unwrap());
        assert_eq!(bearer_token(&headers).unwrap().reveal(), "abc");
        headers.insert("authorization", "Basic abc".parse().unwrap());
        assert_eq!(bearer_token(&headers), Err(AppError::MissingToken));
    }
}
