//! Rules options, exactly as `notation.md` writes them, and their bounds.
//!
//! Reading options is strict: an unknown key (a typo such as `"farmer": false`, which
//! would otherwise leave farmers on) and an expansion listed twice are refused when the
//! options are deserialized. [`Rules::validate`] then checks the bounds of every value,
//! and [`crate::Game::new`] refuses rules that break them:
//!
//! | option | accepted |
//! |---|---|
//! | `expansions` | any subset of `river`, `abbot`, `inns_and_cathedrals`, `festival`, each at most once, any order |
//! | `farmers` | `true` or `false` |
//! | `farmer_city_points` | 1 to 10 ([`FARMER_CITY_POINTS`]); house rules use 3 or 4, 0 or a huge value is a typo |
//! | `tile_limit` | `null`, or 1 to the size of the whole stack for those rules ([`Rules::max_tile_limit`]: 71 for the base game, 11 more with the River, 18 with Inns & Cathedrals, 10 with The Festival) |

use crate::deck;
use serde::{Deserialize, Deserializer, Serialize};
use std::ops::RangeInclusive;

/// The points per completed city a farm may be set to supply.
pub const FARMER_CITY_POINTS: RangeInclusive<u32> = 1..=10;

/// An expansion's name in rules options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Expansion {
    River,
    Abbot,
    InnsAndCathedrals,
    Festival,
}

impl Expansion {
    pub const ALL: [Expansion; 4] = [
        Expansion::River,
        Expansion::Abbot,
        Expansion::InnsAndCathedrals,
        Expansion::Festival,
    ];

    /// The name used in rules options (`"inns_and_cathedrals"`).
    pub fn name(self) -> &'static str {
        match self {
            Expansion::River => "river",
            Expansion::Abbot => "abbot",
            Expansion::InnsAndCathedrals => "inns_and_cathedrals",
            Expansion::Festival => "festival",
        }
    }
}

/// Rules options as `notation.md` writes them. Every field is optional; unknown fields and
/// repeated expansions are refused.
// The doc comments here are the OpenAPI descriptions too; `Rules::validate` checks the
// bounds of the values (see the module documentation for them).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema), schema(as = RulesSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Rules {
    /// Any subset of the expansions, each at most once. Default: none (the base game).
    #[serde(deserialize_with = "distinct_expansions")]
    #[cfg_attr(feature = "schema", schema(schema_with = expansion_list))]
    pub expansions: Vec<Expansion>,
    /// House rule: `false` means no farmers and fields never score. Default `true`.
    pub farmers: bool,
    /// Points per completed city a farm supplies: 1 to 10 (default 3; the first
    /// edition's house rule uses 4).
    #[cfg_attr(feature = "schema", schema(minimum = 1, maximum = 10))]
    pub farmer_city_points: u32,
    /// House rule for short games: the game ends after this many tiles are placed (the
    /// start tile not counted); at least 1 and at most the tiles in the stack.
    #[cfg_attr(feature = "schema", schema(minimum = 1))]
    pub tile_limit: Option<u32>,
}

/// The schema of [`Rules::expansions`]: a list of distinct expansion names.
#[cfg(feature = "schema")]
fn expansion_list() -> utoipa::openapi::Array {
    use utoipa::PartialSchema;
    utoipa::openapi::ArrayBuilder::new()
        .items(Expansion::schema())
        .unique_items(true)
        .description(Some(
            "Any subset of the expansions, each at most once. Default: none.",
        ))
        .build()
}

/// Why a set of rules options is refused. The messages name the option and its bounds.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RulesError {
    #[error("expansion \"{}\" is listed more than once", .0.name())]
    DuplicateExpansion(Expansion),
    #[error("farmer_city_points must be 1 to 10, not {0}")]
    FarmerCityPoints(u32),
    #[error("tile_limit must be null or 1 to {max} (the whole stack for these rules), not {limit}")]
    TileLimit { limit: u32, max: u32 },
}

impl RulesError {
    /// A stable, machine-readable name for the error, for protocols and logs.
    pub fn code(&self) -> &'static str {
        match self {
            RulesError::DuplicateExpansion(_) => "duplicate_expansion",
            RulesError::FarmerCityPoints(_) => "farmer_city_points_out_of_range",
            RulesError::TileLimit { .. } => "tile_limit_out_of_range",
        }
    }
}

/// Reads an expansion list, refusing one that names an expansion twice: a repeated
/// name is a mistake that a silent deduplication would hide.
fn distinct_expansions<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<Expansion>, D::Error> {
    let expansions = Vec::<Expansion>::deserialize(deserializer)?;
    match first_repeated(&expansions) {
        Some(repeated) => Err(serde::de::Error::custom(RulesError::DuplicateExpansion(
            repeated,
        ))),
        None => Ok(expansions),
    }
}

/// The first expansion that appears a second time in `expansions`.
fn first_repeated(expansions: &[Expansion]) -> Option<Expansion> {
    expansions
        .iter()
        .enumerate()
        .find(|(index, expansion)| expansions[..*index].contains(expansion))
        .map(|(_, &expansion)| expansion)
}

impl Default for Rules {
    fn default() -> Rules {
        Rules {
            expansions: Vec::new(),
            farmers: true,
            farmer_city_points: 3,
            tile_limit: None,
        }
    }
}

impl Rules {
    pub fn with_expansions(expansions: &[Expansion]) -> Rules {
        Rules {
            expansions: expansions.to_vec(),
            ..Rules::default()
        }
    }

    pub fn has(&self, expansion: Expansion) -> bool {
        self.expansions.contains(&expansion)
    }

    /// The most seats a game with these rules can have: 5, or 6 with Inns & Cathedrals.
    pub fn max_players(&self) -> u8 {
        if self.has(Expansion::InnsAndCathedrals) {
            6
        } else {
            5
        }
    }

    /// The largest `tile_limit` these rules accept: every tile of their stack, the
    /// count [`deck::shuffled_stack`] gives.
    pub fn max_tile_limit(&self) -> u32 {
        deck::stack_len(self) as u32
    }

    /// Checks every option against its bounds (see the module documentation).
    pub fn validate(&self) -> Result<(), RulesError> {
        if let Some(repeated) = first_repeated(&self.expansions) {
            return Err(RulesError::DuplicateExpansion(repeated));
        }
        if !FARMER_CITY_POINTS.contains(&self.farmer_city_points) {
            return Err(RulesError::FarmerCityPoints(self.farmer_city_points));
        }
        if let Some(limit) = self.tile_limit {
            let max = self.max_tile_limit();
            if !(1..=max).contains(&limit) {
                return Err(RulesError::TileLimit { limit, max });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_options_are_the_base_game_with_farmers() {
        let rules: Rules = serde_json::from_str("{}").unwrap();
        assert_eq!(rules, Rules::default());
        assert!(rules.farmers);
        assert_eq!(rules.farmer_city_points, 3);
        assert_eq!(rules.max_players(), 5);
    }

    #[test]
    fn options_parse_as_notation_writes_them() {
        let text = r#"{"expansions": ["river", "abbot", "inns_and_cathedrals", "festival"],
                       "farmers": false, "farmer_city_points": 4, "tile_limit": 20}"#;
        let rules: Rules = serde_json::from_str(text).unwrap();
        assert_eq!(rules.expansions, Expansion::ALL.to_vec());
        assert!(!rules.farmers);
        assert_eq!(rules.farmer_city_points, 4);
        assert_eq!(rules.tile_limit, Some(20));
        assert_eq!(rules.max_players(), 6);
        assert!(serde_json::from_str::<Rules>(r#"{"expansions": ["dragons"]}"#).is_err());
    }

    fn refusal(text: &str) -> String {
        serde_json::from_str::<Rules>(text)
            .expect_err(text)
            .to_string()
    }

    #[test]
    fn an_unknown_key_is_refused_by_name() {
        // A typo must not silently leave the default on: `farmer` is not `farmers`.
        let message = refusal(r#"{"farmer": false}"#);
        assert!(message.contains("unknown field `farmer`"), "{message}");
        assert!(refusal(r#"{"expansions": [], "tile_limt": 5}"#).contains("tile_limt"));
    }

    #[test]
    fn a_repeated_expansion_is_refused_by_name() {
        let message = refusal(r#"{"expansions": ["abbot", "river", "river"]}"#);
        assert!(
            message.contains(r#"expansion "river" is listed more than once"#),
            "{message}"
        );
        let rules = Rules::with_expansions(&[Expansion::Festival, Expansion::Festival]);
        assert_eq!(
            rules.validate(),
            Err(RulesError::DuplicateExpansion(Expansion::Festival))
        );
    }

    #[test]
    fn farmer_city_points_are_one_to_ten() {
        let with_points = |farmer_city_points| Rules {
            farmer_city_points,
            ..Rules::default()
        };
        for points in [1, 3, 4, 10] {
            assert_eq!(with_points(points).validate(), Ok(()), "{points}");
        }
        for points in [0, 11, u32::MAX] {
            let error = with_points(points).validate().unwrap_err();
            assert_eq!(error, RulesError::FarmerCityPoints(points));
            assert_eq!(error.code(), "farmer_city_points_out_of_range");
        }
    }

    #[test]
    fn tile_limit_is_one_to_the_whole_stack() {
        let with_limit = |expansions: &[Expansion], limit| Rules {
            tile_limit: limit,
            ..Rules::with_expansions(expansions)
        };
        assert_eq!(with_limit(&[], None).validate(), Ok(()));
        assert_eq!(with_limit(&[], Some(1)).validate(), Ok(()));
        assert_eq!(with_limit(&[], Some(71)).validate(), Ok(()));
        assert_eq!(
            with_limit(&[], Some(72)).validate(),
            Err(RulesError::TileLimit { limit: 72, max: 71 })
        );
        assert_eq!(
            with_limit(&[], Some(0)).validate(),
            Err(RulesError::TileLimit { limit: 0, max: 71 })
        );
        let everything = with_limit(&Expansion::ALL, Some(110));
        assert_eq!(everything.max_tile_limit(), 110);
        assert_eq!(everything.validate(), Ok(()));
        let message = with_limit(&Expansion::ALL, Some(111))
            .validate()
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("tile_limit must be null or 1 to 110"),
            "{message}"
        );
    }
}
