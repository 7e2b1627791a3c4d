//! Crash safety: the server is killed with SIGKILL in the middle of several games, one
//! of them with a command in flight, and restarted on the same database. Every
//! acknowledged move is there, none is applied twice, and every game finishes normally.

use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::server::TestServer;
use carcassonne_tests::table::Table;
use serde_json::json;

async fn crash_and_recover(database: &TestDatabase) {
    let server = TestServer::start(&database.url()).await;
    let mut tables = Vec::new();
    for (players, commands) in [(2u8, 17), (3, 30), (4, 9)] {
        let mut table = Table::start(&server, players, json!({}), players as u64 * 7).await;
        for _ in 0..commands {
            table.play_one().await;
        }
        tables.push(table);
    }
    let acknowledged: Vec<u64> = tables.iter().map(|table| table.seq()).collect();
    // One more command is sent and the server dies before its reply can be read.
    let mover = tables[0].mover().unwrap();
    let in_flight = tables[0].players[mover].legal_moves.clone().unwrap()[0].clone();
    let seq = acknowledged[0];
    let command = json!({ "type": "command", "id": "in-flight", "seq": seq, "move": in_flight });
    tables[0].players[mover].send(command).await;
    server.kill().await;

    let server = TestServer::start(&database.url()).await;
    for (index, (table, &acked)) in tables.iter_mut().zip(&acknowledged).enumerate() {
        table.reconnect(&server).await;
        let current = table.spectator.as_ref().unwrap().seq.unwrap();
        let is_the_in_flight_game = index == 0;
        assert!(
            current >= acked,
            "{}: seq {current} lost acknowledged moves up to {acked}",
            database.kind()
        );
        assert!(
            current <= acked + 1,
            "{}: seq {current} is beyond anything sent",
            database.kind()
        );
        if current == acked + 1 {
            assert!(
                is_the_in_flight_game,
                "only the in-flight command may have been committed unacknowledged"
            );
        }
    }
    // Resending the in-flight command applies it exactly once, whether or not it was
    // committed before the crash.
    let retry = tables[0].players[mover]
        .command_at("in-flight", seq, in_flight)
        .await;
    assert_eq!(retry["type"], "ack", "{retry}");
    assert_eq!(retry["seq"], seq + 1);
    tables[0].catch_up(seq + 1).await;
    for table in tables.iter_mut() {
        table.play_to_the_end().await;
        table.assert_mirrors_agree();
        assert_eq!(table.players[0].state["status"], "finished");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_game_loses_no_acknowledged_move_on_sqlite() {
    crash_and_recover(&TestDatabase::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_game_loses_no_acknowledged_move_on_postgres() {
    if let Some(database) = TestDatabase::postgres_or_skip() {
        crash_and_recover(&database).await;
    }
}
