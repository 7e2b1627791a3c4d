-- In-game chat, for Postgres; migrations/sqlite/ has the same change.
--
-- A game's chat is a log of its own, numbered by `chat_seq` rather than by the game's
-- `seq`: saying something is not an update of the game, and must never be refused
-- because a move took the next `seq` first. The server makes each entry's JSON; the store
-- keeps the text and never reads it.

-- Who may write in the chat, chosen by the lobby's creator: everyone, only the seated
-- players, or nobody. Existing lobbies keep the chat open to all, as it would have been.
ALTER TABLE lobbies ADD COLUMN chat_policy TEXT NOT NULL DEFAULT 'all'
    CHECK (chat_policy IN ('all', 'players', 'off'));

-- The entries, keyed by game and number, so that the last page and the page before an
-- entry are both read backwards along the key. The audience is a column, not part of the
-- entry's JSON, so that a spectator's read can leave out what only players may see.
-- Unlike the moves (migration 6), entries keep their foreign key, as `update_events`
-- does: an entry is written once per message said, not once per move, so its check
-- costs nothing that matters, and it is what refuses an entry of an unknown game. A
-- deleted lobby takes its chat with it.
CREATE TABLE chat_entries (
    game_id UUID NOT NULL REFERENCES lobbies (id) ON DELETE CASCADE,
    chat_seq BIGINT NOT NULL,
    audience TEXT NOT NULL CHECK (audience IN ('players', 'everyone')),
    created_at BIGINT NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (game_id, chat_seq)
);

-- Who a seat no longer wants to read: `author` is the server's name for whoever wrote
-- (a player's identity or a guest's seat), which the store does not interpret. Kept with
-- the game, so that a restored game still hides what its players chose to hide.
CREATE TABLE chat_mutes (
    game_id UUID NOT NULL REFERENCES lobbies (id) ON DELETE CASCADE,
    seat SMALLINT NOT NULL,
    author TEXT NOT NULL,
    PRIMARY KEY (game_id, seat, author)
);
