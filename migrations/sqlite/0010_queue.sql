-- Quick play, for SQLite; migrations/postgres/ has the same change.
--
-- A ticket is one player's wish for a game. The one node's matchmaker takes the waiting
-- tickets in a write (SQLite has one writer, so nothing else changes them meanwhile), and
-- in the same transaction writes each lobby it forms, with its seats, and marks the tickets
-- it seated `matched` with their lobby and seat. A ticket is matched once: only a waiting
-- ticket is taken, and the transaction that takes it is the one that marks it. A node
-- that dies mid-round rolls the round back, and its tickets wait on.

CREATE TABLE queue_tickets (
    id BLOB NOT NULL PRIMARY KEY,
    player_id BLOB NOT NULL REFERENCES players (id),
    -- The SHA-256 of the ticket's token, which its owner shows to watch or cancel it.
    token_hash TEXT NOT NULL,
    display_name TEXT NOT NULL,
    min_players INTEGER NOT NULL,
    max_players INTEGER NOT NULL,
    rules TEXT NOT NULL,
    clock TEXT NOT NULL,
    rated BOOLEAN NOT NULL,
    -- Tickets match only others with the same key: the rules, the clock and rated or not.
    match_key TEXT NOT NULL,
    -- The player's mu in the pool when the ticket was made: what the window compares.
    rating REAL NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    -- 'waiting', 'matched', 'cancelled' or 'expired'.
    status TEXT NOT NULL,
    lobby_id BLOB REFERENCES lobbies (id),
    seat INTEGER,
    CHECK ((status = 'matched') = (lobby_id IS NOT NULL AND seat IS NOT NULL))
);

-- One waiting ticket per player, on every node at once.
CREATE UNIQUE INDEX queue_tickets_one_waiting_per_player
    ON queue_tickets (player_id) WHERE status = 'waiting';
-- The matchmaker's read: waiting tickets, oldest first.
CREATE INDEX queue_tickets_waiting ON queue_tickets (created_at, id) WHERE status = 'waiting';
