// Tiles drawn as SVG from the catalogue of `GET /api/tiles` (edges and segments, at
// rotation 0). The ground of each tile type (fields, roads, rivers, cities) is one
// <symbol id="tile-ID"> in a shared <defs>, turned with the tile. What stands on it
// (a monastery, pennants, an inn, a cathedral, a garden, the festival mark) must stay
// upright, so a tile type with such marks gets one more symbol per rotation used,
// "tile-ID-R": the turned ground plus the marks at their turned points. Either way a
// board tile is a single <use>, so a redraw creates one element per tile.

import { s } from "./dom.js";

const SIDES = ["N", "E", "S", "W"];
const SIDE_POINT = { N: [50, 0], E: [100, 50], S: [50, 100], W: [0, 50] };
const HALF_POINT = {
  Nw: [25, 10], Ne: [75, 10], En: [90, 25], Es: [90, 75],
  Se: [75, 90], Sw: [25, 90], Ws: [10, 75], Wn: [10, 25],
};

// City shapes for canonical side sets at rotation 0, with their walls (the border
// facing the fields); other sets are these rotated. The second shapes are slimmer,
// for a tile with more than one city (for N, only beside a larger city), so that the
// field between them shows.
const CITY_SHAPES = [
  [["N"], "M0 0L100 0L84 16Q50 36 16 16Z", "M100 0L84 16Q50 36 16 16L0 0", "M0 0L100 0L86 12Q50 26 14 12Z", "M100 0L86 12Q50 26 14 12L0 0"],
  [["N", "E"], "M0 0L100 0L100 100L84 84Q40 56 16 16Z", "M100 100L84 84Q40 56 16 16L0 0", "M0 0L100 0L100 100L84 84Q70 30 16 16Z", "M100 100L84 84Q70 30 16 16L0 0"],
  [["N", "S"], "M0 0L100 0L84 16Q70 50 84 84L100 100L0 100L16 84Q30 50 16 16Z", "M100 0L84 16Q70 50 84 84L100 100M0 100L16 84Q30 50 16 16L0 0",
    "M0 0L100 0L84 16Q58 50 84 84L100 100L0 100L16 84Q42 50 16 16Z", "M100 0L84 16Q58 50 84 84L100 100M0 100L16 84Q42 50 16 16L0 0"],
  [["N", "E", "S"], "M0 0L100 0L100 100L0 100L16 84Q38 50 16 16Z", "M0 100L16 84Q38 50 16 16L0 0"],
  [["N", "E", "S", "W"], "M0 0L100 0L100 100L0 100Z", ""],
];

// Upright marks, drawn about (0, 0) in tile units: [class, path] pairs.
const MARKS = {
  monastery: [
    ["chapel-wall", "M-13 14V-2l3-4h8v-7l4-5 4 5V-6h4l3 4v16z"],
    ["chapel-roof", "M-15-1l5-8H2v-6l4-5 4 5v6h1l5 8z"],
    ["chapel-door", "M-2 14V7a2 2 0 0 1 4 0v7zM5 2h3v4H5zM-10 2h3v4h-3zM5.2-27h1.6v8H5.2zM3.5-25h5v1.5h-5z"],
  ],
  cathedral: [
    ["chapel-wall", "M-17 16V-6h-1l4-9 4 9v-3H10v3l4-9 4 9h-1v22z"],
    ["cathedral-roof", "M-18-6l4-12 4 12zM10-6l4-12 4 12zM-10-3l10-9 10 9z"],
    ["chapel-door", "M-4 16V6a4 4 0 0 1 8 0v10zM-15-2h3v6h-3zM12-2h3v6h-3zM-2-6a2 2 0 0 1 4 0 2 2 0 0 1-4 0"],
  ],
  pennant: [
    ["shield", "M-6-7h12v6q0 6-6 9q-6-3-6-9z"],
    ["shield-charge", "M-6-3h12v3h-12zM-1.5-7h3v15h-3z"],
  ],
  inn: [
    ["inn-wall", "M-8 9V-1h16v10z"],
    ["inn-roof", "M-10 0l4-8h12l4 8z"],
    ["chapel-door", "M-5 9V4h3v5zM2 3h3v3H2z"],
  ],
  garden: [
    ["hedge", "M-11-11h22v22h-22z"],
    ["lawn", "M-7-7h14v14h-14z"],
    ["flowers", "M-4-4h.1M4-4h.1M0 0h.1M-4 4h.1M4 4h.1"],
  ],
  festival: [["festival-mark", "M0-8l2.4 5h5.4l-4.4 3.4 1.7 5.6L0 2.6-5.1 6l1.7-5.6L-7.8-3h5.4z"]],
};

let catalogue = null;
let shared = null;

/** Loads the tile catalogue once; resolves to a Map of tile id to definition. */
export async function loadCatalogue() {
  if (!catalogue) {
    catalogue = fetch("/api/tiles")
      .then((response) => response.json())
      .then((tiles) => new Map(tiles.map((tile) => [tile.id, tile])));
  }
  return catalogue;
}

const rotateSide = (side, quarters) => SIDES[(SIDES.indexOf(side) + quarters) % 4];
const meanOf = (sides) => sides.reduce(([x, y], side) => [x + SIDE_POINT[side][0] / sides.length, y + SIDE_POINT[side][1] / sides.length], [0, 0]);

/** The canonical shape, its wall and the quarter turns that map it onto `sides`. */
function cityShape(sides, slim) {
  const wanted = [...sides].sort().join();
  for (const [canonical, path, wall, slimPath, slimWall] of CITY_SHAPES) {
    for (let quarters = 0; quarters < 4; quarters++) {
      if (canonical.map((side) => rotateSide(side, quarters)).sort().join() === wanted) {
        return slim && slimPath ? [slimPath, slimWall, quarters * 90] : [path, wall, quarters * 90];
      }
    }
  }
  return [CITY_SHAPES[4][1], "", 0];
}

/** A point on the quadratic from side `a` through the centre to side `b`, at t = 0.5. */
function throughCentre(a, b) {
  const [ax, ay] = SIDE_POINT[a];
  const [bx, by] = SIDE_POINT[b];
  return [(ax + bx) / 4 + 25, (ay + by) / 4 + 25];
}

/** The point `share` of the way from side `side` to the centre. */
function inwards(side, share) {
  const [x, y] = SIDE_POINT[side];
  return [x + (50 - x) * share, y + (50 - y) * share];
}

/** How far a road or river ending on this tile reaches towards the centre. */
function endShare(tile, kind) {
  return kind === "river" || tile.segments.some((x) => x.kind === "river") ? 0.6 : 0.82;
}

function linePath(sides, share) {
  const [ax, ay] = SIDE_POINT[sides[0]];
  if (sides.length === 1) return `M${ax} ${ay}L${inwards(sides[0], share).join(" ")}`;
  const [bx, by] = SIDE_POINT[sides[1]];
  return `M${ax} ${ay}Q50 50 ${bx} ${by}`;
}

/** Where a figure on each spot of `tile` stands, at rotation 0: {spot: [x, y]}. */
export function spotPoints(tile) {
  if (tile.points) return tile.points;
  const points = {};
  for (const segment of tile.segments) {
    if (segment.kind === "field" || segment.kind === "garden") continue;
    const { sides } = segment;
    if (segment.kind === "monastery" || sides.length === 0) {
      points[segment.spot] = [50, 50];
    } else if (segment.kind === "city") {
      const [mx, my] = meanOf(sides);
      points[segment.spot] = segment.cathedral ? [50, 76] : sides.length >= 3 ? [50 + (50 - mx) * -0.2, 50 + (50 - my) * -0.2] : [50 + (mx - 50) * 0.6, 50 + (my - 50) * 0.6];
    } else if (sides.length === 2) {
      points[segment.spot] = throughCentre(sides[0], sides[1]);
    } else {
      points[segment.spot] = inwards(sides[0], 0.45);
    }
  }
  const garden = tile.segments.find((x) => x.kind === "garden");
  if (garden) points[garden.spot] = gardenPoint(tile, points);
  // Farmers keep clear of figures and of the inns and pennants drawn on the tile.
  const taken = Object.values(points);
  for (const segment of tile.segments) {
    if (segment.inn) taken.push(innPoint(segment));
    if (segment.pennants) taken.push(pennantPoint(segment, points[segment.spot]));
  }
  for (const segment of tile.segments.filter((x) => x.kind === "field")) {
    points[segment.spot] = fieldPoint(segment, taken);
  }
  tile.points = points;
  return points;
}

/** The place for a garden: of a few field places, the one farthest from every feature. */
function gardenPoint(tile, points) {
  const walled = tile.segments.find((x) => x.kind === "city" && x.sides.length === 3);
  if (walled) return inwards(SIDES.find((side) => !walled.sides.includes(side)), 0.22);
  const near = Object.values(points);
  for (const segment of tile.segments) {
    if (segment.kind === "city") for (const side of segment.sides) near.push(inwards(side, segment.sides.length > 1 ? 0.7 : 0.3));
    if (segment.kind === "road" || segment.kind === "river") {
      for (const side of segment.sides) near.push(inwards(side, 0.3), inwards(side, 0.7));
      if (segment.sides.length === 2) near.push(throughCentre(...segment.sides));
    }
  }
  let best = [50, 50];
  let bestDistance = -1;
  for (const point of [[50, 50], [70, 70], [30, 70], [70, 30], [30, 30], [50, 72], [72, 50], [28, 50], [50, 28]]) {
    const distance = Math.min(1e9, ...near.map(([x, y]) => Math.hypot(x - point[0], y - point[1])));
    if (distance > bestDistance + 4) [best, bestDistance] = [point, distance];
  }
  return best;
}

/**
 * The half-side of a field farthest from every spot already placed, pulled inwards;
 * for a field enclosed on the tile, the farthest of the centre and four points near it.
 */
function fieldPoint(segment, taken) {
  const inner = [[50, 50], [64, 64], [36, 64], [64, 36], [36, 36]];
  let best = null;
  let bestDistance = -1;
  for (const half of segment.halves.length ? segment.halves : inner) {
    const [hx, hy] = HALF_POINT[half] || half;
    const point = segment.halves.length ? [hx + (50 - hx) * 0.15, hy + (50 - hy) * 0.15] : [hx, hy];
    const distance = Math.min(1e9, ...taken.map(([x, y]) => Math.hypot(x - point[0], y - point[1])));
    if (distance > bestDistance) [best, bestDistance] = [point, distance];
  }
  taken.push(best);
  return best;
}

/** Rotates a point of a 100-unit tile clockwise by `rotation` degrees about its centre. */
export function rotatePoint([x, y], rotation) {
  switch (rotation) {
    case 90: return [100 - y, x];
    case 180: return [100 - x, 100 - y];
    case 270: return [y, 100 - x];
    default: return [x, y];
  }
}

/** The kind of the segment `spot` names on `tile` (city, road, field, ...), or null. */
export function spotKind(tile, spot) {
  return tile?.segments.find((segment) => segment.spot === spot)?.kind ?? null;
}

/** Where a city's pennant shield goes: beside its figure's spot, inside the city. */
function pennantPoint(segment, [px, py]) {
  if (segment.sides.length === 4) return [28, 28];
  let [dx, dy] = [px - 50, py - 50];
  if (Math.hypot(dx, dy) < 1) [dx, dy] = [SIDE_POINT[segment.sides[0]][1] - 50, 50 - SIDE_POINT[segment.sides[0]][0]];
  const length = Math.hypot(dx, dy);
  return [px - (dy / length) * 22, py + (dx / length) * 22 - (segment.sides.length === 1 ? 5 : 0)];
}

/** Where an inn stands: beside the middle of its road. */
function innPoint(segment) {
  const [x, y] = segment.sides.length === 2 ? throughCentre(segment.sides[0], segment.sides[1]) : inwards(segment.sides[0], 0.5);
  const [ax, ay] = SIDE_POINT[segment.sides[0]];
  const [dx, dy] = segment.sides.length === 2 ? [SIDE_POINT[segment.sides[1]][0] - ax, SIDE_POINT[segment.sides[1]][1] - ay] : [50 - ax, 50 - ay];
  const length = Math.hypot(dx, dy);
  return [x + (dy / length) * 16, y - (dx / length) * 16];
}

/** The upright marks of a tile at rotation 0: [[kind, [x, y]], ...]. */
function marksOf(tile) {
  if (tile.marks) return tile.marks;
  const points = spotPoints(tile);
  const marks = [];
  for (const segment of tile.segments) {
    const point = points[segment.spot];
    if (segment.kind === "monastery") marks.push(["monastery", [50, 46]]);
    if (segment.kind === "garden") marks.push(["garden", point]);
    if (segment.cathedral) marks.push(["cathedral", [50, 40]]);
    if (segment.pennants) marks.push(["pennant", pennantPoint(segment, point)]);
    if (segment.inn) marks.push(["inn", innPoint(segment)]);
  }
  if (tile.festival) marks.push(["festival", [88, 88]]);
  tile.marks = marks;
  return marks;
}

function markElements(tile, rotation) {
  return marksOf(tile).map(([kind, point]) => {
    const [x, y] = rotatePoint(point, rotation);
    return MARKS[kind].map(([name, d]) => s("path", { d, class: name, transform: `translate(${x} ${y})` }));
  });
}

/** A path of absolute "x y" pairs turned clockwise by `rotation` about the centre. */
const turnPath = (d, rotation) => d.replace(/(-?[\d.]+) (-?[\d.]+)/g, (_, x, y) => rotatePoint([+x, +y], rotation).join(" "));

/** Whether roads end in a hamlet at the centre: not at a monastery, a city or a river. */
function hamlet(tile) {
  const ends = tile.segments.filter((x) => x.kind === "road" && x.sides.length === 1).length;
  return ends > 0 && !tile.segments.some((x) => x.kind === "monastery" || x.kind === "river" || (x.kind === "city" && x.sides.length > 1));
}

/** The ground of one tile type at rotation 0, in a 100 by 100 box: what turns with it. */
export function tileArt(tile) {
  const parts = [s("rect", { width: 100, height: 100, class: "field" })];
  // Each kind is drawn as one path (or two, edge and fill) whatever the number of
  // segments: every element here is cloned for every placed tile.
  for (const kind of ["river", "road"]) {
    const lines = tile.segments.filter((x) => x.kind === kind);
    if (!lines.length) continue;
    const share = endShare(tile, kind);
    const d = lines.map((x) => linePath(x.sides, share)).join("");
    parts.push(s("path", { d, class: kind + "-edge" }), s("path", { d, class: kind }));
    const ends = lines.filter((x) => x.sides.length === 1).map((x) => inwards(x.sides[0], share));
    if (kind === "river" && ends.length) parts.push(s("path", { d: ends.map(([x, y]) => `M${x - 11} ${y}a11 11 0 1 0 22 0a11 11 0 1 0-22 0`).join(""), class: "lake" }));
  }
  if (hamlet(tile)) parts.push(s("path", { d: "M41 41h18v18h-18zM41 41l6 9-6 9M59 41l-6 9 6 9M47 50h6", class: "hamlet" }));
  const cities = tile.segments.filter((x) => x.kind === "city");
  const slimCap = cities.length > 1 && cities.some((x) => x.sides.length > 1);
  const shapes = cities.map((x) => cityShape(x.sides, x.sides.length > 1 ? cities.length > 1 : slimCap));
  if (shapes.length) {
    parts.push(s("path", { d: shapes.map(([path, , rotation]) => turnPath(path, rotation)).join(""), class: "city" }));
    const wall = shapes.map(([, wall, rotation]) => turnPath(wall, rotation)).join("");
    if (wall) parts.push(s("path", { d: wall, class: "wall" }), s("path", { d: wall, class: "battlements" }));
  }
  parts.push(s("rect", { width: 100, height: 100, class: "tile-border" }));
  return parts;
}

/** A <defs> with the paint (grass, roofs) and one <symbol id="tile-ID"> per tile type. */
export function tileDefs(tiles) {
  const defs = s("defs", {},
    s("pattern", { id: "grass", width: 50, height: 50, patternUnits: "userSpaceOnUse" },
      s("rect", { width: 50, height: 50, class: "grass" }),
      s("path", { d: "M8 12l2-4 1 4 2-3M30 6l2-4 1 4 2-3M38 30l2-4 1 4 2-3M14 38l2-4 1 4 2-3M24 24l1-3 1 3", class: "tufts" })),
    s("pattern", { id: "roofs", width: 20, height: 20, patternUnits: "userSpaceOnUse" },
      s("rect", { width: 20, height: 20, class: "roofs" }),
      s("path", { d: "M2 2h8v3H2zM12 10h3v8h-3zM3 12h6v2.5H3z", class: "roof" }),
      s("path", { d: "M2 5h8v3H2zM15 10h3v8h-3zM3 14.5h6v2.5H3z", class: "roof-shade" })));
  for (const tile of tiles.values()) {
    defs.append(s("symbol", { id: "tile-" + tile.id, viewBox: "0 0 100 100", width: 100, height: 100 }, tileArt(tile)));
  }
  shared = { defs, tiles, made: new Set() };
  return defs;
}

/** The symbol of a tile type with marks at `rotation`, made the first time it is used. */
function markedSymbol(tile, rotation) {
  const id = `tile-${tile.id}-${rotation}`;
  if (!shared.made.has(id)) {
    shared.made.add(id);
    const ground = [...shared.defs.querySelector(`[id="tile-${CSS.escape(tile.id)}"]`).children].map((x) => x.cloneNode(true));
    shared.defs.append(s("symbol", { id, viewBox: "0 0 100 100", width: 100, height: 100 },
      rotation ? s("g", { transform: `rotate(${rotation} 50 50)` }, ground) : ground, markElements(tile, rotation)));
  }
  return id;
}

/** A placed tile: a <use> of its symbol at cell (x, y), turned by `rotation`. */
export function tileUse(id, x, y, rotation, extra = {}) {
  const tile = shared?.tiles.get(id);
  if (tile && marksOf(tile).length) {
    const href = "#" + markedSymbol(tile, rotation || 0);
    return s("use", { href, width: 100, height: 100, transform: `translate(${x * 100} ${y * 100})`, class: "tile", ...extra });
  }
  const transform = `translate(${x * 100} ${y * 100})` + (rotation ? ` rotate(${rotation} 50 50)` : "");
  return s("use", { href: "#tile-" + id, width: 100, height: 100, transform, class: "tile", ...extra });
}

/** A stand-alone SVG of one tile, for the drawn-tile preview: marks upright. */
export function tileIcon(tiles, id, rotation = 0, label = "") {
  const tile = tiles.get(id);
  const art = tile ? tileArt(tile) : [s("rect", { width: 100, height: 100, class: "field" })];
  return s("svg", { viewBox: "0 0 100 100", class: "tile-icon", role: "img", "aria-label": label || `tile ${id}, rotation ${rotation}` },
    s("g", { transform: rotation ? `rotate(${rotation} 50 50)` : null }, art), tile ? markElements(tile, rotation) : null);
}

const MEEPLE = "M0-12.5a4.6 4.6 0 0 1 3.2 7.9L11-2.5a2.2 2.2 0 0 1-.6 4.2L5 2l4.5 9a1.3 1.3 0 0 1-1.2 1.5H2.5L0 7l-2.5 5.5h-5.8a1.3 1.3 0 0 1-1.2-1.5L-5 2l-5.4-.3a2.2 2.2 0 0 1-.6-4.2L-3.2-4.6A4.6 4.6 0 0 1 0-12.5z";
const ABBOT = "M0-14Q7-10 6.5-3L10.5 10.5Q11 12.5 9 12.5H-9Q-11 12.5-10.5 10.5L-6.5-3Q-7-10 0-14z";
const ABBOT_FACE = "M-2.6-5.5a2.6 3 0 1 0 5.2 0a2.6 3 0 1 0-5.2 0";

/**
 * A figure of `kind` ("follower", "big", "abbot") in `colour`, standing at (x, y) in
 * board units; `lying` lays it on its side (a farmer). A dark and a white outline keep
 * it readable on any ground at any zoom.
 */
export function figureShape(kind, colour, [x, y], label, { lying = false } = {}) {
  const d = kind === "abbot" ? ABBOT : MEEPLE;
  const scale = kind === "big" ? 1.7 : 1;
  const transform = `translate(${x} ${y})` + (scale !== 1 ? ` scale(${scale})` : "") + (lying ? " rotate(-90)" : "");
  return s("g", { transform, fill: colour, class: `figure ${kind}${lying ? " lying" : ""}` },
    s("title", { text: label }),
    s("path", { d, class: "figure-halo" }),
    s("path", { d, class: "figure-body" }),
    kind === "abbot" ? s("path", { d: ABBOT_FACE, class: "figure-face" }) : null);
}
