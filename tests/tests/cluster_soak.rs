//! A bounded soak of cluster mode: three nodes on one Postgres (each reaching it through
//! a proxy that delays every reply by 40 ms, so that writes are in flight when a fault
//! strikes) and a NATS of the test's own, each node owning a few idle games from the
//! start (so that each fault moves many games), games played end to end by roaming
//! clients that think a little before each move, while, one after another, a node is
//! frozen (SIGSTOP) past its lease and its writes' timeouts and resumed, a node is
//! killed (SIGKILL) and started again under its name, a node is drained (SIGTERM) and
//! started again, NATS is restarted, and, while the database takes 150 ms a reply, a
//! node is frozen with its writes in flight (issue 48). Games are opened as others end.
//! Once the faults stop, every game must finish, and every client's view must agree with
//! the others' and with the database: no fork, no lost update (a client that waits too
//! long fails), no phantom acknowledgement, no refusal of a command that was applied, no
//! state older than what a client had (a rolled-back snapshot fails at once), no game
//! stuck. Every game a frozen node owned must have been taken over by another within
//! 8 s, and no committed move may have reached a client more than 3 s late while the
//! client sat on a live node and the game's owner was up (see
//! `carcassonne_tests::outages`).
//!
//! `SOAK_SECONDS` sets how long faults are made (60 by default, as CI runs it).

use carcassonne_tests::client::Api;
use carcassonne_tests::cluster::{
    LiveNodes, RoamingGame, RoamingReport, assert_clients_agree_with_the_log, move_log, move_times,
    owner_of, start_node_on,
};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::nats::TestNats;
use carcassonne_tests::outages::{Late, Outages, Ownership, STALL, lateness, takeover_waits};
use carcassonne_tests::proxy::TcpProxy;
use carcassonne_tests::server::TestServer;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

const LEASE_TTL: &str = "2s";
const LEASE: Duration = Duration::from_secs(2);
const NODES: usize = 3;
/// Games in play at any time.
const GAMES: usize = 6;
/// Games each node starts at the beginning and nobody plays: every fault then moves a
/// node's worth of games at once, as in a real cluster, and not two or three.
const IDLE_GAMES_PER_NODE: usize = 8;
/// How long each reply of the database takes to reach a node.
const DATABASE_LATENCY: Duration = Duration::from_millis(40);
/// How long each reply of the database takes to reach a node while it is slow, before
/// and while a node is frozen: the set-up of issue 48.
const SLOW_DATABASE_LATENCY: Duration = Duration::from_millis(150);
/// How long the nodes play on at the slow pace before one is frozen, so that its writes
/// are in flight when it is.
const SLOW_BEFORE_FREEZE: Duration = Duration::from_millis(700);
/// How long a player thinks before a move.
const THINK: Duration = Duration::from_millis(100);
/// How long a node stays frozen: past its lease, and past the store's operation timeout
/// (8 s), so that the write it had in flight has timed out when it resumes.
const FREEZE: Duration = Duration::from_secs(10);
/// How soon after a node froze every game it owned must be another node's: the lease
/// (2 s), or, for a game whose row a write in flight holds, Postgres ending the frozen
/// session's transaction (the server's idle-in-transaction timeout, 5 s); then a sweep
/// (0.5 s) and a few round trips at 150 ms; the rest is room for a busy machine.
const TAKEN_OVER_WITHIN: Duration = Duration::from_secs(8);

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
    /// When each node and NATS were out of service.
    outages: Outages,
    /// The idle games: each one's id, when it was opened, and the node that owned it.
    idle_games: Vec<(String, SystemTime, String)>,
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
            outages: Outages::default(),
            idle_games: Vec::new(),
        };
        for index in 0..NODES {
            nodes.start_node(index).await;
        }
        for index in 0..NODES {
            let api = Api::new(nodes.servers[index].as_ref().expect("up").http());
            let opened = SystemTime::now();
            let opening = (0..IDLE_GAMES_PER_NODE).map(|_| open_idle_game(&api));
            for game in futures_util::future::join_all(opening).await {
                nodes
                    .idle_games
                    .push((game, opened, nodes.names[index].clone()));
            }
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
        match round % 5 {
            0 => {
                self.freeze(index).await;
                "froze a node past its lease"
            }
            1 => {
                self.kill_and_restart(index).await;
                "killed a node and started it again"
            }
            2 => {
                let stopped = SystemTime::now();
                self.nats.stop();
                tokio::time::sleep(LEASE).await;
                self.nats.start();
                self.outages.nats_out((stopped, SystemTime::now()));
                "restarted NATS"
            }
            3 => {
                self.drain_and_restart(index).await;
                "drained a node and started it again"
            }
            _ => {
                // Issue 48: the database slows down for every node, and one node is
                // frozen with its writes in flight; the others take its games over at
                // the slow pace.
                self.delay_database_replies(SLOW_DATABASE_LATENCY);
                tokio::time::sleep(SLOW_BEFORE_FREEZE).await;
                self.freeze(index).await;
                self.delay_database_replies(DATABASE_LATENCY);
                "froze a node with writes in flight while the database was slow"
            }
        }
    }

    fn delay_database_replies(&self, delay: Duration) {
        for proxy in &self.proxies {
            proxy.delay_replies(delay);
        }
    }

    /// Freezes node `index` for [`FREEZE`]. Clients still find it: a frozen node is not
    /// known to be frozen.
    async fn freeze(&mut self, index: usize) {
        let server = self.servers[index].as_ref().expect("up");
        let frozen = SystemTime::now();
        server.pause();
        tokio::time::sleep(FREEZE).await;
        server.resume();
        let span = (frozen, SystemTime::now());
        self.outages
            .node_frozen(&self.names[index], server.address, span);
    }

    async fn kill_and_restart(&mut self, index: usize) {
        let server = self.take(index);
        self.logs[index] += &server.log();
        let (killed, address) = (SystemTime::now(), server.address);
        server.kill().await;
        tokio::time::sleep(LEASE / 2).await;
        self.start_node(index).await;
        let span = (killed, SystemTime::now());
        self.outages.node_stopped(&self.names[index], address, span);
    }

    async fn drain_and_restart(&mut self, index: usize) {
        let server = self.take(index);
        let (drained, address) = (SystemTime::now(), server.address);
        let (status, log) = server.terminate_within(Duration::from_secs(25)).await;
        assert!(status.success(), "a drained node exits cleanly:\n{log}");
        self.logs[index] += &log;
        self.start_node(index).await;
        let span = (drained, SystemTime::now());
        self.outages.node_stopped(&self.names[index], address, span);
    }

    fn all_logs(&self) -> String {
        let current = self.servers.iter().flatten().map(TestServer::log);
        self.logs.iter().cloned().chain(current).collect()
    }
}

/// Starts a game on `api`'s node, which owns it, and leaves it: its id.
async fn open_idle_game(api: &Api) -> String {
    let creator = api.create_lobby("idle", 2, json!({})).await;
    api.join(&creator.lobby, "idler").await;
    api.start(&creator).await;
    creator.lobby
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
    let mut first_owners = HashMap::new();
    while started.elapsed() < soak {
        let (done, going): (Vec<_>, Vec<_>) = playing.into_iter().partition(RoamingGame::finished);
        (playing, ended) = (going, ended.into_iter().chain(done).collect());
        while playing.len() < GAMES {
            let bases = nodes.http_bases();
            let live = &nodes.live;
            let game = RoamingGame::open(&bases, opened, live, &acked_total, THINK, json!({}));
            let game = game.await;
            let owner = owner_of(&nodes.database, &game.id).expect("a new game has its owner");
            first_owners.insert(game.id.clone(), owner);
            playing.push(game);
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
    let logs = nodes.all_logs();
    let judged = judge(&nodes, ended, &first_owners, &logs).await;
    let waits = takeover_waits(&judged.ownerships, &nodes.outages);
    report_takeovers(&waits);
    report_stalls(&judged.stalls, judged.latest, started);
    let reconnects = judged.reconnects;
    for (id, reports) in judged.reports {
        let logged = move_log(&nodes.database, &id);
        assert_clients_agree_with_the_log(&id, &reports, &logged);
    }
    assert!(!logs.contains("panicked"), "a node panicked:\n{logs}");
    eprintln!(
        "{games} games checked after {} faults ({} commands acknowledged, {reconnects} \
         reconnections); the last games finished {:?} after the faults stopped",
        faults.len(),
        acked_total.load(Ordering::Relaxed),
        settled.elapsed()
    );
    assert!(
        faults.len() >= 5,
        "every kind of fault was made at least once"
    );
    let late = |wait: &Option<Duration>| wait.is_none_or(|wait| wait > TAKEN_OVER_WITHIN);
    let late_takeovers = waits.iter().filter(|(_, wait)| late(wait)).count();
    assert_eq!(
        late_takeovers, 0,
        "a frozen node's games were taken over later than {TAKEN_OVER_WITHIN:?}"
    );
    assert!(
        judged.stalls.is_empty(),
        "{} moves reached a client of a live node more than {STALL:?} late",
        judged.stalls.len()
    );
}

/// What the games' outages cost them.
struct Judged {
    /// Every game's clients' reports, by game.
    reports: Vec<(String, Vec<RoamingReport>)>,
    /// Who owned each game, idle or played, when.
    ownerships: Vec<Ownership>,
    /// The moves that reached a client late, by game.
    stalls: Vec<(String, Late)>,
    /// How late the latest move of all came.
    latest: Duration,
    reconnects: u32,
}

/// Collects the reports of the `ended` games and judges what outages cost them.
async fn judge(
    nodes: &Nodes,
    ended: Vec<RoamingGame>,
    first_owners: &HashMap<String, String>,
    logs: &str,
) -> Judged {
    let idle = nodes.idle_games.iter();
    let mut judged = Judged {
        reports: Vec::new(),
        ownerships: idle
            .map(|(id, opened, owner)| Ownership::from_logs(id, *opened, owner, logs))
            .collect(),
        stalls: Vec::new(),
        latest: Duration::ZERO,
        reconnects: 0,
    };
    for game in ended {
        let (id, opened) = (game.id.clone(), game.opened);
        let reports = game.reports().await;
        judged.reconnects += reports.iter().map(|report| report.reconnects).sum::<u32>();
        let ownership = Ownership::from_logs(&id, opened, &first_owners[&id], logs);
        let made = move_times(&nodes.database, &id);
        for late in lateness(&reports, &made, &ownership, &nodes.outages) {
            judged.latest = judged.latest.max(late.late);
            if late.late > STALL {
                judged.stalls.push((id.clone(), late));
            }
        }
        let last_move = made.last().map_or(opened, |(_, at)| *at);
        judged.ownerships.push(ownership.finished_at(last_move));
        judged.reports.push((id, reports));
    }
    judged
}

/// Says how long a frozen node's games waited to be taken over.
fn report_takeovers(waits: &[(String, Option<Duration>)]) {
    let mut taken: Vec<Duration> = waits.iter().filter_map(|(_, wait)| *wait).collect();
    taken.sort();
    if let (Some(fastest), Some(slowest)) = (taken.first(), taken.last()) {
        eprintln!(
            "{} games of frozen nodes were taken over, after {fastest:.1?} to {slowest:.1?}",
            taken.len()
        );
    }
    for (game, wait) in waits {
        match wait {
            Some(wait) if *wait > TAKEN_OVER_WITHIN => {
                eprintln!("  {game} was taken over only after {wait:.1?}")
            }
            Some(_) => {}
            None => eprintln!("  {game} was not taken over while its node was frozen"),
        }
    }
}

/// Says how many moves came late, and when, as seconds since the soak `began`, and how
/// late the latest move of all was.
fn report_stalls(stalls: &[(String, Late)], latest: Duration, began: Instant) {
    let began = SystemTime::now() - began.elapsed();
    eprintln!(
        "{} moves reached a client of a live node more than {STALL:?} late; the latest \
         came {latest:.1?} late",
        stalls.len()
    );
    for (game, stall) in stalls {
        let made = stall.made.duration_since(began).unwrap_or_default();
        eprintln!(
            "  {game} seq {} made at {made:.1?}, client {}: {:.1?} late",
            stall.seq, stall.client, stall.late
        );
    }
}
