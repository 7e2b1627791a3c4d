//! Lasting player identities.

use carcassonne_core::{Move, Rules};
use sqlx::types::Json;
use sqlx::{ColumnIndex, Decode, Executor, Row};
use uuid::Uuid;

use super::{Bind, Column, SqlBackend, SqlStore};
use crate::{PlayerRow, StoreError, TimeControl};

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
    pub(crate) async fn create_player(&self, player: &PlayerRow) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        sqlx::query(
            "INSERT INTO players (id, display_name, secret_hash, created_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(player.id)
        .bind(&player.display_name)
        .bind(&player.secret_hash)
        .bind(player.created_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    pub(crate) async fn player(&self, id: Uuid) -> Result<Option<PlayerRow>, StoreError> {
        let row = sqlx::query(
            "SELECT id, display_name, secret_hash, created_at FROM players WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(Self::player_from_row).transpose()
    }

    fn player_from_row(row: &DB::Row) -> Result<PlayerRow, StoreError> {
        Ok(PlayerRow {
            id: row.try_get("id")?,
            display_name: row.try_get("display_name")?,
            secret_hash: row.try_get("secret_hash")?,
            created_at: row.try_get("created_at")?,
        })
    }
}
