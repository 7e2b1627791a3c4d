-- SQLite's moves keyed by the command that made them, for SQLite; migrations/postgres/
-- changes nothing.
--
-- Migration 5 stored the moves as their `(game_id, seq)` key and refused a seat's
-- repeated command id with a trigger, which looked through every move of the game
-- before each insert: about 70 rows a move, on average, in a game of 142. With 400 games
-- playing that was a tenth of the server's CPU per move (58 to 60 µs against 54 with
-- the table below, in three alternated pairs) and about an eighth of its moves a second.
-- The key is now `(game_id, seat, command_id)`, so a repeated command fails on the key
-- itself (SQLITE_CONSTRAINT_PRIMARYKEY, a conflict) with nothing to look through. The
-- moves of a game still sit together, now by seat and command, and are read in `seq`
-- order by sorting (`ORDER BY game_id, seq`: a game's moves, a few hundred rows).
-- `(game_id, seq)` needs no key of its own: every write of a move first advances its
-- game's `seq` in the lobby row, guarded by `seq < new seq`, in the same transaction,
-- so no two moves of a game can be written with the same `seq`.

CREATE TABLE moves_by_command (
    game_id BLOB NOT NULL REFERENCES lobbies (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    seat INTEGER NOT NULL,
    command_id TEXT NOT NULL,
    move_json TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    origin TEXT NOT NULL DEFAULT 'player'
        CHECK (origin IN ('player', 'timeout', 'bot')),
    PRIMARY KEY (game_id, seat, command_id)
) WITHOUT ROWID;

INSERT INTO moves_by_command (game_id, seq, seat, command_id, move_json, created_at, origin)
    SELECT game_id, seq, seat, command_id, move_json, created_at, origin FROM moves;

DROP TABLE moves;

ALTER TABLE moves_by_command RENAME TO moves;
