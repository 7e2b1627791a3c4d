//! A TCP proxy the test controls, to take a database away from the server and give it
//! back without touching the database itself (other tests share it).

use std::net::SocketAddr;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

pub struct TcpProxy {
    pub port: u16,
    target: SocketAddr,
    accepting: Option<JoinHandle<()>>,
}

impl TcpProxy {
    /// Forwards a new local port to `target`.
    pub async fn start(target: SocketAddr) -> TcpProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a local port");
        let port = listener.local_addr().unwrap().port();
        TcpProxy {
            port,
            target,
            accepting: Some(tokio::spawn(forward(listener, target))),
        }
    }

    /// Cuts every open connection and refuses new ones, as a lost database would.
    pub fn cut(&mut self) {
        if let Some(task) = self.accepting.take() {
            task.abort();
        }
    }

    /// Forwards again on the same port.
    pub async fn restore(&mut self) {
        let listener = TcpListener::bind(("127.0.0.1", self.port))
            .await
            .expect("the same port again");
        self.accepting = Some(tokio::spawn(forward(listener, self.target)));
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.cut();
    }
}

/// Accepts connections and pipes each to `target`. Aborting this task drops the set of
/// connection tasks, which aborts them and closes their sockets.
async fn forward(listener: TcpListener, target: SocketAddr) {
    let mut connections = JoinSet::new();
    loop {
        let Ok((mut inbound, _)) = listener.accept().await else {
            continue;
        };
        connections.spawn(async move {
            if let Ok(mut outbound) = TcpStream::connect(target).await {
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            }
        });
    }
}
