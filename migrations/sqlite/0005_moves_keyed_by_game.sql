-- Moves stored in the order of their key, for SQLite; migrations/postgres/ changes nothing.
--
-- Before, `moves` was a rowid table with two indexes, (game_id, seq) and (game_id, seat,
-- command_id): three B-trees, and every move of a batch dirtied a leaf page of each index
-- (each game's entries sit in a leaf of their own), pages that the commit writes whole
-- into the log and checksums. The table is now stored as its primary key (WITHOUT
-- ROWID): one B-tree, whose leaves keep each game's moves together in `seq` order. A
-- command repeated by a seat is refused by the trigger below instead of a second index:
-- it looks through the moves of that one game, which sit together in the leaves the
-- insert itself touches, and dirties nothing. With 400 games playing, dropping the
-- index raised the moves per second by about a sixth; the trigger costs half of that.

CREATE TABLE moves_by_game (
    game_id BLOB NOT NULL REFERENCES lobbies (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    seat INTEGER NOT NULL,
    command_id TEXT NOT NULL,
    move_json TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    origin TEXT NOT NULL DEFAULT 'player'
        CHECK (origin IN ('player', 'timeout', 'bot')),
    PRIMARY KEY (game_id, seq)
) WITHOUT ROWID;

INSERT INTO moves_by_game (game_id, seq, seat, command_id, move_json, created_at, origin)
    SELECT game_id, seq, seat, command_id, move_json, created_at, origin FROM moves;

DROP TABLE moves;

ALTER TABLE moves_by_game RENAME TO moves;

-- The key that makes a retried command a conflict instead of a second application, as
-- the unique index (game_id, seat, command_id) does on Postgres. RAISE(ABORT) fails the
-- statement with SQLITE_CONSTRAINT_TRIGGER, which the store reads as a conflict.
CREATE TRIGGER moves_command_once BEFORE INSERT ON moves
WHEN EXISTS (
    SELECT 1 FROM moves
    WHERE game_id = NEW.game_id AND seat = NEW.seat AND command_id = NEW.command_id
)
BEGIN
    SELECT RAISE(ABORT, 'a move of this game already has this seat and command id');
END;
