//! The history of finished matches: writing a result, listing, detail and statistics.

use carcassonne_core::{Move, PointsByKind, Rules};
use sqlx::query::Query;
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, ColumnIndex, Database, Decode, Executor, Row};
use uuid::Uuid;

use super::{Bind, Column, SqlBackend, SqlStore, Tx};
use crate::convert::{TextColumn, expansions_mask, fit};
use crate::match_query::{MatchListQuery, Param, match_list_query, placeholders, values_rows};
use crate::{
    FinishedMatch, HeadToHead, JsonText, MAX_MATCH_PAGE, MatchCursor, MatchDetail, MatchFilter,
    MatchPage, MatchSeat, MatchStatus, MatchSummary, PlayerStats, StoreError, TimeControl,
};

/// Matches written per multi-row `INSERT` when importing: few enough that the statement
/// stays far below both databases' limits on bind parameters (SQLite 32766).
const MATCHES_PER_INSERT: usize = 100;

/// Seat rows written per multi-row `INSERT`, 13 parameters each.
const SEATS_PER_INSERT: usize = 500;

/// A query on driver `DB`, before or after its parameters are bound.
type DbQuery<'q, DB> = Query<'q, DB, <DB as Database>::Arguments>;

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
    /// Fetches one row more than the page holds: its presence is what says there is a
    /// next page, without a second query or a final empty page.
    pub(crate) async fn matches(
        &self,
        filter: &MatchFilter,
        after: Option<MatchCursor>,
        limit: u32,
    ) -> Result<MatchPage, StoreError> {
        let (page_size, query) = page_query(filter, after, limit);
        let mut tx = self.begin_snapshot().await?;
        let rows = Self::bind_params(sqlx::query(AssertSqlSafe(query.sql)), &query.params)
            .fetch_all(&mut *tx)
            .await?;
        let mut items = rows
            .iter()
            .map(Self::summary_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        let next = cut_to_page(&mut items, page_size);
        Self::fill_seats(&mut tx, &mut items).await?;
        tx.commit().await?;
        Ok(MatchPage { items, next })
    }

    pub(crate) async fn explain_matches(
        &self,
        filter: &MatchFilter,
        after: Option<MatchCursor>,
        limit: u32,
    ) -> Result<String, StoreError> {
        let (_, query) = page_query(filter, after, limit);
        let sql = format!("{} {}", DB::EXPLAIN, query.sql);
        let rows = Self::bind_params(sqlx::query(AssertSqlSafe(sql)), &query.params)
            .fetch_all(&self.pool)
            .await?;
        let lines: Vec<String> = rows.iter().map(DB::plan_line).collect::<Result<_, _>>()?;
        Ok(lines.join("\n"))
    }

    pub(crate) async fn match_detail(&self, id: Uuid) -> Result<Option<MatchDetail>, StoreError> {
        let mut tx = self.begin_snapshot().await?;
        let row = sqlx::query(
            "SELECT id, name, rules, player_count, started_at, finished_at, status, \
             tiles_placed, is_public, breakdown FROM matches JOIN match_records ON match_id = id \
             WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let breakdown = row.try_get::<Json<serde_json::Value>, _>("breakdown")?.0;
        let mut summaries = [Self::summary_from_row(&row)?];
        Self::fill_seats(&mut tx, &mut summaries).await?;
        tx.commit().await?;
        let [summary] = summaries;
        Ok(Some(MatchDetail { summary, breakdown }))
    }

    pub(crate) async fn match_record(
        &self,
        id: Uuid,
    ) -> Result<Option<serde_json::Value>, StoreError> {
        let row = sqlx::query("SELECT record FROM match_records WHERE match_id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|row| Ok(row.try_get::<Json<serde_json::Value>, _>("record")?.0))
            .transpose()
    }

    /// One aggregate over the player's rows of `match_players`, on its player index. The
    /// join from `players` gives no row at all for an unknown identity, and one row of
    /// zeros for a player without matches.
    pub(crate) async fn player_stats(&self, id: Uuid) -> Result<Option<PlayerStats>, StoreError> {
        let row = sqlx::query(
            "SELECT COUNT(mp.match_id) AS games, \
             COALESCE(SUM(CASE WHEN mp.winner THEN 1 ELSE 0 END), 0) AS wins, \
             COALESCE(SUM(mp.score), 0) AS total_score, \
             COALESCE(SUM(mp.road_points), 0) AS road_points, \
             COALESCE(SUM(mp.city_points), 0) AS city_points, \
             COALESCE(SUM(mp.monastery_points), 0) AS monastery_points, \
             COALESCE(SUM(mp.garden_points), 0) AS garden_points, \
             COALESCE(SUM(mp.field_points), 0) AS field_points \
             FROM players pl LEFT JOIN match_players mp ON mp.player_id = pl.id \
             WHERE pl.id = $1 GROUP BY pl.id",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(Self::stats_from_row).transpose()
    }

    pub(crate) async fn head_to_head(
        &self,
        player: Uuid,
        opponent: Uuid,
    ) -> Result<HeadToHead, StoreError> {
        let row = sqlx::query(
            "SELECT COUNT(a.match_id) AS games, \
             COALESCE(SUM(CASE WHEN a.winner THEN 1 ELSE 0 END), 0) AS wins, \
             COALESCE(SUM(CASE WHEN b.winner THEN 1 ELSE 0 END), 0) AS opponent_wins, \
             COALESCE(SUM(CASE WHEN a.score > b.score THEN 1 ELSE 0 END), 0) AS ahead, \
             COALESCE(SUM(CASE WHEN b.score > a.score THEN 1 ELSE 0 END), 0) AS opponent_ahead, \
             COALESCE(SUM(a.score), 0) AS total_score, \
             COALESCE(SUM(b.score), 0) AS opponent_total_score \
             FROM match_players a \
             JOIN match_players b ON b.match_id = a.match_id AND b.player_id = $2 \
             WHERE a.player_id = $1",
        )
        .bind(player)
        .bind(opponent)
        .fetch_one(&self.pool)
        .await?;
        let count = |name: &'static str| -> Result<u64, StoreError> {
            fit(row.try_get::<i64, _>(name)?, name)
        };
        let games = count("games")?;
        let average = |name: &'static str| -> Result<f64, StoreError> {
            let total: i64 = row.try_get(name)?;
            Ok(if games == 0 {
                0.0
            } else {
                total as f64 / games as f64
            })
        };
        Ok(HeadToHead {
            games,
            wins: count("wins")?,
            opponent_wins: count("opponent_wins")?,
            ahead: count("ahead")?,
            opponent_ahead: count("opponent_ahead")?,
            average_score: average("total_score")?,
            opponent_average_score: average("opponent_total_score")?,
        })
    }

    pub(crate) async fn import_matches(&self, matches: &[FinishedMatch]) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        Self::insert_matches(&mut tx, matches).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Writes the history rows of finished matches: `matches`, `match_records` and one
    /// `match_players` row per seat, in multi-row statements; then rates the rated ones,
    /// in order.
    pub(super) async fn insert_matches(
        tx: &mut Tx<DB>,
        matches: &[FinishedMatch],
    ) -> Result<(), StoreError> {
        for chunk in matches.chunks(MATCHES_PER_INSERT) {
            Self::insert_match_rows(tx, chunk).await?;
            Self::insert_record_rows(tx, chunk).await?;
            let seats: Vec<(&FinishedMatch, &MatchSeat)> = chunk
                .iter()
                .flat_map(|result| result.seats.iter().map(move |seat| (result, seat)))
                .collect();
            for seat_chunk in seats.chunks(SEATS_PER_INSERT) {
                Self::insert_seat_rows(tx, seat_chunk).await?;
            }
            for result in chunk {
                Self::rate_recorded_match(tx, result).await?;
            }
        }
        Ok(())
    }

    async fn insert_match_rows(tx: &mut Tx<DB>, chunk: &[FinishedMatch]) -> Result<(), StoreError> {
        let sql = format!(
            "INSERT INTO matches (id, name, rules, expansions, player_count, started_at, \
             finished_at, status, tiles_placed) VALUES {}",
            values_rows(chunk.len(), 9)
        );
        let mut query = sqlx::query(AssertSqlSafe(sql));
        for result in chunk {
            query = query
                .bind(result.id)
                .bind(&result.name)
                .bind(Json(&result.rules))
                .bind(expansions_mask(&result.rules.expansions))
                .bind(fit::<usize, i16>(result.seats.len(), "player count")?)
                .bind(result.started_at)
                .bind(result.finished_at)
                .bind(result.status.to_column())
                .bind(fit::<u32, i32>(result.tiles_placed, "tiles placed")?);
        }
        query.execute(&mut **tx).await?;
        Ok(())
    }

    async fn insert_record_rows(
        tx: &mut Tx<DB>,
        chunk: &[FinishedMatch],
    ) -> Result<(), StoreError> {
        let sql = format!(
            "INSERT INTO match_records (match_id, breakdown, record) VALUES {}",
            values_rows(chunk.len(), 3)
        );
        let mut query = sqlx::query(AssertSqlSafe(sql));
        for result in chunk {
            query = query
                .bind(result.id)
                .bind(Json(&result.breakdown))
                .bind(Json(&result.record));
        }
        query.execute(&mut **tx).await?;
        Ok(())
    }

    async fn insert_seat_rows(
        tx: &mut Tx<DB>,
        seats: &[(&FinishedMatch, &MatchSeat)],
    ) -> Result<(), StoreError> {
        if seats.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "INSERT INTO match_players (match_id, seat, display_name, player_id, score, winner, \
             resigned, finished_at, road_points, city_points, monastery_points, garden_points, \
             field_points) VALUES {}",
            values_rows(seats.len(), 13)
        );
        let mut query = sqlx::query(AssertSqlSafe(sql));
        for (result, seat) in seats {
            query = query
                .bind(result.id)
                .bind(i16::from(seat.seat))
                .bind(&seat.display_name)
                .bind(seat.player_id)
                .bind(fit::<u32, i32>(seat.score, "score")?)
                .bind(seat.winner)
                .bind(seat.resigned)
                .bind(result.finished_at);
            for points in points_columns(&seat.points) {
                query = query.bind(fit::<u32, i32>(points, "points")?);
            }
        }
        query.execute(&mut **tx).await?;
        Ok(())
    }

    /// Reads the seats of every match in `summaries`, in one query, into their summaries.
    async fn fill_seats(tx: &mut Tx<DB>, summaries: &mut [MatchSummary]) -> Result<(), StoreError> {
        if summaries.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "SELECT match_id, seat, display_name, player_id, score, winner, resigned, \
             road_points, city_points, monastery_points, garden_points, field_points \
             FROM match_players WHERE match_id IN ({}) ORDER BY match_id, seat",
            placeholders(1, summaries.len())
        );
        let mut query = sqlx::query(AssertSqlSafe(sql));
        for summary in summaries.iter() {
            query = query.bind(summary.id);
        }
        let rows = query.fetch_all(&mut **tx).await?;
        let mut seats = Self::group_rows(&rows, "match_id", Self::match_seat_from_row)?;
        for summary in summaries {
            summary.seats = seats.remove(&summary.id).unwrap_or_default();
        }
        Ok(())
    }

    fn bind_params<'q>(mut query: DbQuery<'q, DB>, params: &[Param]) -> DbQuery<'q, DB> {
        for param in params {
            query = match *param {
                Param::Uuid(value) => query.bind(value),
                Param::BigInt(value) => query.bind(value),
                Param::SmallInt(value) => query.bind(value),
                Param::Text(value) => query.bind(value),
            };
        }
        query
    }

    /// A summary without its seats, which `fill_seats` adds.
    fn summary_from_row(row: &DB::Row) -> Result<MatchSummary, StoreError> {
        Ok(MatchSummary {
            id: row.try_get("id")?,
            name: row.try_get("name")?,
            rules: row.try_get::<Json<Rules>, _>("rules")?.0,
            player_count: fit(row.try_get::<i16, _>("player_count")?, "player count")?,
            started_at: row.try_get("started_at")?,
            finished_at: row.try_get("finished_at")?,
            status: MatchStatus::from_column(row.try_get("status")?)?,
            tiles_placed: fit(row.try_get::<i32, _>("tiles_placed")?, "tiles placed")?,
            seats: Vec::new(),
            public: row.try_get("is_public")?,
        })
    }

    fn match_seat_from_row(row: &DB::Row) -> Result<MatchSeat, StoreError> {
        Ok(MatchSeat {
            seat: fit(row.try_get::<i16, _>("seat")?, "seat")?,
            display_name: row.try_get("display_name")?,
            player_id: row.try_get("player_id")?,
            score: fit(row.try_get::<i32, _>("score")?, "score")?,
            winner: row.try_get("winner")?,
            resigned: row.try_get("resigned")?,
            points: Self::points_from_row::<i32>(row)?,
        })
    }

    fn stats_from_row(row: &DB::Row) -> Result<PlayerStats, StoreError> {
        let games: u64 = fit(row.try_get::<i64, _>("games")?, "games")?;
        let wins: u64 = fit(row.try_get::<i64, _>("wins")?, "wins")?;
        let total_score: i64 = row.try_get("total_score")?;
        let average_score = if games == 0 {
            0.0
        } else {
            total_score as f64 / games as f64
        };
        Ok(PlayerStats {
            games,
            wins,
            average_score,
            points: Self::points_from_row::<i64>(row)?,
        })
    }

    /// The five `*_points` columns of a row, as stored (`i32`) or summed (`i64`).
    fn points_from_row<T>(row: &DB::Row) -> Result<PointsByKind, StoreError>
    where
        T: Column<DB> + Copy + std::fmt::Display,
        u32: TryFrom<T>,
    {
        let column = |name: &'static str| -> Result<u32, StoreError> {
            fit(row.try_get::<T, _>(name)?, name)
        };
        Ok(PointsByKind {
            road: column("road_points")?,
            city: column("city_points")?,
            monastery: column("monastery_points")?,
            garden: column("garden_points")?,
            field: column("field_points")?,
        })
    }
}

/// A seat's points by kind in the order of the `*_points` columns.
fn points_columns(points: &PointsByKind) -> [u32; 5] {
    [
        points.road,
        points.city,
        points.monastery,
        points.garden,
        points.field,
    ]
}

/// The page size `limit` asks for, within bounds, and the query for such a page.
fn page_query(
    filter: &MatchFilter,
    after: Option<MatchCursor>,
    limit: u32,
) -> (usize, MatchListQuery) {
    let page_size = limit.clamp(1, MAX_MATCH_PAGE);
    let query = match_list_query(filter, after, i64::from(page_size) + 1);
    (page_size as usize, query)
}

/// Drops the extra row of a page fetched one row long; when there was one, the cursor of
/// the page's last match says where the next page starts.
fn cut_to_page(items: &mut Vec<MatchSummary>, page_size: usize) -> Option<MatchCursor> {
    if items.len() <= page_size {
        return None;
    }
    items.truncate(page_size);
    items.last().map(|last| MatchCursor {
        finished_at: last.finished_at,
        id: last.id,
    })
}
