//! Players signed in by another site's accounts, over real sockets on both databases:
//! the server checks the site's JWTs against its public key (a PEM file, or a JWKS file),
//! binds each account to one player at its first sign-in, gives a new secret at each
//! sign-in, and refuses every token it should (typed `bad_account_token`): expired, not
//! yet valid, another issuer's or audience's, another key's, a shared-secret one. Keys
//! are made by the test with `openssl`. A recovery code moves an identity to another
//! device once.

use carcassonne_tests::client::Api;
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::server::{TestServer, server_binary};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

const ISSUER: &str = "https://accounts.example";

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

/// An Ed25519 key pair made by openssl: the private key's PEM and the public key's file.
fn key_pair(dir: &Path, name: &str) -> (Vec<u8>, PathBuf) {
    let private = dir.join(format!("{name}.pem"));
    let public = dir.join(format!("{name}.pub.pem"));
    let made = Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&private)
        .status()
        .expect("openssl is installed");
    assert!(made.success());
    let exported = Command::new("openssl")
        .args(["pkey", "-pubout", "-in"])
        .arg(&private)
        .arg("-out")
        .arg(&public)
        .status()
        .unwrap();
    assert!(exported.success());
    (std::fs::read(&private).unwrap(), public)
}

/// A JWKS file holding the public key of `public_pem` under key id `kid`.
fn jwks_of(dir: &Path, public_pem: &Path, kid: &str) -> PathBuf {
    let der = Command::new("openssl")
        .args(["pkey", "-pubin", "-outform", "DER", "-in"])
        .arg(public_pem)
        .output()
        .unwrap();
    assert!(der.status.success());
    // An Ed25519 SubjectPublicKeyInfo ends with the 32 bytes of the key.
    let raw = &der.stdout[der.stdout.len() - 32..];
    use base64::Engine;
    let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw);
    let jwks = json!({ "keys": [{ "kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "alg": "EdDSA", "use": "sig" }] });
    let path = dir.join("jwks.json");
    std::fs::write(&path, jwks.to_string()).unwrap();
    path
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn token(private_pem: &[u8], kid: Option<&str>, claims: Value) -> String {
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = kid.map(str::to_owned);
    let key = EncodingKey::from_ed_pem(private_pem).expect("an Ed25519 private key");
    jsonwebtoken::encode(&header, &claims, &key).expect("a signed token")
}

fn claims(sub: &str, expires_in: i64) -> Value {
    let exp = now() as i64 + expires_in;
    json!({ "iss": ISSUER, "sub": sub, "name": "Alice A.", "exp": exp })
}

async fn sign_in(api: &Api, token: &str) -> (u16, Value) {
    api.post_as("/api/players/sign-in", token, json!({})).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_sites_accounts_sign_players_in() {
    let dir = tempfile::tempdir().unwrap();
    let (private, public) = key_pair(dir.path(), "site");
    let (stranger, _) = key_pair(dir.path(), "stranger");
    let key = public.to_str().unwrap();
    for database in TestDatabase::both() {
        let options = ["--jwt-issuer", ISSUER, "--jwt-key", key];
        let server = TestServer::start_with(&database.url(), &options).await;
        let api = Api::new(server.http());

        let (status, first) = sign_in(&api, &token(&private, None, claims("alice", 600))).await;
        assert_eq!(status, 201, "{first}");
        assert_eq!(first["display_name"], "Alice A.");
        let (status, again) = sign_in(&api, &token(&private, None, claims("alice", 600))).await;
        assert_eq!(status, 200, "{again}");
        assert_eq!(again["id"], first["id"], "one player per account");
        assert_ne!(again["secret"], first["secret"]);
        let (_, other) = sign_in(&api, &token(&private, None, claims("bob", 600))).await;
        assert_ne!(other["id"], first["id"]);

        // The newest secret seats the player; the one before no longer does.
        let lobby = |secret: &Value| {
            json!({ "name": "rated", "seats": 2, "rated": true,
                "player_id": first["id"], "player_secret": secret })
        };
        let (status, body) = api.post("/api/lobbies", lobby(&first["secret"])).await;
        assert_eq!((status, code(&body)), (401, "bad_player_secret"), "{body}");
        let (status, body) = api.post("/api/lobbies", lobby(&again["secret"])).await;
        assert_eq!(status, 201, "{body}");

        let refused = [
            token(&private, None, claims("alice", -120)),
            token(
                &private,
                None,
                json!({ "iss": ISSUER, "sub": "alice", "exp": now() + 600, "nbf": now() + 300 }),
            ),
            token(&stranger, None, claims("alice", 600)),
            token(
                &private,
                None,
                json!({ "iss": "https://elsewhere", "sub": "alice", "exp": now() + 600 }),
            ),
            token(
                &private,
                None,
                json!({ "iss": ISSUER, "sub": "", "exp": now() + 600 }),
            ),
            // The issuer is required, and must be the configured one, as a string.
            token(
                &private,
                None,
                json!({ "sub": "alice", "exp": now() + 600 }),
            ),
            token(
                &private,
                None,
                json!({ "iss": null, "sub": "alice", "exp": now() + 600 }),
            ),
            token(
                &private,
                None,
                json!({ "iss": [ISSUER], "sub": "alice", "exp": now() + 600 }),
            ),
            token(
                &private,
                None,
                json!({ "iss": "", "sub": "alice", "exp": now() + 600 }),
            ),
            jsonwebtoken::encode(
                &Header::default(),
                &claims("alice", 600),
                &EncodingKey::from_secret(b"guess"),
            )
            .unwrap(),
            "not a token".to_owned(),
        ];
        for bad in refused {
            let (status, body) = sign_in(&api, &bad).await;
            assert_eq!(
                (status, code(&body)),
                (401, "bad_account_token"),
                "{bad}: {body}"
            );
        }
        let (status, body) = api.post("/api/players/sign-in", json!({})).await;
        assert_eq!((status, code(&body)), (401, "missing_token"), "{body}");
        server.terminate().await;
    }

    // The same key as a JWKS, picked by its key id; and an audience, which tokens must
    // then name.
    let jwks = jwks_of(dir.path(), &public, "k1");
    let options = [
        "--jwt-issuer",
        ISSUER,
        "--jwt-key",
        jwks.to_str().unwrap(),
        "--jwt-audience",
        "carcassonne",
    ];
    let database = TestDatabase::sqlite();
    let server = TestServer::start_with(&database.url(), &options).await;
    let api = Api::new(server.http());
    let for_audience = |audience: Option<&str>| {
        let mut claims = claims("carol", 600);
        if let Some(audience) = audience {
            claims["aud"] = json!(audience);
        }
        claims
    };
    let good = token(&private, Some("k1"), for_audience(Some("carcassonne")));
    let (status, body) = sign_in(&api, &good).await;
    assert_eq!(status, 201, "{body}");
    for bad in [
        token(&private, Some("k2"), for_audience(Some("carcassonne"))),
        token(&private, Some("k1"), for_audience(None)),
        token(&private, Some("k1"), for_audience(Some("elsewhere"))),
    ] {
        let (status, body) = sign_in(&api, &bad).await;
        assert_eq!((status, code(&body)), (401, "bad_account_token"), "{body}");
    }
    server.terminate().await;

    // Without an issuer nothing signs in; a key file that cannot be used stops the start.
    let server = TestServer::start(&database.url()).await;
    let (status, body) = sign_in(
        &Api::new(server.http()),
        &token(&private, None, claims("alice", 600)),
    )
    .await;
    assert_eq!((status, code(&body)), (404, "not_found"), "{body}");
    let api = Api::new(server.http());
    let (status, body) = api.post("/api/players/sign-in", json!({})).await;
    assert_eq!((status, code(&body)), (401, "missing_token"), "{body}");
    server.terminate().await;
    let bad_key = dir.path().join("site.pem.missing");
    let refused = Command::new(server_binary())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--database",
            &database.url(),
        ])
        .args(["--jwt-issuer", ISSUER, "--jwt-key"])
        .arg(&bad_key)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--jwt-key"),
        "{refused:?}"
    );
}

/// A recovery code moves an identity to another device: only the secret's holder gets
/// one, it works once, and the identity then answers to the new secret only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recovery_code_moves_an_identity_to_another_device_once() {
    for database in TestDatabase::both() {
        let server = TestServer::start(&database.url()).await;
        let api = Api::new(server.http());
        let ann = api.register("ann").await;
        let issue = format!("/api/players/{}/recovery-code", ann.id);
        let (status, body) = api.post(&issue, json!({ "player_secret": "wrong" })).await;
        assert_eq!((status, code(&body)), (401, "bad_player_secret"), "{body}");
        let (status, issued) = api
            .post(&issue, json!({ "player_secret": ann.secret }))
            .await;
        assert_eq!(status, 201, "{issued}");
        let recovery_code = issued["recovery_code"].as_str().unwrap();
        assert!(recovery_code.len() >= 40, "a long random code: {issued}");

        let (status, moved) = api
            .post(
                "/api/players/recover",
                json!({ "recovery_code": recovery_code }),
            )
            .await;
        assert_eq!(status, 200, "{moved}");
        assert_eq!(
            (moved["id"].as_str(), moved["display_name"].as_str()),
            (Some(ann.id.as_str()), Some("ann"))
        );
        let new_secret = moved["secret"].as_str().unwrap();
        assert_ne!(new_secret, ann.secret);
        let (status, again) = api
            .post(
                "/api/players/recover",
                json!({ "recovery_code": recovery_code }),
            )
            .await;
        assert_eq!(
            (status, code(&again)),
            (401, "bad_recovery_code"),
            "used once: {again}"
        );

        // The old secret no longer seats the player; the new one does.
        let creator = api.create_lobby("host", 2, json!({})).await;
        let join = format!("/api/lobbies/{}/join", creator.lobby);
        let old = json!({ "player_id": ann.id, "player_secret": ann.secret });
        let (status, body) = api.post(&join, old).await;
        assert_eq!((status, code(&body)), (401, "bad_player_secret"), "{body}");
        let new = json!({ "player_id": ann.id, "player_secret": new_secret });
        let (status, body) = api.post(&join, new).await;
        assert_eq!(status, 200, "{body}");
        server.terminate().await;
    }
}
