//! Service configuration: which database (and its pool), and the protective limits.
//!
//! Every field here is settable by a command-line flag and an environment variable (see
//! `main.rs` and `docs/operations.md`); the defaults are the values a small public server
//! should run with.

use crate::accounts::AccountIssuer;
use crate::cluster::ClusterConfig;
use crate::queue::QueueSettings;
use crate::rooms::RoomSettings;
use carcassonne_store::StoreOptions;
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct Config {
    /// The database URL (`postgres://...` or `sqlite://FILE`) and its pool's limits.
    pub store: StoreOptions,
    pub limits: Limits,
    /// Lobby expiry and the bots that play for seats.
    pub rooms: RoomSettings,
    /// Threads that bots think on, apart from the async runtime's.
    pub bot_threads: usize,
    /// Quick play: how tickets are matched, and their bounds.
    pub queue: QueueSettings,
    /// Another site whose JWTs sign players in (`POST /api/players/sign-in`).
    pub accounts: Option<Arc<AccountIssuer>>,
    /// The SHA-256 (lowercase hex) of the operator's admin token, which operator
    /// requests (deleting a chat message) carry; none: there are no operator requests.
    pub admin_token_sha256: Option<String>,
    /// Cluster mode (NATS and a node name); None for a single node.
    pub cluster: Option<ClusterConfig>,
    /// A single node may start on a database whose cluster nodes hold live leases, and
    /// clear them; without it such a start is refused.
    pub take_over_from_cluster: bool,
}

impl Config {
    /// The default limits and pool for `database_url`.
    pub fn new(database_url: impl Into<String>) -> Config {
        Config {
            store: StoreOptions::new(database_url),
            limits: Limits::default(),
            rooms: RoomSettings::default(),
            bot_threads: default_bot_threads(),
            queue: QueueSettings::default(),
            accounts: None,
            admin_token_sha256: None,
            cluster: None,
            take_over_from_cluster: false,
        }
    }
}

/// One bot thread per core but one, and at least one: the runtime keeps a core for moves.
pub fn default_bot_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    cores.saturating_sub(1).max(1)
}

/// Limits that keep one client from hurting the others. A client is an IPv4 address or
/// an IPv6 /64 (see `admission::client_prefix`). A per-client limit of 0 means "no
/// per-client limit" (as behind a reverse proxy, where every client has the proxy's
/// address).
#[derive(Clone, Debug)]
pub struct Limits {
    /// Open WebSocket connections at most; more are refused with 503.
    pub max_connections: usize,
    /// WebSocket connections that have not said hello yet, at most; a newcomer evicts
    /// the oldest of them, so that silent connections cannot take the places of players.
    pub max_pending_connections: usize,
    /// WebSocket connections that have not said hello yet, per client; a newcomer evicts
    /// its own client's oldest.
    pub max_pending_connections_per_ip: usize,
    /// Open TCP connections at most (HTTP and WebSocket alike); more are closed at once.
    pub max_tcp_connections: usize,
    /// Open TCP connections per client.
    pub max_connections_per_ip: usize,
    /// Largest WebSocket message (and frame) accepted; larger ones close the connection
    /// (1009) as soon as they pass the limit.
    pub max_message_bytes: usize,
    /// Most bytes a WebSocket connection may have waiting to be written.
    pub max_write_buffer_bytes: usize,
    /// Sustained messages per second per connection (accepted moves are free).
    pub messages_per_second: u32,
    /// Messages a connection may send in a burst above the sustained rate.
    pub message_burst: u32,
    /// Sustained REST requests per second per client.
    pub requests_per_second: u32,
    /// REST requests a client may send in a burst above the sustained rate.
    pub request_burst: u32,
    /// Open (not started) lobbies at most.
    pub max_open_lobbies: usize,
    /// Open lobbies created by one client at most.
    pub max_open_lobbies_per_client: usize,
    /// How long a new connection may take to say hello.
    pub hello_timeout: Duration,
    /// How often the server pings each connection.
    pub ping_interval: Duration,
    /// A connection silent (no pong, no message) for this long is closed.
    pub idle_timeout: Duration,
    /// How long a closing connection waits for the peer's close reply.
    pub close_handshake: Duration,
    /// How long one WebSocket send may wait for a client that does not read; after
    /// that the connection is dropped.
    pub send_timeout: Duration,
    /// How long a client may take to send a request's headers (and how long an idle
    /// connection is kept open waiting for the next request).
    pub header_read_timeout: Duration,
    /// After shutdown begins, the longest the server waits for its tasks to finish
    /// before it exits anyway, whatever the database or NATS are doing.
    pub drain_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 10_000,
            max_pending_connections: 1_000,
            max_pending_connections_per_ip: 20,
            max_tcp_connections: 20_000,
            max_connections_per_ip: 200,
            max_message_bytes: 16 * 1024,
            max_write_buffer_bytes: 4 * 1024 * 1024,
            messages_per_second: 10,
            message_burst: 40,
            requests_per_second: 20,
            request_burst: 200,
            max_open_lobbies: 1_000,
            max_open_lobbies_per_client: 10,
            hello_timeout: Duration::from_secs(10),
            ping_interval: Duration::from_secs(15),
            idle_timeout: Duration::from_secs(45),
            close_handshake: Duration::from_secs(2),
            send_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(10),
            drain_timeout: Duration::from_secs(20),
        }
    }
}
