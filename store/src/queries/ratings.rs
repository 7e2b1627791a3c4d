//! Ratings: rating a match as it is recorded, rebuilding every rating from the rated
//! matches, the leaderboards and a player's ratings and their history.
//!
//! Every rating write first takes the next number of the rating ledger, whose one row it
//! then holds locked until it commits: rated matches are rated one at a time across all
//! nodes, each from the ratings the one before it left, and `rating_seq` is that order.

use std::collections::HashMap;

use carcassonne_core::{Move, Rules};
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, ColumnIndex, Decode, Executor, Row};
use uuid::Uuid;

use super::{Bind, Column, SqlBackend, SqlStore, Tx};
use crate::convert::fit;
use crate::match_query::values_rows;
use crate::ratings::{
    Entrant, PROVISIONAL_GAMES, Rating, RatingChange, RatingPool, Standing, rate_match,
};
use crate::{
    FinishedMatch, LeaderboardCursor, LeaderboardEntry, Millis, PlayerRating, RatedMatchEntry,
    RatingsRebuilt, StoreError, TimeControl,
};

/// Rows of `rating_changes` written per multi-row `INSERT`, 10 parameters each.
const CHANGES_PER_INSERT: usize = 500;

/// A player's rating in a pool as the ledger left it.
#[derive(Clone, Copy)]
struct Held {
    rating: Rating,
    games: u32,
}

impl Held {
    fn new_player() -> Held {
        Held {
            rating: Rating::initial(),
            games: 0,
        }
    }
}

/// One `rating_changes` row to write.
struct ChangeRow {
    match_id: Uuid,
    pool: RatingPool,
    rating_seq: i64,
    change: RatingChange,
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
{
    /// Rates a match being recorded in `tx`: the next ledger number, the players' ratings
    /// before it, their ratings after it, and a change row per seat.
    pub(super) async fn rate_recorded_match(
        tx: &mut Tx<DB>,
        result: &FinishedMatch,
    ) -> Result<Vec<RatingChange>, StoreError> {
        let Some(rated) = &result.rating else {
            return Ok(Vec::new());
        };
        let rating_seq = Self::next_rating_seq(tx).await?;
        let mut held = HashMap::new();
        for seat in &rated.seats {
            if let Entrant::Player(id) = seat.entrant {
                let current = Self::held_rating(tx, id, rated.pool).await?;
                held.insert(id, current);
            }
        }
        let changes = rate_with(&rated.seats, &mut held);
        for change in &changes {
            if let Some(id) = change.player_id {
                Self::write_rating(tx, id, rated.pool, held[&id], result.finished_at).await?;
            }
        }
        let rows: Vec<ChangeRow> = changes
            .iter()
            .map(|change| ChangeRow {
                match_id: result.id,
                pool: rated.pool,
                rating_seq,
                change: change.clone(),
            })
            .collect();
        Self::insert_change_rows(tx, &rows).await?;
        sqlx::query("UPDATE matches SET rating_pool = $1, rating_seq = $2 WHERE id = $3")
            .bind(rated.pool.name())
            .bind(rating_seq)
            .bind(result.id)
            .execute(&mut **tx)
            .await?;
        Ok(changes)
    }

    /// Takes the ledger's next number, and with it the ledger's row until `tx` ends.
    async fn next_rating_seq(tx: &mut Tx<DB>) -> Result<i64, StoreError> {
        let row = sqlx::query(
            "UPDATE rating_ledger SET last_seq = last_seq + 1 WHERE id = 1 RETURNING last_seq",
        )
        .fetch_one(&mut **tx)
        .await?;
        Ok(row.try_get("last_seq")?)
    }

    async fn held_rating(
        tx: &mut Tx<DB>,
        player: Uuid,
        pool: RatingPool,
    ) -> Result<Held, StoreError> {
        let row =
            sqlx::query("SELECT mu, sigma, games FROM ratings WHERE player_id = $1 AND pool = $2")
                .bind(player)
                .bind(pool.name())
                .fetch_optional(&mut **tx)
                .await?;
        let Some(row) = row else {
            return Ok(Held::new_player());
        };
        Ok(Held {
            rating: rating_from::<DB>(&row, "mu", "sigma")?,
            games: fit(row.try_get::<i32, _>("games")?, "games")?,
        })
    }

    async fn write_rating(
        tx: &mut Tx<DB>,
        player: Uuid,
        pool: RatingPool,
        held: Held,
        at: Millis,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO ratings (player_id, pool, mu, sigma, rating, games, established, \
             updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT (player_id, pool) DO UPDATE SET mu = excluded.mu, \
             sigma = excluded.sigma, rating = excluded.rating, games = excluded.games, \
             established = excluded.established, updated_at = excluded.updated_at",
        )
        .bind(player)
        .bind(pool.name())
        .bind(held.rating.mu)
        .bind(held.rating.sigma)
        .bind(held.rating.conservative())
        .bind(fit::<u32, i32>(held.games, "games")?)
        .bind(held.games >= PROVISIONAL_GAMES)
        .bind(at)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    async fn insert_change_rows(tx: &mut Tx<DB>, rows: &[ChangeRow]) -> Result<(), StoreError> {
        for chunk in rows.chunks(CHANGES_PER_INSERT) {
            let sql = format!(
                "INSERT INTO rating_changes (match_id, seat, player_id, pool, rating_seq, place, \
                 mu_before, sigma_before, mu_after, sigma_after) VALUES {}",
                values_rows(chunk.len(), 10)
            );
            let mut query = sqlx::query(AssertSqlSafe(sql));
            for row in chunk {
                let change = &row.change;
                query = query
                    .bind(row.match_id)
                    .bind(i16::from(change.seat))
                    .bind(change.player_id)
                    .bind(row.pool.name())
                    .bind(row.rating_seq)
                    .bind(i16::from(change.place))
                    .bind(change.before.mu)
                    .bind(change.before.sigma)
                    .bind(change.after.mu)
                    .bind(change.after.sigma);
            }
            query.execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// Recomputes every rating from the rated matches in ledger order, from their stored
    /// inputs alone (pool, places, bots' fixed ratings), and rewrites the ratings and the
    /// change rows with the result, in one transaction that holds the ledger.
    pub(crate) async fn rebuild_ratings(&self) -> Result<RatingsRebuilt, StoreError> {
        let mut tx = self.begin_write().await?;
        sqlx::query("UPDATE rating_ledger SET last_seq = last_seq WHERE id = 1")
            .execute(&mut *tx)
            .await?;
        let stored = sqlx::query(
            "SELECT rc.match_id, rc.seat, rc.player_id, rc.pool, rc.rating_seq, rc.place, \
             rc.mu_before, rc.sigma_before, m.finished_at \
             FROM rating_changes rc JOIN matches m ON m.id = rc.match_id \
             ORDER BY rc.rating_seq, rc.seat",
        )
        .fetch_all(&mut *tx)
        .await?;
        let inputs = stored
            .iter()
            .map(stored_input::<DB>)
            .collect::<Result<Vec<_>, _>>()?;
        let (rows, players) = replay_ledger(&inputs);
        sqlx::query("DELETE FROM rating_changes")
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM ratings").execute(&mut *tx).await?;
        Self::insert_change_rows(&mut tx, &rows).await?;
        for (&(player, pool), &(held, at)) in &players {
            Self::write_rating(&mut tx, player, pool, held, at).await?;
        }
        tx.commit().await?;
        Ok(RatingsRebuilt {
            matches: inputs.chunk_by(|a, b| a.rating_seq == b.rating_seq).count() as u64,
            ratings: players.len() as u64,
        })
    }

    /// A page of a pool's ranked players, best first, after `after`.
    pub(crate) async fn leaderboard(
        &self,
        pool: RatingPool,
        after: Option<LeaderboardCursor>,
        limit: u32,
    ) -> Result<Vec<LeaderboardEntry>, StoreError> {
        const COLUMNS: &str = "SELECT r.player_id, p.display_name, r.mu, r.sigma, r.rating, \
             r.games FROM ratings r JOIN players p ON p.id = r.player_id \
             WHERE r.pool = $1 AND r.established";
        const ORDER: &str = "ORDER BY r.rating DESC, r.player_id";
        let limit = i64::from(limit);
        let rows = match after {
            None => {
                sqlx::query(AssertSqlSafe(format!("{COLUMNS} {ORDER} LIMIT $2")))
                    .bind(pool.name())
                    .bind(limit)
                    .fetch_all(&self.pool)
                    .await?
            }
            Some(cursor) => {
                let sql = format!(
                    "{COLUMNS} AND (r.rating < $2 OR (r.rating = $2 AND r.player_id > $3)) \
                     {ORDER} LIMIT $4"
                );
                sqlx::query(AssertSqlSafe(sql))
                    .bind(pool.name())
                    .bind(cursor.rating)
                    .bind(cursor.player_id)
                    .bind(limit)
                    .fetch_all(&self.pool)
                    .await?
            }
        };
        rows.iter()
            .map(|row| {
                Ok(LeaderboardEntry {
                    player_id: row.try_get("player_id")?,
                    display_name: row.try_get("display_name")?,
                    rating: row.try_get("rating")?,
                    skill: rating_from::<DB>(row, "mu", "sigma")?,
                    games: fit(row.try_get::<i32, _>("games")?, "games")?,
                })
            })
            .collect()
    }

    /// A player's rating in each pool they have played rated games in.
    pub(crate) async fn player_ratings(&self, id: Uuid) -> Result<Vec<PlayerRating>, StoreError> {
        let rows = sqlx::query(
            "SELECT pool, mu, sigma, rating, games, established, updated_at FROM ratings \
             WHERE player_id = $1 ORDER BY pool",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(PlayerRating {
                    pool: pool_from_column(row.try_get("pool")?)?,
                    rating: row.try_get("rating")?,
                    skill: rating_from::<DB>(row, "mu", "sigma")?,
                    games: fit(row.try_get::<i32, _>("games")?, "games")?,
                    provisional: !row.try_get::<bool, _>("established")?,
                    updated_at: row.try_get("updated_at")?,
                })
            })
            .collect()
    }

    /// A player's rated matches in a pool, newest first, before ledger number `before`.
    pub(crate) async fn rating_history(
        &self,
        id: Uuid,
        pool: RatingPool,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<RatedMatchEntry>, StoreError> {
        let rows = sqlx::query(
            "SELECT rc.match_id, rc.rating_seq, rc.seat, rc.player_id, rc.place, rc.mu_before, \
             rc.sigma_before, rc.mu_after, rc.sigma_after, m.finished_at \
             FROM rating_changes rc JOIN matches m ON m.id = rc.match_id \
             WHERE rc.player_id = $1 AND rc.pool = $2 AND rc.rating_seq < $3 \
             ORDER BY rc.rating_seq DESC LIMIT $4",
        )
        .bind(id)
        .bind(pool.name())
        .bind(before.unwrap_or(i64::MAX))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(RatedMatchEntry {
                    match_id: row.try_get("match_id")?,
                    rating_seq: row.try_get("rating_seq")?,
                    finished_at: row.try_get("finished_at")?,
                    change: change_from_row::<DB>(row)?,
                })
            })
            .collect()
    }

    /// The rating changes of one match, by seat; empty for an unrated match.
    pub(crate) async fn match_ratings(
        &self,
        match_id: Uuid,
    ) -> Result<Vec<RatingChange>, StoreError> {
        let mut connection = self.pool.acquire().await?;
        Self::rating_changes_of(&mut *connection, match_id).await
    }

    /// A match's rating changes by seat, read on `connection` (inside a transaction
    /// when it is one's).
    pub(super) async fn rating_changes_of(
        connection: &mut DB::Connection,
        match_id: Uuid,
    ) -> Result<Vec<RatingChange>, StoreError> {
        let rows = sqlx::query(
            "SELECT seat, player_id, place, mu_before, sigma_before, mu_after, sigma_after \
             FROM rating_changes WHERE match_id = $1 ORDER BY seat",
        )
        .bind(match_id)
        .fetch_all(&mut *connection)
        .await?;
        rows.iter().map(change_from_row::<DB>).collect()
    }
}

/// A stored seat of a rated match, as the rebuild reads it.
struct StoredSeat {
    match_id: Uuid,
    seat: u8,
    player_id: Option<Uuid>,
    pool: RatingPool,
    rating_seq: i64,
    place: u8,
    /// What a bot seat played at; ignored for a player, whose rating is replayed.
    fixed: Rating,
    finished_at: Millis,
}

fn stored_input<DB: SqlBackend>(row: &DB::Row) -> Result<StoredSeat, StoreError>
where
    for<'a> &'a str: Bind<DB> + Decode<'a, DB> + ColumnIndex<DB::Row>,
    Uuid: Column<DB>,
    Option<Uuid>: Bind<DB>,
    String: Column<DB>,
    i16: Column<DB>,
    i64: Column<DB>,
    f64: Column<DB>,
{
    Ok(StoredSeat {
        match_id: row.try_get("match_id")?,
        seat: fit(row.try_get::<i16, _>("seat")?, "seat")?,
        player_id: row.try_get("player_id")?,
        pool: pool_from_column(row.try_get("pool")?)?,
        rating_seq: row.try_get("rating_seq")?,
        place: fit(row.try_get::<i16, _>("place")?, "place")?,
        fixed: rating_from::<DB>(row, "mu_before", "sigma_before")?,
        finished_at: row.try_get("finished_at")?,
    })
}

fn change_from_row<DB: SqlBackend>(row: &DB::Row) -> Result<RatingChange, StoreError>
where
    for<'a> &'a str: Bind<DB> + Decode<'a, DB> + ColumnIndex<DB::Row>,
    Uuid: Column<DB>,
    Option<Uuid>: Bind<DB>,
    i16: Column<DB>,
    f64: Column<DB>,
{
    Ok(RatingChange {
        seat: fit(row.try_get::<i16, _>("seat")?, "seat")?,
        player_id: row.try_get("player_id")?,
        place: fit(row.try_get::<i16, _>("place")?, "place")?,
        before: rating_from::<DB>(row, "mu_before", "sigma_before")?,
        after: rating_from::<DB>(row, "mu_after", "sigma_after")?,
    })
}

/// A rating read from the two columns that hold its `mu` and `sigma`.
fn rating_from<DB: SqlBackend>(row: &DB::Row, mu: &str, sigma: &str) -> Result<Rating, StoreError>
where
    for<'a> &'a str: Bind<DB> + Decode<'a, DB> + ColumnIndex<DB::Row>,
    f64: Column<DB>,
{
    Ok(Rating {
        mu: row.try_get(mu)?,
        sigma: row.try_get(sigma)?,
    })
}

fn pool_from_column(name: String) -> Result<RatingPool, StoreError> {
    RatingPool::from_name(&name)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown rating pool {name:?}")))
}

/// The seats' changes when a match is rated from `held` (players missing from it are
/// new), with `held` moved on to the ratings after it.
fn rate_with(
    seats: &[crate::ratings::RatedSeat],
    held: &mut HashMap<Uuid, Held>,
) -> Vec<RatingChange> {
    let standings: Vec<Standing> = seats
        .iter()
        .map(|seat| match seat.entrant {
            Entrant::Player(id) => Standing {
                before: held.entry(id).or_insert_with(Held::new_player).rating,
                place: seat.place,
                fixed: false,
            },
            Entrant::Fixed(rating) => Standing {
                before: rating,
                place: seat.place,
                fixed: true,
            },
        })
        .collect();
    let after = rate_match(&standings);
    seats
        .iter()
        .zip(standings)
        .zip(after)
        .map(|((seat, standing), after)| {
            let player_id = match seat.entrant {
                Entrant::Player(id) => {
                    let entry = held.get_mut(&id).expect("held above");
                    entry.rating = after;
                    entry.games += 1;
                    Some(id)
                }
                Entrant::Fixed(_) => None,
            };
            RatingChange {
                seat: seat.seat,
                player_id,
                place: seat.place,
                before: standing.before,
                after,
            }
        })
        .collect()
}

/// Replays the stored seats (in ledger order) through the rating method: the change rows
/// to write, and each player's rating per pool with the time of their last rated match.
#[allow(clippy::type_complexity)]
fn replay_ledger(
    seats: &[StoredSeat],
) -> (Vec<ChangeRow>, HashMap<(Uuid, RatingPool), (Held, Millis)>) {
    let mut by_pool: HashMap<RatingPool, HashMap<Uuid, Held>> = HashMap::new();
    let mut last_played: HashMap<(Uuid, RatingPool), Millis> = HashMap::new();
    let mut rows = Vec::with_capacity(seats.len());
    for one_match in seats.chunk_by(|a, b| a.rating_seq == b.rating_seq) {
        let first = &one_match[0];
        let rated: Vec<crate::ratings::RatedSeat> = one_match
            .iter()
            .map(|seat| crate::ratings::RatedSeat {
                seat: seat.seat,
                entrant: match seat.player_id {
                    Some(id) => Entrant::Player(id),
                    None => Entrant::Fixed(seat.fixed),
                },
                place: seat.place,
            })
            .collect();
        let held = by_pool.entry(first.pool).or_default();
        for change in rate_with(&rated, held) {
            if let Some(id) = change.player_id {
                last_played.insert((id, first.pool), first.finished_at);
            }
            rows.push(ChangeRow {
                match_id: first.match_id,
                pool: first.pool,
                rating_seq: first.rating_seq,
                change,
            });
        }
    }
    let players = last_played
        .into_iter()
        .map(|((id, pool), at)| ((id, pool), (by_pool[&pool][&id], at)))
        .collect();
    (rows, players)
}
