//! `carcassonne-server healthcheck`: one plain HTTP/1.1 GET, for container health checks
//! in images that have no curl. Healthy means a `200` status within the timeout.

use axum::http::Uri;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Why the check failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("the URL must be http://HOST[:PORT]/PATH: {0}")]
    BadUrl(String),
    #[error("no answer within {0:?}")]
    TimedOut(Duration),
    #[error("network: {0}")]
    Io(#[from] std::io::Error),
    #[error("unhealthy: {0}")]
    Unhealthy(String),
}

/// GETs `url` and succeeds only on a `200` status line, all within `timeout`.
pub async fn check(url: &str, timeout: Duration) -> Result<(), CheckError> {
    let (authority, path) = split_url(url)?;
    let status_line = tokio::time::timeout(timeout, fetch_status_line(&authority, &path))
        .await
        .map_err(|_| CheckError::TimedOut(timeout))??;
    if status_line.split_whitespace().nth(1) == Some("200") {
        Ok(())
    } else {
        Err(CheckError::Unhealthy(status_line))
    }
}

/// The `host:port` to connect to and the path to ask for.
fn split_url(url: &str) -> Result<(String, String), CheckError> {
    let bad = || CheckError::BadUrl(url.to_owned());
    let uri: Uri = url.parse().map_err(|_| bad())?;
    if uri.scheme_str() != Some("http") {
        return Err(bad());
    }
    let host = uri.host().ok_or_else(bad)?;
    let port = uri.port_u16().unwrap_or(80);
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    Ok((format!("{host}:{port}"), path.to_owned()))
}

async fn fetch_status_line(authority: &str, path: &str) -> Result<String, CheckError> {
    let mut stream = TcpStream::connect(authority).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut head = Vec::new();
    let mut buffer = [0u8; 512];
    while !head.contains(&b'\n') {
        let read = stream.read(&mut buffer).await?;
        if read == 0 {
            break;
        }
        head.extend_from_slice(&buffer[..read]);
    }
    let text = String::from_utf8_lossy(&head);
    Ok(text.lines().next().unwrap_or_default().trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_authority_and_path() {
        let split = |url: &str| split_url(url).ok();
        assert_eq!(
            split("http://127.0.0.1:8080/readyz"),
            Some(("127.0.0.1:8080".into(), "/readyz".into()))
        );
        assert_eq!(
            split("http://localhost/healthz?x=1"),
            Some(("localhost:80".into(), "/healthz?x=1".into()))
        );
        assert_eq!(split("https://localhost/readyz"), None);
        assert_eq!(split("not a url"), None);
    }
}
