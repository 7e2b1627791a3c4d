//! The Postgres backend: its connection settings, and the shared queries compiled for it.

use std::str::FromStr;
use std::time::Duration;

use sqlx::Row;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgRow};

use crate::{Backend, StoreError, StoreOptions, schema};

/// The driver the shared queries in `queries/` are compiled for in this module.
pub(crate) type Db = sqlx::Postgres;

/// Postgres locks rows as statements reach them, so a plain transaction is enough for
/// writes.
pub(crate) const BEGIN_WRITE: &str = "BEGIN";

/// Reads that take several statements (a page and its seats) see one snapshot.
pub(crate) const BEGIN_SNAPSHOT: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

/// True on a connection outside any transaction block. A simple query outside a block is
/// a transaction of its own, which starts with the statement; inside a block left open,
/// the transaction started earlier.
pub(crate) const OUTSIDE_TRANSACTION: &str = "SELECT now() = statement_timestamp()";

/// Put before a query to get its plan instead of its rows.
pub(crate) const EXPLAIN: &str = "EXPLAIN";

/// One line of the plan `EXPLAIN` returns: Postgres gives it as one text column.
pub(crate) fn plan_line(row: &PgRow) -> Result<String, StoreError> {
    Ok(row.try_get(0)?)
}

// The same source files are compiled a second time in `sqlite.rs`, against the SQLite
// driver: that is how one set of queries serves both backends with native types.
#[allow(clippy::duplicate_mod)]
#[path = "queries/mod.rs"]
pub(crate) mod queries;

/// Brings the schema up to date, then opens the pool.
///
/// Every pooled session gets the statement and idle-in-transaction timeouts. The
/// migrations run first on a connection of their own without them, because a migration
/// that rewrites a large table may rightly take longer than any one command should.
pub(crate) async fn connect(options: &StoreOptions) -> Result<queries::SqlStore, StoreError> {
    let base = PgConnectOptions::from_str(&options.url)?.application_name("carcassonne-server");
    migrate(&base, options.acquire_timeout).await?;
    let timeout = format!("{}ms", options.statement_timeout.as_millis());
    let with_timeouts = base.options([
        ("statement_timeout", timeout.as_str()),
        ("idle_in_transaction_session_timeout", timeout.as_str()),
    ]);
    let pool = queries::pool_options(options)
        .connect_with(with_timeouts)
        .await?;
    Ok(queries::SqlStore::new(pool))
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
