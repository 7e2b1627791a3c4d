//! The load generator against the real server binary with a temporary SQLite database:
//! a short run must get moves acked, with no error of any kind, and report as JSON; so
//! must a run at human pace, the memory benchmark and the restart benchmark.

use carcassonne_tests::database::TestDatabase;
use carcassonne_tests::server::server_binary;
use serde_json::Value;
use std::process::Command;

/// The server flags that lift its per-IP limits, as docs/performance.md gives them.
const LIFTED_LIMITS: &str = "--messages-per-second 1000000 --message-burst 1000000 \
    --requests-per-second 1000000 --request-burst 1000000 \
    --max-open-lobbies-per-client 100000 --max-connections-per-ip 0 \
    --max-pending-connections-per-ip 0";

/// Runs `carcassonne-loadgen SUBCOMMAND --spawn-server ... ARGS --json` against the real
/// server on a fresh SQLite file, and returns its report; a failed run fails the test.
fn loadgen_report(subcommand: &str, args: &[&str]) -> Value {
    loadgen_report_on(&TestDatabase::sqlite(), subcommand, args)
}

/// As [`loadgen_report`], on `database`.
fn loadgen_report_on(database: &TestDatabase, subcommand: &str, args: &[&str]) -> Value {
    let server = format!(
        "{} serve --database {} {LIFTED_LIMITS}",
        server_binary().display(),
        database.url()
    );
    let output = Command::new(env!("CARGO_BIN_EXE_carcassonne-loadgen"))
        .args([subcommand, "--spawn-server", &server])
        .args(args)
        .arg("--json")
        .output()
        .expect("the load generator runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "carcassonne-loadgen {subcommand} failed: {stderr}"
    );
    serde_json::from_slice(&output.stdout).expect("one JSON report")
}

#[test]
fn a_short_run_acks_moves_without_errors() {
    let report = loadgen_report(
        "run",
        &[
            "--games",
            "2",
            "--duration",
            "3s",
            "--idle",
            "5",
            "--baseline",
        ],
    );
    assert!(report["moves_acked"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(report["error_total"], 0, "{report}");
    // A slot starts its next game once its game's last update arrives, not when the
    // finished game's room closes after its post-game stay (minutes later).
    assert!(
        report["games_finished"].as_u64().unwrap() > 2,
        "each of the two slots played more than one game: {report}"
    );
    assert!(
        report["ack_latency_ms"]["p50"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    assert!(
        report["update_bytes_with_legal_moves"]["count"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(report["server_process"]["cpu_core_share"].as_f64().unwrap() > 0.0);
    // A 3 s run warms up for 0.75 s and ramps over three quarters of that: the second of
    // the two slots starts its first game 0.5625 s after the first.
    assert_eq!(report["ramp_seconds"].as_f64(), Some(0.5625), "{report}");
    assert!(
        report["setup_seconds"].as_f64().unwrap() >= 0.5625,
        "{report}"
    );
    assert!(
        report["baseline"]["echo_round_trips_per_second"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(
        report["baseline"]["errors"],
        serde_json::json!({}),
        "{report}"
    );
}

/// The memory benchmark plays its games to their end and weighs every step. Its figures
/// are only checked to be plausible: at 40 games the allocator's slack is too large for
/// a bound (docs/performance.md gives the figures at 2,000).
#[test]
fn the_memory_benchmark_weighs_rooms_and_connections_through_whole_games() {
    let report = loadgen_report("memory", &["--games", "40", "--moves-per-step", "60"]);
    assert_eq!(report["failures"], 0, "{report}");
    let steps = report["room_by_moves"].as_array().expect("steps");
    assert!(
        steps.len() >= 2,
        "whole games take more than one step: {report}"
    );
    for figure in ["room_at_start", "room_most", "player_connection"] {
        let bytes = report[figure].as_f64().expect(figure);
        assert!(bytes > 0.0 && bytes < 1024.0 * 1024.0, "{figure}: {report}");
    }
    // With its sockets closed a room may give back more than it took at 40 games.
    let gone = report["room_at_end_players_gone"]
        .as_f64()
        .expect("a figure");
    assert!(gone < 1024.0 * 1024.0, "room_at_end_players_gone: {report}");
}

/// A server that goes quiet gives back what its finished games and closed sockets freed:
/// its runtime's threads return their emptied pages as they go idle (main.rs). On
/// Postgres at 500 games, a finished game with its players gone left 75.7-77.3 KiB of RSS
/// without that, and 53.9-55.1 KiB with it. (Not on SQLite: its page cache, which the
/// figure counts, narrows the gap.)
#[test]
fn a_quiet_server_gives_back_what_finished_games_and_closed_sockets_freed() {
    let Some(database) = TestDatabase::postgres_or_skip() else {
        return;
    };
    let args = ["--games", "500", "--moves-per-step", "40"];
    let report = loadgen_report_on(&database, "memory", &args);
    assert_eq!(report["failures"], 0, "{report}");
    let gone = report["room_at_end_players_gone"]
        .as_f64()
        .expect("a figure");
    assert!(
        gone < 65.0 * 1024.0,
        "{:.1} KiB a finished game with its players gone: {report}",
        gone / 1024.0
    );
}

/// At human pace each player thinks before each command, so a game moves at most once
/// per half a think time; games are set up at the given rate, from several addresses.
#[test]
fn a_human_pace_run_moves_no_faster_than_its_players_think() {
    let report = loadgen_report(
        "run",
        &[
            "--games",
            "4",
            "--duration",
            "4s",
            "--think",
            "200ms",
            "--setup-rate",
            "8",
            "--source-addresses",
            "2",
        ],
    );
    assert_eq!(report["error_total"], 0, "{report}");
    assert_eq!(report["commands_unanswered"], 0, "{report}");
    let moves_per_second = report["moves_per_second"].as_f64().unwrap();
    // 4 games, each waiting at least 100 ms before every command.
    assert!(
        moves_per_second > 0.0 && moves_per_second <= 40.0,
        "{moves_per_second} moves/s: {report}"
    );
}

/// The restart benchmark kills a server with unfinished games and moves in a sample of
/// them on the restarted one: every sampled game must move, and the times must be in
/// their order (docs/performance.md gives the figures at 10,000 games).
#[test]
fn the_restart_benchmark_moves_in_games_the_killed_server_left() {
    let report = loadgen_report(
        "restart",
        &["--games", "30", "--moves", "4", "--sample", "10"],
    );
    assert_eq!(report["games"], 30, "{report}");
    assert_eq!(report["sample_failures"], 0, "{report}");
    assert_eq!(report["first_move_ms"]["count"], 10, "{report}");
    let at = |figure: &str| report[figure].as_f64().expect(figure);
    assert!(at("listening_after_ms") > 0.0, "{report}");
    assert!(
        at("all_sampled_moved_after_ms") >= at("listening_after_ms"),
        "{report}"
    );
    assert!(report["first_move_ms"]["max"].as_f64().unwrap() > 0.0);
}
