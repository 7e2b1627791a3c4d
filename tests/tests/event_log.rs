//! A game's event log over REST (`GET /api/lobbies/{id}/events`): for every update a
//! client received over the WebSocket, the endpoint gives back exactly the same events
//! under the same `seq`, page by page, while the game runs, once it is over, and after a
//! restart on the same database. Lobby changes, the start, bots, a timed-out turn,
//! resignations and an abandoned or finished game are all in it.

use carcassonne_tests::client::{Api, Seat, WsClient};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::server::TestServer;
use carcassonne_tests::table::Table;
use serde_json::{Value, json};

/// Bots that answer quickly, so that bot seats and timed-out turns do not slow the test.
const QUICK_BOTS: [&str; 4] = ["--stand-in-think", "20ms", "--bot-think", "40ms"];

/// Every update of the game's log, read page by page with `limit`: (seq, events).
async fn event_log(api: &Api, game: &str, limit: u32) -> Vec<(u64, Value)> {
    let mut log = Vec::new();
    let mut after = 0;
    loop {
        let path = format!("/api/lobbies/{game}/events?after_seq={after}&limit={limit}");
        let (status, page) = api.get(&path).await;
        assert_eq!(status, 200, "{path}: {page}");
        let items = page["items"].as_array().expect("items");
        assert!(items.len() <= limit as usize, "a page holds at most limit");
        for item in items {
            log.push((item["seq"].as_u64().expect("a seq"), item["events"].clone()));
        }
        match page["next_after_seq"].as_u64() {
            Some(next) => {
                assert_eq!(Some(next), log.last().map(|(seq, _)| *seq), "{page}");
                after = next;
            }
            None => {
                assert!(page["next_after_seq"].is_null(), "{page}");
                return log;
            }
        }
    }
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

fn has_event(log: &[(u64, Value)], kind: &str, check: impl Fn(&Value) -> bool) -> bool {
    log.iter()
        .flat_map(|(_, events)| events.as_array().cloned().unwrap_or_default())
        .any(|event| event["type"] == kind && check(&event))
}

async fn post_as(api: &Api, seat: &Seat, action: &str, body: Value) -> (u16, Value) {
    let path = format!("/api/lobbies/{}/{action}", seat.lobby);
    api.post_as(&path, &seat.token, body).await
}

/// Plays `turns` commands for the human seats still played by their owner (the first
/// legal move each time), while bots play theirs; the spectator follows every update.
async fn play_human_turns(spectator: &mut WsClient, players: &mut [WsClient], turns: usize) {
    let mut played = 0;
    while played < turns && spectator.state["status"] == "playing" {
        let mover = spectator.state["game"]["turn"]["player"].as_u64();
        let human = mover.and_then(|seat| {
            let control = &spectator.state["seats"][seat as usize]["control"];
            (control == "human").then_some(seat)
        });
        let Some(client) = players
            .iter_mut()
            .find(|c| c.seat.is_some() && c.seat == human)
        else {
            // A bot's seat, or a seat a bot plays: its update comes by itself.
            spectator.next().await;
            continue;
        };
        client.catch_up_to(spectator.seq.unwrap()).await;
        let Some(legal) = client.legal_moves.clone() else {
            spectator.next().await;
            continue;
        };
        let decided_at = client.seq;
        played += 1;
        let id = format!("e-{}-{played}", client.seat.unwrap());
        let reply = client.command(&id, legal[0].clone()).await;
        match reply["type"].as_str() {
            Some("ack") => spectator.catch_up_to(reply["seq"].as_u64().unwrap()).await,
            // The turn's clock ran out first: the stand-in's update comes instead.
            _ if matches!(code(&reply), "turn_timed_out" | "stale_seq") => {
                if spectator.seq <= decided_at {
                    spectator.next().await;
                }
            }
            _ => panic!("a legal move on one's turn is accepted: {reply}"),
        }
    }
}

/// Reads until an update brings an event of `kind`.
async fn await_event(client: &mut WsClient, kind: &str) {
    let seen = client.events.len();
    while !client.events[seen..]
        .iter()
        .any(|event| event["type"] == kind)
    {
        client.next().await;
    }
}

/// The lobby's log from its first change: seats taken and freed, a bot seated, the start,
/// moves of people and bots, a timed-out turn, two resignations and the abandoned end.
async fn lobby_and_game_log_match_the_updates(database: &TestDatabase) {
    let server = TestServer::start_with(&database.url(), &QUICK_BOTS).await;
    let api = Api::new(server.http());
    let body = json!({ "name": "events", "seats": 3, "display_name": "ann",
        "clock": { "type": "turn", "per_turn_ms": 1000, "reserve_ms": 0 } });
    let (status, created) = api.post("/api/lobbies", body).await;
    assert_eq!(status, 201, "{created}");
    let game = created["lobby"]["id"].as_str().unwrap().to_owned();
    let ann = Seat {
        lobby: game.clone(),
        seat: 0,
        token: created["seat_token"].as_str().unwrap().to_owned(),
    };
    let url = server.ws_url(&game);
    let mut spectator = WsClient::join(&url, None, None).await;
    let snapshot = spectator.next_of("snapshot").await;
    assert_eq!(
        snapshot["seq"], 0,
        "a new lobby has had no update: {snapshot}"
    );

    let bob = api.join(&game, "bob").await;
    let cy = api.join(&game, "cy").await;
    assert_eq!(post_as(&api, &cy, "leave", json!({})).await.0, 204);
    let (status, bot) = post_as(&api, &ann, "bots", json!({ "level": "random" })).await;
    assert_eq!(status, 201, "{bot}");
    let mut players = vec![
        WsClient::join(&url, Some(&ann.token), None).await,
        WsClient::join(&url, Some(&bob.token), None).await,
    ];
    assert_eq!(post_as(&api, &ann, "start", json!({})).await.0, 200);
    while spectator.state["status"] != "playing" {
        spectator.next().await;
    }

    play_human_turns(&mut spectator, &mut players, 6).await;
    // Nobody moves for seat 0 until its clock runs out: a stand-in plays the turn.
    while spectator.state["game"]["turn"]["player"] != 0 {
        spectator.next().await;
    }
    await_event(&mut spectator, "turn_timed_out").await;
    play_human_turns(&mut spectator, &mut players, 4).await;

    // While the game runs, the log agrees with every update so far.
    let so_far = event_log(&api, &game, 500).await;
    let seen = spectator.seq.unwrap();
    let so_far: Vec<_> = so_far.into_iter().filter(|(seq, _)| *seq <= seen).collect();
    assert_eq!(so_far, spectator.updates, "the log of a game in play");

    assert_eq!(post_as(&api, &bob, "resign", json!({})).await.0, 204);
    play_human_turns(&mut spectator, &mut players, 4).await;
    assert_eq!(post_as(&api, &ann, "resign", json!({})).await.0, 204);
    while spectator.state["status"] != "finished" {
        spectator.next().await;
    }

    let expected = spectator.updates.clone();
    let seqs: Vec<u64> = expected.iter().map(|(seq, _)| *seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    for (kind, check) in [
        ("seat_taken", json!({ "bot": null })),
        ("seat_taken", json!({ "bot": "random" })),
        ("seat_freed", json!({})),
        ("game_started", json!({})),
        ("tile_placed", json!({})),
        ("turn_timed_out", json!({ "seat": 0 })),
        ("bot_moved", json!({ "reason": "timeout" })),
        ("bot_moved", json!({ "reason": "bot" })),
        ("bot_moved", json!({ "reason": "resigned" })),
        ("seat_resigned", json!({})),
        ("game_abandoned", json!({})),
    ] {
        let fits = |event: &Value| {
            let fields = check.as_object().unwrap();
            fields.iter().all(|(key, value)| &event[key] == value)
        };
        assert!(
            has_event(&expected, kind, fits),
            "{kind} {check} is in the game"
        );
    }

    for limit in [500, 200, 7, 1] {
        assert_eq!(
            event_log(&api, &game, limit).await,
            expected,
            "{}: limit {limit}",
            database.kind()
        );
    }
    let (status, page) = api.get(&format!("/api/lobbies/{game}/events")).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        page["items"].as_array().unwrap().len(),
        expected.len().min(200)
    );
    let (status, page) = api
        .get(&format!("/api/lobbies/{game}/events?after_seq=5&limit=2"))
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["items"][0]["seq"], 6, "{page}");
    assert_eq!(page["items"][1]["seq"], 7, "{page}");
    assert_eq!(page["next_after_seq"], 7, "{page}");
    let last = expected.len();
    let (_, page) = api
        .get(&format!("/api/lobbies/{game}/events?after_seq={last}"))
        .await;
    assert_eq!(page, json!({ "items": [], "next_after_seq": null }));

    // A restart keeps the log: it comes from the database.
    server.terminate().await;
    let server = TestServer::start_with(&database.url(), &QUICK_BOTS).await;
    let api = Api::new(server.http());
    assert_eq!(
        event_log(&api, &game, 10).await,
        expected,
        "after a restart"
    );
    server.terminate().await;
}

/// A three-player game with every expansion played to its last tile: the final scoring
/// and `game_over` come from the last move's update like every other event.
async fn a_finished_game_log_matches_the_updates(database: &TestDatabase) {
    let server = TestServer::start(&database.url()).await;
    let api = Api::new(server.http());
    let rules = json!({ "expansions": ["river", "abbot", "inns_and_cathedrals", "festival"] });
    let mut table = Table::start(&server, 3, rules, 7).await;
    table.play_to_the_end().await;
    let spectator = table.spectator.as_ref().unwrap();
    let first = spectator.updates[0].0;
    let log = event_log(&api, &table.game, 50).await;
    assert_eq!(
        log.len() as u64,
        spectator.seq.unwrap(),
        "one item per update"
    );
    let watched: Vec<_> = log.into_iter().filter(|(seq, _)| *seq >= first).collect();
    assert_eq!(watched, spectator.updates, "{}", database.kind());
    assert!(has_event(&watched, "game_over", |_| true));
    assert!(has_event(&watched, "feature_scored", |e| e["completed"] == false));
    server.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_log_gives_back_every_update_of_a_lobby_and_its_game() {
    for database in TestDatabase::both() {
        lobby_and_game_log_match_the_updates(&database).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_log_of_a_game_played_to_its_end_matches_its_updates() {
    for database in TestDatabase::both() {
        a_finished_game_log_matches_the_updates(&database).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_log_refuses_bad_input_and_private_lobbies_without_their_code() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let api = Api::new(server.http());
    let body = json!({ "name": "hidden", "seats": 2, "public": false, "display_name": "ann" });
    let (status, created) = api.post("/api/lobbies", body).await;
    assert_eq!(status, 201, "{created}");
    let game = created["lobby"]["id"].as_str().unwrap().to_owned();
    let invite = created["invite_code"].as_str().unwrap().to_owned();
    let token = created["seat_token"].as_str().unwrap().to_owned();
    let path = format!("/api/lobbies/{game}/events");

    let (status, body) = api.get(&path).await;
    assert_eq!((status, code(&body)), (403, "private_game"), "{body}");
    let (status, body) = api.get_with(&path, "x-invite-code", "wrong").await;
    assert_eq!((status, code(&body)), (403, "private_game"), "{body}");
    let (status, body) = api.get_with(&path, "x-invite-code", &invite).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({ "items": [], "next_after_seq": null }));
    let joined = json!({ "display_name": "bob", "invite_code": invite });
    let join = format!("/api/lobbies/{game}/join");
    assert_eq!(api.post(&join, joined).await.0, 200);
    let (status, body) = api
        .get_with(&path, "authorization", &format!("Bearer {token}"))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({ "items": [{ "seq": 1, "events": [
            { "type": "seat_taken", "seat": 1, "name": "bob", "bot": null }] }],
            "next_after_seq": null })
    );

    let bearer = format!("Bearer {token}");
    for query in [
        "after_seq=-1",
        "limit=0",
        "limit=501",
        "limit=-3",
        "limit=many",
        "after_seq=1.5",
    ] {
        let (status, body) = api
            .get_with(&format!("{path}?{query}"), "authorization", &bearer)
            .await;
        assert_eq!(
            (status, code(&body)),
            (400, "bad_request"),
            "{query}: {body}"
        );
        assert!(body["error"]["message"].is_string(), "{body}");
    }
    let (status, body) = api
        .get_with(
            &format!("{path}?limit=500&after_seq=0"),
            "authorization",
            &bearer,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let unknown = uuid::Uuid::new_v4();
    let (status, body) = api.get(&format!("/api/lobbies/{unknown}/events")).await;
    assert_eq!((status, code(&body)), (404, "not_found"), "{body}");
    let (status, body) = api.get("/api/lobbies/not-a-uuid/events").await;
    assert_eq!((status, code(&body)), (400, "bad_request"), "{body}");
    server.terminate().await;
}
