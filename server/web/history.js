// Match history: finished matches with filters, and any one of them stepped through turn
// by turn from its game record (docs/spec/notation.md). Tiles and figures come from the
// record's turns; a figure leaves the board, and its feature's points are counted, at
// the turn that completed a feature the server's breakdown lists it on.

import { api } from "./api.js";
import { Board } from "./board.js";
import { h, mount } from "./dom.js";
import { rulesText, tileWords, figureWords, placeWords, besideWords } from "./words.js";
import { tileIcon, spotKind } from "./tiles.js";
import { scoreTable } from "./scoring.js";

export class HistoryView {
  constructor(root, player) {
    this.player = player;
    this.list = h("ul", { class: "listing matches", "aria-label": "Matches" });
    this.more = h("button", { type: "button", hidden: true, onclick: () => this.load(true) }, "More");
    this.form = this.filterForm();
    mount(root, h("section", { class: "history" }, h("h2", {}, "Match history"), this.form, this.list, this.more));
    this.load(false);
  }

  destroy() {}

  filterForm() {
    const select = (name, label, options) => h("label", {}, h("span", {}, label), h("select", { name }, options.map(([value, text]) => h("option", { value }, text))));
    return h("form", { class: "filters", onchange: () => this.load(false), onsubmit: (event) => { event.preventDefault(); this.load(false); } },
      select("players", "Players", [["", "any"], ...[2, 3, 4, 5, 6].map((n) => [n, n])]),
      select("expansions", "Expansion", [["", "any"], ["river", "River"], ["abbot", "Abbot"], ["inns_and_cathedrals", "Inns & Cathedrals"], ["festival", "Festival"]]),
      select("status", "Ended", [["", "any way"], ["finished", "played out"], ["abandoned", "abandoned"]]));
  }

  async load(more) {
    const query = new URLSearchParams();
    for (const [name, value] of new FormData(this.form)) if (value) query.set(name, value);
    query.set("limit", "20");
    if (this.player) query.set("player", this.player);
    if (more && this.cursor) query.set("cursor", this.cursor);
    try {
      const page = await api("GET", "/matches?" + query);
      this.cursor = page.next_cursor;
      this.more.hidden = !page.next_cursor;
      const items = page.items.map((match) => this.entry(match));
      if (more) this.list.append(...items);
      else mount(this.list, items.length ? items : h("li", {}, "No match yet."));
    } catch (error) {
      mount(this.list, h("li", { role: "alert" }, error.message));
    }
  }

  entry(match) {
    const seats = match.seats.map((seat) => `${seat.display_name} ${seat.score}${seat.winner ? " ★" : ""}`).join(", ");
    return h("li", {}, h("a", { href: `#/match/${match.id}` }, match.name), ` · ${localTime(match.finished_at)} · ${seats} · ${match.tiles_placed} tiles · ${rulesText(match.rules)}`);
  }
}

export class MatchView {
  /** `atEnd`: open at the final scores rather than at the start tile. */
  constructor(root, tiles, id, atEnd = false) {
    this.root = root;
    this.tiles = tiles;
    this.id = id;
    this.step = 0;
    this.atEnd = atEnd;
    this.board = new Board(tiles, "Board of the match");
    this.panel = h("aside", { class: "panel", "aria-label": "Match" });
    mount(root, h("section", { class: "game" }, h("div", { class: "board-area" }, this.board.element), this.panel));
    this.keys = (event) => this.onKey(event);
    document.addEventListener("keydown", this.keys);
    this.load();
  }

  destroy() {
    document.removeEventListener("keydown", this.keys);
  }

  async load() {
    try {
      [this.match, this.record] = await Promise.all([api("GET", `/matches/${this.id}`), api("GET", `/matches/${this.id}/record`)]);
      this.completions = completionTurns(this.record, this.match.breakdown);
      if (this.atEnd) this.step = this.record.turns.length;
      this.render();
    } catch (error) {
      mount(this.panel, h("p", { role: "alert" }, error.message));
    }
  }

  onKey(event) {
    if (!this.record || event.target.closest?.("input, select")) return;
    const moves = { ArrowRight: 1, ArrowLeft: -1, Home: -Infinity, End: Infinity };
    if (!(event.key in moves)) return;
    event.preventDefault();
    this.go(this.step + moves[event.key]);
  }

  /** What the turn's player did after placing the tile, in words. */
  actionText(turn) {
    const action = turn.action;
    if (action === "pass") return "placed no figure";
    if (action === "recall_abbot") return "took the abbot back";
    if (action?.place) {
      const kind = spotKind(this.tiles.get(turn.tile), action.spot);
      return `put ${figureWords(action.place, kind)} ${placeWords(kind)}`;
    }
    if (action?.festival_return) return "took a figure back (festival)";
    return "ended the turn";
  }

  go(step) {
    this.step = Math.max(0, Math.min(this.record.turns.length, step));
    this.render();
  }

  /** The board after `this.step` turns: tiles, figures still standing, scores so far. */
  position() {
    const { record, step } = this;
    const board = [[0, 0, (record.rules.expansions || []).includes("river") ? "R01" : "D", 0]];
    const figures = [];
    const scores = Array(record.players).fill(0);
    record.turns.slice(0, step).forEach((turn, index) => {
      board.push([turn.x, turn.y, turn.tile, turn.rotation]);
      const player = index % record.players;
      const action = turn.action;
      if (action?.place) figures.push({ player, figure: action.place, x: turn.x, y: turn.y, spot: action.spot });
      if (action === "recall_abbot") removeWhere(figures, (f) => f.player === player && f.figure === "abbot");
      if (action?.festival_return) removeWhere(figures, (f) => f.x === action.festival_return.x && f.y === action.festival_return.y && f.spot === action.festival_return.spot);
      for (const feature of this.completions.get(index) || []) {
        for (const seat of feature.scorers) scores[seat] += feature.points;
        for (const gone of feature.figures) removeWhere(figures, (f) => f.x === gone.pos.x && f.y === gone.pos.y && f.spot === gone.spot);
      }
    });
    return { board, figures, scores };
  }

  render() {
    const { record, match, step } = this;
    const { board, figures, scores } = this.position();
    const turn = record.turns[step - 1];
    const last = step === record.turns.length;
    const names = match.seats.map((seat) => seat.display_name);
    const mover = (step - 1) % record.players;
    const mark = turn ? { x: turn.x, y: turn.y, player: mover, figure: turn.action?.place ? { x: turn.x, y: turn.y, spot: turn.action.spot } : null } : null;
    this.board.render({ board, figures, last: mark });
    const button = (text, label, target) => h("button", { type: "button", "aria-label": label, onclick: () => this.go(target), disabled: target === step || target < 0 || target > record.turns.length }, text);
    mount(this.panel,
      h("h2", {}, match.name),
      h("p", {}, rulesText(match.rules)),
      h("div", { class: "stepper", role: "group", "aria-label": "Step through the match" },
        button("First", "First turn", 0), button("◀", "Previous turn", step - 1),
        h("span", { class: "step", "aria-live": "polite" }, `Turn ${step} of ${record.turns.length}`),
        button("▶", "Next turn", step + 1), button("Last", "Last turn", record.turns.length)),
      turn ? h("div", { class: "turn" }, tileIcon(this.tiles, turn.tile, turn.rotation, tileWords(this.tiles.get(turn.tile), match.rules)),
        h("p", { class: "last-move-text" }, h("span", { class: "swatch", "data-seat": mover, "aria-hidden": "true" }),
          ` ${names[mover]} placed ${tileWords(this.tiles.get(turn.tile), match.rules)} ${besideWords(board.slice(0, -1), turn.x, turn.y, this.tiles, match.rules)}; ${this.actionText(turn)}.`)) : h("p", {}, "The start tile."),
      h("ol", { class: "players", "aria-label": "Scores" }, match.seats.map((seat) => h("li", { class: "player" },
        h("span", { class: "swatch", "data-seat": seat.seat, "aria-hidden": "true" }),
        h("span", { class: "name" }, seat.display_name + (last && seat.winner ? " ★ winner" : "")),
        h("span", { class: "score" }, last ? `${seat.score}` : `${scores[seat.seat]}`)))),
      last ? scoreTable({ breakdown: match.breakdown, seats: names, finalScores: match.seats.map((seat) => seat.score), winners: match.seats.filter((seat) => seat.winner).map((seat) => seat.seat), caption: "Points by category" }) : null,
      h("p", { class: "hint" }, last ? "Final scores, with the end-of-game scoring." : "Scores of the features completed so far. Arrow keys step."));
  }
}

/** A finish time in the viewer's own time zone, saying which. */
function localTime(iso) {
  // (dateStyle cannot be combined with timeZoneName: the fields are named one by one.)
  return new Date(iso).toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZoneName: "short" });
}

function removeWhere(list, test) {
  const index = list.findIndex(test);
  if (index >= 0) list.splice(index, 1);
}

/**
 * For each turn index, the features completed during the game by that turn's tile: the
 * latest-placed cell of the feature (and of its neighbours, for a monastery or garden,
 * which completes when surrounded).
 */
function completionTurns(record, breakdown) {
  const placedAt = new Map([["0,0", -1]]);
  record.turns.forEach((turn, index) => placedAt.set(turn.x + "," + turn.y, index));
  const byTurn = new Map();
  for (const feature of breakdown || []) {
    if (!feature.completed) continue;
    const cells = [...feature.tiles];
    if (feature.kind === "monastery" || feature.kind === "garden") {
      const { x, y } = feature.tiles[0];
      for (let dx = -1; dx <= 1; dx++) for (let dy = -1; dy <= 1; dy++) cells.push({ x: x + dx, y: y + dy });
    }
    const turn = Math.max(...cells.map(({ x, y }) => placedAt.get(x + "," + y) ?? -1));
    if (!byTurn.has(turn)) byTurn.set(turn, []);
    byTurn.get(turn).push(feature);
  }
  return byTurn;
}

