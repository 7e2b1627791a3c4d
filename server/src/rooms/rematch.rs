//! Rematch: once a game has finished, any seated person may offer to play again. When
//! every seat a person holds has accepted within the offer's time, the room writes a new
//! lobby with the same seats (bots included), rules, clock, privacy, rating and chat
//! policy, seats rotated by one so that another player begins, and starts it; each seat
//! is then told its new seat token. An offer declined by any of them, or not accepted in
//! time, ends, and everyone in the room is told so; another may be offered, up to
//! [`MOST_OFFERS`] per game.
//!
//! Offers live only in the room's memory: they are not the game's state, and nothing of
//! them is written until the new lobby is. Pure: the room machine keeps a [`Rematch`]
//! and the shell writes the [`RematchLobby`] it forms.

use crate::auth::Token;
use crate::rooms::Outgoing;
use crate::rooms::error::RoomError;
use crate::rooms::frames::RoomFrame;
use crate::rooms::outgoing::Audience;
use carcassonne_store::{LobbyRow, LobbyStatus, Millis, SeatControl, SeatRow};
use serde::Serialize;
use std::collections::BTreeSet;
use std::sync::Arc;
use utoipa::ToSchema;
use uuid::Uuid;

/// How many offers one finished game may see: a declined offer may be made again, but
/// not without end.
pub const MOST_OFFERS: u8 = 3;

/// Where a game's rematch stands, as everyone in the room is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RematchStatus {
    /// Offered and waiting for answers (`accepted` so far, `waiting_for` the rest).
    Offered,
    /// A seat said no (`by`): no rematch from this offer.
    Declined,
    /// Not every seat accepted before `expires_at`.
    Expired,
    /// Everyone accepted: the new game is `lobby`, already started; each seat is sent
    /// its own `rematch_seat`.
    Agreed,
}

/// A game's rematch: the offer waiting for answers, and how the last one ended.
#[derive(Debug, Default)]
pub struct Rematch {
    offer: Option<Offer>,
    offers_made: u8,
    /// While the new lobby is being written: answers wait for it.
    forming: bool,
    /// The last announcement, sent again to whoever connects later.
    last: Option<Arc<Outgoing>>,
    /// Once agreed: each old seat's new seat and token, sent to its connections.
    seats: Vec<(u8, Arc<Outgoing>)>,
}

#[derive(Clone, Debug)]
struct Offer {
    by: u8,
    accepted: BTreeSet<u8>,
    /// The seats that must accept: every seat a person holds.
    needed: BTreeSet<u8>,
    expires_at: Millis,
}

/// What an answer to the rematch did.
#[derive(Debug)]
pub enum RematchStep {
    /// Nothing to write: announce this.
    Announce(Arc<Outgoing>),
    /// Everyone accepted: write and start this lobby, then [`Rematch::formed`].
    Form(Box<RematchLobby>),
}

/// The new lobby, as the store writes it, and each seat's token.
#[derive(Debug)]
pub struct RematchLobby {
    pub lobby: LobbyRow,
    pub seats: Vec<SeatRow>,
    /// (old seat, new seat, token) for every seat a person holds.
    pub tokens: Vec<(u8, u8, Token)>,
}

impl Rematch {
    /// `seat` (a person's, of a finished game) accepts: an offer when none is waiting.
    pub fn accept(
        &mut self,
        seat: u8,
        game: (&LobbyRow, &[SeatRow]),
        offer_time: Millis,
        now: Millis,
    ) -> Result<RematchStep, RoomError> {
        self.require_open(game.0)?;
        let offer = match self.offer.as_mut() {
            Some(offer) => offer,
            None if self.offers_made >= MOST_OFFERS => {
                return Err(RoomError::RematchUnavailable(
                    "this game has had as many rematch offers as it may",
                ));
            }
            None => {
                self.offers_made += 1;
                self.offer.insert(Offer {
                    by: seat,
                    accepted: BTreeSet::new(),
                    needed: people(game.1),
                    expires_at: now + offer_time,
                })
            }
        };
        offer.accepted.insert(seat);
        if offer.accepted != offer.needed {
            return Ok(RematchStep::Announce(self.announce(RematchStatus::Offered)));
        }
        self.forming = true;
        Ok(RematchStep::Form(Box::new(rematch_lobby(
            game.0, game.1, now,
        ))))
    }

    /// `seat` declines the offer waiting: it ends.
    pub fn decline(&mut self, seat: u8, lobby: &LobbyRow) -> Result<Arc<Outgoing>, RoomError> {
        self.require_open(lobby)?;
        let Some(offer) = self.offer.as_mut() else {
            return Err(RoomError::RematchUnavailable("no rematch is offered"));
        };
        offer.by = seat;
        let update = self.announce(RematchStatus::Declined);
        self.offer = None;
        Ok(update)
    }

    /// The new lobby is written and started (`Ok`), or not (`Err`: the last acceptance is
    /// taken back, so that it can be given again). The announcements to send.
    pub fn formed(
        &mut self,
        formed: Result<&RematchLobby, ()>,
        last_to_accept: u8,
    ) -> Vec<Arc<Outgoing>> {
        self.forming = false;
        let Ok(formed) = formed else {
            if let Some(offer) = self.offer.as_mut() {
                offer.accepted.remove(&last_to_accept);
            }
            return Vec::new();
        };
        self.seats = formed
            .tokens
            .iter()
            .map(|(old, new, token)| (*old, seat_message(formed.lobby.id, *old, *new, token)))
            .collect();
        let mut updates = vec![self.announce_agreed(formed.lobby.id)];
        updates.extend(self.seats.iter().map(|(_, update)| update.clone()));
        self.offer = None;
        updates
    }

    /// An offer whose time is up ends; its announcement.
    pub fn expire(&mut self, now: Millis) -> Option<Arc<Outgoing>> {
        let due = self
            .offer
            .as_ref()
            .is_some_and(|offer| now >= offer.expires_at && !self.forming);
        if !due {
            return None;
        }
        let update = self.announce(RematchStatus::Expired);
        self.offer = None;
        Some(update)
    }

    /// When the offer waiting expires, if one is.
    pub fn expires_at(&self) -> Option<Millis> {
        self.offer.as_ref().map(|offer| offer.expires_at)
    }

    /// Whether an offer is waiting for answers or being formed: the room stays for it.
    pub fn pending(&self) -> bool {
        self.offer.is_some() || self.forming
    }

    /// What a connection of `seat` (none: a spectator) that connects now is told.
    pub fn catch_up(&self, seat: Option<u8>) -> Vec<Arc<Outgoing>> {
        let mine = self
            .seats
            .iter()
            .filter(|(old, _)| Some(*old) == seat)
            .map(|(_, update)| update.clone());
        self.last.iter().cloned().chain(mine).collect()
    }

    fn require_open(&self, lobby: &LobbyRow) -> Result<(), RoomError> {
        if lobby.status != LobbyStatus::Finished {
            return Err(RoomError::RematchUnavailable(
                "a rematch is offered once the game has finished",
            ));
        }
        if self.forming || !self.seats.is_empty() {
            return Err(RoomError::RematchUnavailable(
                "the rematch is agreed already",
            ));
        }
        Ok(())
    }

    fn announce(&mut self, status: RematchStatus) -> Arc<Outgoing> {
        let offer = self.offer.as_ref();
        let frame = RoomFrame::Rematch {
            status,
            by: offer.map(|offer| offer.by),
            accepted: offer.map_or_else(Vec::new, |offer| offer.accepted.iter().copied().collect()),
            waiting_for: offer.map_or_else(Vec::new, |offer| {
                offer.needed.difference(&offer.accepted).copied().collect()
            }),
            expires_at: offer.map(|offer| offer.expires_at),
            lobby: None,
        };
        self.remember(frame)
    }

    fn announce_agreed(&mut self, lobby: Uuid) -> Arc<Outgoing> {
        let offer = self.offer.as_ref();
        let frame = RoomFrame::Rematch {
            status: RematchStatus::Agreed,
            by: offer.map(|offer| offer.by),
            accepted: offer.map_or_else(Vec::new, |offer| offer.accepted.iter().copied().collect()),
            waiting_for: Vec::new(),
            expires_at: None,
            lobby: Some(lobby),
        };
        self.remember(frame)
    }

    fn remember(&mut self, frame: RoomFrame) -> Arc<Outgoing> {
        let update = Arc::new(Outgoing::plain(None, frame.to_json()));
        self.last = Some(update.clone());
        update
    }
}

/// The seats people hold (whatever they did in the game): each must accept.
fn people(seats: &[SeatRow]) -> BTreeSet<u8> {
    seats
        .iter()
        .filter(|seat| seat.bot.is_none())
        .map(|seat| seat.seat)
        .collect()
}

/// To one seat's connections: where its player sits now, and the token to play there.
fn seat_message(lobby: Uuid, old_seat: u8, new_seat: u8, token: &Token) -> Arc<Outgoing> {
    let frame = RoomFrame::RematchSeat {
        lobby,
        seat: new_seat,
        token: token.reveal().to_owned(),
    };
    let mut update = Outgoing::plain(None, frame.to_json());
    update.audience = Audience::Seat(old_seat);
    Arc::new(update)
}

/// The finished game's lobby again, as a new full lobby: seat `k` is the old seat
/// `k + 1` (the old seat 0 last), so the player who moved second now moves first. Every
/// person gets a new token; bots keep their level and name; the creator stays creator.
pub fn rematch_lobby(old: &LobbyRow, seats: &[SeatRow], now: Millis) -> RematchLobby {
    let count = seats.len();
    let mut ordered: Vec<&SeatRow> = seats.iter().collect();
    ordered.sort_by_key(|seat| seat.seat);
    let lobby = LobbyRow {
        id: Uuid::new_v4(),
        name: old.name.clone(),
        public: old.public,
        invite_hash: old.invite_hash.clone(),
        seat_count: count as u8,
        rules: old.rules.clone(),
        clock: old.clock,
        status: LobbyStatus::Open,
        seed: None,
        deck_salt: None,
        seq: 0,
        created_at: now,
        started_at: None,
        finished_at: None,
        rated: old.rated,
        chat_policy: old.chat_policy,
    };
    let mut new_seats = Vec::with_capacity(count);
    let mut tokens = Vec::new();
    for number in 0..count {
        let previous = ordered[(number + 1) % count];
        let token = Token::generate();
        new_seats.push(SeatRow {
            seat: number as u8,
            display_name: previous.display_name.clone(),
            player_id: previous.player_id,
            token_hash: token.hash(),
            creator: previous.creator,
            joined_at: now,
            control: SeatControl::Human,
            control_seq: 0,
            bot: previous.bot.clone(),
        });
        if previous.bot.is_none() {
            tokens.push((previous.seat, number as u8, token));
        }
    }
    RematchLobby {
        lobby,
        seats: new_seats,
        tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use carcassonne_core::Rules;
    use carcassonne_store::{ChatPolicy, TimeControl};

    fn finished_lobby() -> LobbyRow {
        LobbyRow {
            id: Uuid::from_u128(1),
            name: "Friday".into(),
            public: false,
            invite_hash: Some("abc".into()),
            seat_count: 3,
            rules: Rules::default(),
            clock: TimeControl::Turn {
                per_turn_ms: 30_000,
                reserve_ms: 0,
            },
            status: LobbyStatus::Finished,
            seed: Some(7),
            deck_salt: Some("00".repeat(32)),
            seq: 80,
            created_at: 10,
            started_at: Some(20),
            finished_at: Some(30),
            rated: false,
            chat_policy: ChatPolicy::Players,
        }
    }

    fn seat(number: u8, name: &str, bot: Option<&str>) -> SeatRow {
        SeatRow {
            seat: number,
            display_name: name.into(),
            player_id: None,
            token_hash: format!("old{number}"),
            creator: number == 2,
            joined_at: 0,
            control: if number == 1 {
                SeatControl::Resigned
            } else {
                SeatControl::Human
            },
            control_seq: 5,
            bot: bot.map(str::to_owned),
        }
    }

    fn seats() -> Vec<SeatRow> {
        vec![
            seat(0, "Ann", None),
            seat(1, "Bob", None),
            seat(2, "Greedy bot 3", Some("greedy")),
        ]
    }

    fn frame(update: &Outgoing) -> serde_json::Value {
        serde_json::from_str(&update.for_others.to_string()).unwrap()
    }

    fn announced(step: RematchStep) -> serde_json::Value {
        match step {
            RematchStep::Announce(update) => frame(&update),
            RematchStep::Form(_) => panic!("formed too early"),
        }
    }

    #[test]
    fn the_new_lobby_rotates_the_seats_and_keeps_the_rest() {
        let (old, seats) = (finished_lobby(), seats());
        let formed = rematch_lobby(&old, &seats, 99);
        let names: Vec<&str> = formed
            .seats
            .iter()
            .map(|seat| seat.display_name.as_str())
            .collect();
        assert_eq!(names, ["Bob", "Greedy bot 3", "Ann"]);
        assert_eq!(formed.seats[1].bot.as_deref(), Some("greedy"));
        assert!(formed.seats[1].creator, "the bot's seat was the creator's");
        assert!(
            formed
                .seats
                .iter()
                .all(|seat| seat.control == SeatControl::Human)
        );
        let lobby = &formed.lobby;
        assert_ne!(lobby.id, old.id);
        assert_eq!(
            (lobby.status, lobby.seq, lobby.seed),
            (LobbyStatus::Open, 0, None)
        );
        assert_eq!((lobby.clock, lobby.public), (old.clock, false));
        assert_eq!(lobby.invite_hash, old.invite_hash);
        assert_eq!(lobby.chat_policy, ChatPolicy::Players);
        assert_eq!(lobby.rules, old.rules);
        // Old seat 1 (Bob) now sits first, old seat 0 (Ann) last; the bot gets no token.
        let moved: Vec<(u8, u8)> = formed.tokens.iter().map(|(o, n, _)| (*o, *n)).collect();
        assert_eq!(moved, [(1, 0), (0, 2)]);
        for (_, new, token) in &formed.tokens {
            assert_eq!(formed.seats[*new as usize].token_hash, token.hash());
        }
    }

    #[test]
    fn everyone_accepting_forms_the_game_and_each_seat_learns_its_token() {
        let (lobby, seats) = (finished_lobby(), seats());
        let mut rematch = Rematch::default();
        let offered = announced(rematch.accept(1, (&lobby, &seats), 60_000, 1_000).unwrap());
        assert_eq!(offered["status"], "offered");
        assert_eq!(offered["by"], 1);
        assert_eq!(offered["waiting_for"], serde_json::json!([0]));
        assert_eq!(offered["expires_at"], 61_000);
        let again = announced(rematch.accept(1, (&lobby, &seats), 60_000, 2_000).unwrap());
        assert_eq!(
            again["accepted"],
            serde_json::json!([1]),
            "accepting twice is once"
        );
        let RematchStep::Form(formed) = rematch.accept(0, (&lobby, &seats), 60_000, 3_000).unwrap()
        else {
            panic!("everyone accepted");
        };
        assert!(rematch.pending());
        assert!(
            rematch.expire(70_000).is_none(),
            "an offer being formed never expires"
        );
        let refused = rematch.accept(0, (&lobby, &seats), 60_000, 3_000);
        assert!(matches!(refused, Err(RoomError::RematchUnavailable(_))));

        let updates = rematch.formed(Ok(&formed), 0);
        assert_eq!(frame(&updates[0])["status"], "agreed");
        assert_eq!(frame(&updates[0])["lobby"], formed.lobby.id.to_string());
        let to_seats: Vec<(Audience, serde_json::Value)> = updates[1..]
            .iter()
            .map(|update| (update.audience, frame(update)))
            .collect();
        assert_eq!(to_seats.len(), 2);
        assert_eq!(to_seats[0].0, Audience::Seat(1));
        assert_eq!(to_seats[0].1["seat"], 0);
        let token = to_seats[0].1["token"].as_str().unwrap();
        assert_eq!(Token::from_client(token).hash(), formed.seats[0].token_hash);
        assert!(!rematch.pending());
        // A late connection is told again; a spectator never sees a token.
        assert_eq!(rematch.catch_up(Some(0)).len(), 2);
        assert_eq!(rematch.catch_up(None).len(), 1);
        assert!(matches!(
            rematch.accept(1, (&lobby, &seats), 60_000, 4_000),
            Err(RoomError::RematchUnavailable(_))
        ));
    }

    #[test]
    fn a_failed_write_takes_the_last_acceptance_back() {
        let (lobby, seats) = (finished_lobby(), seats());
        let mut rematch = Rematch::default();
        announced(rematch.accept(0, (&lobby, &seats), 60_000, 0).unwrap());
        let RematchStep::Form(_) = rematch.accept(1, (&lobby, &seats), 60_000, 0).unwrap() else {
            panic!("everyone accepted");
        };
        assert!(rematch.formed(Err(()), 1).is_empty());
        let again = announced(rematch.accept(0, (&lobby, &seats), 60_000, 0).unwrap());
        assert_eq!(again["waiting_for"], serde_json::json!([1]));
    }

    #[test]
    fn declined_and_expired_offers_end_and_a_game_has_at_most_three() {
        let (lobby, seats) = (finished_lobby(), seats());
        let mut rematch = Rematch::default();
        let declined = rematch.decline(0, &lobby);
        assert!(
            matches!(declined, Err(RoomError::RematchUnavailable(_))),
            "nothing offered"
        );
        announced(rematch.accept(0, (&lobby, &seats), 60_000, 0).unwrap());
        let declined = frame(&rematch.decline(1, &lobby).unwrap());
        assert_eq!(
            (declined["status"].clone(), declined["by"].clone()),
            ("declined".into(), 1.into())
        );
        assert!(!rematch.pending());
        assert_eq!(frame(&rematch.catch_up(None)[0])["status"], "declined");

        announced(rematch.accept(1, (&lobby, &seats), 1_000, 5_000).unwrap());
        assert_eq!(rematch.expires_at(), Some(6_000));
        assert!(rematch.expire(5_999).is_none());
        assert_eq!(frame(&rematch.expire(6_000).unwrap())["status"], "expired");
        assert!(!rematch.pending());

        announced(rematch.accept(0, (&lobby, &seats), 1_000, 7_000).unwrap());
        rematch.decline(0, &lobby).unwrap();
        let fourth = rematch.accept(0, (&lobby, &seats), 1_000, 8_000);
        assert!(matches!(fourth, Err(RoomError::RematchUnavailable(_))));
    }

    #[test]
    fn only_a_finished_game_has_a_rematch() {
        let mut lobby = finished_lobby();
        lobby.status = LobbyStatus::Playing;
        let mut rematch = Rematch::default();
        let early = rematch.accept(0, (&lobby, &seats()), 60_000, 0);
        assert!(matches!(early, Err(RoomError::RematchUnavailable(_))));
    }
}
