//! Lobbies and their seats, up to the start of the game.

use carcassonne_core::{Move, Rules};
use sqlx::types::Json;
use sqlx::{ColumnIndex, Decode, Executor, Row};
use uuid::Uuid;

use super::{Bind, Column, SqlBackend, SqlStore, Tx};
use crate::convert::{
    TextColumn, fit, seed_from_column, seed_to_column, status_from_column, status_to_column,
};
use crate::{
    ChatPolicy, GameStart, LobbyRow, LobbyStatus, SeatControl, SeatRow, StoreError, TimeControl,
};

/// The statuses in which a lobby's seats may still change hands: open and playing.
const LIVE: &[LobbyStatus] = &[LobbyStatus::Open, LobbyStatus::Playing];

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
    pub(crate) async fn create_lobby(
        &self,
        lobby: &LobbyRow,
        seats: &[SeatRow],
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        Self::insert_lobby(&mut tx, lobby).await?;
        for seat in seats {
            Self::insert_seat(&mut tx, lobby.id, seat).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    pub(crate) async fn lobby(
        &self,
        id: Uuid,
    ) -> Result<Option<(LobbyRow, Vec<SeatRow>)>, StoreError> {
        let mut tx = self.begin_snapshot().await?;
        let found = Self::lobby_with_seats(&mut tx, id).await?;
        tx.commit().await?;
        Ok(found)
    }

    /// The conditions spell out the partial index `lobbies_open_public_newest`, so that
    /// both databases read the page straight from it.
    pub(crate) async fn open_public_lobbies(
        &self,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<(LobbyRow, Vec<SeatRow>)>, StoreError> {
        const LOBBIES: &str = concat!(
            "SELECT ",
            lobby_columns!(),
            " FROM lobbies WHERE status = 'open' AND is_public \
             ORDER BY created_at DESC, id DESC LIMIT $1 OFFSET $2"
        );
        const SEATS: &str = concat!(
            "SELECT lobby_id, ",
            seat_columns!(),
            " FROM seats WHERE lobby_id IN (SELECT id FROM lobbies \
             WHERE status = 'open' AND is_public \
             ORDER BY created_at DESC, id DESC LIMIT $1 OFFSET $2) \
             ORDER BY lobby_id, seat"
        );
        self.lobby_page(LOBBIES, SEATS, offset, limit).await
    }

    /// Public games in play, most recently started first: what a spectator can watch.
    /// The `lobbies_live` index holds exactly the open and playing lobbies.
    pub(crate) async fn playing_public_games(
        &self,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<(LobbyRow, Vec<SeatRow>)>, StoreError> {
        const LOBBIES: &str = concat!(
            "SELECT ",
            lobby_columns!(),
            " FROM lobbies WHERE status = 'playing' AND is_public \
             ORDER BY started_at DESC, id DESC LIMIT $1 OFFSET $2"
        );
        const SEATS: &str = concat!(
            "SELECT lobby_id, ",
            seat_columns!(),
            " FROM seats WHERE lobby_id IN (SELECT id FROM lobbies \
             WHERE status = 'playing' AND is_public \
             ORDER BY started_at DESC, id DESC LIMIT $1 OFFSET $2) \
             ORDER BY lobby_id, seat"
        );
        self.lobby_page(LOBBIES, SEATS, offset, limit).await
    }

    /// One page of lobbies and their seats, read in one snapshot: `lobbies` selects the
    /// page in order and `seats` the seats of exactly that page (both take the same
    /// `LIMIT $1 OFFSET $2`).
    async fn lobby_page(
        &self,
        lobbies: &'static str,
        seats: &'static str,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<(LobbyRow, Vec<SeatRow>)>, StoreError> {
        let mut tx = self.begin_snapshot().await?;
        let lobbies = sqlx::query(lobbies)
            .bind(i64::from(limit))
            .bind(i64::from(offset))
            .fetch_all(&mut *tx)
            .await?;
        let seats = sqlx::query(seats)
            .bind(i64::from(limit))
            .bind(i64::from(offset))
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        let mut seats = Self::group_rows(&seats, "lobby_id", Self::seat_from_row)?;
        lobbies
            .iter()
            .map(|row| {
                let lobby = Self::lobby_from_row(row)?;
                let lobby_seats = seats.remove(&lobby.id).unwrap_or_default();
                Ok((lobby, lobby_seats))
            })
            .collect()
    }

    pub(crate) async fn add_seat(
        &self,
        lobby: Uuid,
        seat: &SeatRow,
        seq: u64,
        events: Option<&str>,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        Self::advance_open_lobby(&mut tx, lobby, seq).await?;
        Self::insert_seat(&mut tx, lobby, seat).await?;
        Self::insert_events(&mut tx, lobby, seq, events).await?;
        tx.commit().await?;
        Ok(())
    }

    pub(crate) async fn remove_seat(
        &self,
        lobby: Uuid,
        seat: u8,
        seq: u64,
        events: Option<&str>,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        Self::advance_open_lobby(&mut tx, lobby, seq).await?;
        let deleted = sqlx::query("DELETE FROM seats WHERE lobby_id = $1 AND seat = $2")
            .bind(lobby)
            .bind(i16::from(seat))
            .execute(&mut *tx)
            .await?;
        if DB::rows_affected(&deleted) == 0 {
            // Dropping the transaction rolls back the seq update too.
            return Err(StoreError::NotFound);
        }
        Self::insert_events(&mut tx, lobby, seq, events).await?;
        tx.commit().await?;
        Ok(())
    }

    pub(crate) async fn start_game(
        &self,
        lobby: Uuid,
        start: &GameStart<'_>,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        let updated = sqlx::query(
            "UPDATE lobbies SET status = 'playing', seed = $1, deck_salt = $2, \
             started_at = $3, seq = $4 WHERE id = $5 AND status = 'open' AND seq < $4",
        )
        .bind(seed_to_column(start.seed))
        .bind(start.deck_salt)
        .bind(start.started_at)
        .bind(fit::<u64, i64>(start.seq, "seq")?)
        .bind(lobby)
        .execute(&mut *tx)
        .await?;
        Self::ensure_lobby_updated(
            &mut tx,
            DB::rows_affected(&updated),
            lobby,
            &[LobbyStatus::Open],
            start.seq,
        )
        .await?;
        // The seats may have been renumbered, so they are replaced rather than updated.
        sqlx::query("DELETE FROM seats WHERE lobby_id = $1")
            .bind(lobby)
            .execute(&mut *tx)
            .await?;
        for seat in start.seats {
            Self::insert_seat(&mut tx, lobby, seat).await?;
        }
        Self::insert_events(&mut tx, lobby, start.seq, start.events).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Cancels an open lobby or aborts a game in play: both end as `cancelled`, which
    /// `lobbies.status` already allows, so that SQLite's CHECK constraint need not change.
    pub(crate) async fn cancel_lobby(
        &self,
        lobby: Uuid,
        seq: u64,
        events: Option<&str>,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        let updated = sqlx::query(
            "UPDATE lobbies SET status = 'cancelled', seq = $1 \
             WHERE id = $2 AND status IN ('open', 'playing') AND seq < $1",
        )
        .bind(fit::<u64, i64>(seq, "seq")?)
        .bind(lobby)
        .execute(&mut *tx)
        .await?;
        Self::ensure_lobby_updated(&mut tx, DB::rows_affected(&updated), lobby, LIVE, seq).await?;
        Self::insert_events(&mut tx, lobby, seq, events).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The lobby is updated first so that a stale `seq` is reported as a conflict even
    /// for a seat that is not taken; a missing seat then rolls the update back.
    pub(crate) async fn update_seat(
        &self,
        lobby: Uuid,
        seat: &SeatRow,
        seq: u64,
        events: Option<&str>,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        Self::advance_live_lobby(&mut tx, lobby, seq).await?;
        Self::rewrite_seat(&mut tx, lobby, seat).await?;
        Self::insert_events(&mut tx, lobby, seq, events).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Sets the `seq` of a lobby that must be open or playing.
    async fn advance_live_lobby(tx: &mut Tx<DB>, lobby: Uuid, seq: u64) -> Result<(), StoreError> {
        let updated = sqlx::query(
            "UPDATE lobbies SET seq = $1 \
             WHERE id = $2 AND status IN ('open', 'playing') AND seq < $1",
        )
        .bind(fit::<u64, i64>(seq, "seq")?)
        .bind(lobby)
        .execute(&mut **tx)
        .await?;
        Self::ensure_lobby_updated(tx, DB::rows_affected(&updated), lobby, LIVE, seq).await
    }

    /// Rewrites what may change in a taken seat: its token, its control and its bot.
    /// [`StoreError::NotFound`] when the seat is not taken; the caller's transaction, dropped
    /// on that error, then rolls back whatever it wrote before.
    pub(super) async fn rewrite_seat(
        tx: &mut Tx<DB>,
        lobby: Uuid,
        seat: &SeatRow,
    ) -> Result<(), StoreError> {
        let updated = sqlx::query(
            "UPDATE seats SET token_hash = $1, control = $2, control_seq = $3, bot = $4 \
             WHERE lobby_id = $5 AND seat = $6",
        )
        .bind(&seat.token_hash)
        .bind(seat.control.to_column())
        .bind(fit::<u64, i64>(seat.control_seq, "control seq")?)
        .bind(&seat.bot)
        .bind(lobby)
        .bind(i16::from(seat.seat))
        .execute(&mut **tx)
        .await?;
        if DB::rows_affected(&updated) == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    /// Stores the events of update `seq` (the JSON text of its `events` array), if given: in
    /// the transaction that writes the change, so that a change is never stored without
    /// them. The write has already advanced the lobby's `seq` to `seq`, so no other row can
    /// hold this key; an operator's leftovers are replaced rather than refused.
    pub(super) async fn insert_events(
        tx: &mut Tx<DB>,
        lobby: Uuid,
        seq: u64,
        events: Option<&str>,
    ) -> Result<(), StoreError> {
        let Some(events) = events else {
            return Ok(());
        };
        sqlx::query(
            "INSERT INTO update_events (lobby_id, seq, events) VALUES ($1, $2, $3) \
             ON CONFLICT (lobby_id, seq) DO UPDATE SET events = excluded.events",
        )
        .bind(lobby)
        .bind(fit::<u64, i64>(seq, "seq")?)
        .bind(events)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    /// Sets the `seq` of a lobby that must still be open.
    async fn advance_open_lobby(tx: &mut Tx<DB>, lobby: Uuid, seq: u64) -> Result<(), StoreError> {
        let updated = sqlx::query(
            "UPDATE lobbies SET seq = $1 WHERE id = $2 AND status = 'open' AND seq < $1",
        )
        .bind(fit::<u64, i64>(seq, "seq")?)
        .bind(lobby)
        .execute(&mut **tx)
        .await?;
        Self::ensure_lobby_updated(
            tx,
            DB::rows_affected(&updated),
            lobby,
            &[LobbyStatus::Open],
            seq,
        )
        .await
    }

    pub(super) async fn insert_lobby(tx: &mut Tx<DB>, lobby: &LobbyRow) -> Result<(), StoreError> {
        sqlx::query(DB::INSERT_LOBBY)
            .bind(lobby.id)
            .bind(&lobby.name)
            .bind(lobby.public)
            .bind(&lobby.invite_hash)
            .bind(i16::from(lobby.seat_count))
            .bind(Json(&lobby.rules))
            .bind(Json(&lobby.clock))
            .bind(status_to_column(lobby.status))
            .bind(lobby.seed.map(seed_to_column))
            .bind(&lobby.deck_salt)
            .bind(fit::<u64, i64>(lobby.seq, "seq")?)
            .bind(lobby.created_at)
            .bind(lobby.started_at)
            .bind(lobby.finished_at)
            .bind(lobby.rated)
            .bind(lobby.chat_policy.to_column())
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    pub(super) async fn insert_seat(
        tx: &mut Tx<DB>,
        lobby: Uuid,
        seat: &SeatRow,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO seats (lobby_id, seat, display_name, player_id, token_hash, creator, \
             joined_at, control, control_seq, bot) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(lobby)
        .bind(i16::from(seat.seat))
        .bind(&seat.display_name)
        .bind(seat.player_id)
        .bind(&seat.token_hash)
        .bind(seat.creator)
        .bind(seat.joined_at)
        .bind(seat.control.to_column())
        .bind(fit::<u64, i64>(seat.control_seq, "control seq")?)
        .bind(&seat.bot)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    pub(super) fn lobby_from_row(row: &DB::Row) -> Result<LobbyRow, StoreError> {
        Ok(LobbyRow {
            id: row.try_get("id")?,
            name: row.try_get("name")?,
            public: row.try_get("is_public")?,
            invite_hash: row.try_get("invite_hash")?,
            seat_count: fit(row.try_get::<i16, _>("seat_count")?, "seat count")?,
            rules: row.try_get::<Json<Rules>, _>("rules")?.0,
            clock: row.try_get::<Json<TimeControl>, _>("clock")?.0,
            status: status_from_column(row.try_get("status")?)?,
            seed: row.try_get::<Option<i64>, _>("seed")?.map(seed_from_column),
            deck_salt: row.try_get("deck_salt")?,
            seq: fit(row.try_get::<i64, _>("seq")?, "seq")?,
            created_at: row.try_get("created_at")?,
            started_at: row.try_get("started_at")?,
            finished_at: row.try_get("finished_at")?,
            rated: row.try_get("rated")?,
            chat_policy: ChatPolicy::from_column(row.try_get("chat_policy")?)?,
        })
    }

    pub(super) fn seat_from_row(row: &DB::Row) -> Result<SeatRow, StoreError> {
        Ok(SeatRow {
            seat: fit(row.try_get::<i16, _>("seat")?, "seat")?,
            display_name: row.try_get("display_name")?,
            player_id: row.try_get("player_id")?,
            token_hash: row.try_get("token_hash")?,
            creator: row.try_get("creator")?,
            joined_at: row.try_get("joined_at")?,
            control: SeatControl::from_column(row.try_get("control")?)?,
            control_seq: fit(row.try_get::<i64, _>("control_seq")?, "control seq")?,
            bot: row.try_get("bot")?,
        })
    }

    /// A lobby and its seats, read in `tx` (a snapshot, so that they agree).
    pub(super) async fn lobby_with_seats(
        tx: &mut Tx<DB>,
        id: Uuid,
    ) -> Result<Option<(LobbyRow, Vec<SeatRow>)>, StoreError> {
        let lobby = sqlx::query(concat!(
            "SELECT ",
            lobby_columns!(),
            " FROM lobbies WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?;
        let Some(lobby) = lobby else {
            return Ok(None);
        };
        let seats = sqlx::query(concat!(
            "SELECT ",
            seat_columns!(),
            " FROM seats WHERE lobby_id = $1 ORDER BY seat"
        ))
        .bind(id)
        .fetch_all(&mut **tx)
        .await?;
        let seats = seats
            .iter()
            .map(Self::seat_from_row)
            .collect::<Result<_, _>>()?;
        Ok(Some((Self::lobby_from_row(&lobby)?, seats)))
    }
}
