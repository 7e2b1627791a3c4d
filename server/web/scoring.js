// The end of a game explained: a table of each player's points by category, from the
// server's scoring breakdown (every feature scored during the game and at its end).

import { h } from "./dom.js";

const CATEGORIES = [
  ["city", "Cities"],
  ["road", "Roads"],
  ["monastery", "Monasteries"],
  ["garden", "Gardens"],
  ["field", "Fields"],
  ["inn_or_cathedral", "Inns & cathedrals"],
];

/** The column a scored feature counts in: roads with an inn and cities with a cathedral apart. */
function categoryOf(feature) {
  return feature.inn || feature.cathedral ? "inn_or_cathedral" : feature.kind;
}

/**
 * Points per seat and category. What the breakdown does not list (the abbot's points
 * when recalled) is the difference to the final score, shown as "Abbot recalled".
 */
export function pointsByCategory(breakdown, seats, finalScores) {
  const table = seats.map(() => Object.fromEntries(CATEGORIES.map(([kind]) => [kind, 0])));
  for (const feature of breakdown || []) {
    const category = categoryOf(feature);
    for (const seat of feature.scorers) {
      if (table[seat] && category in table[seat]) table[seat][category] += feature.points;
    }
  }
  table.forEach((row, seat) => {
    const listed = Object.values(row).reduce((sum, points) => sum + points, 0);
    row.other = (finalScores[seat] ?? listed) - listed;
    row.total = finalScores[seat] ?? listed;
  });
  return table;
}

/** The final scoring table: a row per player, a column per category, winners marked. */
export function scoreTable({ breakdown, seats, finalScores, winners, caption }) {
  const table = pointsByCategory(breakdown, seats, finalScores);
  const columns = CATEGORIES.filter(([kind]) => table.some((row) => row[kind]));
  if (table.some((row) => row.other)) columns.push(["other", "Abbot recalled"]);
  return h("table", { class: "score-table" },
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Player"), columns.map(([, label]) => h("th", { scope: "col" }, label)), h("th", { scope: "col" }, "Total"))),
    h("tbody", {}, seats.map((seat, index) => h("tr", { class: winners.includes(index) ? "winner" : null },
      h("th", { scope: "row" }, h("span", { class: "swatch", "data-seat": index, "aria-hidden": "true" }), " ", seat, winners.includes(index) ? " (winner)" : ""),
      columns.map(([kind]) => h("td", {}, String(table[index][kind]))),
      h("td", { class: "total" }, String(table[index].total))))));
}
