//! Games played in step, for the benchmarks that measure the server between steps
//! (`memory`, `restart`): each game's two players move only when told to, one move
//! answered before the next, and can leave and come back.

use crate::protocol::{self, MovePicker};
use crate::rest::{Api, Seat};
use crate::socket::{self, Socket};
use futures_util::{SinkExt, StreamExt, stream};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

/// How many games (or connections) are set up or advanced at once.
pub const AT_ONCE: usize = 16;

/// How long a game may take to answer one move before the benchmark gives up.
const MOVE_PATIENCE: Duration = Duration::from_secs(30);

/// Creates, fills and starts `count` games; returns both seats of those that started.
pub async fn set_up_games(api: &Api, count: usize) -> Vec<[Seat; 2]> {
    stream::iter(0..count)
        .map(|_| async {
            let creator = api.create_lobby("in step").await?;
            let joiner = api.join(&creator.lobby).await?;
            api.start(&creator).await?;
            Ok::<_, String>([creator, joiner])
        })
        .buffer_unordered(AT_ONCE)
        .filter_map(|seats| async { seats.ok() })
        .collect()
        .await
}

/// One game's two players, moving only when told to.
pub struct Table {
    pub seats: [Seat; 2],
    /// Both players' sockets, while they are connected.
    players: Vec<Socket>,
    /// The player to move and the `seq` and legal moves (a move's JSON each) they have.
    to_move: Option<(usize, u64, Vec<String>)>,
    picker: MovePicker,
    commands: u64,
    pub over: bool,
}

/// (Re)connects both players of every table, each with a hello that asks for a snapshot.
pub async fn connect_all(server: &str, tables: Vec<Table>) -> Vec<Table> {
    stream::iter(tables)
        .map(|mut table| async move {
            table.connect(server).await?;
            Ok::<_, String>(table)
        })
        .buffer_unordered(AT_ONCE)
        .filter_map(|table| async { table.ok() })
        .collect()
        .await
}

/// Plays `moves` more moves in every game; a game that fails is left out.
pub async fn advance_all(tables: Vec<Table>, moves: usize) -> Vec<Table> {
    stream::iter(tables)
        .map(|mut table| async move {
            let moved = tokio::time::timeout(MOVE_PATIENCE * moves as u32, table.advance(moves));
            match moved.await {
                Ok(Ok(())) => Some(table),
                _ => None,
            }
        })
        .buffer_unordered(AT_ONCE)
        .filter_map(|table| async { table })
        .collect()
        .await
}

/// What a frame told a table.
#[derive(Debug, PartialEq, Eq)]
enum Heard {
    Snapshot,
    Update(u64),
    Ack,
    Other,
}

impl Table {
    pub fn new(seats: [Seat; 2], seed: u64) -> Table {
        Table {
            seats,
            players: Vec::new(),
            to_move: None,
            picker: MovePicker::new(seed),
            commands: 0,
            over: false,
        }
    }

    pub async fn connect(&mut self, server: &str) -> Result<(), String> {
        self.players.clear();
        for seat in 0..2 {
            let path = format!("/ws/games/{}", self.seats[seat].lobby);
            self.players.push(socket::connect(server, &path).await?);
            let hello = protocol::hello_text(Some(&self.seats[seat].token));
            self.send(seat, hello).await?;
            self.read_until(seat, |heard| heard == Heard::Snapshot)
                .await?;
        }
        Ok(())
    }

    /// Closes both players' sockets; `connect` brings them back.
    pub fn leave(&mut self) {
        self.players.clear();
    }

    async fn send(&mut self, seat: usize, text: String) -> Result<(), String> {
        self.players[seat]
            .send(Message::Text(text.into()))
            .await
            .map_err(|_| "ws send".to_owned())
    }

    /// Plays `moves` moves (fewer if the game ends), each answered before the next.
    pub async fn advance(&mut self, moves: usize) -> Result<(), String> {
        for _ in 0..moves {
            if self.over {
                return Ok(());
            }
            let (seat, seq, legal) = self.to_move.take().ok_or("nobody to move")?;
            let chosen = legal[self.picker.index(legal.len())].clone();
            let other = 1 - seat;
            self.commands += 1;
            let id = format!("m{}", self.commands);
            self.send(seat, protocol::command_text(&id, seq, &chosen))
                .await?;
            let next = seq + 1;
            let (mut acked, mut updated) = (false, false);
            self.read_until(seat, |heard| {
                acked |= heard == Heard::Ack;
                updated |= heard == Heard::Update(next);
                acked && updated
            })
            .await?;
            self.read_until(other, |heard| heard == Heard::Update(next))
                .await?;
        }
        Ok(())
    }

    /// Reads `seat`'s socket until `wanted` says so, noting legal moves and the end.
    async fn read_until(
        &mut self,
        seat: usize,
        mut wanted: impl FnMut(Heard) -> bool,
    ) -> Result<(), String> {
        loop {
            let message = tokio::time::timeout(MOVE_PATIENCE, self.players[seat].next())
                .await
                .map_err(|_| "no answer in time".to_owned())?;
            let text = match message {
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(_)) => continue,
                _ => return Err("closed".to_owned()),
            };
            if wanted(self.absorb(seat, &text)?) {
                return Ok(());
            }
        }
    }

    fn absorb(&mut self, seat: usize, text: &str) -> Result<Heard, String> {
        let frame = protocol::parse_frame(text).map_err(|_| "unparsable frame".to_owned())?;
        if let (Some(moves), Some(seq)) = (&frame.legal_moves, frame.seq) {
            let legal = (0..moves.count()).filter_map(|index| moves.move_json(index));
            self.to_move = Some((seat, seq, legal.collect()));
        }
        Ok(match frame.kind.as_ref() {
            "snapshot" => Heard::Snapshot,
            "update" => {
                self.over |= frame.ends_the_game();
                Heard::Update(frame.seq.unwrap_or_default())
            }
            "ack" => Heard::Ack,
            "error" | "rejected" => return Err(format!("{} {}", frame.kind, frame.error_code())),
            _ => Heard::Other,
        })
    }
}
