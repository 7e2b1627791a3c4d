//! The REST calls that set a game up (create a lobby, join it, start it), and `/readyz`.

use serde_json::{Value, json};

/// A seat someone holds: its lobby and its secret token.
#[derive(Clone, Debug)]
pub struct Seat {
    pub lobby: String,
    pub token: String,
}

/// A REST client of one server. Errors are returned as the error kinds the report
/// counts, such as `http 429 create` or `http connect`.
#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    base: String,
}

impl Api {
    pub fn new(server: &str) -> Api {
        let http = reqwest::Client::builder()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(64)
            .build()
            .expect("an HTTP client");
        Api {
            http,
            base: format!("http://{server}"),
        }
    }

    /// Creates a 2-seat lobby with the default rules; its creator holds seat 0.
    pub async fn create_lobby(&self, name: &str) -> Result<Seat, String> {
        let body = json!({ "name": name, "seats": 2, "rules": {}, "display_name": "loadgen-a" });
        let created = self.post("/api/lobbies", None, body, "create").await?;
        let lobby = created["lobby"]["id"].as_str();
        seat_of(lobby, &created, "create")
    }

    pub async fn join(&self, lobby: &str) -> Result<Seat, String> {
        let path = format!("/api/lobbies/{lobby}/join");
        let body = json!({ "display_name": "loadgen-b" });
        let joined = self.post(&path, None, body, "join").await?;
        seat_of(Some(lobby), &joined, "join")
    }

    /// Starts the game, as its creator.
    pub async fn start(&self, creator: &Seat) -> Result<(), String> {
        let path = format!("/api/lobbies/{}/start", creator.lobby);
        self.post(&path, Some(&creator.token), json!({}), "start")
            .await
            .map(drop)
    }

    /// Whether the server answers `/readyz` with a success.
    pub async fn ready(&self) -> bool {
        let answer = self.http.get(format!("{}/readyz", self.base)).send().await;
        answer.is_ok_and(|response| response.status().is_success())
    }

    async fn post(
        &self,
        path: &str,
        token: Option<&str>,
        body: Value,
        what: &str,
    ) -> Result<Value, String> {
        let mut request = self.http.post(format!("{}{path}", self.base)).json(&body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request
            .send()
            .await
            .map_err(|_| "http connect".to_owned())?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("http {} {what}", status.as_u16()));
        }
        response
            .json()
            .await
            .map_err(|_| format!("http body {what}"))
    }
}

fn seat_of(lobby: Option<&str>, reply: &Value, what: &str) -> Result<Seat, String> {
    let token = reply["seat_token"].as_str();
    match (lobby, token) {
        (Some(lobby), Some(token)) => Ok(Seat {
            lobby: lobby.to_owned(),
            token: token.to_owned(),
        }),
        _ => Err(format!("http body {what}")),
    }
}
