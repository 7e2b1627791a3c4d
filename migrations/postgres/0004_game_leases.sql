-- Game ownership for several server nodes sharing one database, and the fence that keeps
-- each game decided by exactly one node. migrations/sqlite/ adds the owner column only,
-- which stays NULL there: an SQLite store is always the one node of its server.
--
-- A live game (status 'open' or 'playing') is owned by the node named in `owner_node`.
-- Each node proves it is alive by renewing its row in `cluster_nodes` (one row per node,
-- so renewing costs the same whatever the number of games); a node's ownership of its
-- games lasts while `alive_until`, a time of the database's own clock (`now()`, since
-- the nodes' clocks differ), has not passed. Another node may take a game only when it
-- has no owner or its owner's lease has lapsed. Renewing never touches the games' rows,
-- so it never waits for, nor deadlocks with, the writes of moves.
--
-- The lease alone cannot stop a node that lost it without noticing (a long pause, a cut
-- network) from writing what its memory still holds, so the trigger below fences every
-- write of a game's `seq` by the name of the node the writing session says it is.

-- The node that owns the game (the server's node name), or NULL when no node does: a
-- single-node server never sets it, and a node that hands a game over clears it.
ALTER TABLE lobbies ADD COLUMN owner_node TEXT;

-- Every node of the cluster, and until when its leases hold, on the database's clock.
CREATE TABLE cluster_nodes (
    node        TEXT PRIMARY KEY,
    alive_until TIMESTAMPTZ NOT NULL
);

-- A node's own live games (to renew and release them), the games of a node whose lease
-- lapsed, and the games without an owner (NULLs are in a b-tree): the lookups of taking
-- over. Finished games, the large majority, are not in it.
CREATE INDEX lobbies_owner_node
    ON lobbies (owner_node)
    WHERE status IN ('open', 'playing');

-- The fence. Every change of a lobby or game sets its `seq` (moves, seats, the start, the
-- finish, cancelling), so refusing a `seq` change to every session but the owner's
-- refuses every such change. The writing session names its node in the setting
-- `carcassonne.node` (set on every pooled connection of a store with a node name); a game
-- without an owner is written by anyone, which is how a single-node server, whose games
-- never get one, goes on as before. The check runs on the row as locked for the update,
-- after any concurrent change of owner has committed, so a node whose game was taken
-- over cannot advance it even if it believes it still owns it. Changes of owner leave
-- `seq` alone and pass. The SQLSTATE 'CF001' is the store's own: it reports it as
-- StoreError::NotOwner.
CREATE FUNCTION lobbies_fence_owner() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    writer TEXT := current_setting('carcassonne.node', true);
BEGIN
    IF NEW.seq IS DISTINCT FROM OLD.seq
       AND OLD.owner_node IS NOT NULL
       AND OLD.owner_node IS DISTINCT FROM writer THEN
        RAISE EXCEPTION 'game % is owned by node %, not by %',
            OLD.id, OLD.owner_node, COALESCE(NULLIF(writer, ''), 'a node without a name')
            USING ERRCODE = 'CF001';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER lobbies_fence_owner
    BEFORE UPDATE ON lobbies
    FOR EACH ROW EXECUTE FUNCTION lobbies_fence_owner();
