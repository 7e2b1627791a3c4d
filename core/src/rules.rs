//! Rules options, exactly as `notation.md` writes them.

use serde::{Deserialize, Serialize};

/// An expansion that can be switched on for a game.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
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

/// The rules of one game: expansions and house rules. Every field has a default, so `{}`
/// is the base game with farmers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Rules {
    pub expansions: Vec<Expansion>,
    pub farmers: bool,
    pub farmer_city_points: u32,
    pub tile_limit: Option<u32>,
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
}
