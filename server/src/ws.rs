//! WebSocket connections: `GET /ws/games/{id}`.
//!
//! Each connection is one task running one `select!` loop over the socket, its room's
//! broadcast, a ping timer and the shutdown signal. Nothing is sent before the client's
//! `hello`; a player proves their seat with its token in that message (never in the
//! URL). Bad frames get an `error` reply and the connection stays; a client that floods,
//! sends oversized messages or stops answering pings is closed with the fitting code.

use crate::admission::{Evicted, PendingSlot, TokenBucket};
use crate::api::players::verify_player;
use crate::auth::Token;
use crate::config::Limits;
use crate::error::AppError;
use crate::http::TcpSlot;
use crate::metrics::Metrics;
use crate::rooms::chat::{Author, SpectatorIdentity};
use crate::rooms::error::RoomError;
use crate::rooms::frames::RoomFrame;
use crate::rooms::{Connected, Outgoing, Request, RoomHandle, Text};
use crate::state::AppState;
use crate::wire::client::{BadFrame, ClientMessage, parse_client_message};
use crate::wire::frames::{ConnectionFrame, Role};
use axum::Extension;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, Path, State};
use axum::response::{IntoResponse, Response};
use carcassonne_store::{ChatPolicy, Store};
use futures_util::SinkExt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::time::error::Elapsed;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use uuid::Uuid;

/// Close codes (RFC 6455).
mod close {
    pub const NORMAL: u16 = 1000;
    pub const GOING_AWAY: u16 = 1001;
    pub const PROTOCOL: u16 = 1002;
    pub const INVALID_DATA: u16 = 1007;
    pub const POLICY: u16 = 1008;
    pub const TOO_BIG: u16 = 1009;
    pub const RESTART: u16 = 1012;
}

/// Failed hellos (bad token, private game) before the connection is closed.
const MAX_FAILED_HELLOS: u32 = 3;
/// Longest accepted command id, in characters.
const MAX_COMMAND_ID: usize = 64;
/// Chat messages one connection may send at once, then one a second. The room holds
/// each author to a slower pace across all of their connections.
const CHAT_BURST: u32 = 5;
const CHAT_PER_SECOND: u32 = 1;

/// Where a connection comes from, as the accept loop recorded it. Absent only when the
/// router is driven without our accept loop, which then counts as one unknown client.
type Peer = Option<Extension<ConnectInfo<SocketAddr>>>;

/// The WebSocket read buffer. The library's default is 128 KiB, zero-filled before each
/// read and kept for the life of the connection: most of an idle connection's memory and
/// a few percent of the CPU under load. Commands are a few hundred bytes; the buffer still
/// grows for a larger message, up to twice `--max-message-bytes` (see
/// `READ_BOUND_TIMES_LIMIT`).
const READ_BUFFER_BYTES: usize = 2 * 1024;

/// How many times `--max-message-bytes` the WebSocket layer reads of one message before
/// it gives up on it. A message over the limit but within this is read whole, and the
/// connection is closed (1009) with the close handshake finished: had the layer stopped at
/// the limit, the rest of the frame would stay unread, and closing a socket with unread
/// data sends a reset, which some clients take before the close frame. Beyond this the
/// layer stops at once and the connection ends without the handshake.
const READ_BOUND_TIMES_LIMIT: usize = 2;

/// The most bytes read and dropped after a close the server started, while it waits for
/// the client's close frame (also bounded in time by `--close-handshake`).
const CLOSE_DRAIN_BYTES: usize = 256 * 1024;

/// How much the main loop may queue before a write goes out anyway. A loop turn queues a
/// few messages (an ack and the update it caused) and then writes them together.
const WRITE_BUFFER_BYTES: usize = 16 * 1024;

pub async fn upgrade(
    State(state): State<AppState>,
    Path(id): Path<String>,
    peer: Peer,
    tcp_slot: Option<Extension<TcpSlot>>,
    ws: WebSocketUpgrade,
) -> Response {
    // A malformed id names no game, like an unknown one: 404 rather than a parse error.
    let Ok(id) = Uuid::parse_str(&id) else {
        return AppError::NotFound("no live game with this id").into_response();
    };
    let room = match state.find_room(id).await {
        Ok(Some(room)) => room,
        Ok(None) => return AppError::NotFound("no live game with this id").into_response(),
        Err(error) => return error.into_response(),
    };
    let peer = peer.map_or(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)), |p| p.0.0);
    let places = match take_places(&state, peer.ip()) {
        Ok(places) => places,
        Err(reason) => {
            state.metrics.refuse(reason);
            state.metrics.reject("too_many_connections");
            return AppError::TooManyConnections.into_response();
        }
    };
    let limits = &state.limits;
    let read_bound = limits
        .max_message_bytes
        .saturating_mul(READ_BOUND_TIMES_LIMIT);
    let socket = ws
        .max_message_size(read_bound)
        .max_frame_size(read_bound)
        .read_buffer_size(READ_BUFFER_BYTES)
        .write_buffer_size(WRITE_BUFFER_BYTES)
        .max_write_buffer_size(limits.max_write_buffer_bytes.max(1));
    let tasks = state.tasks.clone();
    let span = tracing::info_span!("connection", game = %room.id, %peer,
        role = tracing::field::Empty, seat = tracing::field::Empty);
    let tcp_slot = tcp_slot.map(|Extension(slot)| slot);
    socket.on_upgrade(move |socket| {
        let connection = serve_connection(socket, room, state, places, tcp_slot);
        tasks.track_future(connection.instrument(span))
    })
}

/// The places a new WebSocket connection holds: one of all connections, and one of
/// those that have not said hello yet.
struct Places {
    connection: OwnedSemaphorePermit,
    pending: PendingSlot,
}

/// Takes both places, or names the limit that refused (a metrics reason). Only the cap
/// on all connections refuses: a pending place is made by evicting the oldest silent
/// connection, so the connection place is taken first, lest a refused newcomer evict one
/// for nothing.
fn take_places(state: &AppState, ip: IpAddr) -> Result<Places, &'static str> {
    let connection = state
        .connection_slots
        .clone()
        .try_acquire_owned()
        .map_err(|_| "websocket_connections")?;
    let admitted = state.pending_slots.admit(ip);
    if let Some(evicted) = admitted.evicted {
        state.metrics.refuse(match evicted {
            Evicted::ServerFull => "pending_evicted",
            Evicted::ClientFull => "pending_evicted_per_client",
        });
    }
    Ok(Places {
        connection,
        pending: admitted.slot,
    })
}

async fn serve_connection(
    socket: WebSocket,
    room: RoomHandle,
    state: AppState,
    places: Places,
    _tcp_slot: Option<TcpSlot>,
) {
    // Held to the end, never read: dropping it gives the place back.
    let Places {
        connection: _connection_place,
        pending,
    } = places;
    tracing::info!("connection opened");
    state.metrics.connections.inc();
    let mut connection = Connection::new(socket, room, &state);
    connection.set_role("pending");
    if let Some(connected) = connection.await_hello(&pending).await {
        // Welcomed, so no longer pending (if an eviction raced the hello, it already
        // took the place and this gives nothing back).
        drop(pending);
        connection.play(connected).await;
    }
    if let Some(hash) = connection.token_hash.take() {
        connection
            .room
            .tell(Request::Disconnect {
                token_hash: Some(hash),
            })
            .await;
    }
    connection.log_end();
    connection.clear_role();
    state.metrics.connections.dec();
}

/// What the loop should do after handling a frame.
enum Flow {
    Continue,
    Close(u16, &'static str),
}

/// How a connection ended, for the close log.
#[derive(Clone, Copy, Debug)]
enum Ending {
    /// We closed it with this code and reason.
    Closed(u16, &'static str),
    /// The client closed it, or its socket ended.
    ByClient,
    /// A send failed or timed out: the client stopped reading or is gone.
    SendFailed,
}

struct Connection {
    socket: WebSocket,
    room: RoomHandle,
    limits: Arc<Limits>,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
    /// Set once a player has said hello with a valid seat token.
    token_hash: Option<String>,
    /// A spectator who said hello with their player identity, which they chat under.
    spectator: Option<SpectatorIdentity>,
    /// Checks a spectator's player identity.
    store: Store,
    /// Who could write in the chat at hello, repeated in a later `welcome`.
    chat_policy: ChatPolicy,
    /// The last chat entry this client was sent (or skipped as muted).
    last_chat_seq: Option<u64>,
    /// The authors this seat muted: their messages are not sent.
    muted: Arc<Vec<Author>>,
    chat_bucket: TokenBucket,
    /// The seat this connection plays, as last told to the client.
    seat: Option<u8>,
    /// The role counted in the connections metric.
    role: Option<&'static str>,
    /// The last update this client was sent.
    last_seq: Option<u64>,
    /// The highest `seq` this connection's commands were acknowledged with.
    highest_ack: Option<u64>,
    last_heard: Instant,
    bucket: TokenBucket,
    ending: Option<Ending>,
    /// Whether sends are being queued for one write at the end of a loop turn.
    gathering: bool,
    /// Whether queued messages wait for that write.
    unflushed: bool,
}

impl Connection {
    fn new(socket: WebSocket, room: RoomHandle, state: &AppState) -> Connection {
        let limits = state.limits.clone();
        let bucket = TokenBucket::new(limits.messages_per_second, limits.message_burst);
        Connection {
            socket,
            room,
            limits,
            metrics: state.metrics.clone(),
            shutdown: state.shutdown.clone(),
            token_hash: None,
            spectator: None,
            store: state.store.clone(),
            chat_policy: ChatPolicy::default(),
            last_chat_seq: None,
            muted: Arc::default(),
            chat_bucket: TokenBucket::new(CHAT_PER_SECOND, CHAT_BURST),
            seat: None,
            role: None,
            last_seq: None,
            highest_ack: None,
            last_heard: Instant::now(),
            bucket,
            ending: None,
            gathering: false,
            unflushed: false,
        }
    }

    /// Moves this connection to `role` in the connections-by-role gauge.
    fn set_role(&mut self, role: &'static str) {
        self.clear_role();
        let gauge = &self.metrics.connections_by_role;
        gauge.with_label_values(&[role]).inc();
        self.role = Some(role);
        // The span's role is recorded once, at hello: text logs would show a changed
        // field twice. Until then a connection's log lines have no role.
        if role != "pending" {
            tracing::Span::current().record("role", role);
        }
    }

    fn clear_role(&mut self) {
        if let Some(role) = self.role.take() {
            let gauge = &self.metrics.connections_by_role;
            gauge.with_label_values(&[role]).dec();
        }
    }

    fn log_end(&self) {
        match self.ending.unwrap_or(Ending::ByClient) {
            Ending::Closed(code, reason) => {
                tracing::info!(code, reason, "connection closed by the server")
            }
            Ending::ByClient => tracing::info!("connection closed by the client"),
            Ending::SendFailed => {
                tracing::info!("connection dropped: the client did not read in time")
            }
        }
    }

    /// Waits for a valid `hello`; `None` when the connection ended first, or was evicted
    /// from `pending` to make room for a newer connection.
    async fn await_hello(&mut self, pending: &PendingSlot) -> Option<Connected> {
        let deadline = tokio::time::sleep(self.limits.hello_timeout);
        tokio::pin!(deadline);
        let mut failures = 0;
        loop {
            if self.is_dead() {
                return None;
            }
            let frame = tokio::select! {
                frame = self.socket.recv() => frame,
                _ = &mut deadline => {
                    self.close(close::POLICY, "no hello in time").await;
                    return None;
                }
                _ = pending.evicted() => {
                    let reason = "evicted: too many connections waiting for hello";
                    self.close(close::POLICY, reason).await;
                    return None;
                }
                _ = self.shutdown.cancelled() => {
                    self.close(close::RESTART, "server restarting").await;
                    return None;
                }
            };
            let text = match self.screen(frame).await {
                Screened::Text(text) => text,
                Screened::Skip => continue,
                Screened::End => return None,
            };
            match parse_client_message(&text) {
                Ok(ClientMessage::Hello {
                    token,
                    invite_code,
                    last_seq,
                    last_chat_seq,
                    player_id,
                    player_secret,
                }) => match self
                    .hello(Hello {
                        token,
                        invite_code,
                        last_seq,
                        last_chat_seq,
                        player: player_id.map(|id| (id, player_secret)),
                    })
                    .await
                {
                    Ok(connected) => return Some(connected),
                    Err(error) => {
                        failures += 1;
                        self.send_error(&error).await;
                        // The game's room is stopping here or (cluster mode) moving to
                        // another node: the client reconnects, as after a restart.
                        if error == AppError::Room(RoomError::ShuttingDown) {
                            self.close(close::RESTART, "reconnect shortly").await;
                            return None;
                        }
                        if failures >= MAX_FAILED_HELLOS {
                            self.close(close::POLICY, "too many failed hellos").await;
                            return None;
                        }
                    }
                },
                Ok(_) => self.send_error(&AppError::HelloRequired).await,
                Err(bad) => self.send_error(&bad.error).await,
            }
        }
    }

    async fn hello(&mut self, hello: Hello) -> Result<Connected, AppError> {
        let token_hash = hello.token.map(|token| Token::from_client(token).hash());
        let spectator = match (&token_hash, hello.player) {
            (None, Some((id, secret))) => {
                let player = verify_player(&self.store, id, secret).await?;
                Some(SpectatorIdentity {
                    player_id: player.id,
                    name: player.display_name,
                })
            }
            _ => None,
        };
        let connected = self
            .room
            .connect(
                token_hash.clone(),
                hello.invite_code,
                hello.last_seq,
                hello.last_chat_seq,
            )
            .await?;
        self.token_hash = token_hash;
        self.spectator = spectator;
        self.chat_policy = connected.chat;
        self.seat = connected.seat;
        // What the client says it has counts as sent: the catch-up holds only what comes
        // after it (or a snapshot, which always passes), and a late update at or below
        // it (in cluster mode, a former owner publishing a write it made before losing
        // the game) is dropped rather than rewinding the client.
        self.last_seq = hello.last_seq;
        let role = if connected.seat.is_some() {
            Role::Player
        } else {
            Role::Spectator
        };
        self.set_role(match role {
            Role::Player => "player",
            Role::Spectator => "spectator",
        });
        if let Some(seat) = connected.seat {
            tracing::Span::current().record("seat", seat);
        }
        tracing::info!("hello: connection joined its game");
        let welcome = ConnectionFrame::Welcome {
            game_id: self.room.id,
            role,
            seat: connected.seat,
            chat: connected.chat,
        };
        self.send_text(welcome.to_json().into()).await;
        Ok(connected)
    }

    /// The main loop, once the client is known.
    async fn play(&mut self, mut connected: Connected) {
        for outgoing in std::mem::take(&mut connected.catch_up) {
            if let Flow::Close(code, reason) = self.forward(&outgoing).await {
                self.close(code, reason).await;
                return;
            }
        }
        let mut pings = tokio::time::interval(self.limits.ping_interval);
        pings.reset();
        self.last_heard = Instant::now();
        // Waited on across the loop's turns rather than made again at each: every
        // connection shares one token, and each new wait registers with it under a lock.
        let shutdown = self.shutdown.clone().cancelled_owned();
        tokio::pin!(shutdown);
        while !self.is_dead() {
            self.gathering = true;
            let flow = tokio::select! {
                frame = self.socket.recv() => match self.screen(frame).await {
                    Screened::Text(text) => self.on_text(&text).await,
                    Screened::Skip => Flow::Continue,
                    Screened::End => return,
                },
                update = connected.updates.recv() => self.on_broadcast(update).await,
                _ = pings.tick() => self.on_ping_tick().await,
                () = &mut shutdown => {
                    let message = RoomFrame::Shutdown { message: "the server is restarting; reconnect shortly".into() };
                    self.send_text(message.to_json().into()).await;
                    Flow::Close(close::RESTART, "server restarting")
                }
            };
            let flow = match flow {
                Flow::Continue => self.forward_ready_updates(&mut connected.updates).await,
                closing => closing,
            };
            self.flush().await;
            if let Flow::Close(code, reason) = flow {
                self.close(code, reason).await;
                return;
            }
        }
    }

    /// Queues the updates that are already waiting, so they leave in the same write as
    /// what the loop just queued: a mover's ack and the update it caused (published
    /// before the ack) cost one system call instead of two.
    async fn forward_ready_updates(&mut self, updates: &mut Receiver<Arc<Outgoing>>) -> Flow {
        loop {
            match updates.try_recv() {
                Ok(outgoing) => {
                    if let Flow::Close(code, reason) = self.on_broadcast(Ok(outgoing)).await {
                        return Flow::Close(code, reason);
                    }
                }
                Err(TryRecvError::Lagged(skipped)) => {
                    self.on_broadcast(Err(RecvError::Lagged(skipped))).await;
                }
                // A closed broadcast is met by the loop's own `recv`, which ends the
                // connection once everything before it was sent.
                Err(TryRecvError::Empty | TryRecvError::Closed) => return Flow::Continue,
            }
        }
    }

    /// Sorts a received frame: text to handle, control frames to skip, or the end.
    async fn screen(&mut self, frame: Option<Result<Message, axum::Error>>) -> Screened {
        let message = match frame {
            Some(Ok(message)) => message,
            Some(Err(error)) => {
                if let Some((code, reason)) = close_for_receive_error(error) {
                    self.metrics.reject(reason_code(code));
                    self.close(code, reason).await;
                }
                return Screened::End;
            }
            None => return Screened::End,
        };
        self.last_heard = Instant::now();
        match message {
            Message::Text(text) if text.len() > self.limits.max_message_bytes => {
                self.metrics.reject("message_too_big");
                self.close(close::TOO_BIG, "message too big").await;
                Screened::End
            }
            Message::Text(text) if !self.bucket.take() => {
                drop(text);
                // Counted once, as the error it is sent.
                self.send_error(&AppError::TooManyMessages).await;
                self.close(close::POLICY, "rate limit exceeded").await;
                Screened::End
            }
            Message::Text(text) => Screened::Text(text),
            Message::Binary(data) if data.len() > self.limits.max_message_bytes => {
                self.metrics.reject("message_too_big");
                self.close(close::TOO_BIG, "message too big").await;
                Screened::End
            }
            Message::Binary(_) if !self.bucket.take() => {
                self.metrics.reject(AppError::TooManyMessages.code());
                self.close(close::POLICY, "rate limit exceeded").await;
                Screened::End
            }
            Message::Binary(_) => {
                let error = AppError::BadMessage("send JSON text frames".into());
                self.send_error(&error).await;
                Screened::Skip
            }
            Message::Ping(_) | Message::Pong(_) => Screened::Skip,
            Message::Close(_) => Screened::End,
        }
    }

    async fn on_text(&mut self, text: &str) -> Flow {
        match parse_client_message(text) {
            Ok(ClientMessage::Command { id, seq, mv }) => self.on_command(id, seq, mv.into()).await,
            Ok(ClientMessage::Resync {
                last_seq,
                last_chat_seq,
            }) => {
                self.last_chat_seq = last_chat_seq;
                match self.resync(last_seq).await {
                    Ok(Flow::Close(code, reason)) => return Flow::Close(code, reason),
                    Ok(Flow::Continue) => {}
                    Err(error) => {
                        self.send_error(&error).await;
                        if error == AppError::Room(RoomError::ShuttingDown) {
                            return Flow::Close(close::RESTART, "reconnect shortly");
                        }
                    }
                }
            }
            Ok(ClientMessage::Say { text }) => self.on_say(text).await,
            Ok(ClientMessage::Mute { author, muted }) => {
                let request = |token_hash| Request::Mute {
                    token_hash,
                    author,
                    muted,
                };
                self.ask_as_player(request).await;
            }
            Ok(ClientMessage::ChatPolicy { chat }) => {
                let request = |token_hash| Request::SetChatPolicy { token_hash, chat };
                self.ask_as_player(request).await;
            }
            Ok(ClientMessage::Rematch { accept }) => {
                let request = |token_hash| Request::Rematch { token_hash, accept };
                self.ask_as_player(request).await;
            }
            Ok(ClientMessage::Ping) => self.send_text(ConnectionFrame::Pong.to_json().into()).await,
            Ok(ClientMessage::Hello { .. }) => {
                self.send_error(&AppError::AlreadyWelcomed).await;
            }
            Err(bad) => self.on_bad_frame(bad).await,
        }
        Flow::Continue
    }

    /// A bad command with a usable id still gets its one reply, `rejected`; any other
    /// bad frame gets an `error`.
    async fn on_bad_frame(&mut self, bad: BadFrame) {
        match bad.command_id {
            Some(id) => {
                self.metrics.reject(bad.error.code());
                let reply = ConnectionFrame::Rejected {
                    id,
                    error: bad.error.body(),
                };
                self.send_text(reply.to_json().into()).await;
            }
            None => self.send_error(&bad.error).await,
        }
    }

    async fn on_command(&mut self, id: String, expected_seq: u64, mv: carcassonne_core::Move) {
        let id_length = id.chars().count();
        let outcome = match (
            &self.token_hash,
            id_length == 0 || id_length > MAX_COMMAND_ID,
        ) {
            (_, true) => Err(AppError::BadRequest(format!(
                "a command id is 1 to {MAX_COMMAND_ID} characters"
            ))),
            (None, false) => Err(AppError::NotAPlayer),
            (Some(hash), false) => {
                let (token_hash, command_id) = (hash.clone(), id.clone());
                self.room
                    .ask(Request::Command {
                        token_hash,
                        id: command_id,
                        expected_seq,
                        mv,
                    })
                    .await
                    .map_err(AppError::from)
            }
        };
        let reply = match outcome {
            Ok(seq) => {
                self.refund_if_new(seq);
                ConnectionFrame::Ack { id, seq }
            }
            Err(error) => {
                self.metrics.reject(error.code());
                ConnectionFrame::Rejected {
                    id,
                    error: error.body(),
                }
            }
        };
        self.send_text(reply.to_json().into()).await;
    }

    /// A chat message: refused here when this connection sends too many, else the room
    /// decides (and answers with the `chat` entry it broadcasts, or an `error`).
    async fn on_say(&mut self, text: String) {
        if !self.chat_bucket.take() {
            self.send_error(&AppError::Room(RoomError::ChatRateLimited))
                .await;
            return;
        }
        let request = Request::Say {
            token_hash: self.token_hash.clone(),
            spectator: self.spectator.clone(),
            text,
        };
        if let Err(error) = self.room.ask::<()>(request).await {
            self.send_error(&AppError::from(error)).await;
        }
    }

    /// Asks the room something only a seated player may ask; refusals come back as an
    /// `error`, success as the room's broadcast.
    async fn ask_as_player(&mut self, request: impl FnOnce(String) -> Request) {
        let Some(token_hash) = self.token_hash.clone() else {
            self.send_error(&AppError::NotAPlayer).await;
            return;
        };
        if let Err(error) = self.room.ask::<()>(request(token_hash)).await {
            self.send_error(&AppError::from(error)).await;
        }
    }

    /// A command the game newly accepted gives its token back: the game paces moves
    /// (one player at a time, each move written before the next), so they cannot flood,
    /// and a client that answers instantly must never be cut off. Retries acknowledged
    /// again with an old `seq` still pay.
    fn refund_if_new(&mut self, seq: u64) {
        if self.highest_ack.is_none_or(|highest| seq > highest) {
            self.highest_ack = Some(seq);
            self.bucket.give_back();
        }
    }

    async fn on_broadcast(&mut self, update: Result<Arc<Outgoing>, RecvError>) -> Flow {
        match update {
            Ok(outgoing) if outgoing.closing => {
                self.send_room_text(&outgoing.for_others).await;
                Flow::Close(close::RESTART, "server restarting")
            }
            // The game is further than this client: an update was lost between nodes.
            Ok(outgoing) if outgoing.seq_check => {
                if outgoing.seq > self.last_seq {
                    return self.catch_up_from_last_seq().await;
                }
                Flow::Continue
            }
            // An update that skips some (the owner's relay fell behind, in cluster mode):
            // the missing ones are fetched rather than leaving a hole in the client's log.
            Ok(outgoing) if self.skips(&outgoing) => self.catch_up_from_last_seq().await,
            Ok(outgoing) => self.forward(&outgoing).await,
            // Too far behind the broadcast: catch up from what this client last got. If
            // the room is gone the broadcast closes next and ends the connection.
            Err(RecvError::Lagged(_)) => self.catch_up_from_last_seq().await,
            // The room ended (its last update was sent above) and left memory: the game
            // can no longer change, and its record is served over REST.
            Err(RecvError::Closed) => Flow::Close(close::NORMAL, "the game has ended"),
        }
    }

    /// Catches the client up from what it was last sent. A room that cannot answer from
    /// memory (it is behind what this client has: a former owner, in cluster mode) sends
    /// the client elsewhere; any other failure leaves it for the next update to mend.
    async fn catch_up_from_last_seq(&mut self) -> Flow {
        match self.resync(self.last_seq).await {
            Ok(flow) => flow,
            Err(AppError::Room(RoomError::ShuttingDown)) => {
                Flow::Close(close::RESTART, "reconnect shortly")
            }
            Err(_) => Flow::Continue,
        }
    }

    /// Sends what a client that last saw `last_seq` is missing: updates or a snapshot.
    async fn resync(&mut self, last_seq: Option<u64>) -> Result<Flow, AppError> {
        let token_hash = self.token_hash.clone();
        let catch_up: Vec<Arc<Outgoing>> = self
            .room
            .ask(Request::Resync {
                token_hash,
                last_seq,
                last_chat_seq: self.last_chat_seq,
            })
            .await?;
        self.last_seq = last_seq;
        for outgoing in catch_up {
            if let Flow::Close(code, reason) = self.forward(&outgoing).await {
                return Ok(Flow::Close(code, reason));
            }
        }
        Ok(Flow::Continue)
    }

    /// Whether `outgoing` is an update beyond the next one this client needs.
    fn skips(&self, outgoing: &Outgoing) -> bool {
        match (outgoing.seq, self.last_seq) {
            (Some(seq), Some(last)) => !outgoing.snapshot && seq > last + 1,
            _ => false,
        }
    }

    /// Sends an update or snapshot unless the client already has it, or a chat entry
    /// unless it has it, may not read it or muted its author. A snapshot older than what
    /// the client has is never sent: it comes from a room behind the database (a former
    /// owner, in cluster mode), and the client is sent to reconnect instead.
    async fn forward(&mut self, outgoing: &Outgoing) -> Flow {
        if !outgoing.audience.reaches(self.seat) {
            return Flow::Continue;
        }
        if let Some(muted) = &outgoing.mutes {
            self.muted = muted.clone();
        }
        if let Some(mark) = &outgoing.chat {
            if self.last_chat_seq.is_some_and(|last| mark.chat_seq <= last) {
                return Flow::Continue;
            }
            self.last_chat_seq = Some(mark.chat_seq);
            if mark
                .author
                .is_some_and(|author| self.muted.contains(&author))
            {
                return Flow::Continue;
            }
        }
        if let (Some(seq), Some(last)) = (outgoing.seq, self.last_seq) {
            if outgoing.snapshot && seq < last {
                tracing::warn!(
                    seq,
                    last,
                    "a snapshot older than what the client has; sending it elsewhere"
                );
                return Flow::Close(close::RESTART, "reconnect shortly");
            }
            if seq <= last && !outgoing.snapshot {
                return Flow::Continue;
            }
        }
        self.send_room_text(outgoing.text_for(self.token_hash.as_deref()))
            .await;
        if let Some(seq) = outgoing.seq {
            self.last_seq = Some(seq);
        }
        let new_seat = match (&outgoing.reseated, &self.token_hash) {
            (Some(reseated), Some(hash)) => reseated.get(hash).copied(),
            _ => None,
        };
        if let Some(seat) = new_seat.filter(|&seat| Some(seat) != self.seat) {
            self.reseat(seat).await;
        }
        Flow::Continue
    }

    /// Tells the client its new seat: only when it changed, so one start gives one
    /// `welcome` at most.
    async fn reseat(&mut self, seat: u8) {
        self.seat = Some(seat);
        tracing::Span::current().record("seat", seat);
        let welcome = ConnectionFrame::Welcome {
            game_id: self.room.id,
            role: Role::Player,
            seat: Some(seat),
            chat: self.chat_policy,
        };
        self.send_text(welcome.to_json().into()).await;
    }

    async fn on_ping_tick(&mut self) -> Flow {
        if self.last_heard.elapsed() > self.limits.idle_timeout {
            return Flow::Close(close::GOING_AWAY, "no pong in time");
        }
        self.send(Message::Ping(Default::default())).await;
        Flow::Continue
    }

    async fn send_error(&mut self, error: &AppError) {
        self.metrics.reject(error.code());
        self.send_text(ConnectionFrame::error(error).to_json().into())
            .await;
    }

    async fn send_text(&mut self, text: Utf8Bytes) {
        self.send(Message::Text(text)).await;
    }

    /// Sends a text the room made, shared with every connection: the socket takes the
    /// same bytes, after checking them as UTF-8 once more (axum offers no unchecked way;
    /// the check costs far less than the send).
    async fn send_room_text(&mut self, text: &Text) {
        match Utf8Bytes::try_from(text.to_bytes()) {
            Ok(text) => self.send_text(text).await,
            Err(_) => tracing::error!("a room made a text that is not UTF-8"),
        }
    }

    /// Sends one message within the send timeout: queued while the main loop gathers a
    /// turn's messages into one write, sent at once otherwise. A send that fails or times
    /// out marks the connection dead: the client is gone or does not read, and nothing
    /// more is sent to it, so it can neither hold memory nor hold up shutdown.
    async fn send(&mut self, message: Message) {
        if self.is_dead() {
            return;
        }
        let limit = self.limits.send_timeout;
        let sent = if self.gathering {
            self.unflushed = true;
            tokio::time::timeout(limit, self.socket.feed(message)).await
        } else {
            tokio::time::timeout(limit, self.socket.send(message)).await
        };
        self.note_send_outcome(sent);
    }

    /// Writes what the loop queued, ending a gathering.
    async fn flush(&mut self) {
        self.gathering = false;
        if !std::mem::take(&mut self.unflushed) || self.is_dead() {
            return;
        }
        let limit = self.limits.send_timeout;
        let flushed = tokio::time::timeout(limit, self.socket.flush()).await;
        self.note_send_outcome(flushed);
    }

    fn note_send_outcome(&mut self, outcome: Result<Result<(), axum::Error>, Elapsed>) {
        let failure = match outcome {
            Ok(Ok(())) => return,
            Ok(Err(error)) => error.to_string(),
            Err(_) => "timed out".to_owned(),
        };
        tracing::debug!(%failure, "send failed");
        self.metrics.refuse("send_timeout_or_failure");
        self.ending = Some(Ending::SendFailed);
    }

    fn is_dead(&self) -> bool {
        matches!(self.ending, Some(Ending::SendFailed))
    }

    /// Closes with `code`, then waits briefly for the peer's close reply (reading and
    /// dropping anything it still sends) so the close frame is delivered rather than lost
    /// to a reset connection.
    async fn close(&mut self, code: u16, reason: &'static str) {
        let frame = CloseFrame {
            code,
            reason: Utf8Bytes::from_static(reason),
        };
        self.send(Message::Close(Some(frame))).await;
        if self.is_dead() {
            return;
        }
        self.ending = Some(Ending::Closed(code, reason));
        // Reads and drops what the client still sends until its close frame, so that
        // the socket is closed with nothing unread (else the kernel resets it).
        let drain = async {
            let mut drained = 0;
            while let Some(Ok(message)) = self.socket.recv().await {
                drained += match &message {
                    Message::Text(text) => text.len(),
                    Message::Binary(data) | Message::Ping(data) | Message::Pong(data) => data.len(),
                    Message::Close(_) => break,
                };
                if drained > CLOSE_DRAIN_BYTES {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(self.limits.close_handshake, drain).await;
    }
}

/// The close code for a frame the WebSocket layer could not read, or `None` when the
/// connection is simply gone (nothing can be sent any more).
fn close_for_receive_error(error: axum::Error) -> Option<(u16, &'static str)> {
    let error = error.into_inner().downcast::<tungstenite::Error>().ok()?;
    tracing::debug!(%error, "websocket receive failed");
    match *error {
        tungstenite::Error::Capacity(_) => Some((close::TOO_BIG, "message too big")),
        tungstenite::Error::Utf8(_) => Some((close::INVALID_DATA, "text is not valid UTF-8")),
        tungstenite::Error::Protocol(_) => Some((close::PROTOCOL, "websocket protocol error")),
        _ => None,
    }
}

/// The rejection code counted for a connection closed by a receive error.
fn reason_code(code: u16) -> &'static str {
    match code {
        close::TOO_BIG => "message_too_big",
        close::INVALID_DATA => "invalid_utf8",
        _ => "protocol_error",
    }
}

/// What a `hello` says.
struct Hello {
    token: Option<String>,
    invite_code: Option<String>,
    last_seq: Option<u64>,
    last_chat_seq: Option<u64>,
    /// A spectator's player id and secret.
    player: Option<(Uuid, Option<String>)>,
}

enum Screened {
    Text(Utf8Bytes),
    Skip,
    End,
}
