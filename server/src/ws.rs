//! WebSocket connections: `GET /ws/games/{id}`.
//!
//! Each connection is one task running one `select!` loop over the socket, its room's
//! broadcast, a ping timer and the shutdown signal. Nothing is sent before the client's
//! `hello`; a player proves their seat with its token in that message (never in the
//! URL). Bad frames get an `error` reply and the connection stays; a client that floods,
//! sends oversized messages or stops answering pings is closed with the fitting code.

use crate::auth::Token;
use crate::error::{AppError, ErrorBody};
use crate::protocol::{ClientMessage, Role, ServerMessage, parse_client_message};
use crate::rooms::{Connected, Outgoing, RoomHandle, RoomRequest};
use crate::state::AppState;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::broadcast::error::RecvError;
use uuid::Uuid;

/// Close codes (RFC 6455).
mod close {
    pub const GOING_AWAY: u16 = 1001;
    pub const POLICY: u16 = 1008;
    pub const TOO_BIG: u16 = 1009;
    pub const RESTART: u16 = 1012;
}

/// Frames larger than this are refused by the WebSocket layer itself.
const FRAME_HARD_LIMIT: usize = 1 << 20;
/// Failed hellos (bad token, private game) before the connection is closed.
const MAX_FAILED_HELLOS: u32 = 3;
/// How long a closing connection waits for the peer's close reply.
const CLOSE_HANDSHAKE: Duration = Duration::from_secs(2);
/// Longest accepted command id.
const MAX_COMMAND_ID: usize = 64;

pub async fn upgrade(
    State(state): State<AppState>,
    Path(id): Path<Uuid>,
    ws: WebSocketUpgrade,
) -> Response {
    let Some(room) = state.rooms.get(id) else {
        return AppError::NotFound("no live game with this id").into_response();
    };
    let Ok(permit) = state.connection_slots.clone().try_acquire_owned() else {
        state.metrics.reject("too_many_connections");
        return AppError::TooManyConnections.into_response();
    };
    let tasks = state.tasks.clone();
    ws.max_message_size(FRAME_HARD_LIMIT)
        .max_frame_size(FRAME_HARD_LIMIT)
        .on_upgrade(move |socket| tasks.track_future(serve_connection(socket, room, state, permit)))
}

async fn serve_connection(
    socket: WebSocket,
    room: RoomHandle,
    state: AppState,
    permit: OwnedSemaphorePermit,
) {
    state.metrics.connections.inc();
    let mut connection = Connection {
        socket,
        room,
        state: state.clone(),
        token_hash: None,
        last_seq: None,
        last_heard: Instant::now(),
        bucket: TokenBucket::new(state.limits.messages_per_second, state.limits.message_burst),
    };
    if let Some(connected) = connection.await_hello().await {
        connection.play(connected).await;
    }
    if let Some(hash) = connection.token_hash.take() {
        connection
            .room
            .tell(RoomRequest::Disconnect {
                token_hash: Some(hash),
            })
            .await;
    }
    state.metrics.connections.dec();
    drop(permit);
}

/// What the loop should do after handling a frame.
enum Flow {
    Continue,
    Close(u16, &'static str),
}

struct Connection {
    socket: WebSocket,
    room: RoomHandle,
    state: AppState,
    /// Set once a player has said hello with a valid seat token.
    token_hash: Option<String>,
    /// The last update this client was sent.
    last_seq: Option<u64>,
    last_heard: Instant,
    bucket: TokenBucket,
}

impl Connection {
    /// Waits for a valid `hello`; `None` when the connection ended first.
    async fn await_hello(&mut self) -> Option<Connected> {
        let deadline = tokio::time::sleep(self.state.limits.hello_timeout);
        tokio::pin!(deadline);
        let mut failures = 0;
        loop {
            let frame = tokio::select! {
                frame = self.socket.recv() => frame,
                _ = &mut deadline => {
                    self.close(close::POLICY, "no hello in time").await;
                    return None;
                }
                _ = self.state.shutdown.cancelled() => {
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
                }) => match self.hello(token, invite_code, last_seq).await {
                    Ok(connected) => return Some(connected),
                    Err(error) => {
                        failures += 1;
                        self.send_error(&error).await;
                        if failures >= MAX_FAILED_HELLOS {
                            self.close(close::POLICY, "too many failed hellos").await;
                            return None;
                        }
                    }
                },
                Ok(_) => {
                    let error = AppError::BadRequest("say hello first".into());
                    self.send_error_body(ErrorBody {
                        code: "hello_required".into(),
                        message: error.to_string(),
                    })
                    .await;
                }
                Err(body) => self.send_error_body(body).await,
            }
        }
    }

    async fn hello(
        &mut self,
        token: Option<String>,
        invite_code: Option<String>,
        last_seq: Option<u64>,
    ) -> Result<Connected, AppError> {
        let token_hash = token.map(|token| Token::from_client(token).hash());
        let connected = self
            .room
            .ask(|reply| RoomRequest::Connect {
                token_hash: token_hash.clone(),
                invite_code,
                last_seq,
                reply,
            })
            .await?;
        self.token_hash = token_hash;
        let role = if connected.seat.is_some() {
            Role::Player
        } else {
            Role::Spectator
        };
        let welcome = ServerMessage::Welcome {
            game_id: self.room.id,
            role,
            seat: connected.seat,
        };
        self.send_text(welcome.to_json().into()).await;
        Ok(connected)
    }

    /// The main loop, once the client is known.
    async fn play(&mut self, mut connected: Connected) {
        for outgoing in std::mem::take(&mut connected.catch_up) {
            self.forward(&outgoing).await;
        }
        let mut pings = tokio::time::interval(self.state.limits.ping_interval);
        pings.reset();
        self.last_heard = Instant::now();
        loop {
            let flow = tokio::select! {
                frame = self.socket.recv() => match self.screen(frame).await {
                    Screened::Text(text) => self.on_text(&text).await,
                    Screened::Skip => Flow::Continue,
                    Screened::End => return,
                },
                update = connected.updates.recv() => self.on_broadcast(update).await,
                _ = pings.tick() => self.on_ping_tick().await,
                _ = self.state.shutdown.cancelled() => {
                    let message = ServerMessage::Shutdown { message: "the server is restarting; reconnect shortly".into() };
                    self.send_text(message.to_json().into()).await;
                    Flow::Close(close::RESTART, "server restarting")
                }
            };
            if let Flow::Close(code, reason) = flow {
                self.close(code, reason).await;
                return;
            }
        }
    }

    /// Sorts a received frame: text to handle, control frames to skip, or the end.
    async fn screen(&mut self, frame: Option<Result<Message, axum::Error>>) -> Screened {
        let message = match frame {
            Some(Ok(message)) => message,
            Some(Err(error)) => {
                tracing::debug!(%error, "websocket receive failed");
                self.close(close::TOO_BIG, "unreadable or oversized frame")
                    .await;
                return Screened::End;
            }
            None => return Screened::End,
        };
        self.last_heard = Instant::now();
        match message {
            Message::Text(text) if text.len() > self.state.limits.max_message_bytes => {
                self.state.metrics.reject("message_too_big");
                self.close(close::TOO_BIG, "message too big").await;
                Screened::End
            }
            Message::Text(text) if !self.bucket.take() => {
                drop(text);
                self.state.metrics.reject("rate_limited");
                let body = ErrorBody {
                    code: "rate_limited".into(),
                    message: "too many messages".into(),
                };
                self.send_error_body(body).await;
                self.close(close::POLICY, "rate limit exceeded").await;
                Screened::End
            }
            Message::Text(text) => Screened::Text(text),
            Message::Binary(_) => {
                let body = ErrorBody {
                    code: "bad_message".into(),
                    message: "send JSON text frames".into(),
                };
                self.send_error_body(body).await;
                Screened::Skip
            }
            Message::Ping(_) | Message::Pong(_) => Screened::Skip,
            Message::Close(_) => Screened::End,
        }
    }

    async fn on_text(&mut self, text: &str) -> Flow {
        match parse_client_message(text) {
            Ok(ClientMessage::Command { id, seq, mv }) => self.on_command(id, seq, mv.into()).await,
            Ok(ClientMessage::Resync { last_seq }) => {
                if let Err(error) = self.resync(last_seq).await {
                    self.send_error(&error).await;
                }
            }
            Ok(ClientMessage::Ping) => self.send_text(ServerMessage::Pong.to_json().into()).await,
            Ok(ClientMessage::Hello { .. }) => {
                let body = ErrorBody {
                    code: "already_welcomed".into(),
                    message: "this connection has already said hello".into(),
                };
                self.send_error_body(body).await;
            }
            Err(body) => self.send_error_body(body).await,
        }
        Flow::Continue
    }

    async fn on_command(&mut self, id: String, expected_seq: u64, mv: carcassonne_core::Move) {
        let outcome = match (&self.token_hash, id.is_empty() || id.len() > MAX_COMMAND_ID) {
            (_, true) => Err(AppError::BadRequest(format!(
                "a command id is 1 to {MAX_COMMAND_ID} characters"
            ))),
            (None, false) => Err(AppError::NotAPlayer),
            (Some(hash), false) => {
                let (token_hash, command_id) = (hash.clone(), id.clone());
                self.room
                    .ask(|reply| RoomRequest::Command {
                        token_hash,
                        id: command_id,
                        expected_seq,
                        mv,
                        reply,
                    })
                    .await
            }
        };
        let reply = match outcome {
            Ok(seq) => ServerMessage::Ack { id, seq },
            Err(error) => {
                self.state.metrics.reject(error.code());
                ServerMessage::Rejected {
                    id,
                    error: error.body(),
                }
            }
        };
        self.send_text(reply.to_json().into()).await;
    }

    async fn on_broadcast(&mut self, update: Result<Arc<Outgoing>, RecvError>) -> Flow {
        match update {
            Ok(outgoing) if outgoing.closing => {
                self.send_text(outgoing.for_others.clone()).await;
                Flow::Close(close::RESTART, "server restarting")
            }
            Ok(outgoing) => {
                self.forward(&outgoing).await;
                Flow::Continue
            }
            Err(RecvError::Lagged(_)) => {
                // Too far behind the broadcast: catch up from what this client last got.
                // If the room is gone the broadcast closes next and ends the connection.
                let _ = self.resync(self.last_seq).await;
                Flow::Continue
            }
            Err(RecvError::Closed) => Flow::Close(close::GOING_AWAY, "the game is no longer live"),
        }
    }

    /// Sends what a client that last saw `last_seq` is missing: updates or a snapshot.
    async fn resync(&mut self, last_seq: Option<u64>) -> Result<(), AppError> {
        let token_hash = self.token_hash.clone();
        let catch_up = self
            .room
            .ask(|reply| RoomRequest::Resync {
                token_hash,
                last_seq,
                reply,
            })
            .await?;
        self.last_seq = last_seq;
        for outgoing in catch_up {
            self.forward(&outgoing).await;
        }
        Ok(())
    }

    /// Sends an update or snapshot unless the client already has it.
    async fn forward(&mut self, outgoing: &Outgoing) {
        if let (Some(seq), Some(last)) = (outgoing.seq, self.last_seq)
            && seq <= last
            && !outgoing.snapshot
        {
            return;
        }
        self.send_text(outgoing.text_for(self.token_hash.as_deref()).clone())
            .await;
        if let Some(seq) = outgoing.seq {
            self.last_seq = Some(seq);
        }
        if let (Some(reseated), Some(hash)) = (&outgoing.reseated, &self.token_hash)
            && let Some(&seat) = reseated.get(hash)
        {
            let welcome = ServerMessage::Welcome {
                game_id: self.room.id,
                role: Role::Player,
                seat: Some(seat),
            };
            self.send_text(welcome.to_json().into()).await;
        }
    }

    async fn on_ping_tick(&mut self) -> Flow {
        if self.last_heard.elapsed() > self.state.limits.idle_timeout {
            return Flow::Close(close::GOING_AWAY, "no pong in time");
        }
        let _ = self.socket.send(Message::Ping(Default::default())).await;
        Flow::Continue
    }

    async fn send_error(&mut self, error: &AppError) {
        self.state.metrics.reject(error.code());
        self.send_text(ServerMessage::error(error).to_json().into())
            .await;
    }

    async fn send_error_body(&mut self, body: ErrorBody) {
        self.state.metrics.reject(&body.code);
        self.send_text(ServerMessage::Error { error: body }.to_json().into())
            .await;
    }

    async fn send_text(&mut self, text: Utf8Bytes) {
        // A failed send means the peer is gone; the receive side will notice and end.
        let _ = self.socket.send(Message::Text(text)).await;
    }

    /// Closes with `code`, then waits briefly for the peer's close reply (reading and
    /// dropping anything it still sends) so the close frame is delivered rather than lost
    /// to a reset connection.
    async fn close(&mut self, code: u16, reason: &'static str) {
        let frame = CloseFrame {
            code,
            reason: Utf8Bytes::from_static(reason),
        };
        if self.socket.send(Message::Close(Some(frame))).await.is_err() {
            return;
        }
        let drain = async {
            while let Some(Ok(message)) = self.socket.recv().await {
                if matches!(message, Message::Close(_)) {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(CLOSE_HANDSHAKE, drain).await;
    }
}

enum Screened {
    Text(Utf8Bytes),
    Skip,
    End,
}

/// A token bucket: `rate` messages a second sustained, `burst` at once.
struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    refilled: Instant,
}

impl TokenBucket {
    fn new(rate: u32, burst: u32) -> TokenBucket {
        TokenBucket {
            rate: rate as f64,
            burst: burst as f64,
            tokens: burst as f64,
            refilled: Instant::now(),
        }
    }

    fn take(&mut self) -> bool {
        let now = Instant::now();
        let earned = now.duration_since(self.refilled).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + earned).min(self.burst);
        self.refilled = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_allows_a_burst_then_the_sustained_rate() {
        let mut bucket = TokenBucket::new(10, 5);
        assert!((0..5).all(|_| bucket.take()));
        assert!(!bucket.take());
        bucket.refilled -= Duration::from_millis(250);
        assert!(bucket.take() && bucket.take());
        assert!(!bucket.take());
    }
}
