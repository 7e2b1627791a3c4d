//! The store's queries, written once and compiled for each backend.
//!
//! This directory is not a module of its own: `postgres.rs` and `sqlite.rs` each include it
//! with `#[path]`, after defining `Db` (the sqlx driver), `BEGIN_WRITE` and
//! `BEGIN_SNAPSHOT`, `EXPLAIN` and `plan_line`. So every query exists twice with concrete types, with no generic
//! bounds over sqlx's traits, and both copies run the same SQL text: `$n` placeholders,
//! which SQLite accepts too, and only SQL that both dialects read the same way. The
//! column types differ (see `migrations/`), the values bound and read do not.
//!
//! Every write runs in a transaction begun with `BEGIN_WRITE`, and every read that takes
//! more than one statement in a snapshot begun with `BEGIN_SNAPSHOT`, so that a page of
//! matches and their seats, or a lobby and its seats, are read at one point in time.

// Column lists shared by several queries, as macros so that `concat!` can build each
// query's text at compile time (sqlx takes `&'static str` as audited SQL). Rows are read
// by column name, so these only need to name every column the decoder reads.

/// The columns `lobby_from_row` reads.
macro_rules! lobby_columns {
    () => {
        "id, name, is_public, invite_code, seat_count, rules, status, seed, seq, \
         created_at, started_at, finished_at"
    };
}

/// The columns `seat_from_row` reads.
macro_rules! seat_columns {
    () => {
        "seat, display_name, player_id, token_hash, creator, joined_at"
    };
}

/// The columns `move_from_row` reads.
macro_rules! move_columns {
    () => {
        "seq, seat, command_id, move_json, created_at"
    };
}

mod lobbies;
mod matches;
mod moves;
mod players;

use std::collections::HashMap;

use sqlx::{Database, Pool, Row, Transaction};
use uuid::Uuid;

use super::{BEGIN_SNAPSHOT, BEGIN_WRITE, Db, EXPLAIN, plan_line};
use crate::convert::status_to_column;
use crate::{LobbyStatus, StoreError};

/// A row as this backend's driver returns it.
type DbRow = <Db as Database>::Row;

/// An open transaction on this backend.
type Tx = Transaction<'static, Db>;

/// The connection pool, and every query of the store for this backend.
#[derive(Clone, Debug)]
pub(crate) struct SqlStore {
    pool: Pool<Db>,
}

impl SqlStore {
    pub(crate) fn new(pool: Pool<Db>) -> SqlStore {
        SqlStore { pool }
    }

    pub(crate) async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    pub(crate) async fn close(&self) {
        self.pool.close().await;
    }

    async fn begin_write(&self) -> Result<Tx, StoreError> {
        Ok(self.pool.begin_with(BEGIN_WRITE).await?)
    }

    async fn begin_snapshot(&self) -> Result<Tx, StoreError> {
        Ok(self.pool.begin_with(BEGIN_SNAPSHOT).await?)
    }
}

/// Succeeds when a guarded lobby update changed its row. Every update that sets a lobby's
/// `seq` is guarded by `id = lobby AND status = expected AND seq < new seq`; when it
/// changed nothing this says why: [`StoreError::NotFound`] when the lobby does not exist,
/// otherwise [`StoreError::Conflict`] naming the status and `seq` it has.
async fn ensure_lobby_updated(
    tx: &mut Tx,
    rows_affected: u64,
    lobby: Uuid,
    expected: LobbyStatus,
    seq: u64,
) -> Result<(), StoreError> {
    if rows_affected == 1 {
        return Ok(());
    }
    let row = sqlx::query("SELECT status, seq FROM lobbies WHERE id = $1")
        .bind(lobby)
        .fetch_optional(&mut **tx)
        .await?;
    let Some(row) = row else {
        return Err(StoreError::NotFound);
    };
    let status: String = row.try_get("status")?;
    let current_seq: i64 = row.try_get("seq")?;
    let expected = status_to_column(expected);
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
