//! Bad input over WebSocket: each gets a clear, typed error, changes nothing, and only
//! abuse (floods, oversized frames, repeated bad hellos) closes the connection.

use carcassonne_tests::client::{Api, WsClient};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::server::TestServer;
use carcassonne_tests::table::Table;
use serde_json::{Value, json};
use std::collections::BTreeSet;

async fn started_table(server: &TestServer) -> Table {
    Table::start(server, 2, json!({}), 9).await
}

fn error_code(message: &Value) -> &str {
    message["error"]["code"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_frames_get_errors_and_the_connection_stays() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let table = started_table(&server).await;
    let mut client = WsClient::join(
        &server.ws_url(&table.game),
        Some(&table.seats[0].token),
        None,
    )
    .await;
    client.next_of("snapshot").await;
    let cases = [
        ("{not json", "malformed_json"),
        (r#"{"type":"dance"}"#, "unknown_type"),
        (r#"["hello"]"#, "unknown_type"),
        (r#"{"type":"command","id":"x"}"#, "bad_message"),
        (
            r#"{"type":"command","id":"x","seq":1,"move":{"type":"place_tile","x":0,"y":1,"rotation":45}}"#,
            "bad_message",
        ),
        (r#"{"type":"hello","token":null}"#, "already_welcomed"),
    ];
    for (text, code) in cases {
        client.send_text(text.to_owned()).await;
        // A bad command with a string id is `rejected` with that id; the rest are `error`s.
        let reply = client.next_of_any(&["error", "rejected"]).await;
        assert_eq!(error_code(&reply), code, "{text}: {reply}");
    }
    client.send(json!({ "type": "ping" })).await;
    assert_eq!(
        client.next_of("pong").await["type"],
        "pong",
        "the connection is still usable"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_is_required_first_and_bad_tokens_are_refused() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let table = started_table(&server).await;
    let url = server.ws_url(&table.game);
    let mut client = WsClient::connect(&url).await;
    client
        .send(json!({ "type": "command", "id": "early", "seq": 1, "move": { "type": "pass" } }))
        .await;
    assert_eq!(error_code(&client.next().await), "hello_required");
    for _ in 0..2 {
        let reply = client.hello(Some("not-a-real-token"), None).await;
        assert_eq!(error_code(&reply), "bad_token");
    }
    // A valid hello still works after failures, until the limit.
    let welcome = client.hello(Some(&table.seats[1].token), None).await;
    assert_eq!(welcome["type"], "welcome");
    assert_eq!(welcome["seat"], 1);
    let mut pest = WsClient::connect(&url).await;
    for _ in 0..3 {
        pest.hello(Some("wrong"), None).await;
    }
    assert_eq!(
        pest.close_code().await,
        Some(1008),
        "three bad hellos close with policy violation"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_turn_stale_seq_and_illegal_moves_are_rejected_and_change_nothing() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let mut table = started_table(&server).await;
    let mover = table.mover().unwrap();
    let other = 1 - mover;
    let seq = table.players[mover].seq.unwrap();
    let legal = table.players[mover].legal_moves.clone().unwrap();
    let reply = table.players[other]
        .command("not-mine", legal[0].clone())
        .await;
    assert_eq!(error_code(&reply), "not_your_turn");
    let reply = table.players[mover]
        .command_at("stale", seq - 1, legal[0].clone())
        .await;
    assert_eq!(error_code(&reply), "stale_seq");
    let far = json!({ "type": "place_tile", "x": 50, "y": 50, "rotation": 0 });
    assert_eq!(
        error_code(&table.players[mover].command("far", far).await),
        "not_adjacent"
    );
    let on_start = json!({ "type": "place_tile", "x": 0, "y": 0, "rotation": 0 });
    assert_eq!(
        error_code(&table.players[mover].command("occupied", on_start).await),
        "cell_occupied"
    );
    let early = json!({ "type": "place_figure", "figure": "follower", "spot": "r1" });
    assert_eq!(
        error_code(&table.players[mover].command("early", early).await),
        "tile_not_placed"
    );
    let bad_id = table.players[mover].command("", legal[0].clone()).await;
    assert_eq!(error_code(&bad_id), "bad_request");
    // Nothing moved: the same seq, and the legal move still works.
    let spectator = table.spectator.as_mut().unwrap();
    spectator
        .send(json!({ "type": "resync", "last_seq": null }))
        .await;
    assert_eq!(spectator.next_of("snapshot").await["seq"], seq);
    assert_eq!(
        table.players[mover].command("fine", legal[0].clone()).await["type"],
        "ack"
    );
}

/// Plays a whole game, and at every step tries moves that are not among the legal ones:
/// each must be rejected with an engine error code and leave the seq where it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_illegal_probe_during_a_game_is_rejected_with_its_rule() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start_without_rate_limit(&database.url()).await;
    let mut table = started_table(&server).await;
    let mut codes = BTreeSet::new();
    let mut probe = 0;
    while !table.is_over() {
        let mover = table.mover().unwrap();
        let legal = table.players[mover].legal_moves.clone().unwrap();
        for candidate in illegal_candidates(&table.players[mover].state, &legal) {
            probe += 1;
            let reply = table.players[mover]
                .command(&format!("probe-{probe}"), candidate.clone())
                .await;
            assert_eq!(
                reply["type"], "rejected",
                "{candidate} is not legal but was accepted"
            );
            codes.insert(error_code(&reply).to_owned());
        }
        table.play_one().await;
    }
    for expected in ["edge_mismatch", "feature_occupied", "unknown_spot"] {
        assert!(
            codes.contains(expected),
            "no {expected} seen in a whole game: {codes:?}"
        );
    }
}

/// Moves near the legal ones that are not legal: other rotations at legal cells during
/// placement; every figure on every spot label during the action step.
fn illegal_candidates(state: &Value, legal: &[Value]) -> Vec<Value> {
    let mut candidates = Vec::new();
    if state["game"]["turn"]["phase"] == "place_tile" {
        for mv in legal.iter().take(3) {
            for rotation in [0, 90, 180, 270] {
                let candidate = json!({ "type": "place_tile", "x": mv["x"], "y": mv["y"], "rotation": rotation });
                candidates.push(candidate);
            }
        }
    } else {
        for spot in ["c1", "c2", "r1", "r2", "r3", "f1", "f2", "m", "g", "c9"] {
            candidates.push(json!({ "type": "place_figure", "figure": "follower", "spot": spot }));
        }
    }
    candidates.retain(|candidate| !legal.contains(candidate));
    candidates
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flooding_and_oversized_messages_close_the_offender_only() {
    let database = TestDatabase::sqlite();
    // The default limits: 10 messages a second, bursts of 40.
    let server = TestServer::start_with(&database.url(), &[]).await;
    let mut table = started_table(&server).await;
    let url = server.ws_url(&table.game);
    let mut flooder = WsClient::join(&url, None, None).await;
    for _ in 0..200 {
        // The server may hang up before the flood is over.
        if flooder
            .try_send_text(json!({ "type": "ping" }).to_string())
            .await
            .is_err()
        {
            break;
        }
    }
    assert_eq!(
        flooder.close_code().await,
        Some(1008),
        "a flood is a policy violation"
    );
    let mut big = WsClient::join(&url, None, None).await;
    big.send_text(format!(
        r#"{{"type":"ping","pad":"{}"}}"#,
        "x".repeat(64 * 1024)
    ))
    .await;
    assert_eq!(
        big.close_code().await,
        Some(1009),
        "an oversized message is too big"
    );
    // The players, who send a command now and then, are unaffected.
    for _ in 0..4 {
        table.play_one().await;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    table.assert_mirrors_agree();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_games_and_private_games_are_refused() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let unknown = server.ws_url("00000000-0000-0000-0000-000000000000");
    assert!(
        tokio_tungstenite::connect_async(&unknown).await.is_err(),
        "no live game: 404, no upgrade"
    );
    let api = Api::new(server.http());
    let (status, created) = api
        .post(
            "/api/lobbies",
            json!({ "name": "secret", "seats": 2, "public": false, "display_name": "ann" }),
        )
        .await;
    assert_eq!(status, 201);
    let lobby = created["lobby"]["id"].as_str().unwrap();
    let code = created["invite_code"].as_str().unwrap();
    let mut watcher = WsClient::connect(&server.ws_url(lobby)).await;
    assert_eq!(error_code(&watcher.hello(None, None).await), "private_game");
    watcher
        .send(json!({ "type": "hello", "invite_code": code }))
        .await;
    assert_eq!(watcher.next().await["type"], "welcome");
}

/// A client that claims to have seen updates the game never had (a bug, or a copy of
/// another game) is never sent an older state than it claims: its first hello is told to
/// come back (1012) while the room reads its game from the database to be sure, and its
/// hello after that is refused as `unknown_seq`; a `resync` from the future likewise. A
/// hello without `last_seq` then gets the snapshot, and the game is unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_last_seq_from_the_future_gets_no_older_state() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let mut table = started_table(&server).await;
    table.play_one().await;
    let seq = table.seq();
    let url = server.ws_url(&table.game);
    let ahead = seq + 5;

    let mut client = WsClient::connect(&url).await;
    let first = client.hello(None, Some(ahead)).await;
    assert_eq!(error_code(&first), "shutting_down", "{first}");
    assert_eq!(client.close_code().await, Some(1012));

    // Once the room has read its game (at once, but not before the client can come
    // back), it knows the client is wrong.
    let mut client = WsClient::connect(&url).await;
    let mut second = client.hello(None, Some(ahead)).await;
    for _ in 0..20 {
        if error_code(&second) != "shutting_down" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        client = WsClient::connect(&url).await;
        second = client.hello(None, Some(ahead)).await;
    }
    assert_eq!(error_code(&second), "unknown_seq", "{second}");
    let fresh = client.hello(None, None).await;
    assert_eq!(fresh["type"], "welcome", "{fresh}");
    let snapshot = client.next_of("snapshot").await;
    assert_eq!(snapshot["seq"], seq);

    client
        .send(json!({ "type": "resync", "last_seq": ahead }))
        .await;
    let refused = client.next_of("error").await;
    assert_eq!(error_code(&refused), "unknown_seq", "{refused}");
    table.play_one().await;
}
