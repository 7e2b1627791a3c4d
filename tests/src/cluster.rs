//! Several server nodes on one Postgres and one NATS, and clients that roam between them.
//!
//! NATS is found at `TEST_NATS_URL` (default `nats://127.0.0.1:4222`). When nothing
//! listens there the cluster tests skip, saying so on stderr; with `REQUIRE_NATS=1`, as
//! CI sets, they fail instead.
//!
//! A [`RoamingClient`] is a player (or spectator) that stays with its game whatever
//! happens to the node it is connected to: when its connection closes, or the node stops
//! answering, it reconnects to another node and resumes from the last `seq` it saw,
//! resending an unanswered command under the same id. Along the way it checks what every
//! client must see: each update is the next `seq`, every frame is valid under the
//! protocol's schema, and the game never goes quiet for long. It reports the state it
//! mirrored at every `seq` and every refusal it got, which the tests check against the
//! other clients and the database.

use crate::client::{Api, assert_valid_server_message, legal_moves_of};
use crate::database::TestDatabase;
use crate::database::skip_unless_required;
use crate::server::TestServer;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio_tungstenite::connect_async;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

/// How long a roaming client may go without any message (pings do not count) before the
/// test fails: a client is waiting for an update that never comes. Longer than a frozen
/// or killed owner takes to be replaced (a lease and a sweep) with room to spare.
const ROAMING_PATIENCE: Duration = Duration::from_secs(30);

/// How long a node may take to accept a connection and welcome it before the client
/// tries another: a frozen node accepts TCP connections and says nothing.
const WELCOME_PATIENCE: Duration = Duration::from_secs(5);

/// A player that has heard nothing for this long sends a `ping`; one that still hears
/// nothing for as long again gives the node up and reconnects elsewhere, as a real
/// client would. Spectators stay, and see what a node that comes back has to say.
const PING_AFTER: Duration = Duration::from_secs(1);

/// The NATS server the cluster tests use.
pub fn nats_url() -> String {
    std::env::var("TEST_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned())
}

/// Whether NATS answers; false (said loudly) when it does not and `REQUIRE_NATS=1` is not
/// set, so that a machine without NATS passes.
pub fn nats_or_skip() -> bool {
    let url = nats_url();
    let host_port = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
    let listens = host_port.to_socket_addrs().is_ok_and(|mut addresses| {
        addresses
            .any(|address| TcpStream::connect_timeout(&address, Duration::from_secs(2)).is_ok())
    });
    if !listens {
        skip_unless_required("NATS", "REQUIRE_NATS", &url);
    }
    listens
}

/// Starts one node of a cluster on `database_url` (Postgres), named `name`.
pub async fn start_node(database_url: &str, name: &str, lease_ttl: &str) -> TestServer {
    start_node_on(database_url, &nats_url(), name, lease_ttl).await
}

/// Starts one node of a cluster on `database_url` (Postgres) and the NATS at `nats`.
pub async fn start_node_on(
    database_url: &str,
    nats: &str,
    name: &str,
    lease_ttl: &str,
) -> TestServer {
    start_node_with(database_url, nats, name, lease_ttl, &[]).await
}

/// [`start_node_on`] with more command-line options.
pub async fn start_node_with(
    database_url: &str,
    nats: &str,
    name: &str,
    lease_ttl: &str,
    more: &[&str],
) -> TestServer {
    let mut options = vec![
        "--nats",
        nats,
        "--node-name",
        name,
        "--lease-ttl",
        lease_ttl,
    ];
    options.extend_from_slice(more);
    TestServer::start_with(database_url, &options).await
}

/// The addresses of the nodes that are up, which roaming clients (re)connect to.
#[derive(Clone, Default)]
pub struct LiveNodes {
    addresses: Arc<Mutex<Vec<SocketAddr>>>,
}

impl LiveNodes {
    pub fn new(addresses: Vec<SocketAddr>) -> LiveNodes {
        LiveNodes {
            addresses: Arc::new(Mutex::new(addresses)),
        }
    }

    /// Takes a node out before it is stopped, so nobody reconnects to it.
    pub fn remove(&self, address: SocketAddr) {
        self.addresses.lock().unwrap().retain(|&a| a != address);
    }

    /// Puts a (re)started node in.
    pub fn add(&self, address: SocketAddr) {
        self.addresses.lock().unwrap().push(address);
    }

    /// The node to try on attempt `attempt`, starting from the client's preferred one.
    fn pick(&self, preferred: usize, attempt: usize) -> SocketAddr {
        let addresses = self.addresses.lock().unwrap();
        assert!(!addresses.is_empty(), "at least one node stays up");
        addresses[(preferred + attempt) % addresses.len()]
    }
}

/// A command the server acknowledged: its `seq` and its id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acked {
    pub seq: u64,
    pub id: String,
}

/// What a roaming client ends with.
#[derive(Debug)]
pub struct RoamingReport {
    /// The last state it mirrored: the final one, unless the game ended while it was
    /// reconnecting (then `saw_the_end` is false and the match is served over REST).
    pub state: Value,
    pub saw_the_end: bool,
    pub seq: u64,
    pub acked: Vec<Acked>,
    /// Every refusal of a command: its id and error code.
    pub refused: Vec<(String, String)>,
    /// A digest of the mirrored state after each snapshot and update, with its `seq`.
    pub states: Vec<(u64, u64)>,
    /// Connections opened after the first.
    pub reconnects: u32,
    /// When each `seq` reached it: the `seq` its mirror reached, by update or snapshot,
    /// each time it went up.
    pub arrivals: Vec<(u64, SystemTime)>,
    /// Where it was connected, and when.
    pub visits: Vec<Visit>,
}

/// One connection of a roaming client: to which node, when the node welcomed it (if it
/// did), and when it ended.
#[derive(Clone, Debug)]
pub struct Visit {
    pub node: SocketAddr,
    pub welcomed: Option<SystemTime>,
    pub left: SystemTime,
}

/// A player (with a seat token) or spectator (without) that plays its game to the end
/// across node failures. A player moves whenever it is its turn, always choosing the
/// same move for the same `seq`, so that a command resent after a lost reply is the same.
pub struct RoamingClient {
    pub game: String,
    pub token: Option<String>,
    pub preferred: usize,
    /// How long a player thinks before each command, so that a game is in mid-play
    /// (and a client waiting for its turn) when a fault strikes.
    pub think: Duration,
    pub nodes: LiveNodes,
    /// Counts every acknowledged command of every client, for the test's schedule.
    pub acked_total: Arc<AtomicU64>,
    /// Counts this game's acknowledged commands, to see when it moves again.
    pub acked_in_game: Arc<AtomicU64>,
}

/// A client's view of its game between connections.
struct Mirror {
    /// The seat, from the last welcome (players only).
    seat: Option<u64>,
    seq: Option<u64>,
    state: Value,
    legal: Option<Vec<Value>>,
    /// The `seq` at which this connection sent its command, if it did.
    sent_at: Option<u64>,
    /// Connections opened so far: a player reconnecting after an unanswered command
    /// resends it on every other connection, and decides afresh on the others.
    connections: u64,
    acked: Vec<Acked>,
    refused: Vec<(String, String)>,
    states: Vec<(u64, u64)>,
    arrivals: Vec<(u64, SystemTime)>,
    /// When this connection's welcome came.
    welcomed: Option<SystemTime>,
    visits: Vec<Visit>,
}

impl Mirror {
    /// Notes the state just mirrored at `seq`.
    fn record_state(&mut self) {
        use std::hash::{Hash, Hasher};
        let Some(seq) = self.seq else {
            return;
        };
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.state.to_string().hash(&mut hasher);
        self.states.push((seq, hasher.finish()));
        if self
            .arrivals
            .last()
            .is_none_or(|(reached, _)| *reached < seq)
        {
            self.arrivals.push((seq, SystemTime::now()));
        }
    }
}

enum Next {
    /// The connection ended: reconnect.
    Reconnect,
    Finished,
    /// The game ended while this client was away: its room has left memory (the socket
    /// gets 404) and the finished match is served over REST.
    FinishedWhileAway,
}

impl RoamingClient {
    pub async fn run(self) -> RoamingReport {
        let mut mirror = Mirror {
            seat: None,
            seq: None,
            state: Value::Null,
            legal: None,
            sent_at: None,
            connections: 0,
            acked: Vec::new(),
            refused: Vec::new(),
            states: Vec::new(),
            arrivals: Vec::new(),
            welcomed: None,
            visits: Vec::new(),
        };
        let mut attempt = 0;
        loop {
            let address = self.nodes.pick(self.preferred, attempt);
            let url = format!("ws://{address}/ws/games/{}", self.game);
            let next = self.connection(&url, &mut mirror).await;
            let visit = Visit {
                node: address,
                welcomed: mirror.welcomed.take(),
                left: SystemTime::now(),
            };
            mirror.visits.push(visit);
            let saw_the_end = match next {
                Next::Reconnect => None,
                Next::Finished => Some(true),
                Next::FinishedWhileAway => Some(false),
            };
            if let Some(saw_the_end) = saw_the_end {
                return RoamingReport {
                    state: mirror.state,
                    saw_the_end,
                    seq: mirror.seq.unwrap_or(0),
                    acked: mirror.acked,
                    refused: mirror.refused,
                    states: mirror.states,
                    reconnects: attempt as u32,
                    arrivals: mirror.arrivals,
                    visits: mirror.visits,
                };
            }
            attempt += 1;
            assert!(
                attempt < 1000,
                "{}: a client reconnected 1000 times",
                self.game
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// One connection, from hello until it ends or the game does.
    async fn connection(&self, url: &str, mirror: &mut Mirror) -> Next {
        let mut socket = match tokio::time::timeout(WELCOME_PATIENCE, connect_async(url)).await {
            Ok(Ok((socket, _))) => socket,
            Ok(Err(WsError::Http(response))) if response.status() == 404 => {
                return self.finished_while_away(url).await;
            }
            Ok(Err(_)) | Err(_) => return Next::Reconnect,
        };
        mirror.sent_at = None;
        mirror.connections += 1;
        let hello = json!({ "type": "hello", "token": self.token, "last_seq": mirror.seq });
        if socket
            .send(Message::Text(hello.to_string().into()))
            .await
            .is_err()
        {
            return Next::Reconnect;
        }
        let mut quiet = Quiet::new(self.token.is_some());
        loop {
            let text = match tokio::time::timeout(quiet.wait(), socket.next()).await {
                Ok(Some(Ok(Message::Text(text)))) => text,
                Ok(Some(Ok(Message::Close(_)) | Err(_)) | None) => return Next::Reconnect,
                Ok(Some(Ok(_))) => continue,
                Err(_) => match quiet.act(&self.game, mirror.seq) {
                    Act::Wait => continue,
                    Act::Ping => {
                        let ping = Message::Text(json!({ "type": "ping" }).to_string().into());
                        if socket.send(ping).await.is_err() {
                            return Next::Reconnect;
                        }
                        continue;
                    }
                    Act::GiveUp => return Next::Reconnect,
                },
            };
            let message: Value = serde_json::from_str(&text).expect("the server sends JSON");
            assert_valid_server_message(&message);
            quiet.heard(&message);
            if ended_elsewhere(&message) {
                return self.finished_while_away(url).await;
            }
            if !self.absorb(&message, mirror) {
                return Next::Reconnect;
            }
            if mirror.state["status"] == "finished" {
                return Next::Finished;
            }
            if let Some(command) = self.command_due(mirror) {
                tokio::time::sleep(self.think).await;
                let sent = socket.send(Message::Text(command.to_string().into()));
                if sent.await.is_err() {
                    return Next::Reconnect;
                }
            }
        }
    }

    /// After a 404 for the game's socket, or a `hello` answered `not_found`: finished if
    /// the match is served, or else try again (a node that does not know the game yet).
    async fn finished_while_away(&self, ws_url: &str) -> Next {
        let base = ws_url.replacen("ws://", "http://", 1);
        let (node, _) = base.split_once("/ws/").expect("a game socket URL");
        let detail = format!("{node}/api/matches/{}", self.game);
        match tokio::time::timeout(WELCOME_PATIENCE, reqwest::get(&detail)).await {
            Ok(Ok(response)) if response.status() == 200 => Next::FinishedWhileAway,
            _ => Next::Reconnect,
        }
    }

    /// Takes one message in; false when the connection should be dropped and made again.
    fn absorb(&self, message: &Value, mirror: &mut Mirror) -> bool {
        match message["type"].as_str() {
            Some("snapshot") => {
                // No client is ever sent a state older than what it has (a thawed former
                // owner's memory, say): it said so in its hello, or was sent it.
                let seq = message["seq"].as_u64();
                assert!(
                    seq >= mirror.seq,
                    "{}: a snapshot at {seq:?} rolled back a client at {:?}",
                    self.game,
                    mirror.seq
                );
                mirror.seq = seq;
                mirror.state = message["state"].clone();
                mirror.legal = legal_moves_of(message);
                mirror.record_state();
            }
            Some("welcome") => {
                mirror.seat = message["seat"].as_u64();
                mirror.welcomed = Some(SystemTime::now());
            }
            Some("update") => self.apply_update(message, mirror),
            Some("ack") => {
                let acked = Acked {
                    seq: message["seq"].as_u64().expect("an ack's seq"),
                    id: message["id"].as_str().expect("an ack's id").to_owned(),
                };
                if !mirror.acked.contains(&acked) {
                    mirror.acked.push(acked);
                    self.acked_total.fetch_add(1, Ordering::Relaxed);
                    self.acked_in_game.fetch_add(1, Ordering::Relaxed);
                }
            }
            Some("rejected") => {
                let id = message["id"].as_str().unwrap_or_default().to_owned();
                let code = message["error"]["code"].as_str().unwrap_or_default();
                mirror.refused.push((id, code.to_owned()));
                return self.tolerable(message);
            }
            Some("error") => return self.tolerable(message),
            _ => {}
        }
        true
    }

    fn apply_update(&self, message: &Value, mirror: &mut Mirror) {
        let seq = message["seq"].as_u64().expect("updates carry seq");
        if let Some(mine) = mirror.seq {
            assert_eq!(
                seq,
                mine + 1,
                "{}: updates in order without gaps: {message}",
                self.game
            );
        }
        let patch: json_patch::Patch =
            serde_json::from_value(message["patch"].clone()).expect("an RFC 6902 patch");
        json_patch::patch(&mut mirror.state, &patch).expect("the patch applies");
        mirror.seq = Some(seq);
        mirror.legal = legal_moves_of(message);
        mirror.record_state();
    }

    /// Refusals a roaming client expects while nodes come and go; anything else fails
    /// the test. False for those that mean "this node cannot serve you now".
    fn tolerable(&self, message: &Value) -> bool {
        let code = message["error"]["code"].as_str().unwrap_or_default();
        match code {
            // The command raced an update; the update is on its way. After a lost
            // publish the update it raced may be the game's last, and then the game
            // is over before the seq is stale.
            "stale_seq" | "not_your_turn" | "game_over" => true,
            "shutting_down" | "storage_unavailable" => false,
            _ => panic!("{}: unexpected refusal {message}", self.game),
        }
    }

    /// The command to send now, if it is this player's turn and it has not sent one at
    /// this `seq` on this connection.
    fn command_due(&self, mirror: &mut Mirror) -> Option<Value> {
        let seat = mirror.seat.filter(|_| self.token.is_some())?;
        let seq = mirror.seq?;
        let to_move = mirror.state["game"]["turn"]["player"].as_u64();
        if to_move != Some(seat) || mirror.sent_at == Some(seq) {
            return None;
        }
        let legal = mirror.legal.as_ref().filter(|legal| !legal.is_empty())?;
        mirror.sent_at = Some(seq);
        let choice = mirror.connections / 2;
        let mv = legal[(seq + choice) as usize % legal.len()].clone();
        let id = format!("s{seat}-{seq}-{choice}");
        Some(json!({ "type": "command", "id": id, "seq": seq, "move": mv }))
    }
}

/// Whether a frame says the game ended and its room is out of reach: a node relaying
/// to a finished game's room answers a `hello` so when that room's node is gone or
/// frozen, as the protocol documents. The match is then read over REST.
fn ended_elsewhere(message: &Value) -> bool {
    message["type"] == "error" && message["error"]["code"] == "not_found"
}

/// How long a connection has been quiet, and what a client does about it.
struct Quiet {
    player: bool,
    welcomed: bool,
    /// When anything last came, a `pong` included.
    heard_anything: std::time::Instant,
    /// When the game last said something (anything but a `pong`).
    heard_the_game: std::time::Instant,
    pinged: bool,
}

enum Act {
    Wait,
    Ping,
    GiveUp,
}

impl Quiet {
    fn new(player: bool) -> Quiet {
        let now = std::time::Instant::now();
        Quiet {
            player,
            welcomed: false,
            heard_anything: now,
            heard_the_game: now,
            pinged: false,
        }
    }

    fn heard(&mut self, message: &Value) {
        let now = std::time::Instant::now();
        self.heard_anything = now;
        self.pinged = false;
        if message["type"] != "pong" {
            self.heard_the_game = now;
        }
        self.welcomed |= message["type"] == "welcome";
    }

    /// How long to wait for the next message before deciding anything.
    fn wait(&self) -> Duration {
        let silent = self.heard_anything.elapsed();
        match (self.welcomed, self.player, self.pinged) {
            (false, _, _) => WELCOME_PATIENCE.saturating_sub(silent),
            (true, true, false) => PING_AFTER.saturating_sub(silent),
            (true, true, true) => (PING_AFTER * 2).saturating_sub(silent),
            (true, false, _) => ROAMING_PATIENCE.saturating_sub(self.heard_the_game.elapsed()),
        }
    }

    /// What to do after waiting in vain. A game that says nothing for
    /// [`ROAMING_PATIENCE`] though its node answers is stalled: the test fails.
    fn act(&mut self, game: &str, seq: Option<u64>) -> Act {
        // A node that never welcomed this client is frozen or overwhelmed.
        if !self.welcomed {
            return Act::GiveUp;
        }
        assert!(
            self.heard_the_game.elapsed() < ROAMING_PATIENCE,
            "{game}: the game said nothing for {ROAMING_PATIENCE:?} at seq {seq:?}"
        );
        match (self.player, self.pinged) {
            (false, _) => Act::Wait,
            (true, false) => {
                self.pinged = true;
                Act::Ping
            }
            (true, true) if self.heard_anything.elapsed() >= PING_AFTER * 2 => Act::GiveUp,
            (true, true) => Act::Wait,
        }
    }
}

/// `(seq, command id)` of every logged move of `game`, from the database itself.
pub fn move_log(database: &TestDatabase, game: &str) -> Vec<(u64, String)> {
    let query = format!(
        "SELECT seq, coalesce(command_id, '') FROM moves WHERE game_id = '{game}' ORDER BY seq"
    );
    psql_rows(database, &query)
        .into_iter()
        .map(|(seq, id)| (seq.parse().expect("a seq"), id))
        .collect()
}

/// When each logged move of `game` was made, by `seq`: its `created_at`, written by the
/// node that decided it, just before its write (every node of a test runs on this
/// machine, on this clock).
pub fn move_times(database: &TestDatabase, game: &str) -> Vec<(u64, SystemTime)> {
    let query = format!("SELECT seq, created_at FROM moves WHERE game_id = '{game}' ORDER BY seq");
    psql_rows(database, &query)
        .iter()
        .map(|(seq, millis)| {
            let millis: u64 = millis.parse().expect("milliseconds");
            let at = SystemTime::UNIX_EPOCH + Duration::from_millis(millis);
            (seq.parse().expect("a seq"), at)
        })
        .collect()
}

/// The node that owns live game `game` now, if any.
pub fn owner_of(database: &TestDatabase, game: &str) -> Option<String> {
    let query = format!("SELECT 0, coalesce(owner_node, '') FROM lobbies WHERE id = '{game}'");
    let rows = psql_rows(database, &query);
    rows.into_iter()
        .map(|(_, owner)| owner)
        .find(|owner| !owner.is_empty())
}

/// The two columns of each row `query` returns, as text.
fn psql_rows(database: &TestDatabase, query: &str) -> Vec<(String, String)> {
    let output = Command::new("psql")
        .args([database.url().as_str(), "-At", "-F", "\t", "-c", query])
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
            let (first, second) = line.split_once('\t').expect("two columns");
            (first.to_owned(), second.to_owned())
        })
        .collect()
}

/// A game played by roaming clients: two players and a spectator.
pub struct RoamingGame {
    pub id: String,
    /// When it was opened: nothing of it happened before.
    pub opened: SystemTime,
    pub clients: Vec<tokio::task::JoinHandle<RoamingReport>>,
    /// Counts this game's acknowledged commands.
    pub acked: Arc<AtomicU64>,
}

impl RoamingGame {
    /// Creates a game of `rules` on one node of `http_bases`, joins it on the next, starts
    /// it on the one after, and sets its two players and a spectator playing, each
    /// preferring a different node.
    pub async fn open(
        http_bases: &[String],
        number: usize,
        nodes: &LiveNodes,
        acked_total: &Arc<AtomicU64>,
        think: Duration,
        rules: Value,
    ) -> RoamingGame {
        let opened = SystemTime::now();
        let on = |offset: usize| Api::new(http_bases[(number + offset) % http_bases.len()].clone());
        let creator = on(0).create_lobby("creator", 2, rules).await;
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
                    think,
                    nodes: nodes.clone(),
                    acked_total: acked_total.clone(),
                    acked_in_game: acked.clone(),
                };
                tokio::spawn(client.run())
            })
            .collect();
        RoamingGame {
            id: creator.lobby,
            opened,
            clients,
            acked,
        }
    }

    /// Whether every client has seen the game to its end.
    pub fn finished(&self) -> bool {
        self.clients.iter().all(|client| client.is_finished())
    }

    /// Waits for every client's report; a client that failed fails the test.
    pub async fn reports(self) -> Vec<RoamingReport> {
        let mut reports = Vec::new();
        for client in self.clients {
            reports.push(client.await.expect("a client plays to the end"));
        }
        reports
    }
}

/// What every client of a game that ended must agree on, with each other and with the
/// database's move log (`(seq, command id)` in order):
///
/// * every client that saw the end holds the same final state, at the log's last `seq`;
/// * no fork: wherever two clients mirrored the state at the same `seq`, it is the same;
/// * no phantom acknowledgement: every acknowledged command is in the log exactly once,
///   at the `seq` it was acknowledged with, and no command is logged twice;
/// * no refusal of a command that was applied, but "try again" (a resent command id gets
///   its original `ack`, wherever it is sent).
pub fn assert_clients_agree_with_the_log(
    game: &str,
    reports: &[RoamingReport],
    logged: &[(u64, String)],
) {
    let saw_the_end: Vec<&RoamingReport> = reports.iter().filter(|r| r.saw_the_end).collect();
    for report in &saw_the_end {
        assert_eq!(report.state["status"], "finished", "{game}");
        assert_eq!(report.state, saw_the_end[0].state, "{game}: clients agree");
    }
    let logged_seq = logged.last().map_or(0, |(seq, _)| *seq);
    assert!(
        reports.iter().all(|report| report.seq <= logged_seq),
        "{game}: no client saw past the log's end"
    );
    // None may have seen the end: when the owner stopped between storing the last move
    // and publishing it, and its room stayed out of reach, every client read the
    // finished match over REST instead.
    if let Some(first) = saw_the_end.first() {
        assert_eq!(
            first.seq, logged_seq,
            "{game}: the log ends where the game did"
        );
    }
    let mut states = std::collections::HashMap::new();
    for (seq, digest) in reports.iter().flat_map(|report| &report.states) {
        let first = *states.entry(*seq).or_insert(*digest);
        assert_eq!(
            first, *digest,
            "{game}: two clients saw different states at seq {seq}"
        );
    }
    for acked in reports.iter().flat_map(|report| &report.acked) {
        let rows = logged
            .iter()
            .filter(|(seq, id)| *seq == acked.seq && id == &acked.id);
        assert_eq!(rows.count(), 1, "{game}: acked {acked:?} is logged once");
    }
    let mut ids: Vec<&String> = logged
        .iter()
        .map(|(_, id)| id)
        .filter(|id| !id.is_empty())
        .collect();
    let count = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), count, "{game}: no command is logged twice");
    for (id, code) in reports.iter().flat_map(|report| &report.refused) {
        let retry = code == "shutting_down" || code == "storage_unavailable";
        let applied = logged.iter().any(|(_, logged_id)| logged_id == id);
        assert!(
            retry || !applied,
            "{game}: command {id} was refused with {code} but it is stored"
        );
    }
}
