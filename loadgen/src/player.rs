//! One seat of one game: a WebSocket client that answers every set of legal moves it is
//! sent with a move at once, and measures what it sees.

use crate::ack_log::AckLog;
use crate::protocol::{self, FrameKind, MovePicker, ServerFrame};
use crate::socket::{self, Socket};
use crate::stats::{Stats, Window};
use futures_util::{SinkExt, StreamExt};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

/// Connects to game `lobby`, says hello with `token` (none: a spectator) and waits for
/// the welcome.
pub async fn join(server: &str, lobby: &str, token: Option<&str>) -> Result<Socket, String> {
    join_from(server, 0, lobby, token).await
}

/// [`join`] from loopback source address number `source` (0: 127.0.0.1).
pub async fn join_from(
    server: &str,
    source: u8,
    lobby: &str,
    token: Option<&str>,
) -> Result<Socket, String> {
    let mut socket = socket::connect_from(server, source, &format!("/ws/games/{lobby}")).await?;
    send(&mut socket, protocol::hello_text(token)).await?;
    while let Some(message) = socket.next().await {
        let Ok(Message::Text(text)) = message else {
            continue;
        };
        let frame = protocol::parse_frame(&text).map_err(|_| "unparsable frame".to_owned())?;
        match frame.kind.as_ref() {
            "welcome" => return Ok(socket),
            "error" => return Err(format!("hello: {}", frame.error_code())),
            _ => {}
        }
    }
    Err("closed before welcome".to_owned())
}

async fn send(socket: &mut Socket, text: String) -> Result<(), String> {
    socket
        .send(Message::Text(text.into()))
        .await
        .map_err(|_| "ws send".to_owned())
}

/// Which game a seat plays, and how its acks are logged.
#[derive(Clone)]
pub struct SeatLabel {
    pub game: String,
    /// The first letter of the seat's command ids (`a` for the lobby's creator, `b` for
    /// the joiner), which makes every command id unique within its game.
    pub letter: char,
    pub ack_log: Option<AckLog>,
}

/// A playing seat: its socket, its move picker and the command it waits on.
pub struct Player {
    socket: Socket,
    picker: MovePicker,
    label: SeatLabel,
    commands_sent: u64,
    /// The id of the command in flight and when it was sent.
    pending: Option<(String, Instant)>,
    window: Window,
    stats: Stats,
    /// The game's last update has arrived.
    game_over: bool,
    /// The mean pause before each command.
    think: Duration,
}

/// How a seat's play ended.
enum Ending {
    /// The server closed the game's connections.
    GameOver,
    /// The game's last update arrived.
    LastUpdate,
    Deadline,
    Failed,
}

impl Player {
    pub fn new(socket: Socket, label: SeatLabel, seed: u64, window: Window) -> Player {
        Player {
            socket,
            picker: MovePicker::new(seed),
            label,
            commands_sent: 0,
            pending: None,
            window,
            stats: Stats::default(),
            game_over: false,
            think: Duration::ZERO,
        }
    }

    /// Thinks `think` on average (half to one and a half times it) before each command.
    pub fn thinking(mut self, think: Duration) -> Player {
        self.think = think;
        self
    }

    /// Waits as a person would before a command, at most until the window ends; false
    /// when it ended meanwhile (no command is sent after it).
    async fn think(&mut self) -> bool {
        if self.think.is_zero() {
            return true;
        }
        let pause = self.think.mul_f64(0.5 + self.picker.fraction());
        let wanted = Instant::now() + pause;
        let until = wanted.min(self.window.end);
        tokio::time::sleep_until(tokio::time::Instant::from_std(until)).await;
        wanted < self.window.end
    }

    /// Plays until the game ends (its last update, or the server closing the game) or the
    /// window does; returns what was measured (with `games_finished` 1 when the game was
    /// played to its end).
    pub async fn play(mut self) -> Stats {
        let ending = self.play_until_the_end().await;
        if matches!(ending, Ending::GameOver | Ending::LastUpdate) {
            self.stats.games_finished = 1;
        }
        if self.pending.is_some() {
            // Sent, and neither acked nor rejected: in flight when the connection died
            // or the run ended. Such a move may or may not have been stored.
            self.stats.unanswered += 1;
        }
        if matches!(ending, Ending::Deadline | Ending::LastUpdate) {
            // A game cut off by the end of the run, or over (its room stays a while for
            // chat and a rematch, which a load generator has no use for): say goodbye
            // rather than vanish.
            let _ = self.socket.close(None).await;
        }
        self.stats
    }

    async fn play_until_the_end(&mut self) -> Ending {
        // One timer for the whole game, not one registered and dropped per frame.
        let deadline = tokio::time::sleep_until(tokio::time::Instant::from_std(self.window.end));
        tokio::pin!(deadline);
        loop {
            let message = tokio::select! {
                message = self.socket.next() => message,
                () = &mut deadline => return Ending::Deadline,
            };
            match message {
                Some(Ok(Message::Text(text))) => match self.absorb(&text).await {
                    Ok(last) => {
                        self.game_over |= last;
                        // The last move's ack follows the update that ended the game.
                        if self.game_over && self.pending.is_none() {
                            return Ending::LastUpdate;
                        }
                    }
                    Err(kind) => {
                        self.stats.error(kind);
                        return Ending::Failed;
                    }
                },
                Some(Ok(Message::Close(frame))) => {
                    return self.closed(frame.map(|f| f.code.into()));
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return self.closed(None),
            }
        }
    }

    /// The server closed the connection: the normal end of a game with 1000, else an error.
    fn closed(&mut self, code: Option<u16>) -> Ending {
        match code {
            Some(protocol::GAME_ENDED_CLOSE_CODE) => Ending::GameOver,
            Some(code) => {
                self.stats.error(format!("close {code}"));
                Ending::Failed
            }
            None => {
                self.stats.error("dropped without close");
                Ending::Failed
            }
        }
    }

    /// Handles one text frame: measures it, and answers legal moves with a command.
    /// True when it was the game's last update.
    async fn absorb(&mut self, text: &str) -> Result<bool, String> {
        let received = Instant::now();
        let frame = protocol::parse_frame(text).map_err(|_| "unparsable frame".to_owned())?;
        match frame.classify() {
            FrameKind::Update => {
                self.measure_update(&frame, text.len(), received);
                if frame.ends_the_game() {
                    return Ok(true);
                }
                self.answer(&frame).await?;
            }
            FrameKind::TurnInfo => self.answer(&frame).await?,
            FrameKind::Ack => self.acked(&frame, received),
            FrameKind::Rejected => self.rejected(frame.error_code()).await?,
            FrameKind::Error => return Err(format!("error {}", frame.error_code())),
            FrameKind::Other => {}
        }
        Ok(false)
    }

    fn measure_update(&mut self, frame: &ServerFrame<'_>, size: usize, received: Instant) {
        if !self.window.contains(received) {
            return;
        }
        let sizes = if frame.legal_moves.is_some() {
            &mut self.stats.update_bytes_with_moves
        } else {
            &mut self.stats.update_bytes_without_moves
        };
        sizes.record(size as u64);
        if let Some(patch) = frame.compact_patch_length() {
            self.stats.patch_bytes.record(patch as u64);
        }
    }

    /// Sends a random legal move at the frame's `seq`, if the frame has legal moves.
    async fn answer(&mut self, frame: &ServerFrame<'_>) -> Result<(), String> {
        let (Some(moves), Some(seq)) = (frame.legal_moves.as_ref(), frame.seq) else {
            return Ok(());
        };
        let Some(chosen) = self.picker.pick(moves) else {
            return Err("no legal moves".to_owned());
        };
        if !self.think().await {
            return Ok(());
        }
        self.commands_sent += 1;
        let id = format!("{}{}", self.label.letter, self.commands_sent);
        let command = protocol::command_text(&id, seq, &chosen);
        self.pending = Some((id, Instant::now()));
        send(&mut self.socket, command).await
    }

    fn acked(&mut self, frame: &ServerFrame<'_>, received: Instant) {
        let Some((pending, sent)) = self.pending.take() else {
            self.stats.error("ack without command");
            return;
        };
        if frame.id.as_deref() != Some(pending.as_str()) {
            self.stats.error("ack of another id");
            return;
        }
        self.stats.acked_whole_run += 1;
        match (&self.label.ack_log, frame.seq) {
            (Some(log), Some(seq)) => log.ack(&self.label.game, seq, &pending),
            (Some(_), None) => self.stats.error("ack without seq"),
            (None, _) => {}
        }
        if self.window.contains(received) {
            self.stats.acked += 1;
            let micros = (received - sent).as_micros() as u64;
            self.stats.ack_latency_us.record(micros);
        }
    }

    /// Counts the rejection and asks for a fresh snapshot, whose legal moves go on.
    async fn rejected(&mut self, code: &str) -> Result<(), String> {
        self.pending = None;
        self.stats.error(format!("rejected {code}"));
        send(&mut self.socket, protocol::resync_text()).await
    }
}
