//! Service configuration: where to listen, which database, and the protective limits.

use std::time::Duration;

#[derive(Clone, Debug)]
pub struct Config {
    /// `postgres://...` or `sqlite://FILE`.
    pub database_url: String,
    pub limits: Limits,
}

/// Limits that keep one client from hurting the others.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Open WebSocket connections at most; more are refused with 503.
    pub max_connections: usize,
    /// Largest WebSocket message accepted; larger ones close the connection (1009).
    pub max_message_bytes: usize,
    /// Sustained messages per second per connection.
    pub messages_per_second: u32,
    /// Messages a connection may send in a burst above the sustained rate.
    pub message_burst: u32,
    /// How long a new connection may take to say hello.
    pub hello_timeout: Duration,
    /// How often the server pings each connection.
    pub ping_interval: Duration,
    /// A connection silent (no pong, no message) for this long is closed.
    pub idle_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 10_000,
            max_message_bytes: 16 * 1024,
            messages_per_second: 10,
            message_burst: 40,
            hello_timeout: Duration::from_secs(10),
            ping_interval: Duration::from_secs(15),
            idle_timeout: Duration::from_secs(45),
        }
    }
}
