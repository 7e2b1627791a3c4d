//! Scoring: features completed during the game, and the end-of-game scoring.
//!
//! | Feature               | Completed                  | At the end               |
//! |-----------------------|----------------------------|--------------------------|
//! | Road                  | 1 per tile                 | 1 per tile               |
//! | Road with an inn      | 2 per tile                 | 0                        |
//! | City                  | 2 per tile + 2 per pennant | 1 per tile + 1 per pennant |
//! | City with a cathedral | 3 per tile + 3 per pennant | 0                        |
//! | Monastery / garden    | 9                          | 1 + surrounding tiles    |
//! | Farm                  | -                          | `farmer_city_points` per completed city |
//!
//! Tiles are counted once per feature however many of their segments it holds. The
//! players with the most weight on a feature (a big meeple weighs two) all score in full.

use crate::events::{Event, FeatureScore};
use crate::features::NodeId;
use crate::figures::{PlacedFigure, Seat};
use crate::game::{Game, Phase, leaders};
use crate::geometry::Pos;
use crate::rules::Expansion;
use crate::tiles::SegmentKind;
use std::iter::once;

impl Game {
    /// The scores the players would have if the game ended now: the current scores plus
    /// the end-of-game scoring of every claimed road, city, monastery, garden and farm as
    /// it stands (see the table above). A finished game returns its final scores. Bots use
    /// it to value the figures on the board; the game itself is not changed.
    pub fn scores_if_ended_now(&self) -> Vec<u32> {
        if self.phase() == Phase::Over {
            return self.scores.clone();
        }
        let mut copy = self.clone();
        let mut events = Vec::new();
        copy.score_end_of_game(&mut events);
        copy.scores
    }

    /// Scores every road, city, monastery and garden the tile at `placed` completed, and
    /// sends their figures home.
    pub(crate) fn score_completed_features(&mut self, placed: usize, events: &mut Vec<Event>) {
        let tile = self.board.placed()[placed];
        let mut scored_roots: Vec<NodeId> = Vec::new();
        for (index, segment) in tile.def().segments.iter().enumerate() {
            if !matches!(segment.kind(), SegmentKind::Road | SegmentKind::City) {
                continue;
            }
            let root = self.features.find(tile.node_base + index as u32);
            if self.features.stats(root).open_edges == 0 && !scored_roots.contains(&root) {
                scored_roots.push(root);
                let figure_nodes = self.figure_nodes(root);
                let score = self.score_feature(root, true);
                for node in figure_nodes {
                    self.return_home(node);
                }
                events.push(Event::FeatureScored(score));
            }
        }
        let mut surrounded = self.surrounded_centres(tile.pos).peekable();
        if surrounded.peek().is_none() {
            return;
        }
        let surrounded: Vec<(Pos, NodeId)> = surrounded.collect();
        for &(_, node) in &surrounded {
            let score = self.score_centre(node, true);
            if !score.figures.is_empty() {
                self.return_home(node);
            }
            events.push(Event::FeatureScored(score));
        }
        self.open_centres
            .retain(|centre| !surrounded.contains(centre));
    }

    /// The open monasteries and gardens that a tile placed at `placed` surrounds: its
    /// own, then those on the cells around it in the order of [`Pos::surrounding`].
    fn surrounded_centres(&self, placed: Pos) -> impl Iterator<Item = (Pos, NodeId)> + '_ {
        // Where each centre near the tile comes in that order; most tiles have none near.
        let mut by_order = [None; 9];
        for &(pos, node) in &self.open_centres {
            // Wrapping, as the cells around a tile are found by wrapping steps.
            let (dx, dy) = (pos.x.wrapping_sub(placed.x), pos.y.wrapping_sub(placed.y));
            if (-1..=1).contains(&dx) && (-1..=1).contains(&dy) {
                by_order[surrounding_order(dx, dy)] = Some((pos, node));
            }
        }
        by_order
            .into_iter()
            .flatten()
            .filter(|&(pos, _)| self.board.surrounding_tiles(pos) == 8)
    }

    /// Scores what is unfinished, in the order roads, cities, monasteries and gardens,
    /// then farms, and announces the winners.
    pub(crate) fn score_end_of_game(&mut self, events: &mut Vec<Event>) {
        // One pass over the nodes finds every claimed feature; the passes per kind below
        // then only go through those few.
        let claimed: Vec<NodeId> = self
            .features
            .roots()
            .filter(|&root| self.features.stats(root).figures > 0)
            .collect();
        let mut order = vec![SegmentKind::Road, SegmentKind::City];
        order.extend([SegmentKind::Monastery, SegmentKind::Garden]);
        if self.rules.farmers {
            order.push(SegmentKind::Field);
        }
        for kind in order {
            for &root in &claimed {
                if self.features.node(root).kind != kind {
                    continue;
                }
                let score = match kind {
                    SegmentKind::Monastery | SegmentKind::Garden => self.score_centre(root, false),
                    _ => self.score_feature(root, false),
                };
                events.push(Event::FeatureScored(score));
            }
        }
        events.push(Event::GameOver {
            final_scores: self.scores.clone(),
            winners: leaders(&self.scores),
        });
    }

    /// Scores the road, city or field whose root is `root` and credits its majority.
    fn score_feature(&mut self, root: NodeId, completed: bool) -> FeatureScore {
        let kind = self.features.node(root).kind;
        let stats = self.features.stats(root);
        let tiles = self.feature_tiles(root);
        let count = tiles.len() as u32;
        let mut completed_cities = None;
        let points = match kind {
            SegmentKind::Road => count * road_value(stats.inn, completed),
            SegmentKind::City => (count + stats.pennants) * city_value(stats.cathedral, completed),
            SegmentKind::Field => {
                let cities = self.completed_cities_bordering(root);
                completed_cities = Some(cities);
                // The farm value comes from the rules, which users write: saturate rather
                // than overflow on an absurd one (see `credit_majority`).
                cities.saturating_mul(self.rules.farmer_city_points)
            }
            _ => 0,
        };
        let figures = self.feature_figures(root);
        let scorers = self.credit_majority(&figures, points);
        FeatureScore {
            kind,
            completed,
            points,
            scorers,
            tiles,
            figures,
            completed_cities,
            inn: kind == SegmentKind::Road && stats.inn,
            cathedral: kind == SegmentKind::City && stats.cathedral,
        }
    }

    /// Scores a monastery or garden: 9 when surrounded, else 1 + its neighbours.
    fn score_centre(&mut self, node: NodeId, completed: bool) -> FeatureScore {
        let pos = self.node_pos(node);
        let points = 1 + self.board.surrounding_tiles(pos);
        let figures: Vec<PlacedFigure> = self.placed_figure(node).into_iter().collect();
        let scorers = self.credit_majority(&figures, points);
        FeatureScore {
            kind: self.features.node(node).kind,
            completed,
            points,
            scorers,
            tiles: once(pos)
                .chain(pos.surrounding())
                .filter(|&p| self.board.index_at(p).is_some())
                .collect(),
            figures,
            completed_cities: None,
            inn: false,
            cathedral: false,
        }
    }

    /// Adds `points` to every player with the most weight among `figures`.
    fn credit_majority(&mut self, figures: &[PlacedFigure], points: u32) -> Vec<Seat> {
        if figures.is_empty() {
            return Vec::new();
        }
        // The weights live on the stack for the usual player counts: a vector allocated
        // per scored feature was a noticeable part of a replay.
        let (mut on_stack, mut on_heap) = ([0u32; 8], Vec::new());
        let weight = zeroed_scratch(&mut on_stack, &mut on_heap, self.scores.len());
        for figure in figures {
            weight[figure.player as usize] += figure.figure.weight();
        }
        let scorers = leaders(weight);
        for &seat in &scorers {
            // Only an absurd `farmer_city_points` can come near the limit; a score that
            // stops at u32::MAX is still the largest, where wrapping would not be.
            let score = &mut self.scores[seat as usize];
            *score = score.saturating_add(points);
        }
        scorers
    }

    fn figure_nodes(&self, root: NodeId) -> Vec<NodeId> {
        let mut nodes = Vec::with_capacity(self.features.stats(root).figures as usize);
        // Many completed features hold no figure: their members need not be walked.
        if nodes.capacity() > 0 {
            let with_figure = |&node: &NodeId| self.features.node(node).figure.is_some();
            nodes.extend(self.features.members(root).filter(with_figure));
        }
        nodes
    }

    /// The cells of a feature, each once, in the order their tiles were placed.
    fn feature_tiles(&self, root: NodeId) -> Vec<Pos> {
        // Each member marks its tile in a set of bits by placement order, which reads
        // back in that order with each tile once. Sorting the members' tiles and
        // dropping repeats did the same at twice the cost, most of scoring a farm.
        let placed = self.board.placed();
        let words = placed.len().div_ceil(u64::BITS as usize);
        let (mut on_stack, mut on_heap) = ([0u64; 4], Vec::new());
        let marks = zeroed_scratch(&mut on_stack, &mut on_heap, words);
        for node in self.features.members(root) {
            let tile = self.features.node(node).tile as usize;
            marks[tile / u64::BITS as usize] |= 1 << (tile % u64::BITS as usize);
        }
        let count = marks.iter().map(|word| word.count_ones() as usize).sum();
        let mut tiles = Vec::with_capacity(count);
        for (word_index, &word) in marks.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let tile = word_index * u64::BITS as usize + bits.trailing_zeros() as usize;
                // Clear the lowest set bit: the tiles come out in placement order.
                bits &= bits - 1;
                tiles.push(placed[tile].pos);
            }
        }
        tiles
    }

    fn feature_figures(&self, root: NodeId) -> Vec<PlacedFigure> {
        let mut figures = Vec::with_capacity(self.features.stats(root).figures as usize);
        if figures.capacity() > 0 {
            figures.extend(
                self.features
                    .members(root)
                    .filter(|&node| self.features.node(node).figure.is_some())
                    .filter_map(|node| self.placed_figure(node)),
            );
            figures.sort();
        }
        figures
    }

    /// How many distinct completed cities the farm `root` borders.
    fn completed_cities_bordering(&self, root: NodeId) -> u32 {
        let mut cities: Vec<NodeId> = Vec::new();
        for node in self.features.members(root) {
            let info = self.features.node(node);
            let tile = self.board.placed()[info.tile as usize];
            for &city in &tile.def().segments[info.segment as usize].borders {
                let city_root = self.features.find(tile.node_base + city as u32);
                // A farm borders a few cities along many of its segments: keeping each
                // once as it comes costs less than sorting the repeats away.
                let completed = self.features.stats(city_root).open_edges == 0;
                if completed && !cities.contains(&city_root) {
                    cities.push(city_root);
                }
            }
        }
        cities.len() as u32
    }

    /// The monastery or garden node of the tile at `index`, if it has one that scores
    /// when surrounded. Gardens only count with the Abbot: without it they are
    /// pictures, and a completed one is no news.
    pub(crate) fn scoring_centre(&self, index: usize) -> Option<NodeId> {
        let tile = self.board.placed()[index];
        let segment = tile.def().centre_segment()?;
        let garden = tile.def().segments[segment].kind() == SegmentKind::Garden;
        if garden && !self.rules.has(Expansion::Abbot) {
            return None;
        }
        Some(tile.node_base + segment as u32)
    }
}

/// Where the cell at `dx`, `dy` from a tile comes among the cells that completing
/// monasteries and gardens are looked for on: the tile's own first, then those of
/// [`Pos::surrounding`], row by row.
fn surrounding_order(dx: i32, dy: i32) -> usize {
    let row_major = ((dy + 1) * 3 + dx + 1) as usize;
    match row_major {
        4 => 0,
        0..4 => row_major + 1,
        _ => row_major,
    }
}

fn road_value(inn: bool, completed: bool) -> u32 {
    match (inn, completed) {
        (true, true) => 2,
        (true, false) => 0,
        (false, _) => 1,
    }
}

fn city_value(cathedral: bool, completed: bool) -> u32 {
    match (cathedral, completed) {
        (true, true) => 3,
        (true, false) => 0,
        (false, true) => 2,
        (false, false) => 1,
    }
}

/// `len` zeroed values: the front of `on_stack` when it is long enough, else `on_heap`
/// grown to `len`. Scoring needs such scratch space per feature, and an allocation per
/// scored feature was a noticeable part of a replay.
fn zeroed_scratch<'a, T: Copy + Default, const N: usize>(
    on_stack: &'a mut [T; N],
    on_heap: &'a mut Vec<T>,
    len: usize,
) -> &'a mut [T] {
    if len <= N {
        &mut on_stack[..len]
    } else {
        on_heap.resize(len, T::default());
        on_heap
    }
}
