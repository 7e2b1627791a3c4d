//! The bot pool: bots think on a few OS threads of their own, off the tokio runtime and
//! at a lowered priority (nice 10 on Linux), so that their thinking never delays the
//! handling of moves. A request's thinking time starts when it is made: time spent
//! queueing behind other bots comes out of it, so a busy server makes bots think less,
//! never answer later (`mcts` past its deadline plays its greedy move at once).

use carcassonne_bots::{BotLevel, choose_move, deadline_after};
use carcassonne_core::{HiddenGame, Move};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// The niceness of the bot threads: below every request handler, above idle work.
pub const BOT_NICENESS: i32 = 10;

/// A bounded pool of bot threads; cheap to clone (clones share the threads).
#[derive(Clone, Debug)]
pub struct BotPool {
    /// `None` when the threads could not be started: every request then gets `None`.
    pool: Option<Arc<rayon::ThreadPool>>,
}

impl BotPool {
    /// A pool of `threads` threads (at least one).
    pub fn new(threads: usize) -> BotPool {
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .thread_name(|index| format!("bot-{index}"))
            .start_handler(|_| lower_this_threads_priority())
            .build();
        match built {
            Ok(pool) => BotPool {
                pool: Some(Arc::new(pool)),
            },
            Err(error) => {
                tracing::error!(%error, "cannot start the bot threads; bots will not move");
                BotPool { pool: None }
            }
        }
    }

    /// Thinks on the pool; `think` starts counting now (queueing eats into it, so a busy
    /// server degrades bot thinking time, never latency). Never blocks the runtime. The
    /// bot's generator is a [`ChaCha8Rng`] seeded with `seed`. `None` only if the pool
    /// is gone.
    pub async fn choose(
        &self,
        level: BotLevel,
        view: HiddenGame,
        think: Duration,
        seed: u64,
    ) -> Option<Move> {
        let deadline = deadline_after(think);
        let (reply, answer) = oneshot::channel();
        self.pool.as_ref()?.spawn(move || {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            // The requester may have stopped waiting; then nobody needs the move.
            let _ = reply.send(choose_move(level, &view, deadline, &mut rng));
        });
        answer.await.ok()
    }
}

/// Lowers the calling thread's scheduling priority to [`BOT_NICENESS`]. On Linux the
/// niceness belongs to each thread, so this leaves the runtime's threads alone.
#[cfg(target_os = "linux")]
fn lower_this_threads_priority() {
    // SAFETY: setpriority only reads its integer arguments; `who = 0` is this thread.
    let result = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, BOT_NICENESS) };
    if result != 0 {
        tracing::warn!("cannot lower the priority of a bot thread");
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_this_threads_priority() {}

#[cfg(test)]
mod tests {
    use super::*;
    use carcassonne_core::{Game, Rules, Setup, Stack};
    use std::time::Instant;

    fn view(seed: u64) -> HiddenGame {
        let setup = Setup {
            rules: Rules::default(),
            players: 2,
            stack: Stack::Seeded(seed),
        };
        Game::new(setup).expect("a valid setup").hidden()
    }

    #[tokio::test]
    async fn the_pool_answers_with_a_legal_move() {
        let pool = BotPool::new(2);
        for level in BotLevel::ALL {
            let view = view(1);
            let chosen = pool
                .choose(level, view.clone(), Duration::from_millis(20), 1)
                .await
                .expect("the pool is up");
            assert!(view.game().legal_moves().contains(&chosen), "{level}");
        }
    }

    #[tokio::test]
    async fn time_spent_queueing_comes_out_of_the_thinking_time() {
        let bots = BotPool::new(1);
        // The pool's one thread is busy until the test lets it go.
        let (release, released) = std::sync::mpsc::channel::<()>();
        let thread = bots.pool.as_ref().expect("threads start");
        thread.spawn(move || {
            let _ = released.recv();
        });
        let think = Duration::from_millis(300);
        let asking = tokio::spawn({
            let bots = bots.clone();
            async move { bots.choose(BotLevel::Mcts, view(1), think, 1).await }
        });
        // The request's whole thinking time passes while it waits for the thread.
        tokio::time::sleep(think + Duration::from_millis(100)).await;
        let released_at = Instant::now();
        release.send(()).expect("the blocker waits");
        let chosen = asking.await.expect("the request finishes");
        assert!(chosen.is_some());
        // Past its deadline `mcts` plays its greedy move at once; had the thinking time
        // started when the thread took the request, this would take all of `think`.
        let answered_in = released_at.elapsed();
        assert!(answered_in < think, "{answered_in:?}");
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn bot_threads_run_at_a_lowered_priority() {
        let pool = BotPool::new(1).pool.expect("threads start");
        let (reply, answer) = oneshot::channel();
        pool.spawn(move || {
            // SAFETY: getpriority only reads its integer arguments.
            let _ = reply.send(unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) });
        });
        assert!(answer.await.expect("an answer") >= BOT_NICENESS);
    }
}
