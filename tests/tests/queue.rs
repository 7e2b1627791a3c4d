//! Quick play over real sockets on both databases: tickets are refused with typed
//! errors when they are wrong, matched players learn their game from the event stream
//! (lobby, seat and a working seat token), the game is started and played to its end,
//! a lone unrated ticket gets bots after the configured wait, a rated pair's game
//! changes their ratings, and a cancelled ticket stays cancelled.

use carcassonne_tests::client::{Api, Player, Seat};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::server::TestServer;
use carcassonne_tests::table::Table;
use serde_json::{Value, json};
use std::time::Duration;

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

/// A waiting ticket: its id and token.
struct Ticket {
    id: String,
    token: String,
}

fn wish(player: &Player, rules: Value, rated: bool) -> Value {
    json!({ "player_id": player.id, "player_secret": player.secret,
        "players": { "min": 2, "max": 2 }, "rules": rules, "rated": rated })
}

async fn queue(api: &Api, body: Value) -> Ticket {
    let (status, created) = api.post("/api/queue", body).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["ticket"]["status"], "waiting");
    Ticket {
        id: created["ticket"]["id"].as_str().unwrap().to_owned(),
        token: created["ticket_token"].as_str().unwrap().to_owned(),
    }
}

/// The ticket's event stream, read to its end: `(event, data)` pairs.
async fn events(server: &TestServer, ticket: &Ticket) -> Vec<(String, Value)> {
    let url = format!("{}/api/queue/{}/events", server.http(), ticket.id);
    let response = reqwest::Client::new()
        .get(url)
        .bearer_auth(&ticket.token)
        .send()
        .await
        .expect("GET events");
    assert_eq!(response.status(), 200);
    let text = tokio::time::timeout(Duration::from_secs(60), response.text())
        .await
        .expect("the stream ends once the ticket is decided")
        .expect("the stream's text");
    text.split("\n\n")
        .filter_map(|block| {
            let event = block
                .lines()
                .find_map(|line| line.strip_prefix("event: "))?;
            let data = block.lines().find_map(|line| line.strip_prefix("data: "))?;
            Some((
                event.to_owned(),
                serde_json::from_str(data).expect("JSON data"),
            ))
        })
        .collect()
}

/// The seat a matched ticket's stream hands over.
async fn matched_seat(server: &TestServer, ticket: &Ticket) -> Seat {
    let events = events(server, ticket).await;
    let (last, data) = events.last().expect("at least one event");
    assert_eq!(last, "matched", "{events:?}");
    let before = &events[..events.len() - 1];
    assert!(
        before.iter().all(|(event, _)| event == "waiting"),
        "{events:?}"
    );
    Seat {
        lobby: data["lobby_id"].as_str().unwrap().to_owned(),
        seat: data["seat"].as_u64().unwrap(),
        token: data["seat_token"].as_str().unwrap().to_owned(),
    }
}

async fn refusals(api: &Api, server: &TestServer, player: &Player) {
    let mut bad = wish(player, json!({}), false);
    bad["players"] = json!({ "min": 1, "max": 2 });
    let (status, body) = api.post("/api/queue", bad).await;
    assert_eq!((status, code(&body)), (400, "bad_request"), "{body}");
    let mut bad = wish(player, json!({}), false);
    bad["players"] = json!({ "min": 2, "max": 6 });
    let (status, body) = api.post("/api/queue", bad).await;
    assert_eq!(
        (status, code(&body)),
        (400, "bad_request"),
        "6 needs Inns & Cathedrals: {body}"
    );
    let mut bad = wish(player, json!({}), false);
    bad["player_secret"] = json!("wrong");
    let (status, body) = api.post("/api/queue", bad).await;
    assert_eq!((status, code(&body)), (401, "bad_player_secret"), "{body}");

    // A ticket, which the player cannot double, and which only its token shows.
    let ticket = queue(api, wish(player, json!({ "farmers": false }), true)).await;
    let (status, body) = api.post("/api/queue", wish(player, json!({}), false)).await;
    assert_eq!((status, code(&body)), (409, "already_queued"), "{body}");
    let path = format!("/api/queue/{}", ticket.id);
    let (status, body) = api.get(&path).await;
    assert_eq!((status, code(&body)), (401, "missing_token"), "{body}");
    let (status, body) = api.get_with(&path, "authorization", "Bearer wrong").await;
    assert_eq!((status, code(&body)), (404, "not_found"), "{body}");
    let bearer = format!("Bearer {}", ticket.token);
    let (status, shown) = api.get_with(&path, "authorization", &bearer).await;
    assert_eq!(
        (status, &shown["status"]),
        (200, &json!("waiting")),
        "{shown}"
    );
    assert!(shown["window"].as_f64().unwrap() >= 3.0);

    // Cancelled once; its stream then says so and ends.
    let delete = |token: String| {
        let url = format!("{}{path}", server.http());
        async move {
            let response = reqwest::Client::new()
                .delete(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    assert_eq!(delete(ticket.token.clone()).await.0, 204);
    let (status, body) = delete(ticket.token.clone()).await;
    assert_eq!((status, code(&body)), (409, "ticket_not_waiting"), "{body}");
    let streamed = events(server, &ticket).await;
    assert_eq!(streamed.len(), 1, "{streamed:?}");
    assert_eq!(streamed[0].0, "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_players_are_matched_seated_and_play() {
    for database in TestDatabase::both() {
        let options = ["--queue-bot-fill-after", "2s", "--queue-bot", "random"];
        let server = TestServer::start_with(&database.url(), &options).await;
        let api = Api::new(server.http());
        let names = ["ann", "bob", "cy", "dee", "eve"];
        let mut players = Vec::new();
        for name in names {
            players.push(api.register(name).await);
        }
        refusals(&api, &server, &players[0]).await;

        // Two unrated tickets with the same rules: one game, both seats handed over.
        let short = json!({ "tile_limit": 6 });
        let first = queue(&api, wish(&players[0], short.clone(), false)).await;
        let second = queue(&api, wish(&players[1], short.clone(), false)).await;
        let (a, b) = tokio::join!(
            matched_seat(&server, &first),
            matched_seat(&server, &second)
        );
        assert_eq!(a.lobby, b.lobby, "both in one game");
        assert_ne!(a.seat, b.seat);
        let (status, lobby) = api.get(&format!("/api/lobbies/{}", a.lobby)).await;
        assert_eq!(
            (status, &lobby["status"]),
            (200, &json!("playing")),
            "{lobby}"
        );
        let mut seats = vec![a, b];
        seats.sort_by_key(|seat| seat.seat);
        let mut table = Table::join_started(&server, seats, 11).await;
        table.play_to_the_end().await;

        // A lone ticket with other rules gets a bot after the wait.
        let lone = queue(&api, wish(&players[2], json!({ "tile_limit": 4 }), false)).await;
        let seat = matched_seat(&server, &lone).await;
        let (_, lobby) = api.get(&format!("/api/lobbies/{}", seat.lobby)).await;
        assert_eq!(lobby["status"], "playing", "{lobby}");
        let bots = lobby["seats"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["bot"].is_string());
        assert_eq!(bots.count(), 1, "{lobby}");

        // A rated pair: never given bots, and their finished game rates them.
        let rated_a = queue(&api, wish(&players[3], short.clone(), true)).await;
        let rated_b = queue(&api, wish(&players[4], short.clone(), true)).await;
        let (a, b) = tokio::join!(
            matched_seat(&server, &rated_a),
            matched_seat(&server, &rated_b)
        );
        let mut seats = vec![a, b];
        seats.sort_by_key(|seat| seat.seat);
        let mut table = Table::join_started(&server, seats, 12).await;
        table.play_to_the_end().await;
        for player in &players[3..] {
            let path = format!("/api/players/{}/ratings/two_player", player.id);
            let (status, history) = api.get(&path).await;
            assert_eq!(status, 200, "{history}");
            assert_eq!(history["items"].as_array().unwrap().len(), 1, "{history}");
        }
        server.terminate().await;
    }
}

/// Where the operator lets bots into rated duels, a lone rated ticket gets one after the
/// wait; the player resigns, the game ends abandoned, and it is rated: the player last,
/// the bot at its level's fixed rating, which does not move.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rated_ticket_gets_a_bot_where_the_pool_allows_and_the_bot_keeps_its_rating() {
    for database in TestDatabase::both() {
        let options = [
            "--queue-bot-fill-after",
            "1s",
            "--queue-bot",
            "random",
            "--rated-bot-pools",
            "two_player",
        ];
        let server = TestServer::start_with(&database.url(), &options).await;
        let api = Api::new(server.http());
        let player = api.register("ann").await;
        let ticket = queue(&api, wish(&player, json!({ "tile_limit": 4 }), true)).await;
        let seat = matched_seat(&server, &ticket).await;
        let (_, lobby) = api.get(&format!("/api/lobbies/{}", seat.lobby)).await;
        assert_eq!(
            (&lobby["rated"], &lobby["status"]),
            (&json!(true), &json!("playing")),
            "{lobby}"
        );

        let path = format!("/api/lobbies/{}/resign", seat.lobby);
        let (status, body) = api.post_as(&path, &seat.token, json!({})).await;
        assert_eq!(status, 204, "{body}");
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let detail = loop {
            let (status, detail) = api.get(&format!("/api/matches/{}", seat.lobby)).await;
            if status == 200 {
                break detail;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the match is recorded"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let changes = detail["ratings"].as_array().unwrap();
        let bot = changes
            .iter()
            .find(|change| change["player_id"].is_null())
            .unwrap();
        let fixed = json!({ "mu": 10.0, "sigma": 1.0 });
        assert_eq!(
            (&bot["before"], &bot["after"], &bot["place"]),
            (&fixed, &fixed, &json!(1)),
            "{detail}"
        );
        let mine = changes
            .iter()
            .find(|change| change["player_id"] == player.id.as_str())
            .unwrap();
        assert_eq!(mine["place"], 2, "{detail}");
        assert!(
            mine["after"]["mu"].as_f64() < mine["before"]["mu"].as_f64(),
            "{detail}"
        );
        server.terminate().await;
    }
}

/// One value from the test database, by psql.
fn query_one(url: &str, sql: &str) -> String {
    let output = std::process::Command::new("psql")
        .args([url, "-tAc", sql])
        .output()
        .expect("psql");
    assert!(output.status.success(), "{sql}: {output:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

const QUEUED_PLAYERS: usize = 200;

/// Three nodes on one Postgres: 200 players queue at once, each through one of the
/// nodes, and each watches its ticket through another. Every ticket is matched exactly
/// once, into 100 rated duels; nobody connects to play, so the stand-in bot plays every
/// timed-out turn and each game finishes; the ratings the nodes then show are exactly
/// what `ratings rebuild` recomputes from the history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_queueing_across_three_nodes_are_matched_exactly_once() {
    let Some(database) = carcassonne_tests::database::TestDatabase::postgres_or_skip() else {
        return;
    };
    if !carcassonne_tests::cluster::nats_or_skip() {
        return;
    }
    let url = database.url();
    let tag = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let mut nodes = Vec::new();
    for name in ["a", "b", "c"] {
        let node_name = format!("queue-{tag}-{name}");
        let options = [
            "--nats",
            &carcassonne_tests::cluster::nats_url(),
            "--node-name",
            &node_name,
            "--lease-ttl",
            "5s",
            "--queue-without-bots",
            "--requests-per-second",
            "100000",
            "--request-burst",
            "100000",
            "--max-connections-per-ip",
            "0",
        ];
        nodes.push(TestServer::start_with(&url, &options).await);
    }
    let apis: Vec<Api> = nodes.iter().map(|node| Api::new(node.http())).collect();
    let mut players = Vec::new();
    for index in 0..QUEUED_PLAYERS {
        players.push(apis[index % 3].register(&format!("q{index}")).await);
    }

    // Everyone at once, a third through each node.
    let rules = json!({ "tile_limit": 3 });
    let clock = json!({ "type": "turn", "per_turn_ms": 1000, "reserve_ms": 0 });
    let tickets =
        futures_util::future::join_all(players.iter().enumerate().map(|(index, player)| {
            let mut body = wish(player, rules.clone(), true);
            body["clock"] = clock.clone();
            queue(&apis[index % 3], body)
        }))
        .await;
    let streams = tickets
        .iter()
        .enumerate()
        .map(|(index, ticket)| matched_seat(&nodes[(index + 1) % 3], ticket));
    let seats = futures_util::future::join_all(streams).await;

    let mut games: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
    for seat in &seats {
        games.entry(seat.lobby.clone()).or_default().push(seat.seat);
    }
    assert_eq!(games.len(), QUEUED_PLAYERS / 2, "every game a duel");
    assert!(
        games
            .values()
            .all(|seats| seats.len() == 2 && seats[0] != seats[1])
    );
    let matched = query_one(
        &url,
        "SELECT COUNT(*) FROM queue_tickets WHERE status = 'matched'",
    );
    assert_eq!(matched, QUEUED_PLAYERS.to_string());
    let seated = query_one(
        &url,
        "SELECT COUNT(DISTINCT player_id) || '/' || COUNT(*) FROM seats",
    );
    assert_eq!(
        seated,
        format!("{QUEUED_PLAYERS}/{QUEUED_PLAYERS}"),
        "each player seated once"
    );

    // The stand-ins play every turn out: each game ends.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let finished = query_one(
            &url,
            "SELECT COUNT(*) FROM matches WHERE rating_seq IS NOT NULL",
        );
        if finished == (QUEUED_PLAYERS / 2).to_string() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "only {finished} rated matches recorded"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let shown = ratings_shown(&apis[0], &players).await;
    for node in nodes {
        assert!(node.terminate().await.success());
    }
    let rebuild = std::process::Command::new(carcassonne_tests::server::server_binary())
        .args(["ratings", "rebuild", "--database", &url])
        .output()
        .expect("running ratings rebuild");
    assert!(rebuild.status.success(), "{rebuild:?}");
    let node = TestServer::start(&url).await;
    let rebuilt = ratings_shown(&Api::new(node.http()), &players).await;
    assert_eq!(
        rebuilt, shown,
        "a rebuild from the history gives the same ratings"
    );
    node.terminate().await;
}

async fn ratings_shown(api: &Api, players: &[Player]) -> Vec<Value> {
    let mut shown = Vec::new();
    for player in players {
        let (status, profile) = api.get(&format!("/api/players/{}", player.id)).await;
        assert_eq!(status, 200, "{profile}");
        assert_eq!(
            profile["ratings"].as_array().map(Vec::len),
            Some(1),
            "{profile}"
        );
        shown.push(profile["ratings"].clone());
    }
    shown
}
