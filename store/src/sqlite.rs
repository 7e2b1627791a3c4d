//! The SQLite backend: its connection settings, and what its queries do differently
//! (the [`SqlBackend`] of `sqlx::Sqlite`).

use std::str::FromStr;

use sqlx::Row;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqliteQueryResult, SqliteRow,
    SqliteSynchronous,
};
use uuid::Uuid;

use crate::convert::{TextColumn, fit};
use crate::error::BatchFailure;
use crate::queries::{SqlBackend, SqlStore};
use crate::{Backend, MoveRow, StoreError, StoreOptions, schema};

impl SqlBackend for sqlx::Sqlite {
    /// Takes the database's write lock at the start, waiting up to the busy timeout for it.
    /// A deferred transaction that read first could instead fail outright at its first
    /// write when another connection wrote in between (SQLITE_BUSY_SNAPSHOT).
    const BEGIN_WRITE: &'static str = "BEGIN IMMEDIATE";

    /// In WAL mode a deferred transaction reads from one snapshot from its first read on.
    const BEGIN_SNAPSHOT: &'static str = "BEGIN";

    /// SQLite writes one transaction at a time, so every write of the store takes its turn
    /// on one connection, in a transaction shared with the writes around it, which commit
    /// together (see `queries/commit_groups.rs`).
    ///
    /// With a transaction of its own per write on a connection of the pool, a connection
    /// that found the database locked would sleep in its busy handler (1, 2, 5, ... up to
    /// 100 ms) and try again, with no queue: under load they slept far more than they
    /// wrote, and the slowest moves were acknowledged seconds late. With turns taken in
    /// the process, the busy handler only waits for other processes.
    const WRITES_COMMIT_TOGETHER: bool = true;

    /// SQLite's driver runs every command, `BEGIN` included, to the end on its worker
    /// thread and counts transactions there, so an abandoned call never leaves a
    /// transaction it does not know of, and a rollback it queued has run by the time the
    /// check's query does.
    const OUTSIDE_TRANSACTION: &'static str = "SELECT TRUE";

    /// The connection that writes the batches is here the one that every write shares
    /// (`WRITES_COMMIT_TOGETHER`). Its page cache holds 32 MiB instead of SQLite's 2 MiB.
    /// A batch touches a page of the moves of every game it holds (each game's moves sit
    /// together, in its key's order) and the lobby pages of those games, so the pages in
    /// use grow with the games in play: at 400, SQLite's 500 pages no longer held them,
    /// and the server kept reading them back from the files. 32 MiB is room for about
    /// 8,000 games in play; the memory is taken only as pages are used.
    const WRITER_SESSION: &'static str = "PRAGMA cache_size = -32768";

    const EXPLAIN: &'static str = "EXPLAIN QUERY PLAN";

    /// An SQLite store is always the one node of its server, so no other node owns a game.
    const LOBBY_STATE: &'static str =
        "SELECT status, seq, owner_node, FALSE AS fenced FROM lobbies WHERE id = $1";

    /// An SQLite store is always the one node of its server: no game has an owner.
    const STORED_AT: &'static str = "\
        SELECT lobbies.seq, lobbies.owner_node, FALSE AS owner_alive, \
               moves.seat, moves.command_id \
        FROM lobbies \
        LEFT JOIN moves ON moves.game_id = lobbies.id AND moves.seq = $2 \
        WHERE lobbies.id = $1";

    /// A new lobby has no owner: an SQLite store is always the one node of its server.
    /// SQLite's one node runs the one matchmaker, and its write excludes every other.
    const QUEUE_ROUND_TURN: &'static str = "SELECT TRUE";

    const TAKE_WAITING_TICKETS: &'static str = "\
        SELECT id, player_id, token_hash, display_name, min_players, max_players, rules, clock, \
        rated, match_key, rating, created_at, expires_at, status, lobby_id, seat \
        FROM queue_tickets WHERE status = 'waiting' ORDER BY created_at, id LIMIT $1";

    const INSERT_LOBBY: &'static str = "\
        INSERT INTO lobbies (id, name, is_public, invite_hash, seat_count, rules, clock, \
        status, seed, deck_salt, seq, created_at, started_at, finished_at, rated, chat_policy) \
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)";

    fn rows_affected(result: &SqliteQueryResult) -> u64 {
        result.rows_affected()
    }

    /// `EXPLAIN QUERY PLAN` gives each step of the plan in its `detail` column.
    fn plan_line(row: &SqliteRow) -> Result<String, StoreError> {
        Ok(row.try_get("detail")?)
    }

    /// Writes moves of different games together, inside the write in the shared
    /// transaction that `connection` holds (see `queries/commit_groups.rs`): two statements
    /// for the whole batch, which travels as one JSON array. Every statement is a trip to
    /// sqlx's worker thread and back, so two per batch cost far less than two per move. A
    /// game that refuses its move (ended, or its `seq` moved on) fails the whole batch
    /// with a conflict, and the caller's write, dropped, is undone: the moves are then
    /// written one by one to learn which.
    async fn write_moves_together(
        connection: &mut SqliteConnection,
        moves: &[(Uuid, &MoveRow)],
    ) -> Result<Vec<bool>, BatchFailure> {
        let batch = moves_as_json(moves)?;
        let advanced = sqlx::query(ADVANCE_GAMES)
            .bind(&batch)
            .execute(&mut *connection)
            .await
            .map_err(BatchFailure::before_commit)?
            .rows_affected();
        if advanced != moves.len() as u64 {
            return Err(BatchFailure::from(StoreError::Conflict(format!(
                "{} of a batch of {} games refused their move",
                moves.len() as u64 - advanced,
                moves.len()
            ))));
        }
        sqlx::query(INSERT_MOVES)
            .bind(&batch)
            .execute(&mut *connection)
            .await
            .map_err(BatchFailure::before_commit)?;
        Ok(vec![true; moves.len()])
    }
}

/// Advances the `seq` of every game of a batch (a JSON array bound as `$1`), each only
/// if it is still playing and behind the move. The array is read as JSONB, SQLite's
/// binary form, parsed once per statement: with `json_each` over the text, each move's
/// object would come back as text, parsed again for each field taken from it.
const ADVANCE_GAMES: &str = "\
    UPDATE lobbies SET seq = batch.seq \
    FROM (SELECT unhex(value ->> 'game') AS game_id, value ->> 'seq' AS seq \
          FROM jsonb_each(jsonb($1))) AS batch \
    WHERE lobbies.id = batch.game_id AND lobbies.status = 'playing' \
      AND lobbies.seq < batch.seq";

/// Inserts every move of a batch (the same JSON array).
const INSERT_MOVES: &str = "\
    INSERT INTO moves (game_id, seq, seat, command_id, move_json, created_at, origin) \
    SELECT unhex(value ->> 'game'), value ->> 'seq', value ->> 'seat', \
           value ->> 'command_id', value ->> 'move', value ->> 'created_at', value ->> 'origin' \
    FROM jsonb_each(jsonb($1))";

/// One move of a batch, as the statements above read it from JSON.
#[derive(serde::Serialize)]
struct BatchedMove<'a> {
    /// The game's id as 32 hex digits, which `unhex` turns into the id column's blob.
    game: String,
    seq: i64,
    seat: u8,
    command_id: &'a str,
    /// The move's own JSON, as the text the `move_json` column holds.
    #[serde(rename = "move")]
    mv: String,
    created_at: i64,
    origin: &'static str,
}

fn moves_as_json(moves: &[(Uuid, &MoveRow)]) -> Result<String, StoreError> {
    let corrupt = |error: serde_json::Error| {
        StoreError::Corrupt(format!("a move does not serialize: {error}"))
    };
    let batch = moves
        .iter()
        .map(|&(game, mv)| {
            Ok(BatchedMove {
                game: game.simple().to_string(),
                seq: fit::<u64, i64>(mv.seq, "seq")?,
                seat: mv.seat,
                command_id: &mv.command_id,
                mv: serde_json::to_string(&mv.mv).map_err(corrupt)?,
                created_at: mv.created_at,
                origin: mv.origin.to_column(),
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    serde_json::to_string(&batch).map_err(corrupt)
}

/// How many pages the write-ahead log grows by before a commit copies them back into the
/// database file (SQLite's default is 1,000, 4 MiB). A checkpoint copies each page once,
/// however many commits rewrote it since the last, and the pages a game's moves change
/// (its rows' index leaves, its lobby's row) are rewritten by nearly every batch, so
/// fewer checkpoints copy far fewer pages under load. The log file keeps the size it
/// reached (a checkpoint rewinds it), and after a crash SQLite reads it back when the
/// database is next opened.
const PAGES_BETWEEN_CHECKPOINTS: &str = "8000";

/// Opens (creating when missing) the database file and brings the schema up to date.
///
/// WAL lets readers go on while a game writes; `synchronous = FULL` makes every commit
/// durable before the server acknowledges the command it holds; foreign keys are off by
/// default in SQLite and the schema relies on them. Temporary files stay in memory: the
/// savepoints of the shared write transaction, and every statement of a batch, keep the
/// pages they change in a sub-journal, which past 64 KiB would go to a file on disk,
/// written and read back with system calls under load. `PRAGMA optimize` on closing
/// keeps the planner's statistics current, as SQLite recommends, so that it keeps
/// choosing the history indexes as the tables grow.
pub(crate) async fn connect(options: &StoreOptions) -> Result<SqlStore<sqlx::Sqlite>, StoreError> {
    let connect_options = SqliteConnectOptions::from_str(&options.url)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(options.busy_timeout)
        .foreign_keys(true)
        .pragma("temp_store", "memory")
        .pragma("wal_autocheckpoint", PAGES_BETWEEN_CHECKPOINTS)
        .optimize_on_close(true, 400);
    let pool = SqlStore::pool_options(options)
        .connect_with(connect_options)
        .await?;
    schema::migrator(Backend::Sqlite).run(&pool).await?;
    SqlStore::new(pool)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The server's default URL names `carcassonne.db` in the working directory.
    #[test]
    fn the_default_url_names_a_file_in_the_working_directory() {
        let options = SqliteConnectOptions::from_str("sqlite://carcassonne.db").unwrap();
        assert_eq!(options.get_filename(), Path::new("carcassonne.db"));
    }
}
