//! A lost database: commands get a "try again" rejection and change nothing, the games
//! in memory keep being served, and everything carries on when the database returns.

use carcassonne_tests::client::Api;
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::proxy::TcpProxy;
use carcassonne_tests::server::TestServer;
use carcassonne_tests::table::Table;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_database_gives_try_again_errors_and_play_resumes_when_it_returns() {
    let database = TestDatabase::postgres();
    let mut proxy = TcpProxy::start("127.0.0.1:5432".parse().unwrap()).await;
    let server = TestServer::start(&database.url_through_port(proxy.port)).await;
    let api = Api::new(server.http());
    let mut table = Table::start(&server, 2, json!({ "tile_limit": 8 }), 21).await;
    for _ in 0..5 {
        table.play_one().await;
    }
    let seq = table.seq();
    proxy.cut();

    let mover = table.mover().unwrap();
    let chosen = table.players[mover].legal_moves.clone().unwrap()[0].clone();
    let reply = table.players[mover]
        .command("during-outage", chosen.clone())
        .await;
    assert_eq!(reply["type"], "rejected", "{reply}");
    assert_eq!(reply["error"]["code"], "storage_unavailable");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("try again")
    );
    let (status, body) = api
        .post(
            &format!("/api/lobbies/{}/join", table.game),
            json!({ "display_name": "x" }),
        )
        .await;
    assert!(status == 409 || status == 503, "{status} {body}");
    let (status, body) = api
        .post("/api/players", json!({ "display_name": "Eve" }))
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("storage_unavailable"))
    );
    let (status, ready) = api.get("/readyz").await;
    assert_eq!(
        (status, &ready["error"]["code"]),
        (503, &json!("database_unavailable"))
    );
    // The game in memory is still served, unchanged.
    let spectator = table.spectator.as_mut().unwrap();
    spectator
        .send(json!({ "type": "resync", "last_seq": null }))
        .await;
    assert_eq!(
        spectator.next_of("snapshot").await["seq"],
        seq,
        "the rejected command changed nothing"
    );

    proxy.restore().await;
    let retry = table.players[mover].command("during-outage", chosen).await;
    assert_eq!(
        retry["type"], "ack",
        "the same command succeeds once the database is back: {retry}"
    );
    assert_eq!(retry["seq"], seq + 1);
    table.catch_up(seq + 1).await;
    table.play_to_the_end().await;
    let (status, _) = api
        .get(&format!("/api/matches/{}/record", table.game))
        .await;
    assert_eq!(
        status, 200,
        "the finished game was written once the database returned"
    );
    let (_, ready) = api.get("/readyz").await;
    assert_eq!(ready["database"], "ok");
}
