// Ratings: each pool's leaderboard, and a player's profile (record, ratings per pool and
// rating history). Ratings are Weng-Lin: `rating` is the conservative mu - 3 sigma that
// the leaderboards order by (docs/protocol.md, "Rated games").

import { api, identity, recoverIdentity, recoveryCode } from "./api.js";
import { h, mount } from "./dom.js";

const POOLS = [
  ["two_player", "Two players"],
  ["multiplayer", "Three to six players"],
];

const poolName = (pool) => (POOLS.find(([id]) => id === pool) || [pool, pool])[1];
const one = (value) => value.toFixed(1);

export class LeaderboardView {
  constructor(root, pool) {
    this.pool = POOLS.some(([id]) => id === pool) ? pool : "two_player";
    this.rank = 0;
    this.list = h("ol", { class: "listing leaderboard", "aria-label": `Leaderboard: ${poolName(this.pool)}` });
    this.more = h("button", { type: "button", hidden: true, onclick: () => this.load() }, "More");
    const tabs = h("nav", { class: "tabs", "aria-label": "Rating pools" },
      POOLS.map(([id, label]) => h("a", { href: `#/leaderboards/${id}`, "aria-current": id === this.pool ? "page" : false }, label)));
    mount(root, h("section", { class: "history" }, h("h2", {}, "Leaderboards"), tabs,
      h("p", {}, "Players with at least 10 rated games in the pool, by rating (mu - 3 sigma)."), this.list, this.more));
    this.load();
  }

  destroy() {}

  async load() {
    const query = new URLSearchParams({ limit: "50" });
    if (this.cursor) query.set("cursor", this.cursor);
    try {
      const page = await api("GET", `/leaderboards/${this.pool}?${query}`);
      this.cursor = page.next_cursor;
      this.more.hidden = !page.next_cursor;
      const items = page.items.map((entry) => {
        this.rank += 1;
        return h("li", { value: this.rank },
          h("a", { href: `#/player/${entry.player_id}` }, entry.display_name),
          ` · ${one(entry.rating)} · ${entry.games} games`);
      });
      if (items.length) this.list.append(...items);
      else if (!this.rank) mount(this.list, h("li", {}, "Nobody is ranked in this pool yet."));
    } catch (error) {
      mount(this.list, h("li", { role: "alert" }, error.message));
    }
  }
}

export class PlayerView {
  constructor(root, id) {
    this.root = root;
    this.id = id === "me" ? identity()?.id : id;
    if (!this.id) {
      mount(root, h("section", { class: "history" }, h("h2", {}, "Your profile"),
        h("p", {}, "This browser has no player identity yet: create or join a rated lobby to get one, or bring yours from another device."),
        this.recoverForm()));
      return;
    }
    this.mine = id === "me" || id === identity()?.id;
    this.load();
  }

  /** Entering a recovery code made on another device moves that identity here. */
  recoverForm() {
    const status = h("p", { role: "status" });
    const form = h("form", { class: "recover", "aria-label": "Use a recovery code", onsubmit: async (event) => {
      event.preventDefault();
      try {
        const moved = await recoverIdentity(new FormData(form).get("code"));
        status.textContent = `This browser now plays as ${moved.display_name}.`;
        // Shows the profile it brought: the same address needs the router asked again.
        if (location.hash === "#/player/me") window.dispatchEvent(new HashChangeEvent("hashchange"));
        else location.hash = "#/player/me";
      } catch (error) {
        status.textContent = error.message;
      }
    } },
    h("label", {}, "Recovery code ", h("input", { name: "code", required: true, autocomplete: "off", spellcheck: "false" })),
    h("button", { type: "submit" }, "Use it"), status);
    return form;
  }

  /** Makes a code that moves this browser's identity to another device. */
  moveForm() {
    const shown = h("p", { role: "status" });
    const button = h("button", { type: "button", class: "move-identity", onclick: async () => {
      try {
        const issued = await recoveryCode();
        mount(shown, "Enter this code on the other device's profile page before ",
          new Date(issued.expires_at).toLocaleString(), ". It works once, and this browser then stops playing as you: ",
          h("code", { class: "recovery-code" }, issued.recovery_code));
      } catch (error) {
        shown.textContent = error.message;
      }
    } }, "Move to another device");
    return h("div", { class: "pool" }, h("h3", {}, "Your identity"), button, shown);
  }

  destroy() {}

  async load() {
    try {
      const player = await api("GET", `/players/${this.id}`);
      const histories = await Promise.all(player.ratings.map((rating) =>
        api("GET", `/players/${this.id}/ratings/${rating.pool}?limit=20`)));
      const me = identity()?.id;
      // A browser whose identity the server no longer knows still sees the profile.
      const versus = me && me !== player.id
        ? await api("GET", `/players/${me}/head-to-head/${player.id}`).catch(() => null) : null;
      mount(this.root, h("section", { class: "history profile" },
        h("h2", {}, player.display_name),
        h("p", {}, `${player.games} games · ${player.wins} wins · average score ${one(player.average_score)} · `,
          h("a", { href: `#/history?player=${player.id}` }, "matches")),
        versus ? this.headToHead(versus) : null,
        player.games ? this.points(player) : null,
        this.recent(player.recent_matches),
        this.mine ? this.moveForm() : null,
        player.ratings.length ? player.ratings.map((rating, index) => this.pool(rating, histories[index])) : h("p", {}, "No rated game yet.")));
    } catch (error) {
      mount(this.root, h("p", { role: "alert" }, error.message));
    }
  }

  /** The mean points per game from each kind of feature. */
  points(player) {
    const kinds = [["city", "Cities"], ["road", "Roads"], ["monastery", "Monasteries"], ["garden", "Gardens"], ["field", "Fields"]];
    return h("table", { class: "score-table points" },
      h("caption", {}, "Points per game by feature"),
      h("tbody", {}, kinds.map(([kind, name]) =>
        h("tr", {}, h("th", { scope: "row" }, name), h("td", {}, one(player.points[kind] / player.games))))));
  }

  recent(matches) {
    if (!matches.length) return h("p", {}, "No finished public match yet.");
    return h("div", { class: "pool" }, h("h3", {}, "Recent matches"),
      h("ul", { class: "listing", "aria-label": "Recent matches" }, matches.map((match) => {
        const seat = match.seats.find((entry) => entry.player_id === this.id);
        const result = seat ? `${seat.score} points${seat.winner ? " · won" : ""}` : "";
        return h("li", {}, h("a", { href: `#/match/${match.id}` }, match.name),
          ` · ${match.player_count} players · ${result} · ${new Date(match.finished_at).toLocaleString()}`);
      })));
  }

  /** This browser's player against the one shown. */
  headToHead(versus) {
    if (!versus.games) return h("p", { class: "versus" }, `You have not played ${versus.opponent.display_name} yet.`);
    return h("p", { class: "versus" },
      `You against ${versus.opponent.display_name}: ${versus.games} games · you won ${versus.wins}, they won ${versus.opponent_wins} · `
      + `average ${one(versus.average_score)} to ${one(versus.opponent_average_score)}`);
  }

  pool(rating, history) {
    const state = rating.provisional ? "provisional" : "ranked";
    return h("div", { class: "pool" },
      h("h3", {}, poolName(rating.pool)),
      h("p", {}, `Rating ${one(rating.rating)} (mu ${one(rating.skill.mu)}, sigma ${one(rating.skill.sigma)}) · ${rating.games} rated games · ${state}`),
      h("ul", { class: "listing", "aria-label": `Rating history: ${poolName(rating.pool)}` },
        history.items.map((entry) => {
          const change = entry.after.mu - 3 * entry.after.sigma - (entry.before.mu - 3 * entry.before.sigma);
          return h("li", {}, h("a", { href: `#/match/${entry.match_id}` }, `place ${entry.place}`),
            ` · ${change >= 0 ? "+" : ""}${one(change)} · ${new Date(entry.finished_at).toLocaleString()}`);
        })));
  }
}
