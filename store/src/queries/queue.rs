//! Quick play's tickets, and the matchmaking round that turns them into lobbies.

use carcassonne_core::{Move, Rules};
use sqlx::types::Json;
use sqlx::{ColumnIndex, Decode, Executor, Row};
use uuid::Uuid;

use super::{Bind, Column, SqlBackend, SqlStore};
use crate::convert::fit;
use crate::{
    MatchPlanner, Millis, QueueRound, QueueTicket, QueuedLobby, StoreError, TicketStatus,
    TimeControl,
};

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
    /// Writes a waiting ticket, unless `max_waiting` tickets already wait (false then).
    /// A player with a waiting ticket already gets [`StoreError::Conflict`] (the unique
    /// index holds across nodes). The count is read in the same transaction: on Postgres
    /// two nodes may each see room for the last place, so the bound may be passed by one
    /// ticket per node.
    pub(crate) async fn enqueue(
        &self,
        ticket: &QueueTicket,
        max_waiting: u64,
    ) -> Result<bool, StoreError> {
        let mut tx = self.begin_write().await?;
        let waiting: i64 =
            sqlx::query("SELECT COUNT(*) FROM queue_tickets WHERE status = 'waiting'")
                .fetch_one(&mut *tx)
                .await?
                .try_get(0)?;
        if fit::<i64, u64>(waiting, "waiting tickets")? >= max_waiting {
            return Ok(false);
        }
        sqlx::query(
            "INSERT INTO queue_tickets (id, player_id, token_hash, display_name, min_players, \
             max_players, rules, clock, rated, match_key, rating, created_at, expires_at, \
             status) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'waiting')",
        )
        .bind(ticket.id)
        .bind(ticket.player_id)
        .bind(&ticket.token_hash)
        .bind(&ticket.display_name)
        .bind(i16::from(ticket.min_players))
        .bind(i16::from(ticket.max_players))
        .bind(Json(&ticket.rules))
        .bind(Json(&ticket.clock))
        .bind(ticket.rated)
        .bind(&ticket.match_key)
        .bind(ticket.rating)
        .bind(ticket.created_at)
        .bind(ticket.expires_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    pub(crate) async fn queue_ticket(&self, id: Uuid) -> Result<Option<QueueTicket>, StoreError> {
        let row = sqlx::query(concat!(
            "SELECT ",
            ticket_columns!(),
            " FROM queue_tickets WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(Self::ticket_from_row).transpose()
    }

    /// Cancels a waiting ticket: false if it no longer waits (matched, expired, already
    /// cancelled) or does not exist.
    pub(crate) async fn cancel_ticket(&self, id: Uuid) -> Result<bool, StoreError> {
        let mut tx = self.begin_write().await?;
        let result = sqlx::query(
            "UPDATE queue_tickets SET status = 'cancelled' WHERE id = $1 AND status = 'waiting'",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(DB::rows_affected(&result) == 1)
    }

    /// One matchmaking round, in one transaction: expires the tickets whose time ran out
    /// at `now`, takes up to `limit` waiting tickets (oldest first), lets `plan` form
    /// lobbies of them, and writes each lobby with its seats and marks its tickets
    /// matched. Nothing is written if any of it fails, and a ticket `plan` seats that was
    /// not among those taken fails the round.
    pub(crate) async fn queue_round(
        &self,
        now: Millis,
        limit: u32,
        plan: MatchPlanner,
    ) -> Result<QueueRound, StoreError> {
        let mut tx = self.begin_write().await?;
        let turn: bool = sqlx::query(DB::QUEUE_ROUND_TURN)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
        if !turn {
            tx.commit().await?;
            return Ok(QueueRound::default());
        }
        let expired = sqlx::query(
            "UPDATE queue_tickets SET status = 'expired' \
             WHERE status = 'waiting' AND expires_at <= $1",
        )
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let rows = sqlx::query(DB::TAKE_WAITING_TICKETS)
            .bind(i64::from(limit))
            .fetch_all(&mut *tx)
            .await?;
        let tickets: Vec<QueueTicket> = rows
            .iter()
            .map(Self::ticket_from_row)
            .collect::<Result<_, _>>()?;
        let lobbies = if tickets.is_empty() {
            Vec::new()
        } else {
            plan(&tickets)
        };
        for formed in &lobbies {
            Self::insert_queued_lobby(&mut tx, formed, &tickets).await?;
        }
        tx.commit().await?;
        Ok(QueueRound {
            ran: true,
            expired: DB::rows_affected(&expired),
            lobbies,
        })
    }

    async fn insert_queued_lobby(
        tx: &mut super::Tx<DB>,
        formed: &QueuedLobby,
        taken: &[QueueTicket],
    ) -> Result<(), StoreError> {
        Self::insert_lobby(tx, &formed.lobby).await?;
        for seat in &formed.seats {
            Self::insert_seat(tx, formed.lobby.id, seat).await?;
        }
        for &(ticket, seat) in &formed.tickets {
            if !taken.iter().any(|taken| taken.id == ticket) {
                return Err(StoreError::Conflict(format!(
                    "ticket {ticket} was not taken in this round"
                )));
            }
            let marked = sqlx::query(
                "UPDATE queue_tickets SET status = 'matched', lobby_id = $2, seat = $3 \
                 WHERE id = $1 AND status = 'waiting'",
            )
            .bind(ticket)
            .bind(formed.lobby.id)
            .bind(i16::from(seat))
            .execute(&mut **tx)
            .await?;
            if DB::rows_affected(&marked) != 1 {
                return Err(StoreError::Conflict(format!(
                    "ticket {ticket} no longer waits"
                )));
            }
        }
        Ok(())
    }

    fn ticket_from_row(row: &DB::Row) -> Result<QueueTicket, StoreError> {
        Ok(QueueTicket {
            id: row.try_get("id")?,
            player_id: row.try_get("player_id")?,
            token_hash: row.try_get("token_hash")?,
            display_name: row.try_get("display_name")?,
            min_players: fit(row.try_get::<i16, _>("min_players")?, "min players")?,
            max_players: fit(row.try_get::<i16, _>("max_players")?, "max players")?,
            rules: row.try_get::<Json<Rules>, _>("rules")?.0,
            clock: row.try_get::<Json<TimeControl>, _>("clock")?.0,
            rated: row.try_get("rated")?,
            match_key: row.try_get("match_key")?,
            rating: row.try_get("rating")?,
            created_at: row.try_get("created_at")?,
            expires_at: row.try_get("expires_at")?,
            status: ticket_status(row.try_get("status")?)?,
            lobby_id: row.try_get("lobby_id")?,
            seat: row
                .try_get::<Option<i16>, _>("seat")?
                .map(|seat| fit(seat, "seat"))
                .transpose()?,
        })
    }
}

fn ticket_status(stored: &str) -> Result<TicketStatus, StoreError> {
    match stored {
        "waiting" => Ok(TicketStatus::Waiting),
        "matched" => Ok(TicketStatus::Matched),
        "cancelled" => Ok(TicketStatus::Cancelled),
        "expired" => Ok(TicketStatus::Expired),
        other => Err(StoreError::Corrupt(format!("ticket status {other:?}"))),
    }
}
