// Tiles drawn as SVG from the catalogue of `GET /api/tiles` (edges and segments, at
// rotation 0). Each tile type becomes one <symbol> in a shared <defs>; a board tile is a
// <use> of it, rotated, so a redraw of the board creates one element per tile.

import { s } from "./dom.js";

const SIDES = ["N", "E", "S", "W"];
const SIDE_POINT = { N: [50, 0], E: [100, 50], S: [50, 100], W: [0, 50] };
const HALF_POINT = {
  Nw: [25, 10], Ne: [75, 10], En: [90, 25], Es: [90, 75],
  Se: [75, 90], Sw: [25, 90], Ws: [10, 75], Wn: [10, 25],
};

// City shapes for canonical side sets at rotation 0; other sets are these rotated.
const CITY_SHAPES = [
  [["N"], "M0 0H100L84 16Q50 36 16 16Z"],
  [["N", "E"], "M0 0H100V100L84 84Q40 56 16 16Z"],
  [["N", "S"], "M0 0H100L84 16Q70 50 84 84L100 100H0L16 84Q30 50 16 16Z"],
  [["N", "E", "S"], "M0 0H100V100H0L16 84Q38 50 16 16Z"],
  [["N", "E", "S", "W"], "M0 0H100V100H0Z"],
];

let catalogue = null;

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

/** The canonical shape and the quarter turns that map it onto `sides`. */
function cityShape(sides) {
  const wanted = [...sides].sort().join();
  for (const [canonical, path] of CITY_SHAPES) {
    for (let quarters = 0; quarters < 4; quarters++) {
      if (canonical.map((side) => rotateSide(side, quarters)).sort().join() === wanted) return [path, quarters * 90];
    }
  }
  return [CITY_SHAPES[4][1], 0];
}

/** A point on the quadratic from side `a` through the centre to side `b`, at t = 0.5. */
function throughCentre(a, b) {
  const [ax, ay] = SIDE_POINT[a];
  const [bx, by] = SIDE_POINT[b];
  return [(ax + bx) / 4 + 25, (ay + by) / 4 + 25];
}

function linePath(sides) {
  const [ax, ay] = SIDE_POINT[sides[0]];
  if (sides.length === 1) return `M${ax} ${ay}L${ax + (50 - ax) * 0.6} ${ay + (50 - ay) * 0.6}`;
  const [bx, by] = SIDE_POINT[sides[1]];
  return `M${ax} ${ay}Q50 50 ${bx} ${by}`;
}

/** Where a figure on each spot of `tile` stands, at rotation 0: {spot: [x, y]}. */
export function spotPoints(tile) {
  if (tile.points) return tile.points;
  const points = {};
  for (const segment of tile.segments) {
    if (segment.kind === "field") continue;
    const { sides } = segment;
    if (segment.kind === "monastery" || segment.kind === "garden" || sides.length === 0) {
      points[segment.spot] = segment.kind === "garden" && tile.segments.some((x) => x.kind === "monastery") ? [70, 70] : [50, 50];
    } else if (segment.kind === "city") {
      const mean = sides.reduce(([x, y], side) => [x + SIDE_POINT[side][0], y + SIDE_POINT[side][1]], [0, 0]);
      const [mx, my] = [mean[0] / sides.length, mean[1] / sides.length];
      points[segment.spot] = sides.length >= 3 ? [50 + (50 - mx) * -0.2, 50 + (50 - my) * -0.2] : [50 + (mx - 50) * 0.6, 50 + (my - 50) * 0.6];
    } else if (sides.length === 2) {
      points[segment.spot] = throughCentre(sides[0], sides[1]);
    } else {
      const [x, y] = SIDE_POINT[sides[0]];
      points[segment.spot] = [x + (50 - x) * 0.45, y + (50 - y) * 0.45];
    }
  }
  for (const segment of tile.segments.filter((x) => x.kind === "field")) {
    points[segment.spot] = fieldPoint(segment, Object.values(points));
  }
  tile.points = points;
  return points;
}

/** The half-side of a field farthest from every spot already placed, pulled inwards. */
function fieldPoint(segment, taken) {
  if (segment.halves.length === 0) return [30, 70];
  let best = null;
  let bestDistance = -1;
  for (const half of segment.halves) {
    const [hx, hy] = HALF_POINT[half];
    const point = [hx + (50 - hx) * 0.15, hy + (50 - hy) * 0.15];
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

function cityElements(segment) {
  const [path, rotation] = cityShape(segment.sides);
  const parts = [s("path", { d: path, class: segment.cathedral ? "city cathedral" : "city", transform: rotation ? `rotate(${rotation} 50 50)` : null })];
  if (segment.pennants) {
    const mean = segment.sides.reduce(([x, y], side) => [x + SIDE_POINT[side][0], y + SIDE_POINT[side][1]], [0, 0]);
    const [mx, my] = [mean[0] / segment.sides.length, mean[1] / segment.sides.length];
    const [px, py] = segment.sides.length === 4 ? [30, 30] : [50 + (mx - 50) * 0.75 + 10, 50 + (my - 50) * 0.75 + 4];
    parts.push(s("path", { d: `M${px - 6} ${py - 6}h12v6l-6 6l-6 -6z`, class: "pennant" }));
  }
  if (segment.cathedral) parts.push(s("path", { d: "M44 40h12v20h-12zM48 32h4v8h-4z", class: "cathedral-mark" }));
  return parts;
}

function lineElements(segment, kind) {
  const d = linePath(segment.sides);
  const parts = [s("path", { d, class: kind + "-edge" }), s("path", { d, class: kind })];
  if (kind === "road" && segment.sides.length === 1) {
    const [x, y] = SIDE_POINT[segment.sides[0]];
    parts.push(s("circle", { cx: x + (50 - x) * 0.6, cy: y + (50 - y) * 0.6, r: 4, class: "road-end" }));
  }
  if (segment.inn) {
    const [x, y] = segment.sides.length === 2 ? throughCentre(segment.sides[0], segment.sides[1]) : SIDE_POINT[segment.sides[0]];
    parts.push(s("rect", { x: x - 5 + 8, y: y - 5 - 8, width: 10, height: 8, class: "inn" }));
  }
  return parts;
}

/** The drawing of one tile type at rotation 0, in a 100 by 100 box. */
export function tileArt(tile) {
  const parts = [s("rect", { width: 100, height: 100, class: "field" })];
  const order = { river: 0, road: 1, city: 2, monastery: 3, garden: 3 };
  const segments = tile.segments.filter((x) => x.kind !== "field").sort((a, b) => order[a.kind] - order[b.kind]);
  for (const segment of segments) {
    if (segment.kind === "city") parts.push(...cityElements(segment));
    else if (segment.kind === "road" || segment.kind === "river") parts.push(...lineElements(segment, segment.kind));
    else if (segment.kind === "monastery") parts.push(s("path", { d: "M36 64V42l14-12 14 12v22zM46 64v-10h8v10z", class: "monastery" }));
    else if (segment.kind === "garden") {
      const [x, y] = spotPoints(tile)[segment.spot];
      parts.push(s("circle", { cx: x, cy: y, r: 9, class: "garden" }), s("circle", { cx: x, cy: y, r: 3, class: "garden-flower" }));
    }
  }
  if (tile.festival) parts.push(s("path", { d: "M84 6l3 7h7l-6 4 2 7-6-4-6 4 2-7-6-4h7z", class: "festival" }));
  parts.push(s("rect", { width: 100, height: 100, class: "tile-border" }));
  return parts;
}

/** A <defs> holding one <symbol id="tile-ID"> per tile type of the catalogue. */
export function tileDefs(tiles) {
  const defs = s("defs", {});
  for (const tile of tiles.values()) {
    defs.append(s("symbol", { id: "tile-" + tile.id, viewBox: "0 0 100 100", width: 100, height: 100 }, tileArt(tile)));
  }
  return defs;
}

/** A placed tile: a <use> of its symbol at cell (x, y), turned by `rotation`. */
export function tileUse(id, x, y, rotation, extra = {}) {
  const transform = `translate(${x * 100} ${y * 100})` + (rotation ? ` rotate(${rotation} 50 50)` : "");
  return s("use", { href: "#tile-" + id, width: 100, height: 100, transform, class: "tile", ...extra });
}

/** A stand-alone SVG of one tile, for the drawn-tile preview. */
export function tileIcon(tiles, id, rotation = 0, label = "") {
  const tile = tiles.get(id);
  const art = tile ? tileArt(tile) : [s("rect", { width: 100, height: 100, class: "field" })];
  return s("svg", { viewBox: "0 0 100 100", class: "tile-icon", role: "img", "aria-label": label || `tile ${id}, rotation ${rotation}` },
    s("g", { transform: rotation ? `rotate(${rotation} 50 50)` : null }, art));
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
