//! The end-to-end harness: start the real `carcassonne-server` binary on a free port
//! against a real database, and talk to it over real HTTP and WebSocket connections.
//!
//! * [`database`]: a fresh SQLite file or a fresh Postgres database per test.
//! * [`server`]: the server process, started, paused (SIGSTOP), resumed, killed
//!   (SIGKILL) or drained (SIGTERM).
//! * [`client`]: a REST client and a WebSocket client that mirrors the public state by
//!   applying every patch and checks that `seq` never skips.
//! * [`proxy`]: a TCP proxy to cut the server off from its database and reconnect it,
//!   lose a COMMIT's reply, or slow every reply down.
//! * [`table`]: several clients seated at one game, playing it move by move.
//! * [`raw`]: raw TCP and WebSocket frames from a chosen client address, for abuse tests.
//! * [`browser`]: headless Chromium over WebDriver, for the tests of the web client.
//! * [`cluster`]: several nodes on one Postgres and NATS, and clients that roam between
//!   them when nodes stop.
//! * [`nats`]: a NATS server of the test's own, to stop and start again.
//! * [`outages`]: what nodes' and NATS's outages cost games: how long a frozen node's
//!   games waited for another node, and moves that reached clients late.

pub mod browser;
pub mod client;
pub mod cluster;
pub mod database;
pub mod nats;
pub mod outages;
pub mod proxy;
pub mod raw;
pub mod server;
pub mod table;
