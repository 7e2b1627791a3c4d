//! Faults of a real Postgres deployment, played through `pg_proxy`: a database that
//! stops answering mid-write, a lost reply to a `COMMIT`, a statement stuck on a lock, a
//! failover onto a read-only replica. Postgres only: SQLite has no network to lose.

use std::time::{Duration, Instant};

use carcassonne_store::{Backend, Store, StoreError, StoreOptions};

use crate::common::{
    Context, command_at, command_of, move_row, playing_game, postgres_address, postgres_available,
    run, seat, url_with_host_port,
};
use crate::pg_proxy::PgProxy;

/// The acquire timeout of the stores these tests open: short, to keep them quick.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(1);
/// Their operation timeout, which derives from it.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(2);

/// Runs a Postgres-only test body, or skips it loudly when Postgres is unreachable.
async fn on_postgres<Body, Test>(test: &str, body: Body)
where
    Body: FnOnce(Context) -> Test,
    Test: std::future::Future<Output = ()> + Send + 'static,
{
    if postgres_available(test) {
        run(Backend::Postgres, body).await;
    }
}

/// A store on the test's database reached through `proxy`, with short timeouts.
async fn store_through(proxy: &PgProxy, context: &Context, max_connections: u32) -> Store {
    let url = url_with_host_port(&context.url, &format!("127.0.0.1:{}", proxy.port()));
    let options = StoreOptions {
        max_connections,
        acquire_timeout: ACQUIRE_TIMEOUT,
        ..StoreOptions::new(url)
    };
    assert_eq!(options.operation_timeout(), OPERATION_TIMEOUT);
    Store::connect_with(&options).await.unwrap()
}

/// Asserts that `error` is `Unavailable` and came within the operation timeout and a
/// second of slack.
fn assert_unavailable_in_time(error: StoreError, started: Instant) {
    assert!(matches!(error, StoreError::Unavailable(_)), "{error:?}");
    let took = started.elapsed();
    assert!(
        took < OPERATION_TIMEOUT + Duration::from_secs(1),
        "took {took:?}"
    );
}

/// The database freezes after the write's `BEGIN` and never answers on that connection
/// again. The call fails in bounded time, the stuck connection does not keep the pool's
/// only slot (the next calls get a fresh connection), and nothing was written.
#[tokio::test]
async fn a_database_silent_for_good_mid_write_fails_in_time_and_frees_the_pool() {
    on_postgres("faults::silent_for_good", |context| async move {
        let proxy = PgProxy::start(postgres_address()).await;
        let store = store_through(&proxy, &context, 1).await;
        let game = playing_game(&store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        let mv = move_row(game.seq + 1, 0, "c1");

        proxy.pause_inside_next_transaction();
        let started = Instant::now();
        let error = store.append_move(game.id, &mv).await.unwrap_err();
        assert_unavailable_in_time(error, started);

        let started = Instant::now();
        let (lobby, _) = store.lobby(game.id).await.unwrap().unwrap();
        assert_eq!(lobby.seq, game.seq);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "took {:?}",
            started.elapsed()
        );
        assert_eq!(command_at(&store, game.id, mv.seq).await, None);
        store.append_move(game.id, &mv).await.unwrap();
        assert_eq!(command_at(&store, game.id, mv.seq).await, command_of(&mv));
        store.close().await;
        proxy.stop().await;
    })
    .await;
}

/// The database freezes mid-write and later thaws: the call fails in bounded time, the
/// held statements then reach the server but their transaction is rolled back, and the
/// same store carries on.
#[tokio::test]
async fn a_database_that_freezes_mid_write_and_thaws_loses_nothing() {
    on_postgres("faults::freezes_and_thaws", |context| async move {
        let proxy = PgProxy::start(postgres_address()).await;
        let store = store_through(&proxy, &context, 4).await;
        let game = playing_game(&store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        let mv = move_row(game.seq + 1, 0, "c1");

        proxy.pause_inside_next_transaction();
        let started = Instant::now();
        let error = store.append_move(game.id, &mv).await.unwrap_err();
        assert_unavailable_in_time(error, started);
        proxy.resume();

        assert_eq!(store.lobby(game.id).await.unwrap().unwrap().0.seq, game.seq);
        assert_eq!(command_at(&store, game.id, mv.seq).await, None);
        store.append_move(game.id, &mv).await.unwrap();
        assert_eq!(store.lobby(game.id).await.unwrap().unwrap().0.seq, mv.seq);
        store.close().await;
        proxy.stop().await;
    })
    .await;
}

/// The reply to a move's `COMMIT` is lost: the caller hears `Unavailable`, yet the move
/// is stored, and `stored_at` and `lobby` say so; writing it again is a conflict.
#[tokio::test]
async fn after_a_lost_commit_reply_the_store_tells_the_truth() {
    on_postgres("faults::lost_commit_reply", |context| async move {
        let proxy = PgProxy::start(postgres_address()).await;
        let store = store_through(&proxy, &context, 2).await;
        let game = playing_game(&store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        let mv = move_row(game.seq + 1, 0, "c1");

        proxy.lose_next_commit_reply();
        let error = store.append_move(game.id, &mv).await.unwrap_err();
        assert!(matches!(error, StoreError::Unavailable(_)), "{error:?}");
        assert_eq!(proxy.lost_commit_replies(), 1);

        assert_eq!(command_at(&store, game.id, mv.seq).await, command_of(&mv));
        assert_eq!(store.lobby(game.id).await.unwrap().unwrap().0.seq, mv.seq);
        let again = store.append_move(game.id, &mv).await;
        assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
        store.close().await;
        proxy.stop().await;
    })
    .await;
}

/// A write stuck behind another session's lock is stopped by the server's statement
/// timeout, well before the client's operation timeout, as `Unavailable` (SQLSTATE 57014).
#[tokio::test]
async fn a_statement_stuck_on_a_lock_hits_the_statement_timeout() {
    on_postgres("faults::statement_timeout", |context| async move {
        let game = playing_game(&context.store, &[seat(0, "Ada", None)]).await;
        let options = StoreOptions {
            statement_timeout: Some(Duration::from_millis(300)),
            ..StoreOptions::new(context.url.clone())
        };
        let store = Store::connect_with(&options).await.unwrap();
        let mut locker = <sqlx::PgConnection as sqlx::Connection>::connect(&context.url)
            .await
            .unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "BEGIN; SELECT seq FROM lobbies WHERE id = '{}' FOR UPDATE",
            game.id
        )))
        .execute(&mut locker)
        .await
        .unwrap();

        let started = Instant::now();
        let error = store
            .append_move(game.id, &move_row(game.seq + 1, 0, "c1"))
            .await;
        let took = started.elapsed();
        let Err(StoreError::Unavailable(message)) = error else {
            panic!("{error:?}");
        };
        assert!(message.contains("statement timeout"), "{message}");
        assert!(took < Duration::from_secs(2), "took {took:?}");
        drop(locker);
        store.close().await;
    })
    .await;
}

/// After a failover onto a read-only replica, reads still work and writes are refused
/// as `Unavailable` (SQLSTATE 25006), not as an internal error; a server starting on it
/// cannot migrate and is told the same.
#[tokio::test]
async fn writes_on_a_read_only_database_are_unavailable() {
    on_postgres("faults::read_only", |context| async move {
        let game = playing_game(&context.store, &[seat(0, "Ada", None)]).await;
        let database = context.url.rsplit('/').next().unwrap();
        let database = database.split('?').next().unwrap().to_owned();
        // The store's sessions are ended, so that the ones it opens next are read-only.
        context
            .execute(&format!(
                "ALTER DATABASE {database} SET default_transaction_read_only = on; \
                 SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = '{database}' AND application_name = 'carcassonne-server'"
            ))
            .await;
        let store = &context.store;
        assert!(store.lobby(game.id).await.unwrap().is_some());
        let error = store
            .append_move(game.id, &move_row(game.seq + 1, 0, "c1"))
            .await;
        let Err(StoreError::Unavailable(message)) = error else {
            panic!("{error:?}");
        };
        assert!(message.contains("read-only"), "{message}");
        let starting = Store::connect(&context.url).await;
        assert!(
            matches!(starting, Err(StoreError::Unavailable(_))),
            "{starting:?}"
        );
    })
    .await;
}

/// The release check keeps healthy connections: many calls on a pool of one all run on
/// the same Postgres session (a check that wrongly failed would reconnect each time).
#[tokio::test]
async fn released_connections_are_kept() {
    on_postgres(
        "faults::released_connections_are_kept",
        |context| async move {
            context.store.close().await;
            let options = StoreOptions {
                max_connections: 1,
                ..StoreOptions::new(context.url.clone())
            };
            let store = Store::connect_with(&options).await.unwrap();
            let game = playing_game(&store, &[seat(0, "Ada", None)]).await;
            let database = context.url.rsplit('/').next().unwrap();
            let database = database.split('?').next().unwrap().to_owned();
            let session = format!(
                "SELECT MIN(pid)::BIGINT FROM pg_stat_activity \
             WHERE datname = '{database}' AND application_name = 'carcassonne-server'"
            );
            let before = context.count(&session).await;
            for turn in 1..=20 {
                let mv = move_row(game.seq + turn, 0, &format!("c{turn}"));
                store.append_move(game.id, &mv).await.unwrap();
                store.lobby(game.id).await.unwrap();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(context.count(&session).await, before);
            store.close().await;
        },
    )
    .await;
}

/// The move writer keeps one connection for its batches and does not check it before
/// use. When the database ends that session between two batches (an administrator's
/// `pg_terminate_backend`, a restart), the next batch finds it dead before anything was
/// committed and is written on a fresh connection: the move lands, and its caller never
/// hears of the lost session.
#[tokio::test]
async fn a_batch_on_a_session_the_database_ended_is_written_on_a_fresh_one() {
    on_postgres("faults::ended_session", |context| async move {
        let store = &context.store;
        let game = playing_game(store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        let first = move_row(game.seq + 1, 0, "c1");
        store.append_move(game.id, &first).await.unwrap();
        let database = context.url.rsplit('/').next().unwrap();
        let database = database.split('?').next().unwrap().to_owned();
        let ended = context
            .count(&format!(
                "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE datname = '{database}' AND application_name = 'carcassonne-server'"
            ))
            .await;
        assert!(ended >= 1, "no session of the store was ended");

        let second = move_row(game.seq + 2, 1, "c2");
        store.append_move(game.id, &second).await.unwrap();
        assert_eq!(
            command_at(store, game.id, second.seq).await,
            command_of(&second)
        );
    })
    .await;
}
