// The game's chat (docs/protocol.md, "Chat"): the players' and the spectators' tabs,
// unread counts, mutes, and the creator's choice of who may write. It only shows what the
// connection heard and sends what the player writes: the server decides who may write,
// what is stored and who hears it.

import { playerName } from "./api.js";
import { h, mount } from "./dom.js";

const CHAT_ROOMS = ["players", "spectators"];
const ROOM_NAMES = { players: "Players", spectators: "Spectators" };
/** Messages drawn per tab: the newest; older ones stay in memory (and over REST). */
const CHAT_SHOWN = 200;
const POLICY_WORDS = {
  all: "players and spectators may write",
  players: "only the players may write",
  off: "the chat is off: nobody may write",
};
const POLICY_CHOICES = [["all", "Players and spectators"], ["players", "Players only"], ["off", "Nobody (chat off)"]];
/** What a refused `say` means, in a short line beside the input. */
const CHAT_ERROR_WORDS = {
  chat_rate_limited: "Too fast: wait a moment, then send again.",
  chat_closed: "The chat is closed to you now.",
  bad_chat_text: "That message cannot be sent: it is empty, too long, or holds invisible characters.",
  spectator_unknown: "Spectators need a player name to write here.",
};

/** Whether two chat authors (`{seat}` or `{player}`) are the same. */
function sameAuthor(a, b) {
  return !!a && !!b && (a.seat ?? null) === (b.seat ?? null) && (a.player ?? null) === (b.player ?? null);
}

/**
 * The game's chat (docs/protocol.md, "Chat"): for a seated player a players' tab and a
 * spectators' tab, for a spectator the spectators' alone; unread counts per tab, a mute
 * per author, the creator's choice of who may write. Its element is built once and kept
 * across redraws of the game, so that what is being typed, and the focus, survive every
 * update. Entries are kept by `chat_seq`, so a catch-up that repeats some adds nothing.
 */
export class ChatPanel {
  /** `actions`: `connection()` the current connection, `register(name)` a player identity. */
  constructor(gameId, actions) {
    this.gameId = gameId;
    this.actions = actions;
    this.entries = new Map();
    this.tab = "players";
    this.open = true;
    this.error = null;
    this.pending = null;
    this.read = readMarks(gameId);
    this.build();
  }

  build() {
    this.toggleBadge = h("span", { class: "badge", hidden: true });
    this.toggle = h("button", { type: "button", class: "chat-toggle", "aria-expanded": "true", "aria-controls": "chat-body", "data-action": "chat-toggle", onclick: () => this.setOpen(!this.open) },
      h("span", {}, "Chat"), this.toggleBadge);
    this.tabButtons = Object.fromEntries(CHAT_ROOMS.map((room) => [room, h("button", {
      type: "button", role: "tab", id: "chat-tab-" + room, "aria-controls": "chat-log", "data-room": room, onclick: () => this.show(room),
    })]));
    this.tabs = h("div", { class: "chat-tabs", role: "tablist", "aria-label": "Chats", onkeydown: (event) => this.tabKey(event) }, Object.values(this.tabButtons));
    // The tab panel scrolls (so it takes the focus, for the keyboard); the list inside it keeps its list role.
    this.lines = h("ul", { class: "chat-lines" });
    this.log = h("div", { id: "chat-log", class: "chat-log", role: "tabpanel", tabindex: "0" }, this.lines);
    this.select = h("select", { id: "chat-policy", "data-action": "chat-policy", onchange: () => this.actions.connection().setChatPolicy(this.select.value) },
      POLICY_CHOICES.map(([value, words]) => h("option", { value }, words)));
    this.creator = h("div", { class: "chat-creator", hidden: true }, h("label", { for: "chat-policy" }, "Who may write"), this.select);
    this.hint = h("p", { id: "chat-hint", class: "chat-hint" });
    this.inputLabel = h("label", { for: "chat-input", class: "visually-hidden" }, "Message");
    this.input = h("input", { id: "chat-input", name: "chat", maxlength: 500, autocomplete: "off", "aria-describedby": "chat-hint chat-error", oninput: () => this.clearError() });
    this.sendButton = h("button", { type: "submit", "data-action": "chat-send" }, "Send");
    this.form = h("form", { class: "chat-form", onsubmit: (event) => { event.preventDefault(); this.send(); } }, this.inputLabel, this.input, this.sendButton);
    this.errorLine = h("p", { id: "chat-error", class: "chat-error", role: "status" });
    this.nameInput = h("input", { id: "chat-name", name: "chat_name", required: true, maxlength: 64, value: playerName() });
    this.registerForm = h("form", { class: "chat-register", hidden: true, onsubmit: (event) => { event.preventDefault(); this.register(); } },
      h("label", { for: "chat-name" }, "Your name"), this.nameInput,
      h("button", { type: "submit", "data-action": "chat-register" }, "Register to chat"));
    this.live = h("div", { class: "visually-hidden", "aria-live": "polite" });
    this.body = h("div", { id: "chat-body", class: "chat-body" }, this.tabs, this.log, this.creator, this.hint, this.form, this.errorLine, this.registerForm);
    this.element = h("section", { class: "chat", "aria-labelledby": "chat-heading", hidden: true },
      h("h3", { id: "chat-heading" }, this.toggle), this.body, this.live);
  }

  /** The highest `chat_seq` held: where a new connection resumes. */
  highest() {
    return this.entries.size ? Math.max(...this.entries.keys()) : null;
  }

  /** One `chat` frame: a new entry, or one we hold already (a repeat of a catch-up). */
  receive(frame) {
    const held = this.entries.get(frame.chat_seq);
    // A message deleted while we were away comes back as `deleted`: that one replaces it.
    if (held && !(frame.entry.kind === "deleted" && held.entry.kind === "message")) return;
    const entry = frame.entry;
    if (entry.kind === "deletion") {
      const target = this.entries.get(entry.deletes);
      if (target?.entry.kind === "message") target.entry = { kind: "deleted", room: target.entry.room, author: target.entry.author, name: target.entry.name };
    }
    this.entries.set(frame.chat_seq, frame);
    if (entry.kind === "message" && this.mine(entry.author)) this.pending = null;
    else if (entry.kind === "message" && !held && this.visible(entry.room)) this.live.textContent = `${entry.name}: ${entry.text}`;
    this.render();
  }

  showError(error) {
    this.error = CHAT_ERROR_WORDS[error.code] || error.message;
    // The refused text comes back into the input, unless something new is typed there.
    if (this.pending !== null && !this.input.value) this.input.value = this.pending;
    this.pending = null;
    this.render();
  }

  clearError() {
    if (!this.error) return;
    this.error = null;
    this.errorLine.textContent = "";
  }

  send() {
    const text = this.input.value.trim();
    if (!text || this.input.disabled) return;
    this.pending = this.input.value;
    this.error = null;
    this.actions.connection().say(text);
    this.input.value = "";
    this.render();
  }

  async register() {
    const name = this.nameInput.value.trim();
    if (!name) return;
    try {
      await this.actions.register(name);
      this.error = null;
    } catch (error) {
      this.error = error.message;
    }
    this.render();
  }

  setOpen(open) {
    this.open = open;
    this.render();
  }

  show(room) {
    this.tab = room;
    this.render();
  }

  /** Arrow keys move between the tabs, as a tab list does. */
  tabKey(event) {
    const rooms = this.rooms();
    if (!["ArrowLeft", "ArrowRight", "Home", "End"].includes(event.key) || rooms.length < 2) return;
    const index = rooms.indexOf(this.tab);
    const next = event.key === "Home" ? 0 : event.key === "End" ? rooms.length - 1 : (index + (event.key === "ArrowRight" ? 1 : -1) + rooms.length) % rooms.length;
    this.show(rooms[next]);
    this.tabButtons[rooms[next]].focus();
    event.preventDefault();
    event.stopPropagation();
  }

  /** The rooms this connection reads: both for a seat, the spectators' for a watcher. */
  rooms() {
    return this.actions.connection().role === "player" ? CHAT_ROOMS : ["spectators"];
  }

  mine(author) {
    const c = this.actions.connection();
    return c.role === "player" ? author?.seat === c.seat : !!c.identity && author?.player === c.identity.id;
  }

  /** Whether a new entry of `room` is in front of the reader now. */
  visible(room) {
    return this.open && this.tab === room && !this.element.hidden;
  }

  /** Entries of `room` in order, policy changes (everyone's) among them. */
  entriesOf(room) {
    return [...this.entries.values()].filter(({ entry }) => entry.kind === "policy" || entry.room === room).sort((a, b) => a.chat_seq - b.chat_seq);
  }

  unread(room) {
    return this.entriesOf(room).filter(({ chat_seq, entry }) => entry.kind === "message" && chat_seq > (this.read[room] ?? 0) && !this.mine(entry.author)).length;
  }

  /** Everything of `room` up to now has been seen: kept per game, so a reload agrees. */
  markRead(room) {
    const last = this.entriesOf(room).at(-1)?.chat_seq ?? 0;
    if (last <= (this.read[room] ?? 0)) return;
    this.read[room] = last;
    try {
      localStorage.setItem("chat-read:" + this.gameId, JSON.stringify(this.read));
    } catch {
      // A full or forbidden storage only costs the counts after a reload.
    }
  }

  render() {
    const c = this.actions.connection();
    const status = c.state?.status;
    // Chat opens when the game starts and closes with it; a finished game keeps its history.
    this.element.hidden = !(status === "playing" || (status === "finished" && this.entries.size > 0));
    if (this.element.hidden) return;
    const rooms = this.rooms();
    if (!rooms.includes(this.tab)) this.tab = rooms[0];
    // A seat lost (a stale token): the players' chat is no longer this reader's.
    if (c.role === "spectator") for (const [seq, { entry }] of this.entries) if (entry.room === "players") this.entries.delete(seq);
    if (this.open) this.markRead(this.tab);
    this.renderHead(rooms);
    this.renderLog(c);
    this.renderInput(c);
  }

  renderHead(rooms) {
    this.toggle.setAttribute("aria-expanded", String(this.open));
    this.body.hidden = !this.open;
    const waiting = rooms.reduce((sum, room) => sum + this.unread(room), 0);
    setBadge(this.toggleBadge, this.open ? 0 : waiting);
    for (const room of CHAT_ROOMS) {
      const button = this.tabButtons[room];
      const selected = room === this.tab;
      button.hidden = !rooms.includes(room);
      button.setAttribute("aria-selected", String(selected));
      button.tabIndex = selected ? 0 : -1;
      const count = selected ? 0 : this.unread(room);
      const badge = count ? h("span", { class: "badge", "data-unread": count }, String(count), h("span", { class: "visually-hidden" }, " unread")) : "";
      button.replaceChildren(ROOM_NAMES[room], badge);
    }
    this.log.setAttribute("aria-labelledby", "chat-tab-" + this.tab);
  }

  renderLog(c) {
    const atBottom = this.log.scrollTop + this.log.clientHeight >= this.log.scrollHeight - 4;
    const focused = this.log.contains(document.activeElement) ? document.activeElement.dataset.chatSeq : null;
    const shown = this.entriesOf(this.tab).filter(({ entry }) => entry.kind !== "deletion" || !this.entries.has(entry.deletes)).slice(-CHAT_SHOWN);
    mount(this.lines, shown.length ? shown.map((frame) => this.line(c, frame)) : h("li", { class: "chat-system" }, "No messages yet."));
    if (focused) this.log.querySelector(`button[data-chat-seq="${focused}"]`)?.focus({ preventScroll: true });
    if (atBottom) this.log.scrollTop = this.log.scrollHeight;
  }

  /** One entry: author and text (always as text, never as markup), with its mute button. */
  line(c, { chat_seq: seq, entry }) {
    if (entry.kind === "policy") return h("li", { class: "chat-system", "data-chat-seq": seq }, `Chat: ${POLICY_WORDS[entry.chat] || entry.chat}.`);
    if (entry.kind === "deletion") return h("li", { class: "chat-deleted", "data-chat-seq": seq }, h("span", { class: "chat-text" }, "message deleted"));
    const mine = this.mine(entry.author);
    const muted = c.mutes.some((author) => sameAuthor(author, entry.author));
    const mute = c.role === "player" && !mine
      ? h("button", { type: "button", class: "chat-mute", "data-chat-seq": seq, "data-action": muted ? "unmute" : "mute", "aria-label": `${muted ? "Unmute" : "Mute"} ${entry.name}`, onclick: () => c.mute(entry.author, !muted) }, muted ? "Unmute" : "Mute")
      : null;
    const kind = entry.kind === "deleted" ? "chat-deleted" : "chat-message";
    return h("li", { class: kind + (muted ? " muted" : ""), "data-chat-seq": seq },
      h("span", { class: "chat-author" }, entry.name + (mine ? " (you)" : "")),
      h("span", { class: "chat-text" }, entry.kind === "deleted" ? "message deleted" : entry.text),
      mute);
  }

  renderInput(c) {
    const player = c.role === "player";
    const mySeat = player ? c.state.seats.find((seat) => seat.seat === c.seat) : null;
    this.creator.hidden = !(mySeat?.creator && c.state.status === "playing");
    if (c.chatPolicy && document.activeElement !== this.select) this.select.value = c.chatPolicy;
    const reason = this.blocked(c);
    this.input.disabled = !!reason;
    this.sendButton.disabled = !!reason;
    this.inputLabel.textContent = player ? "Message to the players" : "Message to the spectators";
    this.hint.textContent = reason || (c.chatPolicy ? `Who may write now: ${POLICY_WORDS[c.chatPolicy]}.` : "");
    this.registerForm.hidden = !(c.role === "spectator" && !c.identity && ["playing", "finished"].includes(c.state.status) && c.chatPolicy === "all");
    this.errorLine.textContent = this.error || "";
  }

  /** Why this reader cannot write in the tab shown, or null when they can. */
  blocked(c) {
    const player = c.role === "player";
    const status = c.state.status;
    if (status === "open") return "The chat opens when the game starts.";
    // A finished game's room stays a while for "good game" and a rematch; the chat
    // closes with it (the client does not reconnect to a finished game).
    if (status !== "playing" && status !== "finished") return "The game is over: the chat is closed.";
    if (!c.online) return status === "finished" ? "The game's room has closed, and its chat with it." : "Not connected: the chat comes back with the connection.";
    if (player && this.tab === "spectators") return "This is the spectators' chat: players write in the Players tab.";
    if (c.chatPolicy === "off") return "The chat is off: nobody may write.";
    if (!player && c.chatPolicy === "players") return "Only the players may write now.";
    if (!player && !c.identity) return "Spectators need a player name to write: register one below.";
    return null;
  }
}

/** The last entry read per room of `gameId`, as this browser last saw it. */
function readMarks(gameId) {
  try {
    return JSON.parse(localStorage.getItem("chat-read:" + gameId)) || {};
  } catch {
    return {};
  }
}

function setBadge(badge, count) {
  badge.hidden = !count;
  badge.textContent = count ? `${count} new` : "";
}
