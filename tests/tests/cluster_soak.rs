//! A bounded soak of cluster mode: three nodes on one Postgres (each reaching it through
//! a proxy that delays every reply by 40 ms, so that writes are in flight when a fault
//! strikes) and a NATS of the test's own, games played end to end by roaming clients
//! that think a little before each move, while, one after another, a node is
//! frozen (SIGSTOP) past its lease and its writes' timeouts and resumed, a node is killed (SIGKILL) and started
//! again under its name, a node is drained (SIGTERM) and started again, and NATS is
//! restarted. Games are opened as others end. Once the faults stop, every game must
//! finish, and every client's view must agree with the others' and with the database:
//! no fork, no lost update (a client that waits too long fails), no phantom
//! acknowledgement, no refusal of a command that was applied.
//!
//! `SOAK_SECONDS` sets how long faults are made (60 by default, as CI runs it).

use carcassonne_tests::cluster::{
    LiveNodes, RoamingGame, assert_clients_agree_with_the_log, move_log, start_node_on,
};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::nats::TestNats;
use carcassonne_tests::proxy::TcpProxy;
use carcassonne_tests::server::TestServer;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const LEASE_TTL: &str = "2s";
const LEASE: Duration = Duration::from_secs(2);
const NODES: usize = 3;
/// Games in play at any time.
const GAMES: usize = 6;
/// How long each reply of the database takes to reach a node.
const DATABASE_LATENCY: Duration = Duration::from_millis(40);
/// How long a player thinks before a move.
const THINK: Duration = Duration::from_millis(100);
/// How long a node stays frozen: past its lease, and past the store's operation timeout
/// (8 s), so that the write it had in flight has timed out when it resumes.
const FREEZE: Duration = Duration::from_secs(10);

/// The soak's nodes, each up or down, and where clients may find them.
struct Nodes {
    /// The database, as each node reaches it: through its own slow proxy.
    proxies: Vec<TcpProxy>,
    database: TestDatabase,
    nats: TestNats,
    names: Vec<String>,
    servers: Vec<Option<TestServer>>,
    live: LiveNodes,
    /// Everything each node logged, over all of its lives.
    logs: Vec<String>,
}

impl Nodes {
    async fn start(database: TestDatabase, nats: TestNats) -> Nodes {
        let tag = &uuid::Uuid::new_v4().simple().to_string()[..8];
        let mut proxies = Vec::new();
        for _ in 0..NODES {
            let proxy = TcpProxy::start("127.0.0.1:5432".parse().unwrap()).await;
            proxy.delay_replies(DATABASE_LATENCY);
            proxies.push(proxy);
        }
        let mut nodes = Nodes {
            proxies,
            database,
            nats,
            names: (0..NODES).map(|n| format!("soak-{tag}-{n}")).collect(),
            servers: (0..NODES).map(|_| None).collect(),
            live: LiveNodes::default(),
            logs: vec![String::new(); NODES],
        };
        for index in 0..NODES {
            nodes.start_node(index).await;
        }
        nodes
    }

    async fn start_node(&mut self, index: usize) {
        let url = self.database.url_through_port(self.proxies[index].port);
        let nats = self.nats.url();
        let server = start_node_on(&url, &nats, &self.names[index], LEASE_TTL).await;
        self.live.add(server.address);
        self.servers[index] = Some(server);
    }

    fn take(&mut self, index: usize) -> TestServer {
        let server = self.servers[index].take().expect("the node is up");
        self.live.remove(server.address);
        server
    }

    fn http_bases(&self) -> Vec<String> {
        self.servers
            .iter()
            .flatten()
            .map(TestServer::http)
            .collect()
    }

    /// One fault, by turn: the node it strikes is `round % NODES`.
    async fn strike(&mut self, round: usize) -> &'static str {
        let index = round % NODES;
        match round % 4 {
            0 => {
                // Clients still find it: a frozen node is not known to be frozen.
                let server = self.servers[index].as_ref().expect("up");
                server.pause();
                tokio::time::sleep(FREEZE).await;
                server.resume();
                "froze a node past its lease"
            }
            1 => {
                let server = self.take(index);
                self.logs[index] += &server.log();
                server.kill().await;
                tokio::time::sleep(LEASE / 2).await;
                self.start_node(index).await;
                "killed a node and started it again"
            }
            2 => {
                self.nats.stop();
                tokio::time::sleep(LEASE).await;
                self.nats.start();
                "restarted NATS"
            }
            _ => {
                let server = self.take(index);
                let (status, log) = server.terminate_within(Duration::from_secs(25)).await;
                assert!(status.success(), "a drained node exits cleanly:\n{log}");
                self.logs[index] += &log;
                self.start_node(index).await;
                "drained a node and started it again"
            }
        }
    }

    fn all_logs(&self) -> String {
        let current = self.servers.iter().flatten().map(TestServer::log);
        self.logs.iter().cloned().chain(current).collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn games_stay_true_through_frozen_killed_and_drained_nodes_and_nats_restarts() {
    let Some(database) = TestDatabase::postgres_or_skip() else {
        return;
    };
    let Some(nats) = TestNats::start_or_skip() else {
        return;
    };
    let soak = Duration::from_secs(
        std::env::var("SOAK_SECONDS")
            .ok()
            .and_then(|seconds| seconds.parse().ok())
            .unwrap_or(60),
    );
    let mut nodes = Nodes::start(database, nats).await;
    let acked_total = Arc::new(AtomicU64::new(0));
    let (mut playing, mut ended): (Vec<RoamingGame>, Vec<RoamingGame>) = (Vec::new(), Vec::new());
    let mut opened = 0;
    let started = Instant::now();
    let mut faults = Vec::new();
    while started.elapsed() < soak {
        let (done, going): (Vec<_>, Vec<_>) = playing.into_iter().partition(RoamingGame::finished);
        (playing, ended) = (going, ended.into_iter().chain(done).collect());
        while playing.len() < GAMES {
            let bases = nodes.http_bases();
            let game = RoamingGame::open(&bases, opened, &nodes.live, &acked_total, THINK);
            playing.push(game.await);
            opened += 1;
        }
        let before = acked_total.load(Ordering::Relaxed);
        faults.push(nodes.strike(faults.len()).await);
        tokio::time::sleep(LEASE).await;
        eprintln!(
            "{:>5.1?}: {}; {} commands acknowledged since the fault began",
            started.elapsed(),
            faults.last().unwrap(),
            acked_total.load(Ordering::Relaxed) - before
        );
    }

    let settled = Instant::now();
    ended.extend(playing);
    let mut reconnects = 0;
    for game in ended.iter() {
        while !game.finished() {
            assert!(
                settled.elapsed() < Duration::from_secs(120),
                "{} never finished once the faults stopped",
                game.id
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let games = ended.len();
    for game in ended {
        let id = game.id.clone();
        let reports = game.reports().await;
        reconnects += reports.iter().map(|report| report.reconnects).sum::<u32>();
        let logged = move_log(&nodes.database, &id);
        assert_clients_agree_with_the_log(&id, &reports, &logged);
    }
    let logs = nodes.all_logs();
    assert!(!logs.contains("panicked"), "a node panicked:\n{logs}");
    eprintln!(
        "{games} games checked after {} faults ({} commands acknowledged, {reconnects} \
         reconnections); the last games finished {:?} after the faults stopped",
        faults.len(),
        acked_total.load(Ordering::Relaxed),
        settled.elapsed()
    );
    assert!(
        faults.len() >= 4,
        "every kind of fault was made at least once"
    );
}
