//! Writes that commit together, for a backend that writes one transaction at a time
//! (SQLite): every write of the store runs on one connection, in turn, inside one open
//! transaction, each in a savepoint of its own, and a committer thread commits whatever
//! has gathered there, one fsync for all of it. Each write still returns only once the
//! commit that holds it has succeeded, so the server's invariant holds: nothing is
//! acknowledged before it is durable.
//!
//! Were each write a transaction with an fsync of its own, on whichever pool connection
//! it got, a game's set-up and end would take four fsyncs besides its moves' batches, and
//! every commit from one connection would empty the page cache of all the others, which
//! then read their pages again. One connection keeps its cache warm, and a commit writes
//! each changed page once for every write of the group.
//!
//! A write that fails, or is abandoned, is undone alone: its savepoint is rolled back
//! before anything else runs on the connection (the first write of a transaction, which
//! needs no savepoint, rolls back the whole transaction, which holds nothing else). A
//! write must stop at its first error: SQLite rolls back the whole transaction on some
//! (a full disk, an I/O error), and statements run after that would commit one by one.
//! When anything but a write's own statements fails (its undo, the commit), the
//! connection is closed, which rolls back the whole transaction, and every write waiting
//! for it is told so ([`StoreError::Unavailable`]: it was not written).

use std::sync::Arc;

use sqlx::{Connection, Executor};
use tokio::sync::{Mutex, OwnedMutexGuard, OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use super::{SqlBackend, detached_writer_connection};
use crate::StoreError;

/// The writer's connection, shared by every write of a store, and the thread that
/// commits what they write.
#[derive(Debug)]
pub(super) struct CommitGroups<DB: SqlBackend> {
    writer: Arc<Mutex<Writer<DB>>>,
    /// Held by the first writers other than the move writer's batches, from before they
    /// wait for their turn until their write ends.
    others: Arc<Semaphore>,
    wake_committer: mpsc::Sender<()>,
    pool: sqlx::Pool<DB>,
}

/// Who asks to write: the move writer's batches go ahead of all but the first few others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WriterKind {
    Batch,
    Other,
}

/// How many writers other than the batches may queue for the connection at once. A batch
/// carries the moves of many games, and a wave of games ending together (400 games
/// started together end together) would otherwise queue hundreds of last writes ahead of
/// it; with eight, the others cannot starve while batches keep coming.
const OTHERS_AHEAD_OF_A_BATCH: usize = 8;

/// The state behind the writers' turns.
#[derive(Debug)]
struct Writer<DB: SqlBackend> {
    /// Taken from the pool and detached from it; `None` until the first write, and after
    /// a failure closed it.
    connection: Option<DB::Connection>,
    /// Whether the connection is inside the shared transaction.
    in_transaction: bool,
    /// What the last write left to undo: it ended without committing.
    to_undo: Option<Undo>,
    /// The writes in the open transaction, each waiting to hear how its commit went.
    waiting: Vec<oneshot::Sender<Result<(), StoreError>>>,
    /// Set by `close`: no write starts after it.
    closed: bool,
}

/// What an unfinished write leaves to undo.
#[derive(Clone, Copy, Debug)]
enum Undo {
    /// Its savepoint, inside a transaction that others' writes share.
    Savepoint,
    /// The whole transaction, which it began and holds nothing else.
    Transaction,
}

// By hand: a derived `Default` would need the driver's type to be `Default`.
impl<DB: SqlBackend> Default for Writer<DB> {
    fn default() -> Writer<DB> {
        Writer {
            connection: None,
            in_transaction: false,
            to_undo: None,
            waiting: Vec::new(),
            closed: false,
        }
    }
}

impl<DB: SqlBackend> CommitGroups<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    /// Starts the committer on a thread of its own, so that a commit never waits behind
    /// the tasks of a busy runtime: every write's answer waits for it. The thread stops
    /// once the store (with every write it started) is gone, after a last commit.
    pub(super) fn start(pool: sqlx::Pool<DB>) -> Result<CommitGroups<DB>, StoreError> {
        let writer = Arc::new(Mutex::new(Writer::default()));
        let (wake_committer, wakes) = mpsc::channel(1);
        let unstarted = |error: std::io::Error| {
            StoreError::Unavailable(format!("the committer could not start: {error}"))
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .map_err(unstarted)?;
        let committed = Arc::clone(&writer);
        std::thread::Builder::new()
            .name("group-commit".to_owned())
            .spawn(move || runtime.block_on(commit_when_woken(committed, wakes)))
            .map_err(unstarted)?;
        Ok(CommitGroups {
            writer,
            others: Arc::new(Semaphore::new(OTHERS_AHEAD_OF_A_BATCH)),
            wake_committer,
            pool,
        })
    }

    /// Waits for the connection, in the order asked (see [`WriterKind`]), and starts a
    /// write on it: the shared transaction if none is open, else a savepoint in it.
    pub(super) async fn begin(&self, kind: WriterKind) -> Result<GroupWrite<DB>, StoreError> {
        let place = match kind {
            WriterKind::Batch => None,
            WriterKind::Other => {
                let place = self.others.clone().acquire_owned().await;
                Some(place.expect("the others' places are never closed"))
            }
        };
        let mut writer = self.writer.clone().lock_owned().await;
        writer.settle().await;
        if writer.closed {
            return Err(sqlx::Error::PoolClosed.into());
        }
        if writer.connection.is_none() {
            writer.connection = Some(detached_writer_connection(&self.pool).await?);
        }
        let savepoint = writer.in_transaction;
        let (begin, undo) = match savepoint {
            true => ("SAVEPOINT write", Undo::Savepoint),
            false => (DB::BEGIN_WRITE, Undo::Transaction),
        };
        // Should this call be abandoned while its `BEGIN` or `SAVEPOINT` is in flight,
        // the statement still runs, and the next turn undoes it.
        writer.to_undo = Some(undo);
        if let Err(error) = writer.execute(begin).await {
            writer.abandon(&error);
            return Err(error.into());
        }
        writer.to_undo = None;
        writer.in_transaction = true;
        Ok(GroupWrite {
            writer,
            savepoint,
            committed: false,
            wake_committer: self.wake_committer.clone(),
            _place_among_others: place,
        })
    }

    /// Commits what is waiting, closes the connection, and refuses writes from now on.
    pub(super) async fn close(&self) {
        let mut writer = self.writer.lock().await;
        writer.settle_and_commit().await;
        writer.closed = true;
        if let Some(connection) = writer.connection.take() {
            let _ = connection.close().await;
        }
    }
}

/// The committer: each time a write ends, it waits for its turn on the connection (after
/// the writes already queued, which so join the group) and commits.
async fn commit_when_woken<DB: SqlBackend>(
    writer: Arc<Mutex<Writer<DB>>>,
    mut wakes: mpsc::Receiver<()>,
) where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    while wakes.recv().await.is_some() {
        writer.lock().await.settle_and_commit().await;
    }
    writer.lock().await.settle_and_commit().await;
}

/// Why a write's connection is there: `begin` opens it before it hands out the write,
/// and only `abandon` takes it, never while a write holds it.
const HELD_BY_THE_WRITE: &str = "a write holds the connection from its start to its end";

impl<DB: SqlBackend> Writer<DB> {
    fn connection(&mut self) -> &mut DB::Connection {
        self.connection.as_mut().expect(HELD_BY_THE_WRITE)
    }
}

impl<DB: SqlBackend> Writer<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    async fn execute(&mut self, statements: &'static str) -> Result<(), sqlx::Error> {
        sqlx::raw_sql(statements).execute(self.connection()).await?;
        Ok(())
    }

    /// What the committer does in its turn: undoes what the last write left unfinished,
    /// then commits what the others wrote.
    async fn settle_and_commit(&mut self) {
        self.settle().await;
        self.commit().await;
    }

    /// Undoes what the last write left unfinished.
    async fn settle(&mut self) {
        let Some(undo) = self.to_undo.take() else {
            return;
        };
        let statements = match undo {
            Undo::Savepoint => "ROLLBACK TO write; RELEASE write",
            Undo::Transaction => "ROLLBACK",
        };
        match self.execute(statements).await {
            Ok(()) if matches!(undo, Undo::Transaction) => self.in_transaction = false,
            Ok(()) => {}
            Err(error) => self.abandon(&error),
        }
    }

    /// Commits the open transaction, and tells every write in it how that went.
    async fn commit(&mut self) {
        if !self.in_transaction {
            return;
        }
        match self.execute("COMMIT").await {
            Ok(()) => {
                self.in_transaction = false;
                for reply in self.waiting.drain(..) {
                    let _ = reply.send(Ok(()));
                }
            }
            Err(error) => self.abandon(&error),
        }
    }

    /// Closes the connection, which rolls back its transaction, and tells every write
    /// waiting for that transaction that it was not written.
    fn abandon(&mut self, cause: &sqlx::Error) {
        self.connection = None;
        self.in_transaction = false;
        self.to_undo = None;
        let error = StoreError::Unavailable(format!(
            "the shared write transaction was rolled back: {cause}"
        ));
        for reply in self.waiting.drain(..) {
            let _ = reply.send(Err(error.clone()));
        }
    }
}

/// One write in the shared transaction: it holds the connection until it commits or is
/// dropped, and a drop without a commit leaves it to be undone.
#[derive(Debug)]
pub(super) struct GroupWrite<DB: SqlBackend> {
    writer: OwnedMutexGuard<Writer<DB>>,
    /// Whether the write runs in a savepoint, rather than as the transaction's first.
    savepoint: bool,
    committed: bool,
    wake_committer: mpsc::Sender<()>,
    _place_among_others: Option<OwnedSemaphorePermit>,
}

impl<DB: SqlBackend> GroupWrite<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    /// Ends the write and waits for the commit that holds it.
    pub(super) async fn commit(mut self) -> Result<(), StoreError> {
        if self.savepoint {
            self.writer.execute("RELEASE write").await?;
        }
        let (reply, answer) = oneshot::channel();
        self.writer.waiting.push(reply);
        self.committed = true;
        drop(self);
        let closed =
            || StoreError::Unavailable("the store closed before the write committed".into());
        answer.await.map_err(|_| closed())?
    }
}

impl<DB: SqlBackend> std::ops::Deref for GroupWrite<DB> {
    type Target = DB::Connection;

    fn deref(&self) -> &DB::Connection {
        self.writer.connection.as_ref().expect(HELD_BY_THE_WRITE)
    }
}

impl<DB: SqlBackend> std::ops::DerefMut for GroupWrite<DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        self.writer.connection()
    }
}

impl<DB: SqlBackend> Drop for GroupWrite<DB> {
    fn drop(&mut self) {
        if !self.committed {
            self.writer.to_undo = Some(match self.savepoint {
                true => Undo::Savepoint,
                false => Undo::Transaction,
            });
        }
        // A full channel already holds a wake-up, which is all the committer needs.
        let _ = self.wake_committer.try_send(());
    }
}
