//! Admission control: places counted in total and per client, and rate limits.
//!
//! Every per-client limit counts a client by its network prefix ([`client_prefix`]): an
//! IPv4 address, or the /64 of an IPv6 address. A subscriber or host is usually given a
//! whole /64, so hopping between addresses of one's own network buys no more places.
//!
//! * A [`SlotPool`] hands out [`Slot`]s that give their place back when dropped, so a
//!   connection holds its place for exactly as long as it lives, however it ends. A full
//!   pool refuses.
//! * A [`PendingPool`] counts the WebSocket connections that have not said hello yet. A
//!   full pool never refuses: it evicts its oldest connection instead (see [`pending`]).
//! * A [`RequestLimiter`] limits REST requests per client; a [`TokenBucket`] limits the
//!   messages of one WebSocket connection, and can give a token back.

pub mod pending;

pub use pending::{Evicted, PendingPool, PendingSlot};

use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A client as the per-client limits count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientKey {
    V4(Ipv4Addr),
    /// The first 64 bits of an IPv6 address: its network, without the interface.
    V6Network(u64),
}

/// The client `ip` counts as: an IPv4 address is its own client, an IPv6 address counts
/// by its /64, and an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, as a dual-stack
/// listener sees IPv4 clients) as the IPv4 address it carries.
pub fn client_prefix(ip: IpAddr) -> ClientKey {
    match ip.to_canonical() {
        IpAddr::V4(v4) => ClientKey::V4(v4),
        IpAddr::V6(v6) => ClientKey::V6Network((v6.to_bits() >> 64) as u64),
    }
}

/// Places counted in total and per client prefix. A limit of 0 per client means no
/// per-client limit.
#[derive(Debug)]
pub struct SlotPool {
    max_total: usize,
    max_per_client: usize,
    counts: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_client: HashMap<ClientKey, usize>,
}

/// Why a place was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the server holds its most connections")]
    Full,
    #[error("this client holds its most connections")]
    FullForClient,
}

/// One held place; dropping it gives the place back.
#[derive(Debug)]
pub struct Slot {
    pool: Arc<SlotPool>,
    client: ClientKey,
}

impl SlotPool {
    pub fn new(max_total: usize, max_per_client: usize) -> Arc<SlotPool> {
        Arc::new(SlotPool {
            max_total,
            max_per_client,
            counts: Mutex::new(Counts::default()),
        })
    }

    /// Takes a place for the client of `ip`, or says which limit is reached.
    pub fn try_take(self: &Arc<SlotPool>, ip: IpAddr) -> Result<Slot, Refused> {
        let client = client_prefix(ip);
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if counts.total >= self.max_total {
            return Err(Refused::Full);
        }
        let held = counts.per_client.get(&client).copied().unwrap_or(0);
        if self.max_per_client > 0 && held >= self.max_per_client {
            return Err(Refused::FullForClient);
        }
        counts.total += 1;
        counts.per_client.insert(client, held + 1);
        Ok(Slot {
            pool: self.clone(),
            client,
        })
    }

    /// Places held now.
    pub fn held(&self) -> usize {
        self.counts.lock().map(|counts| counts.total).unwrap_or(0)
    }

    fn give_back(&self, client: ClientKey) {
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        counts.total = counts.total.saturating_sub(1);
        if let Some(held) = counts.per_client.get_mut(&client) {
            *held -= 1;
            if *held == 0 {
                counts.per_client.remove(&client);
            }
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.pool.give_back(self.client);
    }
}

/// A token bucket: `rate` tokens a second sustained, `burst` at once. Unlike a GCRA
/// limiter it can take a token back ([`TokenBucket::give_back`]), which the WebSocket
/// limit needs to make accepted moves free.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    refilled: Instant,
}

impl TokenBucket {
    pub fn new(rate: u32, burst: u32) -> TokenBucket {
        TokenBucket {
            rate: f64::from(rate),
            burst: f64::from(burst),
            tokens: f64::from(burst),
            refilled: Instant::now(),
        }
    }

    /// Spends one token if there is one.
    pub fn take(&mut self) -> bool {
        self.refill(Instant::now());
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Gives one token back (never above the burst).
    pub fn give_back(&mut self) {
        self.tokens = (self.tokens + 1.0).min(self.burst);
    }

    fn refill(&mut self, now: Instant) {
        let earned = now.saturating_duration_since(self.refilled).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + earned).min(self.burst);
        self.refilled = now;
    }
}

/// REST requests per client prefix: governor's keyed GCRA limiter, one small state per
/// client in a sharded map, so clients do not queue on one lock.
/// [`RequestLimiter::forget_idle_clients`], called now and then, drops the clients whose
/// state is back to that of a newcomer, so memory holds only the recent ones.
#[derive(Debug)]
pub struct RequestLimiter {
    limiter: DefaultKeyedRateLimiter<ClientKey>,
}

impl RequestLimiter {
    /// `per_second` requests sustained, `burst` at once; 0 counts as 1 (governor's quota
    /// cannot be empty, and a limit that refuses everything is no use).
    pub fn new(per_second: u32, burst: u32) -> RequestLimiter {
        let quota = Quota::per_second(at_least_one(per_second)).allow_burst(at_least_one(burst));
        RequestLimiter {
            limiter: DefaultKeyedRateLimiter::dashmap(quota),
        }
    }

    /// Counts one request of the client of `ip`; `Err(wait)` when it is over its limit
    /// and may send again after `wait`.
    pub fn check(&self, ip: IpAddr) -> Result<(), Duration> {
        self.limiter
            .check_key(&client_prefix(ip))
            .map_err(|not_until| not_until.wait_time_from(self.limiter.clock().now()))
    }

    /// Forgets the clients whose next request would be judged as a newcomer's anyway.
    pub fn forget_idle_clients(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }

    /// Clients remembered now.
    pub fn clients(&self) -> usize {
        self.limiter.len()
    }
}

fn at_least_one(count: u32) -> NonZeroU32 {
    NonZeroU32::new(count).unwrap_or(NonZeroU32::MIN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv6Addr;

    const HOME: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
    const AWAY: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an IP address")
    }

    #[test]
    fn an_ipv4_address_is_its_own_client() {
        assert_eq!(client_prefix(ip("10.0.0.1")), client_prefix(ip("10.0.0.1")));
        assert_ne!(client_prefix(ip("10.0.0.1")), client_prefix(ip("10.0.0.2")));
    }

    #[test]
    fn an_ipv6_address_counts_by_its_slash_64() {
        let one = client_prefix(ip("2001:db8:1:2::1"));
        assert_eq!(one, client_prefix(ip("2001:db8:1:2:ffff:ffff:ffff:ffff")));
        assert_ne!(one, client_prefix(ip("2001:db8:1:3::1")));
        assert_eq!(one, ClientKey::V6Network(0x2001_0db8_0001_0002));
    }

    #[test]
    fn an_ipv4_mapped_ipv6_address_counts_as_its_ipv4_address() {
        let mapped = IpAddr::V6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped());
        assert_eq!(client_prefix(mapped), client_prefix(AWAY));
        // Every mapped address shares the /64 `::ffff:0:0`: counted by it, all IPv4
        // clients of a dual-stack listener would be one.
        let other = IpAddr::V6(Ipv4Addr::new(10, 0, 0, 2).to_ipv6_mapped());
        assert_ne!(client_prefix(mapped), client_prefix(other));
        assert_ne!(
            client_prefix(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            client_prefix(HOME)
        );
    }

    #[test]
    fn the_bucket_allows_a_burst_then_the_sustained_rate() {
        let mut bucket = TokenBucket::new(10, 5);
        assert!((0..5).all(|_| bucket.take()));
        assert!(!bucket.take());
        bucket.refilled -= Duration::from_millis(250);
        assert!(bucket.take() && bucket.take());
        assert!(!bucket.take());
    }

    #[test]
    fn a_token_given_back_can_be_spent_again_but_never_above_the_burst() {
        let mut bucket = TokenBucket::new(1, 2);
        assert!(bucket.take() && bucket.take() && !bucket.take());
        bucket.give_back();
        assert!(bucket.take() && !bucket.take());
        (0..5).for_each(|_| bucket.give_back());
        assert!(bucket.take() && bucket.take() && !bucket.take());
    }

    #[test]
    fn slots_count_per_client_and_in_total_and_come_back_when_dropped() {
        let pool = SlotPool::new(3, 2);
        let first = pool.try_take(HOME).unwrap();
        let _second = pool.try_take(HOME).unwrap();
        assert_eq!(pool.try_take(HOME).unwrap_err(), Refused::FullForClient);
        let _third = pool.try_take(AWAY).unwrap();
        assert_eq!(pool.try_take(AWAY).unwrap_err(), Refused::Full);
        drop(first);
        assert_eq!(pool.held(), 2);
        assert!(pool.try_take(HOME).is_ok());
    }

    #[test]
    fn slots_of_one_ipv6_network_count_as_one_client() {
        let pool = SlotPool::new(10, 2);
        let _first = pool.try_take(ip("2001:db8::1")).unwrap();
        let _second = pool.try_take(ip("2001:db8::2")).unwrap();
        let third = pool.try_take(ip("2001:db8::3"));
        assert_eq!(third.unwrap_err(), Refused::FullForClient);
        assert!(pool.try_take(ip("2001:db8:0:1::1")).is_ok());
    }

    #[test]
    fn requests_are_limited_per_client_and_say_how_long_to_wait() {
        let limiter = RequestLimiter::new(2, 2);
        assert!(limiter.check(HOME).is_ok() && limiter.check(HOME).is_ok());
        let wait = limiter.check(HOME).unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_millis(500),
            "{wait:?}"
        );
        assert!(limiter.check(AWAY).is_ok());
    }

    #[test]
    fn requests_from_one_ipv6_network_share_a_limit() {
        let limiter = RequestLimiter::new(1, 1);
        assert!(limiter.check(ip("2001:db8::1")).is_ok());
        assert!(limiter.check(ip("2001:db8::2")).is_err());
        assert!(limiter.check(ip("2001:db8:0:1::1")).is_ok());
    }

    #[test]
    fn idle_clients_are_forgotten_and_busy_ones_kept() {
        let limiter = RequestLimiter::new(1_000, 1);
        assert!(limiter.check(HOME).is_ok());
        std::thread::sleep(Duration::from_millis(20));
        let busy = RequestLimiter::new(1, 1);
        assert!(busy.check(AWAY).is_ok());
        assert_eq!((limiter.clients(), busy.clients()), (1, 1));
        limiter.forget_idle_clients();
        busy.forget_idle_clients();
        assert_eq!((limiter.clients(), busy.clients()), (0, 1));
    }
}
