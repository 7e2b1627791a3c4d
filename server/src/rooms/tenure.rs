//! Tenure: whether this node may still decide a game, as far as it can tell without
//! asking the database.
//!
//! In cluster mode a node decides a game only while it holds the game's lease (see
//! `ARCHITECTURE.md`, "Cluster mode"). The database fences every write, so a node that
//! lost a game can never write to it, and a room acknowledges and broadcasts nothing but
//! what it wrote. But a room also answers from memory alone: it refuses a command as
//! stale, out of turn or illegal, and repeats the `ack` of a command it already took.
//! Memory is only the truth while nobody else could have changed the game, so before a
//! room refuses anything it checks its tenure here:
//!
//! * [`Tenure::trusted`] is a look at a clock: the node's last renewal of its leases
//!   succeeded recently enough that no other node can have taken the game since. The
//!   lease runs until the database's `now()` at the renewal plus the time to live; the
//!   renewal was asked before that `now()`, so counting from the asking instant on this
//!   node's clock, less a tenth of the time to live for the two clocks' rates, stays
//!   inside the lease. Steady play never waits for anything here.
//! * [`Tenure::confirm`] is for when that look fails (the node was paused, the database
//!   is slow or away): it asks the lease keeper for a renewal now and waits, at most
//!   [`CONFIRM_WAIT`], for one that started after it asked. The game is either still
//!   this node's, lost to another node, or the database cannot say.
//!
//! The clock is the system's boot-time clock, which keeps counting while the process is
//! stopped (SIGSTOP) and while the machine sleeps, so a pause always shows as time gone.
//! A single node has no lease and always trusts its memory: nothing else writes its games.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, watch};
use uuid::Uuid;

/// The longest a room waits for a renewal that says whether it still owns its game.
pub const CONFIRM_WAIT: Duration = Duration::from_secs(1);

/// Time on the boot-time clock (`CLOCK_BOOTTIME`): monotonic, and counting through
/// process pauses and system sleep alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct BootTime(Duration);

impl BootTime {
    pub fn now() -> BootTime {
        let mut spec = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes only the timespec it is given, which lives here.
        let status = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut spec) };
        assert_eq!(status, 0, "CLOCK_BOOTTIME is always available on Linux");
        BootTime(Duration::new(spec.tv_sec as u64, spec.tv_nsec as u32))
    }

    fn after(self, duration: Duration) -> BootTime {
        BootTime(self.0 + duration)
    }
}

/// What the node's last renewal of its leases established.
#[derive(Clone, Debug)]
struct Renewal {
    /// When the renewal was asked, before its statement left this node.
    asked: BootTime,
    /// Whether the database answered; a failed renewal proves nothing.
    answered: bool,
    /// Until when the games of `held` are this node's beyond doubt.
    trusted_until: Option<BootTime>,
    /// The live games the node owned at that renewal.
    held: Arc<HashSet<Uuid>>,
}

/// This node's lease on its games (cluster mode), as its lease keeper last renewed it.
/// Shared by the keeper, which writes it, and every room of the node, which reads it.
#[derive(Debug)]
pub struct NodeLease {
    node: Arc<str>,
    ttl: Duration,
    renewal: watch::Sender<Renewal>,
    renew_now: Notify,
}

impl NodeLease {
    pub fn new(node: Arc<str>, ttl: Duration) -> Arc<NodeLease> {
        let never = Renewal {
            asked: BootTime(Duration::ZERO),
            answered: false,
            trusted_until: None,
            held: Arc::default(),
        };
        Arc::new(NodeLease {
            node,
            ttl,
            renewal: watch::channel(never).0,
            renew_now: Notify::new(),
        })
    }

    pub fn node(&self) -> &str {
        &self.node
    }

    /// How long after asking for a lease this node may count on it: nine tenths of the
    /// time to live, the rest a margin for the two clocks' rates.
    pub fn trusted_for(&self) -> Duration {
        self.ttl * 9 / 10
    }

    /// The keeper renewed the leases it asked for at `asked`: these games are the node's.
    pub fn renewed(&self, asked: BootTime, held: HashSet<Uuid>) {
        self.renewal.send_replace(Renewal {
            asked,
            answered: true,
            trusted_until: Some(asked.after(self.trusted_for())),
            held: Arc::new(held),
        });
    }

    /// The keeper's renewal asked at `asked` failed: what the last good one proved still
    /// holds, for as long as it did.
    pub fn renewal_failed(&self, asked: BootTime) {
        self.renewal.send_modify(|renewal| {
            renewal.asked = asked;
            renewal.answered = false;
        });
    }

    /// Waits until a room asks for a renewal sooner than the keeper's next turn.
    pub async fn renewal_wanted(&self) {
        self.renew_now.notified().await
    }

    fn trusts(&self, game: Uuid, now: BootTime) -> bool {
        let renewal = self.renewal.borrow();
        renewal.trusted_until.is_some_and(|until| now < until) && renewal.held.contains(&game)
    }
}

/// Whether a room may decide its game from memory. See the module's documentation.
#[derive(Clone, Debug, Default)]
pub struct Tenure {
    /// None for a single node, which always may.
    lease: Option<Arc<NodeLease>>,
    /// Until when the game is this node's because it took the game's lease itself (a
    /// new lobby, a take-over), whatever the node's renewals say.
    taken_until: Option<BootTime>,
}

/// What a renewal said of a room's game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confirmed {
    /// The game is still this node's.
    Owned,
    /// Another node has the game, or nobody does: this node must not decide it.
    Lost,
    /// The database did not answer in time.
    Unknown,
}

impl Tenure {
    /// A game of a single node.
    pub fn alone() -> Tenure {
        Tenure::default()
    }

    /// A game whose lease this node took, asking at `asked`.
    pub fn taken(lease: Arc<NodeLease>, asked: BootTime) -> Tenure {
        let taken_until = Some(asked.after(lease.trusted_for()));
        Tenure {
            lease: Some(lease),
            taken_until,
        }
    }

    /// The node's name in cluster mode: the owner a stored write must name.
    pub fn node(&self) -> Option<Arc<str>> {
        self.lease.as_ref().map(|lease| lease.node.clone())
    }

    /// Whether nobody but this node can have changed `game` up to now.
    pub fn trusted(&self, game: Uuid) -> bool {
        let Some(lease) = &self.lease else {
            return true;
        };
        let now = BootTime::now();
        self.taken_until.is_some_and(|until| now < until) || lease.trusts(game, now)
    }

    /// Asks for a renewal now and says what it found for `game`, within [`CONFIRM_WAIT`].
    pub async fn confirm(&self, game: Uuid) -> Confirmed {
        let Some(lease) = &self.lease else {
            return Confirmed::Owned;
        };
        let since = BootTime::now();
        let mut renewals = lease.renewal.subscribe();
        lease.renew_now.notify_one();
        let answer = async {
            loop {
                {
                    let renewal = renewals.borrow_and_update();
                    if renewal.asked >= since {
                        return match (renewal.answered, renewal.held.contains(&game)) {
                            (false, _) => Confirmed::Unknown,
                            (true, true) => Confirmed::Owned,
                            (true, false) => Confirmed::Lost,
                        };
                    }
                }
                if renewals.changed().await.is_err() {
                    return Confirmed::Unknown;
                }
            }
        };
        tokio::time::timeout(CONFIRM_WAIT, answer)
            .await
            .unwrap_or(Confirmed::Unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(ttl: Duration) -> Arc<NodeLease> {
        NodeLease::new("node-a".into(), ttl)
    }

    #[test]
    fn a_single_node_always_trusts_its_memory() {
        assert!(Tenure::alone().trusted(Uuid::new_v4()));
        assert!(Tenure::alone().node().is_none());
    }

    #[test]
    fn a_game_is_trusted_only_while_a_recent_renewal_held_it() {
        let lease = lease(Duration::from_secs(5));
        let (mine, other) = (Uuid::new_v4(), Uuid::new_v4());
        let tenure = Tenure {
            lease: Some(lease.clone()),
            taken_until: None,
        };
        assert!(!tenure.trusted(mine), "no renewal yet");
        lease.renewed(BootTime::now(), HashSet::from([mine]));
        assert!(tenure.trusted(mine));
        assert!(!tenure.trusted(other), "a game the renewal did not hold");
        // A renewal asked longer ago than the lease's trusted part proves nothing now.
        let long_ago = BootTime(BootTime::now().0 - Duration::from_secs(5));
        lease.renewed(long_ago, HashSet::from([mine]));
        assert!(!tenure.trusted(mine));
        // A failed renewal keeps what the last good one proved, for its time.
        lease.renewed(BootTime::now(), HashSet::from([mine]));
        lease.renewal_failed(BootTime::now());
        assert!(tenure.trusted(mine));
    }

    #[test]
    fn a_game_just_taken_is_trusted_before_any_renewal_holds_it() {
        let lease = lease(Duration::from_secs(5));
        let game = Uuid::new_v4();
        assert!(Tenure::taken(lease.clone(), BootTime::now()).trusted(game));
        let long_ago = BootTime(BootTime::now().0 - Duration::from_secs(5));
        assert!(!Tenure::taken(lease, long_ago).trusted(game));
    }

    #[tokio::test]
    async fn confirming_waits_for_a_renewal_asked_after_it() {
        let lease = lease(Duration::from_secs(5));
        let (mine, lost) = (Uuid::new_v4(), Uuid::new_v4());
        // A renewal that started before the room asked does not answer it.
        lease.renewed(BootTime::now(), HashSet::from([mine, lost]));
        let keeper = {
            let lease = lease.clone();
            tokio::spawn(async move {
                for held in [HashSet::from([mine]), HashSet::new()] {
                    lease.renewal_wanted().await;
                    lease.renewed(BootTime::now(), held);
                }
                lease.renewal_wanted().await;
                lease.renewal_failed(BootTime::now());
            })
        };
        let tenure = Tenure::taken(lease.clone(), BootTime::now());
        assert_eq!(tenure.confirm(mine).await, Confirmed::Owned);
        assert_eq!(tenure.confirm(mine).await, Confirmed::Lost);
        assert_eq!(tenure.confirm(mine).await, Confirmed::Unknown);
        keeper.await.unwrap();
        // Nobody renews any more: the wait is bounded.
        let asked = std::time::Instant::now();
        assert_eq!(tenure.confirm(mine).await, Confirmed::Unknown);
        assert!(asked.elapsed() >= CONFIRM_WAIT);
    }
}
