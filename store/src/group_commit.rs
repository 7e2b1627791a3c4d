//! Group commit: the moves of many games written together, one durable commit for many.
//!
//! Every game's room writes its moves one at a time (it waits for one to be durable
//! before it accepts the next), so written alone each move would cost a transaction and
//! a flush of its own. Here one writer task takes every move queued since its last write
//! and writes them in one go: on Postgres one statement, on SQLite one transaction, each
//! one fsync. Each caller still gets its own answer, and only once the batch holding its
//! move has committed, so the server's invariant holds: nothing is acknowledged or
//! broadcast before it is durable.
//!
//! A batch holds at most one move per game, so that the guard on each game's `seq`
//! decides alone whether its move lands. When the batch as a whole is refused (a repeated
//! command id, a game that is no longer playing), its moves are written again one by one,
//! so that each gets the precise answer it would have had on its own. A move of a game
//! another node owns (cluster mode on Postgres) is left unwritten by the batch and then
//! refused alone with [`StoreError::NotOwner`], so a node that lost one game's lease
//! holds up no other game's moves.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use crate::{BackendStore, MoveRow, StoreError};

/// The most moves written in one batch: bounds a statement's size and a batch's latency.
const MOST_MOVES_PER_BATCH: usize = 512;

/// How many moves may wait for the writer. Each live game has at most one waiting, so
/// this is only reached with more games writing at once than this.
const QUEUE_CAPACITY: usize = 4096;

/// A move waiting to be written, with where its answer goes.
struct PendingMove {
    game: Uuid,
    row: MoveRow,
    reply: oneshot::Sender<Result<(), StoreError>>,
}

/// A write that runs on its own on the writer's runtime, beside the batches: the
/// transaction that ends a game. It answers its caller itself.
type SoloWrite = Box<dyn FnOnce(BackendStore) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// How many solo writes may wait for the writer: one per game ending at that moment.
const SOLO_QUEUE_CAPACITY: usize = 1024;

/// The handle rooms write through; the writer task stops once every handle is dropped.
#[derive(Clone, Debug)]
pub(crate) struct MoveWriter {
    queue: mpsc::Sender<PendingMove>,
    solo: mpsc::Sender<SoloWrite>,
}

impl MoveWriter {
    /// Starts the writer on a thread of its own, writing through the backend that
    /// `open` makes there. A batch that takes longer than `operation_timeout` is
    /// abandoned, as a single write would be (see `Store::bounded`).
    ///
    /// The writer has its own thread, runtime and (on Postgres) connections because a
    /// batch is several round trips to the database (BEGIN, a statement per 48 moves,
    /// COMMIT). On the server's runtime, the writer's task and the readiness of its
    /// socket would each wait their turn behind every ready connection task after every
    /// round trip, so that under load some batches took many times what the database
    /// spent on them, and those batches made the tail of the acknowledgement latency.
    /// Here nothing else runs between the writer's round trips. `open` runs on the
    /// writer's runtime so that a connection it opens is driven by that runtime; an
    /// SQLite connection has a thread of its own anyway, and the writer shares the
    /// store's.
    pub(crate) fn start(
        open: impl FnOnce() -> Result<BackendStore, StoreError> + Send + 'static,
        operation_timeout: Duration,
    ) -> Result<MoveWriter, StoreError> {
        let (queue, pending) = mpsc::channel(QUEUE_CAPACITY);
        let (solo, solo_pending) = mpsc::channel(SOLO_QUEUE_CAPACITY);
        let unstarted = |error: std::io::Error| {
            StoreError::Unavailable(format!("the move writer could not start: {error}"))
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(unstarted)?;
        let (opened, backend) = std::sync::mpsc::sync_channel(1);
        let writer = move || {
            let backend = runtime.block_on(async { open() });
            let _ = opened.send(backend.as_ref().map(|_| ()).map_err(Clone::clone));
            if let Ok(backend) = backend {
                let queues = Queues {
                    moves: pending,
                    solo: solo_pending,
                };
                runtime.block_on(write_batches(backend, queues, operation_timeout));
            }
        };
        std::thread::Builder::new()
            .name("move-writer".to_owned())
            .spawn(writer)
            .map_err(unstarted)?;
        let stopped = || StoreError::Unavailable("the move writer stopped at once".into());
        backend.recv().map_err(|_| stopped())??;
        Ok(MoveWriter { queue, solo })
    }

    /// Runs `write` on the writer's runtime and backend, beside the batches, and returns
    /// its answer. A game's last write goes this way: it is a transaction of a dozen
    /// statements, and on the server's runtime each of its round trips would wait behind
    /// every ready connection task, so that under load a game's last move would be
    /// acknowledged seconds late.
    pub(crate) async fn on_writer<T, W>(&self, write: W) -> Result<T, StoreError>
    where
        T: Send + 'static,
        W: FnOnce(BackendStore) -> Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send>>
            + Send
            + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: SoloWrite = Box::new(move |backend| {
            Box::pin(async move {
                let _ = reply.send(write(backend).await);
            })
        });
        let stopped = || StoreError::Unavailable("the move writer has stopped".into());
        self.solo.send(job).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    /// Queues `row` for `game` and waits until the batch holding it has committed.
    pub(crate) async fn append(&self, game: Uuid, row: MoveRow) -> Result<(), StoreError> {
        let (reply, answer) = oneshot::channel();
        let stopped = || StoreError::Unavailable("the move writer has stopped".into());
        self.queue
            .send(PendingMove { game, row, reply })
            .await
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

/// What the writer reads: moves to batch, and writes to run on their own.
struct Queues {
    moves: mpsc::Receiver<PendingMove>,
    solo: mpsc::Receiver<SoloWrite>,
}

/// The writer task: a batch at a time, until every handle is gone. Solo writes start as
/// they come, each on a task of its own on the writer's runtime, beside the batches: a
/// wave of games ending together (hundreds, when games started together) must not hold
/// up every other game's moves.
async fn write_batches(backend: BackendStore, mut queues: Queues, operation_timeout: Duration) {
    let mut held_over = Vec::new();
    let mut solo_writes = tokio::task::JoinSet::new();
    loop {
        while let Ok(write) = queues.solo.try_recv() {
            solo_writes.spawn(run_solo(backend.clone(), write, operation_timeout));
        }
        while solo_writes.try_join_next().is_some() {}
        if held_over.is_empty() {
            tokio::select! {
                Some(write) = queues.solo.recv() => {
                    solo_writes.spawn(run_solo(backend.clone(), write, operation_timeout));
                    continue;
                }
                first = queues.moves.recv() => match first {
                    Some(pending) => held_over.push(pending),
                    None => break,
                },
            }
        }
        let batch = next_batch(&mut queues.moves, &mut held_over);
        let moves: Vec<(Uuid, &MoveRow)> = batch.iter().map(|p| (p.game, &p.row)).collect();
        let answers = write_within(&backend, &moves, operation_timeout).await;
        let unreachable = unreachable_cause(&answers);
        for (pending, answer) in batch.into_iter().zip(answers) {
            // A caller that gave up waiting (its timeout ran out) is told nothing; the
            // room re-reads the stored `seq` to learn what happened.
            let _ = pending.reply.send(answer);
        }
        if let Some(cause) = unreachable {
            refuse_waiting_moves(&mut queues.moves, &mut held_over, &cause);
        }
    }
    // The runtime stops when this returns: solo writes still running finish first.
    solo_writes.join_all().await;
}

/// The cause, when every move of a batch was refused because the database could not be
/// reached.
fn unreachable_cause(answers: &[Result<(), StoreError>]) -> Option<String> {
    let mut causes = answers.iter().map(|answer| match answer {
        Err(StoreError::Unreachable(cause)) => Some(cause),
        _ => None,
    });
    let first = causes.next()??;
    causes.all(|cause| cause.is_some()).then(|| first.clone())
}

/// Refuses every move that queued while a batch found the database unreachable, at once
/// and truthfully (none was written). Each batch waits up to the pool's acquire timeout
/// for a connection; tried one batch after another, the moves queued behind the first
/// would each wait one timeout more, so that with a few games playing a command got its
/// `storage_unavailable` only after two or three timeouts. The next move to come tries
/// the database afresh.
fn refuse_waiting_moves(
    queue: &mut mpsc::Receiver<PendingMove>,
    held_over: &mut Vec<PendingMove>,
    cause: &str,
) {
    let waiting = std::mem::take(held_over)
        .into_iter()
        .chain(std::iter::from_fn(|| queue.try_recv().ok()));
    for pending in waiting {
        let refused = StoreError::Unreachable(format!("while this move waited: {cause}"));
        let _ = pending.reply.send(Err(refused));
    }
}

/// Runs a solo write, or drops it where it stands after `limit`, as `write_within` does
/// with a batch; its caller then hears that the writer could not answer.
async fn run_solo(backend: BackendStore, write: SoloWrite, limit: Duration) {
    let _ = tokio::time::timeout(limit, write(backend)).await;
}

/// Writes a batch, or gives up on it after `limit`: the write's future is then dropped
/// where it stands, which rolls back its transaction and frees its connection, so that a
/// database that went silent neither holds the writer nor lands the batch much later.
async fn write_within(
    backend: &BackendStore,
    moves: &[(Uuid, &MoveRow)],
    limit: Duration,
) -> Vec<Result<(), StoreError>> {
    match tokio::time::timeout(limit, backend.append_moves(moves)).await {
        Ok(answers) => answers,
        Err(_) => {
            let cause = format!("timed out: a batch of moves took longer than {limit:?}");
            vec![Err(StoreError::Unavailable(cause)); moves.len()]
        }
    }
}

/// The moves held over from the last batch and everything queued now, up to the batch
/// limit, at most one move per game: a second move of a game already in the batch is
/// held over for the next one.
fn next_batch(
    queue: &mut mpsc::Receiver<PendingMove>,
    held_over: &mut Vec<PendingMove>,
) -> Vec<PendingMove> {
    let mut batch = Batch::default();
    for pending in std::mem::take(held_over) {
        batch.take(pending);
    }
    while batch.moves.len() < MOST_MOVES_PER_BATCH {
        match queue.try_recv() {
            Ok(pending) => batch.take(pending),
            Err(_) => break,
        }
    }
    *held_over = batch.held_over;
    batch.moves
}

/// A batch being gathered.
#[derive(Default)]
struct Batch {
    moves: Vec<PendingMove>,
    games: HashSet<Uuid>,
    held_over: Vec<PendingMove>,
}

impl Batch {
    fn take(&mut self, pending: PendingMove) {
        if self.games.insert(pending.game) {
            self.moves.push(pending);
        } else {
            self.held_over.push(pending);
        }
    }
}
