//! The store's queries, written once for both backends.
//!
//! The queries are generic over the sqlx driver they run on, `DB`, and what differs
//! between the backends is the [`SqlBackend`] trait, which `sqlite.rs` implements for
//! `sqlx::Sqlite` and `postgres.rs` for `sqlx::Postgres`: how a write's transaction and a
//! snapshot begin, whether writes commit together, the few statements written in each
//! dialect, how a batch of moves is written, and how many rows a statement changed (which
//! sqlx leaves to each driver's result type). Everything else runs the same SQL text
//! on both: `$n` placeholders, which SQLite accepts too, and only SQL that both dialects
//! read the same way. The column types differ (see `migrations/`), the values bound and
//! read do not.
//!
//! Generic code rather than a macro that stamps the queries out once per driver, so that
//! they read, format and type-check as ordinary Rust; monomorphised, each backend still
//! runs code compiled for its own driver, with nothing boxed or dynamic on the way. The
//! price is the `where` clause on each block of queries: sqlx implements its `Encode`,
//! `Decode` and `Type` traits driver by driver, so generic code must say which Rust types
//! it binds and reads, and Rust does not carry a trait's `where` clauses to the code that
//! names the trait, so each block says it again. [`Bind`] and [`Column`] keep each such
//! bound to one line.
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
         seq, created_at, started_at, finished_at, rated, chat_policy"
    };
}

/// The columns `seat_from_row` reads.
macro_rules! seat_columns {
    () => {
        "seat, display_name, player_id, token_hash, creator, joined_at, control, control_seq, \
         bot"
    };
}

/// The columns `ticket_from_row` reads (the backends' `TAKE_WAITING_TICKETS` name them
/// too, outside this macro's reach).
macro_rules! ticket_columns {
    () => {
        "id, player_id, token_hash, display_name, min_players, max_players, rules, clock, \
         rated, match_key, rating, created_at, expires_at, status, lobby_id, seat"
    };
}

/// The columns `move_from_row` reads.
macro_rules! move_columns {
    () => {
        "seq, seat, command_id, move_json, created_at, origin"
    };
}

mod chat;
mod commit_groups;
mod lobbies;
mod matches;
mod moves;
mod players;
mod queue;
mod ratings;

use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use carcassonne_core::{Move, Rules};
use sqlx::pool::{PoolConnectionMetadata, PoolOptions};
use sqlx::types::Json;
use sqlx::{
    ColumnIndex, Connection, Database, Decode, Encode, Executor, IntoArguments, Pool, Row,
    Transaction, Type,
};
use uuid::Uuid;

use crate::convert::status_to_column;
use crate::error::BatchFailure;
use crate::{LobbyStatus, MoveRow, PoolStatus, StoreError, StoreOptions, TimeControl, sha256_hex};
use commit_groups::{CommitGroups, GroupWrite, WriterKind};

/// What differs between the backends, for the queries: implemented by the sqlx driver of
/// each, `sqlx::Sqlite` in `sqlite.rs` and `sqlx::Postgres` in `postgres.rs`, where each
/// value says why it is what it is.
///
/// The bounds on the driver's own types hold for both drivers and are what generic code
/// cannot assume: connections and rows print (the store's `Debug`, and an `expect`), and
/// a query's arguments are the driver's (`IntoArguments`, which sqlx says driver by
/// driver). Being bounds on the trait's own types, they need not be repeated where it is
/// used, unlike the `where` clauses of the queries.
pub(crate) trait SqlBackend:
    Database<Connection: Debug, Row: Debug, Arguments: IntoArguments<Self>>
{
    /// Begins every write's transaction.
    const BEGIN_WRITE: &'static str;

    /// Begins a read of several statements, which then see one snapshot.
    const BEGIN_SNAPSHOT: &'static str;

    /// Whether every write takes its turn on one connection, in a transaction shared with
    /// the writes around it (see `commit_groups`), rather than in a transaction of its own.
    const WRITES_COMMIT_TOGETHER: bool;

    /// A query whose one boolean column says whether the connection is outside any
    /// transaction, run when a connection comes back to the pool (see `check_on_release`).
    const OUTSIDE_TRANSACTION: &'static str;

    /// What the connection that writes the batches runs once, when it is opened (see
    /// `detached_writer_connection`).
    const WRITER_SESSION: &'static str;

    /// Put before a query to get its plan instead of its rows.
    const EXPLAIN: &'static str;

    /// Reads the lobby `$1`'s `status`, `seq` and `owner_node`, and whether another node
    /// owns it (`fenced`): what `ensure_lobby_updated` says when a guarded write changed
    /// nothing.
    const LOBBY_STATE: &'static str;

    /// What `SqlStore::stored_at` reads of game `$1` at update `$2`: the game's `seq`,
    /// `owner_node` and `owner_alive`, and the `seat` and `command_id` of the move stored
    /// at `$2`, if one is.
    const STORED_AT: &'static str;

    /// Inserts a lobby: `$1` to `$16` are the columns of `lobby_columns!`, in its order.
    const INSERT_LOBBY: &'static str;

    /// Run first in a matchmaking round: one boolean column, true when this round may go
    /// on (no other node's matchmaker is in a round).
    const QUEUE_ROUND_TURN: &'static str;

    /// Takes the waiting tickets for a matchmaking round, oldest first, at most `$1`: the
    /// columns of `ticket_columns!`, and on Postgres a lock on each.
    const TAKE_WAITING_TICKETS: &'static str;

    /// One line of the plan that `EXPLAIN` returns, from one of its rows.
    fn plan_line(row: &Self::Row) -> Result<String, StoreError>;

    /// How many rows a statement changed: each driver's result has a method of its own
    /// for it, which no sqlx trait names.
    fn rows_affected(result: &Self::QueryResult) -> u64;

    /// Writes moves of different games together on `connection`: whether each move was
    /// written, in order (see `SqlStore::append_moves` for the moves left unwritten).
    fn write_moves_together(
        connection: &mut Self::Connection,
        moves: &[(Uuid, &MoveRow)],
    ) -> impl Future<Output = Result<Vec<bool>, BatchFailure>> + Send;
}

/// A Rust value that the queries bind as a parameter on driver `DB`.
pub(crate) trait Bind<DB: Database>: for<'t> Encode<'t, DB> + Type<DB> {}

impl<DB: Database, T: for<'t> Encode<'t, DB> + Type<DB>> Bind<DB> for T {}

/// A Rust value that the queries bind as a parameter and read back from a column on
/// driver `DB`.
pub(crate) trait Column<DB: Database>: Bind<DB> + for<'r> Decode<'r, DB> {}

impl<DB: Database, T: Bind<DB> + for<'r> Decode<'r, DB>> Column<DB> for T {}

/// A connection of the pool's, taken out of it for good (the pool may open another in
/// its place) and set up for writing batches (`WRITER_SESSION`): SQLite's one writer
/// and Postgres's batch connection both come from here.
async fn detached_writer_connection<DB: SqlBackend>(
    pool: &Pool<DB>,
) -> Result<DB::Connection, StoreError>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    let mut connection = pool.acquire().await?.detach();
    sqlx::raw_sql(DB::WRITER_SESSION)
        .execute(&mut connection)
        .await?;
    Ok(connection)
}

/// The future an `after_release` hook returns.
type ReleaseCheck<'c> = Pin<Box<dyn Future<Output = Result<bool, sqlx::Error>> + Send + 'c>>;

/// An open transaction on this backend: a transaction of its own, or, on a backend whose
/// writes commit together (`WRITES_COMMIT_TOGETHER`), a write in the shared one.
enum Tx<DB: SqlBackend> {
    Alone(Transaction<'static, DB>),
    InGroup(GroupWrite<DB>),
}

impl<DB: SqlBackend> Tx<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    /// Commits; a write in the shared transaction returns once the commit that holds it
    /// has succeeded.
    async fn commit(self) -> Result<(), StoreError> {
        match self {
            Tx::Alone(transaction) => Ok(transaction.commit().await?),
            Tx::InGroup(write) => write.commit().await,
        }
    }
}

impl<DB: SqlBackend> std::ops::Deref for Tx<DB> {
    type Target = DB::Connection;

    fn deref(&self) -> &DB::Connection {
        match self {
            Tx::Alone(transaction) => transaction,
            Tx::InGroup(write) => write,
        }
    }
}

impl<DB: SqlBackend> std::ops::DerefMut for Tx<DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        match self {
            Tx::Alone(transaction) => transaction,
            Tx::InGroup(write) => write,
        }
    }
}

/// The connection pool, and every query of the store, on the backend whose driver is `DB`.
#[derive(Debug)]
pub(crate) struct SqlStore<DB: SqlBackend> {
    pool: Pool<DB>,
    /// The group-commit writer's connection, taken from the pool and detached from it
    /// (see `write_batch_alone`); empty until the first batch, and after a failed one. Unused
    /// where writes commit together, since batches are then written like other writes.
    batch_connection: Arc<tokio::sync::Mutex<Option<DB::Connection>>>,
    /// Where writes commit together (`WRITES_COMMIT_TOGETHER`), the one connection they
    /// all take turns on.
    commit_groups: Option<Arc<CommitGroups<DB>>>,
}

// By hand: a derived `Clone` would need the driver's type to be `Clone`, which sqlx's are
// not, though no value of it is ever cloned.
impl<DB: SqlBackend> Clone for SqlStore<DB> {
    fn clone(&self) -> SqlStore<DB> {
        SqlStore {
            pool: self.pool.clone(),
            batch_connection: Arc::clone(&self.batch_connection),
            commit_groups: self.commit_groups.clone(),
        }
    }
}

impl<DB: SqlBackend> SqlStore<DB> {
    /// The pool, for the few statements a backend writes in its own dialect.
    pub(crate) fn pool(&self) -> &Pool<DB> {
        &self.pool
    }

    pub(crate) fn pool_status(&self) -> PoolStatus {
        PoolStatus {
            size: self.pool.size(),
            idle: u32::try_from(self.pool.num_idle()).unwrap_or(u32::MAX),
            max: self.pool.options().get_max_connections(),
        }
    }
}

// Every block of queries below, here and in the submodules, has this `where` clause: the
// driver runs statements on `&mut` a connection, and binds and reads these Rust types.
impl<DB: SqlBackend> SqlStore<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'a> &'a str: Bind<DB> + Decode<'a, DB> + ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
    Uuid: Column<DB>,
    String: Column<DB>,
    bool: Column<DB>,
    i16: Column<DB>,
    i32: Column<DB>,
    i64: Column<DB>,
    f64: Column<DB>,
    Option<Uuid>: Bind<DB>,
    Option<String>: Bind<DB>,
    Option<i64>: Bind<DB>,
    Json<Rules>: Column<DB>,
    Json<TimeControl>: Column<DB>,
    Json<Move>: Column<DB>,
    Json<serde_json::Value>: Column<DB>,
    for<'a> Json<&'a Rules>: Bind<DB>,
    for<'a> Json<&'a TimeControl>: Bind<DB>,
    for<'a> Json<&'a Move>: Bind<DB>,
    for<'a> Json<&'a serde_json::Value>: Bind<DB>,
{
    pub(crate) fn new(pool: Pool<DB>) -> Result<SqlStore<DB>, StoreError> {
        let commit_groups = match DB::WRITES_COMMIT_TOGETHER {
            true => Some(Arc::new(CommitGroups::start(pool.clone())?)),
            false => None,
        };
        Ok(SqlStore {
            pool,
            batch_connection: Arc::default(),
            commit_groups,
        })
    }

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
    pub(crate) fn pool_options(options: &StoreOptions) -> PoolOptions<DB> {
        let check_timeout = options.release_check_timeout();
        PoolOptions::<DB>::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .after_release(move |connection, metadata| {
                Self::check_on_release(connection, metadata, check_timeout)
            })
    }

    /// Checks a released connection, at most for `limit`: the check's query first waits for
    /// everything still owed on the connection, then `OUTSIDE_TRANSACTION` says whether it is
    /// clean. A connection that fails the check, or does not answer in time, is closed.
    fn check_on_release(
        connection: &mut DB::Connection,
        _metadata: PoolConnectionMetadata,
        limit: Duration,
    ) -> ReleaseCheck<'_> {
        Box::pin(async move {
            let check = sqlx::raw_sql(DB::OUTSIDE_TRANSACTION).fetch_one(&mut *connection);
            match tokio::time::timeout(limit, check).await {
                Ok(row) => row?.try_get::<bool, _>(0),
                Err(_) => Err(sqlx::Error::PoolTimedOut),
            }
        })
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

    async fn begin_write(&self) -> Result<Tx<DB>, StoreError> {
        self.begin_write_as(WriterKind::Other).await
    }

    /// Begins a write: a transaction of its own, or, where writes commit together, a
    /// write in the shared transaction, once it is this writer's turn (see
    /// `commit_groups`).
    async fn begin_write_as(&self, kind: WriterKind) -> Result<Tx<DB>, StoreError> {
        Ok(match &self.commit_groups {
            Some(groups) => Tx::InGroup(groups.begin(kind).await?),
            None => Tx::Alone(self.pool.begin_with(DB::BEGIN_WRITE).await?),
        })
    }

    async fn begin_snapshot(&self) -> Result<Tx<DB>, StoreError> {
        Ok(Tx::Alone(self.pool.begin_with(DB::BEGIN_SNAPSHOT).await?))
    }

    /// Succeeds when a guarded lobby update changed its row. Every update that sets a
    /// lobby's `seq` is guarded by `id = lobby AND status IN expected AND seq < new seq`;
    /// when it changed nothing this says why: [`StoreError::NotFound`] when the lobby does
    /// not exist, [`StoreError::NotOwner`] when it is live and another node owns it
    /// (Postgres in cluster mode), otherwise [`StoreError::Conflict`] naming the status
    /// and `seq` it has.
    ///
    /// Ownership comes before the `seq`: a node that lost a game and writes a `seq` the new
    /// owner has already written must learn that it lost the game, not that its write was
    /// made, which is what a conflict tells the server.
    async fn ensure_lobby_updated(
        tx: &mut Tx<DB>,
        rows_affected: u64,
        lobby: Uuid,
        expected: &[LobbyStatus],
        seq: u64,
    ) -> Result<(), StoreError> {
        if rows_affected == 1 {
            return Ok(());
        }
        let row = sqlx::query(DB::LOBBY_STATE)
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
        rows: &[DB::Row],
        id_column: &str,
        decode: fn(&DB::Row) -> Result<T, StoreError>,
    ) -> Result<HashMap<Uuid, Vec<T>>, StoreError> {
        let mut groups: HashMap<Uuid, Vec<T>> = HashMap::new();
        for row in rows {
            let id: Uuid = row.try_get(id_column)?;
            groups.entry(id).or_default().push(decode(row)?);
        }
        Ok(groups)
    }
}
