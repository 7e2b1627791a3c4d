-- Recovery codes, for SQLite; migrations/postgres/ has the same table. A player
-- moves their identity to another device with a one-time code: at most one code per
-- player is outstanding (a new one replaces it), stored only as its SHA-256, and it is
-- deleted when used or replaced. Using it gives the player a new secret.

CREATE TABLE player_recovery (
    player_id BLOB PRIMARY KEY REFERENCES players (id),
    code_hash TEXT NOT NULL UNIQUE,
    expires_at INTEGER NOT NULL
);
