//! Board geometry: positions, sides, half-sides and rotations.
//!
//! The conventions are those of `notation.md`: x grows to the east, y grows to the
//! south, and rotations are clockwise quarter turns. Everything here is a small `Copy`
//! value so the rest of the engine can pass them around freely.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A cell of the board: x grows east, y grows south. The start tile lies at `0,0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema), schema(as = PosSchema))]
pub struct Pos {
    pub x: i32,
    pub y: i32,
}

impl Pos {
    pub const ORIGIN: Pos = Pos { x: 0, y: 0 };

    pub const fn new(x: i32, y: i32) -> Pos {
        Pos { x, y }
    }

    /// The orthogonal neighbour across `side`.
    pub fn step(self, side: Side) -> Pos {
        let (dx, dy) = side.offset();
        Pos::new(self.x + dx, self.y + dy)
    }

    /// The eight surrounding cells, orthogonal and diagonal.
    pub fn surrounding(self) -> impl Iterator<Item = Pos> {
        const OFFSETS: [(i32, i32); 8] = [
            (-1, -1),
            (0, -1),
            (1, -1),
            (-1, 0),
            (1, 0),
            (-1, 1),
            (0, 1),
            (1, 1),
        ];
        OFFSETS
            .into_iter()
            .map(move |(dx, dy)| Pos::new(self.x + dx, self.y + dy))
    }
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{}", self.x, self.y)
    }
}

/// One of the four sides of a tile, in the order N, E, S, W used by `tiles.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Side {
    #[serde(rename = "N")]
    North,
    #[serde(rename = "E")]
    East,
    #[serde(rename = "S")]
    South,
    #[serde(rename = "W")]
    West,
}

impl Side {
    pub const ALL: [Side; 4] = [Side::North, Side::East, Side::South, Side::West];

    pub const fn index(self) -> usize {
        self as usize
    }

    pub const fn from_index(index: usize) -> Side {
        Side::ALL[index % 4]
    }

    pub const fn opposite(self) -> Side {
        Side::from_index(self.index() + 2)
    }

    /// The side this one faces after turning the tile clockwise by `rotation`.
    pub const fn rotated(self, rotation: Rotation) -> Side {
        Side::from_index(self.index() + rotation.quarter_turns())
    }

    /// The printed side of a tile that faces `self` when the tile lies at `rotation`.
    pub const fn unrotated(self, rotation: Rotation) -> Side {
        Side::from_index(self.index() + 4 - rotation.quarter_turns())
    }

    const fn offset(self) -> (i32, i32) {
        match self {
            Side::North => (0, -1),
            Side::East => (1, 0),
            Side::South => (0, 1),
            Side::West => (-1, 0),
        }
    }

    /// The letter `tiles.md` uses for this side.
    pub const fn letter(self) -> char {
        match self {
            Side::North => 'N',
            Side::East => 'E',
            Side::South => 'S',
            Side::West => 'W',
        }
    }
}

/// Half of a side, where fields attach. Indexed clockwise from the top-left corner:
/// `Nw Ne En Es Se Sw Ws Wn`, exactly as `tiles.md` lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HalfSide(u8);

impl HalfSide {
    pub const NAMES: [&'static str; 8] = ["Nw", "Ne", "En", "Es", "Se", "Sw", "Ws", "Wn"];

    pub fn all() -> impl Iterator<Item = HalfSide> {
        (0..8).map(HalfSide)
    }

    pub const fn index(self) -> usize {
        self.0 as usize
    }

    pub const fn from_index(index: usize) -> HalfSide {
        HalfSide((index % 8) as u8)
    }

    pub fn from_name(name: &str) -> Option<HalfSide> {
        HalfSide::NAMES
            .iter()
            .position(|&n| n == name)
            .map(HalfSide::from_index)
    }

    pub const fn name(self) -> &'static str {
        HalfSide::NAMES[self.0 as usize]
    }

    /// The side this half belongs to.
    pub const fn side(self) -> Side {
        Side::from_index(self.0 as usize / 2)
    }

    /// The two halves of a side, in clockwise order.
    pub const fn of_side(side: Side) -> [HalfSide; 2] {
        [
            HalfSide(side.index() as u8 * 2),
            HalfSide(side.index() as u8 * 2 + 1),
        ]
    }

    /// The half of the neighbouring tile that touches this one across the shared side:
    /// my `Ne` meets the north neighbour's `Se`, my `Nw` its `Sw`, and so on.
    pub const fn facing(self) -> HalfSide {
        // Going clockwise round my tile and round the neighbour's tile run in opposite
        // directions along the shared side, so the first half meets the second.
        let side = self.0 / 2;
        let first = self.0.is_multiple_of(2);
        let other_side = (side + 2) % 4;
        HalfSide(other_side * 2 + if first { 1 } else { 0 })
    }

    pub const fn rotated(self, rotation: Rotation) -> HalfSide {
        HalfSide::from_index(self.0 as usize + 2 * rotation.quarter_turns())
    }

    pub const fn unrotated(self, rotation: Rotation) -> HalfSide {
        HalfSide::from_index(self.0 as usize + 8 - 2 * rotation.quarter_turns())
    }
}

/// A clockwise rotation in quarter turns, written in degrees (0, 90, 180, 270).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Rotation {
    #[default]
    R0,
    R90,
    R180,
    R270,
}

impl Rotation {
    pub const ALL: [Rotation; 4] = [Rotation::R0, Rotation::R90, Rotation::R180, Rotation::R270];

    pub const fn quarter_turns(self) -> usize {
        self as usize
    }

    pub const fn degrees(self) -> u16 {
        self as u16 * 90
    }

    /// The rotations whose bits are set in `bits` (bit `r` for `r` quarter turns; bits
    /// above 3 are ignored), in ascending order. A slice of known length lets a caller
    /// extend a vector by all of them with one capacity check.
    pub const fn set(bits: u32) -> &'static [Rotation] {
        let (rotations, count) = &ROTATION_SETS[(bits & 0xf) as usize];
        rotations.split_at(*count).0
    }

    pub const fn from_degrees(degrees: i64) -> Option<Rotation> {
        match degrees {
            0 => Some(Rotation::R0),
            90 => Some(Rotation::R90),
            180 => Some(Rotation::R180),
            270 => Some(Rotation::R270),
            _ => None,
        }
    }
}

/// For each set of rotations as four bits, its members in ascending order and how many
/// there are (see [`Rotation::set`]).
const ROTATION_SETS: [([Rotation; 4], usize); 16] = {
    let mut sets = [([Rotation::R0; 4], 0); 16];
    let mut bits = 0;
    while bits < 16 {
        let mut turns = 0;
        while turns < 4 {
            if bits & (1 << turns) != 0 {
                let (rotations, count) = &mut sets[bits];
                rotations[*count] = Rotation::ALL[turns];
                *count += 1;
            }
            turns += 1;
        }
        bits += 1;
    }
    sets
};

impl fmt::Display for Rotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.degrees())
    }
}

impl Serialize for Rotation {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u16(self.degrees())
    }
}

impl<'de> Deserialize<'de> for Rotation {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let degrees = i64::deserialize(deserializer)?;
        Rotation::from_degrees(degrees).ok_or_else(|| {
            serde::de::Error::custom(format!("rotation must be 0, 90, 180 or 270, not {degrees}"))
        })
    }
}

/// One value per side of a tile, indexed by [`Side`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct BySide<T>(pub [T; 4]);

impl<T> std::ops::Index<Side> for BySide<T> {
    type Output = T;
    fn index(&self, side: Side) -> &T {
        &self.0[side.index()]
    }
}

impl<T> std::ops::IndexMut<Side> for BySide<T> {
    fn index_mut(&mut self, side: Side) -> &mut T {
        &mut self.0[side.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rotation_set_lists_its_bits_in_ascending_order() {
        for bits in 0..16u32 {
            let listed: Vec<Rotation> = Rotation::ALL
                .into_iter()
                .filter(|rotation| bits & (1 << rotation.quarter_turns()) != 0)
                .collect();
            assert_eq!(Rotation::set(bits), listed, "{bits:04b}");
        }
    }

    #[test]
    fn rotating_ninety_degrees_maps_half_sides_as_the_catalogue_says() {
        let expected = [
            ("Nw", "En"),
            ("Ne", "Es"),
            ("En", "Se"),
            ("Es", "Sw"),
            ("Se", "Ws"),
            ("Sw", "Wn"),
            ("Ws", "Nw"),
            ("Wn", "Ne"),
        ];
        for (from, to) in expected {
            let half = HalfSide::from_name(from).unwrap();
            assert_eq!(half.rotated(Rotation::R90).name(), to, "{from}");
            assert_eq!(
                HalfSide::from_name(to).unwrap().unrotated(Rotation::R90),
                half
            );
        }
    }

    #[test]
    fn facing_halves_pair_up_across_shared_sides() {
        let pairs = [("Ne", "Se"), ("Nw", "Sw"), ("En", "Wn"), ("Es", "Ws")];
        for (mine, theirs) in pairs {
            let mine = HalfSide::from_name(mine).unwrap();
            let theirs = HalfSide::from_name(theirs).unwrap();
            assert_eq!(mine.facing(), theirs);
            assert_eq!(theirs.facing(), mine);
        }
    }

    #[test]
    fn sides_rotate_clockwise_and_north_is_negative_y() {
        assert_eq!(Side::North.rotated(Rotation::R90), Side::East);
        assert_eq!(Side::West.rotated(Rotation::R90), Side::North);
        assert_eq!(Side::East.unrotated(Rotation::R90), Side::North);
        assert_eq!(Pos::ORIGIN.step(Side::North), Pos::new(0, -1));
        assert_eq!(Pos::ORIGIN.step(Side::East), Pos::new(1, 0));
        assert_eq!(Pos::ORIGIN.surrounding().count(), 8);
    }

    #[test]
    fn rotations_serialize_as_degrees_and_reject_other_angles() {
        assert_eq!(serde_json::to_string(&Rotation::R270).unwrap(), "270");
        assert_eq!(
            serde_json::from_str::<Rotation>("90").unwrap(),
            Rotation::R90
        );
        assert!(serde_json::from_str::<Rotation>("45").is_err());
    }
}
