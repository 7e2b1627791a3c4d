//! A TCP proxy the test controls, to take a database away from the server and give it
//! back without touching the database itself (other tests share it), to lose the reply
//! to one transaction's COMMIT (the write lands but the server cannot know it), to hold
//! one COMMIT back until after the server gave up on it (the write lands later, as when
//! a frozen network thaws), to freeze all traffic (a black hole: connections stay open
//! and nothing answers) and thaw it, or to slow every reply down, as a distant or
//! overloaded database would.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// A Postgres simple-query message carrying `COMMIT`: type `Q`, a 4-byte big-endian
/// length (4 + 7), then the text and its NUL. This is how sqlx ends a transaction.
const COMMIT_QUERY: &[u8] = b"Q\x00\x00\x00\x0bCOMMIT\x00";

pub struct TcpProxy {
    pub port: u16,
    target: SocketAddr,
    /// The forwarding task, and how to tell it to stop.
    accepting: Option<(JoinHandle<()>, watch::Sender<bool>)>,
    faults: Faults,
}

/// What the proxy does to the traffic, shared by every connection it forwards.
#[derive(Clone)]
struct Faults {
    lose_commit_reply: Arc<AtomicBool>,
    /// When set: the COMMIT of the next transaction whose statements carry its marker
    /// is held back, its client cut off at once, and then delivered.
    held_commit: Arc<Mutex<Option<HeldCommit>>>,
    /// Milliseconds each chunk of the database's replies is held before it goes on.
    reply_delay_ms: Arc<AtomicU64>,
    /// While true, nothing is passed on either way; what was read waits for the thaw.
    frozen: Arc<watch::Sender<bool>>,
}

/// A COMMIT to hold back: that of the transaction whose statements carry `marker`.
struct HeldCommit {
    marker: Vec<u8>,
    hold: Duration,
}

impl Faults {
    /// How long to hold `chunk` back, when it is the armed COMMIT: the COMMIT of a
    /// transaction one of whose earlier chunks (`marked`) carried the marker.
    fn commit_to_hold(&self, chunk: &[u8], is_commit: bool, marked: &mut bool) -> Option<Duration> {
        let mut held = self.held_commit.lock().unwrap();
        let marker = &held.as_ref()?.marker;
        if chunk.windows(marker.len()).any(|w| w == marker.as_slice()) {
            *marked = true;
        }
        if !(is_commit && *marked) {
            return None;
        }
        held.take().map(|held| held.hold)
    }

    /// Waits until the traffic is not frozen.
    async fn thawed(&self) {
        let mut frozen = self.frozen.subscribe();
        let _ = frozen.wait_for(|frozen| !frozen).await;
    }
}

impl TcpProxy {
    /// Forwards a new local port to `target`.
    pub async fn start(target: SocketAddr) -> TcpProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a local port");
        let port = listener.local_addr().unwrap().port();
        let faults = Faults {
            lose_commit_reply: Arc::default(),
            held_commit: Arc::default(),
            reply_delay_ms: Arc::default(),
            frozen: Arc::new(watch::channel(false).0),
        };
        TcpProxy {
            port,
            target,
            accepting: Some(start_forwarding(listener, target, faults.clone())),
            faults,
        }
    }

    /// The next COMMIT that passes reaches the database, but its connection is then cut
    /// before the reply comes back, as when a network fails at the worst moment.
    pub fn lose_next_commit_reply(&self) {
        self.faults.lose_commit_reply.store(true, Ordering::SeqCst);
    }

    /// Whether the armed COMMIT has passed (and its reply been lost).
    pub fn commit_reply_lost(&self) -> bool {
        !self.faults.lose_commit_reply.load(Ordering::SeqCst)
    }

    /// The COMMIT of the next transaction whose statements carry `marker` (a command id,
    /// say; other transactions, such as the matchmaker's, pass) is held back: its
    /// connection is cut on the client's side at once (the client hears of a lost
    /// connection, the outcome unknown to it), and the COMMIT reaches the database `hold`
    /// later and takes effect then, after the client has read back what is stored and
    /// found nothing. Keep `hold` below the database's idle-in-transaction timeout (the
    /// server's operation timeout), or the database rolls the write back.
    pub fn land_commit_late(&self, marker: &str, hold: Duration) {
        let held = HeldCommit {
            marker: marker.as_bytes().to_vec(),
            hold,
        };
        *self.faults.held_commit.lock().unwrap() = Some(held);
    }

    /// Whether the COMMIT armed by [`TcpProxy::land_commit_late`] has come.
    pub fn late_commit_taken(&self) -> bool {
        self.faults.held_commit.lock().unwrap().is_none()
    }

    /// Passes nothing on, either way, until [`TcpProxy::thaw`]: every connection stays
    /// open and silent, as behind a network that drops packets or a frozen host.
    pub fn freeze(&self) {
        self.faults.frozen.send_replace(true);
    }

    /// Passes on what waited, and everything after it.
    pub fn thaw(&self) {
        self.faults.frozen.send_replace(false);
    }

    /// Holds every reply of the database for `delay` before passing it on (zero: none).
    pub fn delay_replies(&self, delay: Duration) {
        let millis = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.faults.reply_delay_ms.store(millis, Ordering::SeqCst);
    }

    /// Cuts every open connection and refuses new ones, as a lost database would; every
    /// forwarded socket is closed when this returns (an abort alone would close them
    /// whenever the runtime next ran their tasks, and a busy machine let a write through
    /// after the cut).
    pub async fn cut(&mut self) {
        if let Some((task, stop)) = self.accepting.take() {
            let _ = stop.send(true);
            let _ = task.await;
        }
    }

    /// Forwards again on the same port.
    pub async fn restore(&mut self) {
        let listener = TcpListener::bind(("127.0.0.1", self.port))
            .await
            .expect("the same port again");
        self.accepting = Some(start_forwarding(listener, self.target, self.faults.clone()));
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        if let Some((task, _)) = self.accepting.take() {
            task.abort();
        }
    }
}

fn start_forwarding(
    listener: TcpListener,
    target: SocketAddr,
    faults: Faults,
) -> (JoinHandle<()>, watch::Sender<bool>) {
    let (stop, stopped) = watch::channel(false);
    (
        tokio::spawn(forward(listener, target, faults, stopped)),
        stop,
    )
}

/// Accepts connections and pipes each to `target` until told to stop; then ends every
/// connection and waits for them, so that their sockets are closed when it returns.
async fn forward(
    listener: TcpListener,
    target: SocketAddr,
    faults: Faults,
    mut stop: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        let inbound = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((inbound, _)) => inbound,
                Err(_) => continue,
            },
            _ = stop.changed() => break,
        };
        let faults = faults.clone();
        connections.spawn(async move {
            if let Ok(outbound) = TcpStream::connect(target).await {
                pipe(inbound, outbound, faults).await;
            }
        });
    }
    connections.shutdown().await;
}

/// What ends the forwarding of a connection before either side closed it.
enum Cut {
    /// A COMMIT went on, and its reply must not come back.
    CommitReplyLost(tokio::net::tcp::OwnedWriteHalf),
    /// A COMMIT is held back from the database for `hold`.
    CommitHeld {
        database: tokio::net::tcp::OwnedWriteHalf,
        commit: Vec<u8>,
        hold: Duration,
    },
}

/// Pipes one connection both ways, in one task so that ending the task closes both
/// sockets. When armed, a COMMIT from the client is passed on, its reply is not, and the
/// connection is dropped once the COMMIT had time to take effect; or a COMMIT is held
/// back, the client cut off, and the COMMIT passed on later.
async fn pipe(inbound: TcpStream, outbound: TcpStream, faults: Faults) {
    let (mut client_read, mut client_write) = inbound.into_split();
    let (mut server_read, mut server_write) = outbound.into_split();
    let reply_faults = faults.clone();
    let replies = async move {
        let mut buffer = vec![0u8; 64 * 1024];
        while let Ok(read) = server_read.read(&mut buffer).await {
            reply_faults.thawed().await;
            let millis = reply_faults.reply_delay_ms.load(Ordering::SeqCst);
            if millis > 0 {
                tokio::time::sleep(Duration::from_millis(millis)).await;
            }
            if read == 0 || client_write.write_all(&buffer[..read]).await.is_err() {
                break;
            }
        }
    };
    let requests = async move {
        let mut buffer = vec![0u8; 64 * 1024];
        // Whether this connection's transaction carried the held COMMIT's marker.
        let mut marked = false;
        while let Ok(read) = client_read.read(&mut buffer).await {
            faults.thawed().await;
            let chunk = &buffer[..read];
            let is_commit = chunk.windows(COMMIT_QUERY.len()).any(|w| w == COMMIT_QUERY);
            if let Some(hold) = faults.commit_to_hold(chunk, is_commit, &mut marked) {
                return Some(Cut::CommitHeld {
                    database: server_write,
                    commit: chunk.to_vec(),
                    hold,
                });
            }
            if read == 0 || server_write.write_all(chunk).await.is_err() {
                return None;
            }
            if is_commit && faults.lose_commit_reply.swap(false, Ordering::SeqCst) {
                // Holds the database's side open while the COMMIT takes effect.
                return Some(Cut::CommitReplyLost(server_write));
            }
        }
        None
    };
    let cut = tokio::select! {
        () = replies => None,
        cut = requests => cut,
    };
    // The client's side is gone with the futures that held it: nothing more reaches the
    // client, and it hears that its connection closed.
    match cut {
        None => {}
        Some(Cut::CommitReplyLost(_database_side)) => {
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        Some(Cut::CommitHeld {
            mut database,
            commit,
            hold,
        }) => {
            tokio::time::sleep(hold).await;
            if database.write_all(&commit).await.is_ok() {
                // Holds the database's side open while the COMMIT takes effect.
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
    }
}
