-- Where each seat's points came from, by kind of feature, for SQLite;
-- migrations/postgres/ has the same change. The profile sums them per player.
--
-- Matches written before this migration are filled in from their scoring breakdown.
-- That breakdown lists the features scored, not an abbot's recall, so on those old rows
-- the five columns may add up to a little less than the score.
--
-- The index a player's history and statistics read gains the five columns, so that the
-- statistics still read that index alone (it is rebuilt after the fill).

DROP INDEX match_players_by_player;

ALTER TABLE match_players ADD COLUMN road_points INTEGER NOT NULL DEFAULT 0;
ALTER TABLE match_players ADD COLUMN city_points INTEGER NOT NULL DEFAULT 0;
ALTER TABLE match_players ADD COLUMN monastery_points INTEGER NOT NULL DEFAULT 0;
ALTER TABLE match_players ADD COLUMN garden_points INTEGER NOT NULL DEFAULT 0;
ALTER TABLE match_players ADD COLUMN field_points INTEGER NOT NULL DEFAULT 0;

UPDATE match_players
SET road_points = paid.road,
    city_points = paid.city,
    monastery_points = paid.monastery,
    garden_points = paid.garden,
    field_points = paid.field
FROM (
    SELECT r.match_id AS match_id,
           scorer.value AS seat,
           SUM(CASE WHEN json_extract(feature.value, '$.kind') = 'road' THEN json_extract(feature.value, '$.points') ELSE 0 END) AS road,
           SUM(CASE WHEN json_extract(feature.value, '$.kind') = 'city' THEN json_extract(feature.value, '$.points') ELSE 0 END) AS city,
           SUM(CASE WHEN json_extract(feature.value, '$.kind') = 'monastery' THEN json_extract(feature.value, '$.points') ELSE 0 END) AS monastery,
           SUM(CASE WHEN json_extract(feature.value, '$.kind') = 'garden' THEN json_extract(feature.value, '$.points') ELSE 0 END) AS garden,
           SUM(CASE WHEN json_extract(feature.value, '$.kind') = 'field' THEN json_extract(feature.value, '$.points') ELSE 0 END) AS field
    FROM match_records r,
         json_each(r.breakdown) AS feature,
         json_each(json_extract(feature.value, '$.scorers')) AS scorer
    GROUP BY r.match_id, scorer.value
) AS paid
WHERE match_players.match_id = paid.match_id AND match_players.seat = paid.seat;

CREATE INDEX match_players_by_player
    ON match_players (player_id, finished_at DESC, match_id DESC, score, winner,
                      road_points, city_points, monastery_points, garden_points, field_points)
    WHERE player_id IS NOT NULL;
