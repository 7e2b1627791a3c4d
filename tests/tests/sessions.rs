//! Connections over a game's life: spectators, reconnects, racing clients, duplicate
//! commands, and a server that drains on SIGTERM.

use carcassonne_tests::client::{Api, WsClient, legal_moves_of};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::server::TestServer;
use carcassonne_tests::table::Table;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spectator_sees_everything_but_cannot_move() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let mut table = Table::start(&server, 2, json!({ "tile_limit": 10 }), 1).await;
    for _ in 0..6 {
        table.play_one().await;
    }
    let spectator = table.spectator.as_mut().unwrap();
    assert!(
        spectator.legal_moves.is_none(),
        "spectators are never sent legal moves"
    );
    let legal = table.players[table.mover().unwrap()]
        .legal_moves
        .clone()
        .unwrap();
    let spectator = table.spectator.as_mut().unwrap();
    let reply = spectator.command("sneaky", legal[0].clone()).await;
    assert_eq!(reply["type"], "rejected");
    assert_eq!(reply["error"]["code"], "not_a_player");
    table.play_to_the_end().await;
    table.assert_mirrors_agree();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_who_disconnects_resumes_with_only_the_missed_updates() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let mut table = Table::start(&server, 2, json!({}), 2).await;
    for _ in 0..4 {
        table.play_one().await;
    }
    // Seat 1 drops and reconnects at once with the last seq it saw: nothing was missed.
    let gone = table.players.remove(1);
    let url = server.ws_url(&table.game);
    let token = table.seats[1].token.clone();
    let back = WsClient::resume(&url, &token, &gone).await;
    drop(gone);
    table.players.insert(1, back);
    for _ in 0..4 {
        table.play_one().await;
    }
    // Drop again, let the other seat move, come back asking for what was missed.
    let gone = table.players.remove(1);
    let last_seq = gone.seq.unwrap();
    let mover = table.mover().unwrap();
    assert_eq!(mover, 0, "after four whole turns seat 0 is to move again");
    let legal = table.players[0].legal_moves.clone().unwrap();
    let reply = table.players[0]
        .command("while-away", legal[0].clone())
        .await;
    assert_eq!(reply["type"], "ack");
    let now = reply["seq"].as_u64().unwrap();
    table.players[0].catch_up_to(now).await;
    table.spectator.as_mut().unwrap().catch_up_to(now).await;
    let mut back = WsClient::resume(&url, &token, &gone).await;
    drop(gone);
    let missed = back.next().await;
    assert_eq!(
        missed["type"], "update",
        "a short gap is filled with updates, not a snapshot"
    );
    assert_eq!(missed["seq"], last_seq + 1);
    back.catch_up_to(now).await;
    table.players.insert(1, back);
    table.play_to_the_end().await;
    table.assert_mirrors_agree();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_far_behind_gets_a_snapshot() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let mut table = Table::start(&server, 2, json!({}), 3).await;
    for _ in 0..80 {
        table.play_one().await;
    }
    let url = server.ws_url(&table.game);
    let mut stale = WsClient::join(&url, Some(&table.seats[0].token), Some(1)).await;
    let first = stale.next().await;
    assert_eq!(
        first["type"], "snapshot",
        "80 updates behind: a snapshot is cheaper"
    );
    assert_eq!(stale.state, table.players[0].state);
    // A client from the future gets no snapshot, which would be older than it claims
    // to have: see `a_last_seq_from_the_future_gets_no_older_state` (bad_input.rs).
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_racing_the_same_command_apply_it_once() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let mut table = Table::start(&server, 2, json!({}), 4).await;
    let url = server.ws_url(&table.game);
    let mover = table.mover().unwrap();
    let token = table.seats[mover].token.clone();
    let mut twin = WsClient::join(&url, Some(&token), None).await;
    twin.next_of("snapshot").await;
    let seq = table.players[mover].seq.unwrap();
    let legal = table.players[mover].legal_moves.clone().unwrap();
    // The same command id from two connections of one seat: one application, one seq.
    let message = json!({ "type": "command", "id": "same", "seq": seq, "move": legal[0] });
    table.players[mover].send(message.clone()).await;
    twin.send(message).await;
    let first = table.players[mover].next_of("ack").await;
    let second = twin.next_of("ack").await;
    assert_eq!(first["seq"], seq + 1);
    assert_eq!(
        second["seq"],
        seq + 1,
        "a repeated command id gets the original acknowledgement"
    );
    // Different ids for the same turn: the loser is told its view is stale.
    table.players[mover].catch_up_to(seq + 1).await;
    twin.catch_up_to(seq + 1).await;
    let actions = table.players[mover].legal_moves.clone().unwrap();
    let a = json!({ "type": "command", "id": "a", "seq": seq + 1, "move": actions[0] });
    let b =
        json!({ "type": "command", "id": "b", "seq": seq + 1, "move": actions[actions.len() - 1] });
    table.players[mover].send(a).await;
    twin.send(b).await;
    let replies = [
        table.players[mover].next_of_any(&["ack", "rejected"]).await,
        twin.next_of_any(&["ack", "rejected"]).await,
    ];
    let acks = replies
        .iter()
        .filter(|reply| reply["type"] == "ack")
        .count();
    assert_eq!(
        acks, 1,
        "exactly one of two racing commands wins: {replies:?}"
    );
    let loser = replies
        .iter()
        .find(|reply| reply["type"] == "rejected")
        .unwrap();
    assert_eq!(loser["error"]["code"], "stale_seq");
    let spectator = table.spectator.as_mut().unwrap();
    spectator.catch_up_to(seq + 2).await;
    let board = spectator.state["game"]["board"].as_array().unwrap();
    assert_eq!(
        board.len(),
        2,
        "the tile went down once, next to the start tile"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_tells_clients_drains_and_the_game_resumes_after_restart() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let mut table = Table::start(&server, 2, json!({ "tile_limit": 12 }), 5).await;
    for _ in 0..5 {
        table.play_one().await;
    }
    let seq = table.players[0].seq.unwrap();
    let status = server.terminate().await;
    assert!(
        status.success(),
        "a drained server exits cleanly: {status:?}"
    );
    for client in table.players.iter_mut() {
        let notice = client.next_of("shutdown").await;
        assert!(notice["message"].as_str().unwrap().contains("restart"));
        assert_eq!(
            client.close_code().await,
            Some(1012),
            "close code: service restart"
        );
    }
    let server = TestServer::start(&database.url()).await;
    table.reconnect(&server).await;
    assert_eq!(
        table.spectator.as_ref().unwrap().seq,
        Some(seq),
        "nothing was lost or added"
    );
    table.play_to_the_end().await;
    table.assert_mirrors_agree();
}

/// A player to move who reconnects having missed nothing (as after a server restart, or a
/// dropped connection between two of its own moves) is told its legal moves at once; a
/// player not to move is told nothing beyond its welcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnecting_player_to_move_is_reminded_of_its_legal_moves() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let mut table = Table::start(&server, 2, json!({}), 8).await;
    table.play_one().await;
    let mover = table.mover().unwrap();
    let url = server.ws_url(&table.game);
    let gone = table.players.remove(mover);
    let mut back = WsClient::resume(&url, &table.seats[mover].token, &gone).await;
    let reminder = back.next().await;
    assert_eq!(reminder["type"], "your_turn", "{reminder}");
    assert_eq!(reminder["seq"], gone.seq.unwrap());
    assert_eq!(legal_moves_of(&reminder), gone.legal_moves.clone());
    drop(gone);
    table.players.insert(mover, back);

    let waiting = 1 - mover;
    let gone = table.players.remove(waiting);
    let mut back = WsClient::resume(&url, &table.seats[waiting].token, &gone).await;
    back.send(json!({ "type": "ping" })).await;
    assert_eq!(
        back.next().await["type"],
        "pong",
        "nothing came before the pong"
    );
    drop(gone);
    table.players.insert(waiting, back);
    table.play_to_the_end().await;
}

/// A player's own first snapshot counts its own connection among the connected seats.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_players_first_snapshot_lists_its_own_seat_as_connected() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let api = Api::new(server.http());
    let creator = api.create_lobby("ann", 2, json!({})).await;
    let url = server.ws_url(&creator.lobby);
    let mut ann = WsClient::join(&url, Some(&creator.token), None).await;
    let snapshot = ann.next_of("snapshot").await;
    assert_eq!(snapshot["connected"], json!([0]), "{snapshot}");
}

/// A single node listens before it reads its unfinished games: the first request to one
/// restores that game at once, and the others are restored in the background though
/// nobody asks for them (their clocks and bots must run). Every game goes on from where
/// it stood.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_a_game_is_served_on_its_first_request_and_the_rest_come_back_unasked() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let mut tables = Vec::new();
    for seed in 0..3 {
        let mut table = Table::start(&server, 2, json!({ "tile_limit": 12 }), seed).await;
        table.play_one().await;
        tables.push(table);
    }
    let seqs: Vec<u64> = tables.iter().map(Table::seq).collect();
    server.kill().await;
    let server = TestServer::start(&database.url()).await;
    assert!(server.log().contains("unfinished=3"), "{}", server.log());

    let mut first = tables.remove(0);
    first.reconnect(&server).await;
    assert_eq!(first.seq(), seqs[0], "nothing was lost or added");
    first.play_one().await;
    assert_eq!(first.seq(), seqs[0] + 1);

    let api = Api::new(server.http());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (_, health) = api.get("/healthz").await;
        if health["live_games"] == 3 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{health}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        server.log().contains("restored in the background"),
        "{}",
        server.log()
    );
    for (table, seq) in tables.iter_mut().zip(&seqs[1..]) {
        table.reconnect(&server).await;
        assert_eq!(table.seq(), *seq, "nothing was lost or added");
        table.play_to_the_end().await;
        table.assert_mirrors_agree();
    }
    first.play_to_the_end().await;
    first.assert_mirrors_agree();
}
