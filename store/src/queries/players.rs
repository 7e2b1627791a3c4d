//! Lasting player identities.

use carcassonne_core::{Move, Rules};
use sqlx::types::Json;
use sqlx::{ColumnIndex, Decode, Executor, Row};
use uuid::Uuid;

use super::{Bind, Column, SqlBackend, SqlStore, Tx};
use crate::{Millis, PlayerRow, StoreError, TimeControl};

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
        Self::insert_player(&mut tx, player).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn insert_player(tx: &mut Tx<DB>, player: &PlayerRow) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO players (id, display_name, secret_hash, created_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(player.id)
        .bind(&player.display_name)
        .bind(&player.secret_hash)
        .bind(player.created_at)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    /// The player bound to `subject` under `issuer`, given `player`'s secret hash (a
    /// sign-in replaces the secret); `player` itself, bound, at the subject's first
    /// sign-in (true then). Two first sign-ins at once: one of them gets
    /// [`StoreError::Conflict`].
    pub(crate) async fn sign_in(
        &self,
        issuer: &str,
        subject: &str,
        player: &PlayerRow,
    ) -> Result<(PlayerRow, bool), StoreError> {
        let mut tx = self.begin_write().await?;
        let bound = sqlx::query(
            "SELECT players.id, display_name, secret_hash, players.created_at \
             FROM player_logins JOIN players ON players.id = player_logins.player_id \
             WHERE issuer = $1 AND subject = $2",
        )
        .bind(issuer)
        .bind(subject)
        .fetch_optional(&mut *tx)
        .await?;
        let signed_in = match bound {
            Some(row) => {
                let mut found = Self::player_from_row(&row)?;
                sqlx::query("UPDATE players SET secret_hash = $2 WHERE id = $1")
                    .bind(found.id)
                    .bind(&player.secret_hash)
                    .execute(&mut *tx)
                    .await?;
                found.secret_hash.clone_from(&player.secret_hash);
                (found, false)
            }
            None => {
                Self::insert_player(&mut tx, player).await?;
                sqlx::query(
                    "INSERT INTO player_logins (issuer, subject, player_id, created_at) \
                     VALUES ($1, $2, $3, $4)",
                )
                .bind(issuer)
                .bind(subject)
                .bind(player.id)
                .bind(player.created_at)
                .execute(&mut *tx)
                .await?;
                (player.clone(), true)
            }
        };
        tx.commit().await?;
        Ok(signed_in)
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

    /// Replaces `player`'s outstanding recovery code; false when there is no such player.
    pub(crate) async fn issue_recovery_code(
        &self,
        player: Uuid,
        code_hash: &str,
        expires_at: Millis,
    ) -> Result<bool, StoreError> {
        let mut tx = self.begin_write().await?;
        let exists = sqlx::query("SELECT 1 FROM players WHERE id = $1")
            .bind(player)
            .fetch_optional(&mut *tx)
            .await?
            .is_some();
        if exists {
            sqlx::query(
                "INSERT INTO player_recovery (player_id, code_hash, expires_at) \
                 VALUES ($1, $2, $3) ON CONFLICT (player_id) \
                 DO UPDATE SET code_hash = excluded.code_hash, expires_at = excluded.expires_at",
            )
            .bind(player)
            .bind(code_hash)
            .bind(expires_at)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(exists)
    }

    /// Uses the recovery code `code_hash` if it is outstanding and unexpired at `now`:
    /// the code is deleted and its player's secret hash becomes `secret_hash`, in one
    /// transaction, so a code works once. The player, with the new hash; `None` for a
    /// code that is unknown, used, replaced or expired.
    pub(crate) async fn recover_player(
        &self,
        code_hash: &str,
        now: Millis,
        secret_hash: &str,
    ) -> Result<Option<PlayerRow>, StoreError> {
        let mut tx = self.begin_write().await?;
        let used = sqlx::query(
            "DELETE FROM player_recovery WHERE code_hash = $1 AND expires_at > $2 \
             RETURNING player_id",
        )
        .bind(code_hash)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(used) = used else {
            tx.commit().await?;
            return Ok(None);
        };
        let id: Uuid = used.try_get("player_id")?;
        let row = sqlx::query(
            "UPDATE players SET secret_hash = $2 WHERE id = $1 \
             RETURNING id, display_name, secret_hash, created_at",
        )
        .bind(id)
        .bind(secret_hash)
        .fetch_one(&mut *tx)
        .await?;
        let player = Self::player_from_row(&row)?;
        tx.commit().await?;
        Ok(Some(player))
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
