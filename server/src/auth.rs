//! Secrets: seat tokens, player secrets and invite codes.
//!
//! Tokens are 256 random bits from the operating system's generator, shown to their
//! owner once and stored only as a SHA-256 hash. A hash of a long random value needs no
//! salt or slow KDF: it cannot be guessed, only stolen, and the hash alone is useless.
//! Tokens never appear in logs: [`Token`] redacts itself in `Debug`.

use crate::error::AppError;
use crate::rooms::error::RoomError;
use axum::http::HeaderMap;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use carcassonne_store::sha256_hex;
use std::fmt;

/// A secret presented by a client. `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A fresh random token: 32 bytes, base64url without padding (43 characters).
    pub fn generate() -> Token {
        Token(random_text(32))
    }

    pub fn from_client(text: impl Into<String>) -> Token {
        Token(text.into())
    }

    /// The value to hand to its owner, once.
    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// What is stored: the hex SHA-256 of the token, by the store's own function, with
    /// which it hashes the invite codes that older versions kept in clear.
    pub fn hash(&self) -> String {
        sha256_hex(&self.0)
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// What is stored of an invite code: like tokens, only its SHA-256.
pub fn invite_code_hash(code: &str) -> String {
    Token::from_client(code).hash()
}

/// Whether `given` is the invite code stored as `expected_hash`; never without a code.
pub fn invite_code_matches(expected_hash: &str, given: Option<&str>) -> bool {
    given.is_some_and(|code| invite_code_hash(code) == expected_hash)
}

/// A short random invite code for a private lobby (64 bits).
pub fn invite_code() -> String {
    random_text(8)
}

fn random_text(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    rand::fill(&mut buffer[..]);
    URL_SAFE_NO_PAD.encode(buffer)
}

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
    fn tokens_are_long_random_and_hash_to_hex() {
        let a = Token::generate();
        let b = Token::generate();
        assert_ne!(a, b);
        assert_eq!(a.reveal().len(), 43);
        assert_eq!(a.hash().len(), 64);
        assert_eq!(a.hash(), Token::from_client(a.reveal()).hash());
        assert!(!format!("{a:?}").contains(a.reveal()));
    }

    #[test]
    fn invite_codes_match_only_their_stored_hash() {
        let code = invite_code();
        let stored = invite_code_hash(&code);
        assert!(invite_code_matches(&stored, Some(&code)));
        assert!(!invite_code_matches(&stored, Some("wrong")));
        assert!(!invite_code_matches(&stored, None));
        assert_ne!(stored, code, "only the hash is kept");
    }

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
