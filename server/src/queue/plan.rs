//! How waiting tickets become games: a pure function of the tickets and the time, so
//! that tests can drive it with any clock.
//!
//! Tickets are taken oldest first. Each one not yet seated looks for partners among the
//! tickets with the same match key (rules, clock, rated or not), whose ratings lie
//! within the wider of the two tickets' windows: a window starts at
//! [`MatchPolicy::window_start`] and widens by [`MatchPolicy::window_growth_per_second`]
//! for every second the ticket has waited, so a player waits for a close game at first
//! and takes a wider one later. Partners are taken closest in rating first, for the
//! largest game every one of them accepts. An unrated ticket that has waited
//! [`MatchPolicy::bot_fill_after`] takes the humans there are for its smallest game and
//! bots for the seats left; so does a rated one where its pool allows bots
//! ([`MatchPolicy::rated_bot_pools`]), the bots playing at fixed ratings.

use crate::auth::Token;
use crate::rooms::machine::default_bot_name;
use crate::rooms::names::name_key;
use crate::rooms::outcome::RatedBotPools;
use carcassonne_bots::BotLevel;
use carcassonne_store::{
    ChatPolicy, LobbyRow, LobbyStatus, Millis, QueueTicket, QueuedLobby, SeatControl, SeatRow,
};
use std::time::Duration;
use uuid::Uuid;

/// How tickets are matched.
#[derive(Clone, Debug)]
pub struct MatchPolicy {
    /// Tickets whose ratings (mu) differ by at most this match at once.
    pub window_start: f64,
    /// How much a ticket's window widens per second it waits.
    pub window_growth_per_second: f64,
    /// After this wait, an unrated ticket's missing seats go to bots; never when None.
    pub bot_fill_after: Option<Duration>,
    /// The bots that fill seats.
    pub bot_level: BotLevel,
    /// The pools whose rated tickets are filled with bots too, after the same wait.
    pub rated_bot_pools: RatedBotPools,
}

impl Default for MatchPolicy {
    /// A new player's mu is 25 with a sigma of 8.3: a window of 3 is a close game, and
    /// after a minute the window (15) takes nearly anyone.
    fn default() -> MatchPolicy {
        MatchPolicy {
            window_start: 3.0,
            window_growth_per_second: 0.2,
            bot_fill_after: Some(Duration::from_secs(60)),
            bot_level: BotLevel::Greedy,
            rated_bot_pools: RatedBotPools::default(),
        }
    }
}

impl MatchPolicy {
    /// How far from its own rating `ticket` accepts a partner at `now`.
    pub fn window(&self, ticket: &QueueTicket, now: Millis) -> f64 {
        let waited = now.saturating_sub(ticket.created_at).max(0) as f64 / 1000.0;
        self.window_start + self.window_growth_per_second * waited
    }

    /// Whether `ticket`'s smallest game is filled with bots at `now`: an unrated one,
    /// or a rated one of a pool that allows bots, once it has waited long enough.
    fn fills_with_bots(&self, ticket: &QueueTicket, now: Millis) -> bool {
        let waited = Duration::from_millis(now.saturating_sub(ticket.created_at).max(0) as u64);
        let allowed = !ticket.rated || self.rated_bot_pools.allow(ticket.min_players);
        allowed && self.bot_fill_after.is_some_and(|after| waited >= after)
    }
}

/// A game to form: the tickets seated (indices into the round's tickets, the first the
/// one whose rules it is played with) and the bots that take the other seats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedGame {
    pub tickets: Vec<usize>,
    pub bots: u8,
}

/// The games to form from `tickets` (oldest first) at `now`. No ticket is in two.
pub fn plan_games(tickets: &[QueueTicket], now: Millis, policy: &MatchPolicy) -> Vec<PlannedGame> {
    let mut seated = vec![false; tickets.len()];
    let mut games = Vec::new();
    for anchor in 0..tickets.len() {
        if seated[anchor] {
            continue;
        }
        let partners = partners_of(tickets, anchor, &seated, now, policy);
        if let Some(game) = game_for(tickets, anchor, &partners, now, policy) {
            for &index in &game.tickets {
                seated[index] = true;
            }
            games.push(game);
        }
    }
    games
}

/// The unseated tickets `anchor` may play with, closest in rating first.
fn partners_of(
    tickets: &[QueueTicket],
    anchor: usize,
    seated: &[bool],
    now: Millis,
    policy: &MatchPolicy,
) -> Vec<usize> {
    let own = &tickets[anchor];
    let own_window = policy.window(own, now);
    let mut partners: Vec<usize> = (0..tickets.len())
        .filter(|&index| index != anchor && !seated[index])
        .filter(|&index| {
            let other = &tickets[index];
            let window = own_window.max(policy.window(other, now));
            other.match_key == own.match_key
                && other.player_id != own.player_id
                && (other.rating - own.rating).abs() <= window
        })
        .collect();
    partners.sort_by(|&a, &b| {
        let distance = |index: usize| (tickets[index].rating - own.rating).abs();
        distance(a).total_cmp(&distance(b)).then(a.cmp(&b))
    });
    partners
}

/// The largest game `anchor` and its partners all accept, or its smallest game filled
/// with bots once it has waited long enough.
fn game_for(
    tickets: &[QueueTicket],
    anchor: usize,
    partners: &[usize],
    now: Millis,
    policy: &MatchPolicy,
) -> Option<PlannedGame> {
    let own = &tickets[anchor];
    let accepting = |size: u8| -> Vec<usize> {
        partners
            .iter()
            .copied()
            .filter(|&index| {
                (tickets[index].min_players..=tickets[index].max_players).contains(&size)
            })
            .take(usize::from(size) - 1)
            .collect()
    };
    for size in (own.min_players..=own.max_players).rev() {
        let others = accepting(size);
        if others.len() + 1 == usize::from(size) {
            return Some(PlannedGame {
                tickets: std::iter::once(anchor).chain(others).collect(),
                bots: 0,
            });
        }
    }
    if !policy.fills_with_bots(own, now) {
        return None;
    }
    let others = accepting(own.min_players);
    let bots = own.min_players - 1 - others.len() as u8;
    Some(PlannedGame {
        tickets: std::iter::once(anchor).chain(others).collect(),
        bots,
    })
}

/// The lobby a planned game is written as: public (anyone may watch), every seat taken,
/// no creator (the queue starts it), each ticket's player seated under a token nobody
/// holds until they ask for it (see `api::queue`).
pub fn form_lobby(
    game: &PlannedGame,
    tickets: &[QueueTicket],
    now: Millis,
    level: BotLevel,
) -> QueuedLobby {
    let first = &tickets[game.tickets[0]];
    let seat_count = game.tickets.len() as u8 + game.bots;
    let lobby = LobbyRow {
        id: Uuid::new_v4(),
        name: format!("Quick play, {seat_count} players"),
        public: true,
        invite_hash: None,
        seat_count,
        rules: first.rules.clone(),
        clock: first.clock,
        status: LobbyStatus::Open,
        seed: None,
        deck_salt: None,
        seq: 0,
        created_at: now,
        started_at: None,
        finished_at: None,
        rated: first.rated,
        chat_policy: ChatPolicy::default(),
    };
    let mut seats: Vec<SeatRow> = Vec::new();
    let mut seated_tickets = Vec::new();
    for &index in &game.tickets {
        let ticket = &tickets[index];
        let seat = seats.len() as u8;
        let name = unique_name(&ticket.display_name, &seats);
        seats.push(seat_row(seat, name, Some(ticket.player_id), None, now));
        seated_tickets.push((ticket.id, seat));
    }
    for _ in 0..game.bots {
        let seat = seats.len() as u8;
        let name = unique_name(&default_bot_name(level, seat), &seats);
        seats.push(seat_row(seat, name, None, Some(level), now));
    }
    QueuedLobby {
        lobby,
        seats,
        tickets: seated_tickets,
    }
}

fn seat_row(
    seat: u8,
    name: String,
    player_id: Option<Uuid>,
    bot: Option<BotLevel>,
    now: Millis,
) -> SeatRow {
    SeatRow {
        seat,
        display_name: name,
        player_id,
        token_hash: Token::generate().hash(),
        creator: false,
        joined_at: now,
        control: SeatControl::Human,
        control_seq: 0,
        bot: bot.map(|level| level.to_string()),
    }
}

/// `name`, or `name (2)`, `name (3)`... when a seat already carries it: names are unique
/// within a lobby. Shortened to stay within a name's 32 characters.
fn unique_name(name: &str, seats: &[SeatRow]) -> String {
    let taken = |candidate: &str| {
        let key = name_key(candidate);
        seats.iter().any(|seat| name_key(&seat.display_name) == key)
    };
    if !taken(name) {
        return name.to_owned();
    }
    (2..)
        .map(|number| {
            let suffix = format!(" ({number})");
            let room = 32 - suffix.chars().count();
            let stem: String = name.chars().take(room).collect();
            format!("{stem}{suffix}")
        })
        .find(|candidate| !taken(candidate))
        .expect("fewer seats than numbers")
}

#[cfg(test)]
mod tests {
    use super::*;
    use carcassonne_core::Rules;
    use carcassonne_store::ratings::RatingPool;
    use carcassonne_store::{TicketStatus, TimeControl};

    const START: Millis = 1_000_000;

    fn ticket(name: &str, rating: f64, players: (u8, u8), waited_secs: i64) -> QueueTicket {
        QueueTicket {
            id: Uuid::new_v4(),
            player_id: Uuid::new_v4(),
            token_hash: String::new(),
            display_name: name.to_owned(),
            min_players: players.0,
            max_players: players.1,
            rules: Rules::default(),
            clock: TimeControl::None,
            rated: false,
            match_key: "base".to_owned(),
            rating,
            created_at: START - waited_secs * 1000,
            expires_at: START + 600_000,
            status: TicketStatus::Waiting,
            lobby_id: None,
            seat: None,
        }
    }

    fn no_bots() -> MatchPolicy {
        MatchPolicy {
            bot_fill_after: None,
            ..MatchPolicy::default()
        }
    }

    fn names(tickets: &[QueueTicket], game: &PlannedGame) -> Vec<String> {
        game.tickets
            .iter()
            .map(|&index| tickets[index].display_name.clone())
            .collect()
    }

    #[test]
    fn close_ratings_match_at_once_and_far_ones_wait() {
        let tickets = [
            ticket("low", 10.0, (2, 2), 0),
            ticket("high", 40.0, (2, 2), 0),
            ticket("near-low", 12.0, (2, 2), 0),
        ];
        let games = plan_games(&tickets, START, &no_bots());
        assert_eq!(games.len(), 1);
        assert_eq!(names(&tickets, &games[0]), ["low", "near-low"]);
        assert_eq!(games[0].bots, 0);
    }

    #[test]
    fn the_window_widens_with_the_wait() {
        let policy = no_bots();
        let fresh = [ticket("a", 25.0, (2, 2), 0), ticket("b", 33.0, (2, 2), 0)];
        assert!(
            plan_games(&fresh, START, &policy).is_empty(),
            "8 apart, window 3"
        );
        // After 25 s the older ticket's window is 3 + 0.2 * 25 = 8: the wider one counts.
        let waited = [ticket("a", 25.0, (2, 2), 25), ticket("b", 33.0, (2, 2), 0)];
        assert_eq!(plan_games(&waited, START, &policy).len(), 1);
        assert_eq!(policy.window(&waited[0], START), 8.0);
    }

    #[test]
    fn the_largest_game_everyone_accepts_is_formed() {
        let tickets = [
            ticket("any", 25.0, (2, 4), 0),
            ticket("three", 25.0, (3, 3), 0),
            ticket("two-three", 25.0, (2, 3), 0),
            ticket("duel", 25.0, (2, 2), 0),
        ];
        let games = plan_games(&tickets, START, &no_bots());
        assert_eq!(names(&tickets, &games[0]), ["any", "three", "two-three"]);
        assert_eq!(games.len(), 1, "the duel player is left with nobody");
    }

    #[test]
    fn other_rules_and_the_same_player_never_meet() {
        let mut river = ticket("river", 25.0, (2, 2), 0);
        river.match_key = "river".to_owned();
        let base = ticket("base", 25.0, (2, 2), 0);
        let mut twin = ticket("twin", 25.0, (2, 2), 0);
        twin.player_id = base.player_id;
        assert!(plan_games(&[river, base, twin], START, &no_bots()).is_empty());
    }

    #[test]
    fn bots_fill_an_unrated_ticket_after_the_wait_but_never_a_rated_one() {
        let policy = MatchPolicy::default();
        let alone = [ticket("alone", 25.0, (3, 4), 61)];
        let games = plan_games(&alone, START, &policy);
        assert_eq!(
            games,
            [PlannedGame {
                tickets: vec![0],
                bots: 2
            }]
        );
        let early = [ticket("early", 25.0, (2, 2), 59)];
        assert!(plan_games(&early, START, &policy).is_empty());
        let mut rated = ticket("rated", 25.0, (2, 2), 600);
        rated.rated = true;
        assert!(plan_games(&[rated], START, &policy).is_empty());
    }

    #[test]
    fn a_rated_ticket_gets_bots_only_where_its_pool_allows_them() {
        let duels_with_bots = MatchPolicy {
            rated_bot_pools: RatedBotPools::new(&[RatingPool::TwoPlayer]),
            ..MatchPolicy::default()
        };
        let mut duel = ticket("duel", 25.0, (2, 2), 61);
        duel.rated = true;
        let games = plan_games(std::slice::from_ref(&duel), START, &duels_with_bots);
        assert_eq!(
            games,
            [PlannedGame {
                tickets: vec![0],
                bots: 1
            }]
        );
        duel.created_at = START - 59_000;
        assert!(
            plan_games(&[duel], START, &duels_with_bots).is_empty(),
            "not before the wait"
        );
        let mut three = ticket("three", 25.0, (3, 4), 600);
        three.rated = true;
        assert!(
            plan_games(&[three], START, &duels_with_bots).is_empty(),
            "not another pool"
        );
    }

    #[test]
    fn a_formed_lobby_seats_every_ticket_once_with_distinct_names() {
        let tickets = [
            ticket("Ann", 25.0, (3, 3), 61),
            ticket("ann", 25.0, (3, 3), 0),
        ];
        let game = PlannedGame {
            tickets: vec![0, 1],
            bots: 1,
        };
        let formed = form_lobby(&game, &tickets, START, BotLevel::Random);
        assert_eq!(formed.lobby.seat_count, 3);
        let names: Vec<&str> = formed
            .seats
            .iter()
            .map(|s| s.display_name.as_str())
            .collect();
        assert_eq!(names, ["Ann", "ann (2)", "Random bot 3"]);
        assert_eq!(formed.tickets, [(tickets[0].id, 0), (tickets[1].id, 1)]);
        assert_eq!(formed.seats[2].bot.as_deref(), Some("random"));
        assert!(formed.seats.iter().all(|seat| !seat.creator));
    }
}
