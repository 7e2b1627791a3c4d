//! `carcassonne-server`: `serve` (the default) runs the game server; `replay` checks a
//! game record; `healthcheck` asks a running server whether it is ready; `tournament`
//! plays bots against each other and reports their strength.

use carcassonne_bots::BotLevel;
use carcassonne_server::commands;
use carcassonne_server::{
    AccountIssuer, ClusterConfig, Config, Limits, MatchPolicy, QueueSettings, RatedBotPools,
    RoomSettings, default_bot_threads,
};
use carcassonne_store::StoreOptions;
use carcassonne_store::ratings::RatingPool;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::fmt;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc instead of the system allocator: a move allocates many small, short-lived
/// buffers across the runtime's threads, and under load glibc's allocator took a large
/// share of the server's CPU on them. Built without transparent huge pages (`no_thp`):
/// with them, mimalloc asks for 2 MiB pages, so that each fresh page of its arenas costs
/// a 2 MiB zeroing fault and a few KiB in use can hold a whole huge page resident, which
/// makes every idle connection dearer. The `system-allocator` feature leaves it out, for
/// heap profilers that hook `malloc` (docs/performance.md, "Memory").
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Gives back what a runtime thread freed, as it goes idle (at most ten times a second).
/// mimalloc returns a thread's emptied pages only when that thread next allocates or
/// collects, and at human pace a worker goes idle right after the work that freed them:
/// a room resting, a game ending, connections closing. Without this the freed pages
/// stayed resident until the next burst of work on that thread.
#[cfg(not(feature = "system-allocator"))]
fn return_freed_memory() {
    use std::cell::Cell;
    use std::time::Instant;
    const AT_MOST_EVERY: Duration = Duration::from_millis(100);
    thread_local! {
        static LAST_COLLECTED: Cell<Option<Instant>> = const { Cell::new(None) };
    }
    let now = Instant::now();
    let due = LAST_COLLECTED
        .get()
        .is_none_or(|last| now - last >= AT_MOST_EVERY);
    if due {
        LAST_COLLECTED.set(Some(now));
        // SAFETY: `mi_collect` has no preconditions; it only walks this thread's heap.
        unsafe { libmimalloc_sys::mi_collect(false) };
    }
}

#[cfg(feature = "system-allocator")]
fn return_freed_memory() {}

#[derive(Parser)]
#[command(
    name = "carcassonne-server",
    version,
    about = "The authoritative Carcassonne game server."
)]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Run the game server (the default when no subcommand is given).
    Serve(Box<ServeArgs>),
    /// Replay a game record through the rules engine and print turn-by-turn scores.
    /// Exit status: 0 legal, 1 an illegal turn, 2 a malformed record.
    Replay(ReplayArgs),
    /// Ask a running server whether it is ready (for container health checks).
    /// Exit status: 0 on a 200 answer, 1 otherwise.
    Healthcheck(HealthcheckArgs),
    /// Play bots against each other and report their strength.
    Tournament(commands::TournamentArgs),
    /// Maintain the players' ratings.
    #[command(subcommand)]
    Ratings(RatingsCommand),
}

#[derive(Subcommand)]
enum RatingsCommand {
    /// Recompute every rating from the rated matches in the history, in the order they
    /// were rated, and rewrite the ratings and each match's changes. Rated games that end
    /// meanwhile wait for it. Exit status: 0 done, 1 a database error.
    Rebuild {
        /// The server's database, as `serve --database` takes it.
        #[arg(long, env = "DATABASE_URL", default_value = "sqlite://carcassonne.db")]
        database: String,
    },
}

/// A duration written the humane way: `10s`, `500ms`, `1m 30s`; never zero.
#[derive(Clone, Copy, Debug)]
struct HumanDuration(Duration);

impl FromStr for HumanDuration {
    type Err = String;

    fn from_str(text: &str) -> Result<HumanDuration, String> {
        match humantime::parse_duration(text) {
            Ok(duration) if duration.is_zero() => Err("must be more than zero".into()),
            Ok(duration) => Ok(HumanDuration(duration)),
            Err(error) => Err(format!("{error} (write e.g. 10s or 500ms)")),
        }
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", humantime::format_duration(self.0))
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per line, with the fields of the enclosing spans.
    Json,
}

#[derive(Args, Clone)]
struct ServeArgs {
    /// Address and port to listen on.
    #[arg(long, env = "LISTEN_ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Database: `postgres://USER@HOST/DB`, or `sqlite://FILE` (created on first run).
    #[arg(long, env = "DATABASE_URL", default_value = "sqlite://carcassonne.db")]
    database: String,
    /// Log lines as `text` or `json`.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(flatten)]
    pool: PoolArgs,
    #[command(flatten)]
    connections: ConnectionArgs,
    #[command(flatten)]
    rates: RateArgs,
    #[command(flatten)]
    timeouts: TimeoutArgs,
    #[command(flatten)]
    rooms: RoomArgs,
    #[command(flatten)]
    queue: QueueArgs,
    #[command(flatten)]
    accounts: AccountArgs,
    #[command(flatten)]
    cluster: ClusterArgs,
}

#[derive(Args, Clone)]
struct AccountArgs {
    /// Sign players in with the JWTs of this issuer (their `iss`): a token's `sub` is
    /// bound to one player. Needs `--jwt-key`.
    #[arg(long, env = "JWT_ISSUER", requires = "jwt_key")]
    jwt_issuer: Option<String>,
    /// The issuer's public keys: a PEM file (RSA, ECDSA P-256/P-384 or Ed25519) or a
    /// JWKS file, read at start.
    #[arg(long, env = "JWT_KEY", requires = "jwt_issuer")]
    jwt_key: Option<PathBuf>,
    /// The audience (`aud`) tokens must name; unchecked when not set.
    #[arg(long, env = "JWT_AUDIENCE", requires = "jwt_issuer")]
    jwt_audience: Option<String>,
    /// The SHA-256 (64 hex digits) of the operator's admin token, which operator
    /// requests carry as `Authorization: Bearer TOKEN` (deleting a chat message). The
    /// token itself is never configured, so it is in no file or process listing.
    #[arg(long, env = "ADMIN_TOKEN_SHA256", value_parser = sha256_hex)]
    admin_token_sha256: Option<String>,
}

/// A SHA-256 as 64 hex digits, kept in lowercase.
fn sha256_hex(text: &str) -> Result<String, String> {
    let text = text.trim();
    if text.len() == 64 && text.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(text.to_ascii_lowercase())
    } else {
        Err("expected a SHA-256 as 64 hex digits (e.g. from `sha256sum`)".into())
    }
}

#[derive(Args, Clone)]
struct QueueArgs {
    /// Quick play: the most tickets that may wait at once; more are refused (503).
    #[arg(long, env = "QUEUE_MAX_WAITING", default_value_t = QueueSettings::default().max_waiting)]
    queue_max_waiting: u64,
    /// A quick-play ticket not matched after this long expires.
    #[arg(long, env = "QUEUE_TICKET_TTL", default_value_t = HumanDuration(QueueSettings::default().ticket_ttl))]
    queue_ticket_ttl: HumanDuration,
    /// Tickets whose players' ratings (mu) differ by at most this are matched at once.
    #[arg(long, env = "QUEUE_WINDOW_START", default_value_t = MatchPolicy::default().window_start)]
    queue_window_start: f64,
    /// How much a ticket's rating window widens per second it waits.
    #[arg(long, env = "QUEUE_WINDOW_GROWTH", default_value_t = MatchPolicy::default().window_growth_per_second)]
    queue_window_growth: f64,
    /// After this wait an unrated ticket's missing seats go to bots (a rated one's too,
    /// where --rated-bot-pools allows).
    #[arg(long, env = "QUEUE_BOT_FILL_AFTER", default_value_t = HumanDuration(Duration::from_secs(60)))]
    queue_bot_fill_after: HumanDuration,
    /// Never fill quick-play seats with bots.
    #[arg(long, env = "QUEUE_WITHOUT_BOTS")]
    queue_without_bots: bool,
    /// The bots that fill quick-play seats.
    #[arg(long, env = "QUEUE_BOT", default_value_t = MatchPolicy::default().bot_level)]
    queue_bot: BotLevel,
}

#[derive(Args, Clone)]
struct ClusterArgs {
    /// Cluster mode: the NATS server the nodes talk through (e.g. `nats://HOST:4222`).
    /// Needs a Postgres database shared by every node. Without it, one node serves all.
    #[arg(long, env = "NATS_URL")]
    nats: Option<String>,
    /// This node's name in the cluster, unique among the nodes (default: a random one).
    #[arg(long, env = "NODE_NAME")]
    node_name: Option<String>,
    /// How long a node's lease on its games lasts unless the node renews it: the games of
    /// a node that dies are taken over after at most this long.
    #[arg(long, env = "LEASE_TTL", default_value_t = HumanDuration(ClusterConfig::DEFAULT_LEASE_TTL))]
    lease_ttl: HumanDuration,
    /// Without `--nats`: start alone on a database whose cluster nodes still hold live
    /// leases, clearing them. Without this flag such a start is refused, so that a node
    /// pointed at a running cluster's database by mistake does not fight it over every
    /// game. Stop the cluster first.
    #[arg(long, env = "TAKE_OVER_FROM_CLUSTER", conflicts_with = "nats")]
    take_over_from_cluster: bool,
}

#[derive(Args, Clone)]
struct RoomArgs {
    /// An open lobby with no change (no seat taken or freed) for this long is cancelled.
    #[arg(long, env = "LOBBY_IDLE_TIMEOUT", default_value_t = HumanDuration(RoomSettings::default().lobby_idle_timeout))]
    lobby_idle_timeout: HumanDuration,
    /// Threads bots think on, apart from the runtime's (default: one per core but one).
    #[arg(long, env = "BOT_THREADS", default_value_t = default_bot_threads())]
    bot_threads: usize,
    /// How long a bot holding a seat thinks about a move (at most a quarter of a turn's
    /// allowance when the game has a clock).
    #[arg(long, env = "BOT_THINK", default_value_t = HumanDuration(RoomSettings::default().bot_think))]
    bot_think: HumanDuration,
    /// The bot level that plays timed-out turns, abandoned and resigned seats.
    #[arg(long, env = "STAND_IN_BOT", default_value_t = RoomSettings::default().stand_in_bot)]
    stand_in_bot: BotLevel,
    /// How long that stand-in bot thinks about a move.
    #[arg(long, env = "STAND_IN_THINK", default_value_t = HumanDuration(RoomSettings::default().stand_in_think))]
    stand_in_think: HumanDuration,
    /// Rating pools (`two_player`, `multiplayer`, comma-separated) whose rated games may
    /// seat bots, at fixed ratings: a rated lobby's creator may add them, and quick play
    /// fills a rated ticket's seats with them after the bot wait. None by default.
    #[arg(long, env = "RATED_BOT_POOLS", value_delimiter = ',', value_parser = rating_pool)]
    rated_bot_pools: Vec<RatingPool>,
    /// How long a finished game's room stays for its players (post-game chat, a rematch
    /// offer) before it closes their connections; longer while an offer waits.
    #[arg(long, env = "POST_GAME", default_value_t = HumanDuration(RoomSettings::default().post_game))]
    post_game: HumanDuration,
    /// How long a rematch offer waits for every player's answer.
    #[arg(long, env = "REMATCH_OFFER", default_value_t = HumanDuration(RoomSettings::default().rematch_offer))]
    rematch_offer: HumanDuration,
    /// How long a game waits untouched, a human to move, before its room lets go of the
    /// engine's game (most of its memory) and replays it from its moves when next needed.
    #[arg(long, env = "REST_AFTER", default_value_t = HumanDuration(RoomSettings::default().rest_after))]
    rest_after: HumanDuration,
}

fn rating_pool(name: &str) -> Result<RatingPool, String> {
    RatingPool::from_name(name)
        .ok_or_else(|| format!("{name:?} is not a pool: two_player or multiplayer"))
}

#[derive(Args, Clone)]
struct PoolArgs {
    /// Most database connections the pool opens.
    #[arg(long, env = "DB_MAX_CONNECTIONS", default_value_t = StoreOptions::DEFAULT_MAX_CONNECTIONS)]
    db_max_connections: u32,
    /// How long a database call waits for a pooled connection before "try again".
    #[arg(long, env = "DB_ACQUIRE_TIMEOUT", default_value_t = HumanDuration(StoreOptions::DEFAULT_ACQUIRE_TIMEOUT))]
    db_acquire_timeout: HumanDuration,
    /// SQLite only: how long a statement waits for another connection's write lock.
    #[arg(long, env = "DB_BUSY_TIMEOUT", default_value_t = HumanDuration(StoreOptions::DEFAULT_BUSY_TIMEOUT))]
    db_busy_timeout: HumanDuration,
}

#[derive(Args, Clone)]
struct ConnectionArgs {
    /// Most WebSocket connections open at once; more are refused with 503.
    #[arg(long, env = "MAX_CONNECTIONS", default_value_t = Limits::default().max_connections)]
    max_connections: usize,
    /// Most WebSocket connections that have not said hello yet; a newcomer evicts the
    /// oldest of them.
    #[arg(long, env = "MAX_PENDING_CONNECTIONS", default_value_t = Limits::default().max_pending_connections)]
    max_pending_connections: usize,
    /// Most WebSocket connections without hello per client (an IPv4 address or IPv6 /64);
    /// a newcomer evicts that client's oldest (0: no per-client limit).
    #[arg(long, env = "MAX_PENDING_CONNECTIONS_PER_IP", default_value_t = Limits::default().max_pending_connections_per_ip)]
    max_pending_connections_per_ip: usize,
    /// Most TCP connections open at once (HTTP and WebSocket); more are closed at once.
    #[arg(long, env = "MAX_TCP_CONNECTIONS", default_value_t = Limits::default().max_tcp_connections)]
    max_tcp_connections: usize,
    /// Most TCP connections per client (an IPv4 address or IPv6 /64; 0: no per-client
    /// limit, as behind a proxy).
    #[arg(long, env = "MAX_CONNECTIONS_PER_IP", default_value_t = Limits::default().max_connections_per_ip)]
    max_connections_per_ip: usize,
    /// Largest WebSocket message (and frame) accepted, in bytes; larger ones close the
    /// connection with 1009.
    #[arg(long, env = "MAX_MESSAGE_BYTES", default_value_t = Limits::default().max_message_bytes)]
    max_message_bytes: usize,
    /// Most bytes waiting to be written to one WebSocket connection.
    #[arg(long, env = "MAX_WRITE_BUFFER_BYTES", default_value_t = Limits::default().max_write_buffer_bytes)]
    max_write_buffer_bytes: usize,
    /// Most open (not started) lobbies.
    #[arg(long, env = "MAX_OPEN_LOBBIES", default_value_t = Limits::default().max_open_lobbies)]
    max_open_lobbies: usize,
    /// Most open lobbies created by one client (an IPv4 address or IPv6 /64).
    #[arg(long, env = "MAX_OPEN_LOBBIES_PER_CLIENT", default_value_t = Limits::default().max_open_lobbies_per_client)]
    max_open_lobbies_per_client: usize,
}

#[derive(Args, Clone)]
struct RateArgs {
    /// Sustained WebSocket messages per second per connection (accepted moves are free).
    #[arg(long, env = "MESSAGES_PER_SECOND", default_value_t = Limits::default().messages_per_second,
        value_parser = clap::value_parser!(u32).range(1..))]
    messages_per_second: u32,
    /// WebSocket messages a connection may send in one burst.
    #[arg(long, env = "MESSAGE_BURST", default_value_t = Limits::default().message_burst)]
    message_burst: u32,
    /// Sustained REST requests per second per client (an IPv4 address or IPv6 /64); more
    /// get 429.
    #[arg(long, env = "REQUESTS_PER_SECOND", default_value_t = Limits::default().requests_per_second,
        value_parser = clap::value_parser!(u32).range(1..))]
    requests_per_second: u32,
    /// REST requests a client may send in one burst.
    #[arg(long, env = "REQUEST_BURST", default_value_t = Limits::default().request_burst,
        value_parser = clap::value_parser!(u32).range(1..))]
    request_burst: u32,
}

#[derive(Args, Clone)]
struct TimeoutArgs {
    /// How long a new WebSocket connection may take to say hello.
    #[arg(long, env = "HELLO_TIMEOUT", default_value_t = HumanDuration(Limits::default().hello_timeout))]
    hello_timeout: HumanDuration,
    /// How often the server pings each WebSocket connection.
    #[arg(long, env = "PING_INTERVAL", default_value_t = HumanDuration(Limits::default().ping_interval))]
    ping_interval: HumanDuration,
    /// A WebSocket connection silent for this long is closed.
    #[arg(long, env = "IDLE_TIMEOUT", default_value_t = HumanDuration(Limits::default().idle_timeout))]
    idle_timeout: HumanDuration,
    /// How long a closing connection waits for the client's close reply.
    #[arg(long, env = "CLOSE_HANDSHAKE", default_value_t = HumanDuration(Limits::default().close_handshake))]
    close_handshake: HumanDuration,
    /// How long one WebSocket send may wait for a client that does not read.
    #[arg(long, env = "SEND_TIMEOUT", default_value_t = HumanDuration(Limits::default().send_timeout))]
    send_timeout: HumanDuration,
    /// How long a client may take to send request headers, or stay idle between requests.
    #[arg(long, env = "HEADER_READ_TIMEOUT", default_value_t = HumanDuration(Limits::default().header_read_timeout))]
    header_read_timeout: HumanDuration,
    /// After SIGTERM, the longest the server waits for its connections and rooms to
    /// finish (and, in cluster mode, to hand its games over) before it exits anyway.
    #[arg(long, env = "DRAIN_TIMEOUT", default_value_t = HumanDuration(Limits::default().drain_timeout))]
    drain_timeout: HumanDuration,
}

#[derive(Args)]
struct ReplayArgs {
    /// The game record (JSON), or `-` for standard input.
    file: PathBuf,
    /// Also list every legal placement of each turn's tile.
    #[arg(long)]
    legal: bool,
}

#[derive(Args)]
struct HealthcheckArgs {
    /// What to GET; healthy means a 200 answer.
    #[arg(
        long,
        env = "HEALTHCHECK_URL",
        default_value = "http://127.0.0.1:8080/readyz"
    )]
    url: String,
    /// How long to wait for the answer.
    #[arg(long, default_value_t = HumanDuration(Duration::from_secs(3)))]
    timeout: HumanDuration,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Replay(args)) => replay(args),
        Some(Command::Healthcheck(args)) => healthcheck(args),
        Some(Command::Tournament(args)) => commands::tournament(args),
        Some(Command::Ratings(RatingsCommand::Rebuild { database })) => rebuild_ratings(&database),
        Some(Command::Serve(args)) => serve(*args),
        None => serve(cli.serve),
    }
}

fn replay(args: ReplayArgs) -> ExitCode {
    let output = commands::replay(&args.file, args.legal);
    println!("{}", output.stdout);
    if let Some(message) = output.message {
        eprintln!("{message}");
    }
    ExitCode::from(output.exit_code)
}

fn rebuild_ratings(database: &str) -> ExitCode {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(commands::rebuild_ratings(database)) {
        Ok(rebuilt) => {
            println!(
                "rebuilt {} ratings from {} rated matches",
                rebuilt.ratings, rebuilt.matches
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("ratings rebuild: {error}");
            ExitCode::FAILURE
        }
    }
}

fn healthcheck(args: HealthcheckArgs) -> ExitCode {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let check = commands::healthcheck(&args.url, args.timeout.0);
    match runtime.block_on(check) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{}: {error}", args.url);
            ExitCode::FAILURE
        }
    }
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,tower_http=warn,sqlx=warn".into());
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => builder.json().with_ansi(false).init(),
    }
}

fn config_from(args: &ServeArgs) -> Config {
    let (pool, connections, rates, timeouts) =
        (&args.pool, &args.connections, &args.rates, &args.timeouts);
    let cluster = args.cluster.nats.as_ref().map(|nats_url| ClusterConfig {
        nats_url: nats_url.clone(),
        node: (args.cluster.node_name.clone()).unwrap_or_else(ClusterConfig::random_node_name),
        lease_ttl: args.cluster.lease_ttl.0,
    });
    let store = StoreOptions {
        max_connections: pool.db_max_connections,
        acquire_timeout: pool.db_acquire_timeout.0,
        busy_timeout: pool.db_busy_timeout.0,
        node: cluster.as_ref().map(|cluster| cluster.node.clone()),
        ..StoreOptions::new(args.database.clone())
    };
    let limits = Limits {
        max_connections: connections.max_connections,
        max_pending_connections: connections.max_pending_connections,
        max_pending_connections_per_ip: connections.max_pending_connections_per_ip,
        max_tcp_connections: connections.max_tcp_connections,
        max_connections_per_ip: connections.max_connections_per_ip,
        max_message_bytes: connections.max_message_bytes,
        max_write_buffer_bytes: connections.max_write_buffer_bytes,
        max_open_lobbies: connections.max_open_lobbies,
        max_open_lobbies_per_client: connections.max_open_lobbies_per_client,
        messages_per_second: rates.messages_per_second,
        message_burst: rates.message_burst,
        requests_per_second: rates.requests_per_second,
        request_burst: rates.request_burst,
        hello_timeout: timeouts.hello_timeout.0,
        ping_interval: timeouts.ping_interval.0,
        idle_timeout: timeouts.idle_timeout.0,
        close_handshake: timeouts.close_handshake.0,
        send_timeout: timeouts.send_timeout.0,
        header_read_timeout: timeouts.header_read_timeout.0,
        drain_timeout: timeouts.drain_timeout.0,
    };
    let rated_bot_pools = RatedBotPools::new(&args.rooms.rated_bot_pools);
    let rooms = RoomSettings {
        lobby_idle_timeout: args.rooms.lobby_idle_timeout.0,
        bot_think: args.rooms.bot_think.0,
        stand_in_bot: args.rooms.stand_in_bot,
        stand_in_think: args.rooms.stand_in_think.0,
        rated_bot_pools,
        post_game: args.rooms.post_game.0,
        rematch_offer: args.rooms.rematch_offer.0,
        rest_after: args.rooms.rest_after.0,
    };
    let bot_threads = args.rooms.bot_threads.max(1);
    Config {
        store,
        limits,
        rooms,
        bot_threads,
        queue: queue_settings(&args.queue, rated_bot_pools),
        accounts: None,
        admin_token_sha256: args.accounts.admin_token_sha256.clone(),
        cluster,
        take_over_from_cluster: args.cluster.take_over_from_cluster,
    }
}

/// The configured account issuer, with its keys read from their file.
fn account_issuer(args: &AccountArgs) -> Result<Option<Arc<AccountIssuer>>, String> {
    let (Some(issuer), Some(key_file)) = (&args.jwt_issuer, &args.jwt_key) else {
        return Ok(None);
    };
    let loaded = AccountIssuer::load(issuer, key_file, args.jwt_audience.clone())?;
    Ok(Some(Arc::new(loaded)))
}

fn queue_settings(args: &QueueArgs, rated_bot_pools: RatedBotPools) -> QueueSettings {
    let policy = MatchPolicy {
        window_start: args.queue_window_start.max(0.0),
        window_growth_per_second: args.queue_window_growth.max(0.0),
        bot_fill_after: (!args.queue_without_bots).then_some(args.queue_bot_fill_after.0),
        bot_level: args.queue_bot,
        rated_bot_pools,
    };
    QueueSettings {
        policy,
        max_waiting: args.queue_max_waiting,
        ticket_ttl: args.queue_ticket_ttl.0,
        ..QueueSettings::default()
    }
}

/// How much freed memory glibc's allocator keeps at the top of a heap before giving it
/// back to the system (its default is 128 KiB).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const C_HEAP_KEPT_BYTES: libc::c_int = 64 << 20;

/// SQLite is C and allocates with glibc's `malloc`, not with the Rust allocator above. A
/// batch's savepoint keeps copies of the pages it changes in memory (`temp_store =
/// memory`), hundreds of KiB freed at its release; by default glibc hands the top of the
/// thread's heap back to the system and faults it in again, page by page, for the next
/// batch, so that under load the SQLite writer's thread takes page fault after page
/// fault. Keeping up to 64 MiB of freed heap spares them. The memory is kept for reuse,
/// not lost: it is what SQLite's busiest moments needed.
fn keep_freed_c_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only changes a tuning parameter of glibc's allocator; it is
    // called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, C_HEAP_KEPT_BYTES);
    }
}

fn serve(args: ServeArgs) -> ExitCode {
    keep_freed_c_heap();
    init_logging(args.log_format);
    let mut config = config_from(&args);
    // Read here rather than in `config_from`: a key file that cannot be used stops the
    // server at start, like a bad flag.
    match account_issuer(&args.accounts) {
        Ok(issuer) => config.accounts = issuer,
        Err(error) => {
            eprintln!("error: --jwt-key: {error}");
            return ExitCode::from(2);
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_park(return_freed_memory)
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(serve_until_signal(args.listen, config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(%error, "the server stopped");
            ExitCode::FAILURE
        }
    }
}

async fn serve_until_signal(
    address: SocketAddr,
    config: Config,
) -> Result<(), carcassonne_server::ServeError> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    carcassonne_server::run(listener, config, shutdown).await
}

/// Cancels `shutdown` on SIGTERM or Ctrl-C.
async fn cancel_on_signal(shutdown: CancellationToken) {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("a SIGTERM handler");
    tokio::select! {
        _ = terminate.recv() => tracing::info!("SIGTERM: draining"),
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupt: draining"),
    }
    shutdown.cancel();
}
