//! Secrets: seat tokens, player secrets and invite codes.
//!
//! Tokens are 256 random bits from the operating system's generator, shown to their
//! owner once and stored only as a SHA-256 hash. A hash of a long random value needs no
//! salt or slow KDF: it cannot be guessed, only stolen, and the hash alone is useless.
//! Tokens never appear in logs: [`Token`] redacts itself in `Debug`.

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
}
