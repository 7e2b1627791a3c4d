//! A room at rest: between a human's moves, a room lets go of the core's game, the
//! largest part of its memory, and rebuilds it from its move log when it is next needed.
//!
//! At human pace a game waits seconds for each move and takes microseconds to make it,
//! so almost every room of a busy node is waiting. The game is a pure function of the
//! deck's seed and the moves, which the room keeps anyway (the move log): replaying a
//! whole game is about 15 µs, where keeping it costs 13 KB a room for all the minutes of
//! the game. A resting room keeps what it reads while waiting: who is to move, for the
//! turn's deadline, and the legal moves of the human to move, for a hello or a catch-up.
//! So it answers hellos, catch-ups and goodbyes as it is
//! ([`answers_at_rest`](RoomMachine::answers_at_rest)); the shell wakes the game before
//! it hands the room any other work.

use super::*;
use crate::rooms::contract::Request;
use crate::rooms::moves::LegalMoves;

/// What a resting room keeps of its game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Resting {
    /// The seat to move when the game was put to rest (none once it is over).
    pub to_move: Option<u8>,
    /// The legal moves of the human to move, which a hello or a catch-up of theirs
    /// carries: a few hundred bytes where the game is 13 KB, and a player coming back to
    /// their turn is the commonest hello of all.
    pub legal_moves: Option<LegalMoves>,
}

impl RoomMachine {
    /// Whether the room may let go of its game now: it has one, and nothing is due that
    /// needs it soon (a bot's move, a seat being taken back). Cheap enough to ask at
    /// every turn of the shell's loop.
    pub fn may_rest(&self) -> bool {
        let waiting_for_a_human = match self.lobby.status {
            LobbyStatus::Playing => self.human_to_move() && !self.turn_timed_out(),
            LobbyStatus::Finished => true,
            LobbyStatus::Open | LobbyStatus::Cancelled => false,
        };
        waiting_for_a_human && self.game.is_some() && self.reclaims.is_empty()
    }

    /// Lets go of the game if it [may](RoomMachine::may_rest); true when it did.
    pub fn rest(&mut self) -> bool {
        if !self.may_rest() {
            return false;
        }
        // `may_rest` has checked the rest of what makes a mover: a game in play whose
        // turn has not run out.
        let legal_moves = self
            .game
            .as_ref()
            .filter(|_| self.human_to_move())
            .map(|game| legal_moves(game).compacted());
        let Some(game) = self.game.take() else {
            return false;
        };
        self.resting = Some(Resting {
            to_move: game.current_player(),
            legal_moves,
        });
        true
    }

    /// Whether the room answers `request` as it is, resting or not: a hello, a catch-up
    /// and a goodbye read only the public state, the kept updates and the mover's legal
    /// moves. A hello that takes an abandoned seat back is the exception: taking it back
    /// is a change, and a change needs the game.
    pub fn answers_at_rest(&self, request: &Request) -> bool {
        match request {
            Request::Disconnect { .. } | Request::Resync { .. } => true,
            Request::Connect { token_hash, .. } => !token_hash
                .as_deref()
                .and_then(|hash| self.seat_of(hash))
                .is_some_and(|seat| seat.control == SeatControl::Abandoned),
            _ => false,
        }
    }

    /// Rebuilds the game of a resting room from its move log, and says whether it did
    /// (nothing to do for a room that is awake). An error means the log no longer
    /// replays, which the room cannot repair: its shell stops it.
    pub fn wake(&mut self) -> Result<bool, String> {
        if self.resting.is_none() {
            return Ok(false);
        }
        let (mut game, _) = game_for(&self.lobby, self.seats.len())?;
        for (number, mv) in self.log.moves().enumerate() {
            game.play(mv)
                .map_err(|error| format!("logged move {number} does not replay: {error}"))?;
        }
        self.game = Some(game);
        self.resting = None;
        Ok(true)
    }

    pub fn settings(&self) -> &RoomSettings {
        &self.settings
    }

    pub fn is_resting(&self) -> bool {
        self.resting.is_some()
    }

    /// The legal moves of the player to move, awake or resting (none before the game, and
    /// none kept at rest once it is over).
    pub(super) fn legal_moves_now(&self) -> Option<LegalMoves> {
        match (&self.game, &self.resting) {
            (Some(game), _) => Some(legal_moves(game)),
            (None, Some(resting)) => resting.legal_moves.clone(),
            (None, None) => None,
        }
    }

    /// The seat to move, awake or resting.
    pub(super) fn player_to_move(&self) -> Option<u8> {
        match (&self.game, &self.resting) {
            (Some(game), _) => game.current_player(),
            (None, Some(resting)) => resting.to_move,
            (None, None) => None,
        }
    }
}
