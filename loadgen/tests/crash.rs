//! Crash safety under load, on SQLite and on Postgres: the load generator plays many games
//! at once against the real server binary, so that the group-commit writer has large
//! batches in flight, and the server is killed with SIGKILL while the moves flow. The load
//! generator's ack log says which moves the server acknowledged before it died.
//!
//! What the killed server left in its database must hold every one of them, under its
//! `seq` and with its command id; each game's moves must run from one `seq` to the next
//! with neither gap nor repeat up to the game's stored `seq`; and only commands still
//! unanswered at the kill may have landed unacknowledged, at most one per game. The
//! restarted server must then show every game at its stored `seq`, and a game must go on.

use carcassonne_loadgen::ack_log::{self, AckLine};
use carcassonne_tests::client::{Api, WsClient};
use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::server::TestServer;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;
use uuid::Uuid;

/// Games played at once: enough that many moves share each batch.
const GAMES: usize = 150;

/// Acks seen in the log, once every game has started, before the kill.
const ACKS_BEFORE_KILL: usize = 600;

/// The server flags that lift its per-client limits (all of the load comes from one
/// address), as docs/performance.md gives them.
const LIFTED_LIMITS: [&str; 20] = [
    "--messages-per-second",
    "1000000",
    "--message-burst",
    "1000000",
    "--requests-per-second",
    "1000000",
    "--request-burst",
    "1000000",
    "--max-open-lobbies",
    "100000",
    "--max-open-lobbies-per-client",
    "100000",
    "--max-connections-per-ip",
    "0",
    "--max-pending-connections-per-ip",
    "0",
    "--max-pending-connections",
    "100000",
    "--max-connections",
    "100000",
];

/// The load generator's exit status when the server was lost mid-run.
const SERVER_LOST: i32 = 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_loses_no_acknowledged_move() {
    // One database after the other: two load runs at once would share the two cores.
    for database in TestDatabase::both() {
        crash_under_load(&database).await;
    }
}

async fn crash_under_load(database: &TestDatabase) {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let log_path = directory.path().join("acks.jsonl");
    let server = TestServer::start_with(&database.url(), &LIFTED_LIMITS).await;
    let loadgen = start_loadgen(&server, &log_path);
    let acks_at_kill = wait_for_load(&log_path).await;
    server.kill().await;
    let report = finish_loadgen(loadgen).await;
    let log = Log::read(&log_path);
    let stored = Stored::read(database).await;
    let landed = check_the_store(&log, &stored, &report);
    let server = TestServer::start_with(&database.url(), &LIFTED_LIMITS).await;
    let restored = check_the_restored_games(&server, &log, &stored).await;
    continue_a_game(&server, &log, &stored).await;
    eprintln!(
        "{}: killed after {acks_at_kill} acks; {} acks in all, {} moves stored, {} commands \
         unanswered of which {landed} landed, {restored} games restored",
        database.kind(),
        log.acks.len(),
        stored.moves.values().map(BTreeMap::len).sum::<usize>(),
        report["commands_unanswered"],
    );
}

/// Starts the load generator against `server`, for longer than the test lasts.
fn start_loadgen(server: &TestServer, log_path: &Path) -> tokio::process::Child {
    Command::new(env!("CARGO_BIN_EXE_carcassonne-loadgen"))
        .args(["run", "--server", &server.address.to_string()])
        .args(["--games", &GAMES.to_string(), "--duration", "120s"])
        .args(["--warmup", "1s", "--json", "--ack-log"])
        .arg(log_path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the load generator starts")
}

/// Waits until every game has started and [`ACKS_BEFORE_KILL`] acks are in the log;
/// returns how many acks there were then.
async fn wait_for_load(log_path: &Path) -> usize {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(log_path).unwrap_or_default();
        let games = text.matches(r#""type":"game""#).count();
        let acks = text.matches(r#""type":"ack""#).count();
        if games >= GAMES && acks >= ACKS_BEFORE_KILL {
            return acks;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the load never built up: {games} games and {acks} acks after 30 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits for the load generator to notice the server is gone and stop; returns its
/// report.
async fn finish_loadgen(loadgen: tokio::process::Child) -> Value {
    let output = tokio::time::timeout(Duration::from_secs(20), loadgen.wait_with_output())
        .await
        .expect("the load generator stops within 20 s of losing the server")
        .expect("the load generator's output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(SERVER_LOST), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
    assert!(report["server_lost_after_seconds"].is_f64(), "{report}");
    report
}

/// What the load generator logged: the games it started and the moves acked to it.
struct Log {
    /// Each game's seat tokens, creator first, in the order the games started.
    games: Vec<(Uuid, [String; 2])>,
    /// `(game, seq)` to the command id acknowledged under it.
    acks: HashMap<(Uuid, u64), String>,
}

impl Log {
    fn read(path: &Path) -> Log {
        let mut log = Log {
            games: Vec::new(),
            acks: HashMap::new(),
        };
        for line in ack_log::read(path).expect("a readable ack log") {
            match line {
                AckLine::Game { game, tokens } => log.games.push((uuid(&game), tokens)),
                AckLine::Ack { game, seq, command } => {
                    let earlier = log.acks.insert((uuid(&game), seq), command);
                    assert_eq!(earlier, None, "two acks for seq {seq} of game {game}");
                }
            }
        }
        log
    }

    /// The highest seq acked in `game`, if any.
    fn highest_ack(&self, game: Uuid) -> Option<u64> {
        self.acks
            .keys()
            .filter(|(g, _)| *g == game)
            .map(|(_, seq)| *seq)
            .max()
    }
}

fn uuid(text: &str) -> Uuid {
    text.parse().expect("a game id is a UUID")
}

/// What the killed server left in its database.
struct Stored {
    /// Each game's moves: seq to command id.
    moves: HashMap<Uuid, BTreeMap<u64, String>>,
    /// Each lobby's status and last seq.
    lobbies: HashMap<Uuid, (String, u64)>,
}

/// Reads every move and every lobby, the same queries on either backend.
macro_rules! read_all {
    ($pool:expr) => {{
        let moves: Vec<(Uuid, i64, String)> =
            sqlx::query_as("SELECT game_id, seq, command_id FROM moves")
                .fetch_all(&$pool)
                .await
                .expect("the moves are readable");
        let lobbies: Vec<(Uuid, String, i64)> =
            sqlx::query_as("SELECT id, status, seq FROM lobbies")
                .fetch_all(&$pool)
                .await
                .expect("the lobbies are readable");
        $pool.close().await;
        (moves, lobbies)
    }};
}

impl Stored {
    async fn read(database: &TestDatabase) -> Stored {
        let url = database.url();
        let (moves, lobbies) = match database {
            TestDatabase::Sqlite { .. } => {
                let pool = sqlx::SqlitePool::connect(&url).await.expect("SQLite opens");
                read_all!(pool)
            }
            TestDatabase::Postgres { .. } => {
                let pool = sqlx::PgPool::connect(&url).await.expect("Postgres answers");
                read_all!(pool)
            }
        };
        let mut stored = Stored {
            moves: HashMap::new(),
            lobbies: HashMap::new(),
        };
        for (game, seq, command) in moves {
            let game_moves = stored.moves.entry(game).or_default();
            let earlier = game_moves.insert(seq as u64, command);
            assert_eq!(earlier, None, "seq {seq} of game {game} is stored twice");
        }
        for (id, status, seq) in lobbies {
            stored.lobbies.insert(id, (status, seq as u64));
        }
        stored
    }

    fn moves_of(&self, game: Uuid) -> BTreeMap<u64, String> {
        self.moves.get(&game).cloned().unwrap_or_default()
    }

    fn lobby(&self, game: Uuid) -> &(String, u64) {
        self.lobbies
            .get(&game)
            .expect("every started game is stored")
    }
}

/// Every ack stored, every game's log whole; returns how many stored moves were never
/// acked (commands in flight at the kill).
fn check_the_store(log: &Log, stored: &Stored, report: &Value) -> u64 {
    let lost: Vec<_> = log
        .acks
        .iter()
        .filter(|((game, seq), command)| stored.moves_of(*game).get(seq) != Some(*command))
        .collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged moves are not stored as acked, e.g. {:?}",
        lost.len(),
        log.acks.len(),
        &lost[..lost.len().min(5)]
    );
    let first_seqs: HashSet<u64> = log
        .games
        .iter()
        .filter_map(|(game, _)| stored.moves_of(*game).keys().next().copied())
        .collect();
    assert_eq!(
        first_seqs.len(),
        1,
        "games set up alike start their moves at the same seq: {first_seqs:?}"
    );
    let landed: u64 = log
        .games
        .iter()
        .map(|(game, _)| check_one_game(log, stored, *game))
        .sum();
    let unanswered = report["commands_unanswered"].as_u64().unwrap();
    assert!(
        unanswered > 0,
        "no command was in flight at the kill: {report}"
    );
    assert!(
        landed <= unanswered,
        "{landed} moves landed unacked, {unanswered} in flight"
    );
    landed
}

/// One game's stored moves run without gap or repeat to its stored seq, and at most the
/// one command in flight landed unacked; returns whether it did (1) or not (0).
fn check_one_game(log: &Log, stored: &Stored, game: Uuid) -> u64 {
    let moves = stored.moves_of(game);
    let (_, lobby_seq) = stored.lobby(game);
    if let (Some(first), Some(last)) = (moves.keys().next(), moves.keys().next_back()) {
        let gapless = (last - first + 1) as usize == moves.len();
        assert!(gapless, "game {game} has a gap in its seqs: {moves:?}");
        assert_eq!(
            last, lobby_seq,
            "game {game}: its seq is not its last move's"
        );
    }
    let commands: HashSet<&String> = moves.values().collect();
    assert_eq!(
        commands.len(),
        moves.len(),
        "game {game} repeats a command: {moves:?}"
    );
    let unacked: Vec<u64> = moves
        .keys()
        .filter(|seq| !log.acks.contains_key(&(game, **seq)))
        .copied()
        .collect();
    assert!(
        unacked.len() <= 1,
        "game {game}: moves {unacked:?} were stored but never acked"
    );
    if let (Some(&seq), Some(highest)) = (unacked.first(), log.highest_ack(game)) {
        assert!(
            seq > highest,
            "game {game}: move {seq} stored unacked before {highest}"
        );
    }
    unacked.len() as u64
}

/// Every game still playing is back at its stored seq; every finished one is in the
/// match history. Returns how many were playing.
async fn check_the_restored_games(server: &TestServer, log: &Log, stored: &Stored) -> usize {
    let api = Api::new(server.http());
    let mut playing = 0;
    for (game, _) in &log.games {
        let (status, seq) = stored.lobby(*game);
        if status == "finished" {
            let (code, body) = api.get(&format!("/api/matches/{game}")).await;
            assert_eq!(
                code, 200,
                "finished game {game} is not in the history: {body}"
            );
            continue;
        }
        assert_eq!(status, "playing", "game {game}");
        let mut spectator = WsClient::join(&server.ws_url(&game.to_string()), None, None).await;
        spectator.next_of("snapshot").await;
        assert_eq!(
            spectator.seq,
            Some(*seq),
            "game {game} restored at another seq"
        );
        playing += 1;
    }
    assert!(playing > 0, "no game was still playing at the kill");
    playing
}

/// The player to move in a restored game plays, and the move is acked with the next seq.
async fn continue_a_game(server: &TestServer, log: &Log, stored: &Stored) {
    let (game, tokens) = log
        .games
        .iter()
        .find(|(game, _)| stored.lobby(*game).0 == "playing")
        .expect("a game still playing");
    let url = server.ws_url(&game.to_string());
    for token in tokens {
        let mut seat = WsClient::join(&url, Some(token), None).await;
        seat.next_of("snapshot").await;
        let Some(mv) = seat.legal_moves.as_ref().and_then(|moves| moves.first()) else {
            continue;
        };
        let reply = seat.command("after-the-restart", mv.clone()).await;
        assert_eq!(reply["type"], "ack", "{reply}");
        assert_eq!(reply["seq"], stored.lobby(*game).1 + 1, "{reply}");
        return;
    }
    panic!("neither seat of game {game} may move after the restart");
}
