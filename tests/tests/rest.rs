//! The REST API: lobbies, players, tiles, operations endpoints, and every error a
//! client can provoke, each with its status and typed JSON body.

use carcassonne_tests::client::{Api, Seat, WsClient};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::server::TestServer;
use carcassonne_tests::table::Table;
use serde_json::{Value, json};

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

async fn server() -> (TestDatabase, TestServer, Api) {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let api = Api::new(server.http());
    (database, server, api)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lobby_errors_have_statuses_and_codes() {
    let (_db, _server, api) = server().await;
    let (status, body) = api
        .get("/api/lobbies/6f1c0000-0000-4000-8000-000000000000")
        .await;
    assert_eq!((status, code(&body)), (404, "not_found"));
    let (status, body) = api.get("/api/lobbies/not-a-uuid").await;
    assert_eq!((status, code(&body)), (400, "bad_request"));
    let (status, body) = api.post_raw("/api/lobbies", "{\"name\": ").await;
    assert_eq!((status, code(&body)), (400, "bad_request"));
    let (status, body) = api
        .post(
            "/api/lobbies",
            json!({ "name": "x", "seats": 6, "display_name": "a" }),
        )
        .await;
    assert_eq!(
        (status, code(&body)),
        (400, "bad_request"),
        "six seats need Inns & Cathedrals"
    );
    let (status, body) = api.post("/api/lobbies", json!({ "name": "x", "seats": 2, "rules": { "expansions": ["dragons"] }, "display_name": "a" })).await;
    assert_eq!((status, code(&body)), (400, "bad_request"));
    let (status, body) = api.post("/api/lobbies", json!({ "name": "x", "seats": 2, "rules": { "farmer_city_points": 1000000 }, "display_name": "a" })).await;
    assert_eq!((status, code(&body)), (400, "bad_request"));
    let (status, body) = api
        .post(
            "/api/lobbies",
            json!({ "name": "\u{7}", "seats": 2, "display_name": "a" }),
        )
        .await;
    assert_eq!((status, code(&body)), (400, "bad_request"));
    let (status, body) = api.get("/api/nowhere").await;
    assert_eq!((status, code(&body)), (404, "not_found"));

    let creator = api.create_lobby("ann", 2, json!({})).await;
    let lobby = creator.lobby.clone();
    let (status, body) = api
        .post_as(
            &format!("/api/lobbies/{lobby}/start"),
            &creator.token,
            json!({}),
        )
        .await;
    assert_eq!((status, code(&body)), (409, "not_enough_players"));
    let bob = api.join(&lobby, "bob").await;
    let (status, body) = api
        .post(
            &format!("/api/lobbies/{lobby}/join"),
            json!({ "display_name": "cat" }),
        )
        .await;
    assert_eq!((status, code(&body)), (409, "lobby_full"));
    let (status, body) = api
        .post(&format!("/api/lobbies/{lobby}/start"), json!({}))
        .await;
    assert_eq!((status, code(&body)), (401, "missing_token"));
    let (status, body) = api
        .post_as(&format!("/api/lobbies/{lobby}/start"), "forged", json!({}))
        .await;
    assert_eq!((status, code(&body)), (401, "bad_token"));
    let (status, body) = api
        .post_as(
            &format!("/api/lobbies/{lobby}/start"),
            &bob.token,
            json!({}),
        )
        .await;
    assert_eq!((status, code(&body)), (403, "not_creator"));
    let (status, _) = api
        .post_as(
            &format!("/api/lobbies/{lobby}/leave"),
            &bob.token,
            json!({}),
        )
        .await;
    assert_eq!(status, 204);
    let (status, body) = api
        .post(
            &format!("/api/lobbies/{lobby}/join"),
            json!({ "display_name": "ANN" }),
        )
        .await;
    assert_eq!(
        (status, code(&body)),
        (409, "already_seated"),
        "names are unique per lobby"
    );
    api.join(&lobby, "bob").await;
    api.start(&creator).await;
    let (status, body) = api
        .post(
            &format!("/api/lobbies/{lobby}/join"),
            json!({ "display_name": "late" }),
        )
        .await;
    assert_eq!((status, code(&body)), (409, "lobby_not_open"));
    let (status, body) = api
        .post_as(
            &format!("/api/lobbies/{lobby}/cancel"),
            &creator.token,
            json!({}),
        )
        .await;
    assert_eq!((status, code(&body)), (409, "lobby_not_open"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_lobbies_need_their_invite_code_and_are_not_listed() {
    let (_db, _server, api) = server().await;
    let (_, created) = api
        .post(
            "/api/lobbies",
            json!({ "name": "hidden", "seats": 3, "public": false, "display_name": "ann" }),
        )
        .await;
    let lobby = created["lobby"]["id"].as_str().unwrap().to_owned();
    let invite = created["invite_code"].as_str().unwrap().to_owned();
    let (status, body) = api
        .post(
            &format!("/api/lobbies/{lobby}/join"),
            json!({ "display_name": "bob" }),
        )
        .await;
    assert_eq!((status, code(&body)), (403, "bad_invite_code"));
    let (status, body) = api
        .post(
            &format!("/api/lobbies/{lobby}/join"),
            json!({ "display_name": "bob", "invite_code": invite }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["invite_code"].is_null(),
        "only the creator is shown the code"
    );
    let public = api
        .create_lobby("cat", 2, json!({ "expansions": ["river"] }))
        .await;
    let (status, listed) = api.get("/api/lobbies?page=1&per_page=50").await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&public.lobby.as_str()));
    assert!(
        !ids.contains(&lobby.as_str()),
        "private lobbies are not listed"
    );
    let (_, shown) = api.get(&format!("/api/lobbies/{}", public.lobby)).await;
    assert_eq!(shown["rules"]["expansions"], json!(["river"]));
    assert_eq!(shown["seats"][0]["name"], "cat");
    assert!(shown.get("invite_code").is_none() && shown["seats"][0].get("token_hash").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creator_leaving_or_cancelling_closes_the_lobby() {
    let (_db, _server, api) = server().await;
    let creator = api.create_lobby("ann", 3, json!({})).await;
    api.join(&creator.lobby, "bob").await;
    let (status, body) = api
        .post_as(
            &format!("/api/lobbies/{}/cancel", creator.lobby),
            &creator.token,
            json!({}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["status"], "cancelled");
    let other = api.create_lobby("cat", 3, json!({})).await;
    let (status, _) = api
        .post_as(
            &format!("/api/lobbies/{}/leave", other.lobby),
            &other.token,
            json!({}),
        )
        .await;
    assert_eq!(status, 204);
    let (_, shown) = api.get(&format!("/api/lobbies/{}", other.lobby)).await;
    assert_eq!(shown["status"], "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn player_identities_join_seats_and_collect_history() {
    let (_db, server, api) = server().await;
    let (status, body) = api
        .post("/api/players", json!({ "display_name": "  " }))
        .await;
    assert_eq!((status, code(&body)), (400, "bad_request"));
    let (status, ada) = api
        .post("/api/players", json!({ "display_name": "Ada" }))
        .await;
    assert_eq!(status, 201);
    let (id, secret) = (ada["id"].as_str().unwrap(), ada["secret"].as_str().unwrap());
    assert!(secret.len() >= 43, "secrets carry at least 256 bits");
    let creator = api
        .create_lobby("host", 2, json!({ "tile_limit": 5 }))
        .await;
    let join = |secret: &str| json!({ "player_id": id, "player_secret": secret });
    let (status, body) = api
        .post(
            &format!("/api/lobbies/{}/join", creator.lobby),
            join("wrong"),
        )
        .await;
    assert_eq!((status, code(&body)), (401, "bad_player_secret"));
    let (status, body) = api
        .post(
            &format!("/api/lobbies/{}/join", creator.lobby),
            join(secret),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let ada_seat = Seat {
        lobby: creator.lobby.clone(),
        seat: 1,
        token: body["seat_token"].as_str().unwrap().to_owned(),
    };
    assert_eq!(body["lobby"]["seats"][1]["name"], "Ada");
    assert_eq!(body["lobby"]["seats"][1]["player_id"], id);
    let second = api.create_lobby("host2", 3, json!({})).await;
    api.post(&format!("/api/lobbies/{}/join", second.lobby), join(secret))
        .await;
    let (status, body) = api
        .post(&format!("/api/lobbies/{}/join", second.lobby), join(secret))
        .await;
    assert_eq!(
        (status, code(&body)),
        (409, "already_seated"),
        "one identity, one seat"
    );
    // Play the short game through: it enters Ada's history.
    let mut table = Table::open(&server, vec![creator.clone(), ada_seat], 8).await;
    table.play_to_the_end().await;
    let (_, stats) = api.get(&format!("/api/players/{id}")).await;
    assert_eq!(stats["games"], 1, "{stats}");
    let (_, history) = api.get(&format!("/api/players/{id}/matches")).await;
    assert_eq!(history["items"].as_array().unwrap().len(), 1);
    assert_eq!(history["items"][0]["id"], creator.lobby.as_str());
    let (_, filtered) = api
        .get(&format!("/api/matches?player={id}&players=3"))
        .await;
    assert!(filtered["items"].as_array().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiles_health_metrics_and_openapi_are_served() {
    let (_db, _server, api) = server().await;
    let (status, tiles) = api.get("/api/tiles").await;
    assert_eq!(status, 200);
    let tiles = tiles.as_array().unwrap();
    let total: u64 = tiles.iter().map(|t| t["count"].as_u64().unwrap()).sum();
    assert_eq!(total, 72 + 12 + 18 + 10);
    let d = tiles.iter().find(|t| t["id"] == "D").unwrap();
    assert_eq!(d["edges"], json!(["city", "road", "field", "road"]));
    assert_eq!(d["segments"][2]["halves"], json!(["En", "Wn"]));
    assert_eq!(d["segments"][2]["borders"], json!(["c1"]));
    let (status, health) = api.get("/readyz").await;
    assert_eq!(status, 200);
    assert_eq!(health["database"], "ok");
    let (status, metrics) = api.get("/metrics").await;
    assert_eq!(status, 200);
    let metrics = metrics.as_str().unwrap();
    for name in [
        "carcassonne_live_games",
        "carcassonne_connections",
        "carcassonne_moves_total",
        "carcassonne_move_latency_seconds",
    ] {
        assert!(metrics.contains(name), "{name} missing from /metrics");
    }
    let (status, openapi) = api.get("/api/openapi.json").await;
    assert_eq!(status, 200);
    for path in [
        "/api/lobbies",
        "/api/lobbies/{id}/join",
        "/api/players",
        "/api/matches",
        "/api/matches/{id}/record",
        "/api/tiles",
        "/healthz",
    ] {
        assert!(
            openapi["paths"].get(path).is_some(),
            "{path} missing from the OpenAPI document"
        );
    }
}

/// A private lobby's seat names and game are shown only with its invite code or a seat
/// token, and so are its finished match and record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_game_is_shown_only_to_holders_of_its_code_or_seats() {
    let (_db, server, api) = server().await;
    let (_, created) = api
        .post(
            "/api/lobbies",
            json!({ "name": "hidden", "seats": 2, "public": false, "display_name": "ann",
                    "rules": { "tile_limit": 3 } }),
        )
        .await;
    let lobby = created["lobby"]["id"].as_str().unwrap().to_owned();
    let invite = created["invite_code"].as_str().unwrap().to_owned();
    let creator_token = created["seat_token"].as_str().unwrap().to_owned();
    let (status, body) = api.get(&format!("/api/lobbies/{lobby}")).await;
    assert_eq!((status, code(&body)), (403, "private_game"), "{body}");
    let (status, shown) = api
        .get_with(&format!("/api/lobbies/{lobby}"), "x-invite-code", &invite)
        .await;
    assert_eq!((status, &shown["seats"][0]["name"]), (200, &json!("ann")));
    let (status, _) = api
        .get_with(
            &format!("/api/lobbies/{lobby}"),
            "authorization",
            &format!("Bearer {creator_token}"),
        )
        .await;
    assert_eq!(status, 200);

    let (_, joined) = api
        .post(
            &format!("/api/lobbies/{lobby}/join"),
            json!({ "display_name": "bob", "invite_code": invite }),
        )
        .await;
    let bob = Seat {
        lobby: lobby.clone(),
        seat: 1,
        token: joined["seat_token"].as_str().unwrap().to_owned(),
    };
    let ann = Seat {
        lobby: lobby.clone(),
        seat: 0,
        token: creator_token,
    };
    let mut table = Table::open_private(&server, vec![ann, bob], 4, Some(&invite)).await;
    table.play_to_the_end().await;
    for path in [
        format!("/api/matches/{lobby}"),
        format!("/api/matches/{lobby}/record"),
    ] {
        let (status, body) = api.get(&path).await;
        assert_eq!(
            (status, code(&body)),
            (403, "private_game"),
            "{path}: {body}"
        );
        let (status, body) = api.get_with(&path, "x-invite-code", &invite).await;
        assert_eq!(status, 200, "{path}: {body}");
        let (status, _) = api.get_with(&path, "x-invite-code", "wrong").await;
        assert_eq!(status, 403, "{path}");
    }
}

/// Names that would pass for others, or reorder the text around them, are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_with_invisible_or_reordering_characters_are_refused() {
    let (_db, _server, api) = server().await;
    let creator = api.create_lobby("ann", 3, json!({})).await;
    for name in ["ann\u{200B}", "\u{202E}bob", "b\u{2066}ob", "bo\u{FEFF}b"] {
        let (status, body) = api
            .post(
                &format!("/api/lobbies/{}/join", creator.lobby),
                json!({ "display_name": name }),
            )
            .await;
        assert_eq!(
            (status, code(&body)),
            (400, "bad_request"),
            "{name:?}: {body}"
        );
        let (status, _) = api
            .post("/api/players", json!({ "display_name": name }))
            .await;
        assert_eq!(status, 400, "{name:?}");
    }
    let (status, body) = api
        .post(
            &format!("/api/lobbies/{}/join", creator.lobby),
            json!({ "display_name": "ANN" }),
        )
        .await;
    assert_eq!((status, code(&body)), (409, "already_seated"), "{body}");
}

/// Lobby creation is bounded per client (and in all, by the same pool of places, whose
/// unit tests cover the total): a client at its bound gets 429 `too_many_lobbies`, and
/// gets its place back when one of its lobbies starts or is cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_lobbies_are_bounded_per_client() {
    let database = TestDatabase::sqlite();
    let options = ["--max-open-lobbies-per-client", "2"];
    let server = TestServer::start_with(&database.url(), &options).await;
    let api = Api::new(server.http());
    let first = api.create_lobby("ann", 2, json!({})).await;
    let second = api.create_lobby("bob", 2, json!({})).await;
    let body = json!({ "name": "third", "seats": 2, "display_name": "cat" });
    let (status, refused) = api.post("/api/lobbies", body.clone()).await;
    assert_eq!(
        (status, code(&refused)),
        (429, "too_many_lobbies"),
        "{refused}"
    );

    let (status, _) = api
        .post_as(
            &format!("/api/lobbies/{}/cancel", first.lobby),
            &first.token,
            json!({}),
        )
        .await;
    assert_eq!(status, 200);
    api.join(&second.lobby, "dan").await;
    api.start(&second).await;
    let (status, created) = api.post("/api/lobbies", body.clone()).await;
    assert_eq!(
        status, 201,
        "places come back on cancel and start: {created}"
    );
}

/// The ids of the items of a lobby page.
fn ids(page: &Value) -> Vec<&str> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["id"].as_str().expect("an id"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn games_in_play_are_listed_for_spectators_on_both_backends() {
    for database in TestDatabase::both() {
        let server = TestServer::start(&database.url()).await;
        let api = Api::new(server.http());
        let open = api.create_lobby("ann", 2, json!({})).await;
        let playing = api.create_lobby("cat", 2, json!({})).await;
        api.join(&playing.lobby, "dan").await;
        api.start(&playing).await;
        let body = json!({ "name": "hidden", "seats": 2, "public": false, "display_name": "eve" });
        let (status, private) = api.post("/api/lobbies", body).await;
        assert_eq!(status, 201, "{private}");
        let private_id = private["lobby"]["id"].as_str().unwrap();
        let invite = private["invite_code"].as_str().unwrap();
        let (status, _) = api
            .post(
                &format!("/api/lobbies/{private_id}/join"),
                json!({ "display_name": "fay", "invite_code": invite }),
            )
            .await;
        assert_eq!(status, 200);
        let token = private["seat_token"].as_str().unwrap();
        let (status, _) = api
            .post_as(
                &format!("/api/lobbies/{private_id}/start"),
                token,
                json!({}),
            )
            .await;
        assert_eq!(status, 200);

        let (status, games) = api.get("/api/games").await;
        assert_eq!(status, 200, "{}: {games}", database.kind());
        assert_eq!(
            ids(&games),
            vec![playing.lobby.as_str()],
            "{}",
            database.kind()
        );
        assert_eq!(games["items"][0]["status"], "playing");
        assert_eq!(games["items"][0]["seats"].as_array().unwrap().len(), 2);
        let (_, lobbies) = api.get("/api/lobbies").await;
        assert_eq!(ids(&lobbies), vec![open.lobby.as_str()]);
        let (_, second) = api.get("/api/games?page=2&per_page=1").await;
        assert!(ids(&second).is_empty(), "{second}");
        let (status, body) = api.get("/api/games?per_page=0").await;
        assert_eq!((status, code(&body)), (400, "bad_request"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_client_is_served_with_its_headers() {
    let (_db, server, _api) = server().await;
    let http = reqwest::Client::new();
    let page = http.get(server.http() + "/").send().await.expect("GET /");
    assert_eq!(page.status(), 200);
    let headers = page.headers().clone();
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let policy = headers["content-security-policy"].to_str().unwrap();
    assert!(
        policy.contains("script-src 'self'") && policy.contains("default-src 'none'"),
        "{policy}"
    );
    let body = page.text().await.unwrap();
    assert!(body.contains("/assets/app.js"), "{body}");

    let script = http
        .get(server.http() + "/assets/app.js")
        .send()
        .await
        .expect("GET app.js");
    assert_eq!(script.status(), 200);
    assert!(
        script.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
    let etag = script.headers()["etag"].clone();
    let again = http
        .get(server.http() + "/assets/app.js")
        .header("if-none-match", etag)
        .send()
        .await
        .expect("GET app.js again");
    assert_eq!(again.status(), 304, "an unchanged asset is not sent again");
    let missing = http
        .get(server.http() + "/assets/nothing.js")
        .send()
        .await
        .expect("GET a missing asset");
    assert_eq!(missing.status(), 404);
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut plain)
        .expect("a valid gzip body");
    plain
}

/// `GET` with `Accept-Encoding: gzip`: the status, the headers and the body as sent (this
/// reqwest decodes nothing on its own).
async fn get_gzip(
    http: &reqwest::Client,
    url: String,
    if_none_match: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let mut request = http.get(url).header("accept-encoding", "gzip, deflate, br");
    if let Some(tag) = if_none_match {
        request = request.header("if-none-match", tag);
    }
    let response = request.send().await.expect("the request is answered");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.bytes().await.expect("a body").to_vec();
    (status, headers, body)
}

fn header<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .map_or("", |value| value.to_str().expect("a text header"))
}

/// The page, its modules and the tile catalogue travel gzipped to a client that accepts
/// it (and plain to one that does not), revalidate with their ETags, and the icon is
/// served at both its addresses; the WebSocket route and `/metrics` are not compressed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_and_the_tile_catalogue_travel_gzipped_and_revalidate() {
    let (_db, server, api) = server().await;
    let http = reqwest::Client::new();
    let base = server.http();

    for path in ["/", "/assets/game.js", "/assets/style.css"] {
        let plain = http.get(base.clone() + path).send().await.unwrap();
        assert_eq!(plain.status(), 200, "{path}");
        assert_eq!(header(plain.headers(), "content-encoding"), "", "{path}");
        let plain = plain.bytes().await.unwrap().to_vec();
        let (status, headers, body) = get_gzip(&http, base.clone() + path, None).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(header(&headers, "content-encoding"), "gzip", "{path}");
        assert_eq!(header(&headers, "vary"), "accept-encoding", "{path}");
        assert_eq!(header(&headers, "cache-control"), "no-cache", "{path}");
        // The page is small (about 670 bytes, 400 gzipped); the modules shrink by 2/3.
        assert!(
            body.len() < plain.len(),
            "{path}: {} of {}",
            body.len(),
            plain.len()
        );
        assert_eq!(gunzip(&body), plain, "{path} decodes to the plain copy");
        let tag = header(&headers, "etag").to_owned();
        let (status, _, body) = get_gzip(&http, base.clone() + path, Some(&tag)).await;
        assert_eq!((status, body.len()), (304, 0), "{path} is not sent again");
    }

    let (status, expected) = api.get("/api/tiles").await;
    assert_eq!(status, 200);
    let (status, headers, body) = get_gzip(&http, base.clone() + "/api/tiles", None).await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-encoding"), "gzip");
    assert_eq!(header(&headers, "content-type"), "application/json");
    assert_eq!(header(&headers, "cache-control"), "no-cache");
    assert_eq!(header(&headers, "vary"), "accept-encoding");
    let tiles: Value = serde_json::from_slice(&gunzip(&body)).expect("JSON inside the gzip");
    assert_eq!(tiles, expected);
    eprintln!("GET /api/tiles: {} bytes gzipped", body.len());
    assert!(
        body.len() < 10 * 1024,
        "the catalogue gzipped is {} bytes",
        body.len()
    );
    let tag = header(&headers, "etag").to_owned();
    assert!(tag.starts_with('"'), "a strong ETag: {tag}");
    let (status, headers, body) = get_gzip(&http, base.clone() + "/api/tiles", Some(&tag)).await;
    assert_eq!(
        (status, body.len()),
        (304, 0),
        "the catalogue is not sent again"
    );
    assert_eq!(header(&headers, "etag"), tag);
    let (status, _, _) = get_gzip(&http, base.clone() + "/api/tiles", Some("\"stale\"")).await;
    assert_eq!(status, 200);

    // Other JSON answers go through the compression layer, when large enough.
    let (status, headers, body) = get_gzip(&http, base.clone() + "/api/openapi.json", None).await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-encoding"), "gzip");
    let openapi: Value = serde_json::from_slice(&gunzip(&body)).expect("JSON inside the gzip");
    assert!(openapi["paths"].get("/api/tiles").is_some());
    let missing = "/api/lobbies/6f1c0000-0000-4000-8000-000000000000";
    let (status, headers, body) = get_gzip(&http, base.clone() + missing, None).await;
    assert_eq!(status, 404);
    assert!(body.len() < 256, "{} bytes", body.len());
    assert_eq!(
        header(&headers, "content-encoding"),
        "",
        "a tiny error body stays plain"
    );

    for path in ["/favicon.ico", "/assets/favicon.svg"] {
        let (status, headers, body) = get_gzip(&http, base.clone() + path, None).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(header(&headers, "content-type"), "image/svg+xml", "{path}");
        let body = match header(&headers, "content-encoding") {
            "gzip" => gunzip(&body),
            _ => body,
        };
        assert!(body.starts_with(b"<svg"), "{path}");
    }

    let (status, headers, _) = get_gzip(&http, base.clone() + "/metrics", None).await;
    assert_eq!(status, 200);
    assert_eq!(
        header(&headers, "content-encoding"),
        "",
        "/metrics stays plain"
    );
    let creator = api.create_lobby("ann", 2, json!({})).await;
    WsClient::join(&server.ws_url(&creator.lobby), Some(&creator.token), None).await;
}

/// Join, reclaim and start answer with the lobby as their room committed it, without
/// reading it back: the answer must be what the database holds, seat for seat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_reclaim_and_start_answer_with_the_stored_lobby_on_both_backends() {
    for database in TestDatabase::both() {
        let server = TestServer::start(&database.url()).await;
        let api = Api::new(server.http());
        let kind = database.kind();
        let creator = api.create_lobby("ann", 3, json!({})).await;
        let path = format!("/api/lobbies/{}", creator.lobby);
        let (_, ada) = api
            .post("/api/players", json!({ "display_name": "Ada" }))
            .await;
        let identity = json!({ "player_id": ada["id"], "player_secret": ada["secret"] });
        for body in [json!({ "display_name": "bob" }), identity.clone()] {
            let (status, joined) = api.post(&format!("{path}/join"), body).await;
            assert_eq!(status, 200, "{kind}: {joined}");
            assert_eq!(joined["lobby"], api.get(&path).await.1, "{kind}: join");
        }
        let (status, reclaimed) = api.post(&format!("{path}/reclaim"), identity).await;
        assert_eq!(status, 200, "{kind}: {reclaimed}");
        assert_eq!(
            reclaimed["lobby"],
            api.get(&path).await.1,
            "{kind}: reclaim"
        );
        let body = json!({ "randomize_seats": true });
        let (status, started) = api
            .post_as(&format!("{path}/start"), &creator.token, body)
            .await;
        assert_eq!(status, 200, "{kind}: {started}");
        assert_eq!(started["status"], "playing", "{kind}");
        assert_eq!(started, api.get(&path).await.1, "{kind}: start");
    }
}
