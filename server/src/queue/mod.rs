//! Quick play: players queue for a game, and a matchmaker forms the games.
//!
//! A ticket (`POST /api/queue`, see `api::queue`) waits in the database. Every node runs
//! the matchmaker: each round it asks the store for the waiting tickets, plans games of
//! them ([`plan`]), and the store writes those lobbies, seats and matched tickets in the
//! same transaction that took the tickets. Only then does this node open the rooms and
//! start the games. A node that dies before that leaves full lobbies in the database:
//! restored (or taken over, in a cluster) like any lobby, they are started by whichever
//! node a matched player next asks about their ticket.

pub mod plan;

use crate::api::lobbies::live_room;
use crate::clock::now_millis;
use crate::error::AppError;
use crate::rooms::Request;
use crate::rooms::actor::Room;
use crate::rooms::error::RoomError;
use crate::rooms::view::LobbyView;
use crate::state::AppState;
use carcassonne_store::{MatchPlanner, StoreError};
use plan::{MatchPolicy, form_lobby, plan_games};
use std::time::Duration;
use uuid::Uuid;

/// The most tickets one round looks at: the oldest, which are the most due.
const ROUND_TICKETS: u32 = 1_000;

/// How the queue runs.
#[derive(Clone, Debug)]
pub struct QueueSettings {
    /// How tickets are matched.
    pub policy: MatchPolicy,
    /// The most tickets that may wait at once, over all players.
    pub max_waiting: u64,
    /// A ticket that waits this long expires.
    pub ticket_ttl: Duration,
    /// Time between two matchmaking rounds of this node.
    pub round_interval: Duration,
}

impl Default for QueueSettings {
    fn default() -> QueueSettings {
        QueueSettings {
            policy: MatchPolicy::default(),
            max_waiting: 10_000,
            ticket_ttl: Duration::from_secs(15 * 60),
            round_interval: Duration::from_millis(500),
        }
    }
}

/// Runs this node's matchmaker until shutdown.
pub async fn run_matchmaker(state: AppState) {
    let settings = state.queue.clone();
    let mut ticks = tokio::time::interval(settings.round_interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = state.shutdown.cancelled() => return,
        }
        // A round that fails wrote nothing: its tickets wait for the next one. A
        // database away for minutes makes one warning, not two a second.
        match matchmaking_round(&state, &settings).await {
            Ok(()) if failing => {
                tracing::info!("matchmaking rounds run again");
                failing = false;
            }
            Ok(()) => {}
            Err(error) if failing => tracing::debug!(%error, "a matchmaking round failed"),
            Err(error) => {
                tracing::warn!(%error, "a matchmaking round failed; retrying every round");
                failing = true;
            }
        }
    }
}

/// One round: the games formed are written, then opened and started here.
async fn matchmaking_round(state: &AppState, settings: &QueueSettings) -> Result<(), StoreError> {
    let now = now_millis();
    let policy = settings.policy.clone();
    let plan: MatchPlanner = Box::new(move |tickets| {
        plan_games(tickets, now, &policy)
            .iter()
            .map(|game| form_lobby(game, tickets, now, policy.bot_level))
            .collect()
    });
    let round = state.store.queue_round(now, ROUND_TICKETS, plan).await?;
    if round.expired > 0 {
        tracing::info!(expired = round.expired, "queue tickets expired");
    }
    // Every room is opened before any game starts: in a cluster this node owns the
    // lobbies from their insert, and a lobby it owns but has not opened for long looks
    // abandoned to its lease keeper. The starts then run side by side.
    let mut opened = Vec::new();
    for formed in round.lobbies {
        let id = formed.lobby.id;
        tracing::info!(lobby = %id, seats = formed.seats.len(), "quick-play game formed");
        let room = Room::open(formed.lobby, formed.seats, state.rooms.services.clone());
        match crate::cluster::start_new_room(&state.rooms, state.cluster.as_ref(), room).await {
            Ok(()) => opened.push(id),
            Err(error) => not_started_yet(id, &error.into()),
        }
    }
    for id in opened {
        let state = state.clone();
        state.tasks.clone().spawn(async move {
            if let Err(error) = start_matched_game(&state, id).await {
                not_started_yet(id, &error);
            }
        });
    }
    Ok(())
}

/// The lobby is in the database: its players' next look at their tickets starts it
/// (see `start_matched_game`).
fn not_started_yet(id: Uuid, error: &AppError) {
    tracing::warn!(lobby = %id, %error, "a formed game did not start yet");
}

/// Starts the formed lobby `id`, wherever its room is; a game already started is left
/// as it is.
pub async fn start_matched_game(state: &AppState, id: Uuid) -> Result<(), AppError> {
    let room = live_room(state, id).await?;
    let start = Request::StartMatched {
        in_seat_order: false,
    };
    match room.ask::<LobbyView>(start).await {
        Ok(_) | Err(RoomError::LobbyNotOpen(_)) => Ok(()),
        Err(RoomError::Relayed { code, .. }) if code == "lobby_not_open" => Ok(()),
        Err(error) => Err(error.into()),
    }
}
