//! Noticing that the server is gone (killed, crashed), so that a run ends at once with
//! what it measured instead of retrying game set-ups against a closed port until its
//! duration is over.
//!
//! A failed connection alone does not prove it: a busy server may drop or delay a
//! connection now and then. So after one fails, a plain TCP connection is tried, and only
//! a refusal (nothing listens at the address) counts as the server being lost.

use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// How long the check's connection may take; a server that does not answer within it
/// is busy, not gone.
const PROBE_PATIENCE: Duration = Duration::from_secs(1);

/// Shared by every task of a run: whether, and since when, the server is lost.
#[derive(Clone)]
pub struct ServerWatch {
    server: String,
    lost: Arc<watch::Sender<Option<Instant>>>,
}

impl ServerWatch {
    pub fn new(server: &str) -> ServerWatch {
        ServerWatch {
            server: server.to_owned(),
            lost: Arc::new(watch::channel(None).0),
        }
    }

    /// After a connection to the server failed: whether the server is lost, which is
    /// noted (at its first sighting) when nothing listens at its address any more.
    pub async fn check(&self) -> bool {
        if self.lost_at().is_some() {
            return true;
        }
        let probe = tokio::time::timeout(PROBE_PATIENCE, TcpStream::connect(&self.server)).await;
        let refused = matches!(probe, Ok(Err(error)) if error.kind() == std::io::ErrorKind::ConnectionRefused);
        if refused {
            self.lost.send_if_modified(|lost| {
                let first = lost.is_none();
                lost.get_or_insert_with(Instant::now);
                first
            });
        }
        refused
    }

    /// When the server was found lost, if it was.
    pub fn lost_at(&self) -> Option<Instant> {
        *self.lost.borrow()
    }

    /// Resolves once the server is found lost (at once if it already is).
    pub async fn lost(&self) {
        let mut changes = self.lost.subscribe();
        // The sender lives as long as `self`, so waiting cannot fail.
        let _ = changes.wait_for(Option::is_some).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_listening_server_is_not_lost_and_a_closed_port_is() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let watch = ServerWatch::new(&address);
        assert!(!watch.check().await);
        assert_eq!(watch.lost_at(), None);
        drop(listener);
        let waiting = tokio::spawn({
            let watch = watch.clone();
            async move { watch.lost().await }
        });
        assert!(watch.check().await);
        let first = watch.lost_at().expect("noted as lost");
        assert!(watch.check().await);
        assert_eq!(watch.lost_at(), Some(first), "the first sighting is kept");
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the waiters are told")
            .unwrap();
    }
}
