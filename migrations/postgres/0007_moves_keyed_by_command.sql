-- SQLite's moves keyed by the command that made them, instead of a trigger that looked
-- through a game's moves (see migrations/sqlite/). Postgres keeps its primary key
-- `(game_id, seq)` and its unique index on `(game_id, seat, command_id)`, which do the
-- same work in the database's own processes. This version exists so that both backends
-- count the same versions.
SELECT 1;
