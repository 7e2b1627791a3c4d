//! The result of a run, as one JSON object (`--json`) or a table for people.

use crate::stats::Summary;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Serialize)]
pub struct Report {
    pub server: String,
    pub games: usize,
    pub idle_sockets: usize,
    pub duration_seconds: f64,
    pub warmup_seconds: f64,
    /// Over how long the slots started their first games (`--ramp`).
    pub ramp_seconds: f64,
    /// The measured window: the duration less the warm-up, cut short when the server
    /// was lost.
    pub window_seconds: f64,
    /// From the start until every game slot had its first game started; when longer
    /// than the warm-up, the window includes part of the set-up.
    pub setup_seconds: Option<f64>,
    pub moves_acked: u64,
    pub moves_per_second: f64,
    /// Acks over the whole run, warm-up included: the ack log's `ack` lines.
    pub moves_acked_whole_run: u64,
    /// Commands that got neither an ack nor a rejection: in flight when their connection
    /// died (the server was lost) or the run ended.
    pub commands_unanswered: u64,
    pub games_finished: u64,
    pub ack_latency_ms: Summary,
    pub update_bytes_with_legal_moves: Summary,
    pub update_bytes_without_legal_moves: Summary,
    pub patch_bytes_median: f64,
    pub errors: BTreeMap<String, u64>,
    pub error_total: u64,
    pub server_process: Option<ProcessReport>,
    /// The load generator's own CPU over the window (it shares the machine's cores).
    pub loadgen_cpu_core_share: Option<f64>,
    /// The machine's 1-minute load average when the games started.
    pub load_average_at_start: Option<f64>,
    pub baseline: Option<BaselineReport>,
    /// Set when the server was lost mid-run (nothing listened at its address any more),
    /// which ended the run then: seconds from the start.
    pub server_lost_after_seconds: Option<f64>,
}

/// What the server process cost, from `/proc`.
#[derive(Debug, Serialize)]
pub struct ProcessReport {
    pub pid: u32,
    /// User plus system CPU time over the window, divided by the window: 1.0 is one core.
    pub cpu_core_share: f64,
    pub cpu_microseconds_per_move: Option<f64>,
    pub rss_mib_at_end: f64,
    /// RSS after opening the idle sockets less RSS before, per socket.
    pub rss_kib_per_idle_socket: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct BaselineReport {
    pub connections: usize,
    pub frame_bytes: usize,
    pub echo_round_trips_per_second: f64,
    pub echo_round_trip_ms: Summary,
    pub echo_cpu_core_share: Option<f64>,
    /// The load generator's own CPU during the baseline: with many connections the
    /// clients, not the echo server, may be what limits the round trips.
    pub loadgen_cpu_core_share: Option<f64>,
    /// The game server's moves/s divided by the echo round trips/s.
    pub moves_share_of_echo: f64,
    pub errors: BTreeMap<String, u64>,
}

/// One line of the table: what, and its value.
type Row = (&'static str, String);

impl Report {
    /// A table for people, one measurement per line.
    pub fn table(&self) -> String {
        let mut rows = self.game_rows();
        if let Some(seconds) = self.server_lost_after_seconds {
            rows.insert(0, ("SERVER LOST after", format!("{seconds:.1} s")));
        }
        if let Some(process) = &self.server_process {
            rows.extend(process.rows());
        }
        if let Some(share) = self.loadgen_cpu_core_share {
            rows.push((
                "load generator CPU (share of one core)",
                format!("{share:.2}"),
            ));
        }
        if let Some(load) = self.load_average_at_start {
            rows.push(("load average at start (1 min)", format!("{load:.2}")));
        }
        if let Some(baseline) = &self.baseline {
            rows.extend(baseline.rows());
        }
        rows.iter()
            .map(|(name, value)| format!("{name:<40} {value}\n"))
            .collect()
    }

    fn game_rows(&self) -> Vec<Row> {
        let games = format!("{} / {}", self.games, self.idle_sockets);
        let warmup = self.warmup_seconds;
        let setup = match self.setup_seconds {
            None => "-".to_owned(),
            Some(s) if s > warmup => format!("{s:.1} s (after the warm-up: raise --warmup)"),
            Some(s) => format!("{s:.1} s"),
        };
        let times = format!(
            "{:.1} s / {:.1} s",
            self.duration_seconds, self.window_seconds
        );
        vec![
            ("server", self.server.clone()),
            ("games at once / idle sockets", games),
            ("duration / measured window", times),
            (
                "first games started over (ramp)",
                format!("{:.1} s", self.ramp_seconds),
            ),
            ("all games started after", setup),
            ("moves acked (window)", self.moves_acked.to_string()),
            ("moves/s", format!("{:.0}", self.moves_per_second)),
            (
                "moves acked (whole run) / unanswered",
                format!(
                    "{} / {}",
                    self.moves_acked_whole_run, self.commands_unanswered
                ),
            ),
            ("games finished", self.games_finished.to_string()),
            (
                "ack latency p50/p99/max",
                milliseconds(&self.ack_latency_ms),
            ),
            (
                "update bytes with legal_moves",
                bytes(&self.update_bytes_with_legal_moves),
            ),
            (
                "update bytes without legal_moves",
                bytes(&self.update_bytes_without_legal_moves),
            ),
            (
                "patch bytes median",
                format!("{:.0}", self.patch_bytes_median),
            ),
            ("errors", errors(self.error_total, &self.errors)),
        ]
    }
}

impl ProcessReport {
    fn rows(&self) -> Vec<Row> {
        let per_move =
            (self.cpu_microseconds_per_move).map_or("-".into(), |us| format!("{us:.0} µs"));
        let mut rows = vec![
            (
                "server CPU (share of one core)",
                format!("{:.2}", self.cpu_core_share),
            ),
            ("server CPU per move", per_move),
            (
                "server RSS at end",
                format!("{:.1} MiB", self.rss_mib_at_end),
            ),
        ];
        if let Some(kib) = self.rss_kib_per_idle_socket {
            rows.push(("server RSS per idle socket", format!("{kib:.1} KiB")));
        }
        rows
    }
}

impl BaselineReport {
    fn rows(&self) -> Vec<Row> {
        let trips = format!(
            "{:.0} ({} connections, {} B frames)",
            self.echo_round_trips_per_second, self.connections, self.frame_bytes
        );
        let mut rows = vec![
            ("echo round trips/s", trips),
            (
                "echo round trip p50/p99/max",
                milliseconds(&self.echo_round_trip_ms),
            ),
        ];
        if let Some(share) = self.echo_cpu_core_share {
            rows.push(("echo server CPU (share of one core)", format!("{share:.2}")));
        }
        if let Some(share) = self.loadgen_cpu_core_share {
            rows.push(("load generator CPU during echo", format!("{share:.2}")));
        }
        let share = format!("{:.1} %", self.moves_share_of_echo * 100.0);
        rows.push(("moves/s as share of echo", share));
        if !self.errors.is_empty() {
            let total = self.errors.values().sum();
            rows.push(("echo errors", errors(total, &self.errors)));
        }
        rows
    }
}

fn milliseconds(summary: &Summary) -> String {
    format!(
        "{:.2} / {:.2} / {:.2} ms",
        summary.p50, summary.p99, summary.max
    )
}

fn bytes(summary: &Summary) -> String {
    format!(
        "median {:.0}, p99 {:.0} ({} frames)",
        summary.p50, summary.p99, summary.count
    )
}

fn errors(total: u64, by_kind: &BTreeMap<String, u64>) -> String {
    let kinds: Vec<String> = by_kind
        .iter()
        .map(|(kind, count)| format!("{kind}: {count}"))
        .collect();
    if kinds.is_empty() {
        total.to_string()
    } else {
        format!("{total} ({})", kinds.join(", "))
    }
}
