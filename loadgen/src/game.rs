//! Game slots: each slot sets up a 2-player game over REST, plays it with two clients, and
//! starts a new one in its place when it ends, until the run is over.

use crate::player::{self, Player};
use crate::rest::Api;
use crate::socket::Socket;
use crate::stats::{Stats, Window};
use std::time::{Duration, Instant};

/// What every slot shares.
#[derive(Clone)]
pub struct Target {
    pub server: String,
    pub api: Api,
    pub seed: u64,
}

/// How long a slot waits after a failed setup before trying again, so that a refusing
/// server (a rate limit, a full lobby table) is not hammered in a tight loop.
const RETRY_PAUSE: Duration = Duration::from_millis(250);

/// Plays game after game in slot `slot` until the window closes.
pub async fn run_slot(target: Target, slot: u64, window: Window) -> Stats {
    let mut stats = Stats::default();
    let deadline = tokio::time::Instant::from_std(window.end);
    for game in 0u64.. {
        let setup = tokio::time::timeout_at(deadline, open_table(&target, slot, game)).await;
        match setup {
            Err(_elapsed) => break,
            Ok(Err(kind)) => {
                stats.error(kind);
                tokio::time::sleep(RETRY_PAUSE.min(deadline - tokio::time::Instant::now())).await;
            }
            Ok(Ok(sockets)) => {
                stats.all_started_at.get_or_insert_with(Instant::now);
                let seed = target.seed ^ (slot << 32) ^ (game << 1);
                stats.merge(&play_table(sockets, seed, window).await);
            }
        }
    }
    stats
}

/// Creates and fills a lobby, connects both seats and starts the game.
async fn open_table(target: &Target, slot: u64, game: u64) -> Result<[Socket; 2], String> {
    let api = &target.api;
    let creator = api.create_lobby(&format!("load {slot}.{game}")).await?;
    let joiner = api.join(&creator.lobby).await?;
    let first = player::join(&target.server, &creator.lobby, Some(&creator.token)).await?;
    let second = player::join(&target.server, &joiner.lobby, Some(&joiner.token)).await?;
    api.start(&creator).await?;
    Ok([first, second])
}

/// Plays both seats of a started game to its end (or the window's); a game counts as
/// finished once, however many seats saw it end.
async fn play_table(sockets: [Socket; 2], seed: u64, window: Window) -> Stats {
    let [first, second] = sockets;
    let (mut stats, other) = tokio::join!(
        Player::new(first, seed, window).play(),
        Player::new(second, seed + 1, window).play()
    );
    let finished = stats.games_finished.max(other.games_finished);
    stats.merge(&other);
    stats.games_finished = finished;
    stats
}
