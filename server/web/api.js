// REST calls to the server, and the seat tokens this browser holds.

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
// rated game or asks for it, and kept in localStorage: seats taken with it count in the
// player's history and ratings.

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

/** The fields that seat this browser's player: the identity if it has one, else a guest. */
export function seatedAs(name) {
  const held = identity();
  return held ? { display_name: name, player_id: held.id, player_secret: held.secret } : { display_name: name };
}
