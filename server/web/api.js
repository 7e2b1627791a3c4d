// REST calls to the server, the seat tokens this browser holds and the quick-play
// ticket this tab waits with.

/** An error answer of the server: `{"error":{"code","message"}}`. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Calls `path` under `/api` and returns the JSON answer, or throws an ApiError. */
export async function api(method, path, { body, token, invite } = {}) {
  const headers = {};
  if (body !== undefined) headers["content-type"] = "application/json";
  if (token) headers.authorization = "Bearer " + token;
  if (invite) headers["x-invite-code"] = invite;
  let response;
  try {
    response = await fetch("/api" + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw new ApiError(0, "network", "the server cannot be reached: " + error.message);
  }
  if (response.status === 204) return null;
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const error = (data && data.error) || {};
    throw new ApiError(response.status, error.code || "http_" + response.status, error.message || response.statusText);
  }
  return data;
}

// Seat tokens live in localStorage, keyed by game, so that a reload or a new tab of the
// same browser takes the same seat again.

/** The seat this browser holds in `gameId`: `{token, seat}`, or null. */
export function heldSeat(gameId) {
  try {
    return JSON.parse(localStorage.getItem("seat:" + gameId));
  } catch {
    return null;
  }
}

export function holdSeat(gameId, seat) {
  localStorage.setItem("seat:" + gameId, JSON.stringify(seat));
}

export function dropSeat(gameId) {
  localStorage.removeItem("seat:" + gameId);
}

/** The invite code this browser was given for a private game, if any. */
export function inviteOf(gameId) {
  return localStorage.getItem("invite:" + gameId);
}

export function rememberInvite(gameId, code) {
  if (code) localStorage.setItem("invite:" + gameId, code);
}

/** The display name last used here. */
export function playerName() {
  return localStorage.getItem("name") || "";
}

export function rememberName(name) {
  localStorage.setItem("name", name);
}

// A lasting player identity (id and secret), made the first time this browser plays a
// rated game or asks for one (quick play always does), and kept in localStorage: seats
// taken with it count in the player's history and ratings.

/** This browser's player identity, `{id, secret}`, or null. */
export function identity() {
  try {
    return JSON.parse(localStorage.getItem("identity"));
  } catch {
    return null;
  }
}

/** This browser's identity, registered under `name` if it has none yet. */
export async function ensureIdentity(name) {
  const held = identity();
  if (held) return held;
  const created = await api("POST", "/players", { body: { display_name: name } });
  const made = { id: created.id, secret: created.secret };
  localStorage.setItem("identity", JSON.stringify(made));
  return made;
}

/** A one-time code that moves this browser's identity to another device. */
export async function recoveryCode() {
  const held = identity();
  return api("POST", `/players/${held.id}/recovery-code`, { body: { player_secret: held.secret } });
}

/** Takes the identity a recovery code moves here; the device that made the code loses it. */
export async function recoverIdentity(code) {
  const moved = await api("POST", "/players/recover", { body: { recovery_code: code.trim() } });
  localStorage.setItem("identity", JSON.stringify({ id: moved.id, secret: moved.secret }));
  return moved;
}

/** The fields that seat this browser's player: the identity if it has one, else a guest. */
export function seatedAs(name) {
  const held = identity();
  return held ? { display_name: name, player_id: held.id, player_secret: held.secret } : { display_name: name };
}

/**
 * Reads the server-sent events at `path` under `/api`, calling `onEvent(name, data)` for
 * each, until the stream ends. Read with fetch, as an EventSource cannot send the token.
 * Throws an ApiError when the server refuses the stream or cannot be reached.
 */
export async function readEvents(path, { token, signal, onEvent }) {
  let response;
  try {
    response = await fetch("/api" + path, { headers: { authorization: "Bearer " + token, accept: "text/event-stream" }, signal });
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new ApiError(0, "network", "the server cannot be reached: " + error.message);
  }
  if (!response.ok) {
    const error = (await response.json().catch(() => null))?.error || {};
    throw new ApiError(response.status, error.code || "http_" + response.status, error.message || response.statusText);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer = (buffer + value).replaceAll("\r\n", "\n");
    // An event ends at a blank line; a partial one waits for the rest.
    for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
      const event = parseEvent(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (event) onEvent(event.name, event.data);
    }
  }
}

/** One event's `event:` and `data:` lines; null for a keep-alive comment. */
function parseEvent(block) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    const colon = line.indexOf(":");
    if (colon === 0) continue;
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") name = value;
    else if (field === "data") data.push(value);
  }
  return data.length ? { name, data: data.join("\n") } : null;
}

// A quick-play ticket waits in sessionStorage: a reload of this tab watches it again,
// while another tab does not (each `matched` mints a new seat token, so two watchers
// would take the seat from each other).

/** The ticket this tab waits with: `{id, token}`, or null. */
export function heldTicket() {
  try {
    return JSON.parse(sessionStorage.getItem("ticket"));
  } catch {
    return null;
  }
}

export function holdTicket(ticket) {
  sessionStorage.setItem("ticket", JSON.stringify(ticket));
}

export function dropTicket() {
  sessionStorage.removeItem("ticket");
}
