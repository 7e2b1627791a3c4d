//! The storage test-suite. Every test runs twice: `name::sqlite` on a temporary SQLite
//! file, `name::postgres` on a fresh database of the Postgres server named by
//! `TEST_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`), created
//! for the test and dropped after it. When nothing answers at that address, the Postgres
//! half is skipped, each test saying `SKIPPED (Postgres unreachable at URL): test` on
//! stderr; with `REQUIRE_POSTGRES=1` (CI) it fails instead.

#[macro_use]
mod common;

mod chat;
mod connection;
mod control;
mod faults;
mod history;
mod leases;
mod lobbies;
mod moves;
mod pg_proxy;
mod players;
mod profiles;
mod queue;
mod ratings;
mod tls;
