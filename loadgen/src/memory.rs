//! The memory benchmark (`carcassonne-loadgen memory`): what a live game and an open
//! connection cost the server, as its RSS grows over many of them.
//!
//! In order, with the server's RSS read after each step has settled:
//! 1. N spectators connect to a lobby of their own: a spectator's connection.
//! 2. N 2-player games are created and started, with nobody connected: a room alone.
//! 3. Both players of every game connect and say hello: a seated player's connection.
//! 4. The games are played on in steps of a few moves each, every game at once, to their
//!    end, the players staying connected (and idle between steps): the room as its
//!    game grows, taken as the RSS per game less two fresh players' connections.
//! 5. Optionally, N connections to a bare WebSocket echo server: the floor of any socket.
//!
//! Everything stays open to the end: a socket closed before a step would leave its
//! memory to the next, which would then seem to cost nothing.
//!
//! Each figure is the RSS delta of its step divided by the number of games or
//! connections; the allocator's own slack makes small N noisy, so N is in the thousands.

use crate::idle;
use crate::process::{self, Spawned};
use crate::procfs;
use crate::protocol::{self, MovePicker};
use crate::rest::{Api, Seat};
use crate::socket::{self, Socket};
use futures_util::{SinkExt, StreamExt, stream};
use serde::Serialize;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

/// How many games (or connections) are set up or advanced at once.
const AT_ONCE: usize = 16;

/// How long the server is left before its RSS is read: its writes and timers settle.
const SETTLE: Duration = Duration::from_secs(1);

/// How long a game may take to answer one move before the benchmark gives up.
const MOVE_PATIENCE: Duration = Duration::from_secs(30);

/// What to measure; see `carcassonne-loadgen memory --help`.
#[derive(Clone, Debug)]
pub struct MemoryOptions {
    pub spawn_server: String,
    pub games: usize,
    /// Moves every game plays between two readings.
    pub moves_per_step: usize,
    pub echo: bool,
    pub seed: u64,
}

/// The RSS per game and per connection, in bytes.
#[derive(Debug, Default, Serialize)]
pub struct MemoryReport {
    pub games: usize,
    /// A started game's room, nobody connected.
    pub room_at_start: f64,
    /// One seated player's open, idle connection, just connected.
    pub player_connection: f64,
    /// The room after each step (moves played, bytes): the RSS per game less two fresh
    /// players' connections, so what their sockets grew to while playing counts here.
    pub room_by_moves: Vec<(usize, f64)>,
    /// The most a room held at any step.
    pub room_most: f64,
    /// One spectator's open, idle connection.
    pub spectator_connection: f64,
    /// One connection to the bare echo server, when measured.
    pub echo_connection: Option<f64>,
    /// The server's RSS before the first game (with the spectators connected).
    pub rss_before: u64,
    /// Games that could not be set up or played (they are left out of the figures).
    pub failures: usize,
}

pub async fn measure(options: &MemoryOptions) -> Result<MemoryReport, String> {
    let spawned = process::spawn_server(&options.spawn_server).await?;
    let server = spawned.address.to_string();
    let api = Api::new(&server);
    let rss = Rss(spawned.pid);
    let mut report = MemoryReport {
        games: options.games,
        rss_before: rss.settled().await?,
        ..MemoryReport::default()
    };
    // Spectators first, held to the end: sockets closed before a step would leave their
    // memory to the next, which would then seem to cost nothing.
    let spectators = idle::open(&server, &api, options.games).await?;
    let watched = rss.settled().await?;
    report.spectator_connection = per(watched.saturating_sub(report.rss_before), options.games);
    report.rss_before = watched;
    let seats = set_up_games(&api, options.games).await;
    let mut tables: Vec<Table> = seats
        .into_iter()
        .enumerate()
        .map(|(number, seats)| Table::new(seats, options.seed + number as u64))
        .collect();
    let started = rss.settled().await?;
    report.room_at_start = per(started.saturating_sub(report.rss_before), tables.len());
    tables = connect_all(&server, tables).await;
    let connected = rss.settled().await?;
    report.player_connection = per(connected.saturating_sub(started), tables.len() * 2);
    let mut played = 0;
    while tables.iter().any(|table| !table.over) {
        tables = advance_all(tables, options.moves_per_step).await;
        played += options.moves_per_step;
        let now = rss.settled().await?;
        // The players' sockets are counted as they were when they connected.
        let with_sockets = per(now.saturating_sub(report.rss_before), tables.len());
        let room = with_sockets - 2.0 * report.player_connection;
        report.room_by_moves.push((played, room));
        report.room_most = report.room_most.max(room);
    }
    report.failures = options.games - tables.len();
    report.room_most = report.room_most.max(report.room_at_start);
    drop(tables);
    drop(spectators.close().await);
    if options.echo {
        report.echo_connection = Some(echo_connection(options.games).await?);
    }
    drop(spawned);
    Ok(report)
}

/// A process whose RSS is read.
struct Rss(u32);

impl Rss {
    async fn settled(&self) -> Result<u64, String> {
        tokio::time::sleep(SETTLE).await;
        procfs::rss_bytes(self.0).map_err(|error| format!("cannot read the RSS: {error}"))
    }
}

fn per(bytes: u64, count: usize) -> f64 {
    bytes as f64 / count.max(1) as f64
}

/// Creates, fills and starts `count` games; returns both seats of those that started.
async fn set_up_games(api: &Api, count: usize) -> Vec<[Seat; 2]> {
    stream::iter(0..count)
        .map(|_| async {
            let creator = api.create_lobby("memory").await?;
            let joiner = api.join(&creator.lobby).await?;
            api.start(&creator).await?;
            Ok::<_, String>([creator, joiner])
        })
        .buffer_unordered(AT_ONCE)
        .filter_map(|seats| async { seats.ok() })
        .collect()
        .await
}

/// One game's two players, moving only when told to.
struct Table {
    seats: [Seat; 2],
    /// Both players' sockets, while they are connected.
    players: Vec<Socket>,
    /// The player to move and the `seq` and legal moves (a move's JSON each) they have.
    to_move: Option<(usize, u64, Vec<String>)>,
    picker: MovePicker,
    commands: u64,
    over: bool,
}

/// (Re)connects both players of every table, each with a hello that asks for a snapshot.
async fn connect_all(server: &str, tables: Vec<Table>) -> Vec<Table> {
    stream::iter(tables)
        .map(|mut table| async move {
            table.connect(server).await?;
            Ok::<_, String>(table)
        })
        .buffer_unordered(AT_ONCE)
        .filter_map(|table| async { table.ok() })
        .collect()
        .await
}

async fn advance_all(tables: Vec<Table>, moves: usize) -> Vec<Table> {
    stream::iter(tables)
        .map(|mut table| async move {
            let moved = tokio::time::timeout(MOVE_PATIENCE * moves as u32, table.advance(moves));
            match moved.await {
                Ok(Ok(())) => Some(table),
                _ => None,
            }
        })
        .buffer_unordered(AT_ONCE)
        .filter_map(|table| async { table })
        .collect()
        .await
}

/// What a frame told a table.
#[derive(Debug, PartialEq, Eq)]
enum Heard {
    Snapshot,
    Update(u64),
    Ack,
    Other,
}

impl Table {
    fn new(seats: [Seat; 2], seed: u64) -> Table {
        Table {
            seats,
            players: Vec::new(),
            to_move: None,
            picker: MovePicker::new(seed),
            commands: 0,
            over: false,
        }
    }

    async fn connect(&mut self, server: &str) -> Result<(), String> {
        self.players.clear();
        for seat in 0..2 {
            let path = format!("/ws/games/{}", self.seats[seat].lobby);
            self.players.push(socket::connect(server, &path).await?);
            let hello = protocol::hello_text(Some(&self.seats[seat].token));
            self.send(seat, hello).await?;
            self.read_until(seat, |heard| heard == Heard::Snapshot)
                .await?;
        }
        Ok(())
    }

    async fn send(&mut self, seat: usize, text: String) -> Result<(), String> {
        self.players[seat]
            .send(Message::Text(text.into()))
            .await
            .map_err(|_| "ws send".to_owned())
    }

    /// Plays `moves` moves (fewer if the game ends), each answered before the next.
    async fn advance(&mut self, moves: usize) -> Result<(), String> {
        for _ in 0..moves {
            if self.over {
                return Ok(());
            }
            let (seat, seq, legal) = self.to_move.take().ok_or("nobody to move")?;
            let chosen = legal[self.picker.index(legal.len())].clone();
            let other = 1 - seat;
            self.commands += 1;
            let id = format!("m{}", self.commands);
            self.send(seat, protocol::command_text(&id, seq, &chosen))
                .await?;
            let next = seq + 1;
            let (mut acked, mut updated) = (false, false);
            self.read_until(seat, |heard| {
                acked |= heard == Heard::Ack;
                updated |= heard == Heard::Update(next);
                acked && updated
            })
            .await?;
            self.read_until(other, |heard| heard == Heard::Update(next))
                .await?;
        }
        Ok(())
    }

    /// Reads `seat`'s socket until `wanted` says so, noting legal moves and the end.
    async fn read_until(
        &mut self,
        seat: usize,
        mut wanted: impl FnMut(Heard) -> bool,
    ) -> Result<(), String> {
        loop {
            let message = tokio::time::timeout(MOVE_PATIENCE, self.players[seat].next())
                .await
                .map_err(|_| "no answer in time".to_owned())?;
            let text = match message {
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(_)) => continue,
                _ => return Err("closed".to_owned()),
            };
            if wanted(self.absorb(seat, &text)?) {
                return Ok(());
            }
        }
    }

    fn absorb(&mut self, seat: usize, text: &str) -> Result<Heard, String> {
        let frame = protocol::parse_frame(text).map_err(|_| "unparsable frame".to_owned())?;
        if let (Some(moves), Some(seq)) = (&frame.legal_moves, frame.seq) {
            let legal = (0..moves.count()).filter_map(|index| moves.move_json(index));
            self.to_move = Some((seat, seq, legal.collect()));
        }
        Ok(match frame.kind.as_ref() {
            "snapshot" => Heard::Snapshot,
            "update" => {
                self.over |= frame.ends_the_game();
                Heard::Update(frame.seq.unwrap_or_default())
            }
            "ack" => Heard::Ack,
            "error" | "rejected" => return Err(format!("{} {}", frame.kind, frame.error_code())),
            _ => Heard::Other,
        })
    }
}

/// The RSS one open connection adds to the bare echo server.
async fn echo_connection(count: usize) -> Result<f64, String> {
    let Spawned {
        pid,
        address,
        child,
    } = process::spawn_echo().await?;
    let rss = Rss(pid);
    let before = rss.settled().await?;
    let address = address.to_string();
    let sockets: Vec<Socket> = stream::iter(0..count)
        .map(|_| socket::connect(&address, "/"))
        .buffer_unordered(AT_ONCE)
        .filter_map(|socket| async { socket.ok() })
        .collect()
        .await;
    let after = rss.settled().await?;
    let figure = per(after.saturating_sub(before), sockets.len());
    drop(sockets);
    drop(child);
    Ok(figure)
}

impl MemoryReport {
    /// The report as a table, in KiB.
    pub fn table(&self) -> String {
        let kib = |bytes: f64| format!("{:.1} KiB", bytes / 1024.0);
        let mut table = format!("games                      {}\n", self.games);
        let mut row = |name: &str, value: String| {
            table.push_str(&format!("{name:<27}{value}\n"));
        };
        row("failures", self.failures.to_string());
        row("server RSS before", kib(self.rss_before as f64));
        row("room at start", kib(self.room_at_start));
        for (moves, bytes) in &self.room_by_moves {
            row(&format!("room after {moves} moves"), kib(*bytes));
        }
        row("room, most", kib(self.room_most));
        row("seated player connection", kib(self.player_connection));
        row("spectator connection", kib(self.spectator_connection));
        if let Some(echo) = self.echo_connection {
            row("echo connection", kib(echo));
        }
        table
    }
}
