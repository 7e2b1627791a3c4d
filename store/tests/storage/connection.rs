//! Connecting, migrating, and failing fast when the database is gone.

use std::time::{Duration, Instant};

use carcassonne_store::{Backend, Store, StoreError, StoreOptions};
use sqlx::Connection;

use crate::common::{
    Context, Proxy, command_at, impatient_options, move_row, player, playing_game,
    postgres_address, postgres_available, run, seat, url_with_database, url_with_host_port,
};

/// How long an unreachable database may take to be reported, with a 500 ms acquire
/// timeout: well under the several seconds a client would wait otherwise.
const FAST: Duration = Duration::from_secs(3);

backend_tests! {
    async fn migrations_are_idempotent(context: Context) {
        let ada = player("Ada");
        context.store.create_player(&ada).await.unwrap();
        // Connecting again runs the migrator again, which must find nothing to do.
        for _ in 0..2 {
            let again = context.reopen().await;
            assert_eq!(again.player(ada.id).await.unwrap(), Some(ada.clone()));
            again.close().await;
        }
        let applied = context.count("SELECT COUNT(*) FROM _sqlx_migrations").await;
        assert_eq!(applied, migration_files(context.backend));
    }

    async fn the_store_knows_its_backend(context: Context) {
        assert_eq!(context.store.backend(), context.backend);
        context.store.ping().await.unwrap();
    }

    // A closed store reaches nothing, and says so: a write refused this way was
    // certainly not made, and a caller need not read back whether it landed.
    async fn a_closed_store_is_unreachable(context: Context) {
        let other = context.reopen().await;
        let game = playing_game(&other, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        other.close().await;
        let error = other.ping().await.unwrap_err();
        assert!(matches!(error, StoreError::Unreachable(_)), "{error:?}");
        // Moves go through the move writer, which has a pool of its own on Postgres.
        let mv = move_row(game.seq + 1, 0, "c1");
        let error = other.append_move(game.id, &mv).await.unwrap_err();
        assert!(matches!(error, StoreError::Unreachable(_)), "{error:?}");
        assert_eq!(command_at(&context.store, game.id, mv.seq).await, None);
    }

    async fn an_unreachable_database_is_unavailable_quickly(context: Context) {
        let url = match context.backend {
            // Nothing listens on port 1.
            Backend::Postgres => url_with_host_port(&context.url, "127.0.0.1:1"),
            Backend::Sqlite => "sqlite:///nonexistent-directory/store.db".to_owned(),
        };
        let started = Instant::now();
        let error = Store::connect_with(&impatient_options(&url)).await.unwrap_err();
        let expected = match context.backend {
            // The pool gave no connection: nothing was reached.
            Backend::Postgres => matches!(error, StoreError::Unreachable(_)),
            // SQLite cannot open its file: the database itself fails.
            Backend::Sqlite => matches!(error, StoreError::Unavailable(_)),
        };
        assert!(expected, "{error:?}");
        assert!(started.elapsed() < FAST, "took {:?}", started.elapsed());
    }

    async fn a_wrong_url_is_a_configuration_error(context: Context) {
        let wrong = match context.backend {
            Backend::Postgres => url_with_database(&context.url, "no_such_database"),
            Backend::Sqlite => format!("{}?mode=sideways", context.url),
        };
        let error = Store::connect_with(&impatient_options(&wrong)).await.unwrap_err();
        assert!(matches!(error, StoreError::Config(_)), "{error:?}");
        let unknown = Store::connect("mysql://root@127.0.0.1/carcassonne").await.unwrap_err();
        assert!(matches!(unknown, StoreError::Config(_)), "{unknown:?}");
    }

    async fn pool_status_reports_the_pool(context: Context) {
        let options = StoreOptions { max_connections: 3, ..StoreOptions::new(&context.url) };
        let store = Store::connect_with(&options).await.unwrap();
        store.ping().await.unwrap();
        let status = store.pool_status();
        assert_eq!(status.max, 3);
        assert!(status.size >= 1 && status.size <= 3, "{status:?}");
        assert!(status.idle <= status.size, "{status:?}");
        store.close().await;
        assert_eq!(store.pool_status().size, 0);
    }

    async fn the_store_recovers_when_the_database_returns(context: Context) {
        match context.backend {
            Backend::Postgres => postgres_comes_back(&context).await,
            Backend::Sqlite => sqlite_file_comes_back(&context).await,
        }
    }
}

/// Cuts the connection to Postgres under a running store: calls fail fast with
/// `Unreachable` (the pool's new connections are refused, so nothing reaches the
/// database), and once the server is reachable again the same store works, its broken
/// connections replaced by the pool.
async fn postgres_comes_back(context: &Context) {
    let proxy = Proxy::start(0, postgres_address()).await;
    let port = proxy.port();
    let url = url_with_host_port(&context.url, &format!("127.0.0.1:{port}"));
    let store = Store::connect_with(&impatient_options(&url)).await.unwrap();
    store.ping().await.unwrap();

    proxy.stop().await;
    let started = Instant::now();
    let error = store.ping().await.unwrap_err();
    assert!(matches!(error, StoreError::Unreachable(_)), "{error:?}");
    assert!(started.elapsed() < FAST, "took {:?}", started.elapsed());

    let proxy = Proxy::start(port, postgres_address()).await;
    store.ping().await.unwrap();
    let ada = player("Ada");
    store.create_player(&ada).await.unwrap();
    assert_eq!(context.store.player(ada.id).await.unwrap(), Some(ada));
    store.close().await;
    proxy.stop().await;
}

/// With the database unreachable, moves of several games written together are all
/// refused as `Unreachable` within about one acquire timeout: the moves that queued while
/// one batch waited for a connection are refused with it, not tried one batch after
/// another (each batch used to wait its own acquire timeout).
#[tokio::test]
async fn moves_queued_behind_an_unreachable_batch_are_refused_with_it() {
    if !postgres_available("connection::unreachable_batches") {
        return;
    }
    run(Backend::Postgres, |context| async move {
        let proxy = Proxy::start(0, postgres_address()).await;
        let url = url_with_host_port(&context.url, &format!("127.0.0.1:{}", proxy.port()));
        let options = StoreOptions {
            acquire_timeout: Duration::from_secs(1),
            ..StoreOptions::new(&url)
        };
        let store = Store::connect_with(&options).await.unwrap();
        let mut games = Vec::new();
        for _ in 0..6 {
            games.push(playing_game(&store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await);
        }
        proxy.stop().await;
        let started = Instant::now();
        let writes: Vec<_> = games
            .iter()
            .enumerate()
            .map(|(number, game)| {
                let store = store.clone();
                let mv = move_row(game.seq + 1, 0, "c1");
                let id = game.id;
                tokio::spawn(async move {
                    // One after another, so that most wait behind the first batch.
                    tokio::time::sleep(Duration::from_millis(50 * number as u64)).await;
                    store.append_move(id, &mv).await
                })
            })
            .collect();
        for write in writes {
            let outcome = write.await.unwrap();
            assert!(
                matches!(outcome, Err(StoreError::Unreachable(_))),
                "{outcome:?}"
            );
        }
        let took = started.elapsed();
        assert!(
            took < Duration::from_millis(1800),
            "the last refusal took {took:?}"
        );
        for game in &games {
            assert_eq!(
                command_at(&context.store, game.id, game.seq + 1).await,
                None
            );
        }
    })
    .await;
}

/// Moves the SQLite file's directory away: opening the database fails fast with
/// `Unavailable` (and does not create a new, empty file elsewhere); once the directory
/// is back, the database opens with its data.
async fn sqlite_file_comes_back(context: &Context) {
    let ada = player("Ada");
    context.store.create_player(&ada).await.unwrap();
    let path = context.url.trim_start_matches("sqlite://");
    let directory = std::path::Path::new(path).parent().unwrap().to_owned();
    let away = directory.with_extension("away");
    std::fs::rename(&directory, &away).unwrap();

    let started = Instant::now();
    let error = Store::connect_with(&impatient_options(&context.url))
        .await
        .unwrap_err();
    std::fs::rename(&away, &directory).unwrap();
    assert!(matches!(error, StoreError::Unavailable(_)), "{error:?}");
    assert!(started.elapsed() < FAST, "took {:?}", started.elapsed());

    let store = Store::connect(&context.url).await.unwrap();
    assert_eq!(store.player(ada.id).await.unwrap(), Some(ada));
    store.close().await;
}

/// How many migrations the repository holds for `backend`.
fn migration_files(backend: Backend) -> i64 {
    let folder = match backend {
        Backend::Postgres => "postgres",
        Backend::Sqlite => "sqlite",
    };
    let path = format!("{}/../migrations/{folder}", env!("CARGO_MANIFEST_DIR"));
    let files = std::fs::read_dir(path).unwrap();
    files
        .filter(|entry| {
            entry
                .as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|e| e == "sql")
        })
        .count() as i64
}

/// The server's default URL names a file that does not exist on a fresh install.
#[tokio::test]
async fn sqlite_creates_a_missing_database_file() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("carcassonne.db");
    assert!(!path.exists());
    let store = Store::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    assert!(path.exists());
    assert_eq!(store.backend(), Backend::Sqlite);
    store.close().await;
}

/// Every pooled connection in use for the whole acquire timeout, the database answering:
/// a call is refused as `Busy` (backpressure), not `Unreachable` (an outage). Two calls
/// hold the pool's two connections, waiting on a lock another session holds; a third
/// finds none. Once the lock goes, the first two complete.
#[tokio::test]
async fn a_pool_in_use_to_its_last_connection_is_busy_not_unreachable() {
    if !postgres_available("connection::busy_pool") {
        return;
    }
    run(Backend::Postgres, |context| async move {
        let options = StoreOptions {
            max_connections: 2,
            acquire_timeout: Duration::from_millis(300),
            ..StoreOptions::new(&context.url)
        };
        let store = Store::connect_with(&options).await.unwrap();
        let ada = player("Ada");
        store.create_player(&ada).await.unwrap();
        let mut locker = sqlx::PgConnection::connect(&context.url).await.unwrap();
        sqlx::raw_sql("BEGIN; LOCK TABLE players IN ACCESS EXCLUSIVE MODE")
            .execute(&mut locker)
            .await
            .unwrap();
        let holders: Vec<_> = (0..2)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move { store.player(ada.id).await })
            })
            .collect();
        while store.pool_status().idle > 0 || store.pool_status().size < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let error = store.ping().await.unwrap_err();
        assert!(matches!(error, StoreError::Busy(_)), "{error:?}");
        sqlx::raw_sql("ROLLBACK")
            .execute(&mut locker)
            .await
            .unwrap();
        for holder in holders {
            assert!(holder.await.unwrap().unwrap().is_some());
        }
        store.ping().await.unwrap();
        store.close().await;
    })
    .await;
}
