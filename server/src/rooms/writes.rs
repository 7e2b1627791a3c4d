//! A room's writes: a committed change as the store writes it, and what became of a write
//! whose reply was lost or whose `seq` was found taken.
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
//! "Not stored" is never final while the write may still be on its way (a COMMIT held
//! by a frozen network lands when it thaws). So a room settles such a write by writing
//! the same change at the same `seq` again ([`attempt`]): the `seq` guard lets exactly
//! one of the two land, and a `conflict` then means "read back what holds that `seq`",
//! never "not written". What is read back decides: this change ([`Landing::Mine`]: it is
//! applied), another change while the game is still this node's
//! ([`Landing::Superseded`]: the room reloads its game from the log), or another node's
//! game ([`Landing::Lost`]: the room stops and its clients reconnect to the owner, which
//! answers a resent command id with its original `ack` if the move is stored).
//!
//! Every attempt is bounded by a deadline the room gives, and every read-back by
//! [`SETTLE_WAIT`] within it: a room answers within the store's operation timeout,
//! whatever the database does.

use crate::rooms::error::RoomError;
use crate::rooms::machine::Change;
use carcassonne_store::ratings::RatingChange;
use carcassonne_store::{FinalChange, LoggedChange, Store, StoreError, StoredAt};
use std::time::Duration;
use tokio::time::Instant;
use uuid::Uuid;

/// The longest a room spends reading back what a write left.
pub const SETTLE_WAIT: Duration = Duration::from_secs(1);

/// What the database holds at a write's `seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Landing {
    /// The database holds this write, and the game is still this node's.
    Mine,
    /// The write is not stored (yet).
    NotStored,
    /// Another change holds this write's `seq`, and the game is still this node's: the
    /// room's memory is behind the database and must be read again from the log.
    Superseded,
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
        (true, Owner::ThisNode) => Landing::Mine,
        (true, _) => Landing::Unknown,
        (false, Owner::ThisNode) => Landing::Superseded,
        (false, _) => Landing::Lost,
    }
}

/// The seat and command id a change's move carries, if it is a move.
fn command_of(change: &Change) -> Option<(u8, String)> {
    match change {
        Change::Moved { row, .. } => Some((row.seat, row.command_id.clone())),
        _ => None,
    }
}

/// What one attempt to write a change came to.
#[derive(Debug)]
pub enum Attempt {
    /// Committed; with the rating changes the store announced with it, if it did.
    Written(Option<Vec<RatingChange>>),
    /// Nothing of this attempt reached the database, or the database refused it for a
    /// reason other than its `seq` (an earlier attempt of the same change may still
    /// land).
    Refused(RoomError),
    /// Its reply was lost: what is stored at its `seq`, read back.
    ReplyLost(Landing),
    /// Its `seq` was taken (or its command id): what holds it, read back.
    SeqTaken(Landing),
    /// The database refused it because another node owns the game.
    Fenced,
    /// No answer by the deadline: it may still land.
    TimedOut,
}

/// Which attempt at a change this is: the first, whose failures are warnings, or one that
/// settles an earlier attempt, repeated while the database stays away (logged at debug
/// level: the room warns once when its writes begin to fail, and says when they work
/// again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempting {
    First,
    Again,
}

/// Writes `change` as update `seq` of `game`, and reads back what the database holds
/// when its reply does not say, all by `deadline`.
pub async fn attempt(
    store: &Store,
    (game, seq, node): (Uuid, u64, Option<&str>),
    change: &Change,
    deadline: Instant,
    attempting: Attempting,
) -> Attempt {
    let written = match tokio::time::timeout_at(deadline, write(store, game, change, seq)).await {
        Ok(written) => written,
        Err(_) => {
            note(
                attempting,
                seq,
                "no answer in time",
                "a write's outcome is unknown",
            );
            return Attempt::TimedOut;
        }
    };
    match written {
        Ok(announced) => Attempt::Written(announced),
        Err(StoreError::Unavailable(cause)) => {
            note(
                attempting,
                seq,
                &cause,
                "a write's outcome is unknown; reading it back",
            );
            Attempt::ReplyLost(await_landing(store, game, change, seq, node, deadline).await)
        }
        Err(StoreError::Conflict(cause)) => {
            tracing::warn!(%cause, seq, "a write found its seq taken; reading back what holds it");
            Attempt::SeqTaken(read_back(store, game, change, seq, node, deadline).await)
        }
        Err(StoreError::NotOwner(cause)) => {
            tracing::warn!(%cause, seq, "the database refused a write: another node owns the game");
            Attempt::Fenced
        }
        Err(other) if attempting == Attempting::Again => {
            Attempt::Refused(RoomError::from_repeated(other))
        }
        Err(other) => Attempt::Refused(RoomError::from(other)),
    }
}

/// Logs what became of an attempt: a warning for a first one, a debug line for one that
/// settles an earlier attempt.
fn note(attempting: Attempting, seq: u64, cause: &str, what: &'static str) {
    match attempting {
        Attempting::First => tracing::warn!(%cause, seq, "{what}"),
        Attempting::Again => tracing::debug!(%cause, seq, "{what}"),
    }
}

/// Reads back what the write of `change` as update `seq` left, a few times over half a
/// second (a COMMIT whose reply was lost may still be taking effect when the first read
/// arrives), within [`SETTLE_WAIT`] and by `deadline`.
async fn await_landing(
    store: &Store,
    game: Uuid,
    change: &Change,
    seq: u64,
    node: Option<&str>,
    deadline: Instant,
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
    let deadline = deadline.min(Instant::now() + SETTLE_WAIT);
    tokio::time::timeout_at(deadline, reads)
        .await
        .unwrap_or(Landing::Unknown)
}

/// One read-back, within [`SETTLE_WAIT`] and by `deadline`.
async fn read_back(
    store: &Store,
    game: Uuid,
    change: &Change,
    seq: u64,
    node: Option<&str>,
    deadline: Instant,
) -> Landing {
    let deadline = deadline.min(Instant::now() + SETTLE_WAIT);
    tokio::time::timeout_at(deadline, read_landing(store, game, change, seq, node))
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
            if matches!(landing, Landing::Lost | Landing::Superseded) {
                tracing::warn!(seq, ?stored, ?landing, "another change holds a write's seq");
            }
            landing
        }
        Err(error) => {
            tracing::debug!(%error, seq, "cannot read back a write yet");
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
async fn write(
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
        // Still this node's, but another command holds seq 3: the room's memory is behind
        // the database, and the room reloads its game.
        let other_command = stored(3, Some("n1"), true, Some((0, "y")));
        assert_eq!(
            landing(Some(&other_command), &x, 3, Some("n1")),
            Landing::Superseded
        );
        // The same with the lease lapsed: nothing can be proved, the room stops.
        let other_lapsed = stored(3, Some("n1"), false, Some((0, "y")));
        assert_eq!(
            landing(Some(&other_lapsed), &x, 3, Some("n1")),
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
        let another = stored(5, None, false, Some((0, "y")));
        assert_eq!(landing(Some(&another), &x, 5, None), Landing::Superseded);
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
