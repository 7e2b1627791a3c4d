//! Time controls, who plays each seat, who made each move, and the games that end early:
//! aborted (cancelled while playing) or abandoned (finished by a seat change).

use carcassonne_core::Move;
use carcassonne_store::{
    FinalChange, LobbyStatus, MatchFilter, MatchStatus, MoveOrigin, SeatControl, SeatRow, Store,
    StoreError, TimeControl,
};
use uuid::Uuid;

use crate::common::{
    Context, DECK_SALT, EPOCH, TestDatabase, execute_raw, finished_match, migrate_to_version,
    move_row, open_lobby, player, playing_game, seat, uuid_literal,
};

/// The seats of a lobby as the store holds them.
async fn seats_of(store: &Store, lobby: Uuid) -> Vec<SeatRow> {
    store.lobby(lobby).await.unwrap().unwrap().1
}

/// The `seq` and status of a lobby as the store holds them.
async fn seq_and_status(store: &Store, lobby: Uuid) -> (u64, LobbyStatus) {
    let (row, _) = store.lobby(lobby).await.unwrap().unwrap();
    (row.seq, row.status)
}

/// `seat` handed to a bot after its player stopped playing, under update `seq`.
fn abandoned(mut seat: SeatRow, seq: u64) -> SeatRow {
    seat.control = SeatControl::Abandoned;
    seat.control_seq = seq;
    seat
}

backend_tests! {
    async fn clocks_seat_controls_and_bots_read_back_as_written(context: Context) {
        let mut lobby = open_lobby("timed", EPOCH);
        lobby.clock = TimeControl::Turn { per_turn_ms: 30_000, reserve_ms: 300_000 };
        let creator = seat(0, "Ada", None);
        context.store.create_lobby(&lobby, &creator).await.unwrap();
        let mut bot = seat(1, "Greedy bot", None);
        bot.bot = Some("greedy".to_owned());
        bot.control_seq = 2;
        context.store.add_seat(lobby.id, &bot, 2).await.unwrap();

        let (read, seats) = context.store.lobby(lobby.id).await.unwrap().unwrap();
        assert_eq!(read.clock, lobby.clock);
        assert_eq!(seats, [creator.clone(), bot.clone()]);

        // The start replaces the seats, and keeps what they say about control and bots.
        let mut shuffled = vec![bot, creator];
        shuffled[0].seat = 0;
        shuffled[1].seat = 1;
        shuffled[1].control = SeatControl::Resigned;
        context.store.start_game(lobby.id, &shuffled, 5, DECK_SALT, EPOCH, 3).await.unwrap();
        assert_eq!(seats_of(&context.store, lobby.id).await, shuffled);

        let mut correspondence = open_lobby("slow", EPOCH + 1);
        correspondence.clock = TimeControl::Correspondence { per_turn_ms: 86_400_000 };
        context.store.create_lobby(&correspondence, &seat(0, "Bo", None)).await.unwrap();
        let live = context.store.live_games().await.unwrap();
        let clocks: Vec<TimeControl> = live.iter().map(|game| game.lobby.clock).collect();
        assert_eq!(clocks, [lobby.clock, correspondence.clock]);
        assert_eq!(live[0].seats, shuffled);
    }

    async fn move_origins_read_back_as_written(context: Context) {
        let game = playing_game(&context.store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        let origins = [MoveOrigin::Player, MoveOrigin::Timeout, MoveOrigin::Bot];
        let moves: Vec<_> = origins
            .iter()
            .enumerate()
            .map(|(turn, &origin)| {
                let mut mv = move_row(game.seq + 1 + turn as u64, (turn % 2) as u8, &format!("c{turn}"));
                mv.origin = origin;
                mv
            })
            .collect();
        for mv in &moves {
            context.store.append_move(game.id, mv).await.unwrap();
        }
        let live = context.store.live_games().await.unwrap();
        assert_eq!(live[0].moves, moves);
        let log = context.store.game_log(game.id).await.unwrap().unwrap();
        assert_eq!(log.moves, moves);
    }

    async fn update_seat_rewrites_the_seat_and_sets_seq(context: Context) {
        let seats = [seat(0, "Ada", None), seat(1, "Bo", None)];
        let game = playing_game(&context.store, &seats).await;

        // Bo stops playing: a bot takes the seat.
        let gone = abandoned(seats[1].clone(), game.seq + 1);
        context.store.update_seat(game.id, &gone, game.seq + 1).await.unwrap();
        assert_eq!(seats_of(&context.store, game.id).await, [seats[0].clone(), gone.clone()]);
        assert_eq!(seq_and_status(&context.store, game.id).await, (game.seq + 1, LobbyStatus::Playing));

        // Bo comes back from another device: human again, with a new token.
        let mut back = gone.clone();
        back.control = SeatControl::Human;
        back.control_seq = game.seq + 2;
        back.token_hash = "a-new-token".to_owned();
        context.store.update_seat(game.id, &back, game.seq + 2).await.unwrap();
        assert_eq!(seats_of(&context.store, game.id).await, [seats[0].clone(), back]);

        // Only the token, the control and the bot are written; the rest of a taken seat
        // stays as it was.
        let mut renamed = seats[0].clone();
        renamed.display_name = "Someone else".to_owned();
        renamed.bot = Some("mcts".to_owned());
        context.store.update_seat(game.id, &renamed, game.seq + 3).await.unwrap();
        let stored = &seats_of(&context.store, game.id).await[0];
        assert_eq!(stored.display_name, "Ada");
        assert_eq!(stored.bot.as_deref(), Some("mcts"));

        // An open lobby's seats may change hands too (a new seat token).
        let lobby = open_lobby("open", EPOCH);
        let mut creator = seat(0, "Cy", None);
        context.store.create_lobby(&lobby, &creator).await.unwrap();
        creator.token_hash = "replaced".to_owned();
        creator.control_seq = 2;
        context.store.update_seat(lobby.id, &creator, 2).await.unwrap();
        assert_eq!(seats_of(&context.store, lobby.id).await, [creator]);
    }

    async fn a_refused_seat_update_writes_nothing(context: Context) {
        let seats = [seat(0, "Ada", None), seat(1, "Bo", None)];
        let game = playing_game(&context.store, &seats).await;
        context.store.append_move(game.id, &move_row(game.seq + 1, 0, "c1")).await.unwrap();
        let seq = game.seq + 1;

        // A seq already used, and an older one.
        for stale in [seq, seq - 1] {
            let error = context.store.update_seat(game.id, &abandoned(seats[1].clone(), stale), stale).await;
            assert!(matches!(error, Err(StoreError::Conflict(_))), "{error:?}");
        }
        // A seat nobody holds, and a lobby that does not exist.
        let nobody = abandoned(seat(3, "Di", None), seq + 1);
        let error = context.store.update_seat(game.id, &nobody, seq + 1).await;
        assert!(matches!(error, Err(StoreError::NotFound)), "{error:?}");
        let error = context.store.update_seat(Uuid::new_v4(), &seats[1], seq + 1).await;
        assert!(matches!(error, Err(StoreError::NotFound)), "{error:?}");
        assert_eq!(seats_of(&context.store, game.id).await, seats);
        assert_eq!(seq_and_status(&context.store, game.id).await, (seq, LobbyStatus::Playing));

        // A game that has ended takes no seat change.
        context.store.cancel_lobby(game.id, seq + 1).await.unwrap();
        let error = context.store.update_seat(game.id, &abandoned(seats[1].clone(), seq + 2), seq + 2).await;
        assert!(matches!(error, Err(StoreError::Conflict(_))), "{error:?}");
        assert_eq!(seats_of(&context.store, game.id).await, seats);
    }

    async fn a_seat_change_can_end_a_game_as_abandoned(context: Context) {
        let ada = player("Ada");
        context.store.create_player(&ada).await.unwrap();
        let seats = [seat(0, "Ada", Some(ada.id)), seat(1, "Bo", None)];
        let game = playing_game(&context.store, &seats).await;
        context.store.append_move(game.id, &move_row(game.seq + 1, 0, "c1")).await.unwrap();
        let seq = game.seq + 2;
        let mut resigned = seats[0].clone();
        resigned.control = SeatControl::Resigned;
        resigned.control_seq = seq;
        let mut result = finished_match(EPOCH + 60_000, &[], &[(Some(ada.id), 40), (None, 10)]);
        result.id = game.id;
        result.status = MatchStatus::Abandoned;
        result.seats[0].resigned = true;
        result.seats[0].winner = false;
        result.seats[1].winner = true;

        let last = FinalChange::Seat { seat: &resigned, seq };
        context.store.finish_game(game.id, last, &result).await.unwrap();

        let (lobby, stored_seats) = context.store.lobby(game.id).await.unwrap().unwrap();
        assert_eq!((lobby.seq, lobby.status), (seq, LobbyStatus::Finished));
        assert_eq!(lobby.finished_at, Some(result.finished_at));
        assert_eq!(stored_seats, [resigned.clone(), seats[1].clone()]);
        assert_eq!(context.count("SELECT COUNT(*) FROM moves").await, 1);
        assert!(context.store.live_games().await.unwrap().is_empty());
        let detail = context.store.match_detail(game.id).await.unwrap().unwrap();
        assert_eq!(detail.summary.status, MatchStatus::Abandoned);
        assert_eq!(detail.summary.seats, result.seats);

        let abandoned_only = MatchFilter { status: Some(MatchStatus::Abandoned), ..MatchFilter::default() };
        let page = context.store.matches(&abandoned_only, None, 10).await.unwrap();
        assert_eq!(page.items.len(), 1);
        assert_eq!(page.items[0].seats, result.seats);
        let finished_only = MatchFilter { status: Some(MatchStatus::Finished), ..MatchFilter::default() };
        assert!(context.store.matches(&finished_only, None, 10).await.unwrap().items.is_empty());
        let theirs = MatchFilter { player: Some(ada.id), ..abandoned_only };
        assert_eq!(context.store.matches(&theirs, None, 10).await.unwrap().items.len(), 1);
    }

    async fn a_failed_seat_finish_writes_nothing(context: Context) {
        let seats = [seat(0, "Ada", None), seat(1, "Bo", None)];
        let game = playing_game(&context.store, &seats).await;
        context.store.append_move(game.id, &move_row(game.seq + 1, 0, "c1")).await.unwrap();
        let seq = game.seq + 1;
        let mut result = finished_match(EPOCH + 60_000, &[], &[(None, 40), (None, 10)]);
        result.id = game.id;
        result.status = MatchStatus::Abandoned;
        result.seats[1].resigned = true;

        // A stale seq: the first statement fails.
        let gone = abandoned(seats[1].clone(), seq);
        let error = context.store.finish_game(game.id, FinalChange::Seat { seat: &gone, seq }, &result).await;
        assert!(matches!(error, Err(StoreError::Conflict(_))), "{error:?}");
        // A seat nobody holds: fails after the lobby's update.
        let nobody = abandoned(seat(2, "Cy", None), seq + 1);
        let last = FinalChange::Seat { seat: &nobody, seq: seq + 1 };
        let error = context.store.finish_game(game.id, last, &result).await;
        assert!(matches!(error, Err(StoreError::NotFound)), "{error:?}");
        // An unknown identity in the result: fails after the seat and the match were
        // written in the transaction.
        let mut orphan = result.clone();
        orphan.seats[0].player_id = Some(Uuid::new_v4());
        let gone = abandoned(seats[1].clone(), seq + 1);
        let last = FinalChange::Seat { seat: &gone, seq: seq + 1 };
        let error = context.store.finish_game(game.id, last, &orphan).await;
        assert!(matches!(error, Err(StoreError::NotFound)), "{error:?}");

        assert_eq!(seats_of(&context.store, game.id).await, seats);
        assert_eq!(seq_and_status(&context.store, game.id).await, (seq, LobbyStatus::Playing));
        assert_eq!(context.store.match_detail(game.id).await.unwrap(), None);
        assert_eq!(context.count("SELECT COUNT(*) FROM matches").await, 0);
        assert_eq!(context.count("SELECT COUNT(*) FROM match_players").await, 0);

        // The same finish, made valid, goes through.
        context.store.finish_game(game.id, last, &result).await.unwrap();
        assert_eq!(seats_of(&context.store, game.id).await, [seats[0].clone(), gone]);
    }

    async fn aborting_a_game_in_play_cancels_it(context: Context) {
        let game = playing_game(&context.store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        context.store.append_move(game.id, &move_row(game.seq + 1, 0, "c1")).await.unwrap();
        let seq = game.seq + 1;
        let stale = context.store.cancel_lobby(game.id, seq).await;
        assert!(matches!(stale, Err(StoreError::Conflict(_))), "{stale:?}");
        assert_eq!(seq_and_status(&context.store, game.id).await, (seq, LobbyStatus::Playing));

        context.store.cancel_lobby(game.id, seq + 1).await.unwrap();
        assert_eq!(seq_and_status(&context.store, game.id).await, (seq + 1, LobbyStatus::Cancelled));
        assert!(context.store.live_games().await.unwrap().is_empty());
        assert_eq!(context.store.match_detail(game.id).await.unwrap(), None);
        let after = context.store.append_move(game.id, &move_row(seq + 2, 1, "c2")).await;
        assert!(matches!(after, Err(StoreError::Conflict(_))), "{after:?}");
        let again = context.store.cancel_lobby(game.id, seq + 2).await;
        assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");

        // A finished game cannot be aborted.
        let finished = playing_game(&context.store, &[seat(0, "Cy", None)]).await;
        let mut result = finished_match(EPOCH + 1, &[], &[(None, 1)]);
        result.id = finished.id;
        let last = move_row(finished.seq + 1, 0, "end");
        context.store.finish_game(finished.id, FinalChange::Move(&last), &result).await.unwrap();
        let late = context.store.cancel_lobby(finished.id, last.seq + 1).await;
        assert!(matches!(late, Err(StoreError::Conflict(_))), "{late:?}");
        assert_eq!(seq_and_status(&context.store, finished.id).await, (last.seq, LobbyStatus::Finished));
    }

    async fn imported_matches_keep_their_status_and_resignations(context: Context) {
        let mut result = finished_match(EPOCH, &[], &[(None, 5), (None, 9), (None, 7)]);
        result.status = MatchStatus::Abandoned;
        result.seats[1].resigned = true;
        result.seats[1].winner = false;
        context.store.import_matches(std::slice::from_ref(&result)).await.unwrap();
        let detail = context.store.match_detail(result.id).await.unwrap().unwrap();
        assert_eq!(detail.summary.status, MatchStatus::Abandoned);
        assert_eq!(detail.summary.seats, result.seats);
    }
}

/// A database as version 2 of the schema left it: a game in play with two seats and a
/// move, and a finished game with its match.
const VERSION_2_ROWS: &str = "\
    INSERT INTO lobbies (id, name, is_public, invite_hash, seat_count, rules, status, seed, \
    deck_salt, seq, created_at, started_at) VALUES \
    (GAME_ID, 'in play', TRUE, NULL, 2, '{}', 'playing', 42, 'salt', 4, 0, 10), \
    (DONE_ID, 'done', TRUE, NULL, 2, '{}', 'finished', 7, 'salt', 9, 1, 10); \
    INSERT INTO seats (lobby_id, seat, display_name, player_id, token_hash, creator, joined_at) \
    VALUES (GAME_ID, 0, 'Ada', NULL, 'token-a', TRUE, 1), \
    (GAME_ID, 1, 'Bo', NULL, 'token-b', FALSE, 2); \
    INSERT INTO moves (game_id, seq, seat, command_id, move_json, created_at) VALUES \
    (GAME_ID, 4, 0, 'c1', 'MOVE_JSON', 20); \
    INSERT INTO matches (id, name, rules, expansions, player_count, started_at, finished_at, \
    tiles_placed, is_public) VALUES (DONE_ID, 'done', '{}', 0, 2, 10, 100, 71, TRUE); \
    INSERT INTO match_records (match_id, breakdown, record) VALUES (DONE_ID, '[]', '{}'); \
    INSERT INTO match_players (match_id, seat, display_name, player_id, score, winner, \
    finished_at) VALUES (DONE_ID, 0, 'Ada', NULL, 30, TRUE, 100), \
    (DONE_ID, 1, 'Bo', NULL, 20, FALSE, 100);";

backend_tests! {
    async fn migration_3_keeps_every_row_with_the_defaults(context: Context) {
        let database = TestDatabase::create(context.backend).await;
        migrate_to_version(context.backend, &database.url, 2).await;
        let (game, done) = (Uuid::new_v4(), Uuid::new_v4());
        let rows = VERSION_2_ROWS
            .replace("GAME_ID", &uuid_literal(context.backend, game))
            .replace("DONE_ID", &uuid_literal(context.backend, done))
            .replace("MOVE_JSON", &serde_json::to_string(&Move::Pass).unwrap());
        execute_raw(context.backend, &database.url, &rows).await;

        let store = Store::connect(&database.url).await.unwrap();
        let live = store.live_games().await.unwrap();
        assert_eq!(live.len(), 1);
        assert_eq!((live[0].lobby.id, live[0].lobby.seq), (game, 4));
        assert_eq!(live[0].lobby.clock, TimeControl::None);
        let seats: Vec<_> = live[0]
            .seats
            .iter()
            .map(|seat| (seat.token_hash.as_str(), seat.control, seat.control_seq, seat.bot.clone()))
            .collect();
        assert_eq!(
            seats,
            [("token-a", SeatControl::Human, 0, None), ("token-b", SeatControl::Human, 0, None)]
        );
        assert_eq!(live[0].moves.len(), 1);
        assert_eq!((live[0].moves[0].mv, live[0].moves[0].origin), (Move::Pass, MoveOrigin::Player));

        let detail = store.match_detail(done).await.unwrap().unwrap();
        assert_eq!(detail.summary.status, MatchStatus::Finished);
        let results: Vec<_> = detail.summary.seats.iter().map(|s| (s.score, s.winner, s.resigned)).collect();
        assert_eq!(results, [(30, true, false), (20, false, false)]);
        store.close().await;
        database.remove().await;
    }
}
