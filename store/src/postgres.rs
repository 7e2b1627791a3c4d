//! The Postgres backend: its connection settings, what its queries do differently (the
//! [`SqlBackend`] of `sqlx::Postgres`), and how it writes a batch of moves.

use std::collections::HashSet;
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions, PgQueryResult, PgRow};
use sqlx::{Connection, Row};
use uuid::Uuid;

use crate::convert::{TextColumn, fit};
use crate::error::BatchFailure;
use crate::queries::{SqlBackend, SqlStore};
use crate::{Backend, MoveRow, StoreError, StoreOptions, schema};

impl SqlBackend for sqlx::Postgres {
    /// Postgres locks rows as statements reach them, so a plain transaction is enough for
    /// writes.
    const BEGIN_WRITE: &'static str = "BEGIN";

    /// Reads that take several statements (a page and its seats) see one snapshot.
    const BEGIN_SNAPSHOT: &'static str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

    /// Postgres's writers lock only the rows they change, and need not take turns: each
    /// write is a transaction of its own, and the moves' batches run on their own
    /// connection.
    const WRITES_COMMIT_TOGETHER: bool = false;

    /// True on a connection outside any transaction block. A simple query outside a block
    /// is a transaction of its own, which starts with the statement; inside a block left
    /// open, the transaction started earlier.
    const OUTSIDE_TRANSACTION: &'static str = "SELECT now() = statement_timestamp()";

    /// Run on the batches' connection (see `SqlStore::write_batch_alone`). The batch
    /// statement's plan is the one Postgres caches after a few executions, made from the
    /// statistics of that moment: on a new database that is a table of a few lobbies,
    /// which a sequential scan reads more cheaply than the primary key, and the plan
    /// stayed so while the table grew. Each statement then read every lobby, finished ones
    /// included, evaluating the guard's filter on each (`auto_explain` shows it). The batch
    /// only ever reaches lobbies by their key, so on this one session the planner is told
    /// to scan a table whole only when nothing else can serve.
    const WRITER_SESSION: &'static str = "SET enable_seqscan = off";

    const EXPLAIN: &'static str = "EXPLAIN";

    /// Whether another node owns the lobby: it is live, with an owner that is not the node
    /// this session names (see migration 4).
    const LOBBY_STATE: &'static str = "\
        SELECT status, seq, owner_node, \
               (status IN ('open', 'playing') AND owner_node IS NOT NULL \
                AND owner_node IS DISTINCT FROM current_setting('carcassonne.node', true)) \
               AS fenced \
        FROM lobbies WHERE id = $1";

    /// Whether the owner's lease is live is read on this database's clock.
    const STORED_AT: &'static str = "\
        SELECT lobbies.seq, lobbies.owner_node, \
               COALESCE(cluster_nodes.alive_until >= now(), FALSE) AS owner_alive, \
               moves.seat, moves.command_id \
        FROM lobbies \
        LEFT JOIN cluster_nodes ON cluster_nodes.node = lobbies.owner_node \
        LEFT JOIN moves ON moves.game_id = lobbies.id AND moves.seq = $2 \
        WHERE lobbies.id = $1";

    /// A new lobby belongs to the node that creates it (the session's `carcassonne.node`,
    /// set by a cluster node's store), from its first row: there is no moment in which
    /// another node could take it as a game without an owner. A single node's lobbies have
    /// none.
    /// One matchmaker at a time across the cluster: a round that cannot take the lock
    /// (held until its transaction ends) is skipped, rather than have two nodes split the
    /// waiting tickets between them and each find too few to match. The number is the
    /// queue's own lock key, used nowhere else.
    const QUEUE_ROUND_TURN: &'static str = "SELECT pg_try_advisory_xact_lock(7298101)";

    /// Locked for the round; `SKIP LOCKED` passes over a ticket its owner is cancelling
    /// right now rather than wait for it.
    const TAKE_WAITING_TICKETS: &'static str = "\
        SELECT id, player_id, token_hash, display_name, min_players, max_players, rules, clock, \
        rated, match_key, rating, created_at, expires_at, status, lobby_id, seat \
        FROM queue_tickets WHERE status = 'waiting' ORDER BY created_at, id LIMIT $1 \
        FOR UPDATE SKIP LOCKED";

    const INSERT_LOBBY: &'static str = "\
        INSERT INTO lobbies (id, name, is_public, invite_hash, seat_count, rules, clock, \
        status, seed, deck_salt, seq, created_at, started_at, finished_at, rated, chat_policy, \
        owner_node) \
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
        NULLIF(current_setting('carcassonne.node', true), ''))";

    fn rows_affected(result: &PgQueryResult) -> u64 {
        result.rows_affected()
    }

    /// Postgres gives each line of the plan as a row of one text column.
    fn plan_line(row: &PgRow) -> Result<String, StoreError> {
        Ok(row.try_get(0)?)
    }

    /// One transaction, one statement per 48 moves. Round trips are what a Postgres write
    /// costs most, and a batch of any size takes a few.
    async fn write_moves_together(
        connection: &mut PgConnection,
        moves: &[(Uuid, &MoveRow)],
    ) -> Result<Vec<bool>, BatchFailure> {
        // In a transaction rather than as lone statements, so that a write looks like every
        // other on the wire (BEGIN ... COMMIT), a lost COMMIT reply is settled the same way,
        // and the batch commits (and waits for its fsync) once.
        let mut tx = connection
            .begin_with(Self::BEGIN_WRITE)
            .await
            .map_err(BatchFailure::before_commit)?;
        let mut written = HashSet::new();
        for chunk in moves.chunks(MOST_MOVES_PER_STATEMENT) {
            written.extend(write_chunk(&mut tx, chunk).await?);
        }
        tx.commit().await.map_err(BatchFailure::at_commit)?;
        Ok(moves
            .iter()
            .map(|(game, _)| written.contains(game))
            .collect())
    }
}

/// Writes a batch of moves, each of a different game, in one statement: the guarded
/// update of every game's `seq`, then the insert of the moves whose game it advanced.
/// Which moves were written comes back in the statement's rows; a repeated command id
/// fails the whole statement, and nothing is written. A game owned by another node is
/// left out by the guard rather than refused by the fencing trigger, which would fail the
/// whole statement: its move comes back unwritten, and its own write then gets
/// [`StoreError::NotOwner`].
///
/// The guard on `lobbies` is written so that no index but the primary key can serve it:
/// the status as `NOT IN` the other three (the check constraint allows only four) rather
/// than `= 'playing'`, and the owner through `COALESCE`. Spelled plainly, both match a
/// partial index over live lobbies, and on a table not yet analyzed (a fresh database
/// under load) the planner guessed that index held one row: it read every live lobby
/// and compared each with every move of the chunk, several times the cost of the whole
/// write with hundreds of games live. Probing the primary key once per move costs the
/// same at any table size.
const WRITE_MOVES: &str = "\
    WITH batch AS ( \
        SELECT * FROM unnest($1::uuid[], $2::int8[], $3::int2[], $4::text[], $5::text[], \
                             $6::int8[], $7::text[]) \
            AS b (game_id, seq, seat, command_id, move_json, created_at, origin) \
    ), advanced AS ( \
        UPDATE lobbies SET seq = batch.seq FROM batch \
        WHERE lobbies.id = batch.game_id \
          AND lobbies.status NOT IN ('open', 'finished', 'cancelled') \
          AND lobbies.seq < batch.seq \
          AND COALESCE(lobbies.owner_node, '') \
              IN ('', COALESCE(current_setting('carcassonne.node', true), '')) \
        RETURNING lobbies.id \
    ) \
    INSERT INTO moves (game_id, seq, seat, command_id, move_json, created_at, origin) \
    SELECT game_id, seq, seat, command_id, move_json::jsonb, created_at, origin \
    FROM batch WHERE game_id IN (SELECT id FROM advanced) \
    RETURNING game_id";

/// The most moves one statement carries. sqlx does not set TCP_NODELAY, so a statement
/// larger than the socket's send buffer (16 KiB by default on Linux) goes out in two
/// writes, and Nagle's algorithm holds the second until Postgres acknowledges the first,
/// which it delays by 40 ms. A move takes about 140 bytes, so 48 keep a statement under
/// 8 KiB.
const MOST_MOVES_PER_STATEMENT: usize = 48;

/// One statement of a batch: the games whose move it wrote.
async fn write_chunk(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    moves: &[(Uuid, &MoveRow)],
) -> Result<Vec<Uuid>, BatchFailure> {
    let mut columns = MoveColumns::default();
    for &(game, mv) in moves {
        columns.push(game, mv)?;
    }
    sqlx::query_scalar(WRITE_MOVES)
        .bind(&columns.games)
        .bind(&columns.seqs)
        .bind(&columns.seats)
        .bind(&columns.command_ids)
        .bind(&columns.moves)
        .bind(&columns.created_at)
        .bind(&columns.origins)
        .fetch_all(&mut **tx)
        .await
        .map_err(BatchFailure::before_commit)
}

/// A batch of moves as one array per column, for `unnest`.
#[derive(Default)]
struct MoveColumns {
    games: Vec<Uuid>,
    seqs: Vec<i64>,
    seats: Vec<i16>,
    command_ids: Vec<String>,
    moves: Vec<String>,
    created_at: Vec<i64>,
    origins: Vec<&'static str>,
}

impl MoveColumns {
    fn push(&mut self, game: Uuid, mv: &MoveRow) -> Result<(), StoreError> {
        self.games.push(game);
        self.seqs.push(fit::<u64, i64>(mv.seq, "seq")?);
        self.seats.push(i16::from(mv.seat));
        self.command_ids.push(mv.command_id.clone());
        let json = serde_json::to_string(&mv.mv)
            .map_err(|error| StoreError::Corrupt(format!("a move does not serialize: {error}")))?;
        self.moves.push(json);
        self.created_at.push(mv.created_at);
        self.origins.push(mv.origin.to_column());
        Ok(())
    }
}

/// Brings the schema up to date, then opens the pool.
///
/// Every pooled session gets the statement and idle-in-transaction timeouts. The
/// migrations run first on a connection of their own without them, because a migration
/// that rewrites a large table may rightly take longer than any one command should.
pub(crate) async fn connect(
    options: &StoreOptions,
) -> Result<SqlStore<sqlx::Postgres>, StoreError> {
    let base = PgConnectOptions::from_str(&options.url)?.application_name("carcassonne-server");
    migrate(&base, options.acquire_timeout).await?;
    let (pool_options, connect_options) = session_options(options, base)?;
    let pool = pool_options.connect_with(connect_options).await?;
    SqlStore::new(pool)
}

/// The connections of the group-commit writer's pool.
const WRITER_CONNECTIONS: u32 = 4;

/// The group-commit writer's own pool, opened on first use from the runtime that calls
/// this (the writer's; see `group_commit`): the batches' connection is taken from it and
/// detached (see `SqlStore::write_batch`), and the games' last writes run on the others
/// beside them. Its connections are the server's like any other: the same timeouts and
/// the same node name.
pub(crate) fn connect_writer(
    options: &StoreOptions,
) -> Result<SqlStore<sqlx::Postgres>, StoreError> {
    let base = PgConnectOptions::from_str(&options.url)?.application_name("carcassonne-server");
    let (pool_options, connect_options) = session_options(options, base)?;
    let pool = pool_options
        .max_connections(WRITER_CONNECTIONS)
        .connect_lazy_with(connect_options);
    SqlStore::new(pool)
}

/// What every session of the server's pools is opened with: the statement and idle
/// transaction timeouts, and the node's name in cluster mode.
fn session_options(
    options: &StoreOptions,
    base: PgConnectOptions,
) -> Result<(PgPoolOptions, PgConnectOptions), StoreError> {
    let timeout = format!("{}ms", options.server_statement_timeout().as_millis());
    let with_timeouts = base.options([
        ("statement_timeout", timeout.as_str()),
        ("idle_in_transaction_session_timeout", timeout.as_str()),
    ]);
    let mut pool_options = SqlStore::pool_options(options);
    if let Some(node) = options.checked_node()? {
        let node = node.to_owned();
        pool_options = pool_options.after_connect(move |connection, _metadata| {
            let node = node.clone();
            Box::pin(async move { name_node(connection, &node).await })
        });
    }
    Ok((pool_options, with_timeouts))
}

/// Names this session's node to the database for the whole session (`is_local` false),
/// before the pool hands the connection to anyone, so that the fencing trigger knows
/// which node every write of this store comes from. A bound parameter rather than a
/// startup option, so that any name passes unescaped.
async fn name_node(connection: &mut sqlx::PgConnection, node: &str) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT set_config('carcassonne.node', $1, false)")
        .bind(node)
        .execute(connection)
        .await?;
    Ok(())
}

/// Applies the migrations on a pool of one connection of their own, opened within
/// `connect_timeout`, and closes it.
async fn migrate(options: &PgConnectOptions, connect_timeout: Duration) -> Result<(), StoreError> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(connect_timeout)
        .connect_with(options.clone())
        .await?;
    let migrated = schema::migrator(Backend::Postgres).run(&pool).await;
    pool.close().await;
    Ok(migrated?)
}
