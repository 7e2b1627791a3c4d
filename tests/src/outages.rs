//! Outages of nodes and of NATS during a soak, and what they cost games: how long a
//! frozen node's games waited for another node to take them over, and stalls, moves
//! that reached a client late although the client sat on a node that was up and the
//! game had an owner that was up.
//!
//! A move's time is when it was committed, as near as the clients can tell: when the
//! first of them had it (the room publishes a move as soon as it is committed, and the
//! mover hears its own at once), but no later than [`WRITE_ALLOWANCE`] after its
//! `created_at` (which the node that decided it wrote just before its write): a move
//! that no client had for longer is late for every one of them. A client's time of it
//! is when its mirror first reached that `seq`. The time between is a stall when, once
//! the excusable parts are taken out, more than [`STALL`] is left. Excusable: the game's owner was frozen or down (until another node took the
//! game over, or the owner came back), NATS was down, or the client was not in a
//! welcomed connection to a node that was up (it was reconnecting, or waiting on a
//! frozen node). What is left is the time a live node had the move and a client of
//! that node or another live one did not: the silences issue 48 was about.
//!
//! Who owned a game when comes from the database (its first owner) and the nodes' logs
//! (every "took the game over" line, with its time).

use crate::cluster::RoamingReport;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

/// The longest a committed move may take to reach a client of a live node.
pub const STALL: Duration = Duration::from_secs(3);

/// The longest a move's write may take, from the node's decision to its commit: a game's
/// last write (the match, its ratings) takes that long when every reply of the database
/// is 150 ms late.
pub const WRITE_ALLOWANCE: Duration = Duration::from_secs(3);

/// A span of wall-clock time, from its first instant to its last.
pub type Span = (SystemTime, SystemTime);

/// When nodes and NATS were out of service.
#[derive(Debug, Default)]
pub struct Outages {
    nodes: Vec<NodeOutage>,
    nats: Vec<Span>,
}

/// A node out of service (frozen, killed or drained) under its name, at the address it
/// had in that life.
#[derive(Debug)]
struct NodeOutage {
    name: String,
    address: SocketAddr,
    span: Span,
    /// Frozen (SIGSTOP), rather than stopped: its games wait for another node.
    frozen: bool,
}

impl Outages {
    /// Node `name` was frozen over `span`, at `address`.
    pub fn node_frozen(&mut self, name: &str, address: SocketAddr, span: Span) {
        self.node_out(name, address, span, true);
    }

    /// Node `name` was stopped (killed or drained) over `span`, until it listened again.
    pub fn node_stopped(&mut self, name: &str, address: SocketAddr, span: Span) {
        self.node_out(name, address, span, false);
    }

    fn node_out(&mut self, name: &str, address: SocketAddr, span: Span, frozen: bool) {
        let name = name.to_owned();
        self.nodes.push(NodeOutage {
            name,
            address,
            span,
            frozen,
        });
    }

    pub fn nats_out(&mut self, span: Span) {
        self.nats.push(span);
    }

    fn of_name<'a>(&'a self, name: &'a str) -> impl Iterator<Item = Span> + 'a {
        let outages = self.nodes.iter();
        outages
            .filter(move |out| out.name == name)
            .map(|out| out.span)
    }

    fn of_address(&self, address: SocketAddr) -> impl Iterator<Item = Span> + '_ {
        let outages = self.nodes.iter();
        outages
            .filter(move |out| out.address == address)
            .map(|out| out.span)
    }
}

/// Who owned one game when: its first owner from its opening, then each node that took
/// it over, from that moment.
#[derive(Debug)]
pub struct Ownership {
    pub game: String,
    owners: Vec<(SystemTime, String)>,
    /// When its last move was made, if it is over: nobody owns it after that.
    finished: Option<SystemTime>,
}

impl Ownership {
    /// The ownership of `game`, opened at `opened` by node `first`, as the nodes' `logs`
    /// tell its take-overs.
    pub fn from_logs(game: &str, opened: SystemTime, first: &str, logs: &str) -> Ownership {
        let mut owners = vec![(opened, first.to_owned())];
        let game_field = format!("game={game} ");
        let taken = logs
            .lines()
            .filter(|line| line.contains("took the game over") && line.contains(&game_field));
        for line in taken {
            let (Some(at), Some(node)) = (log_time(line), field(line, "node=")) else {
                panic!("a take-over line without its time or node: {line}");
            };
            owners.push((at, node.to_owned()));
        }
        owners.sort();
        let game = game.to_owned();
        let finished = None;
        Ownership {
            game,
            owners,
            finished,
        }
    }

    /// The same game, over since its last move, made at `at`.
    pub fn finished_at(self, at: SystemTime) -> Ownership {
        let finished = Some(at);
        Ownership { finished, ..self }
    }

    /// Who owned the game at `at`, while it was live.
    fn owner_at(&self, at: SystemTime) -> Option<&str> {
        if self.finished.is_some_and(|finished| finished <= at) {
            return None;
        }
        let mut owners = self.owners.iter().rev();
        let owner = owners.find(|(from, _)| *from <= at);
        owner.map(|(_, owner)| owner.as_str())
    }

    /// When another node than `owner` took the game over after `at`, if one did.
    fn taken_from(&self, owner: &str, at: SystemTime) -> Option<SystemTime> {
        let mut owners = self.owners.iter();
        let taken = owners.find(|(from, taker)| *from > at && taker != owner);
        taken.map(|(from, _)| *from)
    }

    /// The spans in which the game's owner was out of service.
    fn unserved(&self, outages: &Outages) -> Vec<Span> {
        let ends = self.owners.iter().skip(1).map(|(at, _)| *at);
        let ends = ends.chain(std::iter::once(far_future()));
        let tenures = self.owners.iter().zip(ends);
        let mut unserved = Vec::new();
        for ((from, owner), to) in tenures {
            for (out_from, out_to) in outages.of_name(owner) {
                let span = (out_from.max(*from), out_to.min(to));
                if span.0 < span.1 {
                    unserved.push(span);
                }
            }
        }
        unserved
    }
}

/// How late a move reached a client.
#[derive(Debug)]
pub struct Late {
    pub seq: u64,
    /// Which report of the game's it was.
    pub client: usize,
    /// When the move was made.
    pub made: SystemTime,
    /// How late it came, the excusable time left out.
    pub late: Duration,
}

/// How late each move of `made` (`seq` and when it was made) reached each client of
/// `reports`, the excusable time left out (see the module's documentation): more than
/// [`STALL`] is a stall. A move a client never had (it read the finished match over
/// REST instead) is not counted here.
pub fn lateness(
    reports: &[RoamingReport],
    made: &[(u64, SystemTime)],
    ownership: &Ownership,
    outages: &Outages,
) -> Vec<Late> {
    let mut game_excused = ownership.unserved(outages);
    game_excused.extend(outages.nats.iter().copied());
    let mut lateness = Vec::new();
    for (client, report) in reports.iter().enumerate() {
        let mut excused = away(report, outages);
        excused.extend(game_excused.iter().copied());
        let excused = merged(excused);
        for (seq, at) in made {
            let Some(reached) = reached_at(report, *seq) else {
                continue;
            };
            let committed = committed_at(reports, *seq, *at);
            let late = uncovered((committed.min(reached), reached), &excused);
            let (seq, made) = (*seq, *at);
            lateness.push(Late {
                seq,
                client,
                made,
                late,
            });
        }
    }
    lateness
}

/// How long each game of `games` that a node owned when it froze waited for another
/// node to take it over: None when none did while the node was frozen.
pub fn takeover_waits(games: &[Ownership], outages: &Outages) -> Vec<(String, Option<Duration>)> {
    let mut waits = Vec::new();
    for freeze in outages.nodes.iter().filter(|outage| outage.frozen) {
        let (frozen, resumed) = freeze.span;
        for game in games {
            if game.owner_at(frozen) != Some(freeze.name.as_str()) {
                continue;
            }
            let taken = game.taken_from(&freeze.name, frozen);
            let taken = taken.filter(|taken| *taken <= resumed);
            let wait = taken.map(|taken| taken.duration_since(frozen).unwrap_or_default());
            waits.push((game.game.clone(), wait));
        }
    }
    waits
}

/// When move `seq`, decided at `made`, was committed, as near as the clients of
/// `reports` can tell (see the module's documentation).
fn committed_at(reports: &[RoamingReport], seq: u64, made: SystemTime) -> SystemTime {
    let first = reports
        .iter()
        .filter_map(|report| reached_at(report, seq))
        .min();
    let latest = made + WRITE_ALLOWANCE;
    first.map_or(latest, |first| first.clamp(made, latest))
}

/// When the client's mirror first reached `seq`.
fn reached_at(report: &RoamingReport, seq: u64) -> Option<SystemTime> {
    let reached = report.arrivals.iter().find(|(reached, _)| *reached >= seq);
    reached.map(|(_, at)| *at)
}

/// The spans in which the client was not in a welcomed connection to a node that was up.
fn away(report: &RoamingReport, outages: &Outages) -> Vec<Span> {
    let mut away = Vec::new();
    let mut since = SystemTime::UNIX_EPOCH;
    for visit in &report.visits {
        let Some(welcomed) = visit.welcomed else {
            continue;
        };
        away.push((since, welcomed));
        let node_out = outages.of_address(visit.node);
        let node_out_meanwhile =
            node_out.map(|(from, to)| (from.max(welcomed), to.min(visit.left)));
        away.extend(node_out_meanwhile.filter(|(from, to)| from < to));
        since = visit.left;
    }
    away.push((since, far_future()));
    away
}

/// `spans` sorted and joined where they overlap.
fn merged(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort();
    let mut merged: Vec<Span> = Vec::new();
    for (from, to) in spans {
        match merged.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => merged.push((from, to)),
        }
    }
    merged
}

/// How much of `span` none of `excused` (sorted, disjoint) covers.
fn uncovered(span: Span, excused: &[Span]) -> Duration {
    let total = span.1.duration_since(span.0).unwrap_or_default();
    let covered: Duration = excused
        .iter()
        .map(|(from, to)| {
            let (from, to) = ((*from).max(span.0), (*to).min(span.1));
            to.duration_since(from).unwrap_or_default()
        })
        .sum();
    total.saturating_sub(covered)
}

fn far_future() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1 << 40)
}

/// The value of `name` (e.g. `node=`) in a log line's fields.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let start = line.find(name)? + name.len();
    line[start..].split_whitespace().next()
}

/// The time a server's log line begins with, `2026-12-07T22:19:25.893808Z` (UTC).
fn log_time(line: &str) -> Option<SystemTime> {
    let stamp = line.split_whitespace().next()?.strip_suffix('Z')?;
    let (date, time) = stamp.split_once('T')?;
    let mut date = date.splitn(3, '-').map(str::parse::<i64>);
    let (year, month, day) = (date.next()?.ok()?, date.next()?.ok()?, date.next()?.ok()?);
    let (clock, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let mut clock = clock.splitn(3, ':').map(str::parse::<u64>);
    let (hours, minutes, seconds) = (
        clock.next()?.ok()?,
        clock.next()?.ok()?,
        clock.next()?.ok()?,
    );
    let nanos: u32 = format!("{fraction:0<9}")[..9].parse().ok()?;
    let days = u64::try_from(days_since_epoch(year, month, day)).ok()?;
    let seconds = days * 86_400 + hours * 3_600 + minutes * 60 + seconds;
    Some(SystemTime::UNIX_EPOCH + Duration::new(seconds, nanos))
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard
/// Hinnant's `days_from_civil`).
fn days_since_epoch(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_line_is_read_at_its_utc_time() {
        let line = "2026-12-07T22:19:25.893808Z  INFO x: took the game over game=g node=n-1";
        let at = log_time(line).expect("a time");
        let since = at.duration_since(SystemTime::UNIX_EPOCH).unwrap();
        assert_eq!(since, Duration::new(1_796_681_965, 893_808_000));
        assert_eq!(field(line, "node="), Some("n-1"));
        assert_eq!(days_since_epoch(1970, 1, 1), 0);
        assert_eq!(days_since_epoch(2000, 3, 1), 11_017);
    }

    #[test]
    fn only_what_no_excuse_covers_counts() {
        let at = |seconds: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(seconds);
        let excused = merged(vec![(at(12), at(14)), (at(2), at(4)), (at(3), at(6))]);
        assert_eq!(excused, [(at(2), at(6)), (at(12), at(14))]);
        assert_eq!(uncovered((at(0), at(13)), &excused), Duration::from_secs(8));
        assert_eq!(uncovered((at(3), at(5)), &excused), Duration::ZERO);
    }
}
