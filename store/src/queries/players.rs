//! Lasting player identities.

use sqlx::Row;
use uuid::Uuid;

use super::{DbRow, SqlStore};
use crate::{PlayerRow, StoreError};

impl SqlStore {
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
        row.as_ref().map(player_from_row).transpose()
    }
}

fn player_from_row(row: &DbRow) -> Result<PlayerRow, StoreError> {
    Ok(PlayerRow {
        id: row.try_get("id")?,
        display_name: row.try_get("display_name")?,
        secret_hash: row.try_get("secret_hash")?,
        created_at: row.try_get("created_at")?,
    })
}
