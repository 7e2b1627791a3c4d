//! The browser client, served at `/` with its assets under `/assets/`.
//!
//! The client is plain ES modules and one style sheet in `server/web/`, compiled into the
//! binary so that the run command needs nothing beside it. Every answer carries a strict
//! Content-Security-Policy (only this origin's scripts, styles and sockets), and an ETag
//! made from the content, so a browser revalidates cheaply and never runs a stale module
//! after an upgrade.
//!
//! For work on the client, `CARCASSONNE_WEB_DIR=server/web` makes the server read the
//! files from that folder at every request instead, so an edit shows on reload.

use axum::Router;
use axum::extract::Path;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, IF_NONE_MATCH, REFERRER_POLICY,
    X_CONTENT_TYPE_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::sync::LazyLock;

use crate::error::AppError;
use crate::state::AppState;

/// Scripts, styles, images and sockets from this origin only; no inline code, no
/// frames, no plugins. `connect-src 'self'` also admits this origin's `ws:`/`wss:`.
const CONTENT_SECURITY_POLICY_VALUE: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; manifest-src 'self'; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// One embedded file: its name under `/assets/`, its content type and its bytes.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static str,
}

macro_rules! asset {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            content_type: $type,
            body: include_str!(concat!("../web/", $name)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the client. `index.html` is served at `/`.
const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("patch.js", JS),
    asset!("tiles.js", JS),
    asset!("board.js", JS),
    asset!("connection.js", JS),
    asset!("game.js", JS),
    asset!("lobbies.js", JS),
    asset!("history.js", JS),
    asset!("dom.js", JS),
    asset!("words.js", JS),
    asset!("signals.js", JS),
    asset!("scoring.js", JS),
    asset!("remaining.js", JS),
    asset!("bench.js", JS),
];

/// The ETag of every asset, computed once.
static ETAGS: LazyLock<Vec<String>> = LazyLock::new(|| {
    ASSETS
        .iter()
        .map(|asset| {
            let digest = Sha256::digest(asset.body.as_bytes());
            format!("\"{}\"", &hex::encode(digest)[..20])
        })
        .collect()
});

/// The client's routes: `/`, and `/assets/{name}`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(index))
        .route("/assets/{name}", get(asset))
}

/// Whether `path` is one of the client's static files, which are not rate limited: a
/// page load fetches a dozen of them at once, and they cost nothing to serve.
pub fn is_static(path: &str) -> bool {
    path == "/" || path.starts_with("/assets/")
}

/// The total size of the first load: every script and style sheet, uncompressed.
pub fn first_load_bytes() -> usize {
    ASSETS
        .iter()
        .filter(|asset| asset.name != "bench.js")
        .map(|asset| asset.body.len())
        .sum()
}

async fn index(headers: HeaderMap) -> Response {
    serve(0, &headers)
}

async fn asset(Path(name): Path<String>, headers: HeaderMap) -> Response {
    match ASSETS.iter().position(|asset| asset.name == name) {
        Some(index) => serve(index, &headers),
        None => AppError::NotFound("no such file").into_response(),
    }
}

/// The asset's text and ETag: the embedded copy, or the file in `CARCASSONNE_WEB_DIR`.
fn content(index: usize) -> (Cow<'static, str>, Cow<'static, str>) {
    let asset = &ASSETS[index];
    let from_disk = std::env::var_os("CARCASSONNE_WEB_DIR")
        .and_then(|dir| std::fs::read_to_string(std::path::Path::new(&dir).join(asset.name)).ok());
    match from_disk {
        Some(text) => {
            let etag = format!(
                "\"{}\"",
                &hex::encode(Sha256::digest(text.as_bytes()))[..20]
            );
            (Cow::Owned(text), Cow::Owned(etag))
        }
        None => (
            Cow::Borrowed(asset.body),
            Cow::Borrowed(ETAGS[index].as_str()),
        ),
    }
}

/// The asset's bytes, or `304 Not Modified` when the browser holds this very version.
fn serve(index: usize, headers: &HeaderMap) -> Response {
    let asset = &ASSETS[index];
    let (body, etag) = content(index);
    let etag = etag.as_ref();
    let fresh = headers
        .get(IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.split(',').any(|tag| tag.trim() == etag));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        body.into_owned().into_response()
    };
    let response_headers = response.headers_mut();
    response_headers.insert(CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    if let Ok(value) = HeaderValue::from_str(etag) {
        response_headers.insert(ETAG, value);
    }
    // Revalidate every time: the names are not hashed, so the ETag is what keeps a
    // browser from running an old module next to a new one.
    response_headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response_headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY_VALUE),
    );
    response_headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response_headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_load_stays_under_200_kilobytes() {
        let bytes = first_load_bytes();
        assert!(bytes > 10_000, "the client is missing: {bytes} bytes");
        assert!(bytes < 200 * 1024, "the first load is {bytes} bytes");
    }

    #[test]
    fn every_module_the_client_imports_is_served() {
        for asset in ASSETS {
            for line in asset.body.lines() {
                let Some(at) = line.find("from \"./") else {
                    continue;
                };
                let rest = &line[at + 8..];
                let name = &rest[..rest.find('"').expect("a closing quote")];
                assert!(
                    ASSETS.iter().any(|other| other.name == name),
                    "{} imports {name}, which is not embedded",
                    asset.name
                );
            }
        }
    }

    #[test]
    fn the_page_names_no_inline_script() {
        let page = ASSETS[0].body;
        assert!(page.contains("src=\"/assets/app.js\""));
        assert!(!page.contains("<script>"), "the CSP forbids inline scripts");
        assert!(!page.contains("style=\""), "the CSP forbids inline styles");
    }
}
