//! Conversions between the crate's Rust values and what the columns hold.
//!
//! Neither database has unsigned integers, so seats, counts, scores and sequence numbers
//! go into signed columns and are checked on the way in and out; seeds, which use all 64
//! bits, are bit-cast instead. Statuses, seat controls, move origins and the chat's
//! policies and audiences are stored as their snake_case names (the same as their serde names), and the expansions of a match
//! as a bitmask so that "has all of these" is one integer test.

use std::fmt::Display;

use carcassonne_core::Expansion;

use crate::{
    ChatAudience, ChatPolicy, LobbyStatus, MatchStatus, MoveOrigin, SeatControl, StoreError,
};

/// `value` as another integer type, or [`StoreError::Corrupt`] naming `what` when it does
/// not fit (a stored value out of range, or a value too large for its column).
pub(crate) fn fit<Source, Target>(value: Source, what: &str) -> Result<Target, StoreError>
where
    Source: Copy + Display,
    Target: TryFrom<Source>,
{
    Target::try_from(value)
        .map_err(|_| StoreError::Corrupt(format!("{what} {value} is out of range")))
}

/// The seed's 64 bits, unchanged, as the signed integer a BIGINT column holds.
pub(crate) fn seed_to_column(seed: u64) -> i64 {
    i64::from_ne_bytes(seed.to_ne_bytes())
}

pub(crate) fn seed_from_column(stored: i64) -> u64 {
    u64::from_ne_bytes(stored.to_ne_bytes())
}

pub(crate) fn status_to_column(status: LobbyStatus) -> &'static str {
    match status {
        LobbyStatus::Open => "open",
        LobbyStatus::Playing => "playing",
        LobbyStatus::Finished => "finished",
        LobbyStatus::Cancelled => "cancelled",
    }
}

pub(crate) fn status_from_column(stored: &str) -> Result<LobbyStatus, StoreError> {
    match stored {
        "open" => Ok(LobbyStatus::Open),
        "playing" => Ok(LobbyStatus::Playing),
        "finished" => Ok(LobbyStatus::Finished),
        "cancelled" => Ok(LobbyStatus::Cancelled),
        other => Err(StoreError::Corrupt(format!(
            "unknown lobby status {other:?}"
        ))),
    }
}

/// An enum stored in a TEXT column as its snake_case name, which the column's CHECK
/// constraint lists.
pub(crate) trait TextColumn: Copy + PartialEq + 'static {
    /// Every value, so that a stored name can be looked up.
    const ALL: &'static [Self];
    /// What the value is called in messages about a bad stored name.
    const WHAT: &'static str;

    fn to_column(self) -> &'static str;

    fn from_column(stored: &str) -> Result<Self, StoreError> {
        Self::ALL
            .iter()
            .copied()
            .find(|value| value.to_column() == stored)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown {} {stored:?}", Self::WHAT)))
    }
}

impl TextColumn for SeatControl {
    const ALL: &'static [Self] = &[
        SeatControl::Human,
        SeatControl::Abandoned,
        SeatControl::Resigned,
    ];
    const WHAT: &'static str = "seat control";

    fn to_column(self) -> &'static str {
        match self {
            SeatControl::Human => "human",
            SeatControl::Abandoned => "abandoned",
            SeatControl::Resigned => "resigned",
        }
    }
}

impl TextColumn for MoveOrigin {
    const ALL: &'static [Self] = &[MoveOrigin::Player, MoveOrigin::Timeout, MoveOrigin::Bot];
    const WHAT: &'static str = "move origin";

    fn to_column(self) -> &'static str {
        match self {
            MoveOrigin::Player => "player",
            MoveOrigin::Timeout => "timeout",
            MoveOrigin::Bot => "bot",
        }
    }
}

impl TextColumn for MatchStatus {
    const ALL: &'static [Self] = &[MatchStatus::Finished, MatchStatus::Abandoned];
    const WHAT: &'static str = "match status";

    fn to_column(self) -> &'static str {
        match self {
            MatchStatus::Finished => "finished",
            MatchStatus::Abandoned => "abandoned",
        }
    }
}

impl TextColumn for ChatPolicy {
    const ALL: &'static [Self] = &[ChatPolicy::All, ChatPolicy::Players, ChatPolicy::Off];
    const WHAT: &'static str = "chat policy";

    fn to_column(self) -> &'static str {
        match self {
            ChatPolicy::All => "all",
            ChatPolicy::Players => "players",
            ChatPolicy::Off => "off",
        }
    }
}

impl TextColumn for ChatAudience {
    const ALL: &'static [Self] = &[ChatAudience::Players, ChatAudience::Everyone];
    const WHAT: &'static str = "chat audience";

    fn to_column(self) -> &'static str {
        match self {
            ChatAudience::Players => "players",
            ChatAudience::Everyone => "everyone",
        }
    }
}

/// The bit of one expansion in `matches.expansions`. Fixed here rather than taken from
/// the enum's order, because stored rows must keep their meaning if the enum changes.
fn expansion_bit(expansion: Expansion) -> i32 {
    match expansion {
        Expansion::River => 1,
        Expansion::Abbot => 2,
        Expansion::InnsAndCathedrals => 4,
        Expansion::Festival => 8,
    }
}

/// The bitmask of a set of expansions; 0 for none.
pub(crate) fn expansions_mask(expansions: &[Expansion]) -> i32 {
    expansions
        .iter()
        .fold(0, |mask, &expansion| mask | expansion_bit(expansion))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_keep_all_their_bits() {
        for seed in [0, 1, u64::MAX, 1 << 63, 0x0123_4567_89ab_cdef] {
            assert_eq!(seed_from_column(seed_to_column(seed)), seed);
        }
        assert_eq!(seed_to_column(u64::MAX), -1);
    }

    #[test]
    fn statuses_round_trip() {
        for status in [
            LobbyStatus::Open,
            LobbyStatus::Playing,
            LobbyStatus::Finished,
            LobbyStatus::Cancelled,
        ] {
            let stored = status_to_column(status);
            assert_eq!(status_from_column(stored).unwrap(), status);
        }
        assert!(matches!(
            status_from_column("paused"),
            Err(StoreError::Corrupt(_))
        ));
    }

    /// Each value's column name is its serde name (so the REST output and the database
    /// agree), and reads back as the same value.
    fn assert_text_column_round_trips<T>()
    where
        T: TextColumn + serde::Serialize + std::fmt::Debug,
    {
        for &value in T::ALL {
            let name = serde_json::to_value(value).unwrap();
            assert_eq!(name, serde_json::Value::from(value.to_column()));
            assert_eq!(T::from_column(value.to_column()).unwrap(), value);
        }
        assert!(matches!(
            T::from_column("paused"),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn text_columns_round_trip() {
        assert_text_column_round_trips::<SeatControl>();
        assert_text_column_round_trips::<MoveOrigin>();
        assert_text_column_round_trips::<MatchStatus>();
        assert_text_column_round_trips::<ChatPolicy>();
        assert_text_column_round_trips::<ChatAudience>();
    }

    #[test]
    fn every_expansion_has_its_own_bit() {
        let bits: Vec<i32> = Expansion::ALL.iter().map(|&e| expansion_bit(e)).collect();
        for (index, bit) in bits.iter().enumerate() {
            assert_eq!(bit.count_ones(), 1);
            assert!(!bits[..index].contains(bit));
        }
        assert_eq!(expansions_mask(&Expansion::ALL), 15);
        assert_eq!(expansions_mask(&[]), 0);
        assert_eq!(expansions_mask(&[Expansion::Festival, Expansion::River]), 9);
    }

    #[test]
    fn out_of_range_values_are_refused() {
        assert_eq!(fit::<i16, u8>(5, "seat").unwrap(), 5);
        assert!(matches!(
            fit::<i16, u8>(-1, "seat"),
            Err(StoreError::Corrupt(_))
        ));
        assert!(fit::<u64, i64>(u64::MAX, "seq").is_err());
        assert!(fit::<u32, i32>(u32::MAX, "score").is_err());
    }
}
