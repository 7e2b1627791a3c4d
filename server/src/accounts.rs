//! Accounts of another site: an operator may name a JWT issuer whose tokens sign a
//! player in. A token's `sub` (under its `iss`) is bound to one player of this server,
//! made at its first sign-in; the token is checked against the issuer's public keys,
//! read at start from a PEM file or a JWKS file (`--jwt-key`), never fetched.
//!
//! Only public-key algorithms are taken (RSA, ECDSA, EdDSA): a shared HMAC secret would
//! let this server mint the site's tokens.

use crate::error::AppError;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use std::path::Path;

/// The configured issuer and its keys.
pub struct AccountIssuer {
    pub issuer: String,
    audience: Option<String>,
    keys: Vec<IssuerKey>,
}

struct IssuerKey {
    /// The `kid` a token names to pick this key; any token may use a key without one.
    id: Option<String>,
    key: DecodingKey,
    algorithms: Vec<Algorithm>,
}

impl std::fmt::Debug for AccountIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountIssuer")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("keys", &self.keys.len())
            .finish()
    }
}

/// What this server reads of a token, beyond what `Validation` checks (`exp`, `nbf` when
/// present, `aud` when one is configured).
#[derive(Debug, Deserialize)]
pub struct AccountClaims {
    /// The issuer, as one string: required, and compared with the configured issuer
    /// here. `Validation` alone lets a token without `iss` through, and takes a list.
    pub iss: String,
    pub sub: String,
    /// A display name for the player's first sign-in.
    pub name: Option<String>,
    pub preferred_username: Option<String>,
}

const RSA: [Algorithm; 6] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
];

impl AccountIssuer {
    /// The issuer `issuer` with the public keys in `key_file`: one PEM public key, or a
    /// JWKS (`{"keys": [...]}`).
    pub fn load(
        issuer: &str,
        key_file: &Path,
        audience: Option<String>,
    ) -> Result<AccountIssuer, String> {
        let text = std::fs::read_to_string(key_file)
            .map_err(|error| format!("{}: {error}", key_file.display()))?;
        let keys = if text.trim_start().starts_with('{') {
            keys_of_jwks(&text)?
        } else {
            vec![key_of_pem(text.as_bytes())?]
        };
        if issuer.is_empty() {
            return Err("the issuer must not be empty".into());
        }
        Ok(AccountIssuer {
            issuer: issuer.to_owned(),
            audience,
            keys,
        })
    }

    /// The claims of `token` if one of the issuer's keys signed it, it is this issuer's,
    /// for this audience (when one is set), and in date; `bad_account_token` otherwise.
    pub fn verify(&self, token: &str) -> Result<AccountClaims, AppError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| AppError::BadAccountToken)?;
        let key = self
            .keys
            .iter()
            .filter(|key| key.algorithms.contains(&header.alg))
            .find(|key| key.id.is_none() || key.id == header.kid)
            .ok_or(AppError::BadAccountToken)?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.required_spec_claims.insert("iss".to_owned());
        validation.validate_nbf = true;
        match &self.audience {
            Some(audience) => {
                validation.set_audience(&[audience]);
                // Checked only where present, unless required.
                validation.required_spec_claims.insert("aud".to_owned());
            }
            None => validation.validate_aud = false,
        }
        let data = jsonwebtoken::decode::<AccountClaims>(token, &key.key, &validation)
            .map_err(|_| AppError::BadAccountToken)?;
        if data.claims.sub.is_empty() || data.claims.iss != self.issuer {
            return Err(AppError::BadAccountToken);
        }
        Ok(data.claims)
    }
}

fn key_of_pem(pem: &[u8]) -> Result<IssuerKey, String> {
    let key = |key, algorithms: &[Algorithm]| IssuerKey {
        id: None,
        key,
        algorithms: algorithms.to_vec(),
    };
    if let Ok(found) = DecodingKey::from_ed_pem(pem) {
        return Ok(key(found, &[Algorithm::EdDSA]));
    }
    if let Ok(found) = DecodingKey::from_ec_pem(pem) {
        return Ok(key(found, &[Algorithm::ES256, Algorithm::ES384]));
    }
    if let Ok(found) = DecodingKey::from_rsa_pem(pem) {
        return Ok(key(found, &RSA));
    }
    Err("not a PEM public key of RSA, ECDSA (P-256, P-384) or Ed25519".into())
}

fn keys_of_jwks(text: &str) -> Result<Vec<IssuerKey>, String> {
    let set: JwkSet = serde_json::from_str(text).map_err(|error| format!("a JWKS: {error}"))?;
    let mut keys = Vec::new();
    for jwk in &set.keys {
        let algorithms = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => RSA.to_vec(),
            AlgorithmParameters::EllipticCurve(params) => match params.curve {
                EllipticCurve::P256 => vec![Algorithm::ES256],
                EllipticCurve::P384 => vec![Algorithm::ES384],
                _ => return Err("a JWKS key on a curve this server does not take".into()),
            },
            AlgorithmParameters::OctetKeyPair(_) => vec![Algorithm::EdDSA],
            AlgorithmParameters::OctetKey(_) => {
                return Err(
                    "a JWKS with a shared (HMAC) secret: only public keys are taken".into(),
                );
            }
        };
        let key = DecodingKey::from_jwk(jwk).map_err(|error| format!("a JWKS key: {error}"))?;
        keys.push(IssuerKey {
            id: jwk.common.key_id.clone(),
            key,
            algorithms,
        });
    }
    if keys.is_empty() {
        return Err("the JWKS has no keys".into());
    }
    Ok(keys)
}
