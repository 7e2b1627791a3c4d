// The game view: a lobby's seats and actions before the start, then the board, the
// drawn tile, the legal moves the server sent, scores, figures, clocks, the event log and
// the chat; once it has finished, the rematch.
// It holds no rules: every legal cell, rotation and spot shown comes from `legal_moves`.

import { api, heldSeat, holdSeat, dropSeat, inviteOf, rememberInvite, playerName, rememberName, ensureIdentity, identity, seatedAs } from "./api.js";
import { Board } from "./board.js";
import { GameConnection } from "./connection.js";
import { h, mount, announce, SEAT_COLOUR_NAMES } from "./dom.js";
import { tileIcon, spotKind } from "./tiles.js";
import { describe, besideWords, rulesText, scoredWords, tileWords, spotWords, figureWords, placeWords, count, names, clockText } from "./words.js";
import { yourTurn, clearSignals, soundOn, setSound } from "./signals.js";
import { scoreTable } from "./scoring.js";
import { remainingList } from "./remaining.js";
import { ChatPanel } from "./chat.js";

const LOG_LIMIT = 200;
/** How long each scored feature stays highlighted while its points are announced. */
const SCORED_MS = 1500;
const ARROWS = { ArrowRight: [1, 0], ArrowLeft: [-1, 0], ArrowDown: [0, 1], ArrowUp: [0, -1] };

export class GameView {
  constructor(root, tiles, gameId, invite) {
    this.root = root;
    this.tiles = tiles;
    this.gameId = gameId;
    if (invite) rememberInvite(gameId, invite);
    this.invite = inviteOf(gameId);
    this.entries = new Map();
    this.selected = null;
    this.rotation = 0;
    this.chosen = null;
    this.figureKind = null;
    this.confirming = null;
    this.scoredQueue = [];
    this.scoredNow = null;
    this.board = new Board(tiles, "Board");
    this.panel = h("aside", { class: "panel", "aria-label": "Game" });
    this.logList = h("ul", { class: "log", "aria-label": "Event log, newest first" });
    this.chat = new ChatPanel(gameId, { connection: () => this.connection, register: (name) => this.registerForChat(name) });
    // The chat sits under the panel, beside the board (below it on a phone): never over it.
    this.section = h("section", { class: "game" }, h("div", { class: "board-area" }, this.board.element), h("div", { class: "side" }, this.panel, this.chat.element));
    mount(root, this.section);
    this.keys = (event) => this.onKey(event);
    document.addEventListener("keydown", this.keys);
    this.ticker = setInterval(() => this.tick(), 500);
    this.connect();
  }

  connect() {
    const seat = heldSeat(this.gameId);
    const listener = {
      change: () => this.render(),
      events: (events, seq) => this.liveEvents(events, seq),
      notice: (text) => this.notice(text),
      badToken: () => dropSeat(this.gameId),
      chat: (frame) => this.chat.receive(frame),
      chatMutes: () => this.chat.render(),
      chatError: (error) => this.chat.showError(error),
      badIdentity: () => this.chat.showError({ code: "bad_player_secret", message: "This browser's player identity was refused; you can read the chat but not write." }),
      rematch: (frame) => this.rematchHeard(frame),
      rematchSeat: (frame) => this.rematchSeatHeard(frame),
      rematchError: (error) => this.rematchRefused(error),
      refused: () => this.checkStillLive(),
    };
    this.connection?.close();
    // A new connection (after joining, or registering to chat) resumes the chat we hold.
    const chatSeq = this.chat.highest();
    this.connection = new GameConnection(this.gameId, { token: seat?.token, invite: this.invite, identity: identity(), chatSeq, listener });
    // Tests and the curious can drop the socket to watch the client recover.
    window.carcassonne = { connection: this.connection, view: this };
  }

  /**
   * The server refused the connection before any welcome. If the game ended and its room
   * has closed since (a phone asleep past the post-game stay, an old link), no reconnect
   * will ever be let in: the finished match is shown instead. Anything else (the server
   * restarting, the network away) is left to the reconnects.
   */
  async checkStillLive() {
    if (this.checkingLive) return;
    this.checkingLive = true;
    try {
      const lobby = await api("GET", `/lobbies/${this.gameId}`, { invite: this.invite || undefined, token: heldSeat(this.gameId)?.token });
      if (lobby.status === "finished") {
        this.connection.over();
        location.hash = `#/match/${this.gameId}?at=end`;
      } else if (lobby.status === "cancelled") {
        this.connection.over();
        this.notice("This game was cancelled.");
      }
    } catch {
      // Not known, or not reachable now: the reconnects go on.
    } finally {
      this.checkingLive = false;
    }
  }

  destroy() {
    this.connection.close();
    document.removeEventListener("keydown", this.keys);
    clearInterval(this.ticker);
    clearTimeout(this.scoredTimer);
    clearSignals();
  }

  /** A message for the player; it goes when the connection is back or the game moves on. */
  notice(text) {
    const c = this.connection;
    this.noticed = { text, seq: c.seq, online: c.online };
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
    if (this.noticed && ((c.online && !this.noticed.online) || c.seq !== this.noticed.seq)) this.noticed = null;
    this.chat.render();
    if (!c.state) {
      mount(this.panel, h("p", { class: "connection" }, c.online ? "Loading…" : "Connecting…"), this.noticeLine());
      return;
    }
    this.section.dataset.status = c.state.status;
    const seq = c.seq + (c.legal ? "+" : "");
    if (seq !== this.renderedSeq) {
      this.selected = null;
      this.chosen = null;
      this.renderedSeq = seq;
    }
    if (c.state.game && !this.logRequested) this.loadLog();
    if (c.state.status === "finished" && !this.match) this.loadMatch();
    yourTurn(this.myTurn(), c.state.name);
    const onBoard = this.board.svg.contains(document.activeElement) ? document.activeElement : null;
    const boardKey = onBoard && (this.choiceKey() ?? (onBoard.dataset.spot ? `[data-spot="${CSS.escape(onBoard.dataset.spot)}"][data-cell="${onBoard.dataset.cell}"]` : onBoard.dataset.cell ? `[data-cell="${onBoard.dataset.cell}"]` : null));
    this.renderBoard();
    if (boardKey) (this.board.svg.querySelector(boardKey) || this.board.svg).focus({ preventScroll: true });
    // The panel is rebuilt on every change: keep the keyboard focus on the same control,
    // or on the next sensible one when that control is gone (a full lobby, a started game).
    const focusedInPanel = this.panel.contains(document.activeElement);
    const focused = focusedInPanel ? focusKey(document.activeElement) : null;
    mount(this.panel, ...this.panelParts());
    if (focusedInPanel) this.refocus(focused);
  }

  /**
   * The board element of the current choice (the chosen cell, or the chosen spot): the
   * focus follows the choice, so that Enter confirms what arrows chose rather than
   * picking the element clicked before.
   */
  choiceKey() {
    if (this.connection.legal?.place_tile && this.selected) return `rect.target[data-cell="${this.selected.x},${this.selected.y}"]`;
    if (this.chosen?.type === "place_figure") {
      const { x, y } = this.moveAt(this.chosen);
      return `g.spot[data-spot="${CSS.escape(this.chosen.spot)}"][data-cell="${x},${y}"]`;
    }
    return null;
  }

  refocus(key) {
    const again = key && this.panel.querySelector(key);
    // An answered rematch takes its buttons away: stay in the rematch block, at its heading.
    const rematch = key?.includes("rematch-") && this.panel.querySelector(".rematch h3");
    const next = again || rematch || this.panel.querySelector("[data-action=start]:not([disabled]), [data-action=place]:not([disabled]), [data-action=confirm], [data-move], [data-action=pass], [data-action=add-bot], h2");
    next?.focus({ preventScroll: true });
  }

  panelParts() {
    const { state } = this.connection;
    return [
      h("h2", { text: state.name, tabindex: "-1" }),
      this.connectionLine(),
      this.noticeLine(),
      state.status === "open" ? this.lobbyParts() : null,
      state.game ? this.lastMoveLine() : null,
      state.game ? this.turnParts() : null,
      state.game ? this.controls() : null,
      state.game ? this.players() : null,
      state.game?.result ? this.result() : null,
      state.status === "finished" ? this.rematchParts() : null,
      state.status === "cancelled" ? h("p", { class: "result" }, "This lobby was cancelled.") : null,
      state.game && state.game.turn ? remainingList(this.tiles, state.rules, state.game) : null,
      state.status === "playing" && this.connection.role === "player" ? this.leaveControls() : null,
      h("div", { class: "options" }, h("button", { type: "button", "aria-pressed": String(soundOn()), "data-action": "sound", onclick: () => { setSound(!soundOn()); this.render(); } }, soundOn() ? "Sound on" : "Sound off")),
      h("h3", {}, "Events"),
      this.logList,
    ];
  }

  connectionLine() {
    const c = this.connection;
    const who = c.role === "player" ? `You play ${SEAT_COLOUR_NAMES[c.seat]} (seat ${c.seat + 1})` : "You are watching";
    const link = c.state?.status === "finished" ? h("a", { href: "#/match/" + this.gameId }, " Replay this match") : null;
    return h("p", { class: "connection", "data-online": c.online ? "yes" : "no" }, who, " · ", c.online ? "connected" : c.ended ? "closed" : "reconnecting…", link);
  }

  noticeLine() {
    return this.noticed ? h("p", { class: "notice", role: "alert" }, this.noticed.text) : null;
  }

  myTurn() {
    const c = this.connection;
    return c.role === "player" && !!c.legal && c.state?.game?.turn?.player === c.seat;
  }

  renderBoard() {
    const { state, legal } = this.connection;
    const game = state.game;
    if (!game) {
      this.board.render({});
      return;
    }
    const figures = game.figures.map((figure) => ({ ...figure, label: this.figureLabel(figure) }));
    const view = { board: game.board, figures, targets: [], spots: [], last: this.lastMove()?.mark, scored: this.scoredNow ? [this.scoredNow] : [] };
    if (this.myTurn() && legal.place_tile) this.placementTargets(view, legal.place_tile, game.turn.tile);
    if (this.myTurn() && game.turn.phase === "act") {
      const [x, y] = game.board[game.board.length - 1];
      view.focus = { x, y };
      this.figureSpots(view);
    }
    this.board.render(view);
  }

  figureLabel({ player, figure, x, y, spot }) {
    const kind = this.kindAt({ x, y }, spot);
    return `${this.name(player)}'s ${figureWords(figure, kind).replace(/^(a|the) /, "")} ${placeWords(kind)}`;
  }

  /** A tile in words, as this game's rules make it. */
  tileWords(id) {
    return tileWords(this.tiles.get(id), this.connection.state?.rules);
  }

  /** Where the last tile went, by the tiles placed before it: "next to the start tile". */
  besideWords(x, y) {
    const earlier = this.connection.state.game.board.slice(0, -1);
    return besideWords(earlier, x, y, this.tiles, this.connection.state?.rules);
  }

  /** The kind of feature a spot of the tile at `pos` is. */
  kindAt(pos, spot) {
    const entry = this.connection.state?.game?.board.find(([x, y]) => x === pos?.x && y === pos?.y);
    return spotKind(this.tiles.get(entry?.[2]), spot);
  }

  placementTargets(view, cells, tile) {
    view.targets = cells.map(([x, y, rotations]) => ({
      x, y,
      label: `Place the tile here${this.selected?.x === x && this.selected?.y === y ? " (chosen; click again to turn it)" : ""}`,
      selected: this.selected && this.selected.x === x && this.selected.y === y,
      onpick: (event) => this.pickCell(x, y, rotations, event),
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

  /** Where a move of the act phase is on the board, and what it is called. */
  moveAt(move) {
    const { board } = this.connection.state.game;
    const [x, y, id] = move.type === "festival_return" ? [move.x, move.y, board.find(([bx, by]) => bx === move.x && by === move.y)?.[2]] : board[board.length - 1];
    const words = move.type === "festival_return"
      ? `Take back your ${figureWords("follower", this.kindAt({ x, y }, move.spot)).replace(/^a /, "")} ${placeWords(this.kindAt({ x, y }, move.spot))} (festival)`
      : spotWords(this.tiles.get(id), move.spot, move.figure);
    return { x, y, words: words[0].toUpperCase() + words.slice(1) };
  }

  sameMove(a, b) {
    return !!a && !!b && a.type === b.type && a.spot === b.spot && a.figure === b.figure && a.x === b.x && a.y === b.y;
  }

  /** Where a spot of the tile at (x, y) is on the board, from the state (not the last drawing). */
  spotCentre(x, y, spot) {
    const entry = this.connection.state.game.board.find(([bx, by]) => bx === x && by === y);
    return this.board.spotAt(x, y, spot, entry ? [entry[2], entry[3]] : undefined);
  }

  /** The act phase's moves with their words, told apart by where they are when two read alike. */
  namedActMoves() {
    const moves = this.actMoves().map((move) => ({ move, ...this.moveAt(move) }));
    for (const entry of moves) {
      if (moves.filter((other) => other.words === entry.words).length < 2) continue;
      const [px, py] = this.spotCentre(entry.x, entry.y, entry.move.spot);
      entry.words += ` (${sideWords(px - entry.x * 100, py - entry.y * 100)})`;
    }
    return moves;
  }

  figureSpots(view) {
    view.spots = this.namedActMoves().map(({ move, x, y, words }) => {
      const chosen = this.sameMove(move, this.chosen);
      return { x, y, spot: move.spot, label: words, kind: move.type === "festival_return" ? "spot festival" : "spot", chosen, onpick: () => this.choose(move) };
    });
    if (this.chosen?.type === "place_figure") {
      const { x, y } = this.moveAt(this.chosen);
      view.figures = [...view.figures, { player: this.connection.seat, figure: this.chosen.figure, x, y, spot: this.chosen.spot, label: "Your figure, not yet placed" }];
    }
  }

  lastMoveLine() {
    const last = this.lastMove();
    return last ? h("p", { class: "last-move-text", "aria-live": "polite" }, h("span", { class: "swatch", "data-seat": last.mark.player, "aria-hidden": "true" }), " ", last.text) : null;
  }

  /**
   * The last turn, from the log (a tile placed and what followed it), or, before the
   * log is in, from the board: the latest tile, placed by the seat whose turn it was.
   */
  lastMove() {
    const game = this.connection.state.game;
    if (game.board.length < 2) return null;
    const [x, y, id] = game.board[game.board.length - 1];
    const placed = this.lastPlacement(x, y);
    if (placed) return this.lastMoveOf(placed.event, placed.after);
    const player = (game.board.length - 2) % game.scores.length;
    return { mark: { x, y, player }, text: `${this.name(player)} placed ${this.tileWords(id)} ${this.besideWords(x, y)}.` };
  }

  /** The log's `tile_placed` of the tile at (x, y) and the events of the turn after it. */
  lastPlacement(x, y) {
    const after = [];
    for (const seq of [...this.entries.keys()].sort((a, b) => b - a)) {
      const events = this.entries.get(seq);
      for (let index = events.length - 1; index >= 0; index--) {
        const event = events[index];
        if (event.type === "tile_placed") return event.pos.x === x && event.pos.y === y ? { event, after: after.reverse() } : null;
        if (["figure_placed", "passed", "abbot_recalled", "figure_taken_back"].includes(event.type)) after.push(event);
      }
    }
    return null;
  }

  lastMoveOf(placed, after) {
    const mark = { x: placed.pos.x, y: placed.pos.y, player: placed.player };
    const parts = [`${this.name(placed.player)} placed ${this.tileWords(placed.tile)} ${this.besideWords(placed.pos.x, placed.pos.y)}`];
    for (const event of after) {
      if (event.type === "figure_placed") {
        const kind = this.kindAt(event.figure.pos, event.figure.spot);
        parts.push(`put ${figureWords(event.figure.figure, kind)} ${placeWords(kind)}`);
        mark.figure = { x: event.figure.pos.x, y: event.figure.pos.y, spot: event.figure.spot };
      } else if (event.type === "passed") parts.push("placed no figure");
      else if (event.type === "abbot_recalled") parts.push(`took the abbot back for ${count(event.points, "point")}`);
      else if (event.type === "figure_taken_back") parts.push("took a figure back (festival)");
    }
    return { mark, text: parts.join("; ") + "." };
  }

  turnParts() {
    const { state } = this.connection;
    const turn = state.game.turn;
    if (!turn) return h("p", { class: "turn" }, "The game is over.");
    const mine = this.myTurn();
    const who = mine ? "Your turn" : `${this.name(turn.player)}'s turn`;
    const phase = turn.phase === "place_tile" ? "place the tile" : "place a figure or pass";
    const placed = state.game.board[state.game.board.length - 1];
    const rotation = turn.phase === "place_tile" ? (this.selected ? this.selected.rotation : 0) : placed[3];
    return h("div", { class: "turn" + (mine ? " mine" : ""), "aria-live": "polite" },
      tileIcon(this.tiles, turn.tile, rotation, `Drawn tile: ${this.tileWords(turn.tile)}`),
      h("div", {},
        h("p", { class: "whose" }, h("span", { class: "swatch", "data-seat": turn.player, "aria-hidden": "true" }), ` ${who}: ${phase}`),
        h("p", {}, `${this.tileWords(turn.tile)[0].toUpperCase()}${this.tileWords(turn.tile).slice(1)} · ${count(turn.tiles_left, "tile")} left`)));
  }

  /** The clock of `seat`: the turn's time and the reserve for the seat to move, else its reserve. */
  clockOf(seat) {
    const c = this.connection;
    const game = c.state.game;
    const control = c.state.time_control;
    if (!control || control.type === "none" || !game?.clock || !game.turn) return null;
    const reserve = game.clock.reserve_ms?.[seat] ?? 0;
    if (game.turn.player === seat && c.deadlineAt) {
      const left = Math.max(0, c.deadlineAt - performance.now());
      const inTurn = Math.max(0, left - reserve);
      return reserve ? `${clockText(inTurn)} + ${clockText(Math.min(left, reserve))}` : clockText(left);
    }
    return reserve ? `${clockText(control.per_turn_ms)} + ${clockText(reserve)}` : clockText(control.per_turn_ms);
  }

  tick() {
    if (this.rematchClock) this.rematchClock.textContent = this.rematchTimeLeft();
    if (!this.clocks) return;
    for (const [seat, element] of this.clocks) {
      const text = this.clockOf(seat);
      if (text !== null && element.textContent !== text) element.textContent = text;
    }
  }

  controls() {
    if (!this.myTurn()) return null;
    const legal = this.connection.legal;
    const button = (text, action, extra = {}) => h("button", { type: "button", onclick: action, ...extra }, text);
    if (legal.place_tile) {
      return h("div", { class: "controls", role: "group", "aria-label": "Place the tile" },
        h("p", { class: "hint" }, "Pick a highlighted cell (arrow keys), turn the tile (R, or click the cell again), then place it (Enter)."),
        button("Turn ⟳", () => this.rotate(1), { "aria-label": "Turn the tile", "data-action": "rotate", disabled: !this.selected || this.selected.rotations.length < 2 }),
        button("Place tile", () => this.placeTile(), { class: "primary", disabled: !this.selected, "data-action": "place" }));
    }
    const kinds = Object.keys(legal.place_figure || {});
    const chosen = this.chosen;
    const named = this.namedActMoves();
    return h("div", { class: "controls", role: "group", "aria-label": "Place a figure" },
      kinds.length > 1 ? h("div", { class: "figure-kinds", role: "radiogroup", "aria-label": "Figure" }, kinds.map((kind) =>
        button(kind === "big" ? "Big follower" : kind === "abbot" ? "Abbot" : "Follower", () => { this.figureKind = kind; this.chosen = null; this.render(); },
          { role: "radio", "aria-checked": String(kind === this.figureKind), "data-kind": kind }))) : null,
      h("p", { class: "hint" }, chosen ? "Confirm, or choose another spot." : "Choose a spot on the tile (arrow keys), then confirm; or pass."),
      h("div", { class: "moves" }, named.map(({ move, words }) =>
        button(words, () => this.choose(move), { "data-move": move.type, "data-spot": move.spot, "aria-pressed": String(this.sameMove(move, chosen)) }))),
      chosen ? h("div", { class: "confirm" },
        button(`Confirm: ${(named.find(({ move }) => this.sameMove(move, chosen))?.words ?? "").replace(/^./, (c) => c.toLowerCase())}`, () => this.confirmChoice(), { class: "primary", "data-action": "confirm" }),
        button("Undo", () => { this.chosen = null; this.render(); }, { "data-action": "undo" })) : null,
      legal.recall_abbot ? button("Recall the abbot", () => this.connection.command({ type: "recall_abbot" }), { "data-action": "recall" }) : null,
      legal.pass ? button("Pass: no figure (P)", () => this.connection.command({ type: "pass" }), { "data-action": "pass" }) : null);
  }

  players() {
    const { state, connected } = this.connection;
    const game = state.game;
    const turnPlayer = game.turn?.player;
    this.clocks = new Map();
    return h("ol", { class: "players", "aria-label": "Players" }, state.seats.map((seat) => {
      const supply = game.supplies[seat.seat] || {};
      const figures = [count(supply.follower ?? 0, "follower"), supply.big ? count(supply.big, "big follower") : null, supply.abbot ? "abbot" : null].filter(Boolean).join(", ");
      const tags = [seat.bot ? `${seat.bot} bot` : null, seat.control !== "human" ? seat.control : null, seat.seat === this.connection.seat ? "you" : null, !seat.bot && !connected.has(seat.seat) ? "offline" : null].filter(Boolean);
      const time = this.clockOf(seat.seat);
      const clock = time === null ? null : h("span", { class: "clock", "aria-label": "clock" }, time);
      if (clock) this.clocks.set(seat.seat, clock);
      return h("li", { class: seat.seat === turnPlayer ? "player to-move" : "player", "data-seat": seat.seat },
        h("span", { class: "swatch", "data-seat": seat.seat, "aria-hidden": "true" }),
        h("span", { class: "name" }, seat.name, tags.length ? ` (${tags.join(", ")})` : ""),
        h("span", { class: "score", "aria-label": "score" }, String(game.scores[seat.seat] ?? 0)),
        h("span", { class: "supply" }, figures), clock);
    }));
  }

  result() {
    const { state } = this.connection;
    const result = state.game.result;
    const winners = names(result.winners.map((seat) => this.name(seat)));
    const ranking = state.seats.map((seat) => ({ seat: seat.seat, score: result.final_scores[seat.seat] })).sort((a, b) => b.score - a.score)
      .map(({ seat, score }) => `${this.name(seat)} ${score}`).join(", ");
    const how = result.status === "abandoned" ? "The game was abandoned" : "The game is over";
    return h("div", { class: "result-block" },
      h("p", { class: "result", role: "status" }, `${how}: ${winners} ${result.winners.length > 1 ? "win" : "wins"}. ${ranking}.`),
      this.match ? scoreTable({ breakdown: this.match.breakdown, seats: state.seats.map((seat) => seat.name), finalScores: result.final_scores, winners: result.winners, caption: "Points by category" }) : null);
  }

  async loadMatch() {
    if (this.matchLoading) return;
    this.matchLoading = true;
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        this.match = await api("GET", `/matches/${this.gameId}`);
        this.render();
        return;
      } catch (error) {
        if (error.status !== 404) return;
        await new Promise((resolve) => setTimeout(resolve, 500 * (attempt + 1)));
      }
    }
  }

  leaveControls() {
    const game = this.connection.state.game;
    // Any player may abort until every seat has placed a first tile; then one resigns.
    const action = game.board.length <= game.scores.length ? "abort" : "resign";
    const text = action === "abort" ? "Abort the game" : "Resign";
    if (this.confirming === action) {
      return h("div", { class: "leave", role: "group", "aria-label": text },
        h("p", {}, action === "abort" ? "Abort? The game is cancelled for everyone and is not a match." : "Resign? A bot plays your seat from now on, and you cannot win."),
        h("button", { type: "button", class: "danger", "data-action": "confirm-" + action, onclick: () => this.leaveGame(action) }, "Yes, " + text.toLowerCase()),
        h("button", { type: "button", "data-action": "keep-playing", onclick: () => { this.confirming = null; this.render(); } }, "No, play on"));
    }
    return h("div", { class: "leave" }, h("button", { type: "button", "data-action": action, onclick: () => { this.confirming = action; this.render(); } }, text));
  }

  async leaveGame(action) {
    this.confirming = null;
    await this.act("POST", "/" + action, {});
  }

  // ---- the rematch ----

  /**
   * Once the game has finished: where the rematch stands, what the viewer may do about
   * it (offer; accept or decline an offer waiting for them), and the way to the new game
   * once agreed. Buttons need the room, which stays a while after the end: not offered
   * once the connection is gone.
   */
  rematchParts() {
    const c = this.connection;
    const frame = c.rematch;
    const seated = c.role === "player" && c.online;
    this.rematchClock = null;
    const parts = [];
    if (frame) parts.push(h("p", { class: "rematch-status" }, this.rematchWords(frame)));
    if (frame?.status === "offered") {
      this.rematchClock = h("p", { class: "rematch-expiry", role: "timer" }, this.rematchTimeLeft());
      parts.push(this.rematchClock);
      if (seated && frame.waiting_for.includes(c.seat)) {
        parts.push(h("div", { class: "rematch-actions" },
          h("button", { type: "button", class: "primary", "data-action": "rematch-accept", onclick: () => this.answerRematch(true) }, "Accept the rematch"),
          h("button", { type: "button", "data-action": "rematch-decline", onclick: () => this.answerRematch(false) }, "Decline")));
      }
    }
    if (frame?.status === "agreed") parts.push(this.rematchLink(frame.lobby));
    if (seated && (!frame || frame.status === "declined" || frame.status === "expired")) {
      parts.push(h("div", { class: "rematch-actions" },
        h("button", { type: "button", class: "primary", "data-action": "rematch-offer", onclick: () => this.answerRematch(true) }, "Offer a rematch")));
    }
    if (this.rematchError) parts.push(h("p", { class: "notice" }, this.rematchError));
    if (!parts.length) return null;
    return h("div", { class: "rematch", role: "group", "aria-labelledby": "rematch-heading" }, h("h3", { id: "rematch-heading", tabindex: "-1" }, "Rematch"), parts);
  }

  /** Where a rematch frame leaves things, in words, naming the seats as the state does. */
  rematchWords({ status, by, accepted, waiting_for: waiting }) {
    const c = this.connection;
    // Names stay as their players wrote them; only "you" starts a sentence with a capital.
    const who = (seat, first = false) => (c.role === "player" && seat === c.seat ? (first ? "You" : "you") : this.name(seat));
    if (status === "declined") return `${who(by, true)} declined the rematch.`;
    if (status === "expired") return "The rematch offer expired.";
    if (status === "agreed") return "Rematch agreed: the new game has started.";
    const others = accepted.filter((seat) => seat !== by);
    return [`${who(by, true)} offered a rematch.`, others.length ? `${names(others.map((seat, index) => who(seat, index === 0)))} accepted.` : null, `Waiting for ${names(waiting.map((seat) => who(seat)))}.`].filter(Boolean).join(" ");
  }

  /** The time left to answer the offer waiting, by this device's clock. */
  rematchTimeLeft() {
    const left = (this.connection.rematch?.expires_at ?? 0) - Date.now();
    return left > 0 ? `Time to answer: ${clockText(left)}` : "The offer is about to expire.";
  }

  /** The link to the agreed rematch: to play it with the seat held there, else to watch it. */
  rematchLink(lobby) {
    const { state } = this.connection;
    const seat = heldSeat(lobby);
    const invite = !seat && !state.public && this.invite ? `?invite=${this.invite}` : "";
    return h("p", {}, h("a", { href: `#/game/${lobby}${invite}`, "data-action": "rematch-open" }, seat ? "Play the rematch" : "Watch the rematch"));
  }

  answerRematch(accept) {
    // Having offered or answered here, the agreement opens the new game (rematchSeatHeard).
    this.rematchFollowed = true;
    this.rematchError = null;
    this.connection.answerRematch(accept);
    this.render();
  }

  rematchHeard(frame) {
    this.rematchError = null;
    if (frame.status === "offered") this.rematchFollowed = true;
    announce(this.rematchWords(frame));
  }

  /**
   * This seat's place in the agreed rematch: its token is kept, so that the new game
   * opens as a player. The page goes there at once when it followed the offer; one that
   * learns of an old agreement on connecting (Back from the new game, a reload) stays,
   * showing the link, or Back would lead straight forward again.
   */
  rematchSeatHeard({ lobby, seat, token }) {
    holdSeat(lobby, { token, seat });
    rememberInvite(lobby, this.invite);
    if (this.rematchFollowed) location.hash = `#/game/${lobby}`;
  }

  rematchRefused(error) {
    // The server's messages start lower case and end without a full stop.
    this.rematchError = error.message.charAt(0).toUpperCase() + error.message.slice(1) + ".";
    announce(this.rematchError);
    this.render();
  }

  // ---- the lobby ----

  lobbyParts() {
    const { state, role, seat } = this.connection;
    const mine = state.seats.find((s) => s.seat === seat && role === "player");
    const creator = mine?.creator;
    const seats = h("ol", { class: "seats", "aria-label": "Seats" }, Array.from({ length: state.seat_count }, (_, index) => {
      const taken = state.seats.find((s) => s.seat === index);
      const remove = creator && taken?.bot ? h("button", { type: "button", onclick: () => this.act("DELETE", `/bots/${index}`), "aria-label": `Remove the bot from seat ${index + 1}` }, "remove") : null;
      return h("li", {}, h("span", { class: "swatch", "data-seat": index, "aria-hidden": "true" }), taken ? ` ${taken.name}${taken.bot ? ` (${taken.bot} bot)` : ""} ` : " open ", remove);
    }));
    const open = state.seats.length < state.seat_count;
    return h("div", { class: "lobby" },
      h("p", {}, `${state.rated ? "Rated lobby" : "Lobby"}: ${state.seats.length} of ${state.seat_count} seats taken. ${rulesText(state.rules)}`),
      seats,
      this.inviteLine(),
      !mine && open ? this.joinForm() : null,
      creator && open && !state.rated ? this.botForm() : null,
      creator ? h("button", { type: "button", class: "primary", onclick: () => this.act("POST", "/start", {}), disabled: state.seats.length < 2, "data-action": "start" }, "Start the game") : null,
      mine ? h("button", { type: "button", onclick: () => this.leave(creator) }, creator ? "Cancel the lobby" : "Leave") : null);
  }

  inviteLine() {
    const { state } = this.connection;
    const url = `${location.origin}/#/game/${this.gameId}` + (!state.public && this.invite ? `?invite=${this.invite}` : "");
    const copy = async (event) => {
      const button = event.currentTarget;
      try {
        await navigator.clipboard.writeText(url);
        button.textContent = "Copied";
      } catch {
        button.previousElementSibling.select();
        button.textContent = "Press Ctrl+C";
      }
    };
    return h("div", { class: "invite" },
      h("label", { for: "invite-link" }, state.public ? "Link to share" : "Private: share this invite link"),
      h("div", { class: "invite-row" },
        h("input", { id: "invite-link", readonly: true, value: url, onfocus: (e) => e.target.select() }),
        h("button", { type: "button", "data-action": "copy-invite", onclick: copy }, "Copy")));
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
      if (this.connection.state.rated) await ensureIdentity(name);
      const body = { ...seatedAs(name), invite_code: this.invite || undefined };
      const granted = await api("POST", `/lobbies/${this.gameId}/join`, { body });
      holdSeat(this.gameId, { token: granted.seat_token, seat: granted.seat });
      this.connect();
    } catch (error) {
      this.notice(error.message);
    }
  }

  /** Registers a player identity (as a rated game does) so that a spectator may chat, then says hello with it. */
  async registerForChat(name) {
    rememberName(name);
    await ensureIdentity(name);
    this.connect();
  }

  async leave(creator) {
    await this.act("POST", creator ? "/cancel" : "/leave");
    dropSeat(this.gameId);
    this.connect();
  }

  // ---- moves ----

  /** A cell clicked, tapped or taken with Enter: choose it; again, turn the tile (Enter: place it). */
  pickCell(x, y, rotations, event) {
    if (this.selected && this.selected.x === x && this.selected.y === y) {
      if (event?.type === "keydown") this.placeTile();
      else this.rotate(1);
      return;
    }
    const rotation = rotations.includes(this.rotation) ? this.rotation : rotations[0];
    this.selected = { x, y, rotation, rotations };
    this.board.reveal(x, y);
    announce(`Cell chosen; the tile is turned ${rotation} degrees${rotations.length > 1 ? "; R turns it" : ""}`);
    this.render();
  }

  rotate(step) {
    if (!this.selected) return;
    const { rotations, rotation } = this.selected;
    const next = rotations[(rotations.indexOf(rotation) + step + rotations.length) % rotations.length];
    this.selected.rotation = next;
    this.rotation = next;
    announce(`Turned ${next} degrees`);
    this.render();
  }

  placeTile() {
    if (!this.selected) return;
    const { x, y, rotation } = this.selected;
    this.connection.command({ type: "place_tile", x, y, rotation });
  }

  /** Picks a figure move: it shows on the board, and is sent only when confirmed. */
  choose(move) {
    this.chosen = move;
    const words = this.namedActMoves().find((entry) => this.sameMove(entry.move, move))?.words ?? "";
    announce(`${words}: confirm with Enter`);
    this.render();
  }

  confirmChoice() {
    if (!this.chosen) return;
    const move = this.chosen;
    this.chosen = null;
    this.connection.command(move);
  }

  /** Keyboard play: arrows move on the board among legal cells or spots, R turns, Enter confirms, P passes. */
  onKey(event) {
    if (event.target.closest?.("input, select, textarea, .chat") || !this.myTurn() || event.ctrlKey || event.metaKey || event.altKey) return;
    const legal = this.connection.legal;
    const arrow = ARROWS[event.key];
    const onButton = event.target.closest?.("button, [role=button]");
    if (legal.place_tile) {
      if (arrow) this.stepCell(legal.place_tile, arrow);
      else if (event.key === "r" || event.key === "R") this.rotate(event.shiftKey ? -1 : 1);
      else if (event.key === "Enter" && this.selected && !onButton) this.placeTile();
      else return;
    } else {
      if (arrow) this.stepSpot(arrow);
      else if (event.key === "Enter" && this.chosen && !onButton) this.confirmChoice();
      else if (event.key === "Escape" && this.chosen) { this.chosen = null; this.render(); }
      else if ((event.key === "p" || event.key === "P") && legal.pass) this.connection.command({ type: "pass" });
      else return;
    }
    event.preventDefault();
  }

  stepCell(cells, arrow) {
    const game = this.connection.state.game;
    const last = game.board[game.board.length - 1];
    const from = this.selected ? [this.selected.x, this.selected.y] : [last[0], last[1]];
    const points = cells.map(([x, y, rotations]) => ({ at: [x, y], value: [x, y, rotations] }));
    const next = nearestInDirection(points, from, arrow, !this.selected);
    if (next) this.pickCell(...next);
  }

  stepSpot(arrow) {
    const moves = this.actMoves().map((move) => {
      const { x, y } = this.moveAt(move);
      const [px, py] = this.spotCentre(x, y, move.spot);
      return { at: [px / 100, py / 100], value: move };
    });
    if (!moves.length) return;
    const game = this.connection.state.game;
    const last = game.board[game.board.length - 1];
    const current = this.chosen && moves.find((move) => this.sameMove(move.value, this.chosen));
    const next = nearestInDirection(moves, current ? current.at : [last[0] + 0.5, last[1] + 0.5], arrow, !current);
    if (next) this.choose(next);
  }

  // ---- the event log ----

  /** Loads the log of the game so far from the server (after a reload, or for a late spectator). */
  async loadLog() {
    this.logRequested = true;
    let after = null;
    try {
      for (let page = 0; page < 20; page++) {
        const query = after === null ? "" : `?after_seq=${after}`;
        const answer = await api("GET", `/lobbies/${this.gameId}/events${query}`, { invite: this.invite || undefined, token: heldSeat(this.gameId)?.token });
        for (const item of answer.items) if (!this.entries.has(item.seq)) this.entries.set(item.seq, item.events);
        if (answer.next_after_seq === null || answer.next_after_seq === undefined) break;
        after = answer.next_after_seq;
      }
    } catch (error) {
      // The log stays what live updates bring; the game itself is unaffected.
      this.logFailed = error.message;
    }
    this.renderLog();
    this.render();
  }

  liveEvents(events, seq) {
    this.entries.set(seq, events);
    for (const event of events) if (event.type === "feature_scored") this.scoredQueue.push(event);
    if (!this.scoredNow) this.nextScored();
    this.renderLog();
  }

  /** Highlights the next scored feature on the board while its points are announced. */
  nextScored() {
    const event = this.scoredQueue.shift();
    this.scoredNow = event ? { cells: event.tiles, player: event.scorers[0] ?? null } : null;
    if (event) {
      announce(scoredWords(event, (seat) => this.name(seat)));
      this.scoredTimer = setTimeout(() => {
        this.nextScored();
        this.render();
      }, SCORED_MS);
    }
  }

  renderLog() {
    const words = { name: (seat) => this.name(seat), tiles: this.tiles, kindAt: (pos, spot) => this.kindAt(pos, spot), rules: this.connection.state?.rules };
    const lines = [];
    for (const seq of [...this.entries.keys()].sort((a, b) => b - a)) {
      const events = this.entries.get(seq);
      for (let index = events.length - 1; index >= 0 && lines.length < LOG_LIMIT; index--) {
        const text = describe(events[index], words);
        if (text) lines.push(h("li", { "data-seq": seq, class: "event-" + events[index].type }, text));
      }
      if (lines.length >= LOG_LIMIT) break;
    }
    mount(this.logList, lines);
  }
}

/**
 * The point nearest to `from` in the direction of `arrow` ([dx, dy]), counting a step
 * aside twice as far as a step ahead; with `anywhere`, the nearest point when none lies
 * that way (the first press, with nothing chosen yet).
 */
export function nearestInDirection(points, from, [dx, dy], anywhere = false) {
  let best = null;
  let bestCost = Infinity;
  for (const point of points) {
    const [vx, vy] = [point.at[0] - from[0], point.at[1] - from[1]];
    const ahead = vx * dx + vy * dy;
    const aside = Math.abs(vx * dy - vy * dx);
    const cost = ahead > 0.01 ? ahead + 2 * aside : anywhere ? 1000 + Math.hypot(vx, vy) : Infinity;
    if (cost < bestCost) [best, bestCost] = [point.value, cost];
  }
  return best;
}

/** Where a point of a tile is, in words: "top", "bottom left", "middle". */
function sideWords(x, y) {
  const row = y < 35 ? "top" : y > 65 ? "bottom" : "";
  const column = x < 35 ? "left" : x > 65 ? "right" : "";
  return [row, column].filter(Boolean).join(" ") || "middle";
}

/** A selector that finds the same control again after a redraw, if it has a stable name. */
function focusKey(element) {
  for (const name of ["data-action", "data-move", "aria-label", "name"]) {
    const value = element.getAttribute(name);
    if (value) {
      const spot = name === "data-move" ? `[data-spot="${CSS.escape(element.getAttribute("data-spot") || "")}"]` : "";
      return `[${name}="${CSS.escape(value)}"]${spot}`;
    }
  }
  return null;
}
