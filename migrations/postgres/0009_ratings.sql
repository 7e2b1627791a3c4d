-- Rated play, for Postgres; migrations/sqlite/ has the same change.
--
-- A lobby is rated or not from its creation. When a rated game ends, the transaction that
-- writes its match also rates it: it takes the next number of the rating ledger (whose one
-- row it holds locked until it commits, so that rated matches are rated one at a time, in
-- the order of their numbers), reads the players' ratings in the match's pool, computes the
-- new ones and writes them with one row per seat in `rating_changes`. Ratings are
-- therefore a function of the rated matches taken in `rating_seq` order, and
-- `carcassonne-server ratings rebuild` recomputes them all from `rating_changes`' inputs
-- (the pool, each seat's place, and the fixed rating a bot played at).

ALTER TABLE lobbies ADD COLUMN rated BOOLEAN NOT NULL DEFAULT FALSE;

-- The rating pool of a rated match, and its number in the ledger; NULL when unrated.
ALTER TABLE matches ADD COLUMN rating_pool TEXT;
ALTER TABLE matches ADD COLUMN rating_seq BIGINT;
CREATE UNIQUE INDEX matches_by_rating_seq ON matches (rating_seq) WHERE rating_seq IS NOT NULL;

CREATE TABLE rating_ledger (
    id SMALLINT PRIMARY KEY CHECK (id = 1),
    last_seq BIGINT NOT NULL
);
INSERT INTO rating_ledger (id, last_seq) VALUES (1, 0);

-- A player's current rating in a pool: `mu` and `sigma` of Weng-Lin, `rating` the
-- conservative estimate `mu - 3 sigma` the leaderboard orders by, `established` once the
-- player has finished enough rated games in the pool to be ranked.
CREATE TABLE ratings (
    player_id UUID NOT NULL REFERENCES players (id),
    pool TEXT NOT NULL,
    mu DOUBLE PRECISION NOT NULL,
    sigma DOUBLE PRECISION NOT NULL,
    rating DOUBLE PRECISION NOT NULL,
    games INTEGER NOT NULL,
    established BOOLEAN NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (player_id, pool)
);

-- The leaderboard: a pool's ranked players best first, paged by (rating, player_id).
CREATE INDEX ratings_leaderboard ON ratings (pool, rating DESC, player_id) WHERE established;

-- Each seat of each rated match: its place (1 is first; ties share a place), and its rating
-- before and after. A bot's seat has no player and keeps its fixed rating.
CREATE TABLE rating_changes (
    match_id UUID NOT NULL REFERENCES matches (id) ON DELETE CASCADE,
    seat SMALLINT NOT NULL,
    player_id UUID REFERENCES players (id),
    pool TEXT NOT NULL,
    rating_seq BIGINT NOT NULL,
    place SMALLINT NOT NULL,
    mu_before DOUBLE PRECISION NOT NULL,
    sigma_before DOUBLE PRECISION NOT NULL,
    mu_after DOUBLE PRECISION NOT NULL,
    sigma_after DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (match_id, seat)
);

-- A player's rating history in a pool, newest first.
CREATE INDEX rating_changes_by_player
    ON rating_changes (player_id, pool, rating_seq DESC)
    WHERE player_id IS NOT NULL;

-- The rebuild reads every rated match's seats in ledger order.
CREATE INDEX rating_changes_by_seq ON rating_changes (rating_seq, seat);
