// Quick play (#/play): the player says what game they want, the server finds it, and the
// view follows the ticket's event stream until it is matched (then opens the game),
// cancelled or expired.

import { api, readEvents, holdSeat, playerName, rememberName, ensureIdentity, heldTicket, holdTicket, dropTicket } from "./api.js";
import { h, mount } from "./dom.js";
import { clockText } from "./words.js";
import { field, number, expansionsFieldset, clockFieldset, clockOf } from "./lobbies.js";

/** How long to wait before watching the ticket again after the stream broke off. */
const RETRY_MS = 3000;

/** What to tell the player when the server refuses a ticket, by error code. */
const QUEUE_REFUSALS = {
  already_queued: "You are already waiting for a game, in another tab or on another device: cancel that request there first.",
  queue_full: "Too many players are waiting just now: try again in a minute.",
  bad_player_secret: "The server does not know this browser's player identity any more, so it cannot queue you.",
};

export class QuickPlayView {
  constructor(root) {
    this.form = this.queueForm();
    this.notice = this.form.querySelector(".notice");
    // The status says what is happening, once per change; the timer below it changes
    // every second and is not announced (a timer is not a live region).
    this.status = h("p", { class: "queue-status", role: "status" });
    this.waited = h("p", { class: "waited", role: "timer", hidden: true });
    this.cancelButton = h("button", { type: "button", "data-action": "cancel-queue", hidden: true, onclick: () => this.cancel() }, "Cancel");
    mount(root, h("section", { class: "home" }, h("div", { class: "column" },
      h("h2", {}, "Quick play"),
      h("p", {}, "Say what game you want and the server seats you with other players who want the same. Players of a similar rating are found first. An unrated game that waits too long is filled with bots; a rated one waits for people."),
      this.form, this.status, this.waited, this.cancelButton)));
    this.ticker = setInterval(() => this.tick(), 1000);
    // Each stream followed has a number; events and retries of an older one are ignored.
    this.run = 0;
    const held = heldTicket();
    if (held) this.watch(held);
  }

  destroy() {
    this.run += 1;
    this.abort?.abort();
    clearInterval(this.ticker);
    clearTimeout(this.retry);
  }

  queueForm() {
    const form = h("form", { class: "queue", "aria-label": "Find a game",
      onsubmit: (event) => { event.preventDefault(); this.find(form); },
      onchange: () => limitPlayers(form) },
      field("Your name", h("input", { name: "display_name", value: playerName(), required: true, maxlength: 32 })),
      h("fieldset", {}, h("legend", {}, "Players"),
        field("At least", number("min_players", 2, 2, 5)),
        field("At most", number("max_players", 4, 2, 5))),
      expansionsFieldset(),
      clockFieldset(),
      h("label", { class: "check" }, h("input", { type: "checkbox", name: "rated" }), "Rated (other registered players only, never bots)"),
      h("button", { type: "submit", class: "primary", "data-action": "find-game" }, "Find a game"),
      h("p", { class: "notice", role: "alert" }));
    return form;
  }

  async find(form) {
    const data = new FormData(form);
    const displayName = data.get("display_name").trim();
    const players = { min: Number(data.get("min_players")), max: Number(data.get("max_players")) };
    if (players.min > players.max) {
      this.notice.textContent = "At least cannot be more than at most.";
      return;
    }
    this.notice.textContent = "";
    this.lock(true);
    try {
      rememberName(displayName);
      // Quick play takes registered players only: their rating decides who they meet.
      const me = await ensureIdentity(displayName);
      const created = await api("POST", "/queue", { body: {
        player_id: me.id,
        player_secret: me.secret,
        display_name: displayName,
        players,
        rules: { expansions: data.getAll("expansion") },
        clock: clockOf(data),
        rated: data.get("rated") === "on",
      } });
      const ticket = { id: created.ticket.id, token: created.ticket_token };
      holdTicket(ticket);
      this.watch(ticket, created.ticket);
    } catch (error) {
      this.lock(false);
      this.notice.textContent = QUEUE_REFUSALS[error.code] || error.message;
    }
  }

  /** Shows the wait for `ticket` and follows its events until the wait is over. */
  watch(ticket, view) {
    this.ticket = ticket;
    this.view = view || null;
    this.lock(true);
    this.cancelButton.hidden = false;
    this.waited.hidden = false;
    this.cancelButton.focus();
    this.say("Looking for a game…");
    this.tick();
    this.follow(ticket);
  }

  async follow(ticket) {
    const run = ++this.run;
    this.abort = new AbortController();
    let ended = false;
    const onEvent = (name, data) => {
      if (run === this.run) ended = this.onEvent(name, JSON.parse(data)) || ended;
    };
    try {
      await readEvents(`/queue/${ticket.id}/events`, { token: ticket.token, signal: this.abort.signal, onEvent });
    } catch (error) {
      if (run !== this.run) return;
      // The ticket is gone (a wrong token reads as not found too): nothing to watch.
      if (error.status === 404) return this.stopped("This request for a game is no longer known to the server.");
      if (error.status >= 400 && error.status < 500 && error.status !== 429) return this.stopped(error.message);
    }
    // The stream broke off while the ticket waited: the server restarted, or the network
    // dropped. The ticket still waits on the server, so follow it again.
    if (!ended && run === this.run) {
      this.say("The connection to the server was lost: trying again…");
      this.retry = setTimeout(() => run === this.run && this.follow(ticket), RETRY_MS);
    }
  }

  /** Handles one event of the ticket's stream; true once it ends the wait. */
  onEvent(name, data) {
    if (name === "waiting") {
      this.view = data;
      this.say("Looking for a game…");
      this.tick();
      return false;
    }
    if (name === "matched") {
      // The seat is the player's like one joined in a lobby: the game view takes it.
      holdSeat(data.lobby_id, { token: data.seat_token, seat: data.seat });
      dropTicket();
      this.run += 1;
      this.say("A game was found: opening it.");
      location.hash = `#/game/${data.lobby_id}`;
      return true;
    }
    const endings = {
      cancelled: "The request was cancelled.",
      expired: "No game was found in time: the request expired. Try again, perhaps with a wider range of players.",
      error: "The game could not be opened: " + (data?.error?.message || "an error") + ".",
    };
    if (!(name in endings)) return false;
    this.stopped(endings[name]);
    return true;
  }

  async cancel() {
    const ticket = this.ticket;
    if (!ticket) return;
    this.cancelButton.disabled = true;
    try {
      await api("DELETE", `/queue/${ticket.id}`, { token: ticket.token });
      if (ticket === this.ticket) this.stopped("The request was cancelled.");
    } catch (error) {
      // Too late: the ticket was matched (or expired) meanwhile, and its stream says so.
      if (error.code === "ticket_not_waiting") this.say("Too late to cancel: " + error.message);
      else if (error.status === 404) this.stopped("This request for a game is no longer known to the server.");
      else this.say("Cancelling failed: " + error.message);
    } finally {
      this.cancelButton.disabled = false;
    }
  }

  /** The wait is over without a game: says why and gives the form back. */
  stopped(text) {
    this.run += 1;
    this.abort?.abort();
    clearTimeout(this.retry);
    dropTicket();
    this.ticket = null;
    this.view = null;
    const hadFocus = this.cancelButton.contains(document.activeElement);
    this.cancelButton.hidden = true;
    this.waited.hidden = true;
    this.lock(false);
    if (hadFocus) this.form.querySelector("button[type=submit]").focus();
    this.say(text);
  }

  say(text) {
    if (this.status.textContent !== text) this.status.textContent = text;
  }

  /** The time waited, counted from the ticket's creation, and the latest rating window. */
  tick() {
    if (!this.ticket || !this.view) return;
    const waited = Math.max(0, Date.now() - Date.parse(this.view.created_at));
    const range = this.view.window == null ? "" : ` · rating window ±${this.view.window.toFixed(1)}, wider the longer you wait`;
    this.waited.textContent = `Waited ${clockText(waited)}${range}.`;
  }

  /** Disables the form while a request is on its way or waiting. */
  lock(locked) {
    for (const control of this.form.elements) control.disabled = locked;
  }
}

/** Inns & Cathedrals brings a sixth colour; other games take at most five players. */
function limitPlayers(form) {
  const most = form.querySelector("input[name=expansion][value=inns_and_cathedrals]").checked ? 6 : 5;
  for (const name of ["min_players", "max_players"]) {
    const input = form.elements[name];
    input.max = most;
    if (Number(input.value) > most) input.value = most;
  }
}
