//! Idle sockets: spectators that said hello and then only listen, held through the run to
//! measure what an open connection costs the server.
//!
//! They watch a lobby of their own that is never started: the spectators of a game are
//! closed when the game ends, which would not hold them through the run.

use crate::player;
use crate::rest::Api;
use crate::stats::Stats;
use futures_util::{StreamExt, stream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

/// At most this many idle sockets are between connect and welcome at once, below the
/// server's default of 20 connections without hello per client IP.
const OPENING_AT_ONCE: usize = 16;

/// The held sockets: each task ends, with the errors it saw, when told to stop.
pub struct IdleSockets {
    tasks: Vec<JoinHandle<Stats>>,
    stop: watch::Sender<bool>,
    pub opening_errors: Stats,
}

/// Opens `count` spectator sockets on a new lobby and starts holding them.
pub async fn open(server: &str, api: &Api, count: usize) -> Result<IdleSockets, String> {
    let lobby = api.create_lobby("load idle spectators").await?.lobby;
    let (stop, stopped) = watch::channel(false);
    let joins = stream::iter(0..count)
        .map(|_| player::join(server, &lobby, None))
        .buffer_unordered(OPENING_AT_ONCE)
        .collect::<Vec<_>>()
        .await;
    let mut idle = IdleSockets {
        tasks: Vec::with_capacity(count),
        stop,
        opening_errors: Stats::default(),
    };
    for joined in joins {
        match joined {
            Ok(socket) => idle.tasks.push(tokio::spawn(hold(socket, stopped.clone()))),
            Err(kind) => idle.opening_errors.error(format!("idle {kind}")),
        }
    }
    Ok(idle)
}

impl IdleSockets {
    /// Closes every socket and returns the errors seen while opening and holding them.
    pub async fn close(self) -> Stats {
        let _ = self.stop.send(true);
        let mut stats = self.opening_errors;
        for task in self.tasks {
            if let Ok(held) = task.await {
                stats.merge(&held);
            }
        }
        stats
    }
}

/// Reads the socket (which answers the server's pings) until told to stop; a close by the
/// server before then is an error.
async fn hold(mut socket: crate::socket::Socket, mut stopped: watch::Receiver<bool>) -> Stats {
    let mut stats = Stats::default();
    loop {
        let message = tokio::select! {
            message = socket.next() => message,
            _ = stopped.changed() => break,
        };
        match message {
            Some(Ok(Message::Close(frame))) => {
                let code = frame.map_or(0, |frame| u16::from(frame.code));
                stats.error(format!("idle close {code}"));
                return stats;
            }
            Some(Ok(_)) => {}
            Some(Err(_)) | None => {
                stats.error("idle dropped");
                return stats;
            }
        }
    }
    let _ = socket.close(None).await;
    stats
}
