//! One load run from start to report: the optional baseline, the idle sockets, the game
//! slots, and the server's CPU and memory around them.

use crate::ack_log;
use crate::echo;
use crate::game::{self, Target};
use crate::idle;
use crate::process::{self, Spawned};
use crate::procfs;
use crate::protocol;
use crate::report::{BaselineReport, ProcessReport, Report};
use crate::rest::Api;
use crate::server_watch::ServerWatch;
use crate::stats::{Stats, Summary, Window};
use std::path::PathBuf;
use std::time::Duration;

/// What to run; see `carcassonne-loadgen run --help`.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub server: Option<String>,
    pub spawn_server: Option<String>,
    pub server_pid: Option<u32>,
    /// Other nodes the players are spread over (see `--spread-to`).
    pub spread_to: Vec<String>,
    pub games: usize,
    pub duration: Duration,
    pub warmup: Duration,
    /// Over how long the slots start their first games; `None` for three quarters of
    /// the warm-up.
    pub ramp: Option<Duration>,
    /// The mean think time before each command (0: flat out).
    pub think: Duration,
    /// Games set up per second at most over all slots (0: no limit).
    pub setup_rate: f64,
    /// Loopback source addresses the players' sockets are spread over.
    pub source_addresses: u8,
    pub idle: usize,
    pub baseline: bool,
    pub seed: u64,
    /// Where to write the ack log (see `ack_log`).
    pub ack_log: Option<PathBuf>,
}

impl RunOptions {
    /// The warm-up, at most a quarter of the run so that a short run still measures.
    fn warmup(&self) -> Duration {
        self.warmup.min(self.duration / 4)
    }

    /// Over how long the slots start their first games: at most the warm-up, so that
    /// every slot plays through the measured window, and nothing for a single slot.
    fn ramp(&self) -> Duration {
        match self.games {
            0 | 1 => Duration::ZERO,
            _ => self
                .ramp
                .unwrap_or(self.warmup() * 3 / 4)
                .min(self.warmup()),
        }
    }

    /// How long each slot starts after the one before it: the first slot at once, the
    /// last at the end of the ramp.
    fn ramp_step(&self) -> Duration {
        self.ramp() / self.games.saturating_sub(1).max(1) as u32
    }
}

/// How long the server is left to settle after the idle sockets open, before its RSS is
/// read again.
const SETTLE: Duration = Duration::from_millis(500);

/// How long opening the idle sockets may take: a server that stops answering must not
/// hold the run forever.
const IDLE_OPENING_PATIENCE: Duration = Duration::from_secs(120);

pub async fn run(options: &RunOptions) -> Result<Report, String> {
    let spawned = match &options.spawn_server {
        Some(command_line) => Some(process::spawn_server(command_line).await?),
        None => None,
    };
    let server = match (&spawned, &options.server) {
        (Some(spawned), _) => spawned.address.to_string(),
        (None, Some(server)) => server.clone(),
        (None, None) => return Err("give --server or --spawn-server".into()),
    };
    let pid = spawned.as_ref().map(|s| s.pid).or(options.server_pid);
    let baseline = match options.baseline {
        true => Some(run_baseline(options).await?),
        false => None,
    };
    let mut report = run_games(options, &server, pid).await?;
    if let Some(mut baseline) = baseline {
        baseline.moves_share_of_echo =
            report.moves_per_second / baseline.echo_round_trips_per_second.max(1.0);
        report.baseline = Some(baseline);
    }
    drop(spawned);
    Ok(report)
}

/// Opens the idle sockets, then plays the games for the duration (or until the server is
/// lost) while measuring.
async fn run_games(options: &RunOptions, server: &str, pid: Option<u32>) -> Result<Report, String> {
    let api = Api::new(server);
    let (ack_log, ack_log_writer) = match &options.ack_log {
        Some(path) => ack_log::create(path).map(|(log, writer)| (Some(log), Some(writer)))?,
        None => (None, None),
    };
    let (idle, rss_per_idle) = open_idle(options, server, &api, pid).await?;
    let planned = Window::after_warmup(options.warmup(), options.duration);
    let watch = ServerWatch::new(server);
    let target = Target {
        nodes: std::iter::once(server.to_owned())
            .chain(options.spread_to.iter().cloned())
            .collect(),
        api,
        seed: options.seed,
        ack_log,
        watch: watch.clone(),
        ramp_step: options.ramp_step(),
        think: options.think,
        setups: game::SetupPace::new(options.setup_rate),
        source_addresses: options.source_addresses,
    };
    let mut played = play_slots(options.games, target, planned, pid).await;
    if let Some(idle) = idle {
        played.stats.merge(&idle.close().await);
    }
    if let Some(writer) = ack_log_writer {
        writer.finish().await?;
    }
    let window = planned.until(watch.lost_at());
    let mut report = build_report(options, server, window, &played.stats);
    report.server_lost_after_seconds = watch
        .lost_at()
        .map(|lost| (lost - (planned.end - options.duration)).as_secs_f64());
    let cpu = played.cpu_seconds;
    report.server_process = process_report(pid, cpu, played.rss_end, rss_per_idle, &report, window);
    report.loadgen_cpu_core_share = played.own_cpu_seconds.map(|s| s / window.seconds());
    report.load_average_at_start = played.load_average;
    Ok(report)
}

/// What the game slots measured, and the processes' CPU and memory meanwhile.
struct Played {
    stats: Stats,
    cpu_seconds: Option<f64>,
    own_cpu_seconds: Option<f64>,
    rss_end: Option<u64>,
    load_average: Option<f64>,
}

/// Runs `games` slots until the window closes or the server is lost, and waits for all.
async fn play_slots(games: usize, target: Target, window: Window, pid: Option<u32>) -> Played {
    let watch = target.watch.clone();
    let slots: Vec<_> = (0..games as u64)
        .map(|slot| tokio::spawn(game::run_slot(target.clone(), slot, window)))
        .collect();
    // Once the slots end, nothing holds the ack log open: its writer can finish.
    drop(target);
    let load_average = procfs::load_average();
    let (cpu_seconds, own_cpu_seconds) = tokio::join!(
        cpu_over(pid, window, &watch),
        cpu_over(Some(std::process::id()), window, &watch)
    );
    let rss_end = pid.and_then(|pid| procfs::rss_bytes(pid).ok());
    let mut stats = Stats::default();
    for slot in slots {
        match slot.await {
            Ok(slot_stats) => stats.merge(&slot_stats),
            Err(_) => stats.error("slot panicked"),
        }
    }
    Played {
        stats,
        cpu_seconds,
        own_cpu_seconds,
        rss_end,
        load_average,
    }
}

/// Opens the idle sockets, if any, and measures the server's RSS before and after.
async fn open_idle(
    options: &RunOptions,
    server: &str,
    api: &Api,
    pid: Option<u32>,
) -> Result<(Option<idle::IdleSockets>, Option<f64>), String> {
    if options.idle == 0 {
        return Ok((None, None));
    }
    let rss_before = pid.and_then(|pid| procfs::rss_bytes(pid).ok());
    let opening = idle::open(server, api, options.idle);
    let idle = tokio::time::timeout(IDLE_OPENING_PATIENCE, opening)
        .await
        .map_err(|_| "the idle sockets did not open within 2 minutes".to_owned())??;
    tokio::time::sleep(SETTLE).await;
    Ok((Some(idle), per_idle_socket(pid, rss_before, options.idle)))
}

/// The RSS the idle sockets added, in KiB per socket.
fn per_idle_socket(pid: Option<u32>, before: Option<u64>, count: usize) -> Option<f64> {
    let after = procfs::rss_bytes(pid?).ok()?;
    Some((after as f64 - before? as f64) / 1024.0 / count as f64)
}

/// The process's CPU seconds between the window's start and end (waiting for both), or
/// until the server is lost.
async fn cpu_over(pid: Option<u32>, window: Window, watch: &ServerWatch) -> Option<f64> {
    tokio::select! {
        () = tokio::time::sleep_until(window.start.into()) => {}
        () = watch.lost() => return None,
    }
    let start = pid.and_then(|pid| procfs::cpu_seconds(pid).ok());
    tokio::select! {
        () = tokio::time::sleep_until(window.end.into()) => {}
        () = watch.lost() => {}
    }
    let end = pid.and_then(|pid| procfs::cpu_seconds(pid).ok());
    Some(end? - start?)
}

fn build_report(options: &RunOptions, server: &str, window: Window, stats: &Stats) -> Report {
    Report {
        server: server.to_owned(),
        games: options.games,
        idle_sockets: options.idle,
        duration_seconds: options.duration.as_secs_f64(),
        warmup_seconds: options.warmup().as_secs_f64(),
        ramp_seconds: options.ramp().as_secs_f64(),
        window_seconds: window.seconds(),
        setup_seconds: stats
            .all_started_at
            .map(|started| (started - (window.end - options.duration)).as_secs_f64()),
        moves_acked: stats.acked,
        moves_per_second: per_second(stats.acked, window),
        moves_acked_whole_run: stats.acked_whole_run,
        commands_unanswered: stats.unanswered,
        games_finished: stats.games_finished,
        ack_latency_ms: Summary::of(&stats.ack_latency_us, 0.001),
        update_bytes_with_legal_moves: Summary::of(&stats.update_bytes_with_moves, 1.0),
        update_bytes_without_legal_moves: Summary::of(&stats.update_bytes_without_moves, 1.0),
        patch_bytes_median: Summary::of(&stats.patch_bytes, 1.0).p50,
        errors: stats.errors.clone(),
        error_total: stats.error_total(),
        server_process: None,
        loadgen_cpu_core_share: None,
        load_average_at_start: None,
        baseline: None,
        server_lost_after_seconds: None,
    }
}

/// `count` per second of the window; 0 for a window cut down to nothing.
fn per_second(count: u64, window: Window) -> f64 {
    let seconds = window.seconds();
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    }
}

fn process_report(
    pid: Option<u32>,
    cpu_seconds: Option<f64>,
    rss_end: Option<u64>,
    rss_per_idle: Option<f64>,
    report: &Report,
    window: Window,
) -> Option<ProcessReport> {
    let cpu_seconds = cpu_seconds?;
    let moves = report.moves_acked;
    Some(ProcessReport {
        pid: pid?,
        cpu_core_share: cpu_seconds / window.seconds(),
        cpu_microseconds_per_move: (moves > 0).then(|| cpu_seconds * 1e6 / moves as f64),
        rss_mib_at_end: rss_end? as f64 / (1024.0 * 1024.0),
        rss_kib_per_idle_socket: rss_per_idle,
    })
}

/// Echo ping-pong over as many connections as the games use, for the same duration.
async fn run_baseline(options: &RunOptions) -> Result<BaselineReport, String> {
    let echo_server: Spawned = process::spawn_echo().await?;
    let frame = protocol::sample_command_text();
    let connections = options.games * 2;
    let window = Window::after_warmup(options.warmup(), options.duration);
    let address = echo_server.address.to_string();
    let clients = echo::ping_pong(&address, connections, &frame, window);
    // The echo server is never checked, so never found lost: the baseline runs its course.
    let watch = ServerWatch::new(&address);
    let (stats, cpu_seconds, own_cpu_seconds) = tokio::join!(
        clients,
        cpu_over(Some(echo_server.pid), window, &watch),
        cpu_over(Some(std::process::id()), window, &watch)
    );
    drop(echo_server);
    Ok(BaselineReport {
        connections,
        frame_bytes: frame.len(),
        echo_round_trips_per_second: stats.acked as f64 / window.seconds(),
        echo_round_trip_ms: Summary::of(&stats.ack_latency_us, 0.001),
        echo_cpu_core_share: cpu_seconds.map(|seconds| seconds / window.seconds()),
        loadgen_cpu_core_share: own_cpu_seconds.map(|seconds| seconds / window.seconds()),
        moves_share_of_echo: 0.0,
        errors: stats.errors.clone(),
    })
}
