// The client's entry point: loads the tile catalogue and shows the view the address
// names (#/ home, #/play, #/game/ID, #/history, #/match/ID, #/leaderboards/POOL,
// #/player/ID or #/player/me, #/bench).

import { h, mount } from "./dom.js";
import { loadCatalogue } from "./tiles.js";
import { HomeView } from "./lobbies.js";
import { QuickPlayView } from "./queue.js";
import { GameView } from "./game.js";
import { HistoryView, MatchView } from "./history.js";
import { LeaderboardView, PlayerView } from "./ratings.js";

const main = document.getElementById("main");
let current = null;

async function route() {
  current?.destroy();
  current = null;
  const [path, query] = (location.hash.slice(1) || "/").split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean);
  let tiles;
  try {
    tiles = await loadCatalogue();
  } catch (error) {
    mount(main, h("p", { role: "alert" }, "The server cannot be reached: " + error.message));
    return;
  }
  if (parts[0] === "game" && parts[1]) current = new GameView(main, tiles, parts[1], params.get("invite"));
  else if (parts[0] === "play") current = new QuickPlayView(main);
  else if (parts[0] === "history") current = new HistoryView(main, params.get("player"));
  else if (parts[0] === "leaderboards") current = new LeaderboardView(main, parts[1]);
  else if (parts[0] === "player" && parts[1]) current = new PlayerView(main, parts[1]);
  else if (parts[0] === "match" && parts[1]) current = new MatchView(main, tiles, parts[1], params.get("at") === "end");
  else if (parts[0] === "bench") current = new (await import("./bench.js")).BenchView(main, tiles);
  else current = new HomeView(main);
  document.body.dataset.view = parts[0] || "home";
  main.focus({ preventScroll: true });
}

window.addEventListener("hashchange", route);
route();
