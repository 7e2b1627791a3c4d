//! Raw connections for abuse tests: TCP sockets from a chosen loopback address (so one
//! "client IP" can be told apart from another on one machine), hand-made WebSocket
//! frames, and waiting for the server to hang up.

use futures_util::SinkExt;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::{WebSocketStream, client_async};

/// A second client address: Linux routes all of 127.0.0.0/8 to the loopback device.
pub const OTHER_CLIENT: &str = "127.0.0.2";

/// A TCP connection to `server` from `source` (any port), with a small receive buffer
/// when `receive_buffer` is given (for clients that read slowly or never).
pub async fn connect_from(
    source: &str,
    server: SocketAddr,
    receive_buffer: Option<u32>,
) -> TcpStream {
    let source: IpAddr = source.parse().expect("a source address");
    let socket = TcpSocket::new_v4().expect("a socket");
    if let Some(size) = receive_buffer {
        socket.set_recv_buffer_size(size).expect("SO_RCVBUF");
    }
    socket
        .bind(SocketAddr::new(source, 0))
        .expect("bind the source address");
    socket.connect(server).await.expect("TCP connects")
}

/// Completes a WebSocket handshake over `stream`; `Err` carries the HTTP status of a
/// refused upgrade.
pub async fn websocket_over(
    stream: TcpStream,
    url: &str,
) -> Result<WebSocketStream<TcpStream>, u16> {
    match client_async(url, stream).await {
        Ok((socket, _)) => Ok(socket),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            Err(response.status().as_u16())
        }
        Err(other) => panic!("the handshake failed without an HTTP answer: {other}"),
    }
}

/// Sends one text frame with the given payload bytes (which need not be UTF-8), final
/// or not, or a continuation frame when `continuation` is set.
pub async fn send_frame(
    socket: &mut WebSocketStream<TcpStream>,
    payload: Vec<u8>,
    continuation: bool,
    is_final: bool,
) -> Result<(), String> {
    let opcode = if continuation {
        OpCode::Data(Data::Continue)
    } else {
        OpCode::Data(Data::Text)
    };
    let frame = Frame::message(payload, opcode, is_final);
    socket
        .send(Message::Frame(frame))
        .await
        .map_err(|error| error.to_string())
}

/// How long until the server closed `stream` (end of stream or reset), reading and
/// dropping whatever it sends; `None` if it stayed open for `patience`.
pub async fn closed_after(stream: &mut TcpStream, patience: Duration) -> Option<Duration> {
    let started = std::time::Instant::now();
    let mut buffer = [0u8; 4096];
    let outcome = tokio::time::timeout(patience, async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => continue,
            }
        }
    })
    .await;
    outcome.ok().map(|()| started.elapsed())
}
