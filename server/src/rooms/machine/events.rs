//! The room's own events: what happened to the lobby, its seats and the turns' clocks.
//! An update announces them before the engine's events ([`carcassonne_core::Event`]);
//! [`UpdateEvent`] is the schema of both together.

use carcassonne_core::Event;
use carcassonne_store::ratings::RatingChange;
use serde::Serialize;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{OneOf, Schema};
use utoipa::{PartialSchema, ToSchema};

/// An event of the room, as an update carries it.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RoomEvent {
    SeatTaken {
        seat: u8,
        name: String,
        /// The level of the bot that took the seat; `null` for a person.
        bot: Option<String>,
    },
    SeatFreed {
        seat: u8,
    },
    /// For each new seat, the seat it had in the lobby.
    GameStarted {
        previous_seats: Vec<u8>,
    },
    LobbyCancelled {
        #[schema(inline)]
        reason: LobbyCancelReason,
    },
    /// `seat` aborted the game before every seat had placed a tile: it is no match.
    GameAborted {
        seat: u8,
    },
    /// A bot plays `seat` to the end; it cannot win.
    SeatResigned {
        seat: u8,
    },
    /// `seat` timed out 3 turns in a row; a bot plays it until its owner says hello.
    SeatAbandoned {
        seat: u8,
    },
    /// The owner of the abandoned `seat` is back.
    SeatReclaimed {
        seat: u8,
    },
    /// `seat` got a new token (recovered with the player secret); the old one is void.
    SeatTokenReplaced {
        seat: u8,
    },
    /// No human seat was left to a human: the game ended as it stood.
    GameAbandoned {},
    /// The turn of `seat` ran out; a bot plays the rest of it.
    TurnTimedOut {
        seat: u8,
        timeouts_in_row: u32,
    },
    /// This update's move was made by a bot for `seat`.
    BotMoved {
        seat: u8,
        #[schema(inline)]
        reason: BotMoveReason,
    },
    /// A rated game ended: each seat's rating change, as the match records it. The
    /// update after the game's last, stored in the same transaction.
    RatingsChanged {
        changes: Vec<RatingChange>,
    },
}

/// The events of the update that announces a rated match's `changes`, as JSON text:
/// what the store writes with the match ([`carcassonne_store::StoreOptions`]'s
/// `ratings_announcement`), and what the room broadcasts.
pub fn ratings_announcement(changes: &[RatingChange]) -> String {
    let event = RoomEvent::RatingsChanged {
        changes: changes.to_vec(),
    };
    serde_json::to_string(&[event]).expect("events serialize")
}

/// Why a lobby was cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LobbyCancelReason {
    /// The creator cancelled it or left.
    Creator,
    /// No change for the lobby idle time.
    Expired,
}

/// Why a bot made a move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BotMoveReason {
    /// The turn ran out of time.
    Timeout,
    /// A bot holds the seat.
    Bot,
    /// The seat is abandoned.
    Abandoned,
    /// The seat resigned.
    Resigned,
}

/// Any event of an update: the room's, then the engine's for a move. Only a schema (the
/// events travel as JSON text, see `EventText`), so it has no values.
pub enum UpdateEvent {}

impl PartialSchema for UpdateEvent {
    /// One `oneOf` of every event, each told apart by its `type`.
    fn schema() -> RefOr<Schema> {
        let mut events = OneOf::new();
        events.description =
            Some("What happened, in order: lobby events, then the engine's own for moves.".into());
        for part in [RoomEvent::schema(), Event::schema()] {
            match part {
                RefOr::T(Schema::OneOf(part)) => events.items.extend(part.items),
                _ => unreachable!("tagged enums derive a oneOf"),
            }
        }
        RefOr::T(Schema::OneOf(events))
    }
}

impl ToSchema for UpdateEvent {
    fn name() -> std::borrow::Cow<'static, str> {
        "EventSchema".into()
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        RoomEvent::schemas(schemas);
        Event::schemas(schemas);
    }
}
