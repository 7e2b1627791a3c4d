//! A room at rest: between a human's moves, a room lets go of the core's game, the
//! largest part of its memory, and rebuilds it from its move log when it is next needed.
//!
//! At human pace a game waits seconds for each move and takes microseconds to make it,
//! so almost every room of a busy node is waiting. The game is a pure function of the
//! deck's seed and the moves, which the room keeps anyway (the move log): replaying a
//! whole game is about 15 µs, where keeping it costs 13 KB a room for all the minutes of
//! the game. A resting room keeps what it reads while waiting: who is to move, for the
//! turn's deadline. The shell wakes the game before it hands the room any work.

use super::*;

/// What a resting room keeps of its game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Resting {
    /// The seat to move when the game was put to rest (none once it is over).
    pub to_move: Option<u8>,
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
        let Some(game) = self.game.take() else {
            return false;
        };
        self.resting = Some(Resting {
            to_move: game.current_player(),
        });
        true
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

    /// The seat to move, awake or resting.
    pub(super) fn player_to_move(&self) -> Option<u8> {
        match (&self.game, &self.resting) {
            (Some(game), _) => game.current_player(),
            (None, Some(resting)) => resting.to_move,
            (None, None) => None,
        }
    }
}
