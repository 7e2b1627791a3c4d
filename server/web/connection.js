// One game's WebSocket: hello, the mirrored public state (the snapshot, then every
// update's patch in seq order), commands, the chat, and reconnection that resumes from
// the last seq and chat_seq seen (docs/protocol.md, "Reconnecting and catching up", "Chat").

import { applyPatch } from "./patch.js";

const RETRY_DELAYS_MS = [250, 500, 1000, 2000, 4000];

/**
 * Refusals of a command that changed nothing and ask for the same command again (same
 * id, so that it is never applied twice): a server over its capacity for a moment, or
 * a database away (docs/protocol.md, "Commands"). The player need not play it again.
 */
const RESENT_REFUSALS = ["busy", "storage_unavailable"];
const RESEND_DELAYS_MS = [1000, 2000, 4000, 8000];

/** Refusals of a `say`, `mute` or `chat_policy`: the chat shows them, not the game. */
export const CHAT_ERRORS = ["chat_rate_limited", "chat_closed", "bad_chat_text", "spectator_unknown"];

export class GameConnection {
  /**
   * `listener` gets `change(connection)` after every change of state or legal moves,
   * `events(events, seq)` for the events of each update, `notice(text)` for errors,
   * `chat(frame)` for each chat entry, `chatMutes(list)` and `chatError(error)`;
   * `rematch(frame)` for where a finished game's rematch stands, `rematchSeat(frame)`
   * for this seat's place in the agreed rematch, `rematchError(error)` for a refusal;
   * `refused()` when a socket closed before its welcome (see `over`).
   * `identity` ({id, secret}) lets a spectator write in the spectators' chat; `chatSeq`
   * is the last chat entry the page already holds (from an earlier connection).
   */
  constructor(gameId, { token = null, invite = null, identity = null, chatSeq = null, listener }) {
    this.gameId = gameId;
    this.token = token;
    this.invite = invite;
    this.identity = identity;
    this.listener = listener;
    this.chatSeq = chatSeq;
    this.chatPolicy = null;
    this.policySeq = 0;
    this.mutes = [];
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
    /** The command sent and not yet answered: `{id, seq, move, resends}`. */
    this.pending = null;
    this.deadlineAt = null;
    /** The last `rematch` frame heard (the server repeats it to a new connection). */
    this.rematch = null;
    /** This seat's `rematch_seat`, once the rematch is agreed. */
    this.rematchSeat = null;
    this.open();
  }

  open() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(`${scheme}//${location.host}/ws/games/${this.gameId}`);
    this.socket = socket;
    socket.addEventListener("open", () => socket.send(JSON.stringify(this.hello())));
    socket.addEventListener("message", (event) => this.receive(JSON.parse(event.data)));
    socket.addEventListener("close", (event) => this.lost(socket, event));
  }

  /**
   * The hello: the seat token, or for a spectator the player identity (players need
   * none: their seat is who they are); and where we are, so that only what we missed
   * comes back. Without `last_chat_seq` the server sends the recent chat.
   */
  hello() {
    const watcher = !this.token && this.identity;
    return {
      type: "hello",
      token: this.token,
      invite_code: this.invite,
      last_seq: this.state ? this.seq : null,
      last_chat_seq: this.chatSeq ?? undefined,
      player_id: watcher ? this.identity.id : undefined,
      player_secret: watcher ? this.identity.secret : undefined,
    };
  }

  /** Stops reconnecting: the game is over and its room closed, as the page found out. */
  over() {
    this.ended = true;
    clearTimeout(this.retryTimer);
    this.listener.change(this);
  }

  /** Closes for good (leaving the game view). */
  close() {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.resendTimer);
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
    // An unanswered command is not sent again on the next socket: its welcome brings
    // the turn back, or the update of the move if it landed.
    this.pending = null;
    clearTimeout(this.resendTimer);
    const finished = this.state && ["finished", "cancelled"].includes(this.state.status);
    // A policy close is final (a bad hello, a rate limit), except when the server only
    // made room among connections still waiting for their hello: then try again.
    const retryable = /^(evicted|no hello in time)/.test(event.reason || "");
    this.ended = this.closed || finished || (event.code === 1008 && !retryable);
    this.listener.change(this);
    // A socket refused before any welcome may be a game whose room is gone for good:
    // the page asks the REST API, and calls `over()` if so.
    if (!this.closed && !finished && !socket.welcomed) this.listener.refused?.();
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
    this.socket.welcomed = true;
    this.role = message.role;
    this.seat = message.seat;
    if (message.chat) this.chatPolicy = message.chat;
    // The server sends `chat_mutes` after the welcome only when the list is not empty.
    this.mutes = [];
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

  on_ack(message) {
    if (this.pending?.id === message.id) this.pending = null;
  }

  on_chat(message) {
    const entry = message.entry;
    // Catching up may replay policy changes older than the welcome's: keep the newest.
    if (entry?.kind === "policy" && message.chat_seq > this.policySeq) {
      this.policySeq = message.chat_seq;
      this.chatPolicy = entry.chat;
    }
    if (this.chatSeq === null || message.chat_seq > this.chatSeq) this.chatSeq = message.chat_seq;
    this.listener.chat?.(message);
  }

  on_chat_mutes(message) {
    this.mutes = message.muted || [];
    this.listener.chatMutes?.(this.mutes);
  }

  on_rematch(message) {
    this.rematch = message;
    this.listener.rematch?.(message);
    this.listener.change(this);
  }

  on_rematch_seat(message) {
    this.rematchSeat = message;
    this.listener.rematchSeat?.(message);
    this.listener.change(this);
  }

  on_rejected(message) {
    const pending = this.pending?.id === message.id ? this.pending : null;
    this.pending = null;
    if (pending && pending.seq === this.seq && RESENT_REFUSALS.includes(message.error.code)) {
      this.resendLater(pending, message.error.code);
      return;
    }
    this.listener.notice("Move refused: " + message.error.message);
    // The command spent the legal moves: the server reminds a player still to move.
    if (this.online && pending && pending.seq === this.seq) this.resync();
  }

  /** Sends `pending` again after a pause that grows with each refusal. */
  resendLater(pending, code) {
    const delay = RESEND_DELAYS_MS[Math.min(pending.resends, RESEND_DELAYS_MS.length - 1)];
    const why = code === "busy" ? "The server is busy" : "The server cannot store moves right now";
    this.listener.notice(`${why}; sending your move again in ${delay / 1000} s…`);
    clearTimeout(this.resendTimer);
    this.resendTimer = setTimeout(() => {
      // Meanwhile the game moved on (the move landed after all, or a timeout), or the
      // connection was lost: its welcome brings the turn back instead.
      if (this.seq !== pending.seq || !this.online || this.pending) return;
      this.pending = { ...pending, resends: pending.resends + 1 };
      this.send({ type: "command", id: pending.id, seq: pending.seq, move: pending.move });
    }, delay);
  }

  on_error(message) {
    if (CHAT_ERRORS.includes(message.error.code) && this.listener.chatError) {
      this.listener.chatError(message.error);
      return;
    }
    if (message.error.code === "rematch_unavailable" && this.listener.rematchError) {
      this.listener.rematchError(message.error);
      return;
    }
    if (message.error.code === "bad_player_secret" && this.identity) {
      // The identity is not (or no longer) this browser's: watch without it.
      this.identity = null;
      this.listener.badIdentity?.();
      this.socket.close(4001);
      return;
    }
    if (message.error.code === "unknown_seq") {
      // Our copy is ahead of the game the server holds (it never had our seq): start
      // again from a fresh snapshot rather than keep a state that cannot be continued.
      this.state = null;
      if (this.socket.welcomed) this.resync(true);
      else this.send(this.hello());
      return;
    }
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
    this.send({ type: "resync", last_seq: fresh ? null : this.seq, last_chat_seq: this.chatSeq ?? undefined });
  }

  send(message) {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  /** Says `text` in our chat (the players' for a seat, the spectators' for a watcher). */
  say(text) {
    this.send({ type: "say", text });
  }

  /** Stops (or starts again) hearing `author` (`{seat}` or `{player}`); seated players only. */
  mute(author, muted) {
    this.send({ type: "mute", author, muted });
  }

  /** The creator's change of who may write: `all`, `players` or `off`. */
  setChatPolicy(chat) {
    this.send({ type: "chat_policy", chat });
  }

  /** Offers a rematch or accepts the offer waiting (`true`), or declines it (`false`). */
  answerRematch(accept) {
    this.send({ type: "rematch", accept });
  }

  /** Sends `move`, decided on the state at our seq; the legal moves are spent by it. */
  command(move) {
    this.commandCount += 1;
    const id = `s${this.seat}-${this.seq}-${this.commandCount}-${Date.now() % 100000}`;
    this.legal = null;
    this.pending = { id, seq: this.seq, move, resends: 0 };
    this.send({ type: "command", id, seq: this.seq, move });
    this.listener.change(this);
  }
}
