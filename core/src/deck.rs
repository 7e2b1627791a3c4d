//! The draw stack: which tiles a game uses and the stable, seeded shuffle.
//!
//! # The shuffle (stable across platforms and releases)
//!
//! A `u64` seed becomes a ChaCha20 key: its eight little-endian bytes followed by 24 zero
//! bytes, stream 0, as `rand_chacha::ChaCha20Rng::from_seed` defines. The tiles are put in
//! catalogue order (each type repeated by its count) and shuffled by Fisher-Yates from the
//! back: for `i` from `n - 1` down to `1`, swap element `i` with element `j`, where `j` is
//! drawn uniformly from `0..=i` by rejection sampling on `next_u64` (values above the
//! largest multiple of `i + 1` are redrawn, then `j = value % (i + 1)`). With the River,
//! the river tiles are shuffled first with the same generator, then the land tiles.
//! Changing any of this changes every seeded game ever stored, so a test pins the order.
//!
//! # The deck commitment (commit-reveal)
//!
//! So that players need not trust the operator with the draw order, a server publishes
//! [`deck_commitment`] when a game starts and reveals the seed and salt in the game
//! record at the end; anyone can then check that the revealed seed is the committed one
//! and that it shuffles to the recorded `draw_order`. The commitment is the SHA-256
//! (FIPS 180-4) digest of the concatenation of, with nothing between them:
//!
//! 1. the 19 ASCII bytes `carcassonne-deck-v1` (a domain separator, so that the digest
//!    cannot be mistaken for one of anything else, and a version for any later scheme);
//! 2. the seed as 8 little-endian bytes;
//! 3. the 32-byte salt, which the server draws at random for each game. Without it the
//!    seed, only 64 bits, could be found from its digest by brute force before the end.
//!
//! That is 59 bytes hashed into 32. In a record both are written as 64 lowercase hex
//! digits (`deck_salt`, `deck_commitment`); a test pins one value.

use crate::rules::{Expansion, Rules};
use crate::tiles::{TileId, TileSet, catalogue};
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use sha2::{Digest, Sha256};

/// The bytes that open every deck commitment: the scheme's name and version.
pub const DECK_COMMITMENT_DOMAIN: &[u8] = b"carcassonne-deck-v1";

/// The commitment to a game's `seed` and `salt`, as the module documentation defines it.
pub fn deck_commitment(seed: u64, salt: &[u8; 32]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(DECK_COMMITMENT_DOMAIN);
    hasher.update(seed.to_le_bytes());
    hasher.update(salt);
    hasher.finalize().into()
}

/// The tile type that lies at `0,0` before the first turn.
pub fn start_tile(rules: &Rules) -> TileId {
    let name = if rules.has(Expansion::River) {
        "R01"
    } else {
        "D"
    };
    TileId::from_name(name).expect("the catalogue has the start tiles")
}

/// The lake, which ends the river and is always the last river tile drawn.
pub(crate) fn lake() -> TileId {
    TileId::from_name("R02").expect("the catalogue has the lake")
}

/// The whole draw stack for `rules`, shuffled by `seed` as the module documentation says.
/// Without the River it holds the 71 base tiles left after the start tile plus the tiles
/// of the chosen expansions; with it, the shuffled river tiles and the lake come first.
pub fn shuffled_stack(rules: &Rules, seed: u64) -> Vec<TileId> {
    let mut rng = generator(seed);
    let mut stack = Vec::new();
    if rules.has(Expansion::River) {
        let mut river = river_tiles_before_lake();
        shuffle(&mut river, &mut rng);
        stack.extend(river);
        stack.push(lake());
    }
    let mut land = land_tiles(rules);
    shuffle(&mut land, &mut rng);
    stack.extend(land);
    stack
}

/// How many tiles [`shuffled_stack`] gives for `rules`, without shuffling them.
pub fn stack_len(rules: &Rules) -> usize {
    let river = if rules.has(Expansion::River) {
        river_tiles_before_lake().len() + 1
    } else {
        0
    };
    river + land_tiles(rules).len()
}

fn river_tiles_before_lake() -> Vec<TileId> {
    let spring = start_tile(&Rules::with_expansions(&[Expansion::River]));
    catalogue()
        .copies_in(TileSet::River)
        .filter(|&tile| tile != spring && tile != lake())
        .collect()
}

/// The base tiles without the D start tile (which stays in the box with the River too),
/// and the tiles of Inns & Cathedrals and The Festival when they are on.
fn land_tiles(rules: &Rules) -> Vec<TileId> {
    let start = start_tile(&Rules::default());
    let mut tiles: Vec<TileId> = catalogue().copies_in(TileSet::Base).collect();
    let first_start = tiles
        .iter()
        .position(|&tile| tile == start)
        .expect("a D tile");
    tiles.remove(first_start);
    if rules.has(Expansion::InnsAndCathedrals) {
        tiles.extend(catalogue().copies_in(TileSet::InnsAndCathedrals));
    }
    if rules.has(Expansion::Festival) {
        tiles.extend(catalogue().copies_in(TileSet::Festival));
    }
    tiles
}

fn generator(seed: u64) -> ChaCha20Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    ChaCha20Rng::from_seed(key)
}

/// Fisher-Yates from the back, as the module documentation defines it. Generic so that
/// [`crate::hidden`] shuffles the unseen tiles of a determinization the same way.
pub(crate) fn shuffle<T, R: Rng + ?Sized>(items: &mut [T], rng: &mut R) {
    for i in (1..items.len()).rev() {
        let j = uniform_below(rng, i as u64 + 1) as usize;
        items.swap(i, j);
    }
}

/// A uniform value in `0..bound` (`bound > 0`) by rejection sampling, free of modulo bias.
fn uniform_below<R: Rng + ?Sized>(rng: &mut R, bound: u64) -> u64 {
    // 2^64 mod bound values at the top of the range would favour small results.
    let excess = (u64::MAX % bound + 1) % bound;
    loop {
        let value = rng.next_u64();
        if value <= u64::MAX - excess {
            return value % bound;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(stack: &[TileId]) -> Vec<&'static str> {
        stack.iter().map(|tile| tile.name()).collect()
    }

    #[test]
    fn base_stack_has_71_tiles_and_three_d() {
        let stack = shuffled_stack(&Rules::default(), 7);
        assert_eq!(stack.len(), 71);
        assert_eq!(names(&stack).iter().filter(|&&n| n == "D").count(), 3);
    }

    #[test]
    fn the_same_seed_gives_the_same_order_forever() {
        // Pinned: if this changes, every stored seeded game would replay differently.
        let stack = shuffled_stack(&Rules::default(), 42);
        assert_eq!(
            names(&stack[..12]),
            ["V", "S", "Vg", "U", "V", "W", "F", "C", "U", "B", "D", "U"]
        );
        assert_eq!(stack, shuffled_stack(&Rules::default(), 42));
        assert_ne!(stack, shuffled_stack(&Rules::default(), 43));
    }

    #[test]
    fn river_comes_first_with_the_lake_last_of_it() {
        let rules = Rules::with_expansions(&Expansion::ALL);
        let stack = shuffled_stack(&rules, 3);
        assert_eq!(stack.len(), 10 + 1 + 71 + 18 + 10);
        assert!(stack[..10].iter().all(|t| t.def().set == TileSet::River));
        assert_eq!(stack[10].name(), "R02");
        assert!(stack[11..].iter().all(|t| t.def().set != TileSet::River));
        assert_eq!(start_tile(&rules).name(), "R01");
    }

    #[test]
    fn stack_len_counts_what_the_shuffle_gives() {
        for mask in 0..16u8 {
            let expansions: Vec<Expansion> = Expansion::ALL
                .into_iter()
                .enumerate()
                .filter(|(bit, _)| mask & (1 << bit) != 0)
                .map(|(_, expansion)| expansion)
                .collect();
            let rules = Rules::with_expansions(&expansions);
            assert_eq!(stack_len(&rules), shuffled_stack(&rules, 9).len(), "{mask}");
        }
        assert_eq!(stack_len(&Rules::default()), 71);
        assert_eq!(stack_len(&Rules::with_expansions(&Expansion::ALL)), 110);
    }

    #[test]
    fn the_deck_commitment_is_pinned() {
        // Pinned: anyone checking a stored record recomputes exactly this. The value was
        // computed independently with Python's hashlib from the documented bytes.
        let salt: [u8; 32] = std::array::from_fn(|index| index as u8);
        assert_eq!(
            deck_commitment(42, &salt),
            hex_digest("db54b828aea81528238348adf9298fabca2bdf4df941876c7c6223cf8e237b58"),
        );
        assert_ne!(deck_commitment(43, &salt), deck_commitment(42, &salt));
        assert_ne!(deck_commitment(42, &[0; 32]), deck_commitment(42, &salt));
    }

    fn hex_digest(text: &str) -> [u8; 32] {
        let mut digest = [0; 32];
        hex::decode_to_slice(text, &mut digest).expect("64 hex digits");
        digest
    }

    #[test]
    fn uniform_below_stays_in_range() {
        let mut rng = generator(1);
        for bound in [1, 2, 3, 7, 71, u64::MAX] {
            for _ in 0..100 {
                assert!(uniform_below(&mut rng, bound) < bound);
            }
        }
    }
}
