//! Times the match-history queries on a generated history, on SQLite and on Postgres.
//!
//! ```text
//! cargo run --release -p carcassonne-store --example match_history_bench -- [options]
//!
//!   --matches N      finished matches to generate (default 100000)
//!   --players N      player identities they are drawn from (default 3000)
//!   --runs N         timed runs of each query, after one untimed warm-up (default 25)
//!   --backend B      sqlite, postgres or both (default both)
//!   --postgres URL   the server to create the benchmark database on (default
//!                    TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/postgres)
//!   --rated-share F  the share (0 to 1) of guest-free matches that are rated
//!                    (default 2/3); rating makes a match's import several times dearer
//!   --explain        also print the plan of every list query
//!   --keep           keep the databases afterwards, for inspecting them by hand
//! ```
//!
//! The history is realistic in what the queries depend on: 2 to 6 seats (6 only with Inns
//! & Cathedrals), identities drawn with a skew (some people play far more than others)
//! and about one seat in ten a guest, finishing times spread evenly over a year, each
//! expansion on in a fixed share of matches, and a game record of a full game's size. The
//! generator is seeded, so every run builds the same history. It is written through
//! `Store::import_matches` in transactions of 200 matches, then analysed (and on Postgres
//! vacuumed) so that both databases are in the state of a server that has been running.
//!
//! The SQLite file lives in a temporary directory; the Postgres database is created as
//! `carcassonne_bench_<process id>`. Both are removed at the end unless `--keep` is given. This is an example, not a
//! test or bench target, so neither `cargo test` nor `cargo bench` runs it.

use std::collections::HashMap;
use std::future::Future;
use std::time::{Duration, Instant};

use carcassonne_core::{Expansion, PointsByKind, Rules};
use carcassonne_store::ratings::{Entrant, RatedMatch, RatedSeat, RatingPool, places_by_score};
use carcassonne_store::{
    Backend, FinishedMatch, LeaderboardCursor, MatchCursor, MatchFilter, MatchSeat, MatchStatus,
    Millis, PlayerRow, Store,
};
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

/// 2025-01-01T00:00:00Z: the generated year starts here.
const YEAR_START: Millis = 1_735_689_600_000;
const YEAR: Millis = 365 * DAY;
const DAY: Millis = 86_400_000;

/// Matches per `import_matches` call, hence per transaction.
const IMPORT_BATCH: usize = 200;

/// The page size of every list query timed, a typical history page.
const PAGE: u32 = 20;

struct Options {
    matches: usize,
    players: usize,
    runs: usize,
    backends: Vec<Backend>,
    postgres_url: String,
    explain: bool,
    keep: bool,
    /// The share of guest-free matches that are rated.
    rated_share: f64,
}

fn parse_options() -> Options {
    let mut options = Options {
        matches: 100_000,
        players: 3_000,
        runs: 25,
        backends: vec![Backend::Sqlite, Backend::Postgres],
        postgres_url: std::env::var("TEST_DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned()),
        explain: false,
        keep: false,
        rated_share: 2.0 / 3.0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "--matches" => options.matches = number(&value()),
            "--players" => options.players = number(&value()),
            "--runs" => options.runs = number(&value()).max(1),
            "--postgres" => options.postgres_url = value(),
            "--backend" => options.backends = backends(&value()),
            "--explain" => options.explain = true,
            "--keep" => options.keep = true,
            "--rated-share" => options.rated_share = share(&value()),
            other => usage(&format!("unknown option {other}")),
        }
    }
    options
}

fn share(text: &str) -> f64 {
    text.parse()
        .ok()
        .filter(|share| (0.0..=1.0).contains(share))
        .unwrap_or_else(|| usage(&format!("{text} is not a share from 0 to 1")))
}

fn number(text: &str) -> usize {
    text.replace('_', "")
        .parse()
        .unwrap_or_else(|_| usage(&format!("{text} is not a number")))
}

fn backends(text: &str) -> Vec<Backend> {
    match text {
        "sqlite" => vec![Backend::Sqlite],
        "postgres" => vec![Backend::Postgres],
        "both" => vec![Backend::Sqlite, Backend::Postgres],
        other => usage(&format!(
            "--backend takes sqlite, postgres or both, not {other}"
        )),
    }
}

fn usage(problem: &str) -> ! {
    eprintln!("{problem}\nsee the options at the top of store/examples/match_history_bench.rs");
    std::process::exit(2)
}

/// SplitMix64: small, fast, and the same sequence on every machine.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound`.
    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    /// A uniform number in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, probability: f64) -> bool {
        self.unit() < probability
    }

    fn uuid(&mut self) -> Uuid {
        uuid::Builder::from_random_bytes(
            (u128::from(self.next()) << 64 | u128::from(self.next())).to_le_bytes(),
        )
        .into_uuid()
    }
}

/// What the generator remembers of the history, to choose the queries' arguments.
struct HistoryKeys {
    /// `(finished_at, id)` of every match.
    matches: Vec<(Millis, Uuid)>,
    /// The same, per player identity.
    by_player: HashMap<Uuid, Vec<(Millis, Uuid)>>,
}

fn generate_players(random: &mut Random, count: usize) -> Vec<PlayerRow> {
    (0..count)
        .map(|index| PlayerRow {
            id: random.uuid(),
            display_name: format!("player {index}"),
            secret_hash: format!("{:064x}", random.next()),
            created_at: YEAR_START - DAY,
        })
        .collect()
}

fn generate_match(random: &mut Random, players: &[PlayerRow], share: f64) -> FinishedMatch {
    let rules = generate_rules(random);
    let seat_count = generate_seat_count(random, &rules);
    let seats = generate_seats(random, players, seat_count);
    let finished_at = YEAR_START + random.below(YEAR as u64) as Millis;
    let duration = (20 + random.below(70) as Millis) * 60_000;
    let id = random.uuid();
    FinishedMatch {
        id,
        name: format!("game {}", id.simple()),
        record: generate_record(random, &rules, &seats).into(),
        breakdown: generate_breakdown(random, seat_count).into(),
        rules,
        started_at: finished_at - duration,
        finished_at,
        status: MatchStatus::Finished,
        tiles_placed: 71,
        rating: rated_share(random, &seats, share),
        seats,
    }
}

/// `share` of the matches no guest played are rated (two in three by default); places
/// follow the scores.
fn rated_share(random: &mut Random, seats: &[MatchSeat], share: f64) -> Option<RatedMatch> {
    let players: Option<Vec<Uuid>> = seats.iter().map(|seat| seat.player_id).collect();
    let players = players.filter(|_| random.chance(share))?;
    let standing: Vec<(u8, u32)> = seats.iter().map(|seat| (seat.seat, seat.score)).collect();
    let places = places_by_score(&standing, &[]);
    Some(RatedMatch {
        pool: RatingPool::for_players(seats.len() as u8),
        seats: players
            .into_iter()
            .zip(places)
            .map(|(id, (seat, place))| RatedSeat {
                seat,
                entrant: Entrant::Player(id),
                place,
            })
            .collect(),
    })
}

/// Each expansion on in a fixed share of matches: River 40%, Abbot 30%, Inns &
/// Cathedrals 35%, Festival 20%.
fn generate_rules(random: &mut Random) -> Rules {
    let shares = [0.40, 0.30, 0.35, 0.20];
    let expansions: Vec<Expansion> = Expansion::ALL
        .iter()
        .zip(shares)
        .filter_map(|(&expansion, share)| random.chance(share).then_some(expansion))
        .collect();
    Rules::with_expansions(&expansions)
}

/// Mostly 2 to 4 players; 6 only where the rules allow it.
fn generate_seat_count(random: &mut Random, rules: &Rules) -> usize {
    let roll = random.unit();
    let wanted = match roll {
        r if r < 0.30 => 2,
        r if r < 0.55 => 3,
        r if r < 0.80 => 4,
        r if r < 0.92 => 5,
        _ => 6,
    };
    wanted.min(usize::from(rules.max_players()))
}

/// Distinct identities, drawn with a quadratic skew towards the start of the pool, and
/// one seat in ten a guest.
fn generate_seats(random: &mut Random, players: &[PlayerRow], count: usize) -> Vec<MatchSeat> {
    let mut taken: Vec<Uuid> = Vec::with_capacity(count);
    let mut seats: Vec<MatchSeat> = (0..count)
        .map(|seat| {
            let player_id = if random.chance(0.1) {
                None
            } else {
                Some(skewed_player(random, players, &taken))
            };
            taken.extend(player_id);
            let score = 20 + random.below(130) as u32;
            MatchSeat {
                seat: seat as u8,
                display_name: format!("seat {seat}"),
                player_id,
                score,
                winner: false,
                resigned: false,
                points: split_score(score),
            }
        })
        .collect();
    let best = seats.iter().map(|seat| seat.score).max().unwrap_or(0);
    for seat in &mut seats {
        seat.winner = seat.score == best;
    }
    seats
}

fn skewed_player(random: &mut Random, players: &[PlayerRow], taken: &[Uuid]) -> Uuid {
    loop {
        let position = random.unit() * random.unit();
        let candidate = players[(position * players.len() as f64) as usize].id;
        if !taken.contains(&candidate) {
            return candidate;
        }
    }
}

/// A game record the size of a real one: 71 turns of tile, place, rotation and figure.
fn generate_record(random: &mut Random, rules: &Rules, seats: &[MatchSeat]) -> serde_json::Value {
    let turns: Vec<serde_json::Value> = (0..71)
        .map(|_| {
            let tile = char::from(b'A' + random.below(24) as u8).to_string();
            let x = random.below(21) as i64 - 10;
            let y = random.below(21) as i64 - 10;
            let figure = random.chance(0.5).then(|| format!("c{}", random.below(3)));
            serde_json::json!([tile, x, y, 90 * random.below(4), figure])
        })
        .collect();
    let names: Vec<&str> = seats
        .iter()
        .map(|seat| seat.display_name.as_str())
        .collect();
    let scores: Vec<u32> = seats.iter().map(|seat| seat.score).collect();
    serde_json::json!({ "version": 1, "rules": rules, "players": names, "turns": turns,
                        "final": scores })
}

fn generate_breakdown(random: &mut Random, seat_count: usize) -> serde_json::Value {
    let features = ["city", "road", "monastery", "field", "garden"];
    let scored: Vec<serde_json::Value> = (0..12)
        .map(|_| {
            serde_json::json!({
                "feature": features[random.below(features.len() as u64) as usize],
                "points": random.below(20),
                "seats": [random.below(seat_count as u64)],
            })
        })
        .collect();
    serde_json::Value::Array(scored)
}

/// Writes the players and the matches, in import batches, and returns the keys.
async fn write_history(store: &Store, options: &Options) -> HistoryKeys {
    let mut random = Random(2025);
    let players = generate_players(&mut random, options.players);
    let started = Instant::now();
    for player in &players {
        store.create_player(player).await.expect("writing a player");
    }
    println!(
        "  {} players written in {:.1?}",
        players.len(),
        started.elapsed()
    );

    let started = Instant::now();
    let mut keys = HistoryKeys {
        matches: Vec::with_capacity(options.matches),
        by_player: HashMap::new(),
    };
    let mut remaining = options.matches;
    let mut generating = Duration::ZERO;
    while remaining > 0 {
        let generation_started = Instant::now();
        let batch: Vec<FinishedMatch> = (0..remaining.min(IMPORT_BATCH))
            .map(|_| generate_match(&mut random, &players, options.rated_share))
            .collect();
        generating += generation_started.elapsed();
        store
            .import_matches(&batch)
            .await
            .expect("importing matches");
        remember_keys(&mut keys, &batch);
        remaining -= batch.len();
    }
    println!(
        "  {} matches generated and written in {:.1?} ({generating:.1?} of it generating)",
        options.matches,
        started.elapsed()
    );
    keys.matches.sort_unstable_by(|a, b| b.cmp(a));
    for player_keys in keys.by_player.values_mut() {
        player_keys.sort_unstable_by(|a, b| b.cmp(a));
    }
    keys
}

fn remember_keys(keys: &mut HistoryKeys, batch: &[FinishedMatch]) {
    for result in batch {
        let key = (result.finished_at, result.id);
        keys.matches.push(key);
        for player in result.seats.iter().filter_map(|seat| seat.player_id) {
            keys.by_player.entry(player).or_default().push(key);
        }
    }
}

/// One timed query: its name, and what it lists (`None` for the non-list calls).
struct Case {
    name: &'static str,
    list: Option<(MatchFilter, Option<MatchCursor>)>,
}

/// The queries timed, with arguments chosen from the generated history.
fn cases(keys: &HistoryKeys) -> (Vec<Case>, Players, Uuid) {
    let mut by_count: Vec<(&Uuid, &Vec<(Millis, Uuid)>)> = keys.by_player.iter().collect();
    by_count.sort_by_key(|(id, matches)| (std::cmp::Reverse(matches.len()), **id));
    let (&busiest, busiest_matches) = by_count[0];
    let (&typical, _) = by_count[by_count.len() / 2];
    let (&rival, _) = by_count[1];
    let cursor = |key: (Millis, Uuid)| MatchCursor {
        finished_at: key.0,
        id: key.1,
    };
    let middle = YEAR_START + YEAR / 2;
    let list = |filter: MatchFilter, after: Option<MatchCursor>| Some((filter, after));
    let cases = vec![
        Case {
            name: "first page, no filter",
            list: list(MatchFilter::default(), None),
        },
        Case {
            name: "deep page (after half the history)",
            list: list(
                MatchFilter::default(),
                Some(cursor(keys.matches[keys.matches.len() / 2])),
            ),
        },
        Case {
            name: "player (busiest): first page",
            list: list(player_filter(busiest), None),
        },
        Case {
            name: "player (busiest): deep page",
            list: list(
                player_filter(busiest),
                Some(cursor(busiest_matches[busiest_matches.len() / 2])),
            ),
        },
        Case {
            name: "player (median): first page",
            list: list(player_filter(typical), None),
        },
        Case {
            name: "date range (one week)",
            list: list(
                MatchFilter {
                    from: Some(middle),
                    to: Some(middle + 7 * DAY),
                    ..MatchFilter::default()
                },
                None,
            ),
        },
        Case {
            name: "expansion: festival",
            list: list(expansion_filter(&[Expansion::Festival]), None),
        },
        Case {
            name: "expansions: river + abbot + festival",
            list: list(
                expansion_filter(&[Expansion::River, Expansion::Abbot, Expansion::Festival]),
                None,
            ),
        },
        Case {
            name: "player count: 5",
            list: list(
                MatchFilter {
                    players: Some(5),
                    ..MatchFilter::default()
                },
                None,
            ),
        },
        Case {
            name: "combined: 4 players + inns + last 30 days",
            list: list(
                MatchFilter {
                    from: Some(YEAR_START + YEAR - 30 * DAY),
                    expansions: vec![Expansion::InnsAndCathedrals],
                    players: Some(4),
                    ..MatchFilter::default()
                },
                None,
            ),
        },
        Case {
            name: "combined: player + quarter + river + 3 players",
            list: list(
                MatchFilter {
                    player: Some(busiest),
                    from: Some(middle),
                    to: Some(middle + 91 * DAY),
                    expansions: vec![Expansion::River],
                    players: Some(3),
                    status: None,
                    opponent: None,
                    include_private: false,
                },
                None,
            ),
        },
        Case {
            name: "player + opponent (two busiest): first page",
            list: list(
                MatchFilter {
                    opponent: Some(rival),
                    ..player_filter(busiest)
                },
                None,
            ),
        },
        Case {
            name: "player_stats (busiest)",
            list: None,
        },
        Case {
            name: "head_to_head (two busiest)",
            list: None,
        },
        Case {
            name: "match_detail",
            list: None,
        },
        Case {
            name: "leaderboard (multiplayer): first page",
            list: None,
        },
        Case {
            name: "leaderboard (multiplayer): page after rank 1000",
            list: None,
        },
        Case {
            name: "player_ratings (busiest)",
            list: None,
        },
        Case {
            name: "rating_history (busiest, multiplayer)",
            list: None,
        },
    ];
    let players = Players { busiest, rival };
    (cases, players, keys.matches[keys.matches.len() / 3].1)
}

/// The two players with the most matches, whom the per-player queries ask about.
#[derive(Clone, Copy)]
struct Players {
    busiest: Uuid,
    rival: Uuid,
}

/// A plausible split of a final score: most from cities and fields.
fn split_score(score: u32) -> PointsByKind {
    let city = score * 4 / 10;
    let road = score * 2 / 10;
    let monastery = score / 10;
    PointsByKind {
        road,
        city,
        monastery,
        garden: 0,
        field: score - city - road - monastery,
    }
}

fn player_filter(player: Uuid) -> MatchFilter {
    MatchFilter {
        player: Some(player),
        ..MatchFilter::default()
    }
}

fn expansion_filter(expansions: &[Expansion]) -> MatchFilter {
    MatchFilter {
        expansions: expansions.to_vec(),
        ..MatchFilter::default()
    }
}

/// Median and 95th percentile of the runs, and the rows the query returned.
#[derive(Clone, Copy)]
struct Timing {
    median: Duration,
    p95: Duration,
    rows: usize,
}

/// Runs `query` once untimed (to fill caches and prepare the statement), then `runs`
/// times timed.
async fn time<Query>(runs: usize, mut query: impl FnMut() -> Query) -> Timing
where
    Query: Future<Output = usize>,
{
    let rows = query().await;
    let mut durations: Vec<Duration> = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        query().await;
        durations.push(started.elapsed());
    }
    durations.sort();
    let at = |fraction: f64| durations[((durations.len() - 1) as f64 * fraction).round() as usize];
    Timing {
        median: at(0.5),
        p95: at(0.95),
        rows,
    }
}

async fn time_case(store: &Store, case: &Case, runs: usize, players: Players, id: Uuid) -> Timing {
    let player = players.busiest;
    match (&case.list, case.name) {
        (Some((filter, after)), _) => {
            time(runs, || async {
                let page = store.matches(filter, *after, PAGE).await.expect("listing");
                page.items.len()
            })
            .await
        }
        (None, "player_stats (busiest)") => {
            time(runs, || async {
                let stats = store.player_stats(player).await.expect("stats");
                stats.map_or(0, |stats| stats.games as usize)
            })
            .await
        }
        (None, "head_to_head (two busiest)") => {
            time(runs, || async {
                let record = store.head_to_head(player, players.rival).await;
                record.expect("head to head").games as usize
            })
            .await
        }
        (None, "match_detail") => {
            time(runs, || async {
                let detail = store.match_detail(id).await.expect("detail");
                detail.map_or(0, |detail| detail.summary.seats.len())
            })
            .await
        }
        (None, "leaderboard (multiplayer): first page") => {
            time(runs, || async { leaderboard_page(store, None).await }).await
        }
        (None, "leaderboard (multiplayer): page after rank 1000") => {
            let cursor = leaderboard_cursor_at(store, 1_000).await;
            time(runs, || async { leaderboard_page(store, cursor).await }).await
        }
        (None, "player_ratings (busiest)") => {
            time(runs, || async {
                store.player_ratings(player).await.expect("ratings").len()
            })
            .await
        }
        (None, _) => {
            time(runs, || async {
                let history = store.rating_history(player, RatingPool::Multiplayer, None, PAGE);
                history.await.expect("rating history").len()
            })
            .await
        }
    }
}

async fn leaderboard_page(store: &Store, after: Option<LeaderboardCursor>) -> usize {
    let page = store.leaderboard(RatingPool::Multiplayer, after, PAGE);
    page.await.expect("leaderboard").len()
}

/// The cursor after the `rank`th ranked player (or the last, on a shorter board).
async fn leaderboard_cursor_at(store: &Store, rank: usize) -> Option<LeaderboardCursor> {
    let mut after = None;
    let mut passed = 0;
    while passed < rank {
        let page = store.leaderboard(RatingPool::Multiplayer, after, 200);
        let page = page.await.expect("leaderboard");
        let Some(last) = page.last() else { break };
        after = Some(LeaderboardCursor {
            rating: last.rating,
            player_id: last.player_id,
        });
        passed += page.len();
    }
    after
}

/// A database of one backend for the benchmark, removed by `remove`.
struct BenchDatabase {
    url: String,
    directory: Option<tempfile::TempDir>,
    postgres_admin_url: Option<String>,
}

impl BenchDatabase {
    fn name() -> String {
        format!("carcassonne_bench_{}", std::process::id())
    }

    async fn create(backend: Backend, options: &Options) -> BenchDatabase {
        match backend {
            Backend::Sqlite => {
                let directory = tempfile::tempdir().expect("a temporary directory");
                let url = format!("sqlite://{}", directory.path().join("bench.db").display());
                BenchDatabase {
                    url,
                    directory: Some(directory),
                    postgres_admin_url: None,
                }
            }
            Backend::Postgres => {
                let admin = options.postgres_url.clone();
                run_admin(
                    &admin,
                    &format!("CREATE DATABASE {}", BenchDatabase::name()),
                )
                .await;
                let base = admin.split('?').next().unwrap_or(&admin);
                let server = &base[..base.rfind('/').expect("a database in the URL")];
                BenchDatabase {
                    url: format!("{server}/{}", BenchDatabase::name()),
                    directory: None,
                    postgres_admin_url: Some(admin),
                }
            }
        }
    }

    /// The size of the database on disk, in MiB.
    async fn size_mib(&self) -> f64 {
        let bytes: i64 = match (&self.directory, &self.postgres_admin_url) {
            (Some(directory), _) => std::fs::read_dir(directory.path())
                .expect("the database directory")
                .map(|entry| entry.unwrap().metadata().unwrap().len() as i64)
                .sum(),
            (None, _) => {
                let mut connection = PgConnection::connect(&self.url).await.unwrap();
                sqlx::query_scalar("SELECT pg_database_size(current_database())")
                    .fetch_one(&mut connection)
                    .await
                    .unwrap()
            }
        };
        bytes as f64 / (1024.0 * 1024.0)
    }

    /// Brings the freshly loaded tables to the state of a server that has been running:
    /// planner statistics on both; on Postgres also the visibility map that index-only
    /// scans rely on, which autovacuum builds some time after a bulk load.
    async fn analyze(&self, backend: Backend) {
        match backend {
            Backend::Sqlite => {
                let mut connection = sqlx::SqliteConnection::connect(&self.url).await.unwrap();
                sqlx::query("ANALYZE")
                    .execute(&mut connection)
                    .await
                    .unwrap();
            }
            Backend::Postgres => {
                let mut connection = PgConnection::connect(&self.url).await.unwrap();
                sqlx::query("VACUUM (ANALYZE)")
                    .execute(&mut connection)
                    .await
                    .unwrap();
            }
        }
    }

    /// Leaves the database in place: the temporary directory is not deleted.
    fn keep(self) {
        if let Some(directory) = self.directory {
            let _ = directory.keep();
        }
    }

    async fn remove(self) {
        if let Some(admin) = &self.postgres_admin_url {
            let drop = format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                BenchDatabase::name()
            );
            run_admin(admin, &drop).await;
        }
    }
}

async fn run_admin(admin_url: &str, statement: &str) {
    let mut connection = PgConnection::connect(admin_url)
        .await
        .unwrap_or_else(|error| panic!("connecting to Postgres at {admin_url}: {error}"));
    sqlx::raw_sql(sqlx::AssertSqlSafe(statement.to_owned()))
        .execute(&mut connection)
        .await
        .unwrap_or_else(|error| panic!("{statement}: {error}"));
}

/// Builds the history on one backend and times every case on it.
async fn bench_backend(backend: Backend, options: &Options) -> Vec<(String, Timing)> {
    println!("{backend:?}:");
    let database = BenchDatabase::create(backend, options).await;
    let store = Store::connect(&database.url).await.expect("connecting");
    let keys = write_history(&store, options).await;
    let started = Instant::now();
    database.analyze(backend).await;
    println!(
        "  analysed (Postgres: vacuumed) in {:.1?}",
        started.elapsed()
    );
    println!("  database size: {:.0} MiB", database.size_mib().await);
    let (cases, players, id) = cases(&keys);
    let mut timings = Vec::new();
    for case in &cases {
        if let (true, Some((filter, after))) = (options.explain, &case.list) {
            let plan = store.explain_matches(filter, *after, PAGE).await.unwrap();
            println!(
                "  plan of {}:\n    {}",
                case.name,
                plan.replace('\n', "\n    ")
            );
        }
        let timing = time_case(&store, case, options.runs, players, id).await;
        timings.push((case.name.to_owned(), timing));
    }
    store.close().await;
    if options.keep {
        println!("  kept: {}", database.url);
        database.keep();
    } else {
        database.remove().await;
    }
    timings
}

fn milliseconds(duration: Duration) -> String {
    format!("{:.2}", duration.as_secs_f64() * 1_000.0)
}

fn print_table(results: &[(Backend, Vec<(String, Timing)>)]) {
    let mut header = String::from("| query |");
    let mut rule = String::from("|---|");
    for (backend, _) in results {
        header.push_str(&format!(" {backend:?} median ms | {backend:?} p95 ms |"));
        rule.push_str("---:|---:|");
    }
    header.push_str(" rows |");
    rule.push_str("---:|");
    println!("\n{header}\n{rule}");
    let case_count = results.first().map_or(0, |(_, timings)| timings.len());
    for index in 0..case_count {
        let mut line = format!("| {} |", results[0].1[index].0);
        for (_, timings) in results {
            let timing = timings[index].1;
            line.push_str(&format!(
                " {} | {} |",
                milliseconds(timing.median),
                milliseconds(timing.p95)
            ));
        }
        line.push_str(&format!(" {} |", results[0].1[index].1.rows));
        println!("{line}");
    }
}

#[tokio::main]
async fn main() {
    let options = parse_options();
    println!(
        "{} matches, {} players, {} timed runs per query, pages of {PAGE}",
        options.matches, options.players, options.runs
    );
    let mut results = Vec::new();
    for &backend in &options.backends {
        results.push((backend, bench_backend(backend, &options).await));
    }
    print_table(&results);
}
