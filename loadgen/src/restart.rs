//! How soon a server killed with SIGKILL serves again with many unfinished games:
//!
//! 1. A server is spawned and N 2-player games are set up and played a few moves each
//!    (their players then leave: the games wait for them, as after a night's pause).
//! 2. The server is killed (SIGKILL) and the same command started again.
//! 3. Timed from that start: its "listening" line, its first `/readyz` 200, and, for a
//!    sample of the games all asked at once as soon as it listens, one move each: from
//!    the first request to the game (its first player's socket) to the move's update
//!    reaching both players.
//!
//! The database must outlive the first server: a Postgres database or an SQLite file.

use crate::process::{self, Spawned};
use crate::procfs;
use crate::rest::Api;
use crate::stats::{Samples, Summary};
use crate::table::{AT_ONCE, Table, set_up_games};
use futures_util::{StreamExt, stream};
use serde::Serialize;
use std::time::{Duration, Instant};

/// How often `/readyz` is asked while the restarted server is not ready.
const READY_POLL: Duration = Duration::from_millis(5);

/// How long the restarted server may take to be ready before the benchmark gives up.
const READY_PATIENCE: Duration = Duration::from_secs(60);

/// What to measure; see `carcassonne-loadgen restart --help`.
#[derive(Clone, Debug)]
pub struct RestartOptions {
    pub spawn_server: String,
    pub games: usize,
    /// Moves each game plays before the kill.
    pub moves: usize,
    /// Games moved in at once right after the restart.
    pub sample: usize,
    pub seed: u64,
}

/// Times in milliseconds, from the restarted server's spawn unless said otherwise.
#[derive(Debug, Default, Serialize)]
pub struct RestartReport {
    /// Games set up and played before the kill.
    pub games: usize,
    /// Games that could not be set up or played (left out).
    pub failures: usize,
    pub moves_each: usize,
    pub rss_before_kill: u64,
    /// Until the restarted server logged that it listens.
    pub listening_after_ms: f64,
    /// Until its first `/readyz` 200.
    pub ready_after_ms: f64,
    /// From the first request to a sampled game to its move reaching both players.
    pub first_move_ms: Summary,
    /// Until the last sampled game's move reached both players.
    pub all_sampled_moved_after_ms: f64,
    /// Sampled games whose move failed.
    pub sample_failures: usize,
}

pub async fn measure(options: &RestartOptions) -> Result<RestartReport, String> {
    let first = process::spawn_server(&options.spawn_server).await?;
    let tables = play_and_leave(&first, options).await;
    let mut report = RestartReport {
        games: tables.len(),
        failures: options.games - tables.len(),
        moves_each: options.moves,
        rss_before_kill: procfs::rss_bytes(first.pid).map_err(|error| error.to_string())?,
        ..RestartReport::default()
    };
    kill(first).await?;
    let spawned_at = Instant::now();
    let second = process::spawn_server(&options.spawn_server).await?;
    report.listening_after_ms = millis(spawned_at.elapsed());
    let server = second.address.to_string();
    let sampled = sample(tables, options.sample);
    let sampled_games = sampled.len();
    let api = Api::new(&server);
    let moving = async {
        let moved = move_once_each(&server, sampled).await;
        (moved, spawned_at.elapsed())
    };
    let (ready, (moved, all_moved)) = tokio::join!(ready_after(&api, spawned_at), moving);
    report.ready_after_ms = millis(ready?);
    report.all_sampled_moved_after_ms = millis(all_moved);
    report.sample_failures = sampled_games - moved.len() as usize;
    report.first_move_ms = Summary::of(&moved, 0.001);
    drop(second);
    Ok(report)
}

/// Sets up the games and plays `moves` in each, a few games at a time, each game's
/// players leaving once it has moved.
async fn play_and_leave(server: &Spawned, options: &RestartOptions) -> Vec<Table> {
    let address = server.address.to_string();
    let seats = set_up_games(&Api::new(&address), options.games).await;
    stream::iter(seats.into_iter().enumerate())
        .map(|(number, seats)| {
            let address = &address;
            async move {
                let mut table = Table::new(seats, options.seed + number as u64);
                table.connect(address).await?;
                table.advance(options.moves).await?;
                table.leave();
                Ok::<_, String>(table)
            }
        })
        .buffer_unordered(AT_ONCE)
        .filter_map(|table| async { table.ok().filter(|table| !table.over) })
        .collect()
        .await
}

async fn kill(mut server: Spawned) -> Result<(), String> {
    server
        .child
        .kill()
        .await
        .map_err(|error| format!("cannot kill the server: {error}"))
}

/// `count` of the tables, spread evenly over them.
fn sample(tables: Vec<Table>, count: usize) -> Vec<Table> {
    let every = (tables.len() / count.max(1)).max(1);
    tables.into_iter().step_by(every).take(count).collect()
}

/// How long after `since` the server first answered `/readyz` with 200.
async fn ready_after(api: &Api, since: Instant) -> Result<Duration, String> {
    while !api.ready().await {
        if since.elapsed() > READY_PATIENCE {
            return Err("the restarted server was not ready within 60 s".to_owned());
        }
        tokio::time::sleep(READY_POLL).await;
    }
    Ok(since.elapsed())
}

/// Connects the players of every table at once and plays one move in each; the time
/// of each game's, in microseconds, from its first connection to the move's end.
async fn move_once_each(server: &str, tables: Vec<Table>) -> Samples {
    let at_once = tables.len().max(1);
    let times: Vec<Option<u64>> = stream::iter(tables)
        .map(|mut table| async move {
            let asked = Instant::now();
            table.connect(server).await.ok()?;
            table.advance(1).await.ok()?;
            Some(asked.elapsed().as_micros() as u64)
        })
        .buffer_unordered(at_once)
        .collect()
        .await;
    let mut samples = Samples::default();
    for time in times.into_iter().flatten() {
        samples.record(time);
    }
    samples
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

impl RestartReport {
    /// The report as a plain-text table.
    pub fn table(&self) -> String {
        let mut text = format!(
            "{} games of {} moves each ({} failed), server RSS before the kill {:.1} MiB\n",
            self.games,
            self.moves_each,
            self.failures,
            self.rss_before_kill as f64 / (1024.0 * 1024.0)
        );
        let mut row = |name: &str, value: String| text.push_str(&format!("{name:<48} {value}\n"));
        row("listening after the restart", ms(self.listening_after_ms));
        row("/readyz 200 after the restart", ms(self.ready_after_ms));
        let first = &self.first_move_ms;
        row(
            &format!("first move of {} games asked at once", first.count),
            format!(
                "p50 {} / p99 {} / max {}",
                ms(first.p50),
                ms(first.p99),
                ms(first.max)
            ),
        );
        row(
            "all of them moved after the restart",
            ms(self.all_sampled_moved_after_ms),
        );
        row(
            "sampled games that failed",
            self.sample_failures.to_string(),
        );
        text
    }
}

fn ms(value: f64) -> String {
    format!("{value:.1} ms")
}
