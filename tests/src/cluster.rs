//! Several server nodes on one Postgres and one NATS, and clients that roam between them.
//!
//! NATS is found at `TEST_NATS_URL` (default `nats://127.0.0.1:4222`). When nothing
//! listens there the cluster tests skip, saying so on stderr; with `REQUIRE_NATS=1`, as
//! CI sets, they fail instead.
//!
//! A [`RoamingClient`] is a player (or spectator) that stays with its game whatever
//! happens to the node it is connected to: when its connection closes it reconnects to
//! another live node and resumes from the last `seq` it saw, resending an unanswered
//! command under the same id. Along the way it checks what every client must see: each
//! update is the next `seq`, and every frame is valid under the protocol's schema.

use crate::client::{assert_valid_server_message, legal_moves_of};
use crate::database::skip_unless_required;
use crate::server::TestServer;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_tungstenite::connect_async;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

/// How long a roaming client may go without any frame before the test fails: longer
/// than a lease (a killed owner's games wait for it to lapse) plus a sweep.
const ROAMING_PATIENCE: Duration = Duration::from_secs(30);

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
    let nats = nats_url();
    let options = [
        "--nats",
        &nats,
        "--node-name",
        name,
        "--lease-ttl",
        lease_ttl,
    ];
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
    /// Connections opened after the first.
    pub reconnects: u32,
}

/// A player (with a seat token) or spectator (without) that plays its game to the end
/// across node failures. A player moves whenever it is its turn, always choosing the
/// same move for the same `seq`, so that a command resent after a lost reply is the same.
pub struct RoamingClient {
    pub game: String,
    pub token: Option<String>,
    pub preferred: usize,
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
    acked: Vec<Acked>,
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
            acked: Vec::new(),
        };
        let mut attempt = 0;
        loop {
            let address = self.nodes.pick(self.preferred, attempt);
            let url = format!("ws://{address}/ws/games/{}", self.game);
            let saw_the_end = match self.connection(&url, &mut mirror).await {
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
                    reconnects: attempt as u32,
                };
            }
            attempt += 1;
            assert!(
                attempt < 200,
                "{}: a client reconnected 200 times",
                self.game
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// One connection, from hello until it ends or the game does.
    async fn connection(&self, url: &str, mirror: &mut Mirror) -> Next {
        let mut socket = match connect_async(url).await {
            Ok((socket, _)) => socket,
            Err(WsError::Http(response)) if response.status() == 404 => {
                return self.finished_while_away(url).await;
            }
            Err(_) => return Next::Reconnect,
        };
        mirror.sent_at = None;
        let hello = json!({ "type": "hello", "token": self.token, "last_seq": mirror.seq });
        if socket
            .send(Message::Text(hello.to_string().into()))
            .await
            .is_err()
        {
            return Next::Reconnect;
        }
        loop {
            let frame = tokio::time::timeout(ROAMING_PATIENCE, socket.next())
                .await
                .unwrap_or_else(|_| panic!("{}: no frame for {ROAMING_PATIENCE:?}", self.game));
            let text = match frame {
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(Message::Close(_)) | Err(_)) | None => return Next::Reconnect,
                Some(Ok(_)) => continue,
            };
            let message: Value = serde_json::from_str(&text).expect("the server sends JSON");
            assert_valid_server_message(&message);
            if !self.absorb(&message, mirror) {
                return Next::Reconnect;
            }
            if mirror.state["status"] == "finished" {
                return Next::Finished;
            }
            if let Some(command) = self.command_due(mirror)
                && socket
                    .send(Message::Text(command.to_string().into()))
                    .await
                    .is_err()
            {
                return Next::Reconnect;
            }
        }
    }

    /// After a 404 for the game's socket: finished if the match is served, or else try
    /// again (a node that does not know the game yet).
    async fn finished_while_away(&self, ws_url: &str) -> Next {
        let base = ws_url.replacen("ws://", "http://", 1);
        let (node, _) = base.split_once("/ws/").expect("a game socket URL");
        let detail = format!("{node}/api/matches/{}", self.game);
        match reqwest::get(&detail).await {
            Ok(response) if response.status() == 200 => Next::FinishedWhileAway,
            _ => Next::Reconnect,
        }
    }

    /// Takes one message in; false when the connection should be dropped and made again.
    fn absorb(&self, message: &Value, mirror: &mut Mirror) -> bool {
        match message["type"].as_str() {
            Some("snapshot") => {
                mirror.seq = message["seq"].as_u64();
                mirror.state = message["state"].clone();
                mirror.legal = legal_moves_of(message);
            }
            Some("welcome") => mirror.seat = message["seat"].as_u64(),
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
            Some("rejected" | "error") => return self.tolerable(message),
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
    }

    /// Refusals a roaming client expects while nodes come and go; anything else fails
    /// the test. False for those that mean "this node cannot serve you now".
    fn tolerable(&self, message: &Value) -> bool {
        let code = message["error"]["code"].as_str().unwrap_or_default();
        match code {
            // The command raced an update; the update is on its way.
            "stale_seq" | "not_your_turn" => true,
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
        let mv = legal[seq as usize % legal.len()].clone();
        let id = format!("s{seat}-{seq}");
        Some(json!({ "type": "command", "id": id, "seq": seq, "move": mv }))
    }
}
