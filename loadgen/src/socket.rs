//! WebSocket connections with Nagle's algorithm off: a command is one small frame that
//! must leave at once, not wait for the previous one's acknowledgement.

use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// The read buffer of every connection the load generator opens or (as the echo server)
/// accepts. The library's default is 128 KiB, zero-filled before every read, including
/// the reads that find nothing: with hundreds of connections that memset, out of cache,
/// cost the load generator more CPU than the server spent on a move, and took the core
/// the server needed. A frame larger than this still arrives whole: the buffer grows.
const READ_BUFFER_BYTES: usize = 4 * 1024;

/// The configuration of every WebSocket of the load generator (see `READ_BUFFER_BYTES`).
pub fn config() -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(READ_BUFFER_BYTES)
}

pub type Socket = WebSocketStream<TcpStream>;

/// Opens `ws://{server}{path}` over a TCP connection with `TCP_NODELAY` set.
pub async fn connect(server: &str, path: &str) -> Result<Socket, String> {
    connect_from(server, 0, path).await
}

/// [`connect`] from loopback address 127.0.0.(1 + `source`), so that many sockets to one
/// server port do not run out of one address's ephemeral ports; source 0 lets the kernel
/// choose (as for a server elsewhere than on loopback).
pub async fn connect_from(server: &str, source: u8, path: &str) -> Result<Socket, String> {
    let stream = match source {
        0 => TcpStream::connect(server).await,
        _ => connect_bound(server, source).await,
    }
    .map_err(|_| "ws connect".to_owned())?;
    stream
        .set_nodelay(true)
        .map_err(|_| "ws connect".to_owned())?;
    let url = format!("ws://{server}{path}");
    let (socket, _) = tokio_tungstenite::client_async_with_config(url, stream, Some(config()))
        .await
        .map_err(|error| format!("ws handshake: {}", short_error(&error)))?;
    Ok(socket)
}

/// The first words of an error, enough to tell kinds apart in the report (an HTTP 503
/// refusal from a full server, a reset connection) without one kind per message.
fn short_error(error: &tokio_tungstenite::tungstenite::Error) -> String {
    use tokio_tungstenite::tungstenite::Error;
    match error {
        Error::Http(response) => format!("http {}", response.status().as_u16()),
        Error::Io(io) => format!("{:?}", io.kind()),
        other => other.to_string().chars().take(40).collect(),
    }
}

async fn connect_bound(server: &str, source: u8) -> std::io::Result<TcpStream> {
    let address = tokio::net::lookup_host(server)
        .await?
        .next()
        .ok_or_else(|| std::io::Error::other("no address"))?;
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind((std::net::Ipv4Addr::new(127, 0, 0, 1 + source), 0).into())?;
    socket.connect(address).await
}
