//! The server under test: the real binary, started on a free port.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Where cargo put the server binary: next to this test executable's `deps` folder,
/// unless `CARCASSONNE_SERVER_BIN` says otherwise.
pub fn server_binary() -> PathBuf {
    if let Ok(path) = std::env::var("CARCASSONNE_SERVER_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let binary = profile_dir.join("carcassonne-server");
    assert!(
        binary.exists(),
        "{} is missing: run the tests with `cargo test --workspace` (which builds it) \
         or build it with `cargo build -p carcassonne-server`",
        binary.display()
    );
    assert_not_stale(&binary);
    binary
}

/// Fails when a source of the server is newer than the binary: testing yesterday's server
/// passes or fails for the wrong reasons. (`cargo test -p carcassonne-tests` alone does
/// not rebuild it; `cargo test --workspace` does.)
fn assert_not_stale(binary: &std::path::Path) {
    let built = std::fs::metadata(binary)
        .and_then(|m| m.modified())
        .expect("the binary's time");
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for dir in [
        "core/src",
        "core/data",
        "store/src",
        "server/src",
        "server/web",
        "migrations",
    ] {
        if let Some(newer) = newest_file(&workspace.join(dir)).filter(|(time, _)| *time > built) {
            panic!(
                "{} is older than {}: rebuild it with `cargo build -p carcassonne-server` \
                 (with --release for release tests), or run `cargo test --workspace`",
                binary.display(),
                newer.1.display()
            );
        }
    }
}

fn newest_file(dir: &std::path::Path) -> Option<(std::time::SystemTime, PathBuf)> {
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let candidate = if path.is_dir() {
            newest_file(&path)
        } else {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .map(|time| (time, path))
        };
        if let Some(candidate) = candidate
            && newest.as_ref().is_none_or(|(time, _)| candidate.0 > *time)
        {
            newest = Some(candidate);
        }
    }
    newest
}

pub struct TestServer {
    child: Child,
    pub address: SocketAddr,
    log: Arc<Mutex<String>>,
}

impl TestServer {
    /// Starts a server with the default limits: scripted clients that play as fast as
    /// they can must never be cut off by them.
    pub async fn start(database_url: &str) -> TestServer {
        TestServer::start_with(database_url, &[]).await
    }

    /// Starts a server whose WebSocket rate limit lets a client send rejected commands
    /// as fast as it can: for tests that probe many illegal moves on purpose, which the
    /// default limit (rightly) treats as a flood.
    pub async fn start_without_rate_limit(database_url: &str) -> TestServer {
        let unlimited = [
            "--messages-per-second",
            "1000000",
            "--message-burst",
            "1000000",
        ];
        TestServer::start_with(database_url, &unlimited).await
    }

    /// Starts the server with extra command-line options and waits until it listens.
    pub async fn start_with(database_url: &str, options: &[&str]) -> TestServer {
        let mut child = serve_command(database_url, options)
            .env(
                "RUST_LOG",
                std::env::var("E2E_SERVER_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the server binary starts");
        let log = Arc::new(Mutex::new(String::new()));
        let mut lines = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
        let address = tokio::time::timeout(Duration::from_secs(60), async {
            while let Ok(Some(line)) = lines.next_line().await {
                log.lock().unwrap().push_str(&format!("{line}\n"));
                if let Some(address) = listening_address(&line) {
                    return address;
                }
            }
            panic!(
                "the server exited before listening:\n{}",
                log.lock().unwrap()
            );
        })
        .await
        .unwrap_or_else(|_| {
            panic!(
                "the server did not listen within 60 s:\n{}",
                log.lock().unwrap()
            )
        });
        let sink = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                sink.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        TestServer {
            child,
            address,
            log,
        }
    }

    /// Runs the server with these options, expecting it to refuse to start: returns its
    /// exit status and everything it logged.
    pub async fn refused_start(database_url: &str, options: &[&str]) -> (ExitStatus, String) {
        let output = serve_command(database_url, options)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(Duration::from_secs(60), output)
            .await
            .expect("the server gives up within 60 s")
            .expect("the server binary runs");
        let log = String::from_utf8_lossy(&output.stderr).into_owned();
        (output.status, log)
    }

    pub fn http(&self) -> String {
        format!("http://{}", self.address)
    }

    pub fn ws_url(&self, game: &str) -> String {
        format!("ws://{}/ws/games/{game}", self.address)
    }

    /// Everything the server has logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// SIGSTOP: the process is frozen where it stands, its sockets open, as a node is in
    /// a long garbage-collection pause, a swap storm or a migrating virtual machine.
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
    }

    /// SIGCONT: a paused process carries on from where it stood.
    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    fn signal(&self, signal: libc::c_int) {
        let pid = self.child.id().expect("a running server") as libc::pid_t;
        // SAFETY: sending a signal to our own child process has no memory effects.
        unsafe { libc::kill(pid, signal) };
    }

    /// SIGKILL: the process dies at once, mid-whatever.
    pub async fn kill(mut self) {
        self.child.kill().await.expect("kill the server");
    }

    /// SIGTERM, then waits for the process to drain and exit.
    pub async fn terminate(self) -> ExitStatus {
        self.terminate_within(Duration::from_secs(30)).await.0
    }

    /// SIGTERM, then waits at most `bound` for the process to drain and exit; returns
    /// its exit status and everything it logged.
    pub async fn terminate_within(mut self, bound: Duration) -> (ExitStatus, String) {
        let pid = self.child.id().expect("a running server") as libc::pid_t;
        // SAFETY: sending a signal to our own child process has no memory effects.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let exited = tokio::time::timeout(bound, self.child.wait()).await;
        let status = exited.unwrap_or_else(|_| {
            panic!(
                "the server did not exit within {bound:?} of SIGTERM:\n{}",
                self.log()
            )
        });
        // The log reader sees the end of the stream just after the exit.
        tokio::time::sleep(Duration::from_millis(100)).await;
        (status.expect("wait for the server"), self.log())
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        // A failing test shows what the server said, which is usually where the cause is;
        // `E2E_PRINT_SERVER_LOG` shows it for a passing one too.
        if std::thread::panicking() || std::env::var_os("E2E_PRINT_SERVER_LOG").is_some() {
            eprintln!(
                "--- server log ---\n{}--- end of server log ---",
                self.log()
            );
        }
    }
}

/// `carcassonne-server serve` on a free port of 127.0.0.1, on `database_url`, with `options`.
fn serve_command(database_url: &str, options: &[&str]) -> Command {
    let mut command = Command::new(server_binary());
    command
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--database",
            database_url,
        ])
        .args(options);
    command
}

/// The address in the "listening" log line, written as text (`address=...`) or JSON
/// (`"address":"..."`).
fn listening_address(line: &str) -> Option<SocketAddr> {
    if !line.contains("listening") {
        return None;
    }
    if let Some(start) = line.find("address=") {
        return line[start + "address=".len()..]
            .split_whitespace()
            .next()?
            .parse()
            .ok();
    }
    let start = line.find("\"address\":\"")? + "\"address\":\"".len();
    line[start..].split('"').next()?.parse().ok()
}
