//! Game ownership leases, for several server nodes sharing one Postgres database.
//!
//! Each live game (a lobby that is open or playing) is decided by one node at a time, its
//! owner, named in `lobbies.owner_node`. A node's lease on all of its games is its row of
//! `cluster_nodes`, alive until `alive_until`: one row to renew however many games the
//! node has, and never a game's row, so renewing cannot wait for or deadlock with the
//! writes of moves. When a node stops (a deploy, or a crash) its games are released or
//! its lease lapses, and other nodes take the games over and restore them from their
//! move logs.
//!
//! Every time here is the database's clock, `now()`, never a node's: nodes' clocks differ,
//! and a lease compared against two clocks could be held by two nodes at once. Taking a
//! lease is one conditional `UPDATE`, so two nodes racing for a game cannot both win: the
//! second waits for the first's row lock and then finds the game taken.
//!
//! A lease does not by itself stop a node that lost it without noticing (a long pause, a
//! cut network) from writing: that is the fencing trigger's job (migration 4), which
//! refuses any change of a game's `seq` from a session that does not name the game's
//! owner, as [`StoreError::NotOwner`](crate::StoreError::NotOwner).
//!
//! Leases exist only on Postgres: an SQLite store is always the one node of its server.

use std::time::Duration;

use sqlx::Row;
use uuid::Uuid;

use crate::StoreError;
use crate::queries::SqlStore;

/// Forgets a node's finished games. Run as the node starts, before it serves: the
/// partial index `lobbies_finished_owned` (migration 15) holds only the finished games
/// still owned, so this costs the same however many games the database has kept.
const RELEASE_FINISHED_GAMES: &str =
    "UPDATE lobbies SET owner_node = NULL WHERE owner_node = $1 AND status = 'finished'";

/// Who holds a live game's lease, as [`Store::lease_holder`](crate::Store::lease_holder)
/// reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseHolder {
    /// The node that owns the game; `None` when no node does (a single-node server's
    /// game, or one released by its owner), so that any node may take it at once.
    pub owner: Option<String>,
    /// Whether the owner's lease has run out (its `cluster_nodes.alive_until < now()` on the database's
    /// clock): the owner still fences out other nodes' writes, but any node may take the
    /// game over. Always `false` when there is no owner.
    pub lapsed: bool,
}

/// A lease's time to live as whole microseconds, Postgres's interval resolution, for
/// `now() + $n * interval '1 microsecond'`. A zero time to live gives a lease that has
/// lapsed as soon as it is taken, which tests use.
fn ttl_micros(ttl: Duration) -> Result<i64, StoreError> {
    i64::try_from(ttl.as_micros())
        .map_err(|_| StoreError::Config(format!("a lease's time to live of {ttl:?} is too long")))
}

/// Refuses an empty node name: it cannot be told apart from a session that names no
/// node, so a lease held under it would fence nothing reliably.
fn check_node(node: &str) -> Result<(), StoreError> {
    if node.is_empty() {
        return Err(StoreError::Config("the node name must not be empty".into()));
    }
    Ok(())
}

impl SqlStore<sqlx::Postgres> {
    /// Takes game `game` for `node` when it has no owner, is already `node`'s, or its
    /// owner's lease lapsed. The same statement renews `node`'s own lease (never
    /// shortening it): a node that takes a game is alive, and must not look dead to
    /// the others before its keeper's first renewal.
    pub(crate) async fn acquire_lease(
        &self,
        game: Uuid,
        node: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        check_node(node)?;
        let taken = sqlx::query(
            "WITH alive AS ( \
                 INSERT INTO cluster_nodes (node, alive_until) \
                 VALUES ($2, now() + $3 * interval '1 microsecond') \
                 ON CONFLICT (node) DO UPDATE \
                 SET alive_until = GREATEST(cluster_nodes.alive_until, EXCLUDED.alive_until) \
             ) \
             UPDATE lobbies SET owner_node = $2 \
             WHERE id = $1 AND status IN ('open', 'playing') \
               AND (owner_node IS NULL OR owner_node = $2 OR NOT EXISTS ( \
                   SELECT 1 FROM cluster_nodes \
                   WHERE node = lobbies.owner_node AND alive_until >= now()))",
        )
        .bind(game)
        .bind(node)
        .bind(ttl_micros(ttl)?)
        .execute(self.pool())
        .await?;
        Ok(taken.rows_affected() == 1)
    }

    /// Takes, in one statement, every game of `games` that [`Self::acquire_lease`] would
    /// take and whose row no transaction holds; returns the ids taken. A game whose row
    /// is locked is left for a later sweep rather than waited for: the lock is most
    /// likely a frozen owner's write, held until Postgres ends that session's
    /// transaction, and waiting would hold up every other game of the sweep.
    pub(crate) async fn acquire_leases(
        &self,
        games: &[Uuid],
        node: &str,
        ttl: Duration,
    ) -> Result<Vec<Uuid>, StoreError> {
        check_node(node)?;
        let taken = sqlx::query_scalar(
            "WITH alive AS ( \
                 INSERT INTO cluster_nodes (node, alive_until) \
                 VALUES ($2, now() + $3 * interval '1 microsecond') \
                 ON CONFLICT (node) DO UPDATE \
                 SET alive_until = GREATEST(cluster_nodes.alive_until, EXCLUDED.alive_until) \
             ), free AS ( \
                 SELECT id FROM lobbies \
                 WHERE id = ANY($1) AND status IN ('open', 'playing') \
                   AND (owner_node IS NULL OR owner_node = $2 OR NOT EXISTS ( \
                       SELECT 1 FROM cluster_nodes \
                       WHERE node = lobbies.owner_node AND alive_until >= now())) \
                 FOR UPDATE SKIP LOCKED \
             ) \
             UPDATE lobbies SET owner_node = $2 FROM free WHERE lobbies.id = free.id \
             RETURNING lobbies.id",
        )
        .bind(games)
        .bind(node)
        .bind(ttl_micros(ttl)?)
        .fetch_all(self.pool())
        .await?;
        Ok(taken)
    }

    /// Renews `node`'s lease (its one row: no game's row is touched) and lists the live
    /// games it owns. A lease that lapsed but whose games were not taken over is renewed
    /// too: the node still owns them (the fence still lets its writes through and no one
    /// else's), so it may as well go on holding them.
    pub(crate) async fn renew_leases(
        &self,
        node: &str,
        ttl: Duration,
    ) -> Result<Vec<Uuid>, StoreError> {
        check_node(node)?;
        sqlx::query(
            "INSERT INTO cluster_nodes (node, alive_until) \
             VALUES ($1, now() + $2 * interval '1 microsecond') \
             ON CONFLICT (node) DO UPDATE SET alive_until = EXCLUDED.alive_until",
        )
        .bind(node)
        .bind(ttl_micros(ttl)?)
        .execute(self.pool())
        .await?;
        let held = sqlx::query_scalar(
            "SELECT id FROM lobbies WHERE owner_node = $1 AND status IN ('open', 'playing')",
        )
        .bind(node)
        .fetch_all(self.pool())
        .await?;
        Ok(held)
    }

    /// Gives every game of `node` up, then its row: a node that stops cleanly leaves
    /// nothing behind.
    pub(crate) async fn release_leases(&self, node: &str) -> Result<u64, StoreError> {
        check_node(node)?;
        let released = sqlx::query(
            "UPDATE lobbies SET owner_node = NULL \
             WHERE owner_node = $1 AND status IN ('open', 'playing')",
        )
        .bind(node)
        .execute(self.pool())
        .await?;
        sqlx::query("DELETE FROM cluster_nodes WHERE node = $1")
            .bind(node)
            .execute(self.pool())
            .await?;
        Ok(released.rows_affected())
    }

    pub(crate) async fn live_nodes(&self) -> Result<Vec<String>, StoreError> {
        let nodes = sqlx::query_scalar(
            "SELECT node FROM cluster_nodes WHERE alive_until >= now() ORDER BY node",
        )
        .fetch_all(self.pool())
        .await?;
        Ok(nodes)
    }

    pub(crate) async fn clear_leases(&self) -> Result<u64, StoreError> {
        let cleared = sqlx::query(
            "UPDATE lobbies SET owner_node = NULL \
             WHERE owner_node IS NOT NULL AND status IN ('open', 'playing')",
        )
        .execute(self.pool())
        .await?;
        Ok(cleared.rows_affected())
    }

    pub(crate) async fn release_lease(&self, game: Uuid, node: &str) -> Result<(), StoreError> {
        check_node(node)?;
        sqlx::query("UPDATE lobbies SET owner_node = NULL WHERE id = $1 AND owner_node = $2")
            .bind(game)
            .bind(node)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    pub(crate) async fn lease_holder(&self, game: Uuid) -> Result<Option<LeaseHolder>, StoreError> {
        let row = sqlx::query(
            "SELECT lobbies.owner_node, \
                    (lobbies.owner_node IS NOT NULL \
                     AND COALESCE(cluster_nodes.alive_until < now(), TRUE)) AS lapsed \
             FROM lobbies LEFT JOIN cluster_nodes ON cluster_nodes.node = lobbies.owner_node \
             WHERE lobbies.id = $1 AND lobbies.status IN ('open', 'playing')",
        )
        .bind(game)
        .fetch_optional(self.pool())
        .await?;
        row.map(|row| {
            Ok(LeaseHolder {
                owner: row.try_get("owner_node")?,
                lapsed: row.try_get("lapsed")?,
            })
        })
        .transpose()
    }

    /// The node whose room of finished game `game` may still be up (its post-game stay:
    /// chat and rematch): the game's last owner, while its lease is live. `None` when
    /// the game is not finished, or no live node owned it last.
    pub(crate) async fn finished_game_host(
        &self,
        game: Uuid,
    ) -> Result<Option<String>, StoreError> {
        let host = sqlx::query_scalar(
            "SELECT lobbies.owner_node FROM lobbies \
             JOIN cluster_nodes ON cluster_nodes.node = lobbies.owner_node \
             WHERE lobbies.id = $1 AND lobbies.status = 'finished' \
               AND cluster_nodes.alive_until >= now()",
        )
        .bind(game)
        .fetch_optional(self.pool())
        .await?;
        Ok(host)
    }

    /// Forgets that `node` owned any finished game: a node that starts has no room up
    /// for any of them. Live games keep their owner (the node restores them).
    pub(crate) async fn release_finished_games(&self, node: &str) -> Result<u64, StoreError> {
        check_node(node)?;
        let released = sqlx::query(RELEASE_FINISHED_GAMES)
            .bind(node)
            .execute(self.pool())
            .await?;
        Ok(released.rows_affected())
    }

    /// The database's plan for [`RELEASE_FINISHED_GAMES`], as text.
    pub(crate) async fn explain_release_finished_games(
        &self,
        node: &str,
    ) -> Result<String, StoreError> {
        check_node(node)?;
        let lines: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "EXPLAIN {RELEASE_FINISHED_GAMES}"
        )))
        .bind(node)
        .fetch_all(self.pool())
        .await?;
        Ok(lines.join("\n"))
    }

    /// Live games with no owner, or whose owner's lease lapsed (or who left no row),
    /// oldest first. The live games of the partial index `lobbies_owner_node` are joined
    /// with the few rows of `cluster_nodes`.
    pub(crate) async fn orphaned_games(&self, limit: u32) -> Result<Vec<Uuid>, StoreError> {
        let orphaned = sqlx::query_scalar(
            "SELECT lobbies.id FROM lobbies \
             LEFT JOIN cluster_nodes ON cluster_nodes.node = lobbies.owner_node \
             WHERE lobbies.status IN ('open', 'playing') \
               AND (lobbies.owner_node IS NULL OR cluster_nodes.node IS NULL \
                    OR cluster_nodes.alive_until < now()) \
             ORDER BY lobbies.created_at, lobbies.id LIMIT $1",
        )
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        Ok(orphaned)
    }
}
