-- Less work for the database in every move a batch writes, for Postgres;
-- migrations/sqlite/ changes nothing.
--
-- 1. The fencing trigger (migration 4) runs its function only where it can refuse: for
-- a game that has an owner and whose `seq` changes. A single node's games never have an
-- owner, so there it ran a PL/pgSQL function for every move to return the row unchanged.
-- The function itself is unchanged and still decides; the condition only skips the call.
--
-- 2. Moves no longer carry a foreign key to their lobby. Its check ran for every move
-- inserted, as a query that locks the lobby's row `FOR KEY SHARE`: the row the same
-- statement had just updated, so each move also wrote that lock into the row and the
-- log. In a benchmark of the batch statement alone (pgbench, 50 moves of 50 games a
-- statement, 400 games in play), the key's check was a fifth of the statement's time,
-- and both changes together a quarter. The key guarded nothing the store does not
-- already ensure: every write of a move updates its game's lobby row first, guarded by
-- `seq`, and writes nothing when no row was updated (an unknown game is `NotFound`).
-- Lobbies are never deleted by the server; should an operator delete one, the trigger
-- below deletes its moves, as the key's ON DELETE CASCADE did. SQLite keeps the key:
-- there its check is one lookup in a page already in memory, and turning it off changed
-- nothing measurable.

DROP TRIGGER lobbies_fence_owner ON lobbies;

CREATE TRIGGER lobbies_fence_owner
    BEFORE UPDATE ON lobbies
    FOR EACH ROW
    WHEN (OLD.owner_node IS NOT NULL AND NEW.seq IS DISTINCT FROM OLD.seq)
    EXECUTE FUNCTION lobbies_fence_owner();

ALTER TABLE moves DROP CONSTRAINT moves_game_id_fkey;

CREATE FUNCTION lobbies_delete_moves() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM moves WHERE game_id = OLD.id;
    RETURN OLD;
END;
$$;

CREATE TRIGGER lobbies_delete_moves
    AFTER DELETE ON lobbies
    FOR EACH ROW EXECUTE FUNCTION lobbies_delete_moves();
