// Small helpers to build DOM and SVG elements without innerHTML (the CSP forbids
// inline styles and scripts, and building nodes keeps user text from being parsed).

const SVG_NS = "http://www.w3.org/2000/svg";

function fill(element, attributes, children) {
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name === "text") {
      element.textContent = value;
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

/** An HTML element: `h("button", {class: "x", onclick}, "Label")`. */
export function h(tag, attributes, ...children) {
  return fill(document.createElement(tag), attributes, children);
}

/** An SVG element, same signature as `h`. */
export function s(tag, attributes, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attributes, children);
}

/** Replaces everything inside `parent` with `children`. */
export function mount(parent, ...children) {
  parent.replaceChildren();
  fill(parent, {}, children);
  return parent;
}

/** Says `text` to screen readers and shows it in the status line. */
export function announce(text) {
  const status = document.getElementById("status");
  if (status) status.textContent = text;
}

/** Seat colours, one per seat (up to six with Inns & Cathedrals). */
export const SEAT_COLOURS = ["#d62828", "#1d4ed8", "#15803d", "#eab308", "#111827", "#9ca3af"];
export const SEAT_COLOUR_NAMES = ["red", "blue", "green", "yellow", "black", "grey"];
