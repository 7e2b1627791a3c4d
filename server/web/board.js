// The board: placed tiles, figures, the legal cells to place on and the legal figure
// spots, in one SVG that pans (drag) and zooms (wheel, pinch, buttons). It draws only
// what it is given; which cells and spots are legal always comes from the server.

import { h, s, SEAT_COLOURS } from "./dom.js";
import { figureShape, spotKind, spotPoints, rotatePoint, tileDefs, tileUse } from "./tiles.js";

const MIN_SPAN = 250;
const MAX_SPAN = 6000;
/** The view of the figure step: one tile and a little of its neighbours. */
const FOCUS_SPAN = 150;
/** The smallest target a finger can hit, in CSS pixels (WCAG 2.5.5). */
const TOUCH_TARGET_PX = 44;

/** Puts the tile symbols in the page once; every board refers to them. */
function ensureDefs(tiles) {
  if (document.getElementById("tile-defs")) return;
  const holder = s("svg", { id: "tile-defs", width: 0, height: 0, "aria-hidden": "true", class: "defs" }, tileDefs(tiles));
  document.body.append(holder);
}

export class Board {
  constructor(tiles, label) {
    ensureDefs(tiles);
    this.tiles = tiles;
    this.view = { x: 50, y: 50, span: 700 };
    this.tileLayer = s("g", { class: "tiles" });
    this.previewLayer = s("g", { class: "preview" });
    this.figureLayer = s("g", { class: "figures" });
    this.markLayer = s("g", { class: "marks" });
    this.targetLayer = s("g", { class: "targets" });
    this.focused = null;
    this.svg = s("svg", { class: "board", role: "group", "aria-label": label, tabindex: "-1" },
      this.tileLayer, this.previewLayer, this.markLayer, this.figureLayer, this.targetLayer);
    this.element = h("div", { class: "board-wrap" }, this.svg, this.zoomControls());
    this.listenForPanAndZoom();
    this.applyView();
  }

  zoomControls() {
    const button = (text, label, action) => h("button", { type: "button", "aria-label": label, title: label, onclick: action }, text);
    return h("div", { class: "zoom" },
      button("+", "Zoom in", () => this.zoomBy(0.8)),
      button("−", "Zoom out", () => this.zoomBy(1.25)),
      button("⤢", "Fit the board", () => {
        this.steered = false;
        this.fit();
      }));
  }

  /**
   * Draws the board. `state` is `{board, figures, targets, preview, spots, last, scored,
   * focus}`: `last` the last move `{x, y, player, figure}` to highlight, `scored` the cells
   * of features being scored `[{cells, player}]`, `focus` the cell `{x, y}` of the figure
   * step, which the view zooms to.
   */
  render({ board = [], figures = [], targets = [], preview = null, spots = [], last = null, scored = [], focus = null }) {
    this.cells = new Map(board.map(([x, y, id, rotation]) => [x + "," + y, [id, rotation]]));
    this.bounds = this.boundsOf(board, targets);
    this.renderTiles(board);
    this.previewLayer.replaceChildren(...(preview ? [tileUse(preview.id, preview.x, preview.y, preview.rotation, { class: "tile preview" })] : []));
    this.markLayer.replaceChildren(...scored.map((feature) => this.scoredMark(feature)), ...(last ? [this.lastMark(last)] : []));
    this.figureLayer.replaceChildren(...figures.map((figure) => this.figure(figure, last)));
    this.focusOn(focus);
    this.targetLayer.replaceChildren(...targets.map((target) => this.target(target)), ...spots.map((spot) => this.spot(spot)));
    // Until the viewer pans or zooms, the view follows the board as it grows.
    if (!this.steered && !this.focused && board.length) this.fit();
  }

  /** Zooms to the cell of the figure step once; back to the whole board when it ends. */
  focusOn(focus) {
    const key = focus ? focus.x + "," + focus.y : null;
    if (key === this.focused) return;
    if (!this.focused) this.beforeFocus = { ...this.view };
    this.focused = key;
    if (focus) this.view = { x: focus.x * 100 + 50, y: focus.y * 100 + 50, span: FOCUS_SPAN };
    else if (this.steered && this.beforeFocus) this.view = this.beforeFocus;
    this.applyView();
  }

  /** The last move's tile, outlined in the colour of the seat that placed it. */
  lastMark({ x, y, player }) {
    return s("rect", {
      x: x * 100 + 2, y: y * 100 + 2, width: 96, height: 96, rx: 4,
      class: "last-move", stroke: SEAT_COLOURS[player % SEAT_COLOURS.length], "data-last": x + "," + y,
    });
  }

  /** The cells of a feature whose points are being announced, washed in the scorer's colour. */
  scoredMark({ cells, player }) {
    const colour = player === null || player === undefined ? "#ffffff" : SEAT_COLOURS[player % SEAT_COLOURS.length];
    return s("g", { class: "scored", fill: colour, stroke: colour },
      cells.map(({ x, y }) => s("rect", { x: x * 100 + 6, y: y * 100 + 6, width: 88, height: 88, rx: 6 })));
  }

  /**
   * Keeps the tiles already drawn and adds only the new ones: the board only grows, in
   * the order placed, so a move's redraw touches one element instead of every tile.
   */
  renderTiles(board) {
    const drawn = this.tileLayer.children;
    let same = 0;
    while (same < drawn.length && same < board.length && drawn[same].dataset.key === board[same].join()) same++;
    while (drawn.length > same) drawn[drawn.length - 1].remove();
    for (const [x, y, id, rotation] of board.slice(same)) {
      this.tileLayer.append(tileUse(id, x, y, rotation, { "data-key": [x, y, id, rotation].join() }));
    }
  }

  boundsOf(board, targets) {
    const xs = [...board.map((t) => t[0]), ...targets.map((t) => t.x)];
    const ys = [...board.map((t) => t[1]), ...targets.map((t) => t.y)];
    if (!xs.length) return { minX: 0, maxX: 0, minY: 0, maxY: 0 };
    return { minX: Math.min(...xs), maxX: Math.max(...xs), minY: Math.min(...ys), maxY: Math.max(...ys) };
  }

  /** Where a spot of the tile at (x, y) is, in board units; `known` is `[id, rotation]` if known. */
  spotAt(x, y, spot, known) {
    const [id, rotation] = known || this.cells.get(x + "," + y) || [];
    const tile = this.tiles.get(id);
    const point = tile && spotPoints(tile)[spot];
    const [px, py] = point ? rotatePoint(point, rotation) : [50, 50];
    return [x * 100 + px, y * 100 + py];
  }

  figure({ player, figure, x, y, spot, label }, last) {
    const [id] = this.cells.get(x + "," + y) || [];
    const lying = spotKind(this.tiles.get(id), spot) === "field";
    const shape = figureShape(figure, SEAT_COLOURS[player % SEAT_COLOURS.length], this.spotAt(x, y, spot), label || `${figure} of seat ${player + 1}`, { lying });
    const fresh = last?.figure && last.figure.x === x && last.figure.y === y && last.figure.spot === spot;
    if (fresh) shape.classList.add("last-figure");
    return shape;
  }

  target({ x, y, label, selected, onpick }) {
    return s("rect", {
      x: x * 100 + 4, y: y * 100 + 4, width: 92, height: 92, rx: 8,
      class: selected ? "target selected" : "target", tabindex: "0", role: "button",
      "aria-label": label, "aria-pressed": selected ? "true" : "false", "data-cell": x + "," + y,
      onclick: (event) => !this.dragged && onpick(event),
      onkeydown: (event) => (event.key === "Enter" || event.key === " ") && (event.preventDefault(), onpick(event)),
    });
  }

  /**
   * A figure spot: a dot to see, inside a transparent circle that is a finger's width
   * on screen whatever the zoom, so that it can be hit on a phone.
   */
  spot({ x, y, spot, label, onpick, kind = "spot", chosen = false }) {
    const [cx, cy] = this.spotAt(x, y, spot);
    const { reach, dot } = this.spotRadii();
    return s("g", {
      class: kind + (chosen ? " chosen" : ""), tabindex: "0", role: "button", "aria-label": label, "aria-pressed": chosen ? "true" : "false",
      "data-spot": spot, "data-cell": x + "," + y,
      onclick: (event) => !this.dragged && onpick(event),
      onkeydown: (event) => (event.key === "Enter" || event.key === " ") && (event.preventDefault(), onpick(event)),
    }, s("title", { text: label }), s("circle", { cx, cy, r: reach, class: "spot-reach" }), s("circle", { cx, cy, r: dot, class: "spot-dot" }));
  }


  /** Shows the whole board and every target. */
  fit() {
    const { minX, maxX, minY, maxY } = this.bounds || { minX: 0, maxX: 0, minY: 0, maxY: 0 };
    this.view = {
      x: ((minX + maxX + 1) / 2) * 100,
      y: ((minY + maxY + 1) / 2) * 100,
      span: Math.min(MAX_SPAN, Math.max(MIN_SPAN * 2, (Math.max(maxX - minX, maxY - minY) + 2) * 100)),
    };
    this.applyView();
  }

  /** Keeps cell (x, y) in sight, moving the view only when it is out of it. */
  reveal(x, y) {
    const half = this.view.span / 2;
    const [cx, cy] = [x * 100 + 50, y * 100 + 50];
    if (Math.abs(cx - this.view.x) > half - 60 || Math.abs(cy - this.view.y) > half - 60) {
      this.view.x = cx;
      this.view.y = cy;
      this.applyView();
    }
  }

  /** A zoom by the viewer: from now on the view stays where they put it. */
  zoomBy(factor) {
    this.steered = true;
    this.zoom(factor);
  }

  zoom(factor) {
    this.view.span = Math.min(MAX_SPAN, Math.max(MIN_SPAN, this.view.span * factor));
    this.applyView();
  }

  applyView() {
    const { x, y, span } = this.view;
    this.svg.setAttribute("viewBox", `${x - span / 2} ${y - span / 2} ${span} ${span}`);
    // Spots stay a finger's width whatever the zoom.
    if (this.targetLayer.querySelector(".spot-reach")) {
      const { reach, dot } = this.spotRadii();
      for (const circle of this.targetLayer.querySelectorAll(".spot-reach")) circle.setAttribute("r", reach);
      for (const circle of this.targetLayer.querySelectorAll(".spot-dot")) circle.setAttribute("r", dot);
    }
  }

  /** A spot's reach (a finger wide on screen) and its visible dot, in board units. */
  spotRadii() {
    const perPixel = this.unitsPerPixel();
    return { reach: Math.max(11, (TOUCH_TARGET_PX / 2) * perPixel), dot: Math.min(9, Math.max(3, 7 * perPixel)) };
  }

  /** Board units per screen pixel (the board keeps its aspect ratio, "meet"). */
  unitsPerPixel() {
    const box = this.svg.getBoundingClientRect();
    return this.view.span / Math.max(1, Math.min(box.width, box.height));
  }

  listenForPanAndZoom() {
    const pointers = new Map();
    let pinch = 0;
    this.svg.addEventListener("pointerdown", (event) => {
      pointers.set(event.pointerId, [event.clientX, event.clientY]);
      this.dragged = false;
      this.travel = 0;
    });
    this.svg.addEventListener("pointermove", (event) => {
      const last = pointers.get(event.pointerId);
      if (!last) return;
      const now = [event.clientX, event.clientY];
      pointers.set(event.pointerId, now);
      if (pointers.size === 2) {
        const [a, b] = [...pointers.values()];
        const distance = Math.hypot(a[0] - b[0], a[1] - b[1]);
        if (pinch) this.zoomBy(pinch / distance);
        pinch = distance;
        this.dragged = true;
        return;
      }
      this.travel += Math.abs(now[0] - last[0]) + Math.abs(now[1] - last[1]);
      if (this.travel < 6) return;
      if (!this.dragged) this.svg.setPointerCapture(event.pointerId);
      this.dragged = true;
      this.steered = true;
      const scale = this.unitsPerPixel();
      this.view.x -= (now[0] - last[0]) * scale;
      this.view.y -= (now[1] - last[1]) * scale;
      this.applyView();
    });
    const release = (event) => {
      pointers.delete(event.pointerId);
      pinch = 0;
      // A click follows pointerup: let it see `dragged` before it is cleared.
      setTimeout(() => (this.dragged = false), 0);
    };
    this.svg.addEventListener("pointerup", release);
    this.svg.addEventListener("pointercancel", release);
    this.svg.addEventListener("wheel", (event) => {
      event.preventDefault();
      this.zoomBy(event.deltaY > 0 ? 1.15 : 1 / 1.15);
    }, { passive: false });
  }
}
