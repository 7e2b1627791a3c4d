//! Lobbies: creation, seats, start, cancellation, and the `seq` each change writes.

use carcassonne_store::{LobbyStatus, MatchFilter, Store, StoreError, sha256_hex};
use uuid::Uuid;

use crate::common::{
    Context, DECK_SALT, EPOCH, TestDatabase, execute_raw, migrate_to_version, open_lobby, player,
    seat, uuid_literal,
};

/// The `seq` a lobby has in the store.
async fn seq_of(store: &Store, lobby: Uuid) -> u64 {
    store.lobby(lobby).await.unwrap().unwrap().0.seq
}

backend_tests! {
    async fn a_lobby_reads_back_as_written(context: Context) {
        let ada = player("Ada");
        context.store.create_player(&ada).await.unwrap();
        let mut lobby = open_lobby("Saturday", EPOCH);
        lobby.public = false;
        lobby.invite_hash = Some(carcassonne_store::sha256_hex("XK3F"));
        lobby.rules.farmers = false;
        lobby.rules.expansions = vec![carcassonne_core::Expansion::Festival];
        let creator = seat(0, "Ada", Some(ada.id));
        context.store.create_lobby(&lobby, &creator).await.unwrap();

        let (read, seats) = context.store.lobby(lobby.id).await.unwrap().unwrap();
        assert_eq!(read, lobby);
        assert_eq!(seats, vec![creator]);
        assert_eq!(context.store.lobby(Uuid::new_v4()).await.unwrap(), None);
    }

    async fn a_seated_lobby_is_written_whole_or_not_at_all(context: Context) {
        let ada = player("Ada");
        context.store.create_player(&ada).await.unwrap();
        let lobby = open_lobby("rematch", EPOCH);
        let mut bot = seat(2, "Greedy bot 3", None);
        bot.bot = Some("greedy".to_owned());
        let seats = vec![seat(0, "Bo", None), seat(1, "Ada", Some(ada.id)), bot];
        context.store.create_seated_lobby(&lobby, &seats).await.unwrap();
        let (read, read_seats) = context.store.lobby(lobby.id).await.unwrap().unwrap();
        assert_eq!(read, lobby);
        assert_eq!(read_seats, seats);

        // One seat the store refuses (an identity never created): no lobby, no seat.
        let refused = open_lobby("refused", EPOCH + 1);
        let ghost = seat(1, "Gus", Some(Uuid::new_v4()));
        let written = context.store.create_seated_lobby(&refused, &[seat(0, "Cy", None), ghost]).await;
        assert!(matches!(written, Err(StoreError::NotFound)), "{written:?}");
        assert_eq!(context.store.lobby(refused.id).await.unwrap(), None);
    }

    async fn seats_come_and_go_and_set_seq(context: Context) {
        let lobby = open_lobby("lobby", EPOCH);
        context.store.create_lobby(&lobby, &seat(0, "Ada", None)).await.unwrap();
        context.store.add_seat(lobby.id, &seat(1, "Bo", None), 2).await.unwrap();
        context.store.add_seat(lobby.id, &seat(2, "Cy", None), 3).await.unwrap();
        context.store.remove_seat(lobby.id, 1, 4).await.unwrap();

        let (read, seats) = context.store.lobby(lobby.id).await.unwrap().unwrap();
        assert_eq!(read.seq, 4);
        let names: Vec<_> = seats.iter().map(|s| s.display_name.as_str()).collect();
        assert_eq!(names, ["Ada", "Cy"]);

        // Freeing a seat nobody holds changes nothing, not even the seq.
        let error = context.store.remove_seat(lobby.id, 3, 5).await.unwrap_err();
        assert!(matches!(error, StoreError::NotFound), "{error:?}");
        assert_eq!(seq_of(&context.store, lobby.id).await, 4);
    }

    async fn seq_only_moves_forward(context: Context) {
        let lobby = open_lobby("lobby", EPOCH);
        context.store.create_lobby(&lobby, &seat(0, "Ada", None)).await.unwrap();
        context.store.add_seat(lobby.id, &seat(1, "Bo", None), 5).await.unwrap();
        for stale in [5, 4] {
            let error = context
                .store
                .add_seat(lobby.id, &seat(2, "Cy", None), stale)
                .await
                .unwrap_err();
            assert!(matches!(error, StoreError::Conflict(_)), "{error:?}");
        }
        let (read, seats) = context.store.lobby(lobby.id).await.unwrap().unwrap();
        assert_eq!(read.seq, 5);
        assert_eq!(seats.len(), 2);
    }

    async fn seat_writes_that_break_a_rule_change_nothing(context: Context) {
        let ada = player("Ada");
        context.store.create_player(&ada).await.unwrap();
        let lobby = open_lobby("lobby", EPOCH);
        context.store.create_lobby(&lobby, &seat(0, "Ada", Some(ada.id))).await.unwrap();

        // A seat number already taken, and an identity already seated.
        let taken = context.store.add_seat(lobby.id, &seat(0, "Bo", None), 2).await;
        assert!(matches!(taken, Err(StoreError::Conflict(_))), "{taken:?}");
        let twice = context.store.add_seat(lobby.id, &seat(1, "Ada", Some(ada.id)), 2).await;
        assert!(matches!(twice, Err(StoreError::Conflict(_))), "{twice:?}");
        // An identity that was never created, and a lobby that does not exist.
        let ghost_seat = seat(1, "Gus", Some(Uuid::new_v4()));
        let ghost = context.store.add_seat(lobby.id, &ghost_seat, 2).await;
        assert!(matches!(ghost, Err(StoreError::NotFound)), "{ghost:?}");
        let nowhere = context.store.add_seat(Uuid::new_v4(), &seat(1, "Bo", None), 2).await;
        assert!(matches!(nowhere, Err(StoreError::NotFound)), "{nowhere:?}");

        let (read, seats) = context.store.lobby(lobby.id).await.unwrap().unwrap();
        assert_eq!(read.seq, 1);
        assert_eq!(seats.len(), 1);
    }

    async fn concurrent_writes_land_or_fail_each_alone(context: Context) {
        // Writes made at once (on SQLite, in one shared transaction that commits them
        // together) each land or fail alone: a write that fails after its first statement
        // (the lobby is written, then its creator's seat names an identity that does not
        // exist) leaves nothing behind, and takes nothing of the others with it. Every
        // write that succeeded is committed when it returns: a second store, with
        // connections of its own, reads it at once.
        let writes: Vec<_> = (0..48_i64).map(|number| {
            let store = context.store.clone();
            tokio::spawn(async move {
                let lobby = open_lobby(&format!("lobby {number}"), EPOCH + number);
                let creator = match number % 3 {
                    0 => seat(0, "Gus", Some(Uuid::new_v4())),
                    _ => seat(0, "Ada", None),
                };
                (lobby.id, number % 3 != 0, store.create_lobby(&lobby, &creator).await)
            })
        }).collect();

        let other_store = context.reopen().await;
        for write in writes {
            let (lobby, valid, written) = write.await.unwrap();
            let read = other_store.lobby(lobby).await.unwrap();
            match valid {
                true => {
                    assert!(written.is_ok(), "{written:?}");
                    assert_eq!(read.unwrap().1.len(), 1);
                }
                false => {
                    assert!(matches!(written, Err(StoreError::NotFound)), "{written:?}");
                    assert_eq!(read, None);
                }
            }
        }
        assert_eq!(context.count("SELECT COUNT(*) FROM lobbies").await, 32);
        assert_eq!(context.count("SELECT COUNT(*) FROM seats").await, 32);
        other_store.close().await;
    }

    async fn starting_renumbers_the_seats(context: Context) {
        let lobby = open_lobby("lobby", EPOCH);
        context.store.create_lobby(&lobby, &seat(0, "Ada", None)).await.unwrap();
        context.store.add_seat(lobby.id, &seat(1, "Bo", None), 2).await.unwrap();
        context.store.add_seat(lobby.id, &seat(2, "Cy", None), 3).await.unwrap();

        // The shuffled order: Cy first, then Ada, then Bo.
        let mut shuffled = vec![seat(2, "Cy", None), seat(0, "Ada", None), seat(1, "Bo", None)];
        for (number, seat) in shuffled.iter_mut().enumerate() {
            seat.seat = number as u8;
        }
        let seed = u64::MAX - 7;
        context.store.start_game(lobby.id, &shuffled, seed, DECK_SALT, EPOCH + 60_000, 4).await.unwrap();

        let (read, seats) = context.store.lobby(lobby.id).await.unwrap().unwrap();
        assert_eq!(read.status, LobbyStatus::Playing);
        assert_eq!(read.seed, Some(seed));
        assert_eq!(read.deck_salt.as_deref(), Some(DECK_SALT));
        assert_eq!(read.started_at, Some(EPOCH + 60_000));
        assert_eq!(read.seq, 4);
        assert_eq!(seats, shuffled);

        // A started game takes no more seats and cannot be started again.
        let late = context.store.add_seat(lobby.id, &seat(3, "Di", None), 5).await;
        assert!(matches!(late, Err(StoreError::Conflict(_))), "{late:?}");
        let again = context.store.start_game(lobby.id, &shuffled, 1, DECK_SALT, EPOCH, 5).await;
        assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
        assert_eq!(seq_of(&context.store, lobby.id).await, 4);
    }

    async fn a_cancelled_lobby_is_closed(context: Context) {
        let lobby = open_lobby("lobby", EPOCH);
        context.store.create_lobby(&lobby, &seat(0, "Ada", None)).await.unwrap();
        context.store.cancel_lobby(lobby.id, 2).await.unwrap();

        let (read, seats) = context.store.lobby(lobby.id).await.unwrap().unwrap();
        assert_eq!(read.status, LobbyStatus::Cancelled);
        assert_eq!(read.seq, 2);
        assert_eq!(seats.len(), 1);
        assert!(context.store.open_public_lobbies(0, 10).await.unwrap().is_empty());
        assert!(context.store.live_games().await.unwrap().is_empty());
        let again = context.store.cancel_lobby(lobby.id, 3).await;
        assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
        let missing = context.store.cancel_lobby(Uuid::new_v4(), 3).await;
        assert!(matches!(missing, Err(StoreError::NotFound)), "{missing:?}");
    }

    async fn open_public_lobbies_list_newest_first(context: Context) {
        let mut public_ids = Vec::new();
        for minute in 0..5 {
            let lobby = open_lobby(&format!("public {minute}"), EPOCH + minute * 60_000);
            context.store.create_lobby(&lobby, &seat(0, "Ada", None)).await.unwrap();
            context.store.add_seat(lobby.id, &seat(1, "Bo", None), 2).await.unwrap();
            public_ids.push(lobby.id);
        }
        public_ids.reverse();
        let mut private = open_lobby("private", EPOCH + 3_600_000);
        private.public = false;
        context.store.create_lobby(&private, &seat(0, "Ada", None)).await.unwrap();
        let started = open_lobby("started", EPOCH + 3_600_000);
        context.store.create_lobby(&started, &seat(0, "Ada", None)).await.unwrap();
        context.store.start_game(started.id, &[seat(0, "Ada", None)], 1, DECK_SALT, EPOCH, 2).await.unwrap();

        let all = context.store.open_public_lobbies(0, 100).await.unwrap();
        let ids: Vec<Uuid> = all.iter().map(|(lobby, _)| lobby.id).collect();
        assert_eq!(ids, public_ids);
        for (lobby, seats) in &all {
            assert_eq!(lobby.status, LobbyStatus::Open);
            let names: Vec<_> = seats.iter().map(|s| s.display_name.as_str()).collect();
            assert_eq!(names, ["Ada", "Bo"]);
        }
        let middle = context.store.open_public_lobbies(1, 2).await.unwrap();
        let middle_ids: Vec<Uuid> = middle.iter().map(|(lobby, _)| lobby.id).collect();
        assert_eq!(middle_ids, public_ids[1..3]);
        assert!(middle.iter().all(|(_, seats)| seats.len() == 2));
        assert!(context.store.open_public_lobbies(5, 10).await.unwrap().is_empty());
    }
}

/// A database as version 1 of the schema left it: one private finished lobby with its
/// invite code in clear and its match, one public open lobby, and an imported match.
const VERSION_1_ROWS: &str = "\
    INSERT INTO lobbies (id, name, is_public, invite_code, seat_count, rules, status, seq, \
    created_at) VALUES \
    (PRIVATE_ID, 'private', FALSE, 'XK3Fabcdefg', 2, '{}', 'finished', 9, 0), \
    (PUBLIC_ID, 'public', TRUE, NULL, 2, '{}', 'open', 1, 0); \
    INSERT INTO matches (id, name, rules, expansions, player_count, started_at, finished_at, \
    tiles_placed) VALUES \
    (PRIVATE_ID, 'private', '{}', 0, 2, 0, 2, 5), \
    (IMPORTED_ID, 'imported', '{}', 0, 2, 0, 1, 5);";

backend_tests! {
    async fn upgrading_hashes_clear_invite_codes_and_hides_private_matches(context: Context) {
        let database = TestDatabase::create(context.backend).await;
        migrate_to_version(context.backend, &database.url, 1).await;
        let (private, public, imported) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let rows = VERSION_1_ROWS
            .replace("PRIVATE_ID", &uuid_literal(context.backend, private))
            .replace("PUBLIC_ID", &uuid_literal(context.backend, public))
            .replace("IMPORTED_ID", &uuid_literal(context.backend, imported));
        execute_raw(context.backend, &database.url, &rows).await;

        // Twice: the second start must not hash the hash.
        for _ in 0..2 {
            let store = Store::connect(&database.url).await.unwrap();
            let (lobby, _) = store.lobby(private).await.unwrap().unwrap();
            assert_eq!(lobby.invite_hash, Some(sha256_hex("XK3Fabcdefg")));
            assert_eq!(store.lobby(public).await.unwrap().unwrap().0.invite_hash, None);
            let listed = store.matches(&MatchFilter::default(), None, 10).await.unwrap();
            let ids: Vec<(Uuid, bool)> = listed.items.iter().map(|m| (m.id, m.public)).collect();
            assert_eq!(ids, [(imported, true)]);
            let everything = MatchFilter { include_private: true, ..MatchFilter::default() };
            let listed = store.matches(&everything, None, 10).await.unwrap();
            let ids: Vec<(Uuid, bool)> = listed.items.iter().map(|m| (m.id, m.public)).collect();
            assert_eq!(ids, [(private, false), (imported, true)]);
            store.close().await;
        }
        database.remove().await;
    }
}
