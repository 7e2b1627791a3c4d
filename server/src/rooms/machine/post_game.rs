//! After a finished game: the room stays for a while ([`RoomSettings::post_game`]) so
//! that its players can say "good game" and agree on a rematch ([`Rematch`]), then
//! stops. A cancelled lobby or aborted game stops at once.

use super::*;
use crate::rooms::rematch::{RematchLobby, RematchStep};

/// Once a rematch is agreed the room stays at least this long, so that a player whose
/// connection dropped at that moment still learns their new seat on reconnecting.
const AGREED_STAY_MS: Millis = 30_000;

impl RoomMachine {
    /// A seated person answers the rematch: `accept` (an offer, when none is waiting) or
    /// decline.
    pub fn answer_rematch(
        &mut self,
        token_hash: &str,
        accept: bool,
        now: Millis,
    ) -> Result<RematchStep, RoomError> {
        let seat = self.seat_of(token_hash).ok_or(RoomError::BadToken)?;
        if seat.bot.is_some() {
            return Err(RoomError::BadToken);
        }
        let seat = seat.seat;
        if !accept {
            return Ok(RematchStep::Announce(
                self.rematch.decline(seat, &self.lobby)?,
            ));
        }
        let offer_time = self.settings.rematch_offer.as_millis() as Millis;
        let step = self
            .rematch
            .accept(seat, (&self.lobby, &self.seats), offer_time, now)?;
        if let RematchStep::Announce(_) = &step {
            self.stay_until(self.rematch.expires_at().unwrap_or(now));
        }
        Ok(step)
    }

    /// The rematch's lobby was written and started (or not): the announcements to send.
    pub fn rematch_formed(
        &mut self,
        formed: Result<&RematchLobby, ()>,
        last_to_accept: u8,
        now: Millis,
    ) -> Vec<Arc<Outgoing>> {
        if formed.is_ok() {
            self.stay_until(now + AGREED_STAY_MS);
        }
        self.rematch.formed(formed, last_to_accept)
    }

    /// The announcement of an offer whose time is up, if one is.
    pub fn expire_rematch(&mut self, now: Millis) -> Option<Arc<Outgoing>> {
        self.rematch.expire(now)
    }

    /// Whether an ended room may stop now: at once for a cancelled lobby, after the
    /// post-game stay for a finished game, and never while a rematch offer waits.
    pub fn done_with_post_game(&self, now: Millis) -> bool {
        self.ended
            && !self.rematch.pending()
            && self.post_game_until.is_none_or(|until| now >= until)
    }

    /// The seat a token holds, if a person holds it.
    pub fn seat_number(&self, token_hash: &str) -> Option<u8> {
        self.seat_of(token_hash).map(|seat| seat.seat)
    }

    /// When a finished game's room must come back: an offer's expiry or the end of its
    /// stay.
    pub(super) fn post_game_wakeup(&self) -> Option<Millis> {
        self.rematch.expires_at().or(self.post_game_until)
    }

    /// Starts the post-game stay of a game that just finished.
    pub(super) fn begin_post_game(&mut self, finished_at: Millis) {
        let stay = self.settings.post_game.as_millis() as Millis;
        self.post_game_until = Some(finished_at + stay);
    }

    fn stay_until(&mut self, until: Millis) {
        let current = self.post_game_until.unwrap_or(until);
        self.post_game_until = Some(current.max(until));
    }
}
