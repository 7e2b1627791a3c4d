-- The events of every update the move log cannot replay, for Postgres; migrations/sqlite/
-- has the same table.
--
-- A client rebuilds a game's event log from `GET /api/lobbies/{id}/events`. The events of
-- a move are the rules engine's, and replaying the stored moves gives them again; but a
-- lobby's changes (seats taken and freed, the start with its seat order, a cancellation)
-- and a game's seat changes (resigned, abandoned, reclaimed) leave no such trace: a freed
-- seat is deleted, a seat keeps only its last change. So each of those updates stores its
-- events here, in the same transaction as the change, as the exact JSON text of the
-- `events` array its `update` message carried. Moves are not written here: their writes
-- are the hot path, and the log replays them.
CREATE TABLE update_events (
    lobby_id UUID NOT NULL REFERENCES lobbies (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    events TEXT NOT NULL,
    PRIMARY KEY (lobby_id, seq)
);
