// The home screen: open lobbies to join, live games to watch, and the form that creates
// a lobby with every expansion, house rule and time control the server offers.

import { api, holdSeat, rememberInvite, playerName, rememberName, ensureIdentity, seatedAs } from "./api.js";
import { h, mount, announce } from "./dom.js";
import { rulesText } from "./words.js";

const EXPANSIONS = [
  ["river", "The River"],
  ["abbot", "Abbot (and gardens)"],
  ["inns_and_cathedrals", "Inns & Cathedrals"],
  ["festival", "The Festival"],
];

export class HomeView {
  constructor(root) {
    this.root = root;
    this.lobbies = h("ul", { class: "listing", "aria-label": "Open lobbies" });
    this.games = h("ul", { class: "listing", "aria-label": "Games in play" });
    mount(root, h("section", { class: "home" },
      h("div", { class: "column" }, h("h2", {}, "Create a lobby"), this.createForm()),
      h("div", { class: "column" },
        h("h2", {}, "Open lobbies"), this.lobbies,
        h("h2", {}, "Games to watch"), this.games)));
    this.refresh();
    this.timer = setInterval(() => this.refresh(), 5000);
  }

  destroy() {
    clearInterval(this.timer);
  }

  async refresh() {
    try {
      const [lobbies, games] = await Promise.all([api("GET", "/lobbies?per_page=50"), api("GET", "/games?per_page=50")]);
      mount(this.lobbies, lobbies.items.length ? lobbies.items.map((lobby) => this.entry(lobby, "Join or watch")) : h("li", {}, "No open lobby: create one."));
      mount(this.games, games.items.length ? games.items.map((game) => this.entry(game, "Watch")) : h("li", {}, "No game in play."));
    } catch (error) {
      announce(error.message);
    }
  }

  entry(lobby, action) {
    const names = lobby.seats.map((seat) => seat.display_name ?? seat.name).join(", ");
    return h("li", {},
      h("a", { href: `#/game/${lobby.id}`, "aria-label": `${action}: ${lobby.name}` }, lobby.name),
      ` · ${lobby.seats.length}/${lobby.seat_count} · ${names} · ${lobby.rated ? "rated · " : ""}${rulesText(lobby.rules)}`);
  }

  createForm() {
    const form = h("form", { class: "create", "aria-label": "Create a lobby", onsubmit: (event) => { event.preventDefault(); this.create(form); } },
      field("Your name", h("input", { name: "display_name", value: playerName(), required: true, maxlength: 64 })),
      field("Lobby name", h("input", { name: "name", value: "Friendly game", required: true, maxlength: 64 })),
      field("Seats", number("seats", 2, 2, 6)),
      expansionsFieldset(),
      h("fieldset", {}, h("legend", {}, "House rules"),
        h("label", { class: "check" }, h("input", { type: "checkbox", name: "farmers", checked: true }), "Farmers"),
        field("Points per city for a farm", number("farmer_city_points", 3, 1, 10)),
        field("Tile limit (empty: all tiles)", h("input", { type: "number", name: "tile_limit", min: 1, max: 200 }))),
      clockFieldset(),
      h("label", { class: "check" }, h("input", { type: "checkbox", name: "public", checked: true }), "Public (listed, open to spectators)"),
      h("label", { class: "check" }, h("input", { type: "checkbox", name: "rated" }), "Rated (registered players only, no bots)"),
      h("button", { type: "submit", class: "primary", "data-action": "create" }, "Create lobby"),
      h("p", { class: "notice", role: "alert" }));
    return form;
  }

  async create(form) {
    const data = new FormData(form);
    const displayName = data.get("display_name").trim();
    const rated = data.get("rated") === "on";
    try {
      rememberName(displayName);
      if (rated) await ensureIdentity(displayName);
      const body = {
        name: data.get("name").trim(),
        seats: Number(data.get("seats")),
        public: data.get("public") === "on",
        rated,
        rules: rulesOf(data),
        clock: clockOf(data),
        ...seatedAs(displayName),
      };
      const granted = await api("POST", "/lobbies", { body });
      holdSeat(granted.lobby.id, { token: granted.seat_token, seat: granted.seat });
      rememberInvite(granted.lobby.id, granted.invite_code);
      location.hash = `#/game/${granted.lobby.id}`;
    } catch (error) {
      form.querySelector(".notice").textContent = error.message;
    }
  }
}

// The form's pieces that the lobby and quick play (queue.js) share.

export function field(label, input) {
  return h("label", {}, h("span", {}, label), input);
}

export function number(name, value, min, max) {
  return h("input", { type: "number", name, value, min, max });
}

export function expansionsFieldset() {
  return h("fieldset", {}, h("legend", {}, "Expansions"),
    EXPANSIONS.map(([value, label]) => h("label", { class: "check" }, h("input", { type: "checkbox", name: "expansion", value }), label)));
}

export function clockFieldset() {
  return h("fieldset", {}, h("legend", {}, "Time control"),
    field("Clock", h("select", { name: "clock" },
      h("option", { value: "none" }, "None"),
      h("option", { value: "turn" }, "Per turn, with a reserve"),
      h("option", { value: "correspondence" }, "Correspondence"))),
    field("Seconds per turn (or hours, by correspondence)", number("per_turn", 60, 1, 3600)),
    field("Reserve, seconds", number("reserve", 300, 0, 86400)));
}

function rulesOf(data) {
  const rules = { expansions: data.getAll("expansion"), farmers: data.get("farmers") === "on" };
  const points = Number(data.get("farmer_city_points"));
  if (points && points !== 3) rules.farmer_city_points = points;
  const limit = data.get("tile_limit");
  if (limit) rules.tile_limit = Number(limit);
  return rules;
}

export function clockOf(data) {
  const type = data.get("clock");
  const perTurn = Number(data.get("per_turn"));
  if (type === "turn") return { type, per_turn_ms: perTurn * 1000, reserve_ms: Number(data.get("reserve")) * 1000 };
  if (type === "correspondence") return { type, per_turn_ms: perTurn * 3600 * 1000 };
  return { type: "none" };
}
