//! Operating the server: liveness apart from readiness, metrics, JSON logs with spans,
//! the health-check subcommand, humane duration flags, and JSON bodies on every error.

use carcassonne_tests::client::{Api, WsClient};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::proxy::TcpProxy;
use carcassonne_tests::server::{TestServer, server_binary};
use carcassonne_tests::table::Table;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_known_path_with_the_wrong_method_gets_a_json_405() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let response = reqwest::Client::new()
        .delete(format!("{}/api/lobbies", server.http()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "method_not_allowed", "{body}");
    assert!(body["error"]["message"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn liveness_stays_up_while_readiness_follows_the_database() {
    let database = TestDatabase::postgres();
    let mut proxy = TcpProxy::start("127.0.0.1:5432".parse().unwrap()).await;
    let options = ["--db-acquire-timeout", "500ms"];
    let server = TestServer::start_with(&database.url_through_port(proxy.port), &options).await;
    let api = Api::new(server.http());
    assert_eq!(api.get("/healthz").await.0, 200);
    let (status, ready) = api.get("/readyz").await;
    assert_eq!((status, &ready["status"]), (200, &json!("ready")));
    proxy.cut().await;
    let (status, ready) = api.get("/readyz").await;
    assert_eq!(status, 503, "{ready}");
    assert_eq!(ready["error"]["code"], "database_unavailable");
    let (status, health) = api.get("/healthz").await;
    assert_eq!((status, &health["status"]), (200, &json!("ok")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_http_requests_by_route_and_connections_by_role() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let table = Table::start(&server, 2, json!({}), 4).await;
    let api = Api::new(server.http());
    api.get(&format!("/api/lobbies/{}", table.game)).await;
    let url = server.ws_url(&table.game);
    let _pending = WsClient::connect(&url).await;
    let expected = [
        r#"carcassonne_http_requests_total{method="GET",route="/api/lobbies/{id}",status="200"} 1"#,
        r#"carcassonne_http_request_duration_seconds_count{method="GET",route="/api/lobbies/{id}"} 1"#,
        r#"carcassonne_websocket_connections{role="player"} 2"#,
        r#"carcassonne_websocket_connections{role="spectator"} 1"#,
        r#"carcassonne_websocket_connections{role="pending"} 1"#,
    ];
    wait_for_metrics(&api, &expected).await;
}

/// A game nobody moves in for a second rests, its engine state let go, and wakes for its
/// next move. Its players' hellos and a spectator's are answered at rest, the mover's
/// with their legal moves. Resting and waking all through a game, it plays to its end
/// with every client's mirror agreeing, and rests again in its post-game stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_rests_while_its_players_think_and_wakes_for_their_moves() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let mut table = Table::start(&server, 2, json!({}), 4).await;
    let api = Api::new(server.http());
    let resting = ["carcassonne_resting_games 1"];
    let mut rests = 0;
    while !table.is_over() {
        for _ in 0..25 {
            if !table.is_over() {
                table.play_one().await;
            }
        }
        wait_for_metrics(&api, &resting).await;
        rests += 1;
        if rests % 2 == 0 && !table.is_over() {
            table.reconnect(&server).await;
            let (_, metrics) = api.get("/metrics").await;
            assert!(
                metrics.as_str().unwrap().contains(resting[0]),
                "the hellos left the game resting:\n{metrics}"
            );
        }
    }
    assert!(rests >= 3, "the game rested {rests} times");
    table.assert_mirrors_agree();
    wait_for_metrics(&api, &resting).await;
}

/// Waits up to 5 s for the metrics to hold every one of `lines`: the server counts a
/// WebSocket in the task it starts after the handshake's answer, so a client that has
/// its answer may ask for the metrics before its connection is counted.
async fn wait_for_metrics(api: &Api, lines: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (_, metrics) = api.get("/metrics").await;
        let metrics = metrics.as_str().unwrap().to_owned();
        let missing: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|line| !metrics.contains(line))
            .collect();
        if missing.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{missing:?} missing from:\n{metrics}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The first JSON log line that `matches`, waiting up to 5 s for it; every line must be
/// JSON.
async fn wait_for_log_line(server: &TestServer, matches: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let log = server.log();
        let lines: Vec<Value> = log
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
            .collect();
        if let Some(line) = lines.into_iter().find(|line| matches(line)) {
            return line;
        }
        assert!(Instant::now() < deadline, "no such log line:\n{log}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_carry_the_connection_span_and_the_close_reason() {
    let database = TestDatabase::sqlite();
    let options = ["--log-format", "json", "--hello-timeout", "300ms"];
    let server = TestServer::start_with(&database.url(), &options).await;
    let table = Table::start(&server, 2, json!({}), 6).await;
    let started = Instant::now();
    let mut silent = WsClient::connect(&server.ws_url(&table.game)).await;
    assert_eq!(silent.close_code().await, Some(1008));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the 300ms hello timeout applies"
    );
    // Hanging up ends the server's wait for our close reply, and then it logs.
    drop(silent);
    let closed = wait_for_log_line(&server, |line| {
        line["fields"]["reason"] == "no hello in time"
    })
    .await;
    assert_eq!(closed["fields"]["code"], 1008);
    assert_eq!(closed["span"]["name"], "connection");
    assert_eq!(closed["span"]["game"], table.game.as_str());
    assert!(
        closed["span"]["role"].is_null(),
        "no role before hello: {closed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_healthcheck_subcommand_exits_0_only_when_ready() {
    let database = TestDatabase::sqlite();
    let server = TestServer::start(&database.url()).await;
    let check = |url: String| async move {
        tokio::process::Command::new(server_binary())
            .args(["healthcheck", "--url", &url, "--timeout", "2s"])
            .output()
            .await
            .expect("the binary runs")
            .status
            .code()
    };
    assert_eq!(check(format!("{}/readyz", server.http())).await, Some(0));
    assert_eq!(check(format!("{}/nowhere", server.http())).await, Some(1));
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    assert_eq!(check(format!("http://{address}/readyz")).await, Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durations_are_humane_and_a_zero_interval_is_refused_at_start() {
    let output = tokio::process::Command::new(server_binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--ping-interval", "0s"])
        .output()
        .await
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(2), "a usage error");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--ping-interval"), "{stderr}");
    assert!(stderr.contains("more than zero"), "{stderr}");
}
