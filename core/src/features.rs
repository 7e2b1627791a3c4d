//! Incremental feature tracking: a union-find over segments.
//!
//! Every segment of every placed tile is a node. Placing a tile joins its nodes with the
//! nodes across each shared side (roads and cities by side, fields by half-side), so a
//! feature is a set of the union-find and its statistics live at the root: how many open
//! edges it has left (complete at zero), how many figures stand on it, its pennants, inns
//! and cathedrals. Members are also chained in a circular list so that scoring can visit
//! a feature's segments without scanning the board. Nothing here ever rescans the board.

use crate::figures::Figure;
use crate::tiles::{SegmentKind, TileDef};

pub(crate) type NodeId = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    /// Index of the tile in placement order.
    pub tile: u32,
    /// Index of the segment in the tile's definition.
    pub segment: u8,
    pub kind: SegmentKind,
    pub figure: Option<Figure>,
}

/// What a feature adds up to. Only meaningful at a root.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct FeatureStats {
    pub size: u32,
    /// Sides of road or city segments that no neighbour closes yet.
    pub open_edges: u32,
    /// At most every figure of every supply, so 16 bits hold it; they keep an entry of
    /// the graph at 32 bytes.
    pub figures: u16,
    pub pennants: u32,
    pub inn: bool,
    pub cathedral: bool,
}

impl FeatureStats {
    fn merge(&mut self, other: FeatureStats) {
        self.size += other.size;
        self.open_edges += other.open_edges;
        self.figures += other.figures;
        self.pennants += other.pennants;
        self.inn |= other.inn;
        self.cathedral |= other.cathedral;
    }
}

/// Everything the graph keeps about one node, in one place: a placed segment adds one
/// entry with one push, where four vectors took four pushes (a third of adding a tile).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    parent: NodeId,
    /// The next member of the node's feature, in a circular list.
    next: NodeId,
    node: Node,
    stats: FeatureStats,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct Features {
    entries: Vec<Entry>,
}

impl Features {
    /// An empty graph with room for `nodes` nodes, so that a game adds its tiles without
    /// growing the vectors again and again (that growth was a tenth of a whole game).
    pub fn with_capacity(nodes: usize) -> Features {
        Features {
            entries: Vec::with_capacity(nodes),
        }
    }

    /// Adds one node per segment of a newly placed tile and returns the first node.
    pub fn add_tile(&mut self, tile: u32, def: &TileDef) -> NodeId {
        let base = self.entries.len() as NodeId;
        for (index, segment) in def.segments.iter().enumerate() {
            let id = base + index as NodeId;
            let open_edges = match segment.kind() {
                SegmentKind::Road | SegmentKind::City => segment.sides.count_ones(),
                _ => 0,
            };
            self.entries.push(Entry {
                parent: id,
                next: id,
                node: Node {
                    tile,
                    segment: index as u8,
                    kind: segment.kind(),
                    figure: None,
                },
                stats: FeatureStats {
                    size: 1,
                    open_edges,
                    figures: 0,
                    pennants: segment.pennants as u32,
                    inn: segment.inn,
                    cathedral: segment.cathedral,
                },
            });
        }
        base
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.entries[id as usize].node
    }

    /// The root of `id`'s feature. Union by size keeps trees shallow (depth at most
    /// log2 of the node count), so this does not compress paths and needs only `&self`.
    pub fn find(&self, mut id: NodeId) -> NodeId {
        while self.entries[id as usize].parent != id {
            id = self.entries[id as usize].parent;
        }
        id
    }

    pub fn stats(&self, id: NodeId) -> FeatureStats {
        self.entries[self.find(id) as usize].stats
    }

    /// Joins the features of `a` and `b` across one shared side or half-side.
    pub fn connect(&mut self, a: NodeId, b: NodeId, closes_edges: bool) {
        let (mut ra, mut rb) = (self.find(a), self.find(b));
        if ra != rb {
            if self.entries[ra as usize].stats.size < self.entries[rb as usize].stats.size {
                std::mem::swap(&mut ra, &mut rb);
            }
            let absorbed = self.entries[rb as usize];
            self.entries[rb as usize].parent = ra;
            // Splicing two circular lists is a swap of their successors.
            self.entries[rb as usize].next = self.entries[ra as usize].next;
            let kept = &mut self.entries[ra as usize];
            kept.next = absorbed.next;
            kept.stats.merge(absorbed.stats);
        }
        if closes_edges {
            // Both touching sides stop being open, also when they close a loop.
            self.entries[ra as usize].stats.open_edges -= 2;
        }
    }

    pub fn set_figure(&mut self, id: NodeId, figure: Option<Figure>) {
        let before = self.entries[id as usize].node.figure;
        self.entries[id as usize].node.figure = figure;
        let root = self.find(id) as usize;
        match (before.is_some(), figure.is_some()) {
            (false, true) => self.entries[root].stats.figures += 1,
            (true, false) => self.entries[root].stats.figures -= 1,
            _ => {}
        }
    }

    /// Every node of the feature that `id` belongs to, `id` first.
    pub fn members(&self, id: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        let mut current = Some(id);
        std::iter::from_fn(move || {
            let this = current?;
            let following = self.entries[this as usize].next;
            current = (following != id).then_some(following);
            Some(this)
        })
    }

    /// Every root, in node order, with its node.
    pub fn roots(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.entries.len() as NodeId).filter(|&id| self.entries[id as usize].parent == id)
    }
}
