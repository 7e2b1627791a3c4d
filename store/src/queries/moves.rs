//! Games in play: their move logs, their end, and their restoration after a restart.

use carcassonne_core::{Move, Rules};
use sqlx::types::Json;
use sqlx::{ColumnIndex, Decode, Executor, Row};
use uuid::Uuid;

use super::{Bind, Column, SqlBackend, SqlStore, Tx, WriterKind, detached_writer_connection};
use crate::convert::{TextColumn, fit};
use crate::ratings::RatingChange;
use crate::{
    FinalChange, GameEnding, GameLog, JsonText, LIVE_CHAT_ENTRIES, LiveGame, LobbyStatus,
    MoveOrigin, MoveRow, RatingsAnnouncement, StoreError, StoredAt, TimeControl,
};

/// The reads of live games, all selecting their lobbies by one condition.
struct LiveQueries {
    /// The lobbies, oldest first.
    lobbies: &'static str,
    /// Their seats, grouped by lobby.
    seats: &'static str,
    /// Their moves, grouped by game, in `seq` order.
    moves: &'static str,
    /// The newest [`LIVE_CHAT_ENTRIES`] entries of each one's chat (a bound parameter),
    /// grouped by game, in `chat_seq` order.
    chat: &'static str,
    /// Their chat mutes, grouped by game.
    chat_mutes: &'static str,
}

/// The [`LiveQueries`] of the lobbies that satisfy `$condition`, a string literal, with
/// the number of chat entries to read bound as `$chat_limit`. The condition `live_games`
/// uses is the predicate of the partial index `lobbies_live`.
///
/// The chat of every game is read in one statement: each game's entries numbered from
/// its newest (`ROW_NUMBER`, which both databases have), and the first few of each kept.
/// At start-up, with thousands of games, one statement per game would be as many round
/// trips.
macro_rules! live_queries {
    ($condition:literal, $chat_limit:literal) => {
        LiveQueries {
            lobbies: concat!(
                "SELECT ",
                lobby_columns!(),
                " FROM lobbies WHERE ",
                $condition,
                " ORDER BY created_at, id"
            ),
            seats: concat!(
                "SELECT lobby_id, ",
                seat_columns!(),
                " FROM seats WHERE lobby_id IN (SELECT id FROM lobbies WHERE ",
                $condition,
                ") ORDER BY lobby_id, seat"
            ),
            moves: concat!(
                "SELECT game_id, ",
                move_columns!(),
                " FROM moves WHERE game_id IN (SELECT id FROM lobbies WHERE ",
                $condition,
                ") ORDER BY game_id, seq"
            ),
            chat: concat!(
                "SELECT game_id, chat_seq, audience, created_at, entry FROM (\
                 SELECT game_id, chat_seq, audience, created_at, entry, \
                 ROW_NUMBER() OVER (PARTITION BY game_id ORDER BY chat_seq DESC) AS recency \
                 FROM chat_entries WHERE game_id IN (SELECT id FROM lobbies WHERE ",
                $condition,
                ")) AS recent WHERE recency <= ",
                $chat_limit,
                " ORDER BY game_id, chat_seq"
            ),
            chat_mutes: concat!(
                "SELECT game_id, seat, author FROM chat_mutes \
                 WHERE game_id IN (SELECT id FROM lobbies WHERE ",
                $condition,
                ") ORDER BY game_id, seat, author"
            ),
        }
    };
}

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
    for<'a> Json<&'a JsonText>: Bind<DB>,
{
    /// The lobby is updated before the move is inserted so that a stale `seq` is reported
    /// as such; a repeated `(seat, command_id)` under a new `seq` then fails on the
    /// insert, and the rollback undoes the update.
    pub(crate) async fn append_move(&self, game: Uuid, mv: &MoveRow) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        let updated = Self::advance_playing_game(&mut tx, game, mv.seq).await?;
        Self::ensure_lobby_updated(&mut tx, updated, game, &[LobbyStatus::Playing], mv.seq).await?;
        Self::insert_move(&mut tx, game, mv).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Writes moves of different games together (see `group_commit`): one answer per
    /// move, in order. The backend writes the batch its own way; when it refuses the
    /// batch, or leaves some of its moves unwritten, those are written again one by one,
    /// which says precisely why each is refused (or writes it, if only another move of
    /// the batch was at fault).
    pub(crate) async fn append_moves(
        &self,
        moves: &[(Uuid, &MoveRow)],
    ) -> Vec<Result<(), StoreError>> {
        let written = match self.write_batch(moves).await {
            Ok(written) => written,
            // A refusal that concerns one game (a conflict, a missing game, a game another
            // node owns) says nothing of the others.
            Err(StoreError::Conflict(_) | StoreError::NotFound | StoreError::NotOwner(_)) => {
                vec![false; moves.len()]
            }
            Err(other) => return vec![Err(other); moves.len()],
        };
        let mut answers = Vec::with_capacity(moves.len());
        for (&(game, mv), written) in moves.iter().zip(written) {
            answers.push(match written {
                true => Ok(()),
                false => self.append_move(game, mv).await,
            });
        }
        answers
    }

    /// Writes a batch: where writes commit together, as one write in the shared
    /// transaction (see `commit_groups`), ahead of all but a few other writers; else on
    /// the writer's own connection (`write_batch_alone`).
    async fn write_batch(&self, moves: &[(Uuid, &MoveRow)]) -> Result<Vec<bool>, StoreError> {
        if self.commit_groups.is_none() {
            return self.write_batch_alone(moves).await;
        }
        let mut tx = self.begin_write_as(WriterKind::Batch).await?;
        let written = DB::write_moves_together(&mut tx, moves)
            .await
            .map_err(|failure| failure.error)?;
        tx.commit().await?;
        Ok(written)
    }

    /// Writes a batch on the writer's own connection: `BEGIN`, its statements and
    /// `COMMIT`, and nothing more. Through the pool, a batch cost three more round trips
    /// (a ping when the connection is taken, and a check that it left no transaction open
    /// and another ping when it comes back), each a wake-up of the writer's thread and of
    /// the database; with one game playing, those wake-ups were most of the server's CPU
    /// per move. So the writer takes a connection from the pool once and detaches it.
    /// Instead of checking it, it drops it: after any failure, and with any batch that
    /// is abandoned mid-write (the batch's future owns the connection while it writes),
    /// so a connection in an unknown state never serves another batch. A connection
    /// found dead before anything was committed is replaced at once, and the batch
    /// written on the new one (see `BatchFailure`).
    async fn write_batch_alone(&self, moves: &[(Uuid, &MoveRow)]) -> Result<Vec<bool>, StoreError> {
        let mut held = self.batch_connection.lock().await;
        if self.pool.is_closed() {
            held.take();
            return Err(sqlx::Error::PoolClosed.into());
        }
        let reused = held.take();
        let was_reused = reused.is_some();
        let mut connection = match reused {
            Some(connection) => connection,
            None => detached_writer_connection(&self.pool).await?,
        };
        let mut written = DB::write_moves_together(&mut connection, moves).await;
        if was_reused
            && written
                .as_ref()
                .is_err_and(|f| f.session_lost_before_commit)
        {
            connection = detached_writer_connection(&self.pool).await?;
            written = DB::write_moves_together(&mut connection, moves).await;
        }
        let written = written.map_err(|failure| failure.error)?;
        *held = Some(connection);
        Ok(written)
    }

    /// As in `append_move`, the lobby is updated first, so that a stale `seq` is reported
    /// as such before the final change can fail for another reason.
    pub(crate) async fn finish_game(
        &self,
        game: Uuid,
        ending: GameEnding<'_>,
    ) -> Result<Option<Vec<RatingChange>>, StoreError> {
        let GameEnding {
            last,
            result,
            events,
            announcement,
        } = ending;
        let mut tx = self.begin_write().await?;
        let seq = last.seq();
        let updated = sqlx::query(
            "UPDATE lobbies SET status = 'finished', finished_at = $1, seq = $2 \
             WHERE id = $3 AND status = 'playing' AND seq < $2",
        )
        .bind(result.finished_at)
        .bind(fit::<u64, i64>(seq, "seq")?)
        .bind(game)
        .execute(&mut *tx)
        .await?;
        Self::ensure_lobby_updated(
            &mut tx,
            DB::rows_affected(&updated),
            game,
            &[LobbyStatus::Playing],
            seq,
        )
        .await?;
        match last {
            FinalChange::Move(mv) => Self::insert_move(&mut tx, game, mv).await?,
            FinalChange::Seat { seat, .. } => Self::rewrite_seat(&mut tx, game, seat).await?,
        }
        Self::insert_events(&mut tx, game, seq, events).await?;
        Self::insert_matches(&mut tx, std::slice::from_ref(result)).await?;
        // A match is as public as its lobby was.
        sqlx::query(
            "UPDATE matches SET is_public = (SELECT is_public FROM lobbies WHERE id = $1) \
             WHERE id = $1",
        )
        .bind(game)
        .execute(&mut *tx)
        .await?;
        let announced = match (announcement, &result.rating) {
            (Some(announcement), Some(_)) => {
                Some(Self::announce_ratings(&mut tx, game, seq + 1, announcement).await?)
            }
            _ => None,
        };
        tx.commit().await?;
        Ok(announced)
    }

    /// Stores update `seq` of the finished `game`: the announcement of the rating
    /// changes its match just made.
    async fn announce_ratings(
        tx: &mut Tx<DB>,
        game: Uuid,
        seq: u64,
        announcement: RatingsAnnouncement,
    ) -> Result<Vec<RatingChange>, StoreError> {
        let changes = Self::rating_changes_of(&mut **tx, game).await?;
        sqlx::query("UPDATE lobbies SET seq = $1 WHERE id = $2")
            .bind(fit::<u64, i64>(seq, "seq")?)
            .bind(game)
            .execute(&mut **tx)
            .await?;
        Self::insert_events(tx, game, seq, Some(&announcement(&changes))).await?;
        Ok(changes)
    }

    pub(crate) async fn stored_at(
        &self,
        game: Uuid,
        seq: u64,
    ) -> Result<Option<StoredAt>, StoreError> {
        let row = sqlx::query(DB::STORED_AT)
            .bind(game)
            .bind(fit::<u64, i64>(seq, "seq")?)
            .fetch_optional(&self.pool)
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let seat: Option<i16> = row.try_get("seat")?;
        let command_id: Option<String> = row.try_get("command_id")?;
        Ok(Some(StoredAt {
            seq: fit(row.try_get::<i64, _>("seq")?, "seq")?,
            owner: row.try_get("owner_node")?,
            owner_alive: row.try_get("owner_alive")?,
            command_at: match (seat, command_id) {
                (Some(seat), Some(id)) => Some((fit(seat, "seat")?, id)),
                _ => None,
            },
        }))
    }

    pub(crate) async fn live_game_ids(&self) -> Result<Vec<Uuid>, StoreError> {
        let sql = "SELECT id FROM lobbies WHERE status IN ('open', 'playing') \
                   ORDER BY created_at, id";
        Ok(sqlx::query_scalar(sql).fetch_all(&self.pool).await?)
    }

    /// The stored `seq` of every open or playing lobby `node` owns (`""`: the games no
    /// node owns, as on a single node).
    pub(crate) async fn live_seqs(&self, node: &str) -> Result<Vec<(Uuid, u64)>, StoreError> {
        let sql = "SELECT id, seq FROM lobbies WHERE status IN ('open', 'playing') \
                   AND COALESCE(owner_node, '') = $1";
        let rows = sqlx::query(sql).bind(node).fetch_all(&self.pool).await?;
        rows.iter()
            .map(|row| {
                Ok((
                    row.try_get("id")?,
                    fit(row.try_get::<i64, _>("seq")?, "seq")?,
                ))
            })
            .collect()
    }

    pub(crate) async fn live_games(&self) -> Result<Vec<LiveGame>, StoreError> {
        let queries = live_queries!("status IN ('open', 'playing')", "$1");
        self.read_live(&queries, None).await
    }

    /// The one game `live_games` would return with this id, read the same way: a node
    /// that takes over a game (its owner's lease lapsed) restores that game alone.
    pub(crate) async fn live_game(&self, id: Uuid) -> Result<Option<LiveGame>, StoreError> {
        let queries = live_queries!("id = $1 AND status IN ('open', 'playing')", "$2");
        Ok(self.read_live(&queries, Some(id)).await?.pop())
    }

    /// Reads the lobbies `queries` select, with their seats, moves and chat. The reads
    /// select their lobbies with the same condition, and run in one snapshot so that they
    /// agree; `id`, when given, is bound as `$1` in each, and the chat's limit after it.
    async fn read_live(
        &self,
        queries: &LiveQueries,
        id: Option<Uuid>,
    ) -> Result<Vec<LiveGame>, StoreError> {
        let chat_limit = fit::<usize, i64>(LIVE_CHAT_ENTRIES, "chat entries")?;
        let mut tx = self.begin_snapshot().await?;
        let reads = [
            (queries.lobbies, None),
            (queries.seats, None),
            (queries.moves, None),
            (queries.chat, Some(chat_limit)),
            (queries.chat_mutes, None),
        ];
        let mut rows = Vec::with_capacity(reads.len());
        for (sql, limit) in reads {
            let mut query = sqlx::query(sql);
            if let Some(id) = id {
                query = query.bind(id);
            }
            if let Some(limit) = limit {
                query = query.bind(limit);
            }
            rows.push(query.fetch_all(&mut *tx).await?);
        }
        tx.commit().await?;
        Self::assemble_live(rows.try_into().expect("five queries, five results"))
    }

    /// The games of the rows of [`LiveQueries`]' five reads, in their order.
    fn assemble_live(rows: [Vec<DB::Row>; 5]) -> Result<Vec<LiveGame>, StoreError> {
        let [lobbies, seats, moves, chat, chat_mutes] = rows;
        let mut seats = Self::group_rows(&seats, "lobby_id", Self::seat_from_row)?;
        let mut moves = Self::group_rows(&moves, "game_id", Self::move_from_row)?;
        let mut chat = Self::group_rows(&chat, "game_id", Self::chat_entry_from_row)?;
        let mut chat_mutes = Self::group_rows(&chat_mutes, "game_id", Self::chat_mute_from_row)?;
        lobbies
            .iter()
            .map(|row| {
                let lobby = Self::lobby_from_row(row)?;
                Ok(LiveGame {
                    seats: seats.remove(&lobby.id).unwrap_or_default(),
                    moves: moves.remove(&lobby.id).unwrap_or_default(),
                    chat: chat.remove(&lobby.id).unwrap_or_default(),
                    chat_mutes: chat_mutes.remove(&lobby.id).unwrap_or_default(),
                    lobby,
                })
            })
            .collect()
    }

    /// A lobby of any status with its seats, moves and stored update events, read in
    /// one snapshot so that they agree.
    pub(crate) async fn game_log(&self, id: Uuid) -> Result<Option<GameLog>, StoreError> {
        let mut tx = self.begin_snapshot().await?;
        let Some((lobby, seats)) = Self::lobby_with_seats(&mut tx, id).await? else {
            tx.commit().await?;
            return Ok(None);
        };
        let moves = sqlx::query(concat!(
            "SELECT ",
            move_columns!(),
            " FROM moves WHERE game_id = $1 ORDER BY seq"
        ))
        .bind(id)
        .fetch_all(&mut *tx)
        .await?;
        let events =
            sqlx::query("SELECT seq, events FROM update_events WHERE lobby_id = $1 ORDER BY seq")
                .bind(id)
                .fetch_all(&mut *tx)
                .await?;
        tx.commit().await?;
        let events = events
            .iter()
            .map(|row| {
                let seq = fit(row.try_get::<i64, _>("seq")?, "seq")?;
                Ok((seq, row.try_get::<String, _>("events")?))
            })
            .collect::<Result<_, StoreError>>()?;
        Ok(Some(GameLog {
            lobby,
            seats,
            moves: moves
                .iter()
                .map(Self::move_from_row)
                .collect::<Result<_, _>>()?,
            events,
        }))
    }

    /// Sets a playing game's `seq` to `seq` if it is newer; how many rows that changed.
    async fn advance_playing_game(
        tx: &mut Tx<DB>,
        game: Uuid,
        seq: u64,
    ) -> Result<u64, StoreError> {
        let updated = sqlx::query(
            "UPDATE lobbies SET seq = $1 WHERE id = $2 AND status = 'playing' AND seq < $1",
        )
        .bind(fit::<u64, i64>(seq, "seq")?)
        .bind(game)
        .execute(&mut **tx)
        .await?;
        Ok(DB::rows_affected(&updated))
    }

    async fn insert_move(tx: &mut Tx<DB>, game: Uuid, mv: &MoveRow) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO moves (game_id, seq, seat, command_id, move_json, created_at, origin) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(game)
        .bind(fit::<u64, i64>(mv.seq, "seq")?)
        .bind(i16::from(mv.seat))
        .bind(&mv.command_id)
        .bind(Json(&mv.mv))
        .bind(mv.created_at)
        .bind(mv.origin.to_column())
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    fn move_from_row(row: &DB::Row) -> Result<MoveRow, StoreError> {
        Ok(MoveRow {
            seq: fit(row.try_get::<i64, _>("seq")?, "seq")?,
            seat: fit(row.try_get::<i16, _>("seat")?, "seat")?,
            command_id: row.try_get("command_id")?,
            mv: row.try_get::<Json<Move>, _>("move_json")?.0,
            created_at: row.try_get("created_at")?,
            origin: MoveOrigin::from_column(row.try_get("origin")?)?,
        })
    }
}

impl SqlStore<sqlx::Postgres> {
    /// The live games among `ids`, read as [`Self::live_games`] reads them but with the
    /// five reads side by side, each on a connection of its own, rather than one after
    /// another in one snapshot: one round trip instead of seven, for a node that takes
    /// games over from an owner that stopped answering (a slow database made each
    /// round trip count). Only for games whose leases the caller has just taken and has
    /// not started: nobody else can change them meanwhile (the fencing trigger refuses
    /// every other node's change of their `seq`, which every change of their lobby,
    /// seats or moves makes), so the reads agree without a snapshot. Chat is written
    /// without a `seq`, so an entry another node writes meanwhile may be missed here, as
    /// one written just after any read would be.
    pub(crate) async fn live_games_taken(&self, ids: &[Uuid]) -> Result<Vec<LiveGame>, StoreError> {
        let queries = live_queries!("id = ANY($1) AND status IN ('open', 'playing')", "$2");
        let chat_limit = fit::<usize, i64>(LIVE_CHAT_ENTRIES, "chat entries")?;
        let read = |sql: &'static str| sqlx::query(sql).bind(ids).fetch_all(&self.pool);
        let chat = sqlx::query(queries.chat)
            .bind(ids)
            .bind(chat_limit)
            .fetch_all(&self.pool);
        let rows = tokio::try_join!(
            read(queries.lobbies),
            read(queries.seats),
            read(queries.moves),
            chat,
            read(queries.chat_mutes),
        )?;
        Self::assemble_live(rows.into())
    }
}
