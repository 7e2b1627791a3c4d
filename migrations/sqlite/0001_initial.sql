-- The whole schema of the Carcassonne server, for SQLite.
--
-- migrations/postgres/0001_initial.sql is the same schema in Postgres's types; the store runs
-- the same queries on both, so the two files must keep the same tables, columns and
-- constraints. Ids are UUIDs as 16-byte BLOBs, times are Unix milliseconds (INTEGER), JSON
-- is TEXT, booleans are 0 or 1.

-- Lasting player identities. The secret is only ever stored hashed.
CREATE TABLE players (
    id BLOB NOT NULL PRIMARY KEY,
    display_name TEXT NOT NULL,
    secret_hash TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

-- A lobby, which becomes a game with the same id when it starts. `seq` is the last update
-- number written for it, so that numbering survives restarts.
CREATE TABLE lobbies (
    id BLOB NOT NULL PRIMARY KEY,
    name TEXT NOT NULL,
    is_public BOOLEAN NOT NULL,
    invite_code TEXT,
    seat_count INTEGER NOT NULL,
    rules TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('open', 'playing', 'finished', 'cancelled')),
    -- The u64 seed of the tile stack, bit-cast to a signed 64-bit integer.
    seed INTEGER,
    seq INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    started_at INTEGER,
    finished_at INTEGER
);

-- The lobby browser lists open public lobbies newest first.
CREATE INDEX lobbies_open_public_newest
    ON lobbies (created_at DESC, id DESC)
    WHERE status = 'open' AND is_public;

-- Start-up restores every open or playing lobby; finished ones are the large majority.
CREATE INDEX lobbies_live
    ON lobbies (status)
    WHERE status IN ('open', 'playing');

-- Taken seats. A player identity holds at most one seat of a lobby.
CREATE TABLE seats (
    lobby_id BLOB NOT NULL REFERENCES lobbies (id) ON DELETE CASCADE,
    seat INTEGER NOT NULL,
    display_name TEXT NOT NULL,
    player_id BLOB REFERENCES players (id),
    token_hash TEXT NOT NULL,
    creator BOOLEAN NOT NULL,
    joined_at INTEGER NOT NULL,
    PRIMARY KEY (lobby_id, seat),
    UNIQUE (lobby_id, player_id)
);

-- The accepted commands of each game. The two keys are what make a retried command a
-- conflict instead of a second application.
CREATE TABLE moves (
    game_id BLOB NOT NULL REFERENCES lobbies (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    seat INTEGER NOT NULL,
    command_id TEXT NOT NULL,
    move_json TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (game_id, seq),
    UNIQUE (game_id, seat, command_id)
);

-- Finished matches, the columns the history lists and filters on. `expansions` is a
-- bitmask (river 1, abbot 2, inns and cathedrals 4, festival 8) so that "has all of these
-- expansions" is one test on one column.
CREATE TABLE matches (
    id BLOB NOT NULL PRIMARY KEY,
    name TEXT NOT NULL,
    rules TEXT NOT NULL,
    expansions INTEGER NOT NULL,
    player_count INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    finished_at INTEGER NOT NULL,
    tiles_placed INTEGER NOT NULL
);

-- The history is read newest first with keyset paging on (finished_at, id).
CREATE INDEX matches_newest ON matches (finished_at DESC, id DESC);

-- The same order within one player count.
CREATE INDEX matches_by_player_count ON matches (player_count, finished_at DESC, id DESC);

-- The large documents of a match, apart so that list scans do not read them.
CREATE TABLE match_records (
    match_id BLOB NOT NULL PRIMARY KEY REFERENCES matches (id) ON DELETE CASCADE,
    breakdown TEXT NOT NULL,
    record TEXT NOT NULL
);

-- One row per seat of a finished match. `finished_at` is copied from the match so that a
-- player's history pages on this table's index alone.
CREATE TABLE match_players (
    match_id BLOB NOT NULL REFERENCES matches (id) ON DELETE CASCADE,
    seat INTEGER NOT NULL,
    display_name TEXT NOT NULL,
    player_id BLOB REFERENCES players (id),
    score INTEGER NOT NULL,
    winner BOOLEAN NOT NULL,
    finished_at INTEGER NOT NULL,
    PRIMARY KEY (match_id, seat),
    UNIQUE (match_id, player_id)
);

-- A player's matches newest first, and their statistics: score and winner ride along so
-- that the statistics read this index alone. Guests (no identity) are left out.
CREATE INDEX match_players_by_player
    ON match_players (player_id, finished_at DESC, match_id DESC, score, winner)
    WHERE player_id IS NOT NULL;
