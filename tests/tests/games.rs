//! Complete games over real sockets: 2 to 5 players (and 6 with every expansion) play
//! to the final scoring; every client's state, built only from the snapshot and the
//! patches, always equals a fresh snapshot; the finished match is in the history and
//! its exported record replays to the same final scores.

use carcassonne_core::record::{GameRecord, replay};
use carcassonne_tests::client::{Api, WsClient, legal_moves_of};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::server::TestServer;
use carcassonne_tests::table::Table;
use serde_json::{Value, json};

/// Plays a whole game and checks its end: game over, scores, winners, history, record.
async fn play_complete_game(server: &TestServer, players: u8, rules: Value, seed: u64) -> Table {
    let mut table = Table::start(server, players, rules, seed).await;
    let commands = table.play_to_the_end().await;
    assert!(
        commands > 100,
        "a full game takes many commands, got {commands}"
    );
    table.assert_mirrors_agree();
    let state = table.players[0].state.clone();
    let result = &state["game"]["result"];
    let final_scores: Vec<u64> = result["final_scores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    assert_eq!(final_scores.len(), players as usize);
    let best = *final_scores.iter().max().unwrap();
    let winners: Vec<u64> = (0..players as u64)
        .filter(|&s| final_scores[s as usize] == best)
        .collect();
    assert_eq!(result["winners"], json!(winners), "ties share the win");
    assert!(state["game"]["turn"].is_null());
    check_history(server, &table, &final_scores).await;
    table
}

/// The match is listed, its summary agrees, and its record replays to the same scores.
async fn check_history(server: &TestServer, table: &Table, final_scores: &[u64]) {
    let api = Api::new(server.http());
    let (status, detail) = api.get(&format!("/api/matches/{}", table.game)).await;
    assert_eq!(status, 200, "{detail}");
    let scores: Vec<u64> = detail["seats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["score"].as_u64().unwrap())
        .collect();
    assert_eq!(scores, final_scores);
    assert!(
        !detail["breakdown"].as_array().unwrap().is_empty(),
        "scoring is broken down per feature"
    );
    let (status, record) = api
        .get(&format!("/api/matches/{}/record", table.game))
        .await;
    assert_eq!(status, 200);
    let record: GameRecord = serde_json::from_value(record).expect("the export is a game record");
    let replayed = replay(&record, false).expect("the exported record replays");
    assert_eq!(
        replayed.deck_verified,
        Some(true),
        "the record reveals the seed and salt of the deck it committed to"
    );
    let published = &table.players[0].state["deck_commitment"];
    assert!(
        published.is_string(),
        "the commitment was public during play"
    );
    assert_eq!(&record.extra["deck_commitment"], published);
    let replayed: Vec<u64> = replayed.final_scores.iter().map(|&s| s as u64).collect();
    assert_eq!(
        replayed, final_scores,
        "replaying the record gives the same final scores"
    );
    let (_, listed) = api.get("/api/matches?limit=100").await;
    assert!(
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["id"] == table.game.as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base_games_with_two_to_five_players_reach_the_final_scoring() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    for players in 2..=5 {
        let table = play_complete_game(&server, players, json!({}), players as u64).await;
        let final_update_events = table.players[0].state["game"]["result"].clone();
        assert!(!final_update_events.is_null());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_expansion_with_six_players_on_both_databases() {
    let rules = json!({ "expansions": ["river", "abbot", "inns_and_cathedrals", "festival"] });
    for database in TestDatabase::both() {
        let server = TestServer::start(&database.url()).await;
        let table = play_complete_game(&server, 6, rules.clone(), 6).await;
        let board = table.players[0].state["game"]["board"]
            .as_array()
            .unwrap()
            .len();
        assert!(
            board > 100,
            "{}: most of 111 tiles get placed, got {board}",
            database.kind()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_rebuild_exactly_what_a_fresh_snapshot_shows_at_every_step() {
    let database = TestDatabase::sqlite();
    // The spectator asks for a snapshot after every step, faster than the default
    // message rate allows; rate limits are not what this test is about.
    let server = TestServer::start_without_rate_limit(&database.url()).await;
    let rules = json!({ "expansions": ["abbot", "festival"], "tile_limit": 30 });
    let mut table = Table::start(&server, 3, rules, 11).await;
    let mut steps = 0;
    while !table.is_over() {
        table.play_one().await;
        steps += 1;
        if table.is_over() {
            // An ended room unloads and closes its sockets, so the last step is checked
            // against the match history rather than a fresh snapshot.
            check_final_mirror_against_history(&server, &table).await;
            break;
        }
        let spectator = table.spectator.as_mut().unwrap();
        let mirrored = spectator.state.clone();
        spectator
            .send(json!({ "type": "resync", "last_seq": null }))
            .await;
        let snapshot = spectator.next_of("snapshot").await;
        assert_eq!(
            snapshot["state"], mirrored,
            "after step {steps} the mirror differs from a snapshot"
        );
    }
    assert!(steps >= 60, "30 tiles take 60 commands, got {steps}");
}

/// The spectator's mirror of the finished game shows the scores the match history holds.
async fn check_final_mirror_against_history(server: &TestServer, table: &Table) {
    let mirrored = &table.spectator.as_ref().unwrap().state;
    assert_eq!(mirrored["status"], "finished", "{mirrored}");
    let (status, detail) = Api::new(server.http())
        .get(&format!("/api/matches/{}", table.game))
        .await;
    assert_eq!(status, 200, "{detail}");
    let recorded: Vec<Value> = detail["seats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|seat| seat["score"].clone())
        .collect();
    assert_eq!(mirrored["game"]["result"]["final_scores"], json!(recorded));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lobby_changes_reach_connected_clients_as_updates() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let api = Api::new(server.http());
    let creator = api.create_lobby("ann", 3, json!({})).await;
    let mut watcher =
        WsClient::join(&server.ws_url(&creator.lobby), Some(&creator.token), None).await;
    let snapshot = watcher.next_of("snapshot").await;
    assert_eq!(snapshot["state"]["status"], "open");
    api.join(&creator.lobby, "bob").await;
    let joined = watcher.next_of("update").await;
    assert_eq!(joined["events"][0]["type"], "seat_taken");
    assert_eq!(watcher.state["seats"][1]["name"], "bob");
    api.start(&creator).await;
    let started = watcher.next_of("update").await;
    assert_eq!(started["events"][0]["type"], "game_started");
    assert_eq!(watcher.state["status"], "playing");
    assert_eq!(watcher.state["game"]["turn"]["player"], 0);
    assert!(
        legal_moves_of(&started).is_some_and(|moves| !moves.is_empty()),
        "seat 0 moves first and gets its moves"
    );
}
