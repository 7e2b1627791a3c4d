//! Game slots: each slot sets up a 2-player game over REST, plays it with two clients, and
//! starts a new one in its place when it ends, until the run is over or the server is
//! lost.

use crate::ack_log::AckLog;
use crate::player::{self, Player, SeatLabel};
use crate::rest::Api;
use crate::server_watch::ServerWatch;
use crate::socket::Socket;
use crate::stats::{Stats, Window};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What every slot shares.
#[derive(Clone)]
pub struct Target {
    /// The server first, then the other nodes of its cluster the players are spread
    /// over; lobbies are created on the first.
    pub nodes: Vec<String>,
    pub api: Api,
    pub seed: u64,
    pub ack_log: Option<AckLog>,
    pub watch: ServerWatch,
    /// How long each slot waits after the one before it to start its first game.
    pub ramp_step: Duration,
    /// The players' mean think time before each command.
    pub think: Duration,
    pub setups: SetupPace,
    /// Loopback source addresses the players' sockets are spread over.
    pub source_addresses: u8,
}

/// Spaces the slots' game setups evenly at a rate, shared by every slot.
#[derive(Clone)]
pub struct SetupPace {
    /// Between two setups; none without a limit.
    gap: Option<Duration>,
    /// When the next setup may begin.
    next: Arc<Mutex<tokio::time::Instant>>,
}

impl SetupPace {
    pub fn new(per_second: f64) -> SetupPace {
        SetupPace {
            gap: (per_second > 0.0).then(|| Duration::from_secs_f64(1.0 / per_second)),
            next: Arc::new(Mutex::new(tokio::time::Instant::now())),
        }
    }

    /// Waits for this setup's turn.
    async fn wait_turn(&self) {
        let Some(gap) = self.gap else {
            return;
        };
        let turn = {
            let mut next = self.next.lock().expect("not poisoned");
            let turn = (*next).max(tokio::time::Instant::now());
            *next = turn + gap;
            turn
        };
        tokio::time::sleep_until(turn).await;
    }
}

/// How long a slot waits after a failed setup before trying again, so that a refusing
/// server (a rate limit, a full lobby table) is not hammered in a tight loop.
const RETRY_PAUSE: Duration = Duration::from_millis(250);

/// A started game: its two connected seats, creator first.
struct OpenTable {
    sockets: [Socket; 2],
    labels: [SeatLabel; 2],
}

/// Plays game after game in slot `slot` until the window closes or the server is lost.
pub async fn run_slot(target: Target, slot: u64, window: Window) -> Stats {
    let mut stats = Stats::default();
    let deadline = tokio::time::Instant::from_std(window.end);
    let start = tokio::time::Instant::now() + target.ramp_step * slot as u32;
    tokio::select! {
        () = tokio::time::sleep_until(start.min(deadline)) => {}
        () = target.watch.lost() => return stats,
    }
    for game in 0u64.. {
        tokio::select! {
            () = target.setups.wait_turn() => {}
            () = tokio::time::sleep_until(deadline) => break,
        }
        let setup = tokio::select! {
            setup = tokio::time::timeout_at(deadline, open_table(&target, slot, game)) => setup,
            () = target.watch.lost() => break,
        };
        match setup {
            Err(_elapsed) => break,
            Ok(Err(kind)) => {
                let refused = kind.starts_with("http connect") || kind.starts_with("ws connect");
                stats.error(kind);
                if refused && target.watch.check().await {
                    break;
                }
                tokio::time::sleep(RETRY_PAUSE.min(deadline - tokio::time::Instant::now())).await;
            }
            Ok(Ok(table)) => {
                stats.all_started_at.get_or_insert_with(Instant::now);
                let seed = target.seed ^ (slot << 32) ^ (game << 1);
                stats.merge(&play_table(table, seed, target.think, window).await);
            }
        }
    }
    stats
}

/// Creates and fills a lobby, connects both seats and starts the game.
async fn open_table(target: &Target, slot: u64, game: u64) -> Result<OpenTable, String> {
    let api = &target.api;
    let creator = api.create_lobby(&format!("load {slot}.{game}")).await?;
    let joiner = api.join(&creator.lobby).await?;
    let node = |offset: u64| &target.nodes[((slot + offset) % target.nodes.len() as u64) as usize];
    let source = |seat: u64| ((slot * 2 + seat) % u64::from(target.source_addresses)) as u8;
    let first = player::join_from(node(0), source(0), &creator.lobby, Some(&creator.token)).await?;
    let second = player::join_from(node(1), source(1), &joiner.lobby, Some(&joiner.token)).await?;
    api.start(&creator).await?;
    if let Some(log) = &target.ack_log {
        log.game(&creator.lobby, [&creator.token, &joiner.token]);
    }
    let label = |letter| SeatLabel {
        game: creator.lobby.clone(),
        letter,
        ack_log: target.ack_log.clone(),
    };
    Ok(OpenTable {
        sockets: [first, second],
        labels: [label('a'), label('b')],
    })
}

/// Plays both seats of a started game to its end (or the window's); a game counts as
/// finished once, however many seats saw it end.
async fn play_table(table: OpenTable, seed: u64, think: Duration, window: Window) -> Stats {
    let [first, second] = table.sockets;
    let [first_label, second_label] = table.labels;
    let (mut stats, other) = tokio::join!(
        Player::new(first, first_label, seed, window)
            .thinking(think)
            .play(),
        Player::new(second, second_label, seed + 1, window)
            .thinking(think)
            .play()
    );
    let finished = stats.games_finished.max(other.games_finished);
    stats.merge(&other);
    stats.games_finished = finished;
    stats
}
