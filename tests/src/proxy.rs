//! A TCP proxy the test controls, to take a database away from the server and give it
//! back without touching the database itself (other tests share it), to lose the reply
//! to one transaction's COMMIT (the write lands but the server cannot know it), or to
//! slow every reply down, as a distant or overloaded database would.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
#[derive(Clone, Default)]
struct Faults {
    lose_commit_reply: Arc<AtomicBool>,
    /// Milliseconds each chunk of the database's replies is held before it goes on.
    reply_delay_ms: Arc<AtomicU64>,
}

impl TcpProxy {
    /// Forwards a new local port to `target`.
    pub async fn start(target: SocketAddr) -> TcpProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a local port");
        let port = listener.local_addr().unwrap().port();
        let faults = Faults::default();
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

/// Pipes one connection both ways, in one task so that ending the task closes both
/// sockets. When armed, a COMMIT from the client is passed on, its reply is not, and the
/// connection is dropped once the COMMIT had time to take effect.
async fn pipe(inbound: TcpStream, outbound: TcpStream, faults: Faults) {
    let (mut client_read, mut client_write) = inbound.into_split();
    let (mut server_read, mut server_write) = outbound.into_split();
    let delay = faults.reply_delay_ms.clone();
    let replies = async move {
        let mut buffer = vec![0u8; 64 * 1024];
        while let Ok(read) = server_read.read(&mut buffer).await {
            let millis = delay.load(Ordering::SeqCst);
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
        while let Ok(read) = client_read.read(&mut buffer).await {
            if read == 0 || server_write.write_all(&buffer[..read]).await.is_err() {
                return None;
            }
            let chunk = &buffer[..read];
            let is_commit = chunk.windows(COMMIT_QUERY.len()).any(|w| w == COMMIT_QUERY);
            if is_commit && faults.lose_commit_reply.swap(false, Ordering::SeqCst) {
                // Holds the database's side open while the COMMIT takes effect.
                return Some(server_write);
            }
        }
        None
    };
    let lost_reply = tokio::select! {
        () = replies => None,
        kept = requests => kept,
    };
    // The replies' half is gone with its future: nothing more reaches the client.
    if let Some(_database_side) = lost_reply {
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
