//! A room's writes: a committed change as the store writes it, and what became of a write
//! whose reply was lost.
//!
//! A room acknowledges and broadcasts a change only once the database holds it. When a
//! write's outcome is unknown (its connection broke around the COMMIT, or the database
//! stopped answering), the room reads back what is stored at the write's `seq`
//! ([`Store::stored_at`]) and acts only on proof ([`landing`]):
//!
//! * a move landed when the move stored at its `seq` is this command's, by seat and
//!   command id, not merely when the stored `seq` reached it: in a cluster, another node
//!   that took the game over may have written that `seq` with another move;
//! * and the game must still be this node's, under a lease live on the database's clock.
//!
//! Without both, the room neither acknowledges nor broadcasts: it stops, and its clients
//! reconnect to whichever node owns the game (which answers a resent command id with its
//! original `ack` if the move is stored).
//!
//! Every read-back is bounded by [`SETTLE_WAIT`]: a room answers within the database's
//! acquire timeout and a second, whatever the database does.

use crate::rooms::machine::Change;
use carcassonne_store::ratings::RatingChange;
use carcassonne_store::{FinalChange, LoggedChange, Store, StoreError, StoredAt};
use std::time::Duration;
use uuid::Uuid;

/// The longest a room spends reading back what a write left: a client hears within the
/// acquire timeout and this.
pub const SETTLE_WAIT: Duration = Duration::from_secs(1);

/// What became of a write, or of an earlier one whose outcome was unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Landing {
    /// The database holds this write, and the game is still this node's.
    Mine,
    /// The write is not stored (yet).
    NotStored,
    /// The game is another node's now, or this node cannot prove it is still its own:
    /// the room must stop deciding it.
    Lost,
    /// The database cannot say now.
    Unknown,
}

/// Who may write the game, from the database's row, for the node `node` (None: a single
/// node, whose games have no owner).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    ThisNode,
    /// This node's name, but its lease has lapsed: another node may take the game at any
    /// moment, so nothing can be proved until the node renews.
    ThisNodeLapsed,
    Another,
}

fn owner(stored: &StoredAt, node: Option<&str>) -> Owner {
    match (node, stored.owner.as_deref()) {
        (None, None) => Owner::ThisNode,
        (Some(me), Some(owner)) if me == owner && stored.owner_alive => Owner::ThisNode,
        (Some(me), Some(owner)) if me == owner => Owner::ThisNodeLapsed,
        // Another node's, or released (a cluster node never writes a game it does not
        // own), or owned although this node runs alone (it is fenced out).
        _ => Owner::Another,
    }
}

/// What the database's row `stored` says of `change`, written by node `node` as update
/// `seq`.
pub fn landing(
    stored: Option<&StoredAt>,
    change: &Change,
    seq: u64,
    node: Option<&str>,
) -> Landing {
    let Some(stored) = stored else {
        return Landing::Unknown;
    };
    let owner = owner(stored, node);
    if owner == Owner::Another {
        return Landing::Lost;
    }
    if stored.seq < seq {
        return Landing::NotStored;
    }
    // The stored `seq` reached this write's. A move proves itself by its command; any
    // other change is this node's only if nobody else could have written the game: it
    // is still this node's, and a node never takes back a game while its room is loaded.
    let proved_mine = match command_of(change) {
        Some(command) => stored.command_at.as_ref() == Some(&command),
        None => true,
    };
    match (proved_mine, owner) {
        (false, _) => Landing::Lost,
        (true, Owner::ThisNode) => Landing::Mine,
        (true, _) => Landing::Unknown,
    }
}

/// The seat and command id a change's move carries, if it is a move.
fn command_of(change: &Change) -> Option<(u8, String)> {
    match change {
        Change::Moved { row, .. } => Some((row.seat, row.command_id.clone())),
        _ => None,
    }
}

/// Reads back what the write of `change` as update `seq` left, a few times over half a
/// second (a COMMIT whose reply was lost may still be taking effect when the first read
/// arrives), and within [`SETTLE_WAIT`] in all.
pub async fn await_landing(
    store: &Store,
    game: Uuid,
    change: &Change,
    seq: u64,
    node: Option<&str>,
) -> Landing {
    const READS: u32 = 5;
    const PAUSE: Duration = Duration::from_millis(100);
    let reads = async {
        let mut outcome = read_landing(store, game, change, seq, node).await;
        for _ in 1..READS {
            // Only "not yet" is worth asking again; an unreachable database stays so.
            if outcome != Landing::NotStored {
                break;
            }
            tokio::time::sleep(PAUSE).await;
            outcome = read_landing(store, game, change, seq, node).await;
        }
        outcome
    };
    tokio::time::timeout(SETTLE_WAIT, reads)
        .await
        .unwrap_or(Landing::Unknown)
}

/// One read-back, within [`SETTLE_WAIT`]: whether the write of `change` as `seq` landed.
pub async fn settle(
    store: &Store,
    game: Uuid,
    change: &Change,
    seq: u64,
    node: Option<&str>,
) -> Landing {
    tokio::time::timeout(SETTLE_WAIT, read_landing(store, game, change, seq, node))
        .await
        .unwrap_or(Landing::Unknown)
}

async fn read_landing(
    store: &Store,
    game: Uuid,
    change: &Change,
    seq: u64,
    node: Option<&str>,
) -> Landing {
    // Boxed for the reason given at `write`.
    match Box::pin(store.stored_at(game, seq)).await {
        Ok(stored) => {
            let landing = landing(stored.as_ref(), change, seq, node);
            if landing == Landing::Lost {
                tracing::warn!(seq, ?stored, "a write cannot be proved this node's");
            }
            landing
        }
        Err(error) => {
            tracing::warn!(%error, seq, "cannot read back a write yet");
            Landing::Unknown
        }
    }
}

/// The database write of `change` as update `seq` of game `game`.
///
/// Each store call is boxed on its own. The store's futures (sqlx's above all) are
/// kilobytes large; awaited in place they would make this future, and every future of
/// the room that awaits it, as large as the largest of them, and the runtime copies a
/// future whole each time it is moved or boxed. That copying was a tenth of the server's
/// time under load. Boxed one by one, a move's write allocates only the small future
/// that hands the move to the group-commit writer.
///
/// Every change but a move is written with the events of its update, which nothing else
/// could give back later (see [`Change::logged_events`]).
///
/// `Some` when the write also stored the update announcing a rated match's rating
/// changes (see [`Store::finish_game`]), with those changes.
pub async fn write(
    store: &Store,
    game: Uuid,
    change: &Change,
    seq: u64,
) -> Result<Option<Vec<RatingChange>>, StoreError> {
    let logged = match change {
        Change::Moved {
            row,
            result: Some(result),
        } => return Box::pin(store.finish_game(game, FinalChange::Move(row), result)).await,
        Change::Moved { row, .. } => {
            return Box::pin(store.append_move(game, row)).await.map(|()| None);
        }
        Change::SeatChanged {
            row,
            result: Some(result),
            ..
        } => {
            let events = change.logged_events_text().unwrap_or_default();
            let last = FinalChange::Seat { seat: row, seq };
            return Box::pin(store.finish_game_logged(game, last, result, &events)).await;
        }
        Change::SeatTaken(row) => LoggedChange::SeatAdded(row),
        Change::SeatFreed(seat) => LoggedChange::SeatRemoved(*seat),
        Change::Cancelled(_) => LoggedChange::Cancelled,
        Change::Started { lobby, seats, .. } => LoggedChange::Started {
            seats,
            seed: lobby.seed.unwrap_or_default(),
            deck_salt: lobby.deck_salt.as_deref().unwrap_or_default(),
            started_at: lobby.started_at.unwrap_or_default(),
        },
        Change::SeatChanged { row, .. } => LoggedChange::SeatUpdated(row),
    };
    let events = change.logged_events_text().unwrap_or_default();
    Box::pin(store.write_logged(game, logged, seq, &events)).await?;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use carcassonne_core::Move;
    use carcassonne_store::{MoveOrigin, MoveRow};

    fn moved(seat: u8, id: &str, seq: u64) -> Change {
        let row = MoveRow {
            seq,
            seat,
            command_id: id.to_owned(),
            mv: Move::Pass,
            created_at: 0,
            origin: MoveOrigin::Player,
        };
        Change::Moved { row, result: None }
    }

    fn stored(seq: u64, owner: Option<&str>, alive: bool, at: Option<(u8, &str)>) -> StoredAt {
        StoredAt {
            seq,
            owner: owner.map(str::to_owned),
            owner_alive: alive,
            command_at: at.map(|(seat, id)| (seat, id.to_owned())),
        }
    }

    #[test]
    fn a_move_landed_only_if_its_own_command_is_stored_at_its_seq() {
        let x = moved(0, "x", 3);
        let mine = stored(3, Some("n1"), true, Some((0, "x")));
        assert_eq!(landing(Some(&mine), &x, 3, Some("n1")), Landing::Mine);
        // The fork of the issue: another node took the game over and stored its own
        // move at seq 3. The stored seq reached 3, but that is not this write.
        let other_move = stored(3, Some("n2"), true, Some((0, "y")));
        assert_eq!(landing(Some(&other_move), &x, 3, Some("n1")), Landing::Lost);
        // Even if this node still owned it by name, another command at seq 3 is not ours.
        let other_command = stored(3, Some("n1"), true, Some((0, "y")));
        assert_eq!(
            landing(Some(&other_command), &x, 3, Some("n1")),
            Landing::Lost
        );
        let not_yet = stored(2, Some("n1"), true, None);
        assert_eq!(
            landing(Some(&not_yet), &x, 3, Some("n1")),
            Landing::NotStored
        );
    }

    #[test]
    fn without_a_live_lease_of_its_own_a_node_proves_nothing() {
        let x = moved(0, "x", 3);
        // Stored, but the game is another node's now: no ack from here.
        let taken = stored(3, Some("n2"), true, Some((0, "x")));
        assert_eq!(landing(Some(&taken), &x, 3, Some("n1")), Landing::Lost);
        // Stored, this node's by name, but its lease lapsed: cannot tell yet.
        let lapsed = stored(3, Some("n1"), false, Some((0, "x")));
        assert_eq!(landing(Some(&lapsed), &x, 3, Some("n1")), Landing::Unknown);
        // Released by its owner: some node may take it at once.
        let released = stored(2, None, false, None);
        assert_eq!(landing(Some(&released), &x, 3, Some("n1")), Landing::Lost);
        assert_eq!(landing(None, &x, 3, Some("n1")), Landing::Unknown);
    }

    #[test]
    fn a_single_node_settles_by_the_stored_seq_and_command() {
        let x = moved(1, "x", 5);
        let landed = stored(5, None, false, Some((1, "x")));
        assert_eq!(landing(Some(&landed), &x, 5, None), Landing::Mine);
        let not_yet = stored(4, None, false, None);
        assert_eq!(landing(Some(&not_yet), &x, 5, None), Landing::NotStored);
        let seat_freed = Change::SeatFreed(2);
        let lobby = stored(5, None, false, None);
        assert_eq!(landing(Some(&lobby), &seat_freed, 5, None), Landing::Mine);
        // A single node whose game a cluster node owns is fenced out of it.
        let fenced = stored(5, Some("n1"), true, None);
        assert_eq!(landing(Some(&fenced), &seat_freed, 5, None), Landing::Lost);
    }

    #[test]
    fn a_lobby_change_is_this_nodes_only_under_its_own_live_lease() {
        let freed = Change::SeatFreed(2);
        let owned = stored(4, Some("n1"), true, None);
        assert_eq!(landing(Some(&owned), &freed, 4, Some("n1")), Landing::Mine);
        let lapsed = stored(4, Some("n1"), false, None);
        assert_eq!(
            landing(Some(&lapsed), &freed, 4, Some("n1")),
            Landing::Unknown
        );
    }
}
