//! The browser client, served at `/` with its assets under `/assets/`, and the
//! machinery to serve any fixed body (the tile catalogue too) compressed and cached.
//!
//! The client is plain ES modules, one style sheet and an SVG icon in `server/web/`,
//! compiled into the binary so that the run command needs nothing beside it. Every
//! answer carries a strict Content-Security-Policy (only this origin's scripts, styles
//! and sockets). `/favicon.ico`, which browsers ask for on their own, is the SVG icon
//! too (browsers go by the content type, not the name).
//!
//! **Compression: precompressed once, not per request.** The assets are fixed for a
//! given binary, so each is gzipped once, at its first request, at the best level
//! ([`Precompressed`]), and the bytes are kept: a request costs a look at
//! `Accept-Encoding` and a reference count, where a compressing middleware would spend
//! the CPU again on every load (and at a worse level, as it must be quick). A client
//! that accepts gzip gets `Content-Encoding: gzip`; every answer carries
//! `Vary: Accept-Encoding` so that a shared cache keeps the two apart; a body that gzip
//! would not make smaller (the icon, say) is only ever sent as it is. The gzipped copy
//! has an ETag of its own (`"…-gzip"`), as a strong validator must change with the bytes.
//! Gzip only, not brotli: every browser takes it, and brotli would save a few more kB
//! at the cost of another compressor in the build. The JSON API, whose answers change,
//! goes through tower-http's `CompressionLayer` instead (`crate::app`); it leaves alone
//! what is already encoded, so `GET /api/tiles` (fixed too, and served with
//! [`Precompressed`]) is not compressed twice.
//!
//! **Caching: `no-cache` and an ETag.** A browser keeps every file, and asks at each
//! load whether it still holds the current one; the answer is `304 Not Modified` without
//! a body. Long-lived caching (`max-age` of a year, `immutable`) needs names that change
//! with the content, which this client has not: there is no build step, and the modules
//! import each other by plain names (`./api.js`), so a hashed name would have to be
//! written into every importer, and a `max-age` on plain names would let a browser run an
//! old module next to a new one after an upgrade. The revalidations go out in parallel
//! on one kept-alive connection and carry no bodies, so they cost about one round trip.
//!
//! For work on the client, `CARCASSONNE_WEB_DIR=server/web` makes the server read the
//! files from that folder at every request instead (and gzip them each time), so an edit
//! shows on reload.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::Path;
use axum::http::header::{
    ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG,
    IF_NONE_MATCH, REFERRER_POLICY, VARY, X_CONTENT_TYPE_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use flate2::Compression;
use flate2::write::GzEncoder;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::sync::LazyLock;

use crate::error::AppError;
use crate::state::AppState;

/// Scripts, styles, images and sockets from this origin only; no inline code, no
/// frames, no plugins. `connect-src 'self'` also admits this origin's `ws:`/`wss:`.
const CONTENT_SECURITY_POLICY_VALUE: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; manifest-src 'self'; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Revalidate every time: see the module's documentation.
const REVALIDATE: &str = "no-cache";

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
    asset!("chat.js", JS),
    asset!("lobbies.js", JS),
    asset!("queue.js", JS),
    asset!("history.js", JS),
    asset!("ratings.js", JS),
    asset!("dom.js", JS),
    asset!("words.js", JS),
    asset!("signals.js", JS),
    asset!("scoring.js", JS),
    asset!("remaining.js", JS),
    asset!("bench.js", JS),
    asset!("favicon.svg", "image/svg+xml"),
];

/// The asset `/favicon.ico` answers with.
const FAVICON: &str = "favicon.svg";

/// Every asset's bytes, gzip and ETag, made at the first request.
static PRECOMPRESSED: LazyLock<Vec<Precompressed>> = LazyLock::new(|| {
    ASSETS
        .iter()
        .map(|asset| Precompressed::new(asset.body))
        .collect()
});

/// The client's routes: `/`, `/assets/{name}` and `/favicon.ico`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(index))
        .route("/assets/{name}", get(asset))
        .route("/favicon.ico", get(favicon))
}

/// Whether `path` is one of the client's static files, which are not rate limited: a
/// page load fetches a dozen of them at once, and they cost nothing to serve.
pub fn is_static(path: &str) -> bool {
    path == "/" || path == "/favicon.ico" || path.starts_with("/assets/")
}

/// The files of the first load: the page, its scripts and its style sheet. Not the
/// benchmark (`#/bench` loads it on demand), nor the icon.
#[cfg(test)]
fn first_load() -> impl Iterator<Item = (usize, &'static Asset)> {
    ASSETS.iter().enumerate().filter(|(_, asset)| {
        asset.name != "bench.js"
            && [".html", ".js", ".css"]
                .iter()
                .any(|suffix| asset.name.ends_with(suffix))
    })
}

/// The total size of the first load: the page, every script and the style sheet,
/// uncompressed.
#[cfg(test)]
fn first_load_bytes() -> usize {
    first_load().map(|(_, asset)| asset.body.len()).sum()
}

/// The same files as [`first_load_bytes`], as they travel to a browser that accepts gzip.
#[cfg(test)]
fn first_load_compressed_bytes() -> usize {
    first_load()
        .map(|(index, _)| PRECOMPRESSED[index].encoded_len())
        .sum()
}

async fn index(headers: HeaderMap) -> Response {
    serve(0, &headers)
}

async fn favicon(headers: HeaderMap) -> Response {
    serve(position(FAVICON).expect("the icon is embedded"), &headers)
}

async fn asset(Path(name): Path<String>, headers: HeaderMap) -> Response {
    match position(&name) {
        Some(index) => serve(index, &headers),
        None => AppError::NotFound("no such file").into_response(),
    }
}

fn position(name: &str) -> Option<usize> {
    ASSETS.iter().position(|asset| asset.name == name)
}

/// The asset, or `304 Not Modified`, with the client's security headers.
fn serve(index: usize, headers: &HeaderMap) -> Response {
    let asset = &ASSETS[index];
    let from_disk = std::env::var_os("CARCASSONNE_WEB_DIR")
        .and_then(|dir| std::fs::read(std::path::Path::new(&dir).join(asset.name)).ok());
    let mut response = match from_disk {
        Some(bytes) => Precompressed::new(bytes).respond(headers, asset.content_type, REVALIDATE),
        None => PRECOMPRESSED[index].respond(headers, asset.content_type, REVALIDATE),
    };
    let response_headers = response.headers_mut();
    response_headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY_VALUE),
    );
    response_headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response_headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

/// A fixed body, with its gzipped copy and ETags, made once and served many times.
pub struct Precompressed {
    identity: Bytes,
    /// `None` when gzip would not make the body smaller.
    gzip: Option<Bytes>,
    /// A strong ETag from the content's SHA-256, quoted.
    etag: HeaderValue,
    /// The gzipped copy's ETag: the same with `-gzip`.
    gzip_etag: HeaderValue,
}

impl Precompressed {
    pub fn new(body: impl Into<Bytes>) -> Precompressed {
        let identity: Bytes = body.into();
        let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
        let gzip = encoder
            .write_all(&identity)
            .and_then(|()| encoder.finish())
            .expect("gzip into memory cannot fail");
        let gzip = (gzip.len() < identity.len()).then(|| Bytes::from(gzip));
        let hash = &hex::encode(Sha256::digest(&identity))[..20];
        let tag = |suffix: &str| {
            HeaderValue::from_str(&format!("\"{hash}{suffix}\"")).expect("hex is a valid header")
        };
        Precompressed {
            etag: tag(""),
            gzip_etag: tag("-gzip"),
            identity,
            gzip,
        }
    }

    /// The bytes as they are.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.identity.len()
    }

    /// The bytes a client that accepts gzip receives.
    #[cfg(test)]
    pub fn encoded_len(&self) -> usize {
        self.gzip.as_ref().map_or(self.identity.len(), Bytes::len)
    }

    /// The body in the encoding the request accepts, or `304 Not Modified` when its
    /// `If-None-Match` names this content, with `Content-Type`, `ETag`, `Cache-Control`
    /// and `Vary`.
    pub fn respond(
        &self,
        request: &HeaderMap,
        content_type: &'static str,
        cache_control: &'static str,
    ) -> Response {
        let gzip = self.gzip.as_ref().filter(|_| accepts_gzip(request));
        let etag = if gzip.is_some() {
            &self.gzip_etag
        } else {
            &self.etag
        };
        let fresh = self.matches(request);
        let mut response = if fresh {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            Body::from(gzip.unwrap_or(&self.identity).clone()).into_response()
        };
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        headers.insert(ETAG, etag.clone());
        headers.insert(CACHE_CONTROL, HeaderValue::from_static(cache_control));
        if self.gzip.is_some() {
            headers.insert(VARY, HeaderValue::from_static("accept-encoding"));
        }
        if gzip.is_some() && !fresh {
            headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        }
        response
    }

    /// Whether `If-None-Match` names either copy: the browser holds this very content.
    fn matches(&self, request: &HeaderMap) -> bool {
        request.get_all(IF_NONE_MATCH).iter().any(|value| {
            value.to_str().is_ok_and(|value| {
                value.split(',').any(|tag| {
                    let tag = tag.trim();
                    let tag = tag.strip_prefix("W/").unwrap_or(tag);
                    tag == "*"
                        || tag.as_bytes() == self.etag.as_bytes()
                        || tag.as_bytes() == self.gzip_etag.as_bytes()
                })
            })
        })
    }
}

/// Whether `Accept-Encoding` admits gzip: named (or `x-gzip`, or `*`) with a non-zero
/// weight. A coding named explicitly overrides `*`.
fn accepts_gzip(request: &HeaderMap) -> bool {
    let mut named = None;
    let mut wildcard = None;
    for value in request.get_all(ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else {
            continue;
        };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or_default().trim();
            let weight = parts
                .filter_map(|parameter| {
                    let (name, value) = parameter.split_once('=')?;
                    name.trim()
                        .eq_ignore_ascii_case("q")
                        .then(|| value.trim().parse::<f32>().unwrap_or(0.0))
                })
                .next_back()
                .unwrap_or(1.0);
            if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
                named = Some(named.map_or(weight, |previous: f32| previous.max(weight)));
            } else if coding == "*" {
                wildcard = Some(weight);
            }
        }
    }
    named.or(wildcard).is_some_and(|weight| weight > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read;

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut plain = Vec::new();
        GzDecoder::new(bytes)
            .read_to_end(&mut plain)
            .expect("valid gzip");
        plain
    }

    fn request(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    async fn body(response: Response) -> Vec<u8> {
        axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("a body")
            .to_vec()
    }

    #[test]
    fn the_first_load_stays_under_200_kilobytes() {
        let bytes = first_load_bytes();
        assert!(bytes > 10_000, "the client is missing: {bytes} bytes");
        assert!(bytes < 200 * 1024, "the first load is {bytes} bytes");
    }

    #[test]
    fn the_first_load_compressed_stays_under_60_kilobytes() {
        let compressed = first_load_compressed_bytes();
        let plain = first_load_bytes();
        println!("first load: {plain} bytes, {compressed} gzipped");
        assert!(
            compressed > 3_000,
            "the client is missing: {compressed} bytes"
        );
        assert!(compressed < plain / 2, "{compressed} of {plain} bytes");
        assert!(
            compressed <= 60 * 1024,
            "the first load is {compressed} bytes"
        );
    }

    #[test]
    fn every_precompressed_copy_decodes_to_its_asset() {
        for (asset, copy) in ASSETS.iter().zip(PRECOMPRESSED.iter()) {
            assert_eq!(copy.len(), asset.body.len());
            if let Some(gzip) = &copy.gzip {
                assert_eq!(gunzip(gzip), asset.body.as_bytes(), "{}", asset.name);
                assert!(gzip.len() < asset.body.len(), "{}", asset.name);
            }
        }
    }

    #[test]
    fn gzip_is_accepted_by_name_or_wildcard_with_a_weight_above_zero() {
        let accepts = |value: &str| accepts_gzip(&request(&[("accept-encoding", value)]));
        assert!(accepts("gzip"));
        assert!(accepts("gzip, deflate, br, zstd"));
        assert!(accepts("br;q=1.0, GZIP;q=0.5"));
        assert!(accepts("x-gzip"));
        assert!(accepts("*"));
        assert!(accepts("gzip;q=0, gzip"));
        assert!(!accepts("br"));
        assert!(!accepts("identity"));
        assert!(!accepts("gzip;q=0"));
        assert!(!accepts("gzip;q=0.000"));
        assert!(!accepts("*, gzip;q=0"));
        assert!(!accepts("*;q=0"));
        assert!(!accepts_gzip(&HeaderMap::new()));
        assert!(accepts_gzip(&request(&[
            ("accept-encoding", "br"),
            ("accept-encoding", "gzip")
        ])));
    }

    #[tokio::test]
    async fn an_asset_is_gzipped_when_accepted_and_plain_otherwise() {
        let index = position("game.js").unwrap();
        let plain = serve(index, &HeaderMap::new());
        assert_eq!(plain.status(), StatusCode::OK);
        assert!(plain.headers().get(CONTENT_ENCODING).is_none());
        assert_eq!(plain.headers()[VARY], "accept-encoding");
        assert_eq!(plain.headers()[CACHE_CONTROL], "no-cache");
        let plain_tag = plain.headers()[ETAG].clone();
        assert_eq!(body(plain).await, ASSETS[index].body.as_bytes());

        let gzipped = serve(index, &request(&[("accept-encoding", "gzip, br")]));
        assert_eq!(gzipped.status(), StatusCode::OK);
        assert_eq!(gzipped.headers()[CONTENT_ENCODING], "gzip");
        assert_eq!(gzipped.headers()[VARY], "accept-encoding");
        assert!(
            gzipped.headers()[CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("text/javascript")
        );
        let gzip_tag = gzipped.headers()[ETAG].clone();
        assert_ne!(
            gzip_tag, plain_tag,
            "the two copies differ, so do their tags"
        );
        assert_eq!(gunzip(&body(gzipped).await), ASSETS[index].body.as_bytes());

        for tag in [&plain_tag, &gzip_tag] {
            let again = serve(
                index,
                &request(&[
                    ("accept-encoding", "gzip"),
                    ("if-none-match", tag.to_str().unwrap()),
                ]),
            );
            assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
            assert!(again.headers().get(CONTENT_ENCODING).is_none());
            assert_eq!(again.headers()[ETAG], gzip_tag);
            assert!(body(again).await.is_empty());
        }
        let stale = serve(index, &request(&[("if-none-match", "\"0123\", \"4567\"")]));
        assert_eq!(stale.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn the_icon_is_an_svg_at_both_addresses_and_a_tiny_body_is_never_gzipped() {
        let icon = &ASSETS[position(FAVICON).unwrap()];
        assert!(icon.body.starts_with("<svg"), "{}", icon.body);
        assert!(
            icon.body.len() < 1024,
            "the icon is {} bytes",
            icon.body.len()
        );
        for response in [
            favicon(request(&[("accept-encoding", "gzip")])).await,
            asset(Path(FAVICON.to_owned()), HeaderMap::new()).await,
        ] {
            assert_eq!(response.status(), StatusCode::OK);
            assert_eq!(response.headers()[CONTENT_TYPE], "image/svg+xml");
            let encoded = response.headers().get(CONTENT_ENCODING).is_some();
            let bytes = body(response).await;
            let bytes = if encoded { gunzip(&bytes) } else { bytes };
            assert_eq!(bytes, icon.body.as_bytes());
        }
        let tiny = Precompressed::new("{}");
        assert!(tiny.gzip.is_none(), "gzip would make two bytes larger");
        let response = tiny.respond(
            &request(&[("accept-encoding", "gzip")]),
            "application/json",
            "no-cache",
        );
        assert!(response.headers().get(CONTENT_ENCODING).is_none());
        assert!(response.headers().get(VARY).is_none());
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
    fn the_page_names_no_inline_script_and_links_the_icon() {
        let page = ASSETS[0].body;
        assert!(page.contains("src=\"/assets/app.js\""));
        assert!(
            page.contains(
                "<link rel=\"icon\" href=\"/assets/favicon.svg\" type=\"image/svg+xml\">"
            )
        );
        assert!(!page.contains("<script>"), "the CSP forbids inline scripts");
        assert!(!page.contains("style=\""), "the CSP forbids inline styles");
    }

    #[test]
    fn the_icon_is_static_and_not_rate_limited() {
        assert!(is_static("/favicon.ico"));
        assert!(is_static("/assets/favicon.svg"));
        assert!(!is_static("/api/tiles"));
    }
}
