//! How to connect: the database URL and the connection pool's limits.

use std::time::Duration;

use crate::ratings::RatingChange;
use crate::{Backend, StoreError};

/// Connection settings for [`Store::connect_with`](crate::Store::connect_with).
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// `postgres://...` (or `postgresql://...`), or `sqlite://path` / `sqlite:path`.
    pub url: String,
    /// The most connections the pool opens.
    pub max_connections: u32,
    /// How long a call waits for a connection before failing with
    /// [`StoreError::Unreachable`]. Kept short so that a lost database gives fast errors
    /// instead of requests piling up. It is the one bound the other timeouts derive
    /// from: see [`StoreOptions::operation_timeout`].
    pub acquire_timeout: Duration,
    /// SQLite only: how long a statement waits for another connection's write lock.
    pub busy_timeout: Duration,
    /// Postgres only: the longest one statement may run, and the longest a session may
    /// sit idle inside a transaction, on the server (`statement_timeout` and
    /// `idle_in_transaction_session_timeout`). A statement stopped by it fails with
    /// [`StoreError::Unavailable`], and the server releases its locks even when this
    /// client has gone silent. `None`, the default: the operation timeout, so that the
    /// server gives up on a statement when its caller does.
    pub statement_timeout: Option<Duration>,
    /// The name of this server node when several nodes share one Postgres database
    /// (cluster mode); `None` for a server that runs alone, the default.
    ///
    /// Every pooled connection then names its node to the database (the session setting
    /// `carcassonne.node`), so that the fencing trigger of migration 4 can refuse any
    /// change of a game's `seq` that does not come from the node holding the game's lease
    /// ([`StoreError::NotOwner`]). It must be unique among the nodes and not empty. SQLite
    /// serves one node only, so [`Store::connect_with`](crate::Store::connect_with)
    /// refuses a node name on SQLite.
    pub node: Option<String>,
    /// How the update that announces a rated match's rating changes is written: given
    /// the changes, the JSON text of that update's `events`. With it, the transaction
    /// that finishes a rated game also stores that update, numbered one after the
    /// game's last (see [`Store::finish_game`](crate::Store::finish_game)); without it
    /// (the default) no such update is written. The server gives its own event's shape.
    pub ratings_announcement: Option<RatingsAnnouncement>,
}

/// See [`StoreOptions::ratings_announcement`].
pub type RatingsAnnouncement = fn(&[RatingChange]) -> String;

impl StoreOptions {
    pub const DEFAULT_MAX_CONNECTIONS: u32 = 10;
    pub const DEFAULT_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);
    pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
    /// What a call may take beyond the wait for its connection: the round trips of a
    /// game's last write (a dozen statements) on a database 150 ms away, with room to
    /// spare.
    pub const OPERATION_MARGIN: Duration = Duration::from_secs(1);

    /// The default settings for `url`.
    pub fn new(url: impl Into<String>) -> StoreOptions {
        StoreOptions {
            url: url.into(),
            max_connections: StoreOptions::DEFAULT_MAX_CONNECTIONS,
            acquire_timeout: StoreOptions::DEFAULT_ACQUIRE_TIMEOUT,
            busy_timeout: StoreOptions::DEFAULT_BUSY_TIMEOUT,
            statement_timeout: None,
            node: None,
            ratings_announcement: None,
        }
    }

    /// The longest any call on a [`Store`](crate::Store) may take, measured here, on the
    /// client: the acquire timeout and [`StoreOptions::OPERATION_MARGIN`]. Beyond it the
    /// call fails with [`StoreError::Unavailable`]. This is what bounds a call when the
    /// database stops answering altogether (a frozen host, a network that drops
    /// packets), which no server-side timeout can; and it is the bound the server
    /// promises its clients an answer within, whatever the database does.
    pub fn operation_timeout(&self) -> Duration {
        self.acquire_timeout + StoreOptions::OPERATION_MARGIN
    }

    /// [`StoreOptions::statement_timeout`], or the operation timeout when unset.
    pub(crate) fn server_statement_timeout(&self) -> Duration {
        self.statement_timeout
            .unwrap_or_else(|| self.operation_timeout())
    }

    /// How long a connection handed back to the pool may take to prove it is still in
    /// step with the server before it is closed instead: half the acquire timeout, so
    /// that a caller waiting for that connection still has time to get a fresh one.
    pub(crate) fn release_check_timeout(&self) -> Duration {
        self.acquire_timeout / 2
    }

    /// The node name, checked: `None` alone, or a non-empty name on Postgres. An empty
    /// name is refused because it could not be told apart from a session that names no
    /// node, once the setting has been reset.
    pub(crate) fn checked_node(&self) -> Result<Option<&str>, StoreError> {
        let Some(node) = self.node.as_deref() else {
            return Ok(None);
        };
        if self.backend()? != Backend::Postgres {
            return Err(StoreError::Config("cluster mode needs Postgres".into()));
        }
        if node.is_empty() {
            return Err(StoreError::Config("the node name must not be empty".into()));
        }
        Ok(Some(node))
    }

    /// Which database the URL names, from its scheme.
    pub(crate) fn backend(&self) -> Result<Backend, StoreError> {
        let scheme = self.url.split(':').next().unwrap_or_default();
        match scheme {
            "postgres" | "postgresql" => Ok(Backend::Postgres),
            "sqlite" => Ok(Backend::Sqlite),
            _ => Err(StoreError::Config(format!(
                "the database URL must start with postgres:// or sqlite:, not {scheme:?}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheme_chooses_the_backend() {
        let backend = |url: &str| StoreOptions::new(url).backend().ok();
        assert_eq!(backend("postgres://u@h/db"), Some(Backend::Postgres));
        assert_eq!(backend("postgresql://u@h/db"), Some(Backend::Postgres));
        assert_eq!(backend("sqlite://carcassonne.db"), Some(Backend::Sqlite));
        assert_eq!(backend("sqlite::memory:"), Some(Backend::Sqlite));
        assert_eq!(backend("mysql://u@h/db"), None);
        assert_eq!(backend("carcassonne.db"), None);
    }

    #[test]
    fn a_node_name_needs_postgres_and_a_name() {
        let checked = |url: &str, node: Option<&str>| {
            let options = StoreOptions {
                node: node.map(str::to_owned),
                ..StoreOptions::new(url)
            };
            options.checked_node().map(|node| node.map(str::to_owned))
        };
        assert_eq!(checked("sqlite://x.db", None).ok(), Some(None));
        assert_eq!(
            checked("postgres://u@h/db", Some("a")).ok(),
            Some(Some("a".into()))
        );
        assert!(matches!(
            checked("sqlite://x.db", Some("a")),
            Err(StoreError::Config(message)) if message == "cluster mode needs Postgres"
        ));
        assert!(matches!(
            checked("postgres://u@h/db", Some("")),
            Err(StoreError::Config(_))
        ));
    }
}
