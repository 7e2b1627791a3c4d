//! Admission control: counted places (in total and per client IP) and token buckets
//! (per connection, and per client IP for REST).
//!
//! A [`SlotPool`] hands out [`Slot`]s that give their place back when dropped, so a
//! connection holds its place for exactly as long as it lives, however it ends.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Places counted in total and per client IP. A limit of 0 per IP means no per-IP limit.
#[derive(Debug)]
pub struct SlotPool {
    max_total: usize,
    max_per_ip: usize,
    counts: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
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
    ip: IpAddr,
}

impl SlotPool {
    pub fn new(max_total: usize, max_per_ip: usize) -> Arc<SlotPool> {
        Arc::new(SlotPool {
            max_total,
            max_per_ip,
            counts: Mutex::new(Counts::default()),
        })
    }

    /// Takes a place for `ip`, or says which limit is reached.
    pub fn try_take(self: &Arc<SlotPool>, ip: IpAddr) -> Result<Slot, Refused> {
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if counts.total >= self.max_total {
            return Err(Refused::Full);
        }
        let held = counts.per_ip.get(&ip).copied().unwrap_or(0);
        if self.max_per_ip > 0 && held >= self.max_per_ip {
            return Err(Refused::FullForClient);
        }
        counts.total += 1;
        counts.per_ip.insert(ip, held + 1);
        Ok(Slot {
            pool: self.clone(),
            ip,
        })
    }

    /// Places held now.
    pub fn held(&self) -> usize {
        self.counts.lock().map(|counts| counts.total).unwrap_or(0)
    }

    fn give_back(&self, ip: IpAddr) {
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        counts.total = counts.total.saturating_sub(1);
        if let Some(held) = counts.per_ip.get_mut(&ip) {
            *held -= 1;
            if *held == 0 {
                counts.per_ip.remove(&ip);
            }
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.pool.give_back(self.ip);
    }
}

/// A token bucket: `rate` tokens a second sustained, `burst` at once.
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

    /// How long until the next token.
    pub fn wait_for_next(&self) -> Duration {
        let missing = (1.0 - self.tokens).max(0.0);
        Duration::from_secs_f64(missing / self.rate.max(f64::MIN_POSITIVE)).min(Duration::MAX)
    }

    /// Whether the bucket is full, so that forgetting it changes nothing.
    fn is_full_at(&mut self, now: Instant) -> bool {
        self.refill(now);
        self.tokens >= self.burst
    }

    fn refill(&mut self, now: Instant) {
        let earned = now.saturating_duration_since(self.refilled).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + earned).min(self.burst);
        self.refilled = now;
    }
}

/// A token bucket per client IP, for REST requests. Full buckets are forgotten now and
/// then, so the map holds only the clients seen recently.
#[derive(Debug)]
pub struct KeyedBuckets {
    rate: u32,
    burst: u32,
    buckets: Mutex<HashMap<IpAddr, TokenBucket>>,
}

/// How many client buckets are kept before full ones are swept away.
const SWEEP_ABOVE: usize = 10_000;

impl KeyedBuckets {
    pub fn new(rate: u32, burst: u32) -> KeyedBuckets {
        KeyedBuckets {
            rate,
            burst,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Spends a token of `ip`'s bucket; `Err(wait)` when it is empty.
    pub fn take(&self, ip: IpAddr) -> Result<(), Duration> {
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if buckets.len() > SWEEP_ABOVE {
            let now = Instant::now();
            buckets.retain(|_, bucket| !bucket.is_full_at(now));
        }
        let bucket = buckets
            .entry(ip)
            .or_insert_with(|| TokenBucket::new(self.rate, self.burst));
        if bucket.take() {
            Ok(())
        } else {
            Err(bucket.wait_for_next())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOME: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
    const AWAY: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));

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
    fn slots_count_per_ip_and_in_total_and_come_back_when_dropped() {
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
    fn keyed_buckets_limit_each_ip_apart_and_say_how_long_to_wait() {
        let buckets = KeyedBuckets::new(2, 2);
        assert!(buckets.take(HOME).is_ok() && buckets.take(HOME).is_ok());
        let wait = buckets.take(HOME).unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_millis(500),
            "{wait:?}"
        );
        assert!(buckets.take(AWAY).is_ok());
    }
}
