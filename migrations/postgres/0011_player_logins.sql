-- Players signed in by another site's accounts, for Postgres; migrations/sqlite/ has the
-- same change. A token's subject under its issuer is bound to one player, made at its
-- first sign-in.

CREATE TABLE player_logins (
    issuer TEXT NOT NULL,
    subject TEXT NOT NULL,
    player_id UUID NOT NULL REFERENCES players (id),
    created_at BIGINT NOT NULL,
    PRIMARY KEY (issuer, subject)
);
