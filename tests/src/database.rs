//! Test databases: a SQLite file in a temporary directory, or a Postgres database
//! created for the test and dropped afterwards.
//!
//! Postgres is found at `TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`, the machine's trust-auth server). When
//! nothing listens there, [`TestDatabase::postgres_or_skip`] and [`TestDatabase::both`]
//! leave Postgres out and say so on stderr (`SKIPPED (Postgres unreachable at URL):
//! test`), so that a machine without Postgres passes; with `REQUIRE_POSTGRES=1`, as CI
//! sets, they fail instead. A server that answers but refuses is never skipped.

use std::io::Write;
use std::net::{TcpStream, ToSocketAddrs};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;
use tempfile::TempDir;

pub enum TestDatabase {
    Sqlite { dir: TempDir },
    Postgres { admin_url: String, name: String },
}

/// The base URL of the Postgres server used by the tests.
pub fn postgres_admin_url() -> String {
    std::env::var("TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

impl TestDatabase {
    pub fn sqlite() -> TestDatabase {
        TestDatabase::Sqlite {
            dir: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    /// A new, empty Postgres database.
    pub fn postgres() -> TestDatabase {
        let admin_url = postgres_admin_url();
        let name = format!("carcassonne_e2e_{}", uuid::Uuid::new_v4().simple());
        psql(&admin_url, &format!("CREATE DATABASE {name}"));
        TestDatabase::Postgres { admin_url, name }
    }

    /// A new, empty Postgres database; `None`, said loudly on stderr, when nothing
    /// listens at `TEST_DATABASE_URL` and `REQUIRE_POSTGRES=1` is not set.
    pub fn postgres_or_skip() -> Option<TestDatabase> {
        let url = postgres_admin_url();
        if postgres_listens(&url) {
            return Some(TestDatabase::postgres());
        }
        skip_unless_required("Postgres", "REQUIRE_POSTGRES", &url);
        None
    }

    /// Both backends, for tests that must hold on each (SQLite alone when Postgres is
    /// skipped, see [`TestDatabase::postgres_or_skip`]).
    pub fn both() -> Vec<TestDatabase> {
        let mut databases = vec![TestDatabase::sqlite()];
        databases.extend(TestDatabase::postgres_or_skip());
        databases
    }

    pub fn url(&self) -> String {
        match self {
            TestDatabase::Sqlite { dir } => {
                format!("sqlite://{}", dir.path().join("carcassonne.db").display())
            }
            TestDatabase::Postgres { admin_url, name } => {
                let base = admin_url
                    .rsplit_once('/')
                    .map_or(admin_url.as_str(), |(base, _)| base);
                format!("{base}/{name}")
            }
        }
    }

    /// The URL of this Postgres database reached through another local port (a proxy).
    pub fn url_through_port(&self, port: u16) -> String {
        let url = self.url();
        let (scheme_and_host, database) = url.rsplit_once('/').expect("a database URL");
        let (before_host, _) = scheme_and_host.rsplit_once('@').expect("a user in the URL");
        format!("{before_host}@127.0.0.1:{port}/{database}")
    }

    pub fn kind(&self) -> &'static str {
        match self {
            TestDatabase::Sqlite { .. } => "sqlite",
            TestDatabase::Postgres { .. } => "postgres",
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let TestDatabase::Postgres { admin_url, name } = self {
            // Best effort: a database left behind only costs disk on a test machine.
            let _ = Command::new("psql")
                .args([
                    admin_url.as_str(),
                    "-qc",
                    &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
                ])
                .output();
        }
    }
}

/// A service a test needs is not there: fails when `required_variable` is `1` (as CI
/// sets it), and otherwise says on stderr that the test is skipped.
pub fn skip_unless_required(service: &str, required_variable: &str, url: &str) {
    let required = std::env::var(required_variable).is_ok_and(|value| value == "1");
    assert!(
        !required,
        "{required_variable}=1, but nothing listens at {url}"
    );
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    // Written to the stream itself: the test harness captures `eprintln!`.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED ({service} unreachable at {url}): {test}"
    );
}

/// Whether something accepts TCP connections at the host and port of `url`, checked
/// once per test binary. A host that does not resolve counts as listening, so that the
/// test fails on connecting with the real error.
fn postgres_listens(url: &str) -> bool {
    static LISTENS: OnceLock<bool> = OnceLock::new();
    *LISTENS.get_or_init(|| {
        let Ok(addresses) = host_and_port(url).to_socket_addrs() else {
            return true;
        };
        addresses
            .into_iter()
            .any(|address| TcpStream::connect_timeout(&address, Duration::from_secs(2)).is_ok())
    })
}

/// `host:port` of a `postgres://user@host:port/database?options` URL, port 5432 when
/// not given.
fn host_and_port(url: &str) -> String {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = after_scheme.split(['/', '?']).next().unwrap_or_default();
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    if host_port
        .rsplit_once(':')
        .is_some_and(|(_, port)| port.parse::<u16>().is_ok())
    {
        host_port.to_owned()
    } else {
        format!("{host_port}:5432")
    }
}

fn psql(url: &str, statement: &str) {
    let output = Command::new("psql")
        .args([url, "-qc", statement])
        .output()
        .expect("psql is installed (the Postgres client)");
    assert!(
        output.status.success(),
        "Postgres at {url} refused {statement:?}: {}. Is Postgres running? \
         (pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start)",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_is_read_from_the_url() {
        let address = |url: &str| host_and_port(url);
        assert_eq!(
            address("postgres://postgres@127.0.0.1:5432/postgres"),
            "127.0.0.1:5432"
        );
        assert_eq!(
            address("postgres://u:pw@db.example:6543/x?sslmode=require"),
            "db.example:6543"
        );
        assert_eq!(address("postgresql://localhost/db"), "localhost:5432");
        assert_eq!(address("postgres://u@[::1]:5433/db"), "[::1]:5433");
    }
}
