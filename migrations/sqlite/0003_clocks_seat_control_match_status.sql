-- Turn clocks, resignation, abandonment, seat recovery and bots, for SQLite;
-- migrations/postgres/ has the same change.
--
-- Every column is added with a default that describes what existing rows already were
-- (no clock, human seats, player moves, finished matches), so that the migration keeps
-- every row as it stands. `lobbies.status` keeps its values: SQLite cannot change a
-- CHECK constraint in place, and an aborted game is stored as a cancelled one.

-- The lobby's time control, chosen at creation, as the JSON of the store's TimeControl:
-- {"type":"none"}, {"type":"turn","per_turn_ms":..,"reserve_ms":..} or
-- {"type":"correspondence","per_turn_ms":..}.
ALTER TABLE lobbies ADD COLUMN clock TEXT NOT NULL DEFAULT '{"type":"none"}';

-- Who plays a taken seat: its human player; a bot since the player stopped playing
-- ('abandoned', until the player comes back and takes the seat again); or a bot to the
-- end since the player resigned ('resigned').
ALTER TABLE seats ADD COLUMN control TEXT NOT NULL DEFAULT 'human'
    CHECK (control IN ('human', 'abandoned', 'resigned'));

-- The `seq` of the update that last changed the seat's control or token, so that a
-- restored game knows when each seat changed hands.
ALTER TABLE seats ADD COLUMN control_seq INTEGER NOT NULL DEFAULT 0;

-- The level name of the bot (e.g. 'greedy') that holds this seat from the lobby on; NULL
-- for a seat a person took. The store keeps the name without interpreting it.
ALTER TABLE seats ADD COLUMN bot TEXT;

-- Who made a move: the seat's player, the server when the turn's time ran out, or a bot
-- playing the seat.
ALTER TABLE moves ADD COLUMN origin TEXT NOT NULL DEFAULT 'player'
    CHECK (origin IN ('player', 'timeout', 'bot'));

-- How a match ended: played to its end, or cut short when players resigned or abandoned
-- it.
ALTER TABLE matches ADD COLUMN status TEXT NOT NULL DEFAULT 'finished'
    CHECK (status IN ('finished', 'abandoned'));

-- Whether the seat's player resigned before the match ended.
ALTER TABLE match_players ADD COLUMN resigned BOOLEAN NOT NULL DEFAULT FALSE;
