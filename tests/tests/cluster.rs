//! Cluster mode end to end: three nodes on one Postgres and one NATS. Games are created,
//! joined and started over REST on different nodes, and played by clients spread over
//! all three; one node is stopped with SIGTERM and another killed with SIGKILL while
//! they play. Every game still finishes, every acknowledged move is in the database
//! exactly once, and every client saw consecutive `seq`s (resuming after each drop).

use carcassonne_tests::client::Api;
use carcassonne_tests::cluster::{
    LiveNodes, RoamingGame, assert_clients_agree_with_the_log, move_log, nats_or_skip, start_node,
};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::server::TestServer;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const GAMES: usize = 6;
/// Short leases, so that a killed node's games are taken over within the test's patience.
const LEASE_TTL: &str = "2s";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn games_survive_a_node_stopping_and_another_dying() {
    let Some(database) = TestDatabase::postgres_or_skip() else {
        return;
    };
    if !nats_or_skip() {
        return;
    }
    let url = database.url();
    let tag = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let mut servers = Vec::new();
    for name in ["a", "b", "c"] {
        servers.push(start_node(&url, &format!("e2e-{tag}-{name}"), LEASE_TTL).await);
    }
    let nodes = LiveNodes::new(servers.iter().map(|server| server.address).collect());
    let acked_total = Arc::new(AtomicU64::new(0));
    let mut games = Vec::new();
    for number in 0..GAMES {
        let bases: Vec<String> = servers.iter().map(TestServer::http).collect();
        let game = RoamingGame::open(
            &bases,
            number,
            &nodes,
            &acked_total,
            Duration::ZERO,
            json!({}),
        );
        games.push(game.await);
    }
    let started = Instant::now();

    // A deploy: node b drains and hands its games over.
    wait_for_acks(&acked_total, 60).await;
    let b = servers.remove(1);
    nodes.remove(b.address);
    let (status, log) = b.terminate_within(Duration::from_secs(30)).await;
    assert!(status.success(), "node b drains cleanly:\n{log}");
    assert!(log.contains("handed this node's games over"), "{log}");

    // A crash: node c dies; its leases lapse and its games are taken over from their logs.
    wait_for_acks(&acked_total, 160).await;
    let c = servers.remove(1);
    nodes.remove(c.address);
    let progress: Vec<u64> = games
        .iter()
        .map(|g| g.acked.load(Ordering::Relaxed))
        .collect();
    let killed = Instant::now();
    c.kill().await;
    let takeover = all_games_moved_again(&games, &progress).await;
    eprintln!("every game moved again {takeover:?} after node c was killed");

    let node_a = &servers[0];
    let mut reconnects = 0;
    for game in games {
        reconnects += check_game(&database, node_a, game).await;
    }
    eprintln!(
        "{GAMES} games finished in {:?}; node c killed {:?} in; {reconnects} reconnections",
        started.elapsed(),
        killed - started
    );
    // The games of the killed node could only go on by being taken over from their logs.
    assert!(
        node_a.log().contains("took the game over"),
        "{}",
        node_a.log()
    );
    let (_, metrics) = Api::new(node_a.http()).get("/metrics").await;
    let metrics = metrics.as_str().unwrap_or_default().to_owned();
    for event in ["taken_over", "relayed"] {
        let line = format!("carcassonne_cluster_events_total{{event=\"{event}\"}}");
        assert!(metrics.contains(&line), "{event} is counted:\n{metrics}");
    }
    assert!(reconnects >= 4, "clients of both stopped nodes reconnected");
}

async fn wait_for_acks(acked_total: &AtomicU64, at_least: u64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while acked_total.load(Ordering::Relaxed) < at_least {
        assert!(Instant::now() < deadline, "the games stopped moving");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How long until every unfinished game acknowledged a command again.
async fn all_games_moved_again(games: &[RoamingGame], progress: &[u64]) -> Duration {
    let since = Instant::now();
    loop {
        let waiting = games.iter().zip(progress).any(|(game, &before)| {
            !game.finished() && game.acked.load(Ordering::Relaxed) == before
        });
        if !waiting {
            return since.elapsed();
        }
        assert!(
            since.elapsed() < Duration::from_secs(60),
            "a game was never taken over"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The game finished, its clients agree, and every acknowledged command is in the move
/// log exactly once, at the `seq` it was acknowledged with. Returns how many times its
/// clients reconnected.
async fn check_game(database: &TestDatabase, node: &TestServer, game: RoamingGame) -> u32 {
    let id = game.id.clone();
    let reports = game.reports().await;
    let logged = move_log(database, &id);
    assert_clients_agree_with_the_log(&id, &reports, &logged);
    let (status, detail) = Api::new(node.http())
        .get(&format!("/api/matches/{id}"))
        .await;
    assert_eq!(status, 200, "{detail}");
    reports.iter().map(|report| report.reconnects).sum()
}
