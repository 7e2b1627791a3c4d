//! The public state of a lobby or game: what every player and spectator may see.
//!
//! Snapshots send it whole; updates send RFC 6902 patches from one version to the next,
//! so a client that applies the patches holds exactly what a fresh snapshot would show.
//! It never contains the order of the stack, seat tokens or invite codes.

use crate::api::schemas::{FigureName, PhaseName, RulesSchema, StatusName, SupplySchema};
use crate::rooms::actor::deck_proof;
use crate::rooms::wire::WireMove;
use carcassonne_core::{FigureKind, Game, Phase, Rotation, Rules, Spot, Supply, TileId};
use carcassonne_store::{LobbyRow, LobbyStatus, SeatRow};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct PublicState {
    pub id: Uuid,
    pub name: String,
    #[schema(value_type = StatusName)]
    pub status: LobbyStatus,
    pub public: bool,
    #[schema(value_type = RulesSchema)]
    pub rules: Rules,
    /// Seats offered by the lobby; a started game has one seat per player.
    pub seat_count: u8,
    pub seats: Vec<SeatView>,
    /// From the start of the game: the SHA-256 commitment (hex) to the deck's seed and
    /// salt, revealed in the match record at the end (`replay` verifies it), so that the
    /// draw order was fixed before the first tile and could not be steered.
    pub deck_commitment: Option<String>,
    /// Present once the game has started.
    pub game: Option<GameView>,
}

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct SeatView {
    pub seat: u8,
    pub name: String,
    pub player_id: Option<Uuid>,
    /// The creator may start or cancel the lobby.
    pub creator: bool,
}

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct GameView {
    /// Every tile on the board in the order placed; the start tile first.
    pub board: Vec<TileView>,
    pub figures: Vec<FigureView>,
    pub scores: Vec<u32>,
    #[schema(value_type = Vec<SupplySchema>)]
    pub supplies: Vec<Supply>,
    /// Whose turn it is and what they must do; absent when the game is over.
    pub turn: Option<TurnView>,
    /// Tiles still in the stack, not counting the one being played.
    pub tiles_left: usize,
    pub tiles_placed: u32,
    #[schema(value_type = Vec<String>)]
    pub discarded: Vec<TileId>,
    /// Present when the game is over.
    pub result: Option<ResultView>,
}

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct TileView {
    pub x: i32,
    pub y: i32,
    #[schema(value_type = String)]
    pub tile: TileId,
    #[schema(value_type = u16, minimum = 0, maximum = 270, multiple_of = 90)]
    pub rotation: Rotation,
}

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct FigureView {
    pub player: u8,
    #[schema(value_type = FigureName)]
    pub figure: FigureKind,
    pub x: i32,
    pub y: i32,
    #[schema(value_type = String)]
    pub spot: Spot,
}

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct TurnView {
    pub player: u8,
    #[schema(value_type = PhaseName)]
    pub phase: Phase,
    /// The drawn tile (already on the board in the `act` phase).
    #[schema(value_type = String)]
    pub tile: TileId,
    /// Where the tile went this turn, during the `act` phase.
    pub placed: Option<TileView>,
}

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ResultView {
    pub final_scores: Vec<u32>,
    /// Every seat with the highest score; ties share the win.
    pub winners: Vec<u8>,
}

pub fn seat_views(seats: &[SeatRow]) -> Vec<SeatView> {
    seats
        .iter()
        .map(|seat| SeatView {
            seat: seat.seat,
            name: seat.display_name.clone(),
            player_id: seat.player_id,
            creator: seat.creator,
        })
        .collect()
}

pub fn public_state(lobby: &LobbyRow, seats: &[SeatRow], game: Option<&Game>) -> PublicState {
    PublicState {
        id: lobby.id,
        name: lobby.name.clone(),
        status: lobby.status,
        public: lobby.public,
        rules: lobby.rules.clone(),
        seat_count: lobby.seat_count,
        seats: seat_views(seats),
        deck_commitment: deck_proof(lobby).map(|proof| hex::encode(proof.commitment)),
        game: game.map(game_view),
    }
}

fn game_view(game: &Game) -> GameView {
    let tile_view = |tile: &carcassonne_core::PlacedTile| TileView {
        x: tile.pos.x,
        y: tile.pos.y,
        tile: tile.tile,
        rotation: tile.rotation,
    };
    let turn = match (game.current_player(), game.current_tile()) {
        (Some(player), Some(tile)) => Some(TurnView {
            player,
            phase: game.phase(),
            tile,
            placed: game.placed_this_turn().map(tile_view),
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
        tiles_left: game.tiles_left(),
        tiles_placed: game.tiles_placed(),
        discarded: game.discarded().to_vec(),
        result: game.winners().map(|winners| ResultView {
            final_scores: game.scores().to_vec(),
            winners,
        }),
    }
}

/// The moves open to the player to move, in wire form.
pub fn legal_moves(game: &Game) -> Vec<WireMove> {
    game.legal_moves().into_iter().map(WireMove::from).collect()
}
