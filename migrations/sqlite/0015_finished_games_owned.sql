-- The finished games a node still owns, for SQLite; migrations/postgres/ has the same
-- change. An SQLite store is always the one node of its server and never sets an owner,
-- so here the index stays empty; it is kept so that both schemas have the same indexes.
CREATE INDEX lobbies_finished_owned
    ON lobbies (owner_node)
    WHERE status = 'finished' AND owner_node IS NOT NULL;
