//! In-game chat: its entries, numbered by `chat_seq` in each game apart from the game's
//! `seq`, and who mutes whom. An entry's JSON is the server's; the store keeps its text.
//!
//! A chat write carries no `seq` and never touches the game's: a message must not wait
//! for, or be refused by, the moves around it. What keeps an entry from being written
//! twice is the key `(game_id, chat_seq)`, and what keeps it from belonging to no game is
//! its foreign key to the lobby (see migration 14).

use carcassonne_core::{Move, Rules};
use sqlx::types::Json;
use sqlx::{ColumnIndex, Decode, Executor, Row};
use uuid::Uuid;

use super::{Bind, Column, SqlBackend, SqlStore, Tx};
use crate::convert::{TextColumn, fit};
use crate::{ChatAudience, ChatEffect, ChatEntryRow, ChatRead, StoreError, TimeControl};

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
    /// The entry is inserted first: a taken `chat_seq` or an unknown game then fails
    /// before the effect is written, and nothing is.
    pub(crate) async fn append_chat(
        &self,
        game: Uuid,
        entry: &ChatEntryRow,
        effect: &ChatEffect,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        Self::insert_chat_entry(&mut tx, game, entry).await?;
        match effect {
            ChatEffect::None => {}
            ChatEffect::Redact { chat_seq, entry } => {
                Self::redact_chat_entry(&mut tx, game, *chat_seq, entry).await?;
            }
            ChatEffect::Policy(policy) => {
                sqlx::query("UPDATE lobbies SET chat_policy = $1 WHERE id = $2")
                    .bind(policy.to_column())
                    .bind(game)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    async fn insert_chat_entry(
        tx: &mut Tx<DB>,
        game: Uuid,
        entry: &ChatEntryRow,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO chat_entries (game_id, chat_seq, audience, created_at, entry) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(game)
        .bind(fit::<u64, i64>(entry.chat_seq, "chat seq")?)
        .bind(entry.audience.to_column())
        .bind(entry.created_at)
        .bind(&entry.entry)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    /// Replaces the text of entry `chat_seq`: an operator's deletion removes the words
    /// from the database, not only from what the server shows. [`StoreError::NotFound`]
    /// when there is no such entry; the caller's transaction, dropped on that error, then
    /// rolls back the entry that announced the deletion.
    async fn redact_chat_entry(
        tx: &mut Tx<DB>,
        game: Uuid,
        chat_seq: u64,
        entry: &str,
    ) -> Result<(), StoreError> {
        let updated =
            sqlx::query("UPDATE chat_entries SET entry = $1 WHERE game_id = $2 AND chat_seq = $3")
                .bind(entry)
                .bind(game)
                .bind(fit::<u64, i64>(chat_seq, "chat seq")?)
                .execute(&mut **tx)
                .await?;
        if DB::rows_affected(&updated) == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    /// Reads backwards along the key from `before`, so that the newest `limit` entries
    /// are found without reading older ones, then turns them to ascending order. The
    /// audience is a filter on that walk: `players` adds the players' entries to the ones
    /// everyone reads.
    pub(crate) async fn chat_entries(
        &self,
        game: Uuid,
        read: &ChatRead,
    ) -> Result<Vec<ChatEntryRow>, StoreError> {
        // A bound past the column's range is a bound past every stored entry: the
        // range is empty above `after` and unbounded below `before`.
        let after = read
            .after
            .map_or(-1, |after| i64::try_from(after).unwrap_or(i64::MAX));
        let before = read
            .before
            .map_or(i64::MAX, |before| i64::try_from(before).unwrap_or(i64::MAX));
        let audiences = match read.players {
            true => ChatAudience::Players,
            false => ChatAudience::Everyone,
        };
        let rows = sqlx::query(
            "SELECT chat_seq, audience, created_at, entry FROM chat_entries \
             WHERE game_id = $1 AND chat_seq > $2 AND chat_seq < $3 \
               AND audience IN ('everyone', $4) \
             ORDER BY chat_seq DESC LIMIT $5",
        )
        .bind(game)
        .bind(after)
        .bind(before)
        .bind(audiences.to_column())
        .bind(i64::from(read.limit))
        .fetch_all(&self.pool)
        .await?;
        let mut entries = rows
            .iter()
            .map(Self::chat_entry_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        entries.reverse();
        Ok(entries)
    }

    /// Muting twice, or unmuting whom a seat does not mute, changes nothing and succeeds:
    /// the server may repeat a change whose answer it lost.
    pub(crate) async fn set_chat_mute(
        &self,
        game: Uuid,
        seat: u8,
        author: &str,
        muted: bool,
    ) -> Result<(), StoreError> {
        let statement = match muted {
            true => {
                "INSERT INTO chat_mutes (game_id, seat, author) VALUES ($1, $2, $3) \
                 ON CONFLICT (game_id, seat, author) DO NOTHING"
            }
            false => "DELETE FROM chat_mutes WHERE game_id = $1 AND seat = $2 AND author = $3",
        };
        let mut tx = self.begin_write().await?;
        sqlx::query(statement)
            .bind(game)
            .bind(i16::from(seat))
            .bind(author)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    pub(crate) async fn chat_mutes(&self, game: Uuid) -> Result<Vec<(u8, String)>, StoreError> {
        let rows = sqlx::query(
            "SELECT seat, author FROM chat_mutes WHERE game_id = $1 ORDER BY seat, author",
        )
        .bind(game)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(Self::chat_mute_from_row).collect()
    }

    pub(super) fn chat_entry_from_row(row: &DB::Row) -> Result<ChatEntryRow, StoreError> {
        Ok(ChatEntryRow {
            chat_seq: fit(row.try_get::<i64, _>("chat_seq")?, "chat seq")?,
            audience: ChatAudience::from_column(row.try_get("audience")?)?,
            created_at: row.try_get("created_at")?,
            entry: row.try_get("entry")?,
        })
    }

    pub(super) fn chat_mute_from_row(row: &DB::Row) -> Result<(u8, String), StoreError> {
        let seat = fit(row.try_get::<i16, _>("seat")?, "seat")?;
        Ok((seat, row.try_get("author")?))
    }
}
