//! Turning driver errors into [`StoreError`]s.
//!
//! The server decides what to tell a client from the variant alone: `Unavailable` means
//! "try again" (a write may have landed), `Unreachable` "try again, nothing was written",
//! `Conflict` that the write was already made, `NotFound` that a row is missing,
//! `NotOwner` that another node owns the game now. So the mapping must put every
//! transient failure (lost connection, a locked SQLite file, a Postgres shutdown) under
//! `Unavailable`, and nothing else; under `Unreachable` only what proves that nothing
//! reached the database (no connection from the pool in time, a closed pool); and the
//! fencing trigger's own SQLSTATE under `NotOwner`: a fenced node that took it for an
//! outage would retry and keep a game it no longer owns. Telling `Unreachable` apart is
//! what lets a room answer at once when the database is away, instead of re-reading a
//! `seq` it cannot read either. A pool timeout is `Unreachable` here; the store calls it
//! `Busy` instead when every connection of the pool was in use (see `Store::bounded`):
//! the database answers, and the caller is asked to slow down rather than told of an
//! outage.

use sqlx::error::{DatabaseError, ErrorKind};
use sqlx::migrate::MigrateError;
use sqlx::postgres::PgDatabaseError;
use sqlx::sqlite::SqliteError;

use crate::StoreError;

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> StoreError {
        let message = error.to_string();
        match error {
            // No connection was had: nothing of the call reached the database. (The pool
            // retries a refused connection until its acquire timeout, then says this.)
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => StoreError::Unreachable(message),
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::WorkerCrashed
            | sqlx::Error::BeginFailed => StoreError::Unavailable(message),
            sqlx::Error::Database(database_error) => from_database_error(&*database_error),
            sqlx::Error::Configuration(_) | sqlx::Error::InvalidArgument(_) => {
                StoreError::Config(message)
            }
            sqlx::Error::RowNotFound => StoreError::NotFound,
            sqlx::Error::Migrate(migrate_error) => StoreError::from(*migrate_error),
            // Decoding and encoding failures, and anything a later sqlx adds: none of them
            // goes away by trying again, and all of them mean a row or a query is not what
            // this crate expects.
            _ => StoreError::Corrupt(message),
        }
    }
}

impl From<MigrateError> for StoreError {
    fn from(error: MigrateError) -> StoreError {
        match error {
            // The database failed while migrating (e.g. the connection was lost): that is
            // the database's state, not the migrations'.
            MigrateError::Execute(sqlx_error) => StoreError::from(sqlx_error),
            other => StoreError::Config(format!("migrations: {other}")),
        }
    }
}

fn from_database_error(error: &dyn DatabaseError) -> StoreError {
    let message = error.message().to_owned();
    match error.kind() {
        ErrorKind::UniqueViolation => StoreError::Conflict(message),
        // A seat or a match naming a player identity that was never created.
        ErrorKind::ForeignKeyViolation => StoreError::NotFound,
        _ => match postgres_sqlstate(error) {
            Some(sqlstate) if sqlstate == FENCED_SQLSTATE => StoreError::NotOwner(message),
            Some(sqlstate) if is_transient_postgres(&sqlstate) => StoreError::Unavailable(message),
            Some(sqlstate) if is_configuration_postgres(&sqlstate) => StoreError::Config(message),
            Some(_) => StoreError::Corrupt(message),
            None if sqlite_code(error).is_some_and(is_transient_sqlite) => {
                StoreError::Unavailable(message)
            }
            None => StoreError::Corrupt(message),
        },
    }
}

/// The SQLSTATE that the fencing trigger of migration 4 (`lobbies_fence_owner`) raises
/// when a session that is not the game's owner node tries to change its `seq`. Class CF
/// is not one of Postgres's, so no other error can carry it.
pub(crate) const FENCED_SQLSTATE: &str = "CF001";

/// The SQLSTATE of a Postgres error. Both backends report their codes as strings of
/// digits, so the code alone does not say whose it is: the error's type does.
fn postgres_sqlstate(error: &dyn DatabaseError) -> Option<String> {
    error.try_downcast_ref::<PgDatabaseError>()?;
    error.code().map(|code| code.into_owned())
}

/// The extended result code of a SQLite error.
fn sqlite_code(error: &dyn DatabaseError) -> Option<i32> {
    error.try_downcast_ref::<SqliteError>()?;
    error.code()?.parse().ok()
}

/// SQLSTATEs outside the transient classes that still mean "the database cannot serve
/// this now, try again": 55000 (object not in prerequisite state: a server that is
/// starting, or a hot standby refusing sessions), 57014 (query canceled: what
/// `statement_timeout` raises), 25006 (read-only transaction: a failover left us on a
/// replica) and 25P03 (idle-in-transaction timeout: the session was ended under us).
const TRANSIENT_POSTGRES_STATES: [&str; 6] = ["40001", "40P01", "55000", "57014", "25006", "25P03"];

/// Whether Postgres refused for a reason that passes: class 08 (connection exception),
/// 53 (insufficient resources), 57P01-57P05 (shutdown, cannot connect now, idle session
/// timeout), 40001 and 40P01 (serialization failure, deadlock: retry the transaction),
/// and the states of [`TRANSIENT_POSTGRES_STATES`].
fn is_transient_postgres(sqlstate: &str) -> bool {
    sqlstate.starts_with("08")
        || sqlstate.starts_with("53")
        || sqlstate.starts_with("57P")
        || TRANSIENT_POSTGRES_STATES.contains(&sqlstate)
}

/// Whether the URL is wrong: class 28 (bad user or password) or 3D000 (no such database).
fn is_configuration_postgres(sqlstate: &str) -> bool {
    sqlstate.starts_with("28") || sqlstate == "3D000"
}

/// Whether SQLite refused for a reason that passes: busy or locked by another
/// connection, or unable to open or write its file. The low byte of an extended result
/// code is the primary code: BUSY 5, LOCKED 6, IOERR 10, FULL 13, CANTOPEN 14.
fn is_transient_sqlite(extended_code: i32) -> bool {
    const TRANSIENT_PRIMARY_CODES: [i32; 5] = [5, 6, 10, 13, 14];
    TRANSIENT_PRIMARY_CODES.contains(&(extended_code & 0xff))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_postgres_states() {
        for sqlstate in [
            "08006", "08001", "57P01", "57P03", "53300", "40001", "40P01", "55000", "57014",
            "25006", "25P03",
        ] {
            assert!(is_transient_postgres(sqlstate), "{sqlstate}");
        }
        // 55006 (object in use) shares class 55 but is a real conflict, not an outage.
        for sqlstate in [
            "23505", "42P01", "22P02", "3D000", "55006", "57000", "25001",
        ] {
            assert!(!is_transient_postgres(sqlstate), "{sqlstate}");
        }
        for sqlstate in ["28P01", "28000", "3D000"] {
            assert!(is_configuration_postgres(sqlstate), "{sqlstate}");
        }
        // The fence's refusal must not be taken for an outage and retried.
        assert!(!is_transient_postgres(FENCED_SQLSTATE));
        assert!(!is_configuration_postgres(FENCED_SQLSTATE));
    }

    #[test]
    fn transient_sqlite_codes() {
        // SQLITE_BUSY, SQLITE_BUSY_SNAPSHOT (517), SQLITE_IOERR_WRITE (778), SQLITE_CANTOPEN.
        for code in [5, 517, 778, 14] {
            assert!(is_transient_sqlite(code), "{code}");
        }
        // SQLITE_ERROR, SQLITE_CONSTRAINT_UNIQUE (2067), SQLITE_CORRUPT.
        for code in [1, 2067, 11] {
            assert!(!is_transient_sqlite(code), "{code}");
        }
    }

    #[test]
    fn io_errors_are_unavailable_and_pool_timeouts_unreachable() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(matches!(
            StoreError::from(sqlx::Error::Io(refused)),
            StoreError::Unavailable(_)
        ));
        // A pool that gave no connection proves that nothing was sent.
        assert!(matches!(
            StoreError::from(sqlx::Error::PoolTimedOut),
            StoreError::Unreachable(_)
        ));
        assert!(matches!(
            StoreError::from(sqlx::Error::PoolClosed),
            StoreError::Unreachable(_)
        ));
        assert!(matches!(
            StoreError::from(sqlx::Error::RowNotFound),
            StoreError::NotFound
        ));
    }
}

/// A batch of moves that was not written (see `group_commit`), and whether it may be
/// written again at once on a fresh connection.
///
/// The writer keeps one connection for its batches. When that connection turns out to
/// be dead before the batch's `COMMIT` was sent (the database restarted, or ended the
/// session), nothing of the batch was committed, so writing it again elsewhere is safe
/// and spares every game in it a refused move. A failure at the `COMMIT` itself is not
/// retried: the batch may have landed, and the rooms settle that by reading `seq` back.
#[derive(Debug)]
pub(crate) struct BatchFailure {
    pub(crate) error: StoreError,
    pub(crate) session_lost_before_commit: bool,
}

impl BatchFailure {
    /// A failure before the batch's `COMMIT` was sent. A session lost then committed
    /// nothing of the batch, and is reported as [`StoreError::Unreachable`]; a statement
    /// the database refused (a timeout, a read-only replica) stays `Unavailable`.
    pub(crate) fn before_commit(error: sqlx::Error) -> BatchFailure {
        let session_lost_before_commit = is_lost_session(&error);
        let error = match StoreError::from(error) {
            StoreError::Unavailable(cause) if session_lost_before_commit => {
                StoreError::Unreachable(cause)
            }
            other => other,
        };
        BatchFailure {
            session_lost_before_commit,
            error,
        }
    }

    /// A failure of the `COMMIT` itself, whose outcome is unknown.
    pub(crate) fn at_commit(error: sqlx::Error) -> BatchFailure {
        BatchFailure::from(StoreError::from(error))
    }
}

impl From<StoreError> for BatchFailure {
    fn from(error: StoreError) -> BatchFailure {
        BatchFailure {
            error,
            session_lost_before_commit: false,
        }
    }
}

/// Whether `error` means the session itself is gone, rather than a statement refused:
/// the socket failed, or Postgres ended the session (class 08, connection exception, or
/// 57P, operator intervention: an administrator's `pg_terminate_backend`, a shutdown).
fn is_lost_session(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_) | sqlx::Error::Protocol(_) | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(database_error) => postgres_sqlstate(&**database_error)
            .is_some_and(|state| state.starts_with("08") || state.starts_with("57P")),
        _ => false,
    }
}
