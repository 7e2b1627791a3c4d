//! A load generator for the Carcassonne server: many concurrent 2-player games played as
//! fast as the protocol allows, with the server's throughput, latency, message sizes, CPU
//! and memory measured; and a bare WebSocket echo server as the baseline. See
//! `docs/performance.md`, section "Load generator".

pub mod ack_log;
pub mod echo;
pub mod game;
pub mod idle;
pub mod memory;
pub mod player;
pub mod process;
pub mod procfs;
pub mod protocol;
pub mod report;
pub mod rest;
pub mod restart;
pub mod run;
pub mod server_watch;
pub mod socket;
pub mod stats;
pub mod table;
