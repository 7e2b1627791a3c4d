//! The baseline: a bare WebSocket echo server, and clients that play request/response
//! ping-pong with it using frames of a command's size. What the echo server reaches on
//! this machine bounds what any WebSocket game server could.

use crate::socket::{self, Socket};
use crate::stats::{Stats, Window};
use futures_util::{SinkExt, StreamExt};
use std::io::Write;
use std::time::Instant;
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message;

/// Serves WebSocket echo on `listen` forever, after printing `listening ADDRESS` on
/// standard output (so that a parent process can learn a port chosen by the system).
pub async fn serve(listen: &str) -> std::io::Result<()> {
    let listener = TcpListener::bind(listen).await?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "listening {}", listener.local_addr()?)?;
    stdout.flush()?;
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::spawn(echo_connection(stream));
    }
}

async fn echo_connection(stream: TcpStream) {
    if stream.set_nodelay(true).is_err() {
        return;
    }
    let Ok(mut socket) =
        tokio_tungstenite::accept_async_with_config(stream, Some(socket::config())).await
    else {
        return;
    };
    while let Some(Ok(message)) = socket.next().await {
        let reply = match message {
            Message::Text(_) | Message::Binary(_) => message,
            Message::Close(_) => break,
            _ => continue,
        };
        if socket.send(reply).await.is_err() {
            break;
        }
    }
}

/// Plays ping-pong with `frame` on `connections` connections to the echo server at
/// `server` until the window closes; `acked` counts round trips inside the window and
/// `ack_latency_us` their times.
pub async fn ping_pong(server: &str, connections: usize, frame: &str, window: Window) -> Stats {
    let tasks: Vec<_> = (0..connections)
        .map(|_| tokio::spawn(client(server.to_owned(), frame.to_owned(), window)))
        .collect();
    let mut total = Stats::default();
    for task in tasks {
        match task.await {
            Ok(stats) => total.merge(&stats),
            Err(_) => total.error("echo client panicked"),
        }
    }
    total
}

async fn client(server: String, frame: String, window: Window) -> Stats {
    let mut stats = Stats::default();
    let deadline = tokio::time::Instant::from_std(window.end);
    match tokio::time::timeout_at(deadline, socket::connect(&server, "/")).await {
        Ok(Ok(socket)) => round_trips(socket, &frame, window, &mut stats).await,
        Ok(Err(kind)) => stats.error(format!("echo {kind}")),
        Err(_elapsed) => stats.error("echo connect timed out"),
    }
    stats
}

async fn round_trips(mut socket: Socket, frame: &str, window: Window, stats: &mut Stats) {
    let deadline = tokio::time::Instant::from_std(window.end);
    loop {
        let sent = Instant::now();
        let trip = async {
            socket.send(Message::Text(frame.into())).await.ok()?;
            socket.next().await?.ok()
        };
        let reply = match tokio::time::timeout_at(deadline, trip).await {
            Err(_elapsed) => break,
            Ok(reply) => reply,
        };
        if !matches!(reply, Some(Message::Text(_))) {
            stats.error("echo lost");
            return;
        }
        let received = Instant::now();
        if window.contains(received) {
            stats.acked += 1;
            let micros = (received - sent).as_micros() as u64;
            stats.ack_latency_us.record(micros);
        }
    }
    let _ = socket.close(None).await;
}
