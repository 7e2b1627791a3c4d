//! The SQLite backend: its connection settings, and the shared queries compiled for it.

use std::str::FromStr;

use sqlx::Row;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteRow, SqliteSynchronous};

use crate::{Backend, MoveRow, StoreError, StoreOptions, schema};

/// The driver the shared queries in `queries/` are compiled for in this module.
pub(crate) type Db = sqlx::Sqlite;

/// Takes the database's write lock at the start, waiting up to the busy timeout for it. A
/// deferred transaction that read first could instead fail outright at its first write
/// when another connection wrote in between (SQLITE_BUSY_SNAPSHOT).
pub(crate) const BEGIN_WRITE: &str = "BEGIN IMMEDIATE";

/// In WAL mode a deferred transaction reads from one snapshot from its first read on.
pub(crate) const BEGIN_SNAPSHOT: &str = "BEGIN";

/// SQLite's driver runs every command, `BEGIN` included, to the end on its worker thread
/// and counts transactions there, so an abandoned call never leaves a transaction it does
/// not know of, and a rollback it queued has run by the time the check's query does.
pub(crate) const OUTSIDE_TRANSACTION: &str = "SELECT TRUE";

/// Put before a query to get its plan instead of its rows.
pub(crate) const EXPLAIN: &str = "EXPLAIN QUERY PLAN";

/// One step of the plan `EXPLAIN QUERY PLAN` returns, from its `detail` column.
pub(crate) fn plan_line(row: &SqliteRow) -> Result<String, StoreError> {
    Ok(row.try_get("detail")?)
}

// The same source files are compiled a second time in `postgres.rs`, against the Postgres
// driver: that is how one set of queries serves both backends with native types.
#[allow(clippy::duplicate_mod)]
#[path = "queries/mod.rs"]
pub(crate) mod queries;

/// Writes moves of different games together: SQLite's statements cost no round trip, its
/// commit an fsync, so one transaction of plain statements takes the whole batch.
pub(crate) async fn write_moves_together(
    store: &queries::SqlStore,
    moves: &[(uuid::Uuid, &MoveRow)],
) -> Result<Vec<bool>, StoreError> {
    store.write_moves_in_one_transaction(moves).await
}

/// Opens (creating when missing) the database file and brings the schema up to date.
///
/// WAL lets readers go on while a game writes; `synchronous = FULL` makes every commit
/// durable before the server acknowledges the command it holds; foreign keys are off by
/// default in SQLite and the schema relies on them. `PRAGMA optimize` on closing keeps
/// the planner's statistics current, as SQLite recommends, so that it keeps choosing the
/// history indexes as the tables grow.
pub(crate) async fn connect(options: &StoreOptions) -> Result<queries::SqlStore, StoreError> {
    let connect_options = SqliteConnectOptions::from_str(&options.url)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(options.busy_timeout)
        .foreign_keys(true)
        .optimize_on_close(true, 400);
    let pool = queries::pool_options(options)
        .connect_with(connect_options)
        .await?;
    schema::migrator(Backend::Sqlite).run(&pool).await?;
    Ok(queries::SqlStore::new(pool))
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
