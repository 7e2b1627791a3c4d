//! The storage test-suite. Every test runs twice: `name::sqlite` on a temporary SQLite
//! file, `name::postgres` on a fresh database of the Postgres server named by
//! `TEST_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`), created
//! for the test and dropped after it. The Postgres half fails, never skips, when that
//! server cannot be reached.

#[macro_use]
mod common;

mod connection;
mod history;
mod lobbies;
mod moves;
mod players;
