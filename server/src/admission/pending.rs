//! The WebSocket connections that have not said hello yet, capped in total and per
//! client prefix.
//!
//! A full pool never refuses a newcomer: it evicts the oldest waiting connection (that
//! of the newcomer's own client when that client is at its cap, else the oldest of all)
//! and gives its place to the newcomer. Refusing instead would let silent sockets, kept
//! open or reopened, hold every place and lock players out; a player says hello within a
//! round trip of connecting, so the connection that has waited longest is the one least
//! likely to be a player.
//!
//! The accounting changes at once, under one lock: the evicted connection no longer
//! counts from the moment the newcomer does. Its [`PendingSlot`] only learns of it
//! through a cancelled token, and dropping the slot later gives nothing back twice. A
//! connection whose hello is being answered as it is evicted may still be welcomed: it
//! counts as pending no longer either way.

use super::{ClientKey, client_prefix};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// Waiting connections, counted in total and per client prefix. A limit of 0 per client
/// means no per-client limit; a total of 0 counts as 1, as a pool must hold the newcomer.
#[derive(Debug)]
pub struct PendingPool {
    max_total: usize,
    max_per_client: usize,
    queue: Mutex<Queue>,
}

/// The waiting connections by arrival. Arrivals are numbered in order, so the first of
/// a map or set is the oldest: every operation is a few O(log n) steps, never a scan.
#[derive(Debug, Default)]
struct Queue {
    next_arrival: u64,
    waiting: BTreeMap<u64, Waiting>,
    per_client: HashMap<ClientKey, BTreeSet<u64>>,
}

#[derive(Debug)]
struct Waiting {
    client: ClientKey,
    eviction: CancellationToken,
}

/// Which cap made room for a newcomer by evicting a waiting connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evicted {
    /// The pool was full: the oldest connection of all was evicted.
    ServerFull,
    /// The newcomer's client was at its cap: that client's oldest was evicted.
    ClientFull,
}

/// A newcomer's place, and what was evicted to make it.
#[derive(Debug)]
pub struct Admitted {
    pub slot: PendingSlot,
    pub evicted: Option<Evicted>,
}

/// One waiting connection's place. Dropping it gives the place back, unless an eviction
/// already took it.
#[derive(Debug)]
pub struct PendingSlot {
    pool: Arc<PendingPool>,
    arrival: u64,
    eviction: CancellationToken,
}

impl PendingPool {
    pub fn new(max_total: usize, max_per_client: usize) -> Arc<PendingPool> {
        Arc::new(PendingPool {
            max_total: max_total.max(1),
            max_per_client,
            queue: Mutex::new(Queue::default()),
        })
    }

    /// Gives the client of `ip` a place, evicting the oldest waiting connection of that
    /// client (when it is at its cap) or of all (when the pool is full) to make room.
    pub fn admit(self: &Arc<PendingPool>, ip: IpAddr) -> Admitted {
        let client = client_prefix(ip);
        let mut queue = self.queue();
        let evicted = self.make_room(&mut queue, client);
        let eviction = CancellationToken::new();
        let arrival = queue.push(client, eviction.clone());
        drop(queue);
        // Told outside the lock: the accounting is already settled.
        let evicted = evicted.map(|(why, victim)| {
            victim.eviction.cancel();
            why
        });
        Admitted {
            slot: PendingSlot {
                pool: self.clone(),
                arrival,
                eviction,
            },
            evicted,
        }
    }

    /// Connections waiting now.
    pub fn held(&self) -> usize {
        self.queue().waiting.len()
    }

    /// Takes out the connection whose place the newcomer of `client` needs, if any.
    fn make_room(&self, queue: &mut Queue, client: ClientKey) -> Option<(Evicted, Waiting)> {
        let client_full = self.max_per_client > 0 && queue.count_of(client) >= self.max_per_client;
        let (why, arrival) = if client_full {
            (Evicted::ClientFull, queue.oldest_of(client)?)
        } else if queue.waiting.len() >= self.max_total {
            (Evicted::ServerFull, queue.oldest()?)
        } else {
            return None;
        };
        queue.remove(arrival).map(|victim| (why, victim))
    }

    fn leave(&self, arrival: u64) {
        self.queue().remove(arrival);
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

impl Queue {
    fn push(&mut self, client: ClientKey, eviction: CancellationToken) -> u64 {
        let arrival = self.next_arrival;
        self.next_arrival += 1;
        self.waiting.insert(arrival, Waiting { client, eviction });
        self.per_client.entry(client).or_default().insert(arrival);
        arrival
    }

    /// Takes a connection out; `None` when it already left (evicted).
    fn remove(&mut self, arrival: u64) -> Option<Waiting> {
        let waiting = self.waiting.remove(&arrival)?;
        if let Some(arrivals) = self.per_client.get_mut(&waiting.client) {
            arrivals.remove(&arrival);
            if arrivals.is_empty() {
                self.per_client.remove(&waiting.client);
            }
        }
        Some(waiting)
    }

    fn count_of(&self, client: ClientKey) -> usize {
        self.per_client.get(&client).map_or(0, BTreeSet::len)
    }

    fn oldest_of(&self, client: ClientKey) -> Option<u64> {
        self.per_client.get(&client)?.first().copied()
    }

    fn oldest(&self) -> Option<u64> {
        self.waiting.first_key_value().map(|(&arrival, _)| arrival)
    }
}

impl PendingSlot {
    /// Completes once this connection has been evicted (at once if it already was).
    pub fn evicted(&self) -> WaitForCancellationFuture<'_> {
        self.eviction.cancelled()
    }

    pub fn is_evicted(&self) -> bool {
        self.eviction.is_cancelled()
    }
}

impl Drop for PendingSlot {
    fn drop(&mut self) {
        self.pool.leave(self.arrival);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an IP address")
    }

    fn v4(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))
    }

    /// Admits one connection of `ip`, asserting what was evicted for it.
    fn admit(pool: &Arc<PendingPool>, ip: IpAddr, expected: Option<Evicted>) -> PendingSlot {
        let admitted = pool.admit(ip);
        assert_eq!(admitted.evicted, expected);
        admitted.slot
    }

    #[test]
    fn a_full_pool_evicts_its_oldest_connection_for_a_newcomer() {
        let pool = PendingPool::new(3, 0);
        let slots: Vec<_> = (1..=3).map(|n| admit(&pool, v4(n), None)).collect();
        let fourth = admit(&pool, v4(4), Some(Evicted::ServerFull));
        assert_eq!(
            slots
                .iter()
                .map(PendingSlot::is_evicted)
                .collect::<Vec<_>>(),
            [true, false, false]
        );
        assert_eq!(pool.held(), 3);
        let fifth = admit(&pool, v4(5), Some(Evicted::ServerFull));
        assert!(slots[1].is_evicted() && !slots[2].is_evicted());
        assert!(!fourth.is_evicted() && !fifth.is_evicted());
    }

    #[test]
    fn a_client_at_its_cap_evicts_its_own_oldest_not_anyone_elses() {
        let pool = PendingPool::new(10, 2);
        let other = admit(&pool, v4(9), None);
        let first = admit(&pool, v4(1), None);
        let second = admit(&pool, v4(1), None);
        let third = admit(&pool, v4(1), Some(Evicted::ClientFull));
        assert!(first.is_evicted());
        assert!(!other.is_evicted() && !second.is_evicted() && !third.is_evicted());
        assert_eq!(pool.held(), 3);
    }

    #[test]
    fn a_connection_that_leaves_is_no_longer_a_candidate() {
        let pool = PendingPool::new(2, 0);
        let first = admit(&pool, v4(1), None);
        let second = admit(&pool, v4(2), None);
        drop(first);
        let third = admit(&pool, v4(3), None);
        let fourth = admit(&pool, v4(4), Some(Evicted::ServerFull));
        assert!(second.is_evicted() && !third.is_evicted() && !fourth.is_evicted());
    }

    #[test]
    fn a_slot_dropped_after_its_eviction_gives_nothing_back_twice() {
        let pool = PendingPool::new(2, 0);
        let first = admit(&pool, v4(1), None);
        let _second = admit(&pool, v4(2), None);
        let _third = admit(&pool, v4(3), Some(Evicted::ServerFull));
        drop(first);
        assert_eq!(pool.held(), 2);
        // Still full: a double give-back would have let this one in without an eviction.
        admit(&pool, v4(4), Some(Evicted::ServerFull));
    }

    #[test]
    fn connections_of_one_ipv6_network_share_one_cap() {
        let pool = PendingPool::new(10, 2);
        let first = admit(&pool, ip("2001:db8::1"), None);
        let _second = admit(&pool, ip("2001:db8::2"), None);
        let _elsewhere = admit(&pool, ip("2001:db8:0:1::1"), None);
        let _newest = admit(&pool, ip("2001:db8::ffff"), Some(Evicted::ClientFull));
        assert!(first.is_evicted());
        assert_eq!(pool.held(), 3);
    }

    #[test]
    fn a_mapped_ipv4_address_shares_the_cap_of_its_ipv4_address() {
        let pool = PendingPool::new(10, 1);
        let plain = admit(&pool, v4(1), None);
        let mapped = Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped();
        admit(&pool, IpAddr::V6(mapped), Some(Evicted::ClientFull));
        assert!(plain.is_evicted());
    }

    #[test]
    fn connections_arriving_and_leaving_at_once_keep_the_count_exact() {
        let pool = PendingPool::new(16, 4);
        std::thread::scope(|scope| {
            for thread in 0..4u8 {
                let pool = &pool;
                scope.spawn(move || {
                    let mut held = std::collections::VecDeque::new();
                    for client in (0..8u8).cycle().take(2_000) {
                        held.push_back(pool.admit(v4(thread * 8 + client)).slot);
                        if held.len() > 6 {
                            held.pop_front();
                        }
                        assert!(pool.held() <= 16);
                    }
                });
            }
        });
        assert_eq!(pool.held(), 0);
    }

    #[tokio::test]
    async fn an_evicted_slot_is_told_at_once() {
        let pool = PendingPool::new(1, 0);
        let first = admit(&pool, v4(1), None);
        let waiter = tokio::spawn(async move { first.evicted().await });
        tokio::task::yield_now().await;
        let _second = admit(&pool, v4(2), Some(Evicted::ServerFull));
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("the evicted connection is told")
            .expect("the waiter ran");
    }
}
