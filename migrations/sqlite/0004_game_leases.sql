-- Game ownership, for SQLite; migrations/postgres/ has the full change.
--
-- Ownership, node leases and the fencing trigger exist only on Postgres, where several
-- server nodes share one database. An SQLite store is always the one node of its server
-- (the store refuses a node name on SQLite), so it owns nothing. The owner column is
-- added all the same, always NULL here, so that both schemas keep the same columns of
-- `lobbies`, as the store's shared queries assume.

ALTER TABLE lobbies ADD COLUMN owner_node TEXT;
