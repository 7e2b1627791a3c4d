// What a player reads: events, tiles, spots and figures in plain words. Features are
// named (city, road, field, monastery, garden), figures by the role they take on a
// feature; no tile letters or coordinates, which mean nothing on a board without them.

import { spotKind } from "./tiles.js";

/** "1 point", "2 points". */
export function count(number, one, many = one + "s") {
  return `${number} ${number === 1 ? one : many}`;
}

/** "ann", "ann and bob", "ann, bob and cy". */
export function names(list) {
  return list.length <= 1 ? list.join("") : list.slice(0, -1).join(", ") + " and " + list[list.length - 1];
}

const FEATURE_ORDER = ["city", "road", "monastery", "garden", "river"];

/**
 * "a city tile", "a tile with a city and a road". Gardens count only in games with the
 * Abbot expansion (`rules`); elsewhere a garden is field.
 */
export function tileWords(tile, rules = null) {
  if (!tile) return "a tile";
  const gardens = !rules || (rules.expansions || []).includes("abbot");
  const kinds = FEATURE_ORDER.filter((kind) => (gardens || kind !== "garden") && tile.segments.some((segment) => segment.kind === kind));
  const extras = [
    tile.segments.some((segment) => segment.pennants) ? "a shield" : null,
    tile.segments.some((segment) => segment.inn) ? "an inn" : null,
    tile.segments.some((segment) => segment.cathedral) ? "a cathedral" : null,
    tile.festival ? "a festival mark" : null,
  ].filter(Boolean);
  const main = kinds.length === 0 ? "a field tile" : kinds.length === 1 ? `a ${kinds[0]} tile` : `a tile with ${names(kinds.map((kind) => "a " + kind))}`;
  return extras.length ? `${main} (${names(extras)})` : main;
}

const SIDES = [[1, 0, "to the right of"], [-1, 0, "to the left of"], [0, 1, "below"], [0, -1, "above"]];

/**
 * Where a tile went, said by its neighbours: "next to the start tile" (the landmark
 * everyone knows), else beside the most recently placed neighbour, the one a player
 * remembers: "below a city tile". `board` lists the tiles placed before it,
 * `[x, y, id]`, the start tile first.
 */
export function besideWords(board, x, y, tiles, rules = null) {
  const sideOf = ([nx, ny]) => SIDES.find(([dx, dy]) => nx + dx === x && ny + dy === y);
  if (board.length && sideOf(board[0])) return "next to the start tile";
  const neighbour = board.findLast((cell) => sideOf(cell));
  return neighbour ? `${sideOf(neighbour)[2]} ${tileWords(tiles.get(neighbour[2]), rules)}` : "";
}

const ROLES = { city: "knight", road: "thief", field: "farmer", monastery: "monk", garden: "gardener" };

/** What a figure is called where it stands: "a knight", "a big knight", "the abbot". */
export function figureWords(figure, kind) {
  if (figure === "abbot") return "the abbot";
  const role = ROLES[kind] || figure;
  return figure === "big" ? `a big ${role}` : `a ${role}`;
}

const PLACE = { city: "in the city", road: "on the road", field: "in the field", monastery: "in the monastery", garden: "in the garden" };

/** "in the city", "on the road". */
export function placeWords(kind) {
  return PLACE[kind] || "on the tile";
}

/** "a big knight in the city": what the figure step offers. */
export function spotWords(tile, spot, figure) {
  const kind = spotKind(tile, spot);
  return `${figureWords(figure, kind)} ${placeWords(kind)}`;
}

/**
 * One event in words, or null for those not worth a line. `name(seat)` names a seat,
 * `tiles` is the catalogue, `kindAt(pos, spot)` the kind of feature a spot on the board is.
 */
export function describe(event, { name, tiles, kindAt, rules }) {
  const where = (figure) => kindAt(figure.pos, figure.spot);
  switch (event.type) {
    case "seat_taken": return `${event.name} took seat ${event.seat + 1}${event.bot ? ` (${event.bot} bot)` : ""}`;
    case "seat_freed": return `Seat ${event.seat + 1} is free again`;
    case "game_started": return "The game started";
    case "lobby_cancelled": return `The lobby was cancelled (${event.reason === "expired" ? "nobody came" : "by its creator"})`;
    case "game_aborted": return `${name(event.seat)} aborted the game`;
    case "seat_resigned": return `${name(event.seat)} resigned; a bot plays on`;
    case "seat_abandoned": return `${name(event.seat)} timed out 3 times; a bot plays until they return`;
    case "seat_reclaimed": return `${name(event.seat)} is back`;
    case "game_abandoned": return "No person is left playing: the game ended as it stood";
    case "turn_timed_out": return `${name(event.seat)}'s time ran out; a bot finishes the turn`;
    case "tile_placed": return `${name(event.player)} placed ${tileWords(tiles.get(event.tile), rules)}`;
    case "figure_placed": return `${name(event.figure.player)} put ${figureWords(event.figure.figure, where(event.figure))} ${placeWords(where(event.figure))}`;
    case "passed": return `${name(event.player)} placed no figure`;
    case "abbot_recalled": return `${name(event.figure.player)} took the abbot back: ${count(event.points, "point")}`;
    case "figure_taken_back": return `${name(event.figure.player)} took back ${figureWords(event.figure.figure, where(event.figure))} (festival)`;
    case "feature_scored": return scoredWords(event, name);
    case "tile_discarded": return `${tileWords(tiles.get(event.tile), rules)} fits nowhere and was put aside`.replace(/^a/, "A");
    case "game_over": return `Game over: ${names(event.winners.map(name))} ${event.winners.length > 1 ? "win" : "wins"}`;
    case "ratings_changed": return `Ratings: ${event.changes.map((change) => `${name(change.seat)} ${ratingShift(change)}`).join(", ")}`;
    default: return null;
  }
}

/** "+1.4": how a seat's rating (mu - 3 sigma, as the leaderboards order) moved. */
function ratingShift(change) {
  const rating = (skill) => skill.mu - 3 * skill.sigma;
  const shift = rating(change.after) - rating(change.before);
  return `${shift >= 0 ? "+" : "−"}${Math.abs(shift).toFixed(1)}`;
}

const FEATURE_NAME = { city: "City", road: "Road", monastery: "Monastery", garden: "Garden", field: "Farm" };

/** "City completed (4 tiles): 8 points to ann", "Farm at the end (2 completed cities): ...". */
export function scoredWords(event, name) {
  const what = (FEATURE_NAME[event.kind] || event.kind) + (event.inn ? " with an inn" : event.cathedral ? " with a cathedral" : "");
  const how = event.kind === "field" ? "at the end" : event.completed ? "completed" : "unfinished at the end";
  const size = event.kind === "field" ? count(event.completed_cities ?? 0, "completed city", "completed cities") : count(event.tiles.length, "tile");
  if (!event.scorers.length) return `${what} ${how} (${size}): nobody scores`;
  return `${what} ${how} (${size}): ${count(event.points, "point")} to ${names(event.scorers.map(name))}`;
}

/** The rules of a lobby in a line: "river, abbot; no farmers." */
export function rulesText(rules) {
  const parts = [rules.expansions?.length ? rules.expansions.join(", ").replaceAll("_", " ") : "base game"];
  if (rules.farmers === false) parts.push("no farmers");
  if (rules.farmer_city_points && rules.farmer_city_points !== 3) parts.push(`${rules.farmer_city_points} points per city for farmers`);
  if (rules.tile_limit) parts.push(`${rules.tile_limit} tiles`);
  return parts.join("; ") + ".";
}

/** "4:05", "1:02:03": a duration in milliseconds, rounded up to the second. */
export function clockText(ms) {
  const seconds = Math.max(0, Math.ceil(ms / 1000));
  const [h, m, s] = [Math.floor(seconds / 3600), Math.floor(seconds / 60) % 60, seconds % 60];
  const pad = (n) => String(n).padStart(2, "0");
  return h ? `${h}:${pad(m)}:${pad(s)}` : `${m}:${pad(s)}`;
}
