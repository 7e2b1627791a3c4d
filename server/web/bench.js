// #/bench: how long a redraw of a large board takes. Lays out a board of 144 tiles of
// every kind in the catalogue, with figures, and draws it many times; the result is
// shown and left in data-ms-per-redraw and data-ms-per-full-draw for the browser test.

import { h, mount } from "./dom.js";
import { Board } from "./board.js";

const REDRAWS = 200;

export class BenchView {
  constructor(root, tiles) {
    const board = new Board(tiles, "Benchmark board");
    const output = h("p", { id: "bench-result", role: "status" }, "measuring…");
    mount(root, h("section", { class: "game" }, h("div", { class: "board-area" }, board.element), h("aside", { class: "panel" }, output)));
    const view = layout([...tiles.values()]);
    requestAnimationFrame(() => this.measure(board, view, output));
  }

  destroy() {}

  /**
   * Two figures: a full draw of the whole board from nothing (a snapshot), and the
   * redraw after one more tile (an update), as in play from 100 tiles up to 144. Each
   * forces style and layout, so the time includes what the browser does with the DOM.
   */
  measure(board, view, output) {
    const full = time(FULL_DRAWS, () => {
      board.render({});
      board.render(view);
    });
    let size = 100;
    const update = time(UPDATES, () => {
      size = size >= view.board.length ? 100 : size + 1;
      if (size === 100) board.render({ board: view.board.slice(0, 100), figures: view.figures });
      board.render({ board: view.board.slice(0, size), figures: view.figures.filter((f) => f.index < size), targets: frontier(view.board, size) });
    });
    output.dataset.msPerRedraw = update.toFixed(3);
    output.dataset.msPerFullDraw = full.toFixed(3);
    output.dataset.tiles = view.board.length;
    output.textContent = `${view.board.length} tiles, ${view.figures.length} figures: a full draw takes ${full.toFixed(2)} ms (mean of ${FULL_DRAWS}); the redraw after a move on a board of 100 to 144 tiles, with its legal cells, ${update.toFixed(2)} ms (mean of ${UPDATES}).`;
  }
}

const FULL_DRAWS = 20;
const UPDATES = 200;

/** The mean time of `work`, in milliseconds, with style and layout forced each time. */
function time(count, work) {
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    work();
    document.querySelector("svg.board").getBoundingClientRect();
    document.querySelector("svg.board use.tile:last-child")?.getBBox();
  }
  return (performance.now() - started) / count;
}

/** A dozen empty cells beside the first `size` tiles, standing in for legal cells. */
function frontier(board, size) {
  return board.slice(size, size + 12).map(([x, y]) => ({ x, y, label: "cell", onpick() {} }));
}

/** A 12 by 12 board cycling through every tile type and rotation, a figure on every third. */
function layout(types) {
  const board = [];
  const figures = [];
  for (let i = 0; i < 144; i++) {
    const tile = types[i % types.length];
    const [x, y] = [(i % 12) - 6, Math.floor(i / 12) - 6];
    board.push([x, y, tile.id, ((i * 7) % 4) * 90]);
    if (i % 3 === 0) figures.push({ index: i, player: (i / 3) % 6, figure: i % 9 === 0 ? "big" : "follower", x, y, spot: tile.segments[0].spot });
  }
  return { board, figures };
}
