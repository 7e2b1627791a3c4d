//! Move logs, the end of a game, and restoring live games after a restart.

use carcassonne_core::Expansion;
use carcassonne_store::{
    FinalChange, LobbyStatus, MatchFilter, MoveOrigin, Store, StoreError, StoredAt,
};
use uuid::Uuid;

use crate::common::{
    Context, DECK_SALT, EPOCH, TestDatabase, command_at, command_of, execute_raw, finished_match,
    migrate_to_version, move_row, open_lobby, player, playing_game, seat, uuid_literal,
};

/// The `seq` and move count of a game, as the store holds them.
async fn game_state(context: &Context, game: Uuid) -> (u64, usize) {
    let games = context.store.live_games().await.unwrap();
    let live = games
        .iter()
        .find(|live| live.lobby.id == game)
        .expect("a live game");
    (live.lobby.seq, live.moves.len())
}

backend_tests! {
    async fn moves_are_kept_in_order_with_the_seq(context: Context) {
        let game = playing_game(&context.store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        let first_seq = game.seq + 1;
        let moves: Vec<_> = (0..6)
            .map(|turn| move_row(first_seq + turn, (turn % 2) as u8, &format!("c{turn}")))
            .collect();
        for mv in &moves {
            context.store.append_move(game.id, mv).await.unwrap();
        }
        let games = context.store.live_games().await.unwrap();
        assert_eq!(games.len(), 1);
        assert_eq!(games[0].moves, moves);
        assert_eq!(games[0].lobby.seq, first_seq + 5);
    }

    async fn a_repeated_seq_is_a_conflict_and_changes_nothing(context: Context) {
        let game = playing_game(&context.store, &[seat(0, "Ada", None)]).await;
        let seq = game.seq + 1;
        context.store.append_move(game.id, &move_row(seq, 0, "first")).await.unwrap();
        let before = game_state(&context, game.id).await;

        let repeated = move_row(seq, 0, "other");
        let error = context.store.append_move(game.id, &repeated).await.unwrap_err();
        assert!(matches!(error, StoreError::Conflict(_)), "{error:?}");
        assert_eq!(game_state(&context, game.id).await, before);
    }

    async fn a_repeated_command_is_a_conflict_and_changes_nothing(context: Context) {
        let game = playing_game(&context.store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        let seq = game.seq + 1;
        context.store.append_move(game.id, &move_row(seq, 0, "cmd-1")).await.unwrap();
        let before = game_state(&context, game.id).await;

        // The same seat's command again, under a new seq: the seq update is rolled back.
        let repeated = move_row(seq + 1, 0, "cmd-1");
        let error = context.store.append_move(game.id, &repeated).await.unwrap_err();
        assert!(matches!(error, StoreError::Conflict(_)), "{error:?}");
        assert_eq!(game_state(&context, game.id).await, before);

        // Command ids are per seat: another seat may use the same one.
        context.store.append_move(game.id, &move_row(seq + 1, 1, "cmd-1")).await.unwrap();
        assert_eq!(game_state(&context, game.id).await, (seq + 1, 2));
    }

    async fn moves_of_many_games_written_together_each_get_their_own_answer(context: Context) {
        let mut games = Vec::new();
        for _ in 0..40 {
            games.push(playing_game(&context.store, &[seat(0, "Ada", None)]).await);
        }
        // The last game already has its next move, so writing that `seq` again conflicts:
        // whichever batch it lands in, only it is refused.
        let last = games.last().unwrap();
        context.store.append_move(last.id, &move_row(last.seq + 1, 0, "first")).await.unwrap();
        let mut writes = tokio::task::JoinSet::new();
        for (index, game) in games.iter().enumerate() {
            let (store, id, mv) = (context.store.clone(), game.id, move_row(game.seq + 1, 0, "c"));
            writes.spawn(async move { (index, store.append_move(id, &mv).await) });
        }
        let mut answers = writes.join_all().await;
        answers.sort_by_key(|(index, _)| *index);
        for (index, answer) in &answers[..39] {
            assert!(answer.is_ok(), "game {index}: {answer:?}");
        }
        assert!(matches!(answers[39].1, Err(StoreError::Conflict(_))), "{:?}", answers[39]);
        assert_eq!(context.count("SELECT COUNT(*) FROM moves").await, 40);
        for game in &games {
            assert_eq!(game_state(&context, game.id).await, (game.seq + 1, 1));
        }
    }

    async fn moves_need_a_playing_game(context: Context) {
        let lobby = open_lobby("not started", EPOCH);
        context.store.create_lobby(&lobby, &seat(0, "Ada", None)).await.unwrap();
        let early = context.store.append_move(lobby.id, &move_row(2, 0, "c")).await;
        assert!(matches!(early, Err(StoreError::Conflict(_))), "{early:?}");
        let nowhere = context.store.append_move(Uuid::new_v4(), &move_row(2, 0, "c")).await;
        assert!(matches!(nowhere, Err(StoreError::NotFound)), "{nowhere:?}");
        assert_eq!(context.count("SELECT COUNT(*) FROM moves").await, 0);
    }

    // The server never deletes a lobby, but an operator may: its moves go with it, by
    // the moves' foreign key on SQLite and by a trigger on Postgres, which has no key.
    async fn deleting_a_lobby_deletes_its_moves_and_no_others(context: Context) {
        let seats = [seat(0, "Ada", None)];
        let (gone, kept) = (
            playing_game(&context.store, &seats).await,
            playing_game(&context.store, &seats).await,
        );
        for game in [&gone, &kept] {
            for turn in 1..=3 {
                let mv = move_row(game.seq + turn, 0, &format!("c{turn}"));
                context.store.append_move(game.id, &mv).await.unwrap();
            }
        }
        let id = uuid_literal(context.backend, gone.id);
        context.execute(&format!("DELETE FROM seats WHERE lobby_id = {id}")).await;
        context.execute(&format!("DELETE FROM lobbies WHERE id = {id}")).await;
        assert_eq!(context.count(&format!("SELECT COUNT(*) FROM moves WHERE game_id = {id}")).await, 0);
        assert_eq!(context.count("SELECT COUNT(*) FROM moves").await, 3);
        assert_eq!(game_state(&context, kept.id).await, (kept.seq + 3, 3));
    }

    async fn finishing_writes_the_move_the_status_and_the_match(context: Context) {
        let ada = player("Ada");
        context.store.create_player(&ada).await.unwrap();
        let seats = [seat(0, "Ada", Some(ada.id)), seat(1, "Bo", None)];
        let game = playing_game(&context.store, &seats).await;
        context.store.append_move(game.id, &move_row(game.seq + 1, 0, "c1")).await.unwrap();
        let last = move_row(game.seq + 2, 1, "c2");
        let mut result = finished_match(EPOCH + 3_600_000, &[], &[(Some(ada.id), 30), (None, 20)]);
        result.id = game.id;
        context.store.finish_game(game.id, FinalChange::Move(&last), &result).await.unwrap();

        let (lobby, _) = context.store.lobby(game.id).await.unwrap().unwrap();
        assert_eq!(lobby.status, LobbyStatus::Finished);
        assert_eq!(lobby.finished_at, Some(result.finished_at));
        assert_eq!(lobby.seq, last.seq);
        assert!(context.store.live_games().await.unwrap().is_empty());
        assert_eq!(context.count("SELECT COUNT(*) FROM moves").await, 2);
        let detail = context.store.match_detail(game.id).await.unwrap().expect("the match");
        assert_eq!(detail.summary.seats, result.seats);
        let after_the_end = move_row(last.seq + 1, 0, "c3");
        let again = context.store.finish_game(game.id, FinalChange::Move(&after_the_end), &result).await;
        assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
    }

    async fn a_failed_finish_writes_nothing(context: Context) {
        let game = playing_game(&context.store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        let written = move_row(game.seq + 1, 0, "c1");
        context.store.append_move(game.id, &written).await.unwrap();
        let mut result = finished_match(EPOCH + 3_600_000, &[], &[(None, 30), (None, 20)]);
        result.id = game.id;

        // The last move reuses a written seq: the first statement fails.
        let stale = move_row(written.seq, 1, "c2");
        let error = context.store.finish_game(game.id, FinalChange::Move(&stale), &result).await.unwrap_err();
        assert!(matches!(error, StoreError::Conflict(_)), "{error:?}");

        // A seat names an identity that does not exist: the last statement fails, after
        // the move, the status and the match row were written in the transaction.
        let mut orphan = result.clone();
        orphan.seats[1].player_id = Some(Uuid::new_v4());
        let last = move_row(written.seq + 1, 1, "c2");
        let error = context.store.finish_game(game.id, FinalChange::Move(&last), &orphan).await.unwrap_err();
        assert!(matches!(error, StoreError::NotFound), "{error:?}");

        assert_eq!(game_state(&context, game.id).await, (written.seq, 1));
        assert_eq!(context.store.match_detail(game.id).await.unwrap(), None);
        let page = context.store.matches(&MatchFilter::default(), None, 10).await.unwrap();
        assert!(page.items.is_empty());
        assert_eq!(context.count("SELECT COUNT(*) FROM match_players").await, 0);

        // The same finish, made valid, then goes through.
        context.store.finish_game(game.id, FinalChange::Move(&last), &result).await.unwrap();
        let page = context.store.matches(&MatchFilter::default(), None, 10).await.unwrap();
        assert_eq!(page.items.len(), 1);
    }

    async fn live_games_survive_a_restart(context: Context) {
        let ada = player("Ada");
        context.store.create_player(&ada).await.unwrap();
        // Older than the games below, which are created at EPOCH: restored oldest first.
        let open = open_lobby("waiting", EPOCH - 1_000);
        context.store.create_lobby(&open, &seat(0, "Ada", Some(ada.id))).await.unwrap();
        context.store.add_seat(open.id, &seat(1, "Bo", None), 2).await.unwrap();
        let players = [seat(0, "Cy", None), seat(1, "Di", None)];
        let playing = playing_game(&context.store, &players).await;
        for turn in 0..4 {
            let mv = move_row(playing.seq + 1 + turn, (turn % 2) as u8, &format!("c{turn}"));
            context.store.append_move(playing.id, &mv).await.unwrap();
        }
        let finished = playing_game(&context.store, &[seat(0, "Ed", None)]).await;
        let mut result = finished_match(EPOCH + 1, &[], &[(None, 1)]);
        result.id = finished.id;
        let last = move_row(finished.seq + 1, 0, "end");
        context.store.finish_game(finished.id, FinalChange::Move(&last), &result).await.unwrap();
        let cancelled = open_lobby("gone", EPOCH);
        context.store.create_lobby(&cancelled, &seat(0, "Fay", None)).await.unwrap();
        context.store.cancel_lobby(cancelled.id, 2).await.unwrap();
        let before = context.store.live_games().await.unwrap();

        context.store.close().await;
        let restarted: Store = context.reopen().await;
        let after = restarted.live_games().await.unwrap();
        restarted.close().await;

        assert_eq!(after, before);
        let ids: Vec<Uuid> = after.iter().map(|live| live.lobby.id).collect();
        assert_eq!(ids, [open.id, playing.id]);
        assert_eq!(after[0].lobby.seq, 2);
        assert_eq!(after[0].seats.len(), 2);
        assert_eq!(after[0].seats[0].player_id, Some(ada.id));
        assert_eq!(after[1].lobby.status, LobbyStatus::Playing);
        assert_eq!(after[1].lobby.seed, Some(42));
        assert_eq!(after[1].moves.len(), 4);
        assert_eq!(after[1].lobby.seq, playing.seq + 4);
        let seqs: Vec<u64> = after[1].moves.iter().map(|mv| mv.seq).collect();
        assert_eq!(seqs, (playing.seq + 1..=playing.seq + 4).collect::<Vec<_>>());
    }

    async fn stored_at_tells_which_command_holds_a_seq(context: Context) {
        let game = playing_game(&context.store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        let first = move_row(game.seq + 1, 0, "c1");
        context.store.append_move(game.id, &first).await.unwrap();
        let stored = context.store.stored_at(game.id, first.seq).await.unwrap();
        let expected = StoredAt {
            seq: first.seq,
            owner: None,
            owner_alive: false,
            command_at: Some((0, "c1".to_owned())),
        };
        assert_eq!(stored, Some(expected));
        // The next seq: the game has not reached it, and no move is stored there.
        let next = context.store.stored_at(game.id, first.seq + 1).await.unwrap().unwrap();
        assert_eq!((next.seq, next.command_at), (first.seq, None));
        // A lobby change leaves no move at its seq.
        let lobby_seq = context.store.stored_at(game.id, game.seq).await.unwrap().unwrap();
        assert_eq!(lobby_seq.command_at, None);
        assert_eq!(context.store.stored_at(Uuid::new_v4(), 1).await.unwrap(), None);
        // A seq beyond what a column holds is refused, not wrapped.
        let huge = context.store.stored_at(game.id, u64::MAX).await;
        assert!(matches!(huge, Err(StoreError::Corrupt(_))), "{huge:?}");
    }

    async fn private_games_are_listed_only_on_request(context: Context) {
        let seats = [seat(0, "Ada", None), seat(1, "Bo", None)];
        let public_game = playing_game(&context.store, &seats).await;
        let mut private = open_lobby("private", EPOCH);
        private.public = false;
        private.invite_hash = Some(carcassonne_store::sha256_hex("XK3Fabcdefg"));
        context.store.create_lobby(&private, &seats[0]).await.unwrap();
        context.store.add_seat(private.id, &seats[1], 2).await.unwrap();
        context.store.start_game(private.id, &seats, 7, DECK_SALT, EPOCH, 3).await.unwrap();
        for (game, seq, minute) in [(public_game.id, public_game.seq, 1), (private.id, 3, 2)] {
            let mut result = finished_match(EPOCH + minute * 60_000, &[], &[(None, 3), (None, 2)]);
            result.id = game;
            context.store.finish_game(game, FinalChange::Move(&move_row(seq + 1, 0, "end")), &result).await.unwrap();
        }

        let listed = context.store.matches(&MatchFilter::default(), None, 10).await.unwrap();
        let ids: Vec<(Uuid, bool)> = listed.items.iter().map(|m| (m.id, m.public)).collect();
        assert_eq!(ids, [(public_game.id, true)]);
        let everything = MatchFilter { include_private: true, ..MatchFilter::default() };
        let listed = context.store.matches(&everything, None, 10).await.unwrap();
        let ids: Vec<(Uuid, bool)> = listed.items.iter().map(|m| (m.id, m.public)).collect();
        assert_eq!(ids, [(private.id, false), (public_game.id, true)]);
        let detail = context.store.match_detail(private.id).await.unwrap().unwrap();
        assert!(!detail.summary.public);
        assert!(context.store.match_record(private.id).await.unwrap().is_some());
    }

    async fn expansions_survive_in_the_lobby_rules(context: Context) {
        let mut lobby = open_lobby("all of them", EPOCH);
        lobby.rules.expansions = Expansion::ALL.to_vec();
        lobby.rules.tile_limit = Some(40);
        context.store.create_lobby(&lobby, &seat(0, "Ada", None)).await.unwrap();
        let games = context.store.live_games().await.unwrap();
        assert_eq!(games[0].lobby.rules, lobby.rules);
    }
}

/// A game in play as version 4 of the schema holds it: two seats and three moves, inserted
/// out of `seq` order.
const VERSION_4_GAME: &str = "\
    INSERT INTO lobbies (id, name, is_public, invite_hash, seat_count, rules, status, seed, \
    deck_salt, seq, created_at, started_at) VALUES \
    (GAME_ID, 'in play', TRUE, NULL, 2, '{}', 'playing', 42, 'salt', 6, 0, 10); \
    INSERT INTO seats (lobby_id, seat, display_name, player_id, token_hash, creator, joined_at) \
    VALUES (GAME_ID, 0, 'Ada', NULL, 'token-a', TRUE, 1), \
    (GAME_ID, 1, 'Bo', NULL, 'token-b', FALSE, 2); \
    INSERT INTO moves (game_id, seq, seat, command_id, move_json, created_at, origin) VALUES \
    (GAME_ID, 6, 0, 'c3', 'PASS', 26, 'bot'), \
    (GAME_ID, 4, 0, 'c1', 'PASS', 24, 'player'), \
    (GAME_ID, 5, 1, 'c2', 'PASS', 25, 'timeout');";

backend_tests! {
    async fn migrations_keep_every_move_and_still_refuse_a_repeated_command(context: Context) {
        let database = TestDatabase::create(context.backend).await;
        migrate_to_version(context.backend, &database.url, 4).await;
        let game = Uuid::new_v4();
        let rows = VERSION_4_GAME
            .replace("GAME_ID", &uuid_literal(context.backend, game))
            .replace("PASS", &serde_json::to_string(&carcassonne_core::Move::Pass).unwrap());
        execute_raw(context.backend, &database.url, &rows).await;

        let store = Store::connect(&database.url).await.unwrap();
        let live = store.live_games().await.unwrap();
        let kept: Vec<_> = live[0]
            .moves
            .iter()
            .map(|mv| (mv.seq, mv.seat, mv.command_id.as_str(), mv.created_at, mv.origin))
            .collect();
        assert_eq!(
            kept,
            [
                (4, 0, "c1", 24, MoveOrigin::Player),
                (5, 1, "c2", 25, MoveOrigin::Timeout),
                (6, 0, "c3", 26, MoveOrigin::Bot)
            ]
        );
        // Seat 0 sent `c1` before the migration; sending it again is still refused.
        let repeated = store.append_move(game, &move_row(7, 0, "c1")).await.unwrap_err();
        assert!(matches!(repeated, StoreError::Conflict(_)), "{repeated:?}");
        store.append_move(game, &move_row(7, 1, "c1")).await.unwrap();
        assert_eq!(command_at(&store, game, 7).await, command_of(&move_row(7, 1, "c1")));
        store.close().await;
        database.remove().await;
    }
}
