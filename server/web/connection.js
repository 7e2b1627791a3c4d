// One game's WebSocket: hello, the mirrored public state (the snapshot, then every
// update's patch in seq order), commands, and reconnection that resumes from the last
// seq seen (docs/protocol.md, "Reconnecting and catching up").

import { applyPatch } from "./patch.js";

const RETRY_DELAYS_MS = [250, 500, 1000, 2000, 4000];

export class GameConnection {
  /**
   * `listener` gets `change(connection)` after every change of state or legal moves,
   * `events(events, seq)` for the events of each update, and `notice(text)` for errors.
   */
  constructor(gameId, { token = null, invite = null, listener }) {
    this.gameId = gameId;
    this.token = token;
    this.invite = invite;
    this.listener = listener;
    this.state = null;
    this.seq = null;
    this.legal = null;
    this.role = null;
    this.seat = null;
    this.connected = new Set();
    this.online = false;
    this.closed = false;
    this.ended = false;
    this.retries = 0;
    this.welcomes = 0;
    this.commandCount = 0;
    this.deadlineAt = null;
    this.open();
  }

  open() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(`${scheme}//${location.host}/ws/games/${this.gameId}`);
    this.socket = socket;
    socket.addEventListener("open", () => {
      socket.send(JSON.stringify({ type: "hello", token: this.token, invite_code: this.invite, last_seq: this.state ? this.seq : null }));
    });
    socket.addEventListener("message", (event) => this.receive(JSON.parse(event.data)));
    socket.addEventListener("close", (event) => this.lost(socket, event));
  }

  /** Closes for good (leaving the game view). */
  close() {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.socket.close(1000);
  }

  /** Drops the socket as a network fault would; the connection comes back by itself. */
  drop() {
    this.socket.close(4000, "dropped");
  }

  lost(socket, event) {
    if (socket !== this.socket) return;
    this.online = false;
    this.legal = null;
    const finished = this.state && ["finished", "cancelled"].includes(this.state.status);
    // A policy close is final (a bad hello, a rate limit), except when the server only
    // made room among connections still waiting for their hello: then try again.
    const retryable = /^(evicted|no hello in time)/.test(event.reason || "");
    this.ended = this.closed || finished || (event.code === 1008 && !retryable);
    this.listener.change(this);
    if (this.ended) return;
    const delay = RETRY_DELAYS_MS[Math.min(this.retries, RETRY_DELAYS_MS.length - 1)];
    this.retries += 1;
    this.listener.notice(`Connection lost; reconnecting in ${delay} ms…`);
    this.retryTimer = setTimeout(() => this.open(), delay);
  }

  receive(message) {
    const handler = this["on_" + message.type];
    if (handler) handler.call(this, message);
  }

  on_welcome(message) {
    this.role = message.role;
    this.seat = message.seat;
    this.online = true;
    this.retries = 0;
    this.welcomes += 1;
    this.listener.change(this);
  }

  on_snapshot(message) {
    this.state = message.state;
    this.seq = message.seq;
    this.connected = new Set(message.connected || []);
    this.legal = message.legal_moves || null;
    this.setClock(message);
    this.listener.change(this);
  }

  on_update(message) {
    if (!this.state || message.seq <= this.seq) return;
    if (message.seq !== this.seq + 1) {
      this.resync();
      return;
    }
    try {
      this.state = applyPatch(this.state, message.patch);
    } catch (error) {
      this.listener.notice("The game state went out of step (" + error.message + "); asking for a fresh copy.");
      this.resync(true);
      return;
    }
    this.seq = message.seq;
    this.legal = message.legal_moves || null;
    this.setClock(message);
    this.listener.events(message.events || [], message.seq);
    this.listener.change(this);
  }

  on_your_turn(message) {
    if (message.seq !== this.seq) return;
    this.legal = message.legal_moves || null;
    this.setClock(message);
    this.listener.change(this);
  }

  on_presence(message) {
    if (message.connected) this.connected.add(message.seat);
    else this.connected.delete(message.seat);
    this.listener.change(this);
  }

  on_ack() {}

  on_rejected(message) {
    this.listener.notice("Move refused: " + message.error.message);
  }

  on_error(message) {
    this.listener.notice("Server: " + message.error.message);
    if (message.error.code === "bad_token" && this.token) {
      // The seat is no longer ours (replaced or a stale token): watch instead.
      this.token = null;
      this.listener.badToken?.();
      this.socket.close(4001);
    }
  }

  on_shutdown() {
    this.listener.notice("The server is restarting; reconnecting…");
  }

  /** `turn_ms_left` of a message, turned into a local deadline. */
  setClock(message) {
    this.deadlineAt = typeof message.turn_ms_left === "number" ? performance.now() + message.turn_ms_left : null;
  }

  /** Asks for the updates since our seq, or a fresh snapshot when our copy is broken. */
  resync(fresh = false) {
    if (fresh) this.state = null;
    this.send({ type: "resync", last_seq: fresh ? null : this.seq });
  }

  send(message) {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  /** Sends `move`, decided on the state at our seq; the legal moves are spent by it. */
  command(move) {
    this.commandCount += 1;
    const id = `s${this.seat}-${this.seq}-${this.commandCount}-${Date.now() % 100000}`;
    this.legal = null;
    this.send({ type: "command", id, seq: this.seq, move });
    this.listener.change(this);
  }
}
