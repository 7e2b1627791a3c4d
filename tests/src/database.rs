//! Test databases: a SQLite file in a temporary directory, or a Postgres database
//! created for the test and dropped afterwards.
//!
//! Postgres is found at `TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`, the machine's trust-auth server). A test
//! that asks for Postgres fails when it cannot be reached: it never passes silently.

use std::process::Command;
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

    /// Both backends, for tests that must hold on each.
    pub fn both() -> Vec<TestDatabase> {
        vec![TestDatabase::sqlite(), TestDatabase::postgres()]
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
