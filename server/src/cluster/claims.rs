//! Which games this node is busy finding or starting a room for: one task per game at a
//! time, and never a wait on another game's.
//!
//! Finding a game's room may mean taking the game over: its lease taken, its log read, a
//! room and a relay started, several round trips to the database. Two tasks must never
//! do that for one game at once (the second would start a second room), so each holds
//! the game's [`Claim`] throughout. Tasks for different games do not wait for each
//! other: when one lock served every game, a slow database made each take-over cost a
//! second, and every other request, the orphan sweep and the lease keeper's renewals
//! queued behind it, until the keeper's own lease lapsed and other nodes took its games.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::OwnedMutexGuard;
use uuid::Uuid;

/// The games claimed on this node, each with the lock its claimants queue on.
#[derive(Debug, Default)]
pub struct Claims {
    games: Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<()>>>>,
}

/// A game claimed by one task until dropped.
#[derive(Debug)]
pub struct Claim {
    claims: Arc<Claims>,
    id: Uuid,
    _held: OwnedMutexGuard<()>,
}

impl Claims {
    /// Claims game `id`, waiting for whoever holds it now.
    pub async fn claim(self: &Arc<Self>, id: Uuid) -> Claim {
        let lock = self.lock().entry(id).or_default().clone();
        Claim {
            claims: self.clone(),
            id,
            _held: lock.lock_owned().await,
        }
    }

    /// Claims game `id` if no one holds it now.
    pub fn try_claim(self: &Arc<Self>, id: Uuid) -> Option<Claim> {
        let lock = self.lock().entry(id).or_default().clone();
        let held = lock.try_lock_owned().ok()?;
        Some(Claim {
            claims: self.clone(),
            id,
            _held: held,
        })
    }

    /// Whether a task holds or awaits game `id` now.
    pub fn is_claimed(&self, id: Uuid) -> bool {
        self.lock().contains_key(&id)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Uuid, Arc<tokio::sync::Mutex<()>>>> {
        // The map holds no invariant a panicking holder could break.
        self.games
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Claim {
    pub fn id(&self) -> Uuid {
        self.id
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut games = self.claims.lock();
        // The map's handle and this claim's: nobody else holds or awaits the game (each
        // claimant takes its handle under the map's lock, so none is on its way).
        if games
            .get(&self.id)
            .is_some_and(|lock| Arc::strong_count(lock) == 2)
        {
            games.remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_game_is_claimed_by_one_task_at_a_time_and_forgotten_after() {
        let claims = Arc::new(Claims::default());
        let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
        let claim = claims.claim(first).await;
        assert!(claims.try_claim(first).is_none(), "held already");
        assert!(claims.is_claimed(first));
        let other = claims.try_claim(second).expect("another game is free");
        let waiting = tokio::spawn({
            let claims = claims.clone();
            async move { claims.claim(first).await.id() }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "waits for the holder");
        drop(claim);
        assert_eq!(waiting.await.unwrap(), first);
        drop(other);
        assert!(!claims.is_claimed(first) && !claims.is_claimed(second));
        assert!(claims.lock().is_empty(), "nothing left behind");
    }
}
