-- Secrets and private games, for Postgres; migrations/sqlite/ has the same change.

-- Invite codes are stored only as their SHA-256 (lowercase hex), like seat tokens. Codes
-- that earlier versions stored in clear are listed in unhashed_invites: SQLite has no
-- SHA-256 function, so the store hashes them at start-up, on both databases alike,
-- deleting each row of unhashed_invites as it replaces that lobby's code.
ALTER TABLE lobbies RENAME COLUMN invite_code TO invite_hash;

CREATE TABLE unhashed_invites (
    lobby_id UUID NOT NULL PRIMARY KEY REFERENCES lobbies (id) ON DELETE CASCADE
);

INSERT INTO unhashed_invites (lobby_id) SELECT id FROM lobbies WHERE invite_hash IS NOT NULL;

-- The salt of the deck commitment, 64 hex characters, set when the game starts.
ALTER TABLE lobbies ADD COLUMN deck_salt TEXT;

-- A match is as public as its lobby was: history lists show private matches only to
-- those who ask for them. Imported matches, which have no lobby, stay public.
ALTER TABLE matches ADD COLUMN is_public BOOLEAN NOT NULL DEFAULT TRUE;

UPDATE matches SET is_public = FALSE
    WHERE id IN (SELECT id FROM lobbies WHERE NOT is_public);
