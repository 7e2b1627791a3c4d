//! The tile catalogue, parsed once from the binding `tiles.md`.
//!
//! The catalogue is data, not code: `data/tiles.md` is a verbatim copy of the binding
//! `docs/spec/tiles.md` (the end-to-end suite's `docs` test keeps them identical, and
//! both identical to the binding copy where one is at hand), and [`catalogue()`] parses its
//! tile lines the first time it is called. Everything else in the engine refers to tile
//! types by [`TileId`], a dense index into the catalogue, and to spots by [`Spot`], the
//! segment label that `tiles.md` defines (`c1`, `r2`, `f3`, `m`, `g`).

use crate::geometry::{BySide, HalfSide, Rotation, Side};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;

const TILES_MD: &str = include_str!("../data/tiles.md");

/// The box a tile comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TileSet {
    Base,
    River,
    InnsAndCathedrals,
    Festival,
}

/// What lies along one side of a tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    Field = 0,
    Road = 1,
    City = 2,
    River = 3,
}

impl EdgeKind {
    const ALL: [EdgeKind; 4] = [
        EdgeKind::Field,
        EdgeKind::Road,
        EdgeKind::City,
        EdgeKind::River,
    ];

    fn from_letter(letter: char) -> Option<EdgeKind> {
        match letter {
            'F' => Some(EdgeKind::Field),
            'R' => Some(EdgeKind::Road),
            'C' => Some(EdgeKind::City),
            '~' => Some(EdgeKind::River),
            _ => None,
        }
    }
}

/// What an empty cell asks of a tile: for each side, nothing or one edge kind. It is one
/// number in base 5, a digit per side (0 for nothing, 1 + [`EdgeKind`] otherwise), so
/// that the rotations of a tile that fit it are one lookup in the tile's [`FitTable`]
/// rather than a test per rotation: listing legal placements does that for every
/// frontier cell on every turn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct EdgeConstraint(u16);

impl EdgeConstraint {
    /// How many constraints there are: five choices on each of four sides.
    const COUNT: usize = 625;

    /// The value of one unit of each side's digit.
    const PLACE: [u16; 4] = [1, 5, 25, 125];

    /// Records that the side `side` must show `edge`. Each side is constrained at most
    /// once, by the one tile that can lie across it.
    pub fn require(&mut self, side: Side, edge: EdgeKind) {
        debug_assert!(
            self.required(side).is_none(),
            "side {side:?} constrained twice"
        );
        self.0 += (edge as u16 + 1) * EdgeConstraint::PLACE[side.index()];
    }

    /// The edge kind side `side` must show, if any.
    pub fn required(self, side: Side) -> Option<EdgeKind> {
        let digit = self.0 / EdgeConstraint::PLACE[side.index()] % 5;
        digit
            .checked_sub(1)
            .map(|kind| EdgeKind::ALL[usize::from(kind)])
    }

    /// The first side where `def` at `rotation` does not show what this asks.
    pub fn mismatched_side(self, def: &TileDef, rotation: Rotation) -> Option<Side> {
        Side::ALL.into_iter().find(|&side| {
            self.required(side)
                .is_some_and(|edge| def.edge(side, rotation) != edge)
        })
    }
}

/// For every [`EdgeConstraint`], the rotations at which one tile type meets it, as bits
/// 0 to 3 (0, 90, 180, 270 degrees). Computed once per tile type with the catalogue.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct FitTable(Box<[u8; FitTable::LEN]>);

impl FitTable {
    /// Room for every constraint, rounded up to a power of two so that a lookup masks
    /// the constraint instead of testing it against the bound: listing the legal
    /// placements does one lookup per frontier cell, and the test was a fifth of it.
    /// The entries past [`EdgeConstraint::COUNT`] are never reached.
    const LEN: usize = EdgeConstraint::COUNT.next_power_of_two();

    fn of(def: &TileDef) -> FitTable {
        let mut table = Box::new([0; FitTable::LEN]);
        for (code, fits) in table[..EdgeConstraint::COUNT].iter_mut().enumerate() {
            let constraint = EdgeConstraint(code as u16);
            *fits = Rotation::ALL
                .into_iter()
                .filter(|&rotation| constraint.mismatched_side(def, rotation).is_none())
                .fold(0, |bits, rotation| bits | 1 << rotation.quarter_turns());
        }
        FitTable(table)
    }

    /// The rotations that meet `constraint`, as bits 0 to 3.
    #[inline]
    pub fn rotations(&self, constraint: EdgeConstraint) -> u32 {
        u32::from(self.0[usize::from(constraint.0) & (FitTable::LEN - 1)])
    }
}

impl fmt::Debug for FitTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Six hundred numbers derived from the edges would drown the tile's own fields.
        f.write_str("FitTable")
    }
}

/// The kind of a segment, which is also the kind of the feature it belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema), schema(as = FeatureKind))]
#[serde(rename_all = "snake_case")]
pub enum SegmentKind {
    Road,
    City,
    Monastery,
    Garden,
    Field,
    River,
}

/// A segment label: the name of a spot on a tile, the same at every rotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Spot {
    kind: SegmentKind,
    /// The number after the letter; 0 for `m` and `g`, which have none.
    number: u8,
}

impl Spot {
    pub const MONASTERY: Spot = Spot {
        kind: SegmentKind::Monastery,
        number: 0,
    };
    pub const GARDEN: Spot = Spot {
        kind: SegmentKind::Garden,
        number: 0,
    };

    pub fn kind(self) -> SegmentKind {
        self.kind
    }
}

impl fmt::Display for Spot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let letter = match self.kind {
            SegmentKind::Monastery => return f.write_str("m"),
            SegmentKind::Garden => return f.write_str("g"),
            SegmentKind::City => 'c',
            SegmentKind::Road => 'r',
            SegmentKind::Field => 'f',
            SegmentKind::River => 'w',
        };
        write!(f, "{letter}{}", self.number)
    }
}

/// A string that is not a segment label.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a spot: expected a segment label such as c1, r2, f3, m or g")]
pub struct BadSpot(pub String);

impl FromStr for Spot {
    type Err = BadSpot;
    fn from_str(text: &str) -> Result<Spot, BadSpot> {
        let bad = || BadSpot(text.to_owned());
        match text {
            "m" => return Ok(Spot::MONASTERY),
            "g" => return Ok(Spot::GARDEN),
            _ => {}
        }
        let mut chars = text.chars();
        let kind = match chars.next() {
            Some('c') => SegmentKind::City,
            Some('r') => SegmentKind::Road,
            Some('f') => SegmentKind::Field,
            Some('w') => SegmentKind::River,
            _ => return Err(bad()),
        };
        let digits = chars.as_str();
        if digits.is_empty()
            || digits.starts_with('0')
            || !digits.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(bad());
        }
        let number = digits.parse::<u8>().map_err(|_| bad())?;
        Ok(Spot { kind, number })
    }
}

impl Serialize for Spot {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Spot {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// One segment of a tile as printed (rotation 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentDef {
    pub spot: Spot,
    /// Bit `i` set when the segment reaches side `i` (N, E, S, W). Roads, cities, rivers.
    pub sides: u8,
    /// Bit `i` set when the field reaches half-side `i`. Fields only.
    pub halves: u8,
    pub pennants: u8,
    pub inn: bool,
    pub cathedral: bool,
    /// For a field: the indices (into the tile's segments) of the cities it borders.
    pub borders: Vec<u8>,
}

impl SegmentDef {
    pub fn kind(&self) -> SegmentKind {
        self.spot.kind
    }

    /// The sides this segment reaches, as printed.
    pub fn sides(&self) -> impl Iterator<Item = Side> + '_ {
        Side::ALL
            .into_iter()
            .filter(|side| self.sides & (1 << side.index()) != 0)
    }

    /// The half-sides this field reaches, as printed.
    pub fn halves(&self) -> impl Iterator<Item = HalfSide> + '_ {
        HalfSide::all().filter(|half| self.halves & (1 << half.index()) != 0)
    }
}

/// A tile type of the catalogue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileDef {
    pub id: String,
    pub set: TileSet,
    pub count: u8,
    pub edges: BySide<EdgeKind>,
    pub segments: Vec<SegmentDef>,
    pub festival: bool,
    /// The road, city or river segment on each printed side.
    side_segment: BySide<Option<u8>>,
    /// The field segment on each printed half-side.
    half_field: [Option<u8>; 8],
    /// The rotations that fit each constraint an empty cell can have.
    fits: FitTable,
    /// The monastery or garden segment, if any (no tile has both).
    centre: Option<u8>,
}

impl TileDef {
    pub fn has_monastery(&self) -> bool {
        self.segment_index(Spot::MONASTERY).is_some()
    }

    pub fn has_garden(&self) -> bool {
        self.segment_index(Spot::GARDEN).is_some()
    }

    /// A river tile: one with at least one river edge.
    pub fn is_river(&self) -> bool {
        self.edges.0.contains(&EdgeKind::River)
    }

    pub fn pennants(&self) -> u8 {
        self.segments.iter().map(|segment| segment.pennants).sum()
    }

    pub fn segment_index(&self, spot: Spot) -> Option<usize> {
        self.segments
            .iter()
            .position(|segment| segment.spot == spot)
    }

    /// The edge on world side `side` when the tile lies at `rotation`.
    pub fn edge(&self, side: Side, rotation: Rotation) -> EdgeKind {
        self.edges[side.unrotated(rotation)]
    }

    /// The road, city or river segment on world side `side` at `rotation`.
    pub fn segment_on_side(&self, side: Side, rotation: Rotation) -> Option<usize> {
        self.side_segment[side.unrotated(rotation)].map(usize::from)
    }

    /// The field segment on world half-side `half` at `rotation`.
    pub fn field_on_half(&self, half: HalfSide, rotation: Rotation) -> Option<usize> {
        self.half_field[half.unrotated(rotation).index()].map(usize::from)
    }

    /// The monastery or garden segment, which scoring looks up for every cell around
    /// each placed tile.
    pub(crate) fn centre_segment(&self) -> Option<usize> {
        self.centre.map(usize::from)
    }

    /// The rotations at which this tile meets `constraint`, as bits 0 to 3 (0, 90, 180,
    /// 270 degrees).
    #[inline]
    pub(crate) fn fitting_rotations(&self, constraint: EdgeConstraint) -> u32 {
        self.fits.rotations(constraint)
    }

    /// The table behind [`TileDef::fitting_rotations`], for a caller that looks up many
    /// cells in a row.
    pub(crate) fn fit_table(&self) -> &FitTable {
        &self.fits
    }
}

/// A tile type, as a dense index into the catalogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TileId(u8);

impl TileId {
    pub fn def(self) -> &'static TileDef {
        &catalogue().tiles[self.0 as usize]
    }

    pub fn name(self) -> &'static str {
        &self.def().id
    }

    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// Looks a tile type up by its catalogue id (`"D"`, `"R10g"`, `"IC03g"`).
    pub fn from_name(name: &str) -> Option<TileId> {
        catalogue().by_id.get(name).copied()
    }
}

impl fmt::Display for TileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for TileId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for TileId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        TileId::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown tile id {name:?}")))
    }
}

/// Every tile type, in the order of `tiles.md`.
#[derive(Debug)]
pub struct Catalogue {
    tiles: Vec<TileDef>,
    by_id: HashMap<String, TileId>,
}

impl Catalogue {
    pub fn tiles(&self) -> impl Iterator<Item = (TileId, &TileDef)> {
        self.tiles
            .iter()
            .enumerate()
            .map(|(index, def)| (TileId(index as u8), def))
    }

    /// All copies of every tile of `set`, in catalogue order.
    pub fn copies_in(&self, set: TileSet) -> impl Iterator<Item = TileId> + '_ {
        self.tiles()
            .filter(move |(_, def)| def.set == set)
            .flat_map(|(id, def)| std::iter::repeat_n(id, def.count as usize))
    }
}

/// The catalogue, parsed on first use from the embedded copy of `tiles.md`.
pub fn catalogue() -> &'static Catalogue {
    static CATALOGUE: LazyLock<Catalogue> = LazyLock::new(|| {
        parse_catalogue(TILES_MD).unwrap_or_else(|error| panic!("data/tiles.md: {error}"))
    });
    &CATALOGUE
}

/// Parses the tile lines of `tiles.md`: lines inside code blocks under a `## ` heading
/// that names the set.
pub fn parse_catalogue(text: &str) -> Result<Catalogue, String> {
    let mut tiles = Vec::new();
    let mut set = None;
    let mut in_code = false;
    for (number, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if let Some(heading) = line.strip_prefix("## ") {
            set = set_of_heading(heading);
        } else if in_code && !line.trim().is_empty() {
            let set = set.ok_or_else(|| format!("line {}: tile outside a set", number + 1))?;
            let def =
                parse_tile_line(line, set).map_err(|e| format!("line {}: {e}", number + 1))?;
            tiles.push(def);
        }
    }
    if tiles.len() > u8::MAX as usize {
        return Err("too many tile types for a u8 id".into());
    }
    let by_id = tiles
        .iter()
        .enumerate()
        .map(|(index, def)| (def.id.clone(), TileId(index as u8)))
        .collect::<HashMap<_, _>>();
    if by_id.len() != tiles.len() {
        return Err("duplicate tile id".into());
    }
    Ok(Catalogue { tiles, by_id })
}

fn set_of_heading(heading: &str) -> Option<TileSet> {
    if heading.starts_with("Base game") {
        Some(TileSet::Base)
    } else if heading.starts_with("The River") {
        Some(TileSet::River)
    } else if heading.starts_with("Inns & Cathedrals") {
        Some(TileSet::InnsAndCathedrals)
    } else if heading.starts_with("The Festival") {
        Some(TileSet::Festival)
    } else {
        None
    }
}

fn parse_tile_line(line: &str, set: TileSet) -> Result<TileDef, String> {
    let mut words = line.split_whitespace();
    let id = words.next().ok_or("empty line")?.to_owned();
    let count = words
        .next()
        .and_then(|w| w.parse::<u8>().ok())
        .ok_or("bad count")?;
    let edges = parse_edges(words.next().ok_or("no edges")?)?;
    let mut segments = Vec::new();
    let mut festival = false;
    let mut city_spots = Vec::new();
    for word in words {
        match word {
            "monastery" => segments.push(centre_segment(Spot::MONASTERY)),
            "garden" => segments.push(centre_segment(Spot::GARDEN)),
            "festival" => festival = true,
            _ => segments.push(parse_segment(word, &mut city_spots)?),
        }
    }
    let mut def = TileDef {
        id,
        set,
        count,
        edges,
        segments,
        festival,
        side_segment: BySide::default(),
        half_field: [None; 8],
        fits: FitTable(Box::new([0; FitTable::LEN])),
        centre: None,
    };
    index_tile(&mut def)?;
    Ok(def)
}

fn parse_edges(word: &str) -> Result<BySide<EdgeKind>, String> {
    let kinds = word
        .chars()
        .map(|letter| EdgeKind::from_letter(letter).ok_or(format!("bad edge {letter:?}")))
        .collect::<Result<Vec<_>, _>>()?;
    let kinds: [EdgeKind; 4] = kinds.try_into().map_err(|_| "edges need four letters")?;
    Ok(BySide(kinds))
}

fn centre_segment(spot: Spot) -> SegmentDef {
    SegmentDef {
        spot,
        sides: 0,
        halves: 0,
        pennants: 0,
        inn: false,
        cathedral: false,
        borders: Vec::new(),
    }
}

/// Parses `c1=N.W+p1`, `r1=S+inn`, `w1=W.E` or `f1=Nw.Ne>c1,c2` (borders resolved later).
fn parse_segment(word: &str, city_spots: &mut Vec<Spot>) -> Result<SegmentDef, String> {
    let (label, rest) = word
        .split_once('=')
        .ok_or(format!("bad segment {word:?}"))?;
    let spot: Spot = label.parse().map_err(|e: BadSpot| e.to_string())?;
    let mut segment = centre_segment(spot);
    let (places, borders) = match rest.split_once('>') {
        Some((places, borders)) => (places, Some(borders)),
        None => (rest, None),
    };
    let mut parts = places.split('+');
    let places = parts.next().unwrap_or_default();
    for extra in parts {
        match extra {
            "p1" => segment.pennants += 1,
            "inn" => segment.inn = true,
            "cathedral" => segment.cathedral = true,
            _ => return Err(format!("bad modifier {extra:?} in {word:?}")),
        }
    }
    if spot.kind == SegmentKind::Field {
        segment.halves = parse_halves(places)?;
    } else {
        segment.sides = parse_sides(places)?;
    }
    if spot.kind == SegmentKind::City {
        city_spots.push(spot);
    }
    if let Some(borders) = borders {
        // Border labels refer to cities; store their spots' numbers for now and turn them
        // into segment indices once every segment of the tile is known.
        for label in borders.split(',') {
            let city: Spot = label.parse().map_err(|e: BadSpot| e.to_string())?;
            if city.kind != SegmentKind::City {
                return Err(format!("field {word:?} borders a non-city {label:?}"));
            }
            segment.borders.push(city.number);
        }
    }
    Ok(segment)
}

fn parse_sides(places: &str) -> Result<u8, String> {
    let mut mask = 0;
    for name in places.split('.') {
        let side = Side::ALL
            .into_iter()
            .find(|side| name.len() == 1 && name.starts_with(side.letter()))
            .ok_or(format!("bad side {name:?}"))?;
        mask |= 1 << side.index();
    }
    Ok(mask)
}

fn parse_halves(places: &str) -> Result<u8, String> {
    if places == "inner" {
        return Ok(0);
    }
    let mut mask = 0;
    for name in places.split('.') {
        let half = HalfSide::from_name(name).ok_or(format!("bad half-side {name:?}"))?;
        mask |= 1 << half.index();
    }
    Ok(mask)
}

/// Resolves field borders, builds the side and half-side lookups and the fit table,
/// and checks that the segments cover the edges exactly as the edge letters say.
fn index_tile(def: &mut TileDef) -> Result<(), String> {
    let spots: Vec<Spot> = def.segments.iter().map(|s| s.spot).collect();
    for segment in &mut def.segments {
        for number in segment.borders.iter_mut() {
            let city = Spot {
                kind: SegmentKind::City,
                number: *number,
            };
            let index = spots
                .iter()
                .position(|&spot| spot == city)
                .ok_or(format!("field borders missing city {city}"))?;
            *number = index as u8;
        }
    }
    for (index, segment) in def.segments.iter().enumerate() {
        for side in segment.sides() {
            if def.side_segment[side].replace(index as u8).is_some() {
                return Err(format!("side {} has two segments", side.letter()));
            }
        }
        for half in segment.halves() {
            if def.half_field[half.index()].replace(index as u8).is_some() {
                return Err(format!("half-side {} has two fields", half.name()));
            }
        }
    }
    check_edge_coverage(def)?;
    let mut centres = def.segments.iter().enumerate().filter(|(_, segment)| {
        matches!(segment.kind(), SegmentKind::Monastery | SegmentKind::Garden)
    });
    def.centre = centres.next().map(|(index, _)| index as u8);
    if centres.next().is_some() {
        return Err("a tile has more than one monastery or garden".into());
    }
    def.fits = FitTable::of(def);
    Ok(())
}

fn check_edge_coverage(def: &TileDef) -> Result<(), String> {
    for side in Side::ALL {
        let edge = def.edges[side];
        let segment_kind = def.side_segment[side].map(|i| def.segments[i as usize].kind());
        let expected = match edge {
            EdgeKind::Field => None,
            EdgeKind::Road => Some(SegmentKind::Road),
            EdgeKind::City => Some(SegmentKind::City),
            EdgeKind::River => Some(SegmentKind::River),
        };
        if segment_kind != expected {
            return Err(format!(
                "side {} is {edge:?} but its segment is {segment_kind:?}",
                side.letter()
            ));
        }
        let fields_expected = edge != EdgeKind::City;
        for half in HalfSide::of_side(side) {
            if def.half_field[half.index()].is_some() != fields_expected {
                return Err(format!(
                    "half-side {} does not fit edge {edge:?}",
                    half.name()
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edge_constraint_keeps_each_side_apart() {
        for kinds in 0..EdgeConstraint::COUNT {
            // Decode `kinds` as one optional edge kind per side, then build it side by side.
            let wanted: Vec<Option<EdgeKind>> = (0..4)
                .map(|side| (kinds / 5usize.pow(side) % 5).checked_sub(1))
                .map(|kind| kind.map(|kind| EdgeKind::ALL[kind]))
                .collect();
            let mut constraint = EdgeConstraint::default();
            for (side, kind) in Side::ALL.into_iter().zip(&wanted) {
                if let Some(kind) = kind {
                    constraint.require(side, *kind);
                }
            }
            for (side, kind) in Side::ALL.into_iter().zip(&wanted) {
                assert_eq!(constraint.required(side), *kind, "{kinds} {side:?}");
            }
        }
    }

    fn total(set: TileSet) -> usize {
        catalogue().copies_in(set).count()
    }

    fn count_where(set: TileSet, predicate: impl Fn(&TileDef) -> usize) -> usize {
        catalogue()
            .copies_in(set)
            .map(|id| predicate(id.def()))
            .sum()
    }

    #[test]
    fn base_game_has_72_tiles_10_pennants_6_monasteries_8_gardens() {
        assert_eq!(total(TileSet::Base), 72);
        assert_eq!(count_where(TileSet::Base, |d| d.pennants() as usize), 10);
        assert_eq!(
            count_where(TileSet::Base, |d| d.has_monastery() as usize),
            6
        );
        assert_eq!(count_where(TileSet::Base, |d| d.has_garden() as usize), 8);
    }

    #[test]
    fn expansion_totals_match_the_catalogue_footer() {
        assert_eq!(total(TileSet::River), 12);
        assert_eq!(count_where(TileSet::River, |d| d.has_garden() as usize), 1);
        assert_eq!(total(TileSet::InnsAndCathedrals), 18);
        let inns = |d: &TileDef| d.segments.iter().filter(|s| s.inn).count();
        let cathedrals = |d: &TileDef| d.segments.iter().filter(|s| s.cathedral).count();
        assert_eq!(count_where(TileSet::InnsAndCathedrals, inns), 6);
        assert_eq!(count_where(TileSet::InnsAndCathedrals, cathedrals), 2);
        assert_eq!(
            count_where(TileSet::InnsAndCathedrals, |d| d.pennants() as usize),
            3
        );
        assert_eq!(
            count_where(TileSet::InnsAndCathedrals, |d| d.has_garden() as usize),
            2
        );
        assert_eq!(total(TileSet::Festival), 10);
        assert_eq!(count_where(TileSet::Festival, |d| d.festival as usize), 10);
    }

    #[test]
    fn segments_are_indexed_by_side_and_half_side_under_rotation() {
        let d = TileId::from_name("D").unwrap().def();
        assert_eq!(d.segment_on_side(Side::North, Rotation::R0), Some(0));
        // At 90 degrees the printed north (the city) faces east.
        assert_eq!(d.segment_on_side(Side::East, Rotation::R90), Some(0));
        assert_eq!(d.edge(Side::East, Rotation::R90), EdgeKind::City);
        // f1 = En.Wn; at 180 the printed En faces Ws.
        let ws = HalfSide::from_name("Ws").unwrap();
        assert_eq!(d.field_on_half(ws, Rotation::R180), Some(2));
        assert_eq!(d.segments[2].borders, vec![0]);
    }

    #[test]
    fn spots_round_trip_and_reject_garbage() {
        for text in ["c1", "r3", "f4", "m", "g", "w1"] {
            assert_eq!(text.parse::<Spot>().unwrap().to_string(), text);
        }
        for text in ["", "c", "c0", "x1", "c01", "m1", "c1x", "c300"] {
            assert!(text.parse::<Spot>().is_err(), "{text}");
        }
    }

    #[test]
    fn a_malformed_catalogue_line_is_an_error_not_a_panic() {
        let bad = "## Base game\n```\nA 2 FFRX r1=S\n```\n";
        assert!(parse_catalogue(bad).is_err());
        let uncovered = "## Base game\n```\nA 2 FFRF f1=Nw.Ne.En.Es.Se.Sw.Ws.Wn\n```\n";
        assert!(parse_catalogue(uncovered).is_err());
    }
}
