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
//! 5. The players leave their ended games, which stay in memory for their post-game
//!    stay: the room at its end with its sockets excluded (any memory the closed sockets
//!    leave behind is still counted in it).
//! 6. Optionally, N connections to a bare WebSocket echo server: the floor of any socket.
//!
//! `--hold-after N` holds still for a minute after the step that reaches N moves, for a
//! heap profiler to take the server's heap there.
//!
//! Everything else stays open to the end: a socket closed before a step would leave its
//! memory to the next, which would then seem to cost nothing.
//!
//! Each figure is the RSS delta of its step divided by the number of games or
//! connections; the allocator's own slack makes small N noisy, so N is in the thousands.

use crate::idle;
use crate::process::{self, Spawned};
use crate::procfs;
use crate::rest::Api;
use crate::socket::{self, Socket};
use crate::table::{AT_ONCE, Table, advance_all, connect_all, set_up_games};
use futures_util::{StreamExt, stream};
use serde::Serialize;
use std::time::Duration;

/// How long the server is left before its RSS is read: its writes and timers settle,
/// and its rooms, a second after their last move, rest as they do while people think.
const SETTLE: Duration = Duration::from_secs(2);
/// How long `--hold-after` holds still.
const HOLD: Duration = Duration::from_secs(60);

/// What to measure; see `carcassonne-loadgen memory --help`.
#[derive(Clone, Debug)]
pub struct MemoryOptions {
    pub spawn_server: String,
    pub games: usize,
    /// Moves every game plays between two readings.
    pub moves_per_step: usize,
    pub echo: bool,
    /// Moves after which to hold still for a heap profiler.
    pub hold_after: Option<usize>,
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
    /// A room at the end of its game once its players have left (in its post-game stay):
    /// the room with no socket of its own.
    pub room_at_end_players_gone: f64,
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
    let mut held = false;
    while tables.iter().any(|table| !table.over) {
        tables = advance_all(tables, options.moves_per_step).await;
        played += options.moves_per_step;
        let now = rss.settled().await?;
        // The players' sockets are counted as they were when they connected.
        let with_sockets = per(now.saturating_sub(report.rss_before), tables.len());
        let room = with_sockets - 2.0 * report.player_connection;
        report.room_by_moves.push((played, room));
        report.room_most = report.room_most.max(room);
        let over = tables.iter().all(|table| table.over);
        if !held
            && options
                .hold_after
                .is_some_and(|hold| played >= hold || over)
        {
            held = true;
            eprintln!("holding after {played} moves for {} s", HOLD.as_secs());
            tokio::time::sleep(HOLD).await;
        }
    }
    report.failures = options.games - tables.len();
    report.room_most = report.room_most.max(report.room_at_start);
    let games = tables.len();
    drop(tables);
    let left = rss.settled().await?;
    report.room_at_end_players_gone = per(left.saturating_sub(report.rss_before), games);
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
        row("room, players gone", kib(self.room_at_end_players_gone));
        row("seated player connection", kib(self.player_connection));
        row("spectator connection", kib(self.spectator_connection));
        if let Some(echo) = self.echo_connection {
            row("echo connection", kib(echo));
        }
        table
    }
}
