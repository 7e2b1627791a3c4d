//! The `carcassonne-loadgen` command line: `run` a load against a server, weigh its
//! `memory`, time its `restart`, or serve the baseline's WebSocket `echo`.

use carcassonne_loadgen::memory::{self, MemoryOptions};
use carcassonne_loadgen::restart::{self, RestartOptions};
use carcassonne_loadgen::run::{RunOptions, run};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// mimalloc instead of the system allocator, as in the server: the load generator shares
/// the machine's cores with the server it measures, so its own allocations' cost is taken
/// from the server's share.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The exit status of a run that ended early because the server was lost (nothing
/// listened at its address any more); its report is printed all the same.
const SERVER_LOST: u8 = 2;

/// Shown after `--help`: a load run from one machine trips the server's per-IP limits.
const LIMITS_HELP: &str = "\
The server's limits are per client IP and all of the load comes from one, so a load run
needs them lifted. Start the server for example with

  carcassonne-server serve --database URL \\
      --messages-per-second 1000000 --message-burst 1000000 \\
      --requests-per-second 1000000 --request-burst 1000000 \\
      --max-open-lobbies 100000 --max-open-lobbies-per-client 100000 \\
      --max-connections-per-ip 0 --max-pending-connections-per-ip 0 \\
      --max-pending-connections 100000 --max-connections 100000 \\
      --max-tcp-connections 100000

or give the same arguments to --spawn-server. See docs/performance.md, \"Load generator\".

Exit status: 0 after a run, 1 when it could not be run, 2 when the server was lost
mid-run (the run then stops at once and still prints its report).";

#[derive(Parser)]
#[command(name = "carcassonne-loadgen", version, about, after_help = LIMITS_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Play M 2-player games at once against a server for a while, and report.
    #[command(after_help = LIMITS_HELP)]
    Run(RunArgs),
    /// Measure what a live game and an open connection cost the server in memory (RSS
    /// deltas over many of them); see docs/performance.md, "Memory".
    #[command(after_help = LIMITS_HELP)]
    Memory(MemoryArgs),
    /// Kill a server with many unfinished games (SIGKILL), start it again, and time how
    /// soon it listens, is ready and moves; see docs/performance.md, "A restart".
    #[command(after_help = LIMITS_HELP)]
    Restart(RestartArgs),
    /// Serve WebSocket echo (the baseline's server); prints `listening ADDRESS`.
    Echo {
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: String,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// The server's address, HOST:PORT.
    #[arg(long, required_unless_present = "spawn_server")]
    server: Option<String>,
    /// Start the server as "BINARY ARGS..." (with `--listen 127.0.0.1:0` added) and measure it.
    #[arg(long, conflicts_with_all = ["server", "server_pid"])]
    spawn_server: Option<String>,
    /// The server's process id, to read its CPU and memory from /proc.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Other nodes of the same cluster (HOST:PORT, repeatable): each game's two players
    /// connect to two different nodes (slot N: node N and node N+1, counting `--server`
    /// as node 0), so every move crosses from one node to another.
    #[arg(long = "spread-to", value_name = "HOST:PORT")]
    spread_to: Vec<String>,
    /// Games played at once (each ended game is replaced by a new one).
    #[arg(long, default_value_t = 1)]
    games: usize,
    /// How long to play, warm-up included.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Measured after this long (at most a quarter of the duration); it should cover the
    /// set-up of the first games, which the report gives ("all games started after").
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    warmup: Duration,
    /// The slots start their first games one after another, evenly over this long
    /// (default: three quarters of the warm-up, which leaves the rest for the last
    /// set-ups), so that games end at different moments, as on a server whose players
    /// come and go. 0s starts them all at once; since every game lasts about as long,
    /// they then end together, wave after wave. At most the warm-up.
    #[arg(long, value_parser = humantime::parse_duration)]
    ramp: Option<Duration>,
    /// Human pace: each player thinks this long on average before each command (a
    /// uniform draw between half and one and a half times it). 0s plays flat out.
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    think: Duration,
    /// At most this many new games set up per second over all slots (0: no limit), as
    /// players arriving rather than all at once.
    #[arg(long, default_value_t = 0.0)]
    setup_rate: f64,
    /// Open the players' sockets from this many loopback addresses (127.0.0.1,
    /// 127.0.0.2, ...) when one address's ephemeral ports would run short: about 28,000
    /// sockets to one server port per source address.
    #[arg(long, default_value_t = 1)]
    source_addresses: u8,
    /// Idle spectator sockets held open through the run.
    #[arg(long, default_value_t = 0)]
    idle: usize,
    /// First measure a bare WebSocket echo server with the same connections.
    #[arg(long)]
    baseline: bool,
    /// Seed of the move choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Write every game started (with its seat tokens) and every move acked to FILE, one
    /// JSON line each, as they happen (for the crash test).
    #[arg(long, value_name = "FILE")]
    ack_log: Option<PathBuf>,
}

#[derive(clap::Args)]
struct MemoryArgs {
    /// Start the server as "BINARY ARGS..." (with `--listen 127.0.0.1:0` added).
    #[arg(long)]
    spawn_server: String,
    /// Games set up, and spectators connected.
    #[arg(long, default_value_t = 2000)]
    games: usize,
    /// Moves every game plays between two readings of the RSS.
    #[arg(long, default_value_t = 20)]
    moves_per_step: usize,
    /// Also measure a connection to a bare WebSocket echo server.
    #[arg(long)]
    echo: bool,
    /// After the step that brings the games to N moves (or to their end, when they end
    /// first), say so on stderr and wait 60 s: time for a heap profiler to take the
    /// server's heap there, by killing it.
    #[arg(long, value_name = "N")]
    hold_after: Option<usize>,
    /// Seed of the move choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct RestartArgs {
    /// Start the server as "BINARY ARGS..." (with `--listen 127.0.0.1:0` added), twice;
    /// its database must outlive it (Postgres, or an SQLite file).
    #[arg(long)]
    spawn_server: String,
    /// Unfinished games at the kill.
    #[arg(long, default_value_t = 10_000)]
    games: usize,
    /// Moves each game plays before the kill.
    #[arg(long, default_value_t = 10)]
    moves: usize,
    /// Games, spread over all, moved in at once right after the restart.
    #[arg(long, default_value_t = 100)]
    sample: usize,
    /// Seed of the move choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

impl RunArgs {
    fn options(&self) -> RunOptions {
        RunOptions {
            server: self.server.clone(),
            spawn_server: self.spawn_server.clone(),
            server_pid: self.server_pid,
            spread_to: self.spread_to.clone(),
            games: self.games,
            duration: self.duration,
            warmup: self.warmup,
            ramp: self.ramp,
            think: self.think,
            setup_rate: self.setup_rate,
            source_addresses: self.source_addresses.max(1),
            idle: self.idle,
            baseline: self.baseline,
            seed: self.seed,
            ack_log: self.ack_log.clone(),
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Echo { listen } => match carcassonne_loadgen::echo::serve(&listen).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => fail(&error.to_string()),
        },
        Command::Memory(args) => {
            let options = MemoryOptions {
                spawn_server: args.spawn_server,
                games: args.games,
                moves_per_step: args.moves_per_step.max(1),
                echo: args.echo,
                hold_after: args.hold_after,
                seed: args.seed,
            };
            match memory::measure(&options).await {
                Ok(report) => print_report(args.json, &report, report.table()),
                Err(error) => fail(&error),
            }
        }
        Command::Restart(args) => {
            let options = RestartOptions {
                spawn_server: args.spawn_server,
                games: args.games,
                moves: args.moves,
                sample: args.sample.max(1),
                seed: args.seed,
            };
            match restart::measure(&options).await {
                Ok(report) => print_report(args.json, &report, report.table()),
                Err(error) => fail(&error),
            }
        }
        Command::Run(args) => match run(&args.options()).await {
            Ok(report) => {
                print_report(args.json, &report, report.table());
                match report.server_lost_after_seconds {
                    Some(_) => ExitCode::from(SERVER_LOST),
                    None => ExitCode::SUCCESS,
                }
            }
            Err(error) => fail(&error),
        },
    }
}

/// Prints a report as one JSON object (`--json`), or else as its table.
fn print_report(json: bool, report: &impl serde::Serialize, table: String) -> ExitCode {
    if json {
        let text = serde_json::to_string(report).expect("a report serializes");
        println!("{text}");
    } else {
        print!("{table}");
    }
    ExitCode::SUCCESS
}

fn fail(message: &str) -> ExitCode {
    eprintln!("carcassonne-loadgen: {message}");
    ExitCode::FAILURE
}
