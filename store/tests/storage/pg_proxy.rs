//! A TCP proxy to Postgres that understands just enough of the wire protocol to inject
//! the faults of a real network at exact points of a transaction.
//!
//! # How it reads the protocol
//!
//! A connection starts with untyped messages: a 4-byte big-endian length (counting
//! itself) and a 4-byte code. An `SSLRequest` (code 80877103) or `GSSENCRequest`
//! (80877104) is answered `N` by the proxy itself, so the client carries on in clear text
//! and the rest stays readable whatever its `sslmode` (short of `require`); the
//! `StartupMessage` is forwarded. From then on every message, both ways, is a type byte
//! and a 4-byte length (counting itself, not the type byte), and the proxy relays whole
//! messages.
//!
//! sqlx sends transaction control (`BEGIN`, `COMMIT`, `ROLLBACK`) as simple queries: a
//! `Q` message whose body is the SQL text and a NUL byte. So a `COMMIT` is a `Q` message
//! whose text, trimmed, is `COMMIT` (in any case). The reply to a simple query ends with
//! `ReadyForQuery` (`Z`).
//!
//! # Faults
//!
//! * [`PgProxy::pause_inside_next_transaction`]: the next connection to send `BEGIN`
//!   has it forwarded, and then everything it sends or receives is held, not lost, until
//!   [`PgProxy::resume`]: a host that froze, or a network that blackholes, mid-write.
//! * [`PgProxy::lose_next_commit_reply`]: the next `COMMIT` is forwarded and executed,
//!   its reply read up to `ReadyForQuery` and thrown away, and then both sides of the
//!   connection are closed: the client cannot tell whether its write was made.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// The codes of the requests to encrypt a connection, which the proxy declines.
const SSL_REQUEST: u32 = 80_877_103;
const GSSENC_REQUEST: u32 = 80_877_104;

/// The largest message the proxy relays: far above anything the store sends.
const MAX_MESSAGE: usize = 64 << 20;

/// The faults armed for the proxy's connections, and what they did.
#[derive(Default)]
struct Faults {
    pause_inside_next_transaction: AtomicBool,
    lose_next_commit_reply: AtomicBool,
    lost_commit_replies: AtomicUsize,
    /// The hold switch of every connection opened so far, for `resume`.
    holds: Mutex<Vec<watch::Sender<bool>>>,
}

pub struct PgProxy {
    port: u16,
    faults: Arc<Faults>,
    accepting: JoinSet<()>,
}

impl PgProxy {
    /// Listens on a free local port and forwards each connection to `target`.
    pub async fn start(target: SocketAddr) -> PgProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let faults = Arc::new(Faults::default());
        let mut accepting = JoinSet::new();
        accepting.spawn(accept(listener, target, faults.clone()));
        PgProxy {
            port,
            faults,
            accepting,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Arms the freeze: see the module's documentation.
    pub fn pause_inside_next_transaction(&self) {
        self.faults
            .pause_inside_next_transaction
            .store(true, Ordering::SeqCst);
    }

    /// Lets every held connection go on, delivering what was held.
    pub fn resume(&self) {
        for hold in self.faults.holds.lock().unwrap().iter() {
            hold.send_replace(false);
        }
    }

    /// Arms the lost reply: see the module's documentation.
    pub fn lose_next_commit_reply(&self) {
        self.faults
            .lose_next_commit_reply
            .store(true, Ordering::SeqCst);
    }

    /// How many `COMMIT` replies were thrown away.
    pub fn lost_commit_replies(&self) -> usize {
        self.faults.lost_commit_replies.load(Ordering::SeqCst)
    }

    /// Stops listening and closes every connection.
    pub async fn stop(mut self) {
        self.accepting.shutdown().await;
    }
}

/// Accepts connections; dropping this task's set of connections closes them all.
async fn accept(listener: TcpListener, target: SocketAddr, faults: Arc<Faults>) {
    let mut connections = JoinSet::new();
    while let Ok((client, _)) = listener.accept().await {
        let (hold, held) = watch::channel(false);
        faults.holds.lock().unwrap().push(hold.clone());
        let connection = Connection {
            faults: faults.clone(),
            hold,
            held,
            swallow_replies: Arc::new(AtomicBool::new(false)),
        };
        connections.spawn(connection.serve(client, target));
    }
}

/// One proxied connection and its own state.
#[derive(Clone)]
struct Connection {
    faults: Arc<Faults>,
    hold: watch::Sender<bool>,
    held: watch::Receiver<bool>,
    /// Set just before a `COMMIT` whose reply must be lost is forwarded.
    swallow_replies: Arc<AtomicBool>,
}

impl Connection {
    /// Relays until either side closes, or until a lost `COMMIT` reply ends it; then
    /// both sockets are dropped.
    async fn serve(self, mut client: TcpStream, target: SocketAddr) {
        let Ok(mut server) = TcpStream::connect(target).await else {
            return;
        };
        if start_up(&mut client, &mut server).await.is_err() {
            return;
        }
        let (client_read, client_write) = client.into_split();
        let (server_read, server_write) = server.into_split();
        tokio::select! {
            _ = self.clone().client_to_server(client_read, server_write) => {}
            _ = self.server_to_client(server_read, client_write) => {}
        }
    }

    async fn client_to_server(
        mut self,
        mut from: impl AsyncRead + Unpin,
        mut to: impl AsyncWrite + Unpin,
    ) -> std::io::Result<()> {
        let mut hold_after_this = false;
        loop {
            let message = read_typed(&mut from).await?;
            self.wait_while_held().await;
            match simple_query_text(&message).as_deref() {
                Some("BEGIN") if take(&self.faults.pause_inside_next_transaction) => {
                    hold_after_this = true;
                }
                Some("COMMIT") if take(&self.faults.lose_next_commit_reply) => {
                    self.swallow_replies.store(true, Ordering::SeqCst);
                }
                _ => {}
            }
            to.write_all(&message).await?;
            if hold_after_this {
                hold_after_this = false;
                self.hold.send_replace(true);
            }
        }
    }

    async fn server_to_client(
        mut self,
        mut from: impl AsyncRead + Unpin,
        mut to: impl AsyncWrite + Unpin,
    ) -> std::io::Result<()> {
        loop {
            let message = read_typed(&mut from).await?;
            self.wait_while_held().await;
            if !self.swallow_replies.load(Ordering::SeqCst) {
                to.write_all(&message).await?;
            } else if message[0] == b'Z' {
                // The commit's whole reply has come and gone: now cut the line.
                self.faults
                    .lost_commit_replies
                    .fetch_add(1, Ordering::SeqCst);
                return Ok(());
            }
        }
    }

    async fn wait_while_held(&mut self) {
        // The sender lives as long as the proxy's list of holds, so this cannot fail
        // while the connection is served.
        let _ = self.held.wait_for(|held| !*held).await;
    }
}

/// Clears a one-shot fault, saying whether it was armed.
fn take(flag: &AtomicBool) -> bool {
    flag.swap(false, Ordering::SeqCst)
}

/// Declines encryption requests and forwards the startup message.
async fn start_up(client: &mut TcpStream, server: &mut TcpStream) -> std::io::Result<()> {
    loop {
        let length = client.read_u32().await? as usize;
        if !(8..=MAX_MESSAGE).contains(&length) {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        let mut body = vec![0; length - 4];
        client.read_exact(&mut body).await?;
        let code = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
        if code == SSL_REQUEST || code == GSSENC_REQUEST {
            client.write_all(b"N").await?;
            continue;
        }
        server.write_all(&(length as u32).to_be_bytes()).await?;
        return server.write_all(&body).await;
    }
}

/// One typed message, whole: its type byte, length and body.
async fn read_typed(from: &mut (impl AsyncRead + Unpin)) -> std::io::Result<Vec<u8>> {
    let kind = from.read_u8().await?;
    let length = from.read_u32().await? as usize;
    if !(4..=MAX_MESSAGE).contains(&length) {
        return Err(std::io::ErrorKind::InvalidData.into());
    }
    let mut message = Vec::with_capacity(length + 1);
    message.push(kind);
    message.extend_from_slice(&(length as u32).to_be_bytes());
    message.resize(length + 1, 0);
    from.read_exact(&mut message[5..]).await?;
    Ok(message)
}

/// The SQL of a simple-query (`Q`) message, trimmed and upper-cased.
fn simple_query_text(message: &[u8]) -> Option<String> {
    if message[0] != b'Q' {
        return None;
    }
    let text = message[5..].strip_suffix(&[0]).unwrap_or(&message[5..]);
    Some(String::from_utf8_lossy(text).trim().to_ascii_uppercase())
}
