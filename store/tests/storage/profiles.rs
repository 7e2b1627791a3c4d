//! A player's profile: points by kind of feature, kept per seat and summed per player
//! (also for matches written before the columns existed), and two players' record
//! against each other.

use carcassonne_core::{PointsByKind, Rules};
use carcassonne_store::{FinishedMatch, HeadToHead, Store};
use uuid::Uuid;

use crate::common::{
    Context, EPOCH, TestDatabase, execute_raw, finished_match, migrate_to_version, player,
    uuid_literal,
};

fn points(road: u32, city: u32, monastery: u32, garden: u32, field: u32) -> PointsByKind {
    PointsByKind {
        road,
        city,
        monastery,
        garden,
        field,
    }
}

async fn registered(store: &Store, count: usize) -> Vec<Uuid> {
    let mut ids = Vec::new();
    for index in 0..count {
        let row = player(&format!("player {index}"));
        store.create_player(&row).await.unwrap();
        ids.push(row.id);
    }
    ids
}

/// A match at minute `minute` of these seats, each a player and a score; the highest
/// score wins.
fn played(minute: i64, seats: &[(Uuid, u32)]) -> FinishedMatch {
    let seats: Vec<(Option<Uuid>, u32)> =
        seats.iter().map(|&(id, score)| (Some(id), score)).collect();
    finished_match(EPOCH + minute * 60_000, &[], &seats)
}

/// Two matches of version 11 of the schema, before points by kind: the first pays seat 0
/// a city (12) and a road shared with seat 1 (4), the second a farm (9) to seat 0 and a
/// monastery (9) and a garden (3) to seat 1. A guest's seat (no player) scores too.
const VERSION_11_MATCHES: &str = "\
    INSERT INTO players (id, display_name, secret_hash, created_at) VALUES \
    (ADA, 'Ada', 'h1', 0), (BO, 'Bo', 'h2', 0); \
    INSERT INTO matches (id, name, rules, expansions, player_count, started_at, finished_at, \
    tiles_placed) VALUES (FIRST, 'first', 'RULES', 0, 2, 0, 10, 71), \
    (SECOND, 'second', 'RULES', 0, 3, 20, 30, 71); \
    INSERT INTO match_records (match_id, breakdown, record) VALUES \
    (FIRST, '[{\"kind\":\"city\",\"completed\":true,\"points\":12,\"scorers\":[0],\"tiles\":[],\"figures\":[]},\
    {\"kind\":\"road\",\"completed\":true,\"points\":4,\"scorers\":[0,1],\"tiles\":[],\"figures\":[]}]', '{}'), \
    (SECOND, '[{\"kind\":\"field\",\"completed\":false,\"points\":9,\"scorers\":[0,2],\"tiles\":[],\"figures\":[]},\
    {\"kind\":\"monastery\",\"completed\":true,\"points\":9,\"scorers\":[1],\"tiles\":[],\"figures\":[]},\
    {\"kind\":\"garden\",\"completed\":false,\"points\":3,\"scorers\":[1],\"tiles\":[],\"figures\":[]}]', '{}'); \
    INSERT INTO match_players (match_id, seat, display_name, player_id, score, winner, finished_at) \
    VALUES (FIRST, 0, 'Ada', ADA, 16, TRUE, 10), (FIRST, 1, 'Bo', BO, 4, FALSE, 10), \
    (SECOND, 0, 'Ada', ADA, 9, FALSE, 30), (SECOND, 1, 'Bo', BO, 12, TRUE, 30), \
    (SECOND, 2, 'Guest', NULL, 9, FALSE, 30);";

backend_tests! {
    async fn points_by_kind_are_kept_per_seat_and_summed_per_player(context: Context) {
        let ids = registered(&context.store, 2).await;
        let mut first = played(1, &[(ids[0], 30), (ids[1], 20)]);
        first.seats[0].points = points(4, 20, 0, 0, 6);
        first.seats[1].points = points(2, 8, 9, 1, 0);
        let mut second = played(2, &[(ids[0], 11), (ids[1], 40)]);
        second.seats[0].points = points(1, 0, 5, 2, 3);
        second.seats[1].points = points(0, 40, 0, 0, 0);
        context.store.import_matches(&[first.clone(), second]).await.unwrap();

        let detail = context.store.match_detail(first.id).await.unwrap().unwrap();
        let kept: Vec<PointsByKind> = detail.summary.seats.iter().map(|seat| seat.points).collect();
        assert_eq!(kept, [points(4, 20, 0, 0, 6), points(2, 8, 9, 1, 0)]);
        let ada = context.store.player_stats(ids[0]).await.unwrap().unwrap();
        assert_eq!(ada.points, points(5, 20, 5, 2, 9));
        let bo = context.store.player_stats(ids[1]).await.unwrap().unwrap();
        assert_eq!(bo.points, points(2, 48, 9, 1, 0));
        let nobody = registered(&context.store, 1).await;
        let none = context.store.player_stats(nobody[0]).await.unwrap().unwrap();
        assert_eq!(none.points, PointsByKind::default());
    }

    async fn head_to_head_counts_only_the_matches_both_played(context: Context) {
        let ids = registered(&context.store, 3).await;
        let (ada, bo, cy) = (ids[0], ids[1], ids[2]);
        let history = [
            played(1, &[(ada, 30), (bo, 20)]),
            played(2, &[(bo, 50), (ada, 10)]),
            // A shared win: both win, neither is ahead.
            played(3, &[(ada, 25), (bo, 25), (cy, 5)]),
            // Cy finishes first; Ada is still ahead of Bo.
            played(4, &[(cy, 60), (ada, 40), (bo, 20)]),
            // Matches without one of the two do not count.
            played(5, &[(ada, 99), (cy, 1)]),
            played(6, &[(bo, 99), (cy, 1)]),
        ];
        context.store.import_matches(&history).await.unwrap();

        let record = context.store.head_to_head(ada, bo).await.unwrap();
        assert_eq!(
            record,
            HeadToHead {
                games: 4,
                wins: 2,
                opponent_wins: 2,
                ahead: 2,
                opponent_ahead: 1,
                average_score: (30.0 + 10.0 + 25.0 + 40.0) / 4.0,
                opponent_average_score: (20.0 + 50.0 + 25.0 + 20.0) / 4.0,
            }
        );
        let mirrored = context.store.head_to_head(bo, ada).await.unwrap();
        assert_eq!((mirrored.wins, mirrored.opponent_wins), (2, 2));
        assert_eq!((mirrored.ahead, mirrored.opponent_ahead), (1, 2));
        let strangers = registered(&context.store, 1).await;
        let never = context.store.head_to_head(ada, strangers[0]).await.unwrap();
        assert_eq!(never, HeadToHead::default());
    }

    async fn the_migration_fills_points_in_from_each_matchs_breakdown(context: Context) {
        let database = TestDatabase::create(context.backend).await;
        migrate_to_version(context.backend, &database.url, 11).await;
        let (ada, bo) = (Uuid::new_v4(), Uuid::new_v4());
        let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
        let literal = |id| uuid_literal(context.backend, id);
        let rows = VERSION_11_MATCHES
            .replace("ADA", &literal(ada))
            .replace("BO", &literal(bo))
            .replace("RULES", &serde_json::to_string(&Rules::with_expansions(&[])).unwrap())
            .replace("FIRST", &literal(first))
            .replace("SECOND", &literal(second));
        execute_raw(context.backend, &database.url, &rows).await;

        let store = Store::connect(&database.url).await.unwrap();
        let ada_stats = store.player_stats(ada).await.unwrap().unwrap();
        assert_eq!(ada_stats.points, points(4, 12, 0, 0, 9));
        let bo_stats = store.player_stats(bo).await.unwrap().unwrap();
        assert_eq!(bo_stats.points, points(4, 0, 9, 3, 0));
        let detail = store.match_detail(second).await.unwrap().unwrap();
        assert_eq!(detail.summary.seats[2].points, points(0, 0, 0, 0, 9), "a guest's seat too");
        store.close().await;
    }
}
