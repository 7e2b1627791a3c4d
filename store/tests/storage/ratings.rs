//! Ratings: rated matches change ratings as they are recorded, a rebuild from the history
//! gives the same numbers, and the leaderboard ranks established players.

use std::collections::BTreeMap;

use carcassonne_store::ratings::{
    Entrant, PROVISIONAL_GAMES, RatedMatch, RatedSeat, Rating, RatingChange, RatingPool,
};
use carcassonne_store::{
    FinalChange, FinishedMatch, LeaderboardCursor, PlayerRating, PlayerRow, Store, StoreOptions,
};
use uuid::Uuid;

use crate::common::{Context, EPOCH, finished_match, move_row, player, playing_game, seat};

const BOT: Rating = Rating {
    mu: 20.0,
    sigma: 2.0,
};

/// A rated match of `seats` (a player, or `None` for a bot at [`BOT`]) with these scores,
/// places following the scores.
fn rated_match(at: i64, seats: &[(Option<Uuid>, u32)]) -> FinishedMatch {
    let mut result = finished_match(at, &[], seats);
    let rated = seats
        .iter()
        .enumerate()
        .map(|(index, &(player, score))| RatedSeat {
            seat: index as u8,
            entrant: player.map_or(Entrant::Fixed(BOT), Entrant::Player),
            place: 1 + seats.iter().filter(|&&(_, other)| other > score).count() as u8,
        })
        .collect();
    result.rating = Some(RatedMatch {
        pool: RatingPool::for_players(seats.len() as u8),
        seats: rated,
    });
    result
}

async fn players(store: &Store, count: usize) -> Vec<Uuid> {
    let mut ids = Vec::new();
    for index in 0..count {
        let row: PlayerRow = player(&format!("rated {index}"));
        store.create_player(&row).await.unwrap();
        ids.push(row.id);
    }
    ids
}

/// A varied rated history: duels and multiplayer games, ties, a bot seat, and unrated
/// matches between them that must change nothing.
fn varied_history(ids: &[Uuid]) -> Vec<FinishedMatch> {
    let p = |n: usize| Some(ids[n % ids.len()]);
    (0..40)
        .map(|index| {
            let at = EPOCH + index as i64 * 60_000;
            let score = |seat: usize| (((index * 7 + seat * 13) % 9) * 10) as u32;
            match index % 4 {
                0 => rated_match(at, &[(p(index), score(0)), (p(index + 1), score(1))]),
                1 => rated_match(
                    at,
                    &[(p(index), 50), (p(index + 2), 50), (p(index + 3), score(2))],
                ),
                2 => rated_match(
                    at,
                    &[(p(index), score(0)), (None, score(1)), (p(index + 1), 5)],
                ),
                _ => finished_match(at, &[], &[(p(index), 10), (p(index + 1), 20)]),
            }
        })
        .collect()
}

/// Every player's ratings and every match's changes, as the store holds them.
async fn snapshot(
    store: &Store,
    ids: &[Uuid],
    matches: &[FinishedMatch],
) -> (BTreeMap<Uuid, Vec<PlayerRating>>, Vec<Vec<RatingChange>>) {
    let mut ratings = BTreeMap::new();
    for &id in ids {
        ratings.insert(id, store.player_ratings(id).await.unwrap());
    }
    let mut changes = Vec::new();
    for result in matches {
        changes.push(store.match_ratings(result.id).await.unwrap());
    }
    (ratings, changes)
}

/// The announcement a test store writes: the changes' seats and places, as JSON text.
fn announcement(changes: &[RatingChange]) -> String {
    let places: Vec<(u8, u8)> = changes
        .iter()
        .map(|change| (change.seat, change.place))
        .collect();
    serde_json::to_string(&places).unwrap()
}

backend_tests! {
    async fn finishing_a_rated_game_announces_its_changes_in_the_same_transaction(context: Context) {
        let options = StoreOptions {
            ratings_announcement: Some(announcement),
            ..StoreOptions::new(&context.url)
        };
        let store = Store::connect_with(&options).await.unwrap();
        assert!(store.announces_ratings() && !context.store.announces_ratings());
        let ids = players(&store, 2).await;
        let seats = [seat(0, "Ada", Some(ids[0])), seat(1, "Bo", Some(ids[1]))];
        let mut announced_seq = Vec::new();
        for (index, rated) in [true, false].into_iter().enumerate() {
            let game = playing_game(&store, &seats).await;
            let last = move_row(game.seq + 1, 0, "last");
            let scores = [(Some(ids[0]), 30), (Some(ids[1]), 20)];
            let mut result = match rated {
                true => rated_match(EPOCH + index as i64, &scores),
                false => finished_match(EPOCH + index as i64, &[], &scores),
            };
            result.id = game.id;
            let announced = store.finish_game(game.id, FinalChange::Move(&last), &result).await.unwrap();
            let log = store.game_log(game.id).await.unwrap().unwrap();
            match announced {
                Some(changes) => {
                    assert_eq!(changes, store.match_ratings(game.id).await.unwrap());
                    assert_eq!(changes.len(), 2);
                    let stored = log.events.last().unwrap();
                    assert_eq!(stored, &(last.seq + 1, announcement(&changes)));
                    assert_eq!(log.lobby.seq, last.seq + 1, "the announcement is the last update");
                    announced_seq.push(rated);
                }
                None => {
                    assert_eq!(log.lobby.seq, last.seq, "{rated}: nothing announced");
                    assert!(log.events.iter().all(|(seq, _)| *seq < last.seq));
                }
            }
        }
        assert_eq!(announced_seq, [true], "only the rated game announces");

        // Without the option, a rated game ends with its last change.
        let game = playing_game(&context.store, &seats).await;
        let last = move_row(game.seq + 1, 0, "last");
        let mut result = rated_match(EPOCH + 5, &[(Some(ids[0]), 1), (Some(ids[1]), 2)]);
        result.id = game.id;
        let announced = context.store.finish_game(game.id, FinalChange::Move(&last), &result).await;
        assert_eq!(announced.unwrap(), None);
        store.close().await;
    }

    async fn rated_matches_change_ratings_and_a_rebuild_gives_the_same_numbers(context: Context) {
        let ids = players(&context.store, 6).await;
        let history = varied_history(&ids);
        for chunk in history.chunks(7) {
            context.store.import_matches(chunk).await.unwrap();
        }
        let before = snapshot(&context.store, &ids, &history).await;

        let (ratings, changes) = &before;
        assert!(ratings.values().all(|pools| pools.len() == 2), "both pools played: {ratings:?}");
        let rated = changes.iter().filter(|seats| !seats.is_empty()).count();
        assert_eq!(rated, 30, "the unrated quarter has no changes");
        for (result, seats) in history.iter().zip(changes) {
            let Some(rated) = &result.rating else { continue };
            assert_eq!(seats.len(), rated.seats.len());
            for (change, seat) in seats.iter().zip(&rated.seats) {
                assert_eq!(change.place, seat.place);
                match seat.entrant {
                    Entrant::Fixed(bot) => assert_eq!((change.before, change.after), (bot, bot)),
                    Entrant::Player(id) => {
                        assert_eq!(change.player_id, Some(id));
                        assert!(change.after.sigma < change.before.sigma);
                    }
                }
            }
        }
        let games: u32 = ratings.values().flatten().map(|rating| rating.games).sum();
        assert_eq!(games, 10 * 2 + 10 * 3 + 10 * 2, "one game per player seat of a rated match");

        let rebuilt = context.store.rebuild_ratings().await.unwrap();
        assert_eq!(rebuilt.matches, 30);
        assert_eq!(rebuilt.ratings, 12);
        let after = snapshot(&context.store, &ids, &history).await;
        assert_eq!(after, before, "a rebuild reproduces every number exactly");
    }

    async fn a_rebuild_after_a_lost_rating_restores_it(context: Context) {
        let ids = players(&context.store, 4).await;
        let history = varied_history(&ids);
        context.store.import_matches(&history).await.unwrap();
        let before = snapshot(&context.store, &ids, &history).await;
        context.execute("UPDATE ratings SET mu = 0, sigma = 1, rating = -3").await;
        assert_ne!(snapshot(&context.store, &ids, &history).await, before);
        context.store.rebuild_ratings().await.unwrap();
        assert_eq!(snapshot(&context.store, &ids, &history).await, before);
    }

    async fn concurrent_rated_matches_are_rated_one_after_another(context: Context) {
        let ids = players(&context.store, 4).await;
        let history = varied_history(&ids);
        let writers: Vec<_> = history
            .chunks(1)
            .map(|one| {
                let store = context.store.clone();
                let one = one.to_vec();
                tokio::spawn(async move { store.import_matches(&one).await.unwrap() })
            })
            .collect();
        for writer in writers {
            writer.await.unwrap();
        }
        let seqs = context.count("SELECT COUNT(DISTINCT rating_seq) FROM matches").await;
        assert_eq!(seqs, 30, "each rated match has its own ledger number");
        let before = snapshot(&context.store, &ids, &history).await;
        context.store.rebuild_ratings().await.unwrap();
        assert_eq!(
            snapshot(&context.store, &ids, &history).await,
            before,
            "each match was rated from the ratings the one before it left"
        );
    }

    async fn the_leaderboard_ranks_established_players_best_first(context: Context) {
        let ids = players(&context.store, 4).await;
        // Players 0 to 2 play enough duels to be ranked, 0 beating 1 beating 2; player 3
        // plays one game and stays provisional.
        let mut history = Vec::new();
        for round in 0..PROVISIONAL_GAMES as i64 {
            let at = EPOCH + round * 60_000;
            history.push(rated_match(at, &[(Some(ids[0]), 90), (Some(ids[1]), 50)]));
            history.push(rated_match(at + 1, &[(Some(ids[1]), 90), (Some(ids[2]), 50)]));
            history.push(rated_match(at + 2, &[(Some(ids[0]), 90), (Some(ids[2]), 50)]));
        }
        history.push(rated_match(EPOCH, &[(Some(ids[3]), 90), (Some(ids[2]), 10)]));
        context.store.import_matches(&history).await.unwrap();

        let board = context.store.leaderboard(RatingPool::TwoPlayer, None, 10).await.unwrap();
        let order: Vec<Uuid> = board.iter().map(|entry| entry.player_id).collect();
        assert_eq!(order, vec![ids[0], ids[1], ids[2]]);
        assert!(board.windows(2).all(|pair| pair[0].rating >= pair[1].rating));
        assert_eq!(board[0].display_name, "rated 0");

        let mut paged = Vec::new();
        let mut after = None;
        loop {
            let page = context.store.leaderboard(RatingPool::TwoPlayer, after, 1).await.unwrap();
            let Some(entry) = page.first() else { break };
            after = Some(LeaderboardCursor { rating: entry.rating, player_id: entry.player_id });
            paged.push(entry.player_id);
        }
        assert_eq!(paged, order, "one-entry pages visit every ranked player once");

        let newcomer = context.store.player_ratings(ids[3]).await.unwrap();
        assert!(newcomer[0].provisional && newcomer[0].games == 1);
        assert!(context.store.leaderboard(RatingPool::Multiplayer, None, 10).await.unwrap().is_empty());

        let history_of_0 = context
            .store
            .rating_history(ids[0], RatingPool::TwoPlayer, None, 5)
            .await
            .unwrap();
        assert_eq!(history_of_0.len(), 5);
        assert!(history_of_0.windows(2).all(|pair| pair[0].rating_seq > pair[1].rating_seq));
        assert_eq!(history_of_0[1].change.after, history_of_0[0].change.before);
        let older = context
            .store
            .rating_history(ids[0], RatingPool::TwoPlayer, Some(history_of_0[4].rating_seq), 100)
            .await
            .unwrap();
        assert_eq!(older.len(), 2 * PROVISIONAL_GAMES as usize - 5);
    }
}
