//! Game ownership leases and fencing, for several server nodes on one Postgres: taking,
//! renewing, releasing and lapsing leases, finding the games no node owns, and above all
//! that two nodes which both believe they own a game can never fork it, because the
//! database refuses every write of the node that does not hold its lease. Leases are
//! Postgres-only; the SQLite tests check that a store there refuses them plainly.

use std::time::Duration;

use carcassonne_store::{
    Backend, FinalChange, LeaseHolder, LobbyStatus, SeatControl, Store, StoreError, StoreOptions,
};
use sqlx::Connection;
use uuid::Uuid;

use crate::common::{
    Context, DECK_SALT, EPOCH, TestDatabase, command_at, finished_match, move_row, open_lobby,
    playing_game, postgres_available, run, seat,
};

/// A lease long enough never to lapse during a test.
const LONG: Duration = Duration::from_secs(60);

/// A lease that lapses at once; tests wait [`PAST_TINY`] after taking one.
const TINY: Duration = Duration::from_millis(1);

/// Long enough for a [`TINY`] lease to have lapsed on the database's clock.
const PAST_TINY: Duration = Duration::from_millis(30);

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

/// A store on the test's database that writes as node `node`.
async fn node_store(context: &Context, node: &str) -> Store {
    let options = StoreOptions {
        node: Some(node.to_owned()),
        ..StoreOptions::new(&context.url)
    };
    Store::connect_with(&options)
        .await
        .unwrap_or_else(|error| panic!("connecting as node {node}: {error}"))
}

fn holder(owner: Option<&str>, lapsed: bool) -> Option<LeaseHolder> {
    Some(LeaseHolder {
        owner: owner.map(str::to_owned),
        lapsed,
    })
}

fn assert_not_owner<T: std::fmt::Debug>(outcome: Result<T, StoreError>, what: &str) {
    assert!(
        matches!(&outcome, Err(StoreError::NotOwner(_))),
        "{what}: expected NotOwner, got {outcome:?}"
    );
}

/// The `seq` of a lobby and its number of moves, as the database holds them.
async fn stored_state(context: &Context, game: Uuid) -> (u64, i64) {
    let (lobby, _) = context.store.lobby(game).await.unwrap().expect("the lobby");
    let moves = context
        .count(&format!(
            "SELECT COUNT(*) FROM moves WHERE game_id = '{game}'"
        ))
        .await;
    (lobby.seq, moves)
}

#[tokio::test]
async fn leases_are_taken_renewed_released_and_lapse() {
    on_postgres("leases::semantics", |context| async move {
        let store = &context.store;
        let game = playing_game(store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        let id = game.id;
        assert_eq!(store.lease_holder(id).await.unwrap(), holder(None, false));

        // Free: the first node takes it; the second is refused while it holds.
        assert!(store.acquire_lease(id, "a", LONG).await.unwrap());
        assert_eq!(
            store.lease_holder(id).await.unwrap(),
            holder(Some("a"), false)
        );
        assert!(!store.acquire_lease(id, "b", LONG).await.unwrap());
        assert_eq!(
            store.lease_holder(id).await.unwrap(),
            holder(Some("a"), false)
        );
        // Its own: taking it again renews it.
        assert!(store.acquire_lease(id, "a", LONG).await.unwrap());

        // Renewing extends only the node's own leases.
        assert_eq!(store.renew_leases("a", LONG).await.unwrap(), [id]);
        assert!(store.renew_leases("b", LONG).await.unwrap().is_empty());

        // Releasing another node's lease does nothing; releasing one's own frees it at once.
        store.release_lease(id, "b").await.unwrap();
        assert_eq!(
            store.lease_holder(id).await.unwrap(),
            holder(Some("a"), false)
        );
        store.release_lease(id, "a").await.unwrap();
        assert_eq!(store.lease_holder(id).await.unwrap(), holder(None, false));
        assert!(store.acquire_lease(id, "b", LONG).await.unwrap());
        assert_eq!(store.release_leases("a").await.unwrap(), 0);
        assert_eq!(store.release_leases("b").await.unwrap(), 1);
        assert_eq!(store.lease_holder(id).await.unwrap(), holder(None, false));

        // A lease that lapses still names its owner, who may renew it while no other node
        // has taken it; once another node takes it, the first holds nothing.
        assert!(store.acquire_lease(id, "a", TINY).await.unwrap());
        tokio::time::sleep(PAST_TINY).await;
        assert_eq!(
            store.lease_holder(id).await.unwrap(),
            holder(Some("a"), true)
        );
        assert_eq!(store.renew_leases("a", TINY).await.unwrap(), [id]);
        tokio::time::sleep(PAST_TINY).await;
        assert!(store.acquire_lease(id, "b", LONG).await.unwrap());
        assert_eq!(
            store.lease_holder(id).await.unwrap(),
            holder(Some("b"), false)
        );
        assert!(store.renew_leases("a", LONG).await.unwrap().is_empty());
        assert_eq!(store.release_leases("a").await.unwrap(), 0);

        // An open lobby is live and can be leased too.
        let lobby = open_lobby("waiting", EPOCH);
        store
            .create_lobby(&lobby, &seat(0, "Cy", None))
            .await
            .unwrap();
        assert!(store.acquire_lease(lobby.id, "a", LONG).await.unwrap());
        assert_eq!(store.renew_leases("a", LONG).await.unwrap(), [lobby.id]);

        // No live game with the id: nothing to take, no holder.
        let cancelled = open_lobby("gone", EPOCH);
        store
            .create_lobby(&cancelled, &seat(0, "Di", None))
            .await
            .unwrap();
        store.cancel_lobby(cancelled.id, 2).await.unwrap();
        for missing in [cancelled.id, Uuid::new_v4()] {
            assert!(!store.acquire_lease(missing, "a", LONG).await.unwrap());
            assert_eq!(store.lease_holder(missing).await.unwrap(), None);
        }

        // An empty node name could not be told from a session that names none.
        let empty = store.acquire_lease(id, "", LONG).await;
        assert!(matches!(empty, Err(StoreError::Config(_))), "{empty:?}");
    })
    .await;
}

/// What a node reads back after a write whose reply was lost: the owner, and whether its
/// lease is live on the database's clock, beside the command stored at the seq.
#[tokio::test]
async fn a_finished_game_is_hosted_by_its_last_owner_while_that_node_lives() {
    on_postgres("leases::finished_host", |context| async move {
        let store = &context.store;
        let game = playing_game(store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        let id = game.id;
        assert!(store.acquire_lease(id, "a", LONG).await.unwrap());
        assert_eq!(
            store.finished_game_host(id).await.unwrap(),
            None,
            "a live game has a lease holder, not a host"
        );
        context
            .execute(&format!(
                "UPDATE lobbies SET status = 'finished' WHERE id = '{id}'"
            ))
            .await;
        assert_eq!(store.lease_holder(id).await.unwrap(), None);
        assert_eq!(
            store.finished_game_host(id).await.unwrap().as_deref(),
            Some("a")
        );
        // A dead node hosts nothing; alive again, it is named again.
        store.renew_leases("a", TINY).await.unwrap();
        tokio::time::sleep(PAST_TINY).await;
        assert_eq!(store.finished_game_host(id).await.unwrap(), None);
        store.renew_leases("a", LONG).await.unwrap();
        assert_eq!(
            store.finished_game_host(id).await.unwrap().as_deref(),
            Some("a")
        );
        // Released once its room stops, it has no host.
        store.release_lease(id, "a").await.unwrap();
        assert_eq!(store.finished_game_host(id).await.unwrap(), None);
        // A node that starts again forgets its finished games, and only those.
        let live = playing_game(store, &[seat(0, "Cy", None), seat(1, "Di", None)]).await;
        assert!(store.acquire_lease(live.id, "a", LONG).await.unwrap());
        context
            .execute(&format!(
                "UPDATE lobbies SET owner_node = 'a' WHERE id = '{id}'"
            ))
            .await;
        assert_eq!(store.release_finished_games("a").await.unwrap(), 1);
        assert_eq!(store.finished_game_host(id).await.unwrap(), None);
        assert_eq!(
            store.lease_holder(live.id).await.unwrap(),
            holder(Some("a"), false)
        );
        assert_eq!(
            store.finished_game_host(Uuid::new_v4()).await.unwrap(),
            None
        );
    })
    .await;
}

/// A node starts by forgetting its finished games, before it serves anything: that must
/// not read every lobby the database ever kept. Here 20,000 finished games (a few days of a
/// busy server) of which two are still owned, one by the starting node.
#[tokio::test]
async fn a_node_forgets_its_finished_games_without_reading_every_lobby() {
    on_postgres("leases::release_finished_indexed", |context| async move {
        context
            .execute(
                "INSERT INTO lobbies (id, name, is_public, seat_count, rules, status, seq, \
                 created_at, owner_node) \
                 SELECT gen_random_uuid(), 'old', TRUE, 2, '{}', 'finished', 150, n, \
                 CASE n WHEN 7 THEN 'a' WHEN 8 THEN 'b' END \
                 FROM generate_series(1, 20000) AS n; \
                 ANALYZE lobbies",
            )
            .await;
        let plan = context
            .store
            .explain_release_finished_games("a")
            .await
            .unwrap();
        assert!(
            plan.contains("lobbies_finished_owned") && !plan.contains("Seq Scan"),
            "the finished games still owned are read through their index:\n{plan}"
        );
        assert_eq!(context.store.release_finished_games("a").await.unwrap(), 1);
        let still_owned = "SELECT count(*) FROM lobbies WHERE owner_node IS NOT NULL";
        assert_eq!(
            context.count(still_owned).await,
            1,
            "node b's is left alone"
        );
    })
    .await;
}

#[tokio::test]
async fn stored_at_names_the_owner_and_whether_its_lease_is_live() {
    on_postgres("leases::stored_at", |context| async move {
        let game = playing_game(&context.store, &[seat(0, "Ada", None)]).await;
        let store = &context.store;
        assert!(store.acquire_lease(game.id, "a", LONG).await.unwrap());
        let a = node_store(&context, "a").await;
        let mv = move_row(game.seq + 1, 0, "c1");
        a.append_move(game.id, &mv).await.unwrap();
        let stored = store.stored_at(game.id, mv.seq).await.unwrap().unwrap();
        assert_eq!(stored.owner.as_deref(), Some("a"));
        assert!(stored.owner_alive);
        assert_eq!(stored.command_at, Some((0, "c1".to_owned())));
        assert_eq!(store.live_cluster_nodes().await.unwrap(), ["a"]);

        store.renew_leases("a", TINY).await.unwrap();
        tokio::time::sleep(PAST_TINY).await;
        let lapsed = store.stored_at(game.id, mv.seq).await.unwrap().unwrap();
        assert_eq!(lapsed.owner.as_deref(), Some("a"));
        assert!(!lapsed.owner_alive, "a lapsed lease is not live");
        assert!(store.live_cluster_nodes().await.unwrap().is_empty());
        a.close().await;
    })
    .await;
}

#[tokio::test]
async fn orphaned_games_are_the_free_and_lapsed_live_games_oldest_first() {
    on_postgres("leases::orphaned", |context| async move {
        let store = &context.store;
        let mut lobbies = Vec::new();
        for age in 0..5 {
            // Created newest first, so that the order checked is the creation time's.
            let lobby = open_lobby(&format!("lobby {age}"), EPOCH - age * 1_000);
            store
                .create_lobby(&lobby, &seat(0, "Ada", None))
                .await
                .unwrap();
            lobbies.push(lobby.id);
        }
        let [newest, held, lapsed, released, oldest] = lobbies[..] else {
            unreachable!()
        };
        let finished = playing_game(store, &[seat(0, "Bo", None)]).await;
        let mut result = finished_match(EPOCH + 1, &[], &[(None, 1)]);
        result.id = finished.id;
        let last = move_row(finished.seq + 1, 0, "end");
        store
            .finish_game(finished.id, FinalChange::Move(&last), &result)
            .await
            .unwrap();

        assert!(store.acquire_lease(held, "a", LONG).await.unwrap());
        assert!(store.acquire_lease(lapsed, "c", TINY).await.unwrap());
        assert!(store.acquire_lease(released, "b", LONG).await.unwrap());
        store.release_lease(released, "b").await.unwrap();
        tokio::time::sleep(PAST_TINY).await;

        let orphaned = store.orphaned_games(10).await.unwrap();
        assert_eq!(orphaned, [oldest, released, lapsed, newest]);
        assert_eq!(store.orphaned_games(2).await.unwrap(), [oldest, released]);

        // Taking one over removes it from the list.
        assert!(store.acquire_lease(lapsed, "b", LONG).await.unwrap());
        assert_eq!(
            store.orphaned_games(10).await.unwrap(),
            [oldest, released, newest]
        );
    })
    .await;
}

/// A sweep takes all the orphans it found in one statement: the free, the lapsed and
/// its own, never a game whose owner's lease is live, nor one whose row a transaction
/// holds (an owner frozen in the middle of a write). That one is taken by a later call,
/// once the transaction is over, without waiting for it meanwhile.
#[tokio::test]
async fn orphans_are_taken_together_but_never_a_live_owners_nor_a_locked_one() {
    on_postgres("leases::taken_together", |context| async move {
        let store = &context.store;
        let mut games = Vec::new();
        for _ in 0..5 {
            games.push(playing_game(store, &[seat(0, "Ada", None)]).await.id);
        }
        let [free, lapsed, own, held, locked] = games[..] else {
            unreachable!()
        };
        assert!(store.acquire_lease(lapsed, "c", TINY).await.unwrap());
        assert!(store.acquire_lease(locked, "c", TINY).await.unwrap());
        assert!(store.acquire_lease(own, "b", LONG).await.unwrap());
        assert!(store.acquire_lease(held, "a", LONG).await.unwrap());
        tokio::time::sleep(PAST_TINY).await;
        let mut writer = sqlx::PgConnection::connect(&context.url).await.unwrap();
        let lock = format!("BEGIN; SELECT 1 FROM lobbies WHERE id = '{locked}' FOR UPDATE");
        sqlx::raw_sql(sqlx::AssertSqlSafe(lock))
            .execute(&mut writer)
            .await
            .unwrap();

        let asked = [free, lapsed, own, held, locked, Uuid::new_v4()];
        let mut taken = store.acquire_leases(&asked, "b", LONG).await.unwrap();
        taken.sort();
        let mut expected = vec![free, lapsed, own];
        expected.sort();
        assert_eq!(taken, expected);
        assert_eq!(
            store.lease_holder(held).await.unwrap(),
            holder(Some("a"), false)
        );
        assert_eq!(
            store.lease_holder(locked).await.unwrap(),
            holder(Some("c"), true)
        );
        assert!(
            store
                .live_cluster_nodes()
                .await
                .unwrap()
                .contains(&"b".to_owned())
        );

        sqlx::raw_sql("ROLLBACK")
            .execute(&mut writer)
            .await
            .unwrap();
        assert_eq!(
            store.acquire_leases(&[locked], "b", LONG).await.unwrap(),
            [locked]
        );
        assert!(
            store
                .acquire_leases(&[], "b", LONG)
                .await
                .unwrap()
                .is_empty()
        );
    })
    .await;
}

/// A node that took games over reads them all in one round trip: exactly what
/// `live_games` reads of them, seats, moves, chat and mutes, and nothing of the games it
/// did not ask for or that are no longer live.
#[tokio::test]
async fn games_taken_over_are_read_as_live_games_reads_them() {
    on_postgres("leases::read_taken", |context| async move {
        let store = &context.store;
        let open = open_lobby("waiting", EPOCH - 1_000);
        store
            .create_lobby(&open, &seat(0, "Ada", None))
            .await
            .unwrap();
        let playing = playing_game(store, &[seat(0, "Cy", None), seat(1, "Di", None)]).await;
        for turn in 0..3 {
            let mv = move_row(
                playing.seq + 1 + turn,
                (turn % 2) as u8,
                &format!("c{turn}"),
            );
            store.append_move(playing.id, &mv).await.unwrap();
        }
        store
            .set_chat_mute(playing.id, 1, "seat:0", true)
            .await
            .unwrap();
        let other = playing_game(store, &[seat(0, "Ed", None)]).await;
        let finished = playing_game(store, &[seat(0, "Fy", None)]).await;
        let mut result = finished_match(EPOCH + 1, &[], &[(None, 1)]);
        result.id = finished.id;
        let last = move_row(finished.seq + 1, 0, "end");
        store
            .finish_game(finished.id, FinalChange::Move(&last), &result)
            .await
            .unwrap();

        let asked = [playing.id, finished.id, open.id, Uuid::new_v4()];
        let taken = store.live_games_taken(&asked).await.unwrap();
        let mut all = store.live_games().await.unwrap();
        all.retain(|game| game.lobby.id != other.id);
        assert_eq!(taken, all, "the same games, oldest first");
        assert_eq!(taken[1].moves.len(), 3);
        assert_eq!(taken[1].chat_mutes.len(), 1);
        assert!(store.live_games_taken(&[]).await.unwrap().is_empty());
    })
    .await;
}

/// The heart of cluster mode: nodes "a" and "b" both believe they own a game, "a" holding
/// its lease. Every write of "b" is refused and changes nothing; after "a"'s lease lapses
/// and "b" takes it, every write of "a" is refused. The log never holds two moves under
/// one `seq`.
#[tokio::test]
async fn a_fork_is_impossible_even_when_two_nodes_believe_they_own_a_game() {
    on_postgres("leases::fork_impossible", |context| async move {
        let a = node_store(&context, "a").await;
        let b = node_store(&context, "b").await;
        let seats = [seat(0, "Ada", None), seat(1, "Bo", None)];
        let game = playing_game(&context.store, &seats).await;
        let id = game.id;
        assert!(a.acquire_lease(id, "a", LONG).await.unwrap());

        // "a" owns it: its move lands; each of "b"'s writes is refused.
        let first = move_row(game.seq + 1, 0, "a1");
        a.append_move(id, &first).await.unwrap();
        let forked = move_row(game.seq + 2, 1, "b2");
        assert_not_owner(b.append_move(id, &forked).await, "b's move");
        let mut result = finished_match(EPOCH + 3_600_000, &[], &[(None, 30), (None, 20)]);
        result.id = id;
        assert_not_owner(
            b.finish_game(id, FinalChange::Move(&forked), &result).await,
            "b's finish",
        );
        let mut resigned = seats[1].clone();
        resigned.control = SeatControl::Resigned;
        resigned.control_seq = game.seq + 2;
        assert_not_owner(
            b.update_seat(id, &resigned, game.seq + 2).await,
            "b's seat update",
        );
        assert_not_owner(
            b.finish_game(
                id,
                FinalChange::Seat {
                    seat: &resigned,
                    seq: game.seq + 2,
                },
                &result,
            )
            .await,
            "b's finish by a seat",
        );
        assert_not_owner(b.cancel_lobby(id, game.seq + 2).await, "b's cancel");
        // A node without a name is no owner either.
        assert_not_owner(
            context.store.append_move(id, &forked).await,
            "a nameless move",
        );
        assert_eq!(stored_state(&context, id).await, (first.seq, 1));
        let (lobby, stored_seats) = context.store.lobby(id).await.unwrap().unwrap();
        assert_eq!(lobby.status, LobbyStatus::Playing);
        assert_eq!(stored_seats, seats);
        assert_eq!(context.store.match_detail(id).await.unwrap(), None);
        assert_eq!(a.lease_holder(id).await.unwrap(), holder(Some("a"), false));

        // The group commit answers each move of a batch precisely: "b"'s moves to a game
        // it owns land, its move to "a"'s game is refused, whether they share a batch or not.
        let own = playing_game(&context.store, &seats).await;
        assert!(b.acquire_lease(own.id, "b", LONG).await.unwrap());
        let own_move = move_row(own.seq + 1, 0, "b-own");
        let (fenced, landed) =
            tokio::join!(b.append_move(id, &forked), b.append_move(own.id, &own_move));
        assert_not_owner(fenced, "b's move in a batch");
        landed.unwrap();
        assert_eq!(stored_state(&context, own.id).await, (own_move.seq, 1));

        // "a"'s lease lapses (it stalled and did not renew) and "b" takes the game over
        // from the log; "a" still believes it owns the game, but all its writes are refused.
        a.renew_leases("a", TINY).await.unwrap();
        tokio::time::sleep(PAST_TINY).await;
        assert!(b.acquire_lease(id, "b", LONG).await.unwrap());
        let restored = b.live_game(id).await.unwrap().expect("the game is live");
        assert_eq!(restored.moves, std::slice::from_ref(&first));
        let stale = move_row(game.seq + 2, 0, "a2");
        assert_not_owner(
            a.append_move(id, &stale).await,
            "a's move after the take-over",
        );
        assert_not_owner(
            a.finish_game(id, FinalChange::Move(&stale), &result).await,
            "a's finish after the take-over",
        );
        assert_not_owner(
            a.update_seat(id, &resigned, game.seq + 2).await,
            "a's seat update",
        );
        assert!(a.renew_leases("a", LONG).await.unwrap().is_empty());
        assert!(!a.acquire_lease(id, "a", LONG).await.unwrap());

        // "b" goes on from the log and finishes the game.
        b.append_move(id, &forked).await.unwrap();
        let last = move_row(game.seq + 3, 0, "b3");
        b.finish_game(id, FinalChange::Move(&last), &result)
            .await
            .unwrap();
        assert_eq!(stored_state(&context, id).await, (last.seq, 3));
        let duplicates = context
            .count(
                "SELECT COUNT(*) FROM (SELECT game_id, seq FROM moves \
                    GROUP BY game_id, seq HAVING COUNT(*) > 1) AS twice",
            )
            .await;
        assert_eq!(duplicates, 0);
        for (seq, command) in [(first.seq, "a1"), (forked.seq, "b2"), (last.seq, "b3")] {
            let (_, stored) = command_at(&context.store, id, seq).await.expect("a move");
            assert_eq!(stored, command);
        }
        a.close().await;
        b.close().await;
    })
    .await;
}

/// Both nodes race to write every `seq` of a game while its lease moves from "a" to
/// "b" halfway: each `seq` is written once, by whichever node held the lease then.
#[tokio::test]
async fn racing_nodes_write_each_seq_once() {
    on_postgres("leases::racing_nodes", |context| async move {
        let a = node_store(&context, "a").await;
        let b = node_store(&context, "b").await;
        let game = playing_game(&context.store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        assert!(a.acquire_lease(game.id, "a", LONG).await.unwrap());
        let mut written = Vec::new();
        for turn in 1..=20u64 {
            if turn == 11 {
                a.renew_leases("a", TINY).await.unwrap();
                tokio::time::sleep(PAST_TINY).await;
                assert!(b.acquire_lease(game.id, "b", LONG).await.unwrap());
            }
            let seq = game.seq + turn;
            let (move_a, move_b) = (
                move_row(seq, 0, &format!("a{turn}")),
                move_row(seq, 1, &format!("b{turn}")),
            );
            let (by_a, by_b) = tokio::join!(
                a.append_move(game.id, &move_a),
                b.append_move(game.id, &move_b)
            );
            let (winner, loser) = if turn <= 10 {
                (by_a, by_b)
            } else {
                (by_b, by_a)
            };
            winner.unwrap();
            assert_not_owner(loser, "the node without the lease");
            written.push(if turn <= 10 { "a" } else { "b" });
        }
        let live = context
            .store
            .live_game(game.id)
            .await
            .unwrap()
            .expect("live");
        let seqs: Vec<u64> = live.moves.iter().map(|mv| mv.seq).collect();
        assert_eq!(seqs, (game.seq + 1..=game.seq + 20).collect::<Vec<_>>());
        for (mv, node) in live.moves.iter().zip(written) {
            assert!(mv.command_id.starts_with(node), "{mv:?} by {node}");
        }
        a.close().await;
        b.close().await;
    })
    .await;
}

/// Lobby writes are fenced like moves: taking and freeing seats and the start.
#[tokio::test]
async fn lobby_writes_of_a_node_without_the_lease_are_refused() {
    on_postgres("leases::lobby_writes", |context| async move {
        let a = node_store(&context, "a").await;
        let b = node_store(&context, "b").await;
        let lobby = open_lobby("waiting", EPOCH);
        a.create_lobby(&lobby, &seat(0, "Ada", None)).await.unwrap();
        assert!(a.acquire_lease(lobby.id, "a", LONG).await.unwrap());

        assert_not_owner(
            b.add_seat(lobby.id, &seat(1, "Bo", None), 2).await,
            "b's add_seat",
        );
        a.add_seat(lobby.id, &seat(1, "Bo", None), 2).await.unwrap();
        assert_not_owner(b.remove_seat(lobby.id, 1, 3).await, "b's remove_seat");
        let seats = [seat(0, "Ada", None), seat(1, "Bo", None)];
        assert_not_owner(
            b.start_game(lobby.id, &seats, 7, DECK_SALT, EPOCH + 1, 3)
                .await,
            "b's start",
        );
        let (stored, stored_seats) = context.store.lobby(lobby.id).await.unwrap().unwrap();
        assert_eq!((stored.status, stored.seq), (LobbyStatus::Open, 2));
        assert_eq!(stored_seats, seats);
        a.start_game(lobby.id, &seats, 7, DECK_SALT, EPOCH + 1, 3)
            .await
            .unwrap();
        a.close().await;
        b.close().await;
    })
    .await;
}

/// A single-node server names no node and never takes leases: its games have no owner,
/// and it writes them exactly as before migration 4.
#[tokio::test]
async fn a_single_node_store_writes_games_without_an_owner_as_before() {
    on_postgres("leases::single_node", |context| async move {
        let store = &context.store;
        let seats = [seat(0, "Ada", None), seat(1, "Bo", None)];
        let game = playing_game(store, &seats).await;
        store
            .append_move(game.id, &move_row(game.seq + 1, 0, "c1"))
            .await
            .unwrap();
        let mut abandoned = seats[1].clone();
        abandoned.control = SeatControl::Abandoned;
        abandoned.control_seq = game.seq + 2;
        store
            .update_seat(game.id, &abandoned, game.seq + 2)
            .await
            .unwrap();
        let last = move_row(game.seq + 3, 0, "c3");
        let mut result = finished_match(EPOCH + 3_600_000, &[], &[(None, 30), (None, 20)]);
        result.id = game.id;
        store
            .finish_game(game.id, FinalChange::Move(&last), &result)
            .await
            .unwrap();
        let (lobby, _) = store.lobby(game.id).await.unwrap().unwrap();
        assert_eq!((lobby.status, lobby.seq), (LobbyStatus::Finished, last.seq));
        let owners = context
            .count("SELECT COUNT(*) FROM lobbies WHERE owner_node IS NOT NULL")
            .await;
        assert_eq!(owners, 0);
    })
    .await;
}

#[tokio::test]
async fn sqlite_refuses_a_node_name_and_leases() {
    let database = TestDatabase::create(Backend::Sqlite).await;
    let options = StoreOptions {
        node: Some("a".into()),
        ..StoreOptions::new(&database.url)
    };
    let refused = Store::connect_with(&options).await;
    assert!(
        matches!(&refused, Err(StoreError::Config(message)) if message == "cluster mode needs Postgres"),
        "{refused:?}"
    );
    let store = Store::connect(&database.url).await.unwrap();
    let game = playing_game(&store, &[seat(0, "Ada", None)]).await;
    let config = |outcome: Result<(), StoreError>| matches!(outcome, Err(StoreError::Config(_)));
    assert!(config(
        store.acquire_lease(game.id, "a", LONG).await.map(drop)
    ));
    assert!(config(store.renew_leases("a", LONG).await.map(drop)));
    assert!(config(store.release_leases("a").await.map(drop)));
    assert!(config(store.release_lease(game.id, "a").await));
    assert!(config(store.lease_holder(game.id).await.map(drop)));
    assert!(config(store.finished_game_host(game.id).await.map(drop)));
    assert!(config(store.release_finished_games("a").await.map(drop)));
    assert!(config(store.orphaned_games(10).await.map(drop)));
    assert!(config(
        store.acquire_leases(&[game.id], "a", LONG).await.map(drop)
    ));
    assert!(config(store.live_games_taken(&[game.id]).await.map(drop)));
    // The game itself is written as ever.
    store
        .append_move(game.id, &move_row(game.seq + 1, 0, "c1"))
        .await
        .unwrap();
    store.close().await;
    database.remove().await;
}

backend_tests! {
    async fn live_game_reads_one_game_as_live_games_does(context: Context) {
        let store = &context.store;
        let open = open_lobby("waiting", EPOCH - 1_000);
        store.create_lobby(&open, &seat(0, "Ada", None)).await.unwrap();
        store.add_seat(open.id, &seat(1, "Bo", None), 2).await.unwrap();
        let playing = playing_game(store, &[seat(0, "Cy", None), seat(1, "Di", None)]).await;
        for turn in 0..3 {
            let mv = move_row(playing.seq + 1 + turn, (turn % 2) as u8, &format!("c{turn}"));
            store.append_move(playing.id, &mv).await.unwrap();
        }
        let finished = playing_game(store, &[seat(0, "Ed", None)]).await;
        let mut result = finished_match(EPOCH + 1, &[], &[(None, 1)]);
        result.id = finished.id;
        let last = move_row(finished.seq + 1, 0, "end");
        store.finish_game(finished.id, FinalChange::Move(&last), &result).await.unwrap();

        let all = store.live_games().await.unwrap();
        assert_eq!(all.len(), 2);
        for live in &all {
            assert_eq!(store.live_game(live.lobby.id).await.unwrap().as_ref(), Some(live));
        }
        let game = store.live_game(playing.id).await.unwrap().unwrap();
        assert_eq!(game.moves.len(), 3);
        assert_eq!(game.seats.len(), 2);
        assert_eq!(store.live_game(finished.id).await.unwrap(), None);
        assert_eq!(store.live_game(Uuid::new_v4()).await.unwrap(), None);
    }
}

#[tokio::test]
async fn a_single_node_clears_the_leases_a_cluster_left_and_writes_again() {
    on_postgres("leases::clear", |context| async move {
        let store = &context.store;
        let game = playing_game(store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        let node = node_store(&context, "gone").await;
        assert!(node.acquire_lease(game.id, "gone", LONG).await.unwrap());
        let fenced = store
            .append_move(game.id, &move_row(game.seq + 1, 0, "c1"))
            .await;
        assert_not_owner(fenced, "a single node before clearing");
        assert_eq!(store.clear_leases().await.unwrap(), 1);
        assert_eq!(
            store.lease_holder(game.id).await.unwrap(),
            holder(None, false)
        );
        store
            .append_move(game.id, &move_row(game.seq + 1, 0, "c1"))
            .await
            .expect("a single node writes once the leases are cleared");
        assert_eq!(stored_state(&context, game.id).await, (game.seq + 1, 1));
    })
    .await;
}

#[tokio::test]
async fn a_lobby_belongs_to_the_node_that_creates_it_from_its_first_row() {
    on_postgres("leases::born_owned", |context| async move {
        let a = node_store(&context, "a").await;
        a.renew_leases("a", LONG).await.unwrap();
        let lobby = open_lobby("born owned", EPOCH);
        a.create_lobby(&lobby, &seat(0, "Ada", None)).await.unwrap();
        assert_eq!(
            context.store.lease_holder(lobby.id).await.unwrap(),
            holder(Some("a"), false)
        );
        assert!(context.store.orphaned_games(10).await.unwrap().is_empty());
        // A single node's lobby has no owner.
        let plain = open_lobby("plain", EPOCH);
        context
            .store
            .create_lobby(&plain, &seat(0, "Bo", None))
            .await
            .unwrap();
        assert_eq!(
            context.store.lease_holder(plain.id).await.unwrap(),
            holder(None, false)
        );
        a.close().await;
    })
    .await;
}
