// "Your turn", told where a player looks when the tab is in the background: the page
// title, a badge on the favicon, and a short chime that can be turned off (the choice is
// kept in this browser).

const TITLE = "Carcassonne";
const ICON = "/assets/favicon.svg";
// A red dot over the icon; a data: URL, which the page's CSP allows for images.
const BADGE = "data:image/svg+xml," + encodeURIComponent(
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect x="2" y="2" width="28" height="28" rx="4" fill="#8fbf5a" stroke="#3b2f1e" stroke-width="2"/>' +
  '<path d="M6 6h20l-4 6Q16 16 10 12z" fill="#c9874a"/><circle cx="23" cy="23" r="8" fill="#d62828" stroke="#fff" stroke-width="2"/></svg>');

export function soundOn() {
  return localStorage.getItem("sound") !== "off";
}

export function setSound(on) {
  localStorage.setItem("sound", on ? "on" : "off");
}

let signalled = false;

/** Shows (or clears) the your-turn signals; the chime sounds once per turn. */
export function yourTurn(mine, gameName) {
  document.title = mine ? `Your turn · ${gameName} · ${TITLE}` : gameName ? `${gameName} · ${TITLE}` : TITLE;
  iconLink().href = mine ? BADGE : ICON;
  document.documentElement.dataset.yourTurn = mine ? "yes" : "no";
  if (mine && !signalled && soundOn()) chime();
  signalled = mine;
}

/** Back to the plain title and icon, when the game view closes. */
export function clearSignals() {
  signalled = false;
  document.title = TITLE;
  iconLink().href = ICON;
  delete document.documentElement.dataset.yourTurn;
}

function iconLink() {
  let link = document.querySelector("link[rel=icon]");
  if (!link) {
    link = document.createElement("link");
    link.rel = "icon";
    document.head.append(link);
  }
  return link;
}

let audio = null;

/** Two soft notes; silently nothing where the browser allows no sound yet. */
function chime() {
  try {
    audio ??= new AudioContext();
    const start = audio.currentTime;
    for (const [offset, frequency] of [[0, 660], [0.16, 880]]) {
      const oscillator = audio.createOscillator();
      const gain = audio.createGain();
      oscillator.frequency.value = frequency;
      gain.gain.setValueAtTime(0.0001, start + offset);
      gain.gain.exponentialRampToValueAtTime(0.15, start + offset + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, start + offset + 0.3);
      oscillator.connect(gain).connect(audio.destination);
      oscillator.start(start + offset);
      oscillator.stop(start + offset + 0.32);
    }
  } catch {
    // No audio here (or not yet allowed): the title and the badge still say it.
  }
}
