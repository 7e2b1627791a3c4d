//! The public state of a lobby or game: what every player and spectator may see.
//!
//! Snapshots send it whole; updates send RFC 6902 patches from one version to the next,
//! so a client that applies the patches holds exactly what a fresh snapshot would show.
//! It never contains the order of the stack, seat tokens or invite codes.

use crate::clock::rfc3339;
use crate::rooms::clocks::Clocks;
use crate::rooms::moves::LegalMoves;
use crate::rooms::outcome::{Ending, deck_proof};
use carcassonne_core::record::DeckProof;
use carcassonne_core::{FigureKind, Game, Phase, Rotation, Rules, Spot, Supply, TileId};
use carcassonne_store::{
    ChatPolicy, LobbyRow, LobbyStatus, MatchStatus, SeatControl, SeatRow, TimeControl,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct PublicState {
    pub id: Uuid,
    pub name: String,
    pub status: LobbyStatus,
    pub public: bool,
    pub rules: Rules,
    /// The time control chosen when the lobby was created.
    pub time_control: TimeControl,
    /// Seats offered by the lobby; a started game has one seat per player.
    pub seat_count: u8,
    /// Whether the game changes its players' ratings when it ends.
    pub rated: bool,
    pub seats: Vec<SeatView>,
    /// From the start of the game: the SHA-256 commitment (hex) to the deck's seed and
    /// salt, revealed in the match record at the end (`replay` verifies it), so that the
    /// draw order was fixed before the first tile and could not be steered.
    pub deck_commitment: Option<String>,
    /// Present once the game has started.
    pub game: Option<GameView>,
}

/// A lobby or game as REST shows it: its settings and seats, without the game.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct LobbyView {
    pub id: Uuid,
    pub name: String,
    pub status: LobbyStatus,
    pub public: bool,
    pub rules: Rules,
    pub clock: TimeControl,
    pub seat_count: u8,
    /// Whether the game changes its players' ratings when it ends.
    pub rated: bool,
    /// Who may write in the chat: `all`, `players` or `off`.
    pub chat: ChatPolicy,
    pub seats: Vec<SeatView>,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// Where to connect for live updates and play.
    pub websocket: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SeatView {
    pub seat: u8,
    pub name: String,
    pub player_id: Option<Uuid>,
    /// The creator may start or cancel the lobby.
    pub creator: bool,
    /// Who plays the seat: `human` (its owner), `abandoned` (a bot, after repeated
    /// timeouts, until the owner says hello again) or `resigned` (a bot, to the end).
    pub control: SeatControl,
    /// The level of the bot that holds this seat from the lobby on, if a bot does.
    #[schema(value_type = Option<String>, example = "greedy")]
    pub bot: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct GameView {
    /// Every tile on the board in the order placed, the start tile first, each as
    /// `[x, y, tile, rotation]`. The tile placed this turn is the last one.
    #[schema(value_type = Vec<Vec<serde_json::Value>>, example = json!([[0, 0, "D", 0], [1, 0, "U", 90]]))]
    pub board: Vec<TileView>,
    pub figures: Vec<FigureView>,
    pub scores: Vec<u32>,
    pub supplies: Vec<Supply>,
    /// Whose turn it is, what they must do, and how many tiles are left; absent when the
    /// game is over.
    pub turn: Option<TurnView>,
    #[schema(value_type = Vec<String>)]
    pub discarded: Vec<TileId>,
    /// Present when the game is over.
    pub result: Option<ResultView>,
    /// The clocks, when the game has a time control.
    pub clock: Option<ClockView>,
}

/// The turn clocks. The server is the only clock: a client draws the time left from
/// `deadline_ms` (or from `turn_ms_left` in the message that carried the state).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ClockView {
    /// Each seat's reserve at the start of its current or next turn, in milliseconds.
    pub reserve_ms: Vec<u64>,
    /// The turn in progress; absent once the game is over.
    pub turn: Option<TurnClockView>,
}

#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct TurnClockView {
    pub seat: u8,
    /// When the turn began (RFC 3339).
    pub started_at: String,
    /// When the turn runs out (RFC 3339); a bot then plays the rest of it.
    pub deadline: String,
    /// The same deadline in milliseconds since the Unix epoch.
    pub deadline_ms: i64,
}

/// A tile on the board, sent as `[x, y, tile, rotation]`: the board is the bulk of a
/// snapshot, and a placement's patch adds one of these.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TileView {
    pub x: i32,
    pub y: i32,
    pub tile: TileId,
    pub rotation: Rotation,
}

impl Serialize for TileView {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (self.x, self.y, self.tile, self.rotation).serialize(serializer)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct FigureView {
    pub player: u8,
    pub figure: FigureKind,
    pub x: i32,
    pub y: i32,
    #[schema(value_type = String)]
    pub spot: Spot,
}

/// The turn in progress. A new turn replaces it whole, in one patch operation.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct TurnView {
    pub player: u8,
    /// `place_tile`, then `act` once the tile is down (it is then the board's last).
    pub phase: Phase,
    /// The drawn tile.
    #[schema(value_type = String)]
    pub tile: TileId,
    /// Tiles still in the stack, not counting this turn's.
    pub tiles_left: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ResultView {
    /// `finished` (the last tile was played) or `abandoned` (no human seat was left to a
    /// human; scored as it stood, without end-of-game scoring).
    pub status: MatchStatus,
    pub final_scores: Vec<u32>,
    /// Every seat with the highest score among those that did not resign; ties share
    /// the win.
    pub winners: Vec<u8>,
}

/// What the view needs of a game's clocks.
pub struct ClockSource<'a> {
    pub clocks: &'a Clocks,
    /// False once the game has ended.
    pub running: bool,
}

pub fn seat_views(seats: &[SeatRow]) -> Vec<SeatView> {
    seats
        .iter()
        .map(|seat| SeatView {
            seat: seat.seat,
            name: seat.display_name.clone(),
            player_id: seat.player_id,
            creator: seat.creator,
            control: seat.control,
            bot: seat.bot.clone(),
        })
        .collect()
}

pub fn lobby_view(lobby: &LobbyRow, seats: &[SeatRow]) -> LobbyView {
    LobbyView {
        id: lobby.id,
        name: lobby.name.clone(),
        status: lobby.status,
        public: lobby.public,
        rules: lobby.rules.clone(),
        clock: lobby.clock,
        seat_count: lobby.seat_count,
        rated: lobby.rated,
        chat: lobby.chat_policy,
        seats: seat_views(seats),
        created_at: rfc3339(lobby.created_at),
        started_at: lobby.started_at.map(rfc3339),
        finished_at: lobby.finished_at.map(rfc3339),
        websocket: format!("/ws/games/{}", lobby.id),
    }
}

pub fn public_state(
    lobby: &LobbyRow,
    seats: &[SeatRow],
    game: Option<&Game>,
    clocks: Option<ClockSource<'_>>,
    ending: Option<&Ending>,
) -> PublicState {
    PublicState {
        id: lobby.id,
        name: lobby.name.clone(),
        status: lobby.status,
        public: lobby.public,
        rules: lobby.rules.clone(),
        time_control: lobby.clock,
        seat_count: lobby.seat_count,
        rated: lobby.rated,
        seats: seat_views(seats),
        deck_commitment: deck_proof(lobby).as_ref().map(DeckProof::commitment_hex),
        game: game.map(|game| game_view(game, clocks, ending)),
    }
}

fn clock_view(game: &Game, source: ClockSource<'_>) -> Option<ClockView> {
    let clocks = source.clocks;
    if clocks.control() == TimeControl::None {
        return None;
    }
    let turn = match (source.running, game.current_player(), clocks.deadline()) {
        (true, Some(seat), Some(deadline)) => Some(TurnClockView {
            seat,
            started_at: rfc3339(clocks.turn_started_at()),
            deadline: rfc3339(deadline),
            deadline_ms: deadline,
        }),
        _ => None,
    };
    Some(ClockView {
        reserve_ms: clocks.reserves().to_vec(),
        turn,
    })
}

pub fn game_view(
    game: &Game,
    clocks: Option<ClockSource<'_>>,
    ending: Option<&Ending>,
) -> GameView {
    let tile_view = |tile: &carcassonne_core::PlacedTile| TileView {
        x: tile.pos.x,
        y: tile.pos.y,
        tile: tile.tile,
        rotation: tile.rotation,
    };
    let playing = ending.is_none();
    let turn = match (game.current_player(), game.current_tile()) {
        (Some(player), Some(tile)) if playing => Some(TurnView {
            player,
            phase: game.phase(),
            tile,
            tiles_left: game.tiles_left(),
        }),
        _ => None,
    };
    GameView {
        board: game.tiles().iter().map(tile_view).collect(),
        figures: game
            .figures()
            .into_iter()
            .map(|figure| FigureView {
                player: figure.player,
                figure: figure.figure,
                x: figure.pos.x,
                y: figure.pos.y,
                spot: figure.spot,
            })
            .collect(),
        scores: game.scores().to_vec(),
        supplies: (0..game.players()).map(|seat| game.supply(seat)).collect(),
        turn,
        discarded: game.discarded().to_vec(),
        result: ending.map(|ending| ResultView {
            status: ending.status,
            final_scores: ending.final_scores.clone(),
            winners: ending.winners.clone(),
        }),
        clock: clocks.and_then(|source| clock_view(game, source)),
    }
}

/// The moves open to the player to move, grouped for the wire.
pub fn legal_moves(game: &Game) -> LegalMoves {
    LegalMoves::of(game.legal_moves())
}
