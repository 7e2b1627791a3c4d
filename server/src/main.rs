//! `carcassonne-server`: `serve` (the default) runs the game server; `replay` checks a
//! game record.

use carcassonne_server::config::{Config, Limits};
use clap::{Args, Parser, Subcommand};
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
#[command(
    name = "carcassonne-server",
    version,
    about = "The authoritative Carcassonne game server."
)]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Run the game server (the default when no subcommand is given).
    Serve(ServeArgs),
    /// Replay a game record through the rules engine and print turn-by-turn scores.
    /// Exit status: 0 legal, 1 an illegal turn, 2 a malformed record.
    Replay(ReplayArgs),
}

#[derive(Args, Clone)]
struct ServeArgs {
    /// Address and port to listen on.
    #[arg(long, env = "LISTEN_ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Database: `postgres://USER@HOST/DB`, or `sqlite://FILE` (created on first run).
    #[arg(long, env = "DATABASE_URL", default_value = "sqlite://carcassonne.db")]
    database: String,
    /// Most WebSocket connections open at once; more are refused with 503.
    #[arg(long, env = "MAX_CONNECTIONS", default_value_t = Limits::default().max_connections)]
    max_connections: usize,
    /// Largest WebSocket message accepted, in bytes; larger ones close the connection.
    #[arg(long, env = "MAX_MESSAGE_BYTES", default_value_t = Limits::default().max_message_bytes)]
    max_message_bytes: usize,
    /// Sustained WebSocket messages per second allowed per connection.
    #[arg(long, env = "MESSAGES_PER_SECOND", default_value_t = Limits::default().messages_per_second)]
    messages_per_second: u32,
    /// Messages a connection may send in one burst.
    #[arg(long, env = "MESSAGE_BURST", default_value_t = Limits::default().message_burst)]
    message_burst: u32,
}

#[derive(Args)]
struct ReplayArgs {
    /// The game record (JSON), or `-` for standard input.
    file: PathBuf,
    /// Also list every legal placement of each turn's tile.
    #[arg(long)]
    legal: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Replay(args)) => replay(args),
        Some(Command::Serve(args)) => serve(args),
        None => serve(cli.serve),
    }
}

fn replay(args: ReplayArgs) -> ExitCode {
    let output = carcassonne_server::replay::run(&args.file, args.legal);
    println!("{}", output.stdout);
    if let Some(message) = output.message {
        eprintln!("{message}");
    }
    ExitCode::from(output.exit_code)
}

fn serve(args: ServeArgs) -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,tower_http=warn,sqlx=warn".into()),
        )
        .init();
    let limits = Limits {
        max_connections: args.max_connections,
        max_message_bytes: args.max_message_bytes,
        messages_per_second: args.messages_per_second,
        message_burst: args.message_burst,
        ..Limits::default()
    };
    let config = Config {
        database_url: args.database,
        limits,
    };
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    match runtime.block_on(serve_until_signal(args.listen, config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(%error, "the server stopped");
            ExitCode::FAILURE
        }
    }
}

async fn serve_until_signal(
    address: SocketAddr,
    config: Config,
) -> Result<(), carcassonne_server::ServeError> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    carcassonne_server::run(listener, config, shutdown).await
}

/// Cancels `shutdown` on SIGTERM or Ctrl-C.
async fn cancel_on_signal(shutdown: CancellationToken) {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("a SIGTERM handler");
    tokio::select! {
        _ = terminate.recv() => tracing::info!("SIGTERM: draining"),
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupt: draining"),
    }
    shutdown.cancel();
}
