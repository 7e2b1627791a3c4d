-- Game ownership leases and fencing, for Postgres, so that several server nodes can share
-- one database and still decide each game on exactly one node. migrations/sqlite/ adds
-- the same two columns only, which stay NULL there: an SQLite store is always the one
-- node of its server, so it has nothing to lease and no one to fence.
--
-- A live game (status 'open' or 'playing') is owned by the node named in `owner_node`
-- until `lease_until`, a time of the database's own clock (`now()`), because the nodes'
-- clocks differ. The owner renews its leases well before they lapse; another node may
-- take a game only once its lease is missing or lapsed. The lease alone cannot stop a
-- node that lost it without noticing (a long pause, a cut network) from writing what its
-- memory still holds, so the trigger below fences every write of a game's `seq` by the
-- name of the node the writing session says it is.

-- The node that owns the game (the server's node name), or NULL when no node does: a
-- single-node server never sets it, and a node that hands a game over clears it.
ALTER TABLE lobbies ADD COLUMN owner_node TEXT;

-- Until when the owner's lease holds, on the database's clock; NULL exactly when there
-- is no owner, so that "free or lapsed" is one comparison.
ALTER TABLE lobbies ADD COLUMN lease_until TIMESTAMPTZ;

ALTER TABLE lobbies ADD CONSTRAINT lobbies_owner_has_lease
    CHECK ((owner_node IS NULL) = (lease_until IS NULL));

-- Nodes look for live games that no one owns or whose owner's lease lapsed (a node that
-- was killed), to take them over: a range scan of this partial index, where a free game
-- sorts first as if its lease had lapsed at the beginning of time. Finished games, the
-- large majority, are not in it, and the few games a scan finds are sorted by age after.
CREATE INDEX lobbies_unleased
    ON lobbies ((COALESCE(lease_until, '-infinity'::timestamptz)))
    WHERE status IN ('open', 'playing');

-- Each owner renews and releases its own live games by name.
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
-- over cannot advance it even if it believes it still owns it. Lease changes themselves
-- leave `seq` alone and pass. The SQLSTATE 'CF001' is the store's own: it reports it as
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
