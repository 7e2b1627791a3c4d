//! Child processes the load generator starts itself: the game server (`--spawn-server`)
//! and the echo server of the baseline. Each listens on a port the system chooses and says
//! which in a log line; both are killed when dropped.

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};

/// A child process that listens on `address`.
pub struct Spawned {
    pub child: Child,
    pub pid: u32,
    pub address: SocketAddr,
}

/// How long a child may take to say where it listens (a server runs its migrations first).
const STARTUP_PATIENCE: Duration = Duration::from_secs(60);

/// Starts `command_line` (a program and its arguments, separated by spaces) with
/// `--listen 127.0.0.1:0` added, and waits for its "listening" log line on stderr.
pub async fn spawn_server(command_line: &str) -> Result<Spawned, String> {
    let mut words = command_line.split_whitespace();
    let program = words.next().ok_or("--spawn-server needs a program")?;
    let mut command = Command::new(program);
    command.args(words).args(["--listen", "127.0.0.1:0"]);
    if std::env::var_os("RUST_LOG").is_none() {
        // The "listening" line that gives the port is logged at the info level.
        command.env("RUST_LOG", "info");
    }
    command.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = start(command, program)?;
    let stderr = child.stderr.take().expect("a piped stderr");
    let address = read_address(stderr).await?;
    finish(child, address)
}

/// Starts this very program as `echo --listen 127.0.0.1:0` and waits for its address.
pub async fn spawn_echo() -> Result<Spawned, String> {
    let program = std::env::current_exe().map_err(|error| error.to_string())?;
    let mut command = Command::new(&program);
    command.args(["echo", "--listen", "127.0.0.1:0"]);
    command.stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut child = start(command, "the echo server")?;
    let stdout = child.stdout.take().expect("a piped stdout");
    let address = read_address(stdout).await?;
    finish(child, address)
}

fn start(mut command: Command, name: &str) -> Result<Child, String> {
    command.stdin(Stdio::null()).kill_on_drop(true);
    command
        .spawn()
        .map_err(|error| format!("cannot start {name}: {error}"))
}

fn finish(child: Child, address: SocketAddr) -> Result<Spawned, String> {
    let pid = child.id().ok_or("the child exited at once")?;
    Ok(Spawned {
        child,
        pid,
        address,
    })
}

/// Reads lines until one gives the listening address, then keeps reading (and dropping)
/// the rest in the background so that the child never blocks on a full pipe.
async fn read_address(
    output: impl AsyncRead + Unpin + Send + 'static,
) -> Result<SocketAddr, String> {
    let mut lines = BufReader::new(output).lines();
    let found = tokio::time::timeout(STARTUP_PATIENCE, async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(address) = listening_address(&line) {
                return Ok(address);
            }
        }
        Err("the child exited before listening".to_owned())
    });
    let address = found
        .await
        .map_err(|_| "the child did not listen within 60 s".to_owned())??;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(address)
}

/// The address in a "listening" line: the server's `address=ADDR` (text logs) or
/// `"address":"ADDR"` (JSON logs), or the echo server's `listening ADDR`.
pub fn listening_address(line: &str) -> Option<SocketAddr> {
    if !line.contains("listening") {
        return None;
    }
    let after = |marker: &str| line.find(marker).map(|start| &line[start + marker.len()..]);
    let rest = after("address=")
        .or_else(|| after("\"address\":\""))
        .or_else(|| after("listening "))?;
    let token = rest.split(|c: char| c.is_whitespace() || c == '"').next()?;
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_is_found_in_every_kind_of_listening_line() {
        let text =
            "2026-12-01T10:00:00Z  INFO carcassonne_server: listening address=127.0.0.1:4100";
        let json =
            r#"{"level":"INFO","fields":{"message":"listening","address":"127.0.0.1:4101"}}"#;
        let echo = "listening 127.0.0.1:4102";
        assert_eq!(
            listening_address(text),
            Some("127.0.0.1:4100".parse().unwrap())
        );
        assert_eq!(
            listening_address(json),
            Some("127.0.0.1:4101".parse().unwrap())
        );
        assert_eq!(
            listening_address(echo),
            Some("127.0.0.1:4102".parse().unwrap())
        );
        assert_eq!(listening_address("migrations applied"), None);
    }
}
