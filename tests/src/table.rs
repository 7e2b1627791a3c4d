//! A table of players: one WebSocket client per seat (and maybe a spectator), playing a
//! game to its end with moves chosen at random among the legal moves the server sends.

use crate::client::{Api, Seat, WsClient};
use crate::server::TestServer;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::Value;

pub struct Table {
    pub game: String,
    pub seats: Vec<Seat>,
    /// Connected clients, indexed by their seat in the started game.
    pub players: Vec<WsClient>,
    pub spectator: Option<WsClient>,
    rng: StdRng,
    commands: u64,
}

impl Table {
    /// Creates a lobby with `players` seats and `rules`, fills it, connects everyone
    /// (and a spectator), and starts the game.
    pub async fn start(server: &TestServer, players: u8, rules: Value, seed: u64) -> Table {
        let api = Api::new(server.http());
        let creator = api.create_lobby("seat0", players, rules).await;
        let mut seats = vec![creator.clone()];
        for number in 1..players {
            seats.push(api.join(&creator.lobby, &format!("seat{number}")).await);
        }
        Table::open(server, seats, seed).await
    }

    /// Connects a client for every taken seat (the creator's first) and a spectator,
    /// then has the creator start the game.
    pub async fn open(server: &TestServer, seats: Vec<Seat>, seed: u64) -> Table {
        Table::open_private(server, seats, seed, None).await
    }

    /// [`Table::open`] for a lobby whose spectators need its `invite_code`.
    pub async fn open_private(
        server: &TestServer,
        seats: Vec<Seat>,
        seed: u64,
        invite_code: Option<&str>,
    ) -> Table {
        let api = Api::new(server.http());
        let creator = seats[0].clone();
        let starting = async {
            let lobby = api.start(&creator).await;
            assert_eq!(lobby["status"], "playing", "{lobby}");
        };
        Table::connect(server, seats, seed, invite_code, Some(starting)).await
    }

    /// Connects a client for every seat (in seat order) and a spectator to a game that
    /// has already started, as the quick-play queue starts its games.
    pub async fn join_started(server: &TestServer, seats: Vec<Seat>, seed: u64) -> Table {
        Table::connect(server, seats, seed, None, None::<std::future::Ready<()>>).await
    }

    async fn connect(
        server: &TestServer,
        seats: Vec<Seat>,
        seed: u64,
        invite_code: Option<&str>,
        start: Option<impl Future<Output = ()>>,
    ) -> Table {
        let creator = seats[0].clone();
        let url = server.ws_url(&creator.lobby);
        let mut clients = Vec::new();
        for seat in &seats {
            clients.push(WsClient::join(&url, Some(&seat.token), None).await);
        }
        let mut spectator = WsClient::connect(&url).await;
        let welcome = spectator.hello_with_invite(invite_code).await;
        assert_eq!(welcome["type"], "welcome", "{welcome}");
        let spectator = Some(spectator);
        if let Some(start) = start {
            start.await;
        }
        let mut table = Table {
            game: creator.lobby.clone(),
            seats,
            players: clients,
            spectator,
            rng: StdRng::seed_from_u64(seed),
            commands: 0,
        };
        table.sync_all().await;
        table
    }

    /// The seq every client should have reached: the spectator's view of the game.
    pub fn seq(&self) -> u64 {
        self.players
            .iter()
            .filter_map(|client| client.seq)
            .max()
            .unwrap_or(0)
    }

    /// Brings every client up to the newest update any of them has seen.
    pub async fn sync_all(&mut self) {
        // The start update is the newest at this point for everyone; read until all agree.
        let target = self.highest_seq().await;
        for client in self.players.iter_mut().chain(self.spectator.as_mut()) {
            client.catch_up_to(target).await;
        }
    }

    async fn highest_seq(&mut self) -> u64 {
        let first = &mut self.players[0];
        // The creator's client sees the start update like everyone else.
        while first.state["status"] != "playing" {
            first.next().await;
        }
        first.seq.expect("a seq")
    }

    /// The seat to move, from the mirrored state.
    pub fn mover(&self) -> Option<usize> {
        let state = &self.players[0].state;
        state["game"]["turn"]["player"]
            .as_u64()
            .map(|seat| seat as usize)
    }

    pub fn is_over(&self) -> bool {
        self.players[0].state["status"] == "finished"
    }

    /// Plays one command for the player to move: a random legal move, usually placing
    /// a figure when one may be placed so that features get claimed and scored.
    pub async fn play_one(&mut self) -> Value {
        let mover = self.mover().expect("a player to move");
        let legal = self.players[mover]
            .legal_moves
            .clone()
            .expect("the mover has legal moves");
        assert!(
            !legal.is_empty(),
            "a player to move always has a legal move"
        );
        let choice = self.choose(&legal);
        self.commands += 1;
        let id = format!("cmd-{}", self.commands);
        let reply = self.players[mover].command(&id, choice).await;
        assert_eq!(reply["type"], "ack", "a legal move is accepted: {reply}");
        self.catch_up(reply["seq"].as_u64().unwrap()).await;
        reply
    }

    /// Brings every client (players and spectator) up to update `seq`.
    pub async fn catch_up(&mut self, seq: u64) {
        for client in self.players.iter_mut().chain(self.spectator.as_mut()) {
            client.catch_up_to(seq).await;
        }
    }

    fn choose(&mut self, legal: &[Value]) -> Value {
        let placing_figure: Vec<&Value> = legal
            .iter()
            .filter(|mv| mv["type"] == "place_figure")
            .collect();
        if !placing_figure.is_empty() && self.rng.random_bool(0.7) {
            return placing_figure[self.rng.random_range(0..placing_figure.len())].clone();
        }
        legal[self.rng.random_range(0..legal.len())].clone()
    }

    /// Plays until the game is over; returns the number of commands played.
    pub async fn play_to_the_end(&mut self) -> u64 {
        let mut played = 0;
        while !self.is_over() {
            self.play_one().await;
            played += 1;
        }
        played
    }

    /// Reconnects every player (and a fresh spectator) to `server`, each resuming from
    /// the last update it saw, and brings them all up to the game's current seq.
    pub async fn reconnect(&mut self, server: &TestServer) {
        let url = server.ws_url(&self.game);
        for (index, seat) in self.seats.iter().enumerate() {
            self.players[index] = WsClient::resume(&url, &seat.token, &self.players[index]).await;
        }
        let mut spectator = WsClient::join(&url, None, None).await;
        spectator.next_of("snapshot").await;
        let current = spectator.seq.expect("a snapshot seq");
        for client in self.players.iter_mut() {
            client.catch_up_to(current).await;
        }
        self.spectator = Some(spectator);
    }

    /// Every client's mirrored state, which must all be equal.
    pub fn assert_mirrors_agree(&self) {
        let reference = &self.players[0].state;
        for client in self.players.iter().chain(self.spectator.as_ref()) {
            assert_eq!(
                &client.state, reference,
                "every client mirrors the same state"
            );
        }
    }
}
