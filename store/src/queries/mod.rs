//! The store's queries, written once and compiled for each backend.
//!
//! This directory is not a module of its own: `postgres.rs` and `sqlite.rs` each include it
//! with `#[path]`, after defining `Db` (the sqlx driver), `BEGIN_WRITE` and
//! `BEGIN_SNAPSHOT`, `WRITES_COMMIT_TOGETHER`, `OUTSIDE_TRANSACTION`, `WRITER_SESSION`,
//! `EXPLAIN`, `plan_line`, `LOBBY_STATE`, `STORED_AT`, `INSERT_LOBBY` and
//! `write_moves_together`. So
//! every query exists twice with concrete types, with no generic bounds over sqlx's
//! traits, and both copies run the same SQL text: `$n` placeholders, which SQLite accepts
//! too, and only SQL that both dialects read the same way. The column types differ (see
//! `migrations/`), the values bound and read do not.
//!
//! Every write runs in a transaction begun with `BEGIN_WRITE` (on SQLite, in a savepoint
//! of the transaction all writes share: see `commit_groups`), and every read that takes
//! more than one statement in a snapshot begun with `BEGIN_SNAPSHOT`, so that a page of
//! matches and their seats, or a lobby and its seats, are read at one point in time.

// Column lists shared by several queries, as macros so that `concat!` can build each
// query's text at compile time (sqlx takes `&'static str` as audited SQL). Rows are read
// by column name, so these only need to name every column the decoder reads.

/// The columns `lobby_from_row` reads.
macro_rules! lobby_columns {
    () => {
        "id, name, is_public, invite_hash, seat_count, rules, clock, status, seed, deck_salt, \
         seq, created_at, started_at, finished_at"
    };
}

/// The columns `seat_from_row` reads.
macro_rules! seat_columns {
    () => {
        "seat, display_name, player_id, token_hash, creator, joined_at, control, control_seq, \
         bot"
    };
}

/// The columns `move_from_row` reads.
macro_rules! move_columns {
    () => {
        "seq, seat, command_id, move_json, created_at, origin"
    };
}

mod commit_groups;
mod lobbies;
mod matches;
mod moves;
mod players;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use sqlx::pool::{PoolConnectionMetadata, PoolOptions};
use sqlx::{Connection, Database, Pool, Row, Transaction};
use uuid::Uuid;

use super::{
    BEGIN_SNAPSHOT, BEGIN_WRITE, Db, EXPLAIN, INSERT_LOBBY, LOBBY_STATE, OUTSIDE_TRANSACTION,
    STORED_AT, WRITER_SESSION, WRITES_COMMIT_TOGETHER, plan_line,
};
use crate::convert::status_to_column;
use crate::{LobbyStatus, PoolStatus, StoreError, StoreOptions, sha256_hex};
use commit_groups::{CommitGroups, GroupWrite, WriterKind};

/// A row as this backend's driver returns it.
type DbRow = <Db as Database>::Row;

/// A connection of this backend.
type DbConnection = <Db as Database>::Connection;

/// A connection of the pool's, taken out of it for good (the pool may open another in
/// its place) and set up for writing batches (`WRITER_SESSION`): SQLite's one writer
/// and Postgres's batch connection both come from here.
async fn detached_writer_connection(pool: &Pool<Db>) -> Result<DbConnection, StoreError> {
    let mut connection = pool.acquire().await?.detach();
    sqlx::raw_sql(WRITER_SESSION)
        .execute(&mut connection)
        .await?;
    Ok(connection)
}

/// The future an `after_release` hook returns.
type ReleaseCheck<'c> = Pin<Box<dyn Future<Output = Result<bool, sqlx::Error>> + Send + 'c>>;

/// The pool settings both backends share.
///
/// When a call is abandoned (its operation timeout ran out, or its caller went away)
/// while a statement was in flight, its connection goes back to the pool with that
/// statement's reply still owed, and a rollback queued if a transaction was open. The
/// pool then pings it, which first waits for everything owed; on a database that has
/// gone silent that wait never ends and the connection's slot is lost for good. Worse,
/// sqlx queues no rollback for a call abandoned while its `BEGIN` was in flight, so once
/// that `BEGIN` lands the connection would serve the next caller inside a stale
/// transaction. So every release is checked here first, within a bound: a connection
/// that does not answer in time, or is still inside a transaction, is closed, and the
/// pool opens a fresh one when it needs it.
pub(crate) fn pool_options(options: &StoreOptions) -> PoolOptions<Db> {
    let check_timeout = options.release_check_timeout();
    PoolOptions::<Db>::new()
        .max_connections(options.max_connections)
        .acquire_timeout(options.acquire_timeout)
        .after_release(move |connection, metadata| {
            check_on_release(connection, metadata, check_timeout)
        })
}

/// Checks a released connection, at most for `limit`: the check's query first waits for
/// everything still owed on the connection, then `OUTSIDE_TRANSACTION` says whether it is
/// clean. A connection that fails the check, or does not answer in time, is closed.
fn check_on_release(
    connection: &mut DbConnection,
    _metadata: PoolConnectionMetadata,
    limit: Duration,
) -> ReleaseCheck<'_> {
    Box::pin(async move {
        let check = sqlx::raw_sql(OUTSIDE_TRANSACTION).fetch_one(&mut *connection);
        match tokio::time::timeout(limit, check).await {
            Ok(row) => row?.try_get::<bool, _>(0),
            Err(_) => Err(sqlx::Error::PoolTimedOut),
        }
    })
}

/// An open transaction on this backend: a transaction of its own, or, on a backend whose
/// writes commit together (`WRITES_COMMIT_TOGETHER`), a write in the shared one.
enum Tx {
    Alone(Transaction<'static, Db>),
    InGroup(GroupWrite),
}

impl Tx {
    /// Commits; a write in the shared transaction returns once the commit that holds it
    /// has succeeded.
    async fn commit(self) -> Result<(), StoreError> {
        match self {
            Tx::Alone(transaction) => Ok(transaction.commit().await?),
            Tx::InGroup(write) => write.commit().await,
        }
    }
}

impl std::ops::Deref for Tx {
    type Target = DbConnection;

    fn deref(&self) -> &DbConnection {
        match self {
            Tx::Alone(transaction) => transaction,
            Tx::InGroup(write) => write,
        }
    }
}

impl std::ops::DerefMut for Tx {
    fn deref_mut(&mut self) -> &mut DbConnection {
        match self {
            Tx::Alone(transaction) => transaction,
            Tx::InGroup(write) => write,
        }
    }
}

/// The connection pool, and every query of the store for this backend.
#[derive(Clone, Debug)]
pub(crate) struct SqlStore {
    pool: Pool<Db>,
    /// The group-commit writer's connection, taken from the pool and detached from it
    /// (see `write_batch_alone`); empty until the first batch, and after a failed one. Unused
    /// where writes commit together, since batches are then written like other writes.
    batch_connection: Arc<tokio::sync::Mutex<Option<DbConnection>>>,
    /// Where writes commit together (`WRITES_COMMIT_TOGETHER`), the one connection they
    /// all take turns on.
    commit_groups: Option<Arc<CommitGroups>>,
}

impl SqlStore {
    pub(crate) fn new(pool: Pool<Db>) -> Result<SqlStore, StoreError> {
        let commit_groups = match WRITES_COMMIT_TOGETHER {
            true => Some(Arc::new(CommitGroups::start(pool.clone())?)),
            false => None,
        };
        Ok(SqlStore {
            pool,
            batch_connection: Arc::default(),
            commit_groups,
        })
    }

    /// The pool, for the few statements a backend writes in its own dialect.
    #[allow(
        dead_code,
        reason = "only Postgres has such statements (the leases); this copy may be SQLite's"
    )]
    pub(crate) fn pool(&self) -> &Pool<Db> {
        &self.pool
    }

    pub(crate) async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Closes the pool, and the writers' connection once no write is using it (after
    /// committing what waits for a commit there).
    pub(crate) async fn close(&self) {
        self.pool.close().await;
        if let Some(connection) = self.batch_connection.lock().await.take() {
            let _ = connection.close().await;
        }
        if let Some(groups) = &self.commit_groups {
            groups.close().await;
        }
    }

    pub(crate) fn pool_status(&self) -> PoolStatus {
        PoolStatus {
            size: self.pool.size(),
            idle: u32::try_from(self.pool.num_idle()).unwrap_or(u32::MAX),
            max: self.pool.options().get_max_connections(),
        }
    }

    /// Replaces the invite codes that versions before migration 2 stored in clear by
    /// their hashes. Migration 2 listed those lobbies in `unhashed_invites`; each is
    /// claimed by deleting it from there, so that two servers starting on one database
    /// cannot hash a code twice, and the whole runs in one transaction, so that a crash
    /// leaves every code either still listed or hashed. After the first start this is
    /// one read of an empty table, so that starting needs no write (a read-only replica
    /// still opens, and its writes fail as they should).
    pub(crate) async fn hash_clear_invite_codes(&self) -> Result<(), StoreError> {
        let pending: Option<Uuid> =
            sqlx::query_scalar("SELECT lobby_id FROM unhashed_invites LIMIT 1")
                .fetch_optional(&self.pool)
                .await?;
        if pending.is_none() {
            return Ok(());
        }
        let mut tx = self.begin_write().await?;
        let claimed: Vec<Uuid> =
            sqlx::query_scalar("DELETE FROM unhashed_invites RETURNING lobby_id")
                .fetch_all(&mut *tx)
                .await?;
        for lobby in claimed {
            let code: Option<String> =
                sqlx::query_scalar("SELECT invite_hash FROM lobbies WHERE id = $1")
                    .bind(lobby)
                    .fetch_one(&mut *tx)
                    .await?;
            sqlx::query("UPDATE lobbies SET invite_hash = $1 WHERE id = $2")
                .bind(code.as_deref().map(sha256_hex))
                .bind(lobby)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn begin_write(&self) -> Result<Tx, StoreError> {
        self.begin_write_as(WriterKind::Other).await
    }

    /// Begins a write: a transaction of its own, or, where writes commit together, a
    /// write in the shared transaction, once it is this writer's turn (see
    /// `commit_groups`).
    async fn begin_write_as(&self, kind: WriterKind) -> Result<Tx, StoreError> {
        Ok(match &self.commit_groups {
            Some(groups) => Tx::InGroup(groups.begin(kind).await?),
            None => Tx::Alone(self.pool.begin_with(BEGIN_WRITE).await?),
        })
    }

    async fn begin_snapshot(&self) -> Result<Tx, StoreError> {
        Ok(Tx::Alone(self.pool.begin_with(BEGIN_SNAPSHOT).await?))
    }
}

/// Succeeds when a guarded lobby update changed its row. Every update that sets a lobby's
/// `seq` is guarded by `id = lobby AND status IN expected AND seq < new seq`; when it
/// changed nothing this says why: [`StoreError::NotFound`] when the lobby does not exist,
/// [`StoreError::NotOwner`] when it is live and another node owns it (Postgres in cluster
/// mode), otherwise [`StoreError::Conflict`] naming the status and `seq` it has.
///
/// Ownership comes before the `seq`: a node that lost a game and writes a `seq` the new
/// owner has already written must learn that it lost the game, not that its write was
/// made, which is what a conflict tells the server.
async fn ensure_lobby_updated(
    tx: &mut Tx,
    rows_affected: u64,
    lobby: Uuid,
    expected: &[LobbyStatus],
    seq: u64,
) -> Result<(), StoreError> {
    if rows_affected == 1 {
        return Ok(());
    }
    let row = sqlx::query(LOBBY_STATE)
        .bind(lobby)
        .fetch_optional(&mut **tx)
        .await?;
    let Some(row) = row else {
        return Err(StoreError::NotFound);
    };
    let status: String = row.try_get("status")?;
    let current_seq: i64 = row.try_get("seq")?;
    if row.try_get::<bool, _>("fenced")? {
        let owner: Option<String> = row.try_get("owner_node")?;
        let owner = owner.unwrap_or_default();
        return Err(StoreError::NotOwner(format!(
            "game {lobby} is owned by node {owner}; writing seq {seq} needs its lease"
        )));
    }
    let expected: Vec<&str> = expected.iter().copied().map(status_to_column).collect();
    let expected = expected.join(" or ");
    Err(StoreError::Conflict(format!(
        "lobby {lobby} is {status} at seq {current_seq}; writing seq {seq} needs it \
         {expected} with a lower seq"
    )))
}

/// Rows sorted by an id column, decoded and grouped by that id, keeping their order.
fn group_rows<T>(
    rows: &[DbRow],
    id_column: &str,
    decode: fn(&DbRow) -> Result<T, StoreError>,
) -> Result<HashMap<Uuid, Vec<T>>, StoreError> {
    let mut groups: HashMap<Uuid, Vec<T>> = HashMap::new();
    for row in rows {
        let id: Uuid = row.try_get(id_column)?;
        groups.entry(id).or_default().push(decode(row)?);
    }
    Ok(groups)
}
