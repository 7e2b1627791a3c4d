-- Game ownership leases, for SQLite; migrations/postgres/ has the full change.
--
-- Leases and their fencing trigger exist only on Postgres, where several server nodes
-- share one database. An SQLite store is always the one node of its server (the store
-- refuses a node name on SQLite), so it leases nothing. The two columns are added all the
-- same, always NULL here, so that both schemas keep the same columns, as the store's
-- shared queries assume.

ALTER TABLE lobbies ADD COLUMN owner_node TEXT;

ALTER TABLE lobbies ADD COLUMN lease_until INTEGER;
