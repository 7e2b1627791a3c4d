//! The node's side of a rematch: a room that agreed on one has written its lobby, and
//! asks here (through its [`RoomOpener`]) for the lobby's room to be opened and its game
//! started, in the seats' order the room wrote. In cluster mode the new lobby is this
//! node's from its insert, as any lobby created here.

use crate::rooms::Request;
use crate::rooms::actor::Room;
use crate::rooms::error::RoomError;
use crate::rooms::registry::OpenOrder;
use crate::rooms::view::LobbyView;
use crate::state::AppState;
use carcassonne_store::{LobbyRow, SeatRow};
use tokio::sync::mpsc;

/// Opens and starts every room asked for until shutdown.
pub async fn open_rematches(state: AppState, mut orders: mpsc::UnboundedReceiver<OpenOrder>) {
    loop {
        let order = tokio::select! {
            order = orders.recv() => order,
            () = state.shutdown.cancelled() => return,
        };
        let Some(order) = order else { return };
        let state = state.clone();
        state.tasks.clone().spawn(async move {
            let outcome = open_and_start(&state, order.lobby, order.seats).await;
            let _ = order.started.send(outcome);
        });
    }
}

async fn open_and_start(
    state: &AppState,
    lobby: LobbyRow,
    seats: Vec<SeatRow>,
) -> Result<(), RoomError> {
    let id = lobby.id;
    let room = Room::open(lobby, seats, state.rooms.services.clone());
    crate::cluster::start_new_room(&state.rooms, state.cluster.as_ref(), room).await?;
    let room = state
        .find_room(id)
        .await
        .map_err(|_| RoomError::StorageUnavailable)?
        .ok_or(RoomError::NotFound("the rematch's room is not open"))?;
    let start = Request::StartMatched {
        in_seat_order: true,
    };
    room.ask::<LobbyView>(start).await?;
    tracing::info!(lobby = %id, "rematch started");
    Ok(())
}
