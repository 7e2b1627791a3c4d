//! Clients of the server under test: REST, and a WebSocket client that keeps a mirror
//! of the public state built only from the snapshot and the patches.

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::LazyLock;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async};

/// The protocol's JSON Schema, as the server serves it (`docs/protocol.schema.json`), set to
/// validate one message the server sends. Every frame a test client receives is checked.
static SERVER_MESSAGE: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let mut schema: Value =
        serde_json::from_str(include_str!("../../docs/protocol.schema.json")).expect("JSON");
    let object = schema.as_object_mut().expect("a schema object");
    object.remove("oneOf");
    object.insert("$ref".into(), json!("#/$defs/ServerMessage"));
    jsonschema::validator_for(&schema).expect("a valid JSON Schema")
});

/// Fails the test when `message` is not a `ServerMessage` of the protocol's schema.
pub fn assert_valid_server_message(message: &Value) {
    let errors: Vec<String> = SERVER_MESSAGE
        .iter_errors(message)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "the server sent a message outside docs/protocol.schema.json: {errors:?}\n{message}"
    );
}

/// How long a test waits for any one message before failing.
pub const PATIENCE: Duration = Duration::from_secs(15);

#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    base: String,
}

/// A registered player: its id and secret.
#[derive(Clone, Debug)]
pub struct Player {
    pub id: String,
    pub secret: String,
}

/// A seat someone holds: the lobby, the seat number and its secret token.
#[derive(Clone, Debug)]
pub struct Seat {
    pub lobby: String,
    pub seat: u64,
    pub token: String,
}

impl Api {
    pub fn new(base: String) -> Api {
        Api {
            http: reqwest::Client::new(),
            base,
        }
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("GET");
        into_parts(response).await
    }

    /// A GET with one extra header (an invite code, a bearer token).
    pub async fn get_with(&self, path: &str, header: &str, value: &str) -> (u16, Value) {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .header(header, value)
            .send()
            .await
            .expect("GET");
        into_parts(response).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let request = self.http.post(format!("{}{path}", self.base)).json(&body);
        into_parts(request.send().await.expect("POST")).await
    }

    pub async fn post_as(&self, path: &str, token: &str, body: Value) -> (u16, Value) {
        let request = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(token)
            .json(&body);
        into_parts(request.send().await.expect("POST")).await
    }

    /// A DELETE with a bearer token.
    pub async fn delete_as(&self, path: &str, token: &str) -> (u16, Value) {
        let request = self
            .http
            .delete(format!("{}{path}", self.base))
            .bearer_auth(token);
        into_parts(request.send().await.expect("DELETE")).await
    }

    /// Sends a raw body, for malformed-input tests.
    pub async fn post_raw(&self, path: &str, body: &'static str) -> (u16, Value) {
        let request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body);
        into_parts(request.send().await.expect("POST")).await
    }

    /// Registers a lasting player identity named `name`.
    pub async fn register(&self, name: &str) -> Player {
        let (status, created) = self
            .post("/api/players", json!({ "display_name": name }))
            .await;
        assert_eq!(status, 201, "{created}");
        Player {
            id: created["id"].as_str().unwrap().to_owned(),
            secret: created["secret"].as_str().unwrap().to_owned(),
        }
    }

    /// A rated lobby with `rules` for `players` (at least two seats), every one of them
    /// seated; the creator's seat first.
    pub async fn rated_lobby(&self, rules: Value, players: &[&Player]) -> Vec<Seat> {
        let identity =
            |player: &Player| json!({ "player_id": player.id, "player_secret": player.secret });
        let mut body = json!({ "name": "rated", "seats": players.len().max(2), "rules": rules,
            "rated": true });
        body.as_object_mut()
            .unwrap()
            .extend(identity(players[0]).as_object().unwrap().clone());
        let (status, created) = self.post("/api/lobbies", body).await;
        assert_eq!(status, 201, "{created}");
        assert_eq!(created["lobby"]["rated"], true);
        let lobby = created["lobby"]["id"].as_str().unwrap().to_owned();
        let mut seats = vec![Seat {
            lobby: lobby.clone(),
            seat: 0,
            token: created["seat_token"].as_str().unwrap().to_owned(),
        }];
        for player in &players[1..] {
            let path = format!("/api/lobbies/{lobby}/join");
            let (status, joined) = self.post(&path, identity(player)).await;
            assert_eq!(status, 200, "{joined}");
            seats.push(Seat {
                lobby: lobby.clone(),
                seat: joined["seat"].as_u64().unwrap(),
                token: joined["seat_token"].as_str().unwrap().to_owned(),
            });
        }
        seats
    }

    /// Creates a lobby whose creator (seat 0) is `creator`.
    pub async fn create_lobby(&self, creator: &str, seats: u8, rules: Value) -> Seat {
        let body = json!({ "name": format!("{creator}'s table"), "seats": seats, "rules": rules, "display_name": creator });
        let (status, created) = self.post("/api/lobbies", body).await;
        assert_eq!(status, 201, "create lobby: {created}");
        Seat {
            lobby: created["lobby"]["id"].as_str().unwrap().to_owned(),
            seat: created["seat"].as_u64().unwrap(),
            token: created["seat_token"].as_str().unwrap().to_owned(),
        }
    }

    pub async fn join(&self, lobby: &str, name: &str) -> Seat {
        let (status, joined) = self
            .post(
                &format!("/api/lobbies/{lobby}/join"),
                json!({ "display_name": name }),
            )
            .await;
        assert_eq!(status, 200, "join: {joined}");
        Seat {
            lobby: lobby.to_owned(),
            seat: joined["seat"].as_u64().unwrap(),
            token: joined["seat_token"].as_str().unwrap().to_owned(),
        }
    }

    pub async fn start(&self, creator: &Seat) -> Value {
        let (status, lobby) = self
            .post_as(
                &format!("/api/lobbies/{}/start", creator.lobby),
                &creator.token,
                json!({}),
            )
            .await;
        assert_eq!(status, 200, "start: {lobby}");
        lobby
    }
}

async fn into_parts(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.expect("a body");
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, body)
}

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A WebSocket client. Every snapshot and update passes through [`WsClient::absorb`],
/// which checks that `seq` goes up by exactly one and applies each patch to `state`.
pub struct WsClient {
    socket: Socket,
    pub seq: Option<u64>,
    pub state: Value,
    /// The legal moves from the last snapshot or update addressed to this client.
    pub legal_moves: Option<Vec<Value>>,
    pub seat: Option<u64>,
    /// Every event of every update absorbed, in order.
    pub events: Vec<Value>,
    /// Every update absorbed, as its `seq` and its `events` array, in order.
    pub updates: Vec<(u64, Value)>,
    /// Messages read but not yet asked for.
    pending: VecDeque<Value>,
}

impl WsClient {
    pub async fn connect(url: &str) -> WsClient {
        WsClient::try_connect(url)
            .await
            .expect("websocket connects")
    }

    /// Connects, or says why the server refused the upgrade.
    pub async fn try_connect(url: &str) -> Result<WsClient, String> {
        let (socket, _) = connect_async(url).await.map_err(|e| e.to_string())?;
        Ok(WsClient {
            socket,
            seq: None,
            state: Value::Null,
            legal_moves: None,
            seat: None,
            events: Vec::new(),
            updates: Vec::new(),
            pending: VecDeque::new(),
        })
    }

    /// Connects and says hello; returns the client after its welcome.
    pub async fn join(url: &str, token: Option<&str>, last_seq: Option<u64>) -> WsClient {
        let mut client = WsClient::connect(url).await;
        let welcome = client.hello(token, last_seq).await;
        assert_eq!(welcome["type"], "welcome", "{welcome}");
        client
    }

    /// Reconnects a player whose last connection was `old`, keeping what it knew (the
    /// state and legal moves at its last seq) and asking only for what it missed.
    pub async fn resume(url: &str, token: &str, old: &WsClient) -> WsClient {
        let mut client = WsClient::connect(url).await;
        client.state = old.state.clone();
        client.legal_moves = old.legal_moves.clone();
        let welcome = client.hello(Some(token), old.seq).await;
        assert_eq!(welcome["type"], "welcome", "{welcome}");
        client
    }

    pub async fn hello(&mut self, token: Option<&str>, last_seq: Option<u64>) -> Value {
        self.seq = last_seq;
        self.send(json!({ "type": "hello", "token": token, "last_seq": last_seq }))
            .await;
        let reply = self.next().await;
        if reply["type"] == "welcome" {
            self.seat = reply["seat"].as_u64();
        }
        reply
    }

    /// A spectator's hello, with a private game's invite code.
    pub async fn hello_with_invite(&mut self, invite_code: Option<&str>) -> Value {
        self.send(json!({ "type": "hello", "invite_code": invite_code }))
            .await;
        self.next().await
    }

    pub async fn send(&mut self, message: Value) {
        self.send_text(message.to_string()).await;
    }

    pub async fn send_text(&mut self, text: String) {
        self.try_send_text(text).await.expect("send");
    }

    /// Sends, reporting failure (for tests where the server may hang up mid-stream).
    pub async fn try_send_text(&mut self, text: String) -> Result<(), String> {
        if std::env::var_os("E2E_TRACE").is_some() {
            eprintln!("-> {}", &text[..text.len().min(300)]);
        }
        self.socket
            .send(Message::Text(text.into()))
            .await
            .map_err(|e| e.to_string())
    }

    /// The next message of any type (after bookkeeping), failing after [`PATIENCE`].
    pub async fn next(&mut self) -> Value {
        if let Some(message) = self.pending.pop_front() {
            return message;
        }
        // One deadline for the whole wait: the server's pings must not keep extending it.
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let frame = tokio::time::timeout_at(deadline, self.socket.next())
                .await
                .expect("a message within the patience window")
                .expect("the connection is open")
                .expect("a readable frame");
            if let Message::Text(text) = frame {
                let message: Value = serde_json::from_str(&text).expect("the server sends JSON");
                assert_valid_server_message(&message);
                if std::env::var_os("E2E_TRACE").is_some() {
                    eprintln!("<- {}", &text[..text.len().min(300)]);
                }
                self.absorb(&message);
                return message;
            }
        }
    }

    /// The next message of any type (after bookkeeping), or None when the connection
    /// closes or nothing comes within `patience`: for a client that expects the node it
    /// talks to to freeze or send it elsewhere.
    pub async fn try_next(&mut self, patience: Duration) -> Option<Value> {
        if let Some(message) = self.pending.pop_front() {
            return Some(message);
        }
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            let frame = tokio::time::timeout_at(deadline, self.socket.next()).await;
            match frame {
                Ok(Some(Ok(Message::Text(text)))) => {
                    let message: Value =
                        serde_json::from_str(&text).expect("the server sends JSON");
                    assert_valid_server_message(&message);
                    self.absorb(&message);
                    return Some(message);
                }
                Ok(Some(Ok(Message::Close(_)) | Err(_)) | None) | Err(_) => return None,
                Ok(Some(Ok(_))) => continue,
            }
        }
    }

    /// Reads until a message of type `kind`, keeping the others for later.
    pub async fn next_of(&mut self, kind: &str) -> Value {
        self.next_of_any(&[kind]).await
    }

    /// Reads until a message of one of `kinds`, keeping the others for later.
    pub async fn next_of_any(&mut self, kinds: &[&str]) -> Value {
        let mut skipped = Vec::new();
        let found = loop {
            let message = self.next().await;
            if kinds.iter().any(|kind| message["type"] == *kind) {
                break message;
            }
            skipped.push(message);
        };
        for message in skipped.into_iter().rev() {
            self.pending.push_front(message);
        }
        found
    }

    /// Reads every message up to and including the update with `seq`.
    pub async fn catch_up_to(&mut self, seq: u64) {
        while self.seq.is_none_or(|mine| mine < seq) {
            let message = self.next().await;
            assert_ne!(
                message["type"], "error",
                "unexpected error while catching up: {message}"
            );
        }
    }

    /// Sends a command and returns its one reply (`ack` or `rejected`).
    pub async fn command(&mut self, id: &str, mv: Value) -> Value {
        let seq = self.seq.expect("a client that has seen the state");
        self.command_at(id, seq, mv).await
    }

    pub async fn command_at(&mut self, id: &str, seq: u64, mv: Value) -> Value {
        self.send(json!({ "type": "command", "id": id, "seq": seq, "move": mv }))
            .await;
        let mut skipped = Vec::new();
        let reply = loop {
            let message = self.next().await;
            if matches!(message["type"].as_str(), Some("ack" | "rejected")) && message["id"] == id {
                break message;
            }
            // Updates are already absorbed into the mirror; anything else waits its turn.
            if message["type"] != "update" && message["type"] != "presence" {
                skipped.push(message);
            }
        };
        for message in skipped.into_iter().rev() {
            self.pending.push_front(message);
        }
        reply
    }

    /// Sends command `id` again and again, as a client told to try again does, until it
    /// is acknowledged; fails on any other refusal, or after `patience`. Returns the
    /// acknowledgement.
    pub async fn command_until_acknowledged(
        &mut self,
        id: &str,
        mv: Value,
        patience: Duration,
    ) -> Value {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            let reply = self.command(id, mv.clone()).await;
            if reply["type"] == "ack" {
                return reply;
            }
            assert_eq!(
                reply["error"]["code"], "storage_unavailable",
                "only a try-again refusal may come before the ack: {reply}"
            );
            assert!(
                tokio::time::Instant::now() < deadline,
                "command {id} was never acknowledged: {reply}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Every message until the connection closes (or `patience` runs out), without
    /// mirroring them, and the close code if a close frame came.
    pub async fn rest_until_closed(&mut self, patience: Duration) -> (Vec<Value>, Option<u16>) {
        let mut messages: Vec<Value> = self.pending.drain(..).collect();
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            match tokio::time::timeout_at(deadline, self.socket.next()).await {
                Ok(Some(Ok(Message::Text(text)))) => {
                    messages.push(serde_json::from_str(&text).expect("the server sends JSON"));
                }
                Ok(Some(Ok(Message::Close(frame)))) => {
                    return (messages, frame.map(|f| u16::from(f.code)));
                }
                Ok(Some(Ok(_))) => continue,
                Ok(Some(Err(_)) | None) | Err(_) => return (messages, None),
            }
        }
    }

    /// The frame after which the server closed the connection, and its close code.
    pub async fn close_code(&mut self) -> Option<u16> {
        loop {
            match tokio::time::timeout(PATIENCE, self.socket.next())
                .await
                .expect("closed in time")
            {
                Some(Ok(Message::Close(frame))) => return frame.map(|f| u16::from(f.code)),
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return None,
            }
        }
    }

    /// Keeps the mirror: snapshots replace it, updates must be the next `seq` and patch it.
    fn absorb(&mut self, message: &Value) {
        match message["type"].as_str() {
            Some("snapshot") => {
                self.seq = message["seq"].as_u64();
                self.state = message["state"].clone();
                self.legal_moves = legal_moves_of(message);
            }
            Some("update") => {
                let seq = message["seq"].as_u64().expect("updates carry seq");
                if let Some(mine) = self.seq {
                    assert_eq!(
                        seq,
                        mine + 1,
                        "updates must arrive in order without gaps: {message}"
                    );
                }
                let patch: json_patch::Patch =
                    serde_json::from_value(message["patch"].clone()).expect("an RFC 6902 patch");
                json_patch::patch(&mut self.state, &patch)
                    .expect("the patch applies to the mirrored state");
                self.seq = Some(seq);
                self.legal_moves = legal_moves_of(message);
                let events = message["events"].as_array().cloned().unwrap_or_default();
                self.events.extend(events);
                self.updates.push((seq, message["events"].clone()));
            }
            Some("welcome") => self.seat = message["seat"].as_u64(),
            Some("your_turn") => self.legal_moves = legal_moves_of(message),
            _ => {}
        }
    }
}

/// The legal moves a message carries, as the flat moves a command sends, in the order
/// `docs/protocol.md` gives: placements, pass, figures, abbot recall, festival returns.
pub fn legal_moves_of(message: &Value) -> Option<Vec<Value>> {
    let legal = message.get("legal_moves")?;
    let mut moves = Vec::new();
    for cell in legal["place_tile"].as_array().into_iter().flatten() {
        for rotation in cell[2].as_array().expect("rotations") {
            moves.push(json!({ "type": "place_tile", "x": cell[0], "y": cell[1],
                "rotation": rotation }));
        }
    }
    if legal["pass"] == true {
        moves.push(json!({ "type": "pass" }));
    }
    for (figure, spots) in legal["place_figure"].as_object().into_iter().flatten() {
        for spot in spots.as_array().expect("spots") {
            moves.push(json!({ "type": "place_figure", "figure": figure, "spot": spot }));
        }
    }
    if legal["recall_abbot"] == true {
        moves.push(json!({ "type": "recall_abbot" }));
    }
    for figure in legal["festival_return"].as_array().into_iter().flatten() {
        moves.push(
            json!({ "type": "festival_return", "x": figure[0], "y": figure[1],
            "spot": figure[2] }),
        );
    }
    Some(moves)
}
