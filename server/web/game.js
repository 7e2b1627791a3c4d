// The game view: a lobby's seats and actions before the start, then the board, the
// drawn tile, the legal moves the server sent, scores, figures, clock and the event log.
// It holds no rules: every legal cell, rotation and spot shown comes from `legal_moves`.

import { api, heldSeat, holdSeat, dropSeat, inviteOf, rememberInvite, playerName, rememberName } from "./api.js";
import { Board } from "./board.js";
import { GameConnection } from "./connection.js";
import { h, mount, announce, SEAT_COLOURS, SEAT_COLOUR_NAMES } from "./dom.js";
import { tileIcon } from "./tiles.js";

const LOG_LIMIT = 200;

export class GameView {
  constructor(root, tiles, gameId, invite) {
    this.root = root;
    this.tiles = tiles;
    this.gameId = gameId;
    if (invite) rememberInvite(gameId, invite);
    this.invite = inviteOf(gameId);
    this.log = [];
    this.selected = null;
    this.rotation = 0;
    this.spotIndex = 0;
    this.figureKind = null;
    this.board = new Board(tiles, "Board");
    this.panel = h("aside", { class: "panel", "aria-label": "Game" });
    this.logList = h("ul", { class: "log", "aria-label": "Event log, newest first" });
    mount(root, h("section", { class: "game" }, h("div", { class: "board-area" }, this.board.element), this.panel));
    this.keys = (event) => this.onKey(event);
    document.addEventListener("keydown", this.keys);
    this.ticker = setInterval(() => this.tick(), 500);
    this.connect();
  }

  connect() {
    const seat = heldSeat(this.gameId);
    const listener = {
      change: () => this.render(),
      events: (events, seq) => this.addEvents(events, seq),
      notice: (text) => this.notice(text),
      badToken: () => dropSeat(this.gameId),
    };
    this.connection?.close();
    this.connection = new GameConnection(this.gameId, { token: seat?.token, invite: this.invite, listener });
    // Tests and the curious can drop the socket to watch the client recover.
    window.carcassonne = { connection: this.connection };
  }

  destroy() {
    this.connection.close();
    document.removeEventListener("keydown", this.keys);
    clearInterval(this.ticker);
  }

  notice(text) {
    this.noticeText = text;
    announce(text);
    this.render();
  }

  name(seat) {
    const entry = this.connection.state?.seats.find((s) => s.seat === seat);
    return entry ? entry.name : "seat " + (seat + 1);
  }

  // ---- state to screen ----

  render() {
    const c = this.connection;
    if (!c.state) {
      mount(this.panel, h("p", { class: "connection" }, c.online ? "Loading…" : "Connecting…"), this.noticeLine());
      return;
    }
    const seq = c.seq + (c.legal ? "+" : "");
    if (seq !== this.renderedSeq) {
      this.selected = null;
      this.spotIndex = 0;
      this.renderedSeq = seq;
    }
    this.renderBoard();
    // The panel is rebuilt on every change: keep the keyboard focus on the same control.
    const focused = this.panel.contains(document.activeElement) ? focusKey(document.activeElement) : null;
    mount(this.panel, ...this.panelParts());
    if (focused) this.panel.querySelector(focused)?.focus();
  }

  panelParts() {
    const { state } = this.connection;
    return [
      h("h2", { text: state.name }),
      this.connectionLine(),
      this.noticeLine(),
      state.status === "open" ? this.lobbyParts() : null,
      state.game ? this.turnParts() : null,
      state.game ? this.controls() : null,
      state.game ? this.players() : null,
      state.game?.result ? this.result() : null,
      state.status === "cancelled" ? h("p", { class: "result" }, "This lobby was cancelled.") : null,
      h("h3", {}, "Events"),
      this.logList,
    ];
  }

  connectionLine() {
    const c = this.connection;
    const who = c.role === "player" ? `You play seat ${c.seat + 1} (${SEAT_COLOUR_NAMES[c.seat]})` : "You are watching";
    const link = c.state?.status === "finished" ? h("a", { href: "#/match/" + this.gameId }, " Replay this match") : null;
    return h("p", { class: "connection", "data-online": c.online ? "yes" : "no" }, who, " · ", c.online ? "connected" : c.ended ? "closed" : "reconnecting…", link);
  }

  noticeLine() {
    return this.noticeText ? h("p", { class: "notice", role: "alert" }, this.noticeText) : null;
  }

  myTurn() {
    const c = this.connection;
    return c.role === "player" && c.legal && c.state.game?.turn?.player === c.seat;
  }

  renderBoard() {
    const { state, legal } = this.connection;
    const game = state.game;
    if (!game) {
      this.board.render({});
      return;
    }
    const view = { board: game.board, figures: game.figures, targets: [], spots: [] };
    if (this.myTurn() && legal.place_tile) this.placementTargets(view, legal.place_tile, game.turn.tile);
    if (this.myTurn() && game.turn.phase === "act") this.figureSpots(view, legal, game.board[game.board.length - 1]);
    this.board.render(view);
  }

  placementTargets(view, cells, tile) {
    view.targets = cells.map(([x, y, rotations]) => ({
      x, y,
      label: `Place at ${x},${y}; rotations ${rotations.join(", ")}`,
      selected: this.selected && this.selected.x === x && this.selected.y === y,
      onpick: () => this.pickCell(x, y, rotations),
    }));
    if (this.selected) view.preview = { id: tile, x: this.selected.x, y: this.selected.y, rotation: this.selected.rotation };
  }

  /** The moves of the act phase, in one list: figure spots, then festival returns. */
  actMoves() {
    const legal = this.connection.legal || {};
    const kinds = Object.keys(legal.place_figure || {});
    if (!kinds.includes(this.figureKind)) this.figureKind = kinds.includes("follower") ? "follower" : kinds[0];
    const spots = (legal.place_figure?.[this.figureKind] || []).map((spot) => ({ type: "place_figure", figure: this.figureKind, spot }));
    const returns = (legal.festival_return || []).map(([x, y, spot]) => ({ type: "festival_return", x, y, spot }));
    return [...spots, ...returns];
  }

  figureSpots(view, legal, last) {
    const [x, y] = last;
    view.spots = this.actMoves().map((move, index) => {
      const at = move.type === "festival_return" ? [move.x, move.y] : [x, y];
      const label = move.type === "festival_return" ? `Take back your figure from ${move.spot} at ${at}` : `Place ${move.figure} on ${move.spot}`;
      return { x: at[0], y: at[1], spot: move.spot, label, kind: index === this.spotIndex ? "spot selected" : move.type === "festival_return" ? "spot festival" : "spot", onpick: () => this.connection.command(move) };
    });
  }

  turnParts() {
    const { state } = this.connection;
    const turn = state.game.turn;
    if (!turn) return h("p", { class: "turn" }, "The game is over.");
    const mine = this.myTurn();
    const who = mine ? "Your turn" : `${this.name(turn.player)}'s turn`;
    const phase = turn.phase === "place_tile" ? "place the tile" : "place a figure or pass";
    const rotation = this.selected ? this.selected.rotation : 0;
    return h("div", { class: "turn" + (mine ? " mine" : ""), "aria-live": "polite" },
      tileIcon(this.tiles, turn.tile, turn.phase === "place_tile" ? rotation : 0, `Drawn tile ${turn.tile}`),
      h("div", {},
        h("p", { class: "whose" }, h("span", { class: "swatch", "data-seat": turn.player }), ` ${who}: ${phase}`),
        h("p", {}, `Tile ${turn.tile} · ${turn.tiles_left} tiles left`),
        this.clockLine()));
  }

  clockLine() {
    this.clock = h("p", { class: "clock" });
    this.tick();
    return this.clock;
  }

  tick() {
    const c = this.connection;
    if (!this.clock || !c?.deadlineAt || !c.state?.game?.turn) {
      if (this.clock) this.clock.textContent = c?.state?.time_control?.type === "none" ? "No time limit" : "";
      return;
    }
    const left = Math.max(0, c.deadlineAt - performance.now());
    const seconds = Math.ceil(left / 1000);
    this.clock.textContent = `Clock: ${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")} left`;
  }

  controls() {
    if (!this.myTurn()) return null;
    const legal = this.connection.legal;
    const button = (text, action, extra = {}) => h("button", { type: "button", onclick: action, ...extra }, text);
    if (legal.place_tile) {
      return h("div", { class: "controls", role: "group", "aria-label": "Place the tile" },
        h("p", { class: "hint" }, "Pick a highlighted cell (arrow keys), rotate (R or click it again), then place (Enter)."),
        button("Rotate ⟳", () => this.rotate(1), { "aria-label": "Rotate the tile", disabled: !this.selected }),
        button("Place tile", () => this.placeTile(), { class: "primary", disabled: !this.selected, "data-action": "place" }));
    }
    const kinds = Object.keys(legal.place_figure || {});
    return h("div", { class: "controls", role: "group", "aria-label": "Place a figure" },
      kinds.length > 1 ? h("div", { role: "radiogroup", "aria-label": "Figure" }, kinds.map((kind) =>
        button(kind, () => { this.figureKind = kind; this.spotIndex = 0; this.render(); }, { role: "radio", "aria-checked": String(kind === this.figureKind) }))) : null,
      h("div", { class: "moves" }, this.actMoves().map((move) =>
        button(move.type === "festival_return" ? `Take back ${move.spot} at ${move.x},${move.y}` : `${move.figure} on ${move.spot}`,
          () => this.connection.command(move), { "data-move": move.type, "data-spot": move.spot }))),
      legal.recall_abbot ? button("Recall abbot", () => this.connection.command({ type: "recall_abbot" })) : null,
      legal.pass ? button("Pass (P)", () => this.connection.command({ type: "pass" }), { "data-action": "pass" }) : null);
  }

  players() {
    const { state, connected } = this.connection;
    const game = state.game;
    const turnPlayer = game.turn?.player;
    return h("ol", { class: "players", "aria-label": "Players" }, state.seats.map((seat) => {
      const supply = game.supplies[seat.seat] || {};
      const figures = [`${supply.follower ?? 0} followers`, supply.big ? `${supply.big} big` : null, supply.abbot ? `${supply.abbot} abbot` : null].filter(Boolean).join(", ");
      const tags = [seat.bot ? `${seat.bot} bot` : null, seat.control !== "human" ? seat.control : null, seat.seat === this.connection.seat ? "you" : null, !seat.bot && !connected.has(seat.seat) ? "offline" : null].filter(Boolean);
      return h("li", { class: seat.seat === turnPlayer ? "player to-move" : "player", "data-seat": seat.seat },
        h("span", { class: "swatch", "data-seat": seat.seat, "aria-hidden": "true" }),
        h("span", { class: "name" }, seat.name, tags.length ? ` (${tags.join(", ")})` : ""),
        h("span", { class: "score", "aria-label": "score" }, String(game.scores[seat.seat] ?? 0)),
        h("span", { class: "supply" }, figures));
    }));
  }

  result() {
    const result = this.connection.state.game.result;
    const winners = result.winners.map((seat) => this.name(seat)).join(" and ");
    return h("p", { class: "result", role: "status" }, `Game ${result.status}. Winner: ${winners}. Final scores: ${result.final_scores.join(" – ")}.`);
  }

  // ---- the lobby ----

  lobbyParts() {
    const { state, role, seat } = this.connection;
    const mine = state.seats.find((s) => s.seat === seat && role === "player");
    const creator = mine?.creator;
    const seats = h("ol", { class: "seats", "aria-label": "Seats" }, Array.from({ length: state.seat_count }, (_, index) => {
      const taken = state.seats.find((s) => s.seat === index);
      const remove = creator && taken?.bot ? h("button", { type: "button", onclick: () => this.act("DELETE", `/bots/${index}`) , "aria-label": `Remove bot from seat ${index + 1}` }, "remove") : null;
      return h("li", {}, h("span", { class: "swatch", "data-seat": index }), taken ? ` ${taken.name}${taken.bot ? ` (${taken.bot} bot)` : ""} ` : " open ", remove);
    }));
    const open = state.seats.length < state.seat_count;
    return h("div", { class: "lobby" },
      h("p", {}, `Lobby: ${state.seats.length} of ${state.seat_count} seats taken. ${rulesText(state.rules)}`),
      seats,
      this.inviteLine(),
      !mine && open ? this.joinForm() : null,
      creator && open ? this.botForm() : null,
      creator ? h("button", { type: "button", class: "primary", onclick: () => this.act("POST", "/start", {}), disabled: state.seats.length < 2, "data-action": "start" }, "Start the game") : null,
      mine ? h("button", { type: "button", onclick: () => this.leave(creator) }, creator ? "Cancel the lobby" : "Leave"): null);
  }

  inviteLine() {
    const { state } = this.connection;
    const url = `${location.origin}/#/game/${this.gameId}` + (!state.public && this.invite ? `?invite=${this.invite}` : "");
    return h("p", { class: "invite" }, state.public ? "Link to share: " : "Private: share this invite link: ", h("input", { readonly: true, value: url, "aria-label": "Invite link", onfocus: (e) => e.target.select() }));
  }

  joinForm() {
    const input = h("input", { name: "display_name", value: playerName(), required: true, maxlength: 64, "aria-label": "Your name" });
    return h("form", { class: "join", onsubmit: (event) => { event.preventDefault(); this.join(input.value.trim()); } },
      input, h("button", { type: "submit", class: "primary", "data-action": "join" }, "Join"));
  }

  botForm() {
    const level = h("select", { "aria-label": "Bot level" }, ["greedy", "random", "mcts"].map((name) => h("option", { value: name }, name)));
    return h("form", { class: "bots", onsubmit: (event) => { event.preventDefault(); this.act("POST", "/bots", { level: level.value }); } },
      level, h("button", { type: "submit", "data-action": "add-bot" }, "Add bot"));
  }

  async act(method, path, body) {
    try {
      await api(method, `/lobbies/${this.gameId}${path}`, { body, token: heldSeat(this.gameId)?.token });
    } catch (error) {
      this.notice(error.message);
    }
  }

  async join(name) {
    try {
      rememberName(name);
      const granted = await api("POST", `/lobbies/${this.gameId}/join`, { body: { display_name: name, invite_code: this.invite || undefined } });
      holdSeat(this.gameId, { token: granted.seat_token, seat: granted.seat });
      this.connect();
    } catch (error) {
      this.notice(error.message);
    }
  }

  async leave(creator) {
    await this.act("POST", creator ? "/cancel" : "/leave");
    dropSeat(this.gameId);
    this.connect();
  }

  // ---- moves ----

  pickCell(x, y, rotations) {
    if (this.selected && this.selected.x === x && this.selected.y === y) {
      this.rotate(1);
      return;
    }
    const rotation = rotations.includes(this.rotation) ? this.rotation : rotations[0];
    this.selected = { x, y, rotation, rotations };
    this.board.reveal(x, y);
    announce(`Cell ${x},${y}, rotation ${rotation}`);
    this.render();
  }

  rotate(step) {
    if (!this.selected) return;
    const { rotations, rotation } = this.selected;
    const next = rotations[(rotations.indexOf(rotation) + step + rotations.length) % rotations.length];
    this.selected.rotation = next;
    this.rotation = next;
    announce(`Rotation ${next}`);
    this.render();
  }

  placeTile() {
    if (!this.selected) return;
    const { x, y, rotation } = this.selected;
    this.connection.command({ type: "place_tile", x, y, rotation });
  }

  /** Keyboard play: arrows move between legal cells or spots, R rotates, Enter confirms, P passes. */
  onKey(event) {
    if (event.target.closest?.("input, select, textarea") || !this.myTurn() || event.ctrlKey || event.metaKey || event.altKey) return;
    const legal = this.connection.legal;
    const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[event.key];
    if (legal.place_tile) {
      if (step) this.stepCell(legal.place_tile, step);
      else if (event.key === "r" || event.key === "R") this.rotate(event.shiftKey ? -1 : 1);
      else if (event.key === "Enter" && this.selected && !event.target.closest?.("button, [role=button]")) this.placeTile();
      else return;
    } else {
      const moves = this.actMoves();
      if (step && moves.length) {
        this.spotIndex = (this.spotIndex + step + moves.length) % moves.length;
        announce(moves[this.spotIndex].spot);
        this.render();
      } else if (event.key === "Enter" && moves.length && !event.target.closest?.("button, [role=button]")) this.connection.command(moves[this.spotIndex]);
      else if ((event.key === "p" || event.key === "P") && legal.pass) this.connection.command({ type: "pass" });
      else return;
    }
    event.preventDefault();
  }

  stepCell(cells, step) {
    const index = this.selected ? cells.findIndex(([x, y]) => x === this.selected.x && y === this.selected.y) : -1;
    const next = cells[(index + step + cells.length) % cells.length];
    if (index < 0 && step < 0) this.pickCell(...cells[cells.length - 1]);
    else this.pickCell(...next);
  }

  // ---- the event log ----

  addEvents(events, seq) {
    for (const event of events) {
      const text = describe(event, (seat) => this.name(seat));
      if (text) this.logList.prepend(h("li", { "data-seq": seq, class: "event-" + event.type }, text));
    }
    while (this.logList.children.length > LOG_LIMIT) this.logList.lastChild.remove();
  }
}

/** A selector that finds the same control again after a redraw, if it has a stable name. */
function focusKey(element) {
  for (const name of ["data-action", "aria-label", "name"]) {
    const value = element.getAttribute(name);
    if (value) return `[${name}="${CSS.escape(value)}"]`;
  }
  return null;
}

export function rulesText(rules) {
  const parts = [rules.expansions?.length ? rules.expansions.join(", ").replaceAll("_", " ") : "base game"];
  if (rules.farmers === false) parts.push("no farmers");
  if (rules.farmer_city_points && rules.farmer_city_points !== 3) parts.push(`${rules.farmer_city_points} points per city for farmers`);
  if (rules.tile_limit) parts.push(`${rules.tile_limit} tiles`);
  return parts.join("; ") + ".";
}

const at = (pos) => (pos ? `${pos.x},${pos.y}` : "");

/** One event in words, or null for those not worth a line. */
export function describe(event, name) {
  switch (event.type) {
    case "seat_taken": return `${event.name} took seat ${event.seat + 1}${event.bot ? ` (${event.bot} bot)` : ""}`;
    case "seat_freed": return `Seat ${event.seat + 1} is free again`;
    case "game_started": return "The game started";
    case "lobby_cancelled": return `The lobby was cancelled (${event.reason})`;
    case "game_aborted": return `${name(event.seat)} aborted the game`;
    case "seat_resigned": return `${name(event.seat)} resigned; a bot plays on`;
    case "seat_abandoned": return `${name(event.seat)} timed out 3 times; a bot plays until they return`;
    case "seat_reclaimed": return `${name(event.seat)} is back`;
    case "game_abandoned": return "No person is left playing: the game ended as it stood";
    case "turn_timed_out": return `${name(event.seat)}'s turn ran out; a bot finishes it`;
    case "tile_placed": return `${name(event.player)} placed ${event.tile} at ${at(event.pos)} turned ${event.rotation}°`;
    case "figure_placed": return `${name(event.figure.player)} put a ${event.figure.figure} on ${event.figure.spot} at ${at(event.figure.pos)}`;
    case "passed": return `${name(event.player)} placed no figure`;
    case "abbot_recalled": return `${name(event.figure.player)} recalled the abbot: ${event.points} points`;
    case "figure_taken_back": return `${name(event.figure.player)} took back a ${event.figure.figure} (festival)`;
    case "feature_scored": return scoredText(event, name);
    case "tile_discarded": return `Tile ${event.tile} fits nowhere and was discarded`;
    case "game_over": return `Game over. Final scores ${event.final_scores.join(" – ")}; won by ${event.winners.map(name).join(" and ")}`;
    default: return null;
  }
}

function scoredText(event, name) {
  const how = event.completed ? "completed" : "at the end of the game";
  const size = `${event.tiles.length} tile${event.tiles.length === 1 ? "" : "s"}`;
  const cities = event.completed_cities !== undefined && event.completed_cities !== null ? `, ${event.completed_cities} completed cities` : "";
  if (!event.scorers.length) return `A ${event.kind} ${how} (${size}${cities}) scored for nobody`;
  return `${event.kind[0].toUpperCase() + event.kind.slice(1)} ${how} (${size}${cities}): ${event.points} points to ${event.scorers.map(name).join(" and ")}`;
}
