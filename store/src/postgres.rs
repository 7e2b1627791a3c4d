//! The Postgres backend: its connection settings, and the shared queries compiled for it.

use std::str::FromStr;

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

/// Opens the pool and brings the schema up to date.
pub(crate) async fn connect(options: &StoreOptions) -> Result<queries::SqlStore, StoreError> {
    let connect_options =
        PgConnectOptions::from_str(&options.url)?.application_name("carcassonne-server");
    let pool = PgPoolOptions::new()
        .max_connections(options.max_connections)
        .acquire_timeout(options.acquire_timeout)
        .connect_with(connect_options)
        .await?;
    schema::migrator(Backend::Postgres).run(&pool).await?;
    Ok(queries::SqlStore::new(pool))
}
