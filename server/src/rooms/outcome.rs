//! How a game ends: the match written to the history, and its result in the state.
//!
//! A game ends *finished* when its last tile is played (end-of-game scoring included), or
//! *abandoned* when no human seat is left to a human (all resigned or abandoned); an
//! abandoned game is scored as it stands, without end-of-game scoring. Either way a
//! seat that resigned never wins: the winners are the seats with the highest score among
//! those that did not resign.

use crate::clock::rfc3339;
use carcassonne_bots::BotLevel;
use carcassonne_core::Rules;
use carcassonne_core::deck::shuffled_stack;
use carcassonne_core::record::{Action, DeckProof, TurnRecord};
use carcassonne_core::{Event, FeatureScore, Game, Move, PointsByKind, TileId};
use carcassonne_store::ratings::{
    Entrant, RatedMatch, RatedSeat, Rating, RatingPool, places_by_score,
};
use carcassonne_store::{
    FinishedMatch, JsonText, LobbyRow, MatchSeat, MatchStatus, Millis, MoveRow, SeatControl,
    SeatRow,
};
use serde::Serialize;
use utoipa::ToSchema;

/// Everything a finished match is built from.
pub struct MatchBuilder<'a> {
    pub lobby: &'a LobbyRow,
    pub seats: &'a [SeatRow],
    pub game: &'a Game,
    /// The moves before the last one.
    pub moves: Vec<Move>,
    /// The move that ended the game, if a move did.
    pub last: Option<&'a MoveRow>,
    /// Features scored before the last move.
    pub breakdown: &'a [FeatureScore],
    /// Each seat's points by kind before the last move.
    pub points: &'a [PointsByKind],
    /// The events of the last move.
    pub events: &'a [Event],
    pub status: MatchStatus,
    pub finished_at: Millis,
}

impl MatchBuilder<'_> {
    pub fn finished_match(&self) -> FinishedMatch {
        let scores = self.game.scores();
        let winners = final_winners(scores, self.seats);
        let seats = self
            .seats
            .iter()
            .map(|seat| MatchSeat {
                seat: seat.seat,
                display_name: seat.display_name.clone(),
                player_id: seat.player_id,
                score: scores.get(seat.seat as usize).copied().unwrap_or(0),
                winner: winners.contains(&seat.seat),
                resigned: seat.control == SeatControl::Resigned,
                points: self.points_of(seat.seat),
            })
            .collect();
        let mut breakdown = self.breakdown.to_vec();
        breakdown.extend(self.events.iter().filter_map(|event| match event {
            Event::FeatureScored(score) => Some(score.clone()),
            _ => None,
        }));
        FinishedMatch {
            id: self.lobby.id,
            name: self.lobby.name.clone(),
            rules: self.lobby.rules.clone(),
            started_at: self.lobby.started_at.unwrap_or(self.finished_at),
            finished_at: self.finished_at,
            tiles_placed: self.game.tiles_placed(),
            seats,
            breakdown: JsonText::of(&breakdown).expect("scores serialize"),
            record: self.game_record(),
            status: self.status,
            rating: self
                .lobby
                .rated
                .then(|| rated_match(self.seats, scores))
                .flatten(),
        }
    }

    /// What the seat scored by kind of feature, the last move included.
    fn points_of(&self, seat: u8) -> PointsByKind {
        let mut points = self
            .points
            .get(usize::from(seat))
            .copied()
            .unwrap_or_default();
        points.add_events(seat, self.events);
        points
    }

    /// The game in the notation of `notation.md`, with the server's extras. An abandoned
    /// game's record holds its whole turns; a turn cut off after its tile is left out.
    fn game_record(&self) -> JsonText {
        let last = self.last.map(|row| row.mv);
        let moves: Vec<Move> = self.moves.iter().copied().chain(last).collect();
        let turns = moves
            .chunks(2)
            .zip(self.game.tiles().iter().skip(1))
            .filter_map(|(pair, placed)| turn_record(pair, placed.tile))
            .collect();
        let seed = self.lobby.seed.unwrap_or_default();
        // The reveal: the seed and the salt of the commitment published at the start.
        let proof = deck_proof(self.lobby);
        let record = MatchRecord {
            rules: self.game.rules().clone(),
            players: self.game.players(),
            draw_order: shuffled_stack(self.game.rules(), seed),
            turns,
            id: self.lobby.id,
            name: self.lobby.name.clone(),
            seats: self.seats.iter().map(|s| s.display_name.clone()).collect(),
            status: self.status,
            started_at: self.lobby.started_at.map(rfc3339),
            finished_at: rfc3339(self.finished_at),
            seed,
            deck_salt: proof.as_ref().map(DeckProof::salt_hex),
            deck_commitment: proof.as_ref().map(DeckProof::commitment_hex),
        };
        JsonText::of(&record).expect("records serialize")
    }
}

/// A finished game in the notation of `notation.md`, with the server's extras (`id`,
/// `name`, `seats`, `status`, `started_at`, `finished_at`, and the deck's proof).
// The engine's `GameRecord` (rules, players, draw order, turns) reads it back, with the
// extras among its other fields, where `replay` finds the proof.
#[derive(Serialize, ToSchema)]
#[schema(as = GameRecordSchema)]
pub struct MatchRecord {
    rules: Rules,
    players: u8,
    /// The tiles drawn after the start tile, in order.
    #[schema(value_type = Vec<String>)]
    draw_order: Vec<TileId>,
    /// One entry per placed tile.
    turns: Vec<TurnRecord>,
    id: uuid::Uuid,
    name: String,
    /// The players' display names, by seat.
    seats: Vec<String>,
    status: MatchStatus,
    /// RFC 3339.
    started_at: Option<String>,
    /// RFC 3339.
    finished_at: String,
    /// The deck's 64-bit seed: with `deck_salt`, it hashes to `deck_commitment`, and it
    /// shuffles to `draw_order` (`carcassonne-server replay` checks both).
    seed: u64,
    /// The commitment's 32-byte salt, as 64 lowercase hex digits.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^[0-9a-f]{64}$")]
    deck_salt: Option<String>,
    /// The SHA-256 published at the start of the game, as 64 lowercase hex digits.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^[0-9a-f]{64}$")]
    deck_commitment: Option<String>,
}

/// The seed and salt of a started game, with their commitment; `None` for games started
/// before decks were committed to.
pub fn deck_proof(lobby: &LobbyRow) -> Option<DeckProof> {
    let salt: [u8; 32] = hex::decode(lobby.deck_salt.as_deref()?)
        .ok()?
        .try_into()
        .ok()?;
    Some(DeckProof::new(lobby.seed?, salt))
}

fn turn_record(pair: &[Move], tile: TileId) -> Option<TurnRecord> {
    let [Move::PlaceTile { pos, rotation }, action] = pair else {
        return None;
    };
    Some(TurnRecord {
        tile,
        x: pos.x,
        y: pos.y,
        rotation: *rotation,
        action: Action::from_move(*action)?,
    })
}

/// The rating pools whose rated games may seat bots (the operator's choice; none by
/// default). A bot plays there at its level's [`bot_rating`], which never changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RatedBotPools {
    two_player: bool,
    multiplayer: bool,
}

impl RatedBotPools {
    pub fn new(pools: &[RatingPool]) -> RatedBotPools {
        RatedBotPools {
            two_player: pools.contains(&RatingPool::TwoPlayer),
            multiplayer: pools.contains(&RatingPool::Multiplayer),
        }
    }

    /// Whether a rated game of `players` seats may seat bots.
    pub fn allow(self, players: u8) -> bool {
        match RatingPool::for_players(players) {
            RatingPool::TwoPlayer => self.two_player,
            RatingPool::Multiplayer => self.multiplayer,
        }
    }
}

/// The fixed rating a bot of `level` plays rated games at: below a new player's 25 for
/// the weaker two, near a strong player's for the search bot, each with a small `sigma`
/// so that a game against a bot moves a player's rating about as much as one against
/// a well-known player.
pub fn bot_rating(level: BotLevel) -> Rating {
    let mu = match level {
        BotLevel::Random => 10.0,
        BotLevel::Greedy => 20.0,
        BotLevel::Mcts => 27.0,
    };
    Rating { mu, sigma: 1.0 }
}

/// What a rated game does to ratings: places by score among the seats still played
/// by their people (or bots, where the pool allows them), and every seat that resigned
/// or was abandoned shares last place. A player's seat is rated as the player, a bot's
/// at its fixed rating. `None` for a game with a seat neither holds, which a rated
/// lobby never seats.
fn rated_match(seats: &[SeatRow], scores: &[u32]) -> Option<RatedMatch> {
    let score_of = |seat: u8| scores.get(usize::from(seat)).copied().unwrap_or(0);
    let (standing, departed): (Vec<&SeatRow>, Vec<&SeatRow>) = seats
        .iter()
        .partition(|seat| seat.control == SeatControl::Human);
    let standing: Vec<(u8, u32)> = standing
        .iter()
        .map(|seat| (seat.seat, score_of(seat.seat)))
        .collect();
    let departed: Vec<u8> = departed.iter().map(|seat| seat.seat).collect();
    let places = places_by_score(&standing, &departed);
    let rated = places
        .into_iter()
        .map(|(seat, place)| {
            let row = seats.iter().find(|row| row.seat == seat)?;
            Some(RatedSeat {
                seat,
                entrant: entrant(row)?,
                place,
            })
        })
        .collect::<Option<Vec<RatedSeat>>>()?;
    Some(RatedMatch {
        pool: RatingPool::for_players(seats.len() as u8),
        seats: rated,
    })
}

/// Who a seat is rated as: its player, or its bot at a fixed rating.
fn entrant(seat: &SeatRow) -> Option<Entrant> {
    if let Some(player) = seat.player_id {
        return Some(Entrant::Player(player));
    }
    let level: BotLevel = seat.bot.as_deref()?.parse().ok()?;
    Some(Entrant::Fixed(bot_rating(level)))
}

/// The seats with the highest score among those that did not resign (none when all did).
pub fn final_winners(scores: &[u32], seats: &[SeatRow]) -> Vec<u8> {
    let standing = || {
        seats
            .iter()
            .filter(|seat| seat.control != SeatControl::Resigned)
            .map(|seat| {
                (
                    seat.seat,
                    scores.get(seat.seat as usize).copied().unwrap_or(0),
                )
            })
    };
    let Some(best) = standing().map(|(_, score)| score).max() else {
        return Vec::new();
    };
    standing()
        .filter(|&(_, score)| score == best)
        .map(|(seat, _)| seat)
        .collect()
}

/// How the game ended, for the public state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ending {
    pub status: MatchStatus,
    pub final_scores: Vec<u32>,
    pub winners: Vec<u8>,
}

impl Ending {
    pub fn of(result: &FinishedMatch) -> Ending {
        Ending {
            status: result.status,
            final_scores: result.seats.iter().map(|seat| seat.score).collect(),
            winners: result
                .seats
                .iter()
                .filter(|seat| seat.winner)
                .map(|seat| seat.seat)
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seat(number: u8, control: SeatControl) -> SeatRow {
        SeatRow {
            seat: number,
            display_name: format!("p{number}"),
            player_id: None,
            token_hash: String::new(),
            creator: number == 0,
            joined_at: 0,
            control,
            control_seq: 0,
            bot: None,
        }
    }

    #[test]
    fn a_resigned_seat_never_wins_even_with_the_best_score() {
        let seats = [seat(0, SeatControl::Resigned), seat(1, SeatControl::Human)];
        assert_eq!(final_winners(&[50, 10], &seats), vec![1]);
    }

    #[test]
    fn ties_share_the_win_and_abandoned_seats_may_win() {
        let seats = [
            seat(0, SeatControl::Abandoned),
            seat(1, SeatControl::Human),
            seat(2, SeatControl::Resigned),
        ];
        assert_eq!(final_winners(&[20, 20, 30], &seats), vec![0, 1]);
    }

    #[test]
    fn a_rated_game_places_by_score_and_puts_departed_seats_last() {
        let mut seats = [
            seat(0, SeatControl::Human),
            seat(1, SeatControl::Resigned),
            seat(2, SeatControl::Human),
            seat(3, SeatControl::Abandoned),
        ];
        for row in &mut seats {
            row.player_id = Some(uuid::Uuid::from_u128(u128::from(row.seat) + 1));
        }
        let rated = rated_match(&seats, &[40, 90, 40, 80]).unwrap();
        assert_eq!(rated.pool, RatingPool::Multiplayer);
        let places: Vec<(u8, u8)> = rated.seats.iter().map(|s| (s.seat, s.place)).collect();
        assert_eq!(places, vec![(0, 1), (1, 3), (2, 1), (3, 3)]);
        assert_eq!(
            rated.seats[1].entrant,
            Entrant::Player(uuid::Uuid::from_u128(2))
        );
    }

    #[test]
    fn a_bot_seat_is_rated_at_its_levels_fixed_rating() {
        let mut seats = [seat(0, SeatControl::Human), seat(1, SeatControl::Human)];
        seats[0].player_id = Some(uuid::Uuid::from_u128(1));
        seats[1].bot = Some(BotLevel::Random.to_string());
        let rated = rated_match(&seats, &[10, 20]).unwrap();
        assert_eq!(rated.pool, RatingPool::TwoPlayer);
        let entrants: Vec<(Entrant, u8)> =
            rated.seats.iter().map(|s| (s.entrant, s.place)).collect();
        assert_eq!(
            entrants,
            [
                (Entrant::Player(uuid::Uuid::from_u128(1)), 2),
                (Entrant::Fixed(bot_rating(BotLevel::Random)), 1)
            ]
        );
        assert!(bot_rating(BotLevel::Random).mu < bot_rating(BotLevel::Greedy).mu);
        assert!(bot_rating(BotLevel::Greedy).mu < bot_rating(BotLevel::Mcts).mu);
    }

    #[test]
    fn only_the_chosen_pools_allow_bots_in_rated_games() {
        let duels = RatedBotPools::new(&[RatingPool::TwoPlayer]);
        assert!(duels.allow(2) && !duels.allow(3) && !duels.allow(6));
        let none = RatedBotPools::default();
        assert!(!none.allow(2) && !none.allow(4));
        let all = RatedBotPools::new(&RatingPool::ALL);
        assert!(all.allow(2) && all.allow(5));
    }

    #[test]
    fn a_guest_seat_makes_no_rated_match() {
        let seats = [seat(0, SeatControl::Human), seat(1, SeatControl::Human)];
        assert!(rated_match(&seats, &[1, 2]).is_none());
    }

    #[test]
    fn when_everyone_resigned_nobody_wins() {
        let seats = [
            seat(0, SeatControl::Resigned),
            seat(1, SeatControl::Resigned),
        ];
        assert!(final_winners(&[3, 4], &seats).is_empty());
    }
}
