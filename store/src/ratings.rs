//! The rating method: Weng-Lin (a Bayesian approximation in the Bradley-Terry model, as
//! OpenSkill uses), computed by the `skillratings` crate.
//!
//! Pure: a rated match is its pool and, per seat, who played it and the place they took;
//! [`rate_match`] turns the seats' ratings before the match into their ratings after it.
//! The store applies it in the transaction that records a rated match, and
//! [`Store::rebuild_ratings`](crate::Store::rebuild_ratings) applies it again to every
//! rated match in ledger order: the same inputs in the same order through the same
//! function give bit-for-bit the same numbers on either database (both keep IEEE doubles).

use serde::{Deserialize, Serialize};
use skillratings::MultiTeamOutcome;
use skillratings::weng_lin::{WengLinConfig, WengLinRating, weng_lin_multi_team};
use uuid::Uuid;

/// Rated games a player must finish in a pool before the leaderboard ranks them; until
/// then their rating is provisional.
pub const PROVISIONAL_GAMES: u32 = 10;

/// Where a player's rating lives: two-player games and games of three to six players are
/// rated apart, since winning one differs from winning the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RatingPool {
    /// Two players.
    TwoPlayer,
    /// Three to six players.
    Multiplayer,
}

impl RatingPool {
    pub const ALL: [RatingPool; 2] = [RatingPool::TwoPlayer, RatingPool::Multiplayer];

    /// The pool of a game with this many seats.
    pub fn for_players(players: u8) -> RatingPool {
        if players <= 2 {
            RatingPool::TwoPlayer
        } else {
            RatingPool::Multiplayer
        }
    }

    /// The pool's name, as stored and in URLs.
    pub fn name(self) -> &'static str {
        match self {
            RatingPool::TwoPlayer => "two_player",
            RatingPool::Multiplayer => "multiplayer",
        }
    }

    pub fn from_name(name: &str) -> Option<RatingPool> {
        RatingPool::ALL.into_iter().find(|pool| pool.name() == name)
    }
}

/// A Weng-Lin rating: the estimate `mu` of a player's skill and its uncertainty `sigma`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Rating {
    pub mu: f64,
    pub sigma: f64,
}

impl Rating {
    /// A new player's rating: mu 25, sigma 25/3.
    pub fn initial() -> Rating {
        Rating::from(WengLinRating::new())
    }

    /// The conservative estimate `mu - 3 sigma` that leaderboards order by: a new
    /// player starts at 0 and climbs as their results make the estimate surer.
    pub fn conservative(self) -> f64 {
        self.mu - 3.0 * self.sigma
    }
}

impl From<WengLinRating> for Rating {
    fn from(rating: WengLinRating) -> Rating {
        Rating {
            mu: rating.rating,
            sigma: rating.uncertainty,
        }
    }
}

impl From<Rating> for WengLinRating {
    fn from(rating: Rating) -> WengLinRating {
        WengLinRating {
            rating: rating.mu,
            uncertainty: rating.sigma,
        }
    }
}

/// Who played a seat of a rated match.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Entrant {
    /// A player identity, whose rating in the pool the match changes.
    Player(Uuid),
    /// A bot, which plays at a fixed rating the match does not change.
    Fixed(Rating),
}

/// One seat of a rated match.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RatedSeat {
    pub seat: u8,
    pub entrant: Entrant,
    /// 1 for first; seats that tie share a place, and the next place skips (1, 1, 3).
    pub place: u8,
}

/// What a rated match contributes to the ratings.
#[derive(Clone, Debug, PartialEq)]
pub struct RatedMatch {
    pub pool: RatingPool,
    pub seats: Vec<RatedSeat>,
}

/// A seat's rating before and after a rated match.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RatingChange {
    pub seat: u8,
    /// The player; `None` for a bot, whose rating is fixed.
    pub player_id: Option<Uuid>,
    pub place: u8,
    pub before: Rating,
    pub after: Rating,
}

/// A seat as a match rates it: its rating going in, its place, and whether its rating is
/// fixed (a bot's).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Standing {
    pub before: Rating,
    pub place: u8,
    pub fixed: bool,
}

/// The seats' ratings after a match, in the order of `seats`: each seat is a one-player
/// team ranked by its place. A seat at a fixed rating keeps it.
pub fn rate_match(seats: &[Standing]) -> Vec<Rating> {
    let teams: Vec<[WengLinRating; 1]> = seats
        .iter()
        .map(|seat| [WengLinRating::from(seat.before)])
        .collect();
    let ranked: Vec<(&[WengLinRating], MultiTeamOutcome)> = teams
        .iter()
        .zip(seats)
        .map(|(team, seat)| (&team[..], MultiTeamOutcome::new(usize::from(seat.place))))
        .collect();
    let after = weng_lin_multi_team(&ranked, &WengLinConfig::new());
    seats
        .iter()
        .zip(after)
        .map(|(seat, team)| match seat.fixed {
            true => seat.before,
            false => Rating::from(team[0]),
        })
        .collect()
}

/// Places by standing: seats in `standing` ranked by score, highest first, ties sharing a
/// place; every seat in `last` (resigned or abandoned) shares the place after them all.
pub fn places_by_score(standing: &[(u8, u32)], last: &[u8]) -> Vec<(u8, u8)> {
    let mut places: Vec<(u8, u8)> = standing
        .iter()
        .map(|&(seat, score)| {
            let better = standing.iter().filter(|&&(_, other)| other > score).count();
            (seat, place_number(better))
        })
        .collect();
    let last_place = place_number(standing.len());
    places.extend(last.iter().map(|&seat| (seat, last_place)));
    places.sort_unstable();
    places
}

fn place_number(seats_ahead: usize) -> u8 {
    u8::try_from(seats_ahead + 1).unwrap_or(u8::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn player(before: Rating, place: u8) -> Standing {
        Standing {
            before,
            place,
            fixed: false,
        }
    }

    #[test]
    fn the_winner_of_a_duel_gains_what_the_loser_loses_in_mu() {
        let start = Rating::initial();
        let after = rate_match(&[player(start, 1), player(start, 2)]);
        assert!(after[0].mu > start.mu && after[1].mu < start.mu);
        assert!((after[0].mu - start.mu - (start.mu - after[1].mu)).abs() < 1e-9);
        assert!(after.iter().all(|rating| rating.sigma < start.sigma));
    }

    #[test]
    fn a_tie_between_equals_leaves_their_mu_unchanged() {
        let start = Rating::initial();
        let after = rate_match(&[player(start, 1), player(start, 1)]);
        assert!((after[0].mu - start.mu).abs() < 1e-9);
        assert_eq!(after[0], after[1]);
    }

    #[test]
    fn a_bot_keeps_its_fixed_rating() {
        let bot = Rating {
            mu: 30.0,
            sigma: 1.0,
        };
        let start = Rating::initial();
        let after = rate_match(&[
            Standing {
                before: bot,
                place: 1,
                fixed: true,
            },
            player(start, 2),
        ]);
        assert_eq!(after[0], bot);
        assert!(after[1].mu < start.mu);
    }

    #[test]
    fn places_share_ties_and_put_the_departed_last() {
        let places = places_by_score(&[(0, 30), (1, 50), (3, 30)], &[2, 4]);
        assert_eq!(places, vec![(0, 2), (1, 1), (2, 4), (3, 2), (4, 4)]);
    }

    #[test]
    fn pools_by_player_count_and_name() {
        assert_eq!(RatingPool::for_players(2), RatingPool::TwoPlayer);
        assert_eq!(RatingPool::for_players(6), RatingPool::Multiplayer);
        for pool in RatingPool::ALL {
            assert_eq!(RatingPool::from_name(pool.name()), Some(pool));
        }
        assert_eq!(RatingPool::from_name("chess"), None);
    }
}
