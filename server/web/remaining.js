// The tiles still to come, by type: the catalogue's counts for the game's boxes, less
// the tiles on the board, those put aside and the one in hand. As on BGA, a player can
// see what the stack may still hold (not its order, which nobody knows).

import { h, s } from "./dom.js";
import { tileWords } from "./words.js";

/** `[{id, left}]` for every tile type of the game's boxes, in catalogue order. */
export function tilesRemaining(tiles, rules, game) {
  // A tile's box is named as the expansion is (the Abbot's gardens are on base tiles).
  const sets = new Set(["base", ...(rules.expansions || [])]);
  const left = new Map();
  for (const tile of tiles.values()) if (sets.has(tile.set)) left.set(tile.id, tile.count);
  const seen = [...game.board.map((entry) => entry[2]), ...(game.discarded || []).map((entry) => entry.tile ?? entry), game.turn?.phase === "place_tile" ? game.turn.tile : null];
  for (const id of seen) if (left.has(id)) left.set(id, Math.max(0, left.get(id) - 1));
  return [...left].map(([id, count]) => ({ id, left: count }));
}

/** A closed list of the remaining tile types, each drawn small with its count. */
export function remainingList(tiles, rules, game) {
  const rows = tilesRemaining(tiles, rules, game).filter((row) => row.left > 0);
  return h("details", { class: "remaining" },
    h("summary", {}, `Tiles to come: ${game.turn?.tiles_left ?? 0} in the stack`),
    h("ul", { class: "remaining-list" }, rows.map(({ id, left }) => h("li", { title: tileWords(tiles.get(id), rules) },
      s("svg", { viewBox: "0 0 100 100", class: "tile-mini", role: "img", "aria-label": tileWords(tiles.get(id), rules) }, s("use", { href: "#tile-" + id })),
      h("span", {}, "×" + left)))));
}
