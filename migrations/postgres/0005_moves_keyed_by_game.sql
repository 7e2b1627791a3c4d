-- Moves stored in the order of their key: a change to SQLite's storage of `moves` only
-- (see migrations/sqlite/). Postgres keeps its table and its two unique indexes: there
-- they are work of the database's own processes, and the change was measured on SQLite
-- alone. This version exists so that both backends count the same versions.
SELECT 1;
