-- The finished games a node still owns, for Postgres; migrations/sqlite/ has the same
-- change. A finished game keeps its owner during its post-game stay, while its room is up
-- on that node; a node that starts again forgets the ones it owned (it may have crashed
-- in their stay). Without this index that statement read every lobby ever played, the
-- finished ones by far the most, before the node served anything. Only finished games
-- still owned are in it: those in their post-game stay, however large the table grows.
CREATE INDEX lobbies_finished_owned
    ON lobbies (owner_node)
    WHERE status = 'finished' AND owner_node IS NOT NULL;
