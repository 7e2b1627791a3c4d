//! Cluster mode end to end: three nodes on one Postgres and one NATS. Games are created,
//! joined and started over REST on different nodes, and played by clients spread over
//! all three; one node is stopped with SIGTERM and another killed with SIGKILL while
//! they play. Every game still finishes, every acknowledged move is in the database
//! exactly once, and every client saw consecutive `seq`s (resuming after each drop).

use carcassonne_tests::client::Api;
use carcassonne_tests::cluster::{
    LiveNodes, RoamingClient, RoamingReport, nats_or_skip, start_node,
};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::server::TestServer;
use serde_json::json;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

const GAMES: usize = 6;
/// Short leases, so that a killed node's games are taken over within the test's patience.
const LEASE_TTL: &str = "2s";

struct Game {
    id: String,
    clients: Vec<JoinHandle<RoamingReport>>,
    acked: Arc<AtomicU64>,
}

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
        games.push(open_game(&servers, number, &nodes, &acked_total).await);
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

/// Creates a game on one node, joins it on the next, starts it on the third, and sets
/// its two players and a spectator playing, each preferring a different node.
async fn open_game(
    servers: &[TestServer],
    number: usize,
    nodes: &LiveNodes,
    acked_total: &Arc<AtomicU64>,
) -> Game {
    let on = |offset: usize| Api::new(servers[(number + offset) % servers.len()].http());
    let creator = on(0).create_lobby("creator", 2, json!({})).await;
    let joiner = on(1).join(&creator.lobby, "joiner").await;
    let lobby = on(2).start(&creator).await;
    assert_eq!(lobby["status"], "playing", "{lobby}");
    let acked = Arc::new(AtomicU64::new(0));
    let tokens = [Some(creator.token), Some(joiner.token), None];
    let clients = tokens
        .into_iter()
        .enumerate()
        .map(|(offset, token)| {
            let client = RoamingClient {
                game: creator.lobby.clone(),
                token,
                preferred: number + offset,
                nodes: nodes.clone(),
                acked_total: acked_total.clone(),
                acked_in_game: acked.clone(),
            };
            tokio::spawn(client.run())
        })
        .collect();
    Game {
        id: creator.lobby,
        clients,
        acked,
    }
}

async fn wait_for_acks(acked_total: &AtomicU64, at_least: u64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while acked_total.load(Ordering::Relaxed) < at_least {
        assert!(Instant::now() < deadline, "the games stopped moving");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How long until every unfinished game acknowledged a command again.
async fn all_games_moved_again(games: &[Game], progress: &[u64]) -> Duration {
    let since = Instant::now();
    loop {
        let waiting = games.iter().zip(progress).any(|(game, &before)| {
            let finished = game.clients.iter().all(|client| client.is_finished());
            !finished && game.acked.load(Ordering::Relaxed) == before
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
async fn check_game(database: &TestDatabase, node: &TestServer, game: Game) -> u32 {
    let mut reports = Vec::new();
    for client in game.clients {
        reports.push(client.await.expect("a client plays to the end"));
    }
    // Every client that saw the end holds the same final state; one that was away when
    // the game ended finds it over REST (checked below) and holds an earlier state.
    let saw_the_end: Vec<&RoamingReport> = reports.iter().filter(|r| r.saw_the_end).collect();
    assert!(!saw_the_end.is_empty(), "{}: a client saw the end", game.id);
    for report in &saw_the_end {
        assert_eq!(report.state["status"], "finished", "{}", game.id);
        assert_eq!(
            report.state, saw_the_end[0].state,
            "{}: clients agree",
            game.id
        );
    }
    let logged = move_log(database, &game.id);
    let final_seq = saw_the_end[0].seq;
    assert_eq!(
        logged.last().map(|(seq, _)| *seq),
        Some(final_seq),
        "{}",
        game.id
    );
    for acked in reports.iter().flat_map(|report| &report.acked) {
        let rows = logged
            .iter()
            .filter(|(seq, id)| *seq == acked.seq && id == &acked.id);
        assert_eq!(
            rows.count(),
            1,
            "{}: acked {acked:?} is logged once",
            game.id
        );
    }
    let mut ids: Vec<&String> = logged
        .iter()
        .map(|(_, id)| id)
        .filter(|id| !id.is_empty())
        .collect();
    let count = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), count, "{}: no command is logged twice", game.id);
    assert!(logged.iter().all(|(seq, _)| *seq <= final_seq));
    let (status, detail) = Api::new(node.http())
        .get(&format!("/api/matches/{}", game.id))
        .await;
    assert_eq!(status, 200, "{detail}");
    reports.iter().map(|report| report.reconnects).sum()
}

/// `(seq, command id)` of every logged move of `game`, from the database itself.
fn move_log(database: &TestDatabase, game: &str) -> Vec<(u64, String)> {
    let query = format!(
        "SELECT seq, coalesce(command_id, '') FROM moves WHERE game_id = '{game}' ORDER BY seq"
    );
    let output = Command::new("psql")
        .args([database.url().as_str(), "-At", "-F", "\t", "-c", &query])
        .output()
        .expect("psql runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("text")
        .lines()
        .map(|line| {
            let (seq, id) = line.split_once('\t').expect("two columns");
            (seq.parse().expect("a seq"), id.to_owned())
        })
        .collect()
}
