//! The harness of the storage suite: a fresh database per test on each backend, raw SQL
//! access for checking what the store wrote, a TCP proxy that can cut the connection to
//! Postgres, and the rows the tests write.

use std::future::Future;
use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use carcassonne_core::{Expansion, FigureKind, Move, PointsByKind, Pos, Rotation, Rules, Spot};
use carcassonne_store::{
    Backend, ChatPolicy, FinishedMatch, JsonText, LobbyRow, LobbyStatus, MatchSeat, MatchStatus,
    Millis, MoveOrigin, MoveRow, PlayerRow, SeatControl, SeatRow, Store, StoreOptions, TimeControl,
};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, SqlSafeStr};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use uuid::Uuid;

/// Where the Postgres tests create their databases when `TEST_DATABASE_URL` is not set.
const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Declares each test twice, as `name::sqlite` and `name::postgres`, each running the
/// body on a fresh database of that backend.
macro_rules! backend_tests {
    ($(async fn $name:ident($context:ident: $context_type:ty) $body:block)+) => {
        $(
            async fn $name($context: $context_type) $body

            mod $name {
                #[tokio::test]
                async fn sqlite() {
                    $crate::common::run(carcassonne_store::Backend::Sqlite, super::$name).await;
                }

                #[tokio::test]
                async fn postgres() {
                    if !$crate::common::postgres_available(concat!(module_path!(), "::postgres")) {
                        return;
                    }
                    $crate::common::run(carcassonne_store::Backend::Postgres, super::$name).await;
                }
            }
        )+
    };
}

/// What a test body gets: a store on a database of its own, and that database's URL for
/// opening more stores on it (a "restart").
pub struct Context {
    pub store: Store,
    pub url: String,
    pub backend: Backend,
}

impl Context {
    /// A second, independent store on the same database, as after a server restart.
    pub async fn reopen(&self) -> Store {
        Store::connect(&self.url)
            .await
            .expect("reconnecting to the test database")
    }

    /// Runs `sql` (one or more statements) with the driver directly, for setting up states
    /// the store's API cannot make.
    pub async fn execute(&self, sql: &str) {
        execute_raw(self.backend, &self.url, sql).await;
    }

    /// The first column of the one row `sql` returns, read with the driver directly,
    /// so that tests can check rows the store's API does not show.
    pub async fn count(&self, sql: &str) -> i64 {
        match self.backend {
            Backend::Sqlite => {
                let options = SqliteConnectOptions::from_str(&self.url).unwrap();
                let mut connection = options.connect().await.unwrap();
                let count = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
                    .fetch_one(&mut connection)
                    .await;
                count.unwrap_or_else(|error| panic!("{sql}: {error}"))
            }
            Backend::Postgres => {
                let mut connection = PgConnection::connect(&self.url).await.unwrap();
                let count = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
                    .fetch_one(&mut connection)
                    .await;
                count.unwrap_or_else(|error| panic!("{sql}: {error}"))
            }
        }
    }
}

/// Runs `sql` on the database at `url` with the driver directly.
pub async fn execute_raw(backend: Backend, url: &str, sql: &str) {
    let statement = sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()));
    let outcome = match backend {
        Backend::Sqlite => {
            let options = SqliteConnectOptions::from_str(url).unwrap();
            let mut connection = options.connect().await.unwrap();
            statement.execute(&mut connection).await.map(drop)
        }
        Backend::Postgres => {
            let mut connection = PgConnection::connect(url).await.unwrap();
            statement.execute(&mut connection).await.map(drop)
        }
    };
    outcome.unwrap_or_else(|error| panic!("{sql}: {error}"));
}

/// Runs one test body on a fresh database of `backend`, then removes the database, also
/// when the body panics (the panic is then passed on).
pub async fn run<Body, Test>(backend: Backend, test: Body)
where
    Body: FnOnce(Context) -> Test,
    Test: Future<Output = ()> + Send + 'static,
{
    let database = TestDatabase::create(backend).await;
    let store = Store::connect(&database.url)
        .await
        .unwrap_or_else(|error| panic!("connecting to {}: {error}", database.url));
    let context = Context {
        store: store.clone(),
        url: database.url.clone(),
        backend,
    };
    let outcome = tokio::spawn(test(context)).await;
    store.close().await;
    database.remove().await;
    if let Err(error) = outcome {
        std::panic::resume_unwind(error.into_panic());
    }
}

/// A database that exists for one test.
pub struct TestDatabase {
    pub url: String,
    /// For SQLite, the directory of the file, deleted when dropped.
    _directory: Option<tempfile::TempDir>,
    /// For Postgres, the database's name, dropped by `remove`.
    postgres_name: Option<String>,
}

impl TestDatabase {
    pub async fn create(backend: Backend) -> TestDatabase {
        match backend {
            Backend::Sqlite => {
                let directory = tempfile::tempdir().expect("creating a temporary directory");
                let path = directory.path().join("store.db");
                TestDatabase {
                    url: format!("sqlite://{}", path.display()),
                    _directory: Some(directory),
                    postgres_name: None,
                }
            }
            Backend::Postgres => {
                let name = format!("store_test_{}", Uuid::new_v4().simple());
                execute_as_admin(&format!("CREATE DATABASE {name}")).await;
                TestDatabase {
                    url: url_with_database(&postgres_base_url(), &name),
                    _directory: None,
                    postgres_name: Some(name),
                }
            }
        }
    }

    pub async fn remove(self) {
        if let Some(name) = &self.postgres_name {
            execute_as_admin(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
        }
    }
}

/// The Postgres server the tests use: `TEST_DATABASE_URL`, or the local default.
pub fn postgres_base_url() -> String {
    std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_POSTGRES_URL.to_owned())
}

/// Whether a test that needs Postgres can run. When nothing answers at the address of
/// `TEST_DATABASE_URL` it says so loudly on stderr and returns `false`, so that the suite
/// passes on a machine without Postgres; with `REQUIRE_POSTGRES=1` (as CI sets) it fails
/// the test instead. A server that answers but refuses us is not skipped: the test then
/// fails on connecting, as it should.
pub fn postgres_available(test: &str) -> bool {
    static REACHABLE: OnceLock<bool> = OnceLock::new();
    let url = postgres_base_url();
    if *REACHABLE.get_or_init(|| answers_tcp(&url)) {
        return true;
    }
    if std::env::var("REQUIRE_POSTGRES").is_ok_and(|value| value == "1") {
        panic!(
            "{}",
            postgres_unreachable(&url, "REQUIRE_POSTGRES=1 and nothing answers")
        );
    }
    // Written to the stream itself, not with `eprintln!`, which the test harness would
    // capture and hide for a passing test.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED (Postgres unreachable at {url}): {test}"
    );
    false
}

/// Whether something accepts TCP connections at the host and port of `url`. A URL that
/// names no TCP address (a Unix socket) counts as reachable: connecting will tell.
fn answers_tcp(url: &str) -> bool {
    let Ok(options) = PgConnectOptions::from_str(url) else {
        return true;
    };
    let Ok(addresses) = (options.get_host(), options.get_port()).to_socket_addrs() else {
        return true;
    };
    addresses.into_iter().any(|address| {
        std::net::TcpStream::connect_timeout(&address, Duration::from_secs(2)).is_ok()
    })
}

/// Runs one statement on the Postgres server's base database, failing the test with
/// instructions when the server cannot be reached (tests check
/// [`postgres_available`] first, which skips them when nothing listens at all).
async fn execute_as_admin(statement: &str) {
    let url = postgres_base_url();
    let connecting = tokio::time::timeout(Duration::from_secs(10), PgConnection::connect(&url));
    let mut connection = match connecting.await {
        Ok(Ok(connection)) => connection,
        Ok(Err(error)) => panic!("{}", postgres_unreachable(&url, &error.to_string())),
        Err(_) => panic!("{}", postgres_unreachable(&url, "timed out after 10 s")),
    };
    sqlx::raw_sql(sqlx::AssertSqlSafe(statement.to_owned()))
        .execute(&mut connection)
        .await
        .unwrap_or_else(|error| panic!("{statement}: {error}"));
    connection.close().await.ok();
}

fn postgres_unreachable(url: &str, error: &str) -> String {
    format!(
        "the Postgres half of the storage tests needs a Postgres server at {url} \
         (set TEST_DATABASE_URL to use another; start the local one with \
         `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`): {error}"
    )
}

/// `url` naming another database on the same server, its query string kept.
pub fn url_with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (url, String::new()),
    };
    let authority_start = base.find("://").map_or(0, |index| index + 3);
    let path_start = base[authority_start..]
        .find('/')
        .map_or(base.len(), |index| authority_start + index);
    format!("{}/{database}{query}", &base[..path_start])
}

/// `url` pointing at another host and port, its user, database and query kept.
pub fn url_with_host_port(url: &str, host_port: &str) -> String {
    let authority_start = url.find("://").expect("a URL with a scheme") + 3;
    let authority_end = url[authority_start..]
        .find(['/', '?'])
        .map_or(url.len(), |index| authority_start + index);
    let host_start = url[authority_start..authority_end]
        .rfind('@')
        .map_or(authority_start, |index| authority_start + index + 1);
    format!("{}{host_port}{}", &url[..host_start], &url[authority_end..])
}

/// The address of the Postgres server the tests use.
pub fn postgres_address() -> SocketAddr {
    let options = PgConnectOptions::from_str(&postgres_base_url()).unwrap();
    let host = match options.get_host() {
        "localhost" => "127.0.0.1",
        host => host,
    };
    format!("{host}:{}", options.get_port())
        .parse()
        .expect("TEST_DATABASE_URL must name the server by IP address or localhost")
}

/// Options with a short acquire timeout, so that failures show quickly in tests.
pub fn impatient_options(url: &str) -> StoreOptions {
    StoreOptions {
        acquire_timeout: Duration::from_millis(500),
        ..StoreOptions::new(url)
    }
}

/// A TCP proxy to a server, which a test can cut and bring back on the same port to play
/// a database that goes away and returns.
pub struct Proxy {
    port: u16,
    accepting: JoinHandle<()>,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Proxy {
    /// Listens on 127.0.0.1:`port` (0 for any free port) and forwards to `target`.
    pub async fn start(port: u16, target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(Mutex::new(Vec::new()));
        let accepting = tokio::spawn(accept_forever(listener, target, connections.clone()));
        Proxy {
            port,
            accepting,
            connections,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops listening and drops every forwarded connection, as a crashed server would.
    pub async fn stop(self) {
        self.accepting.abort();
        let _ = self.accepting.await;
        let connections: Vec<_> = self.connections.lock().unwrap().drain(..).collect();
        for connection in connections {
            connection.abort();
            let _ = connection.await;
        }
    }
}

async fn accept_forever(
    listener: TcpListener,
    target: SocketAddr,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
) {
    while let Ok((mut client, _)) = listener.accept().await {
        let forwarding = tokio::spawn(async move {
            if let Ok(mut server) = TcpStream::connect(target).await {
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            }
        });
        connections.lock().unwrap().push(forwarding);
    }
}

/// The deck commitment's salt the tests' games start with: 64 hex characters.
pub const DECK_SALT: &str = "5a17000000000000000000000000000000000000000000000000000000005a17";

/// A fixed point in time for the tests' rows: 2025-01-01T00:00:00Z.
pub const EPOCH: Millis = 1_735_689_600_000;

pub fn player(name: &str) -> PlayerRow {
    PlayerRow {
        id: Uuid::new_v4(),
        display_name: name.to_owned(),
        secret_hash: format!("hash-of-{name}"),
        created_at: EPOCH,
    }
}

/// An open public lobby for four with the base rules, at `seq` 1.
pub fn open_lobby(name: &str, created_at: Millis) -> LobbyRow {
    LobbyRow {
        id: Uuid::new_v4(),
        name: name.to_owned(),
        public: true,
        invite_hash: None,
        seat_count: 4,
        rules: Rules::default(),
        clock: TimeControl::None,
        status: LobbyStatus::Open,
        seed: None,
        deck_salt: None,
        seq: 1,
        created_at,
        started_at: None,
        finished_at: None,
        rated: false,
        chat_policy: ChatPolicy::default(),
    }
}

pub fn seat(number: u8, name: &str, player_id: Option<Uuid>) -> SeatRow {
    SeatRow {
        seat: number,
        display_name: name.to_owned(),
        player_id,
        token_hash: format!("token-of-{name}"),
        creator: number == 0,
        joined_at: EPOCH + i64::from(number),
        control: SeatControl::Human,
        control_seq: 0,
        bot: None,
    }
}

/// A move of `seat` under `seq`, its kind varied with `seq` so that the log holds every
/// shape of move JSON.
pub fn move_row(seq: u64, seat: u8, command_id: &str) -> MoveRow {
    let mv = match seq % 3 {
        0 => Move::PlaceTile {
            pos: Pos {
                x: seq as i32,
                y: -1,
            },
            rotation: Rotation::R270,
        },
        1 => Move::PlaceFigure {
            figure: FigureKind::Follower,
            spot: Spot::MONASTERY,
        },
        _ => Move::Pass,
    };
    MoveRow {
        seq,
        seat,
        command_id: command_id.to_owned(),
        mv,
        created_at: EPOCH + seq as i64,
        origin: MoveOrigin::Player,
    }
}

/// The command (seat and command id) of the move `store` holds under `seq` of `game`, read
/// as the server reads it after a write whose outcome was lost (`Store::stored_at`);
/// `None` when no move is stored there, or there is no such game.
pub async fn command_at(store: &Store, game: Uuid, seq: u64) -> Option<(u8, String)> {
    store.stored_at(game, seq).await.unwrap()?.command_at
}

/// The command of `mv`, as `command_at` reads it back once `mv` is stored.
pub fn command_of(mv: &MoveRow) -> Option<(u8, String)> {
    Some((mv.seat, mv.command_id.clone()))
}

/// Creates a lobby with `seats` (the first one its creator), starts it and returns it;
/// its `seq` is then `seats.len() + 1`.
pub async fn playing_game(store: &Store, seats: &[SeatRow]) -> LobbyRow {
    let lobby = open_lobby("a game", EPOCH);
    store.create_lobby(&lobby, &seats[0]).await.unwrap();
    let mut seq = lobby.seq;
    for seat in &seats[1..] {
        seq += 1;
        store.add_seat(lobby.id, seat, seq).await.unwrap();
    }
    seq += 1;
    store
        .start_game(lobby.id, seats, 42, DECK_SALT, EPOCH + 1_000, seq)
        .await
        .unwrap();
    store.lobby(lobby.id).await.unwrap().unwrap().0
}

/// A finished match with one seat per `(player, score)`, the highest score winning.
pub fn finished_match(
    finished_at: Millis,
    expansions: &[Expansion],
    players: &[(Option<Uuid>, u32)],
) -> FinishedMatch {
    let best = players.iter().map(|&(_, score)| score).max().unwrap_or(0);
    let seats = players
        .iter()
        .enumerate()
        .map(|(index, &(player_id, score))| MatchSeat {
            seat: index as u8,
            display_name: format!("seat {index}"),
            player_id,
            score,
            winner: score == best,
            resigned: false,
            points: PointsByKind::default(),
        })
        .collect();
    let id = Uuid::new_v4();
    FinishedMatch {
        id,
        name: format!("match {id}"),
        rules: Rules::with_expansions(expansions),
        started_at: finished_at - 1_800_000,
        finished_at,
        status: MatchStatus::Finished,
        tiles_placed: 71,
        seats,
        breakdown: JsonText::from(
            serde_json::json!([{ "feature": "city", "points": 12, "seats": [0] }]),
        ),
        record: JsonText::from(
            serde_json::json!({ "version": 1, "match": id.to_string(), "turns": [] }),
        ),
        rating: None,
    }
}

/// Applies the repository's migrations of `backend` up to and including `version`, as an
/// older version of the server did, so that a test can write rows in that schema and
/// check what the later migrations make of them. Versions and descriptions are the ones
/// the store records, so that it applies only the migrations after `version`.
pub async fn migrate_to_version(backend: Backend, url: &str, version: i64) {
    let folder = match backend {
        Backend::Postgres => "postgres",
        Backend::Sqlite => "sqlite",
    };
    let directory = format!("{}/../migrations/{folder}", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&directory)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".sql"))
        .collect();
    names.sort();
    let migrations = names
        .iter()
        .map(|name| {
            let stem = name.strip_suffix(".sql").unwrap();
            let (number, description) = stem.split_once('_').unwrap();
            let sql = std::fs::read_to_string(format!("{directory}/{name}")).unwrap();
            Migration::new(
                number.parse().unwrap(),
                description.replace('_', " ").into(),
                MigrationType::Simple,
                AssertSqlSafe(sql).into_sql_str(),
                false,
            )
        })
        .filter(|migration| migration.version <= version)
        .collect();
    let migrator = Migrator::with_migrations(migrations);
    match backend {
        Backend::Postgres => {
            migrator
                .run(&sqlx::PgPool::connect(url).await.unwrap())
                .await
        }
        Backend::Sqlite => {
            let options = SqliteConnectOptions::from_str(url)
                .unwrap()
                .create_if_missing(true);
            migrator
                .run(&sqlx::SqlitePool::connect_with(options).await.unwrap())
                .await
        }
    }
    .unwrap();
}

/// A UUID as an SQL literal of `backend`'s column type.
pub fn uuid_literal(backend: Backend, id: Uuid) -> String {
    match backend {
        Backend::Postgres => format!("'{id}'"),
        Backend::Sqlite => format!("X'{}'", id.simple()),
    }
}
