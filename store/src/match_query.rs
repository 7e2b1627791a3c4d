//! The SQL text of the match-history list, built from the shape of the filter.
//!
//! Only the filters that are given become conditions, so that every combination gets a
//! plan on the right index: a catch-all condition such as `($1 IS NULL OR player_count =
//! $1)` would hide from the planner which index applies. Values are bind parameters,
//! `$1`, `$2`, ... in the order of [`MatchListQuery::params`], except the expansion
//! bitmasks (see [`masks_including`]). The text is the same for both backends (SQLite
//! accepts `$n`).
//!
//! With a player filter the scan runs on that player's rows of `match_players`, in the
//! order of its `(player_id, finished_at, match_id)` index, and joins each match;
//! otherwise it runs on `matches` in the order of its `(finished_at, id)` index, or of
//! `(player_count, finished_at, id)` when the player count is fixed. Either way the rows
//! come out already in page order, so the `LIMIT` stops the scan early.

use carcassonne_core::Expansion;
use uuid::Uuid;

use crate::convert::{TextColumn, expansions_mask};
use crate::{MatchCursor, MatchFilter};

/// The columns of a match summary, without its seats, as the list and detail queries read
/// them from `matches m`.
pub(crate) const SUMMARY_COLUMNS: &str = "m.id, m.name, m.rules, m.player_count, \
     m.started_at, m.finished_at, m.status, m.tiles_placed, m.is_public";

/// A value bound to a placeholder, in the column's own type (Postgres compares strictly).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Param {
    Uuid(Uuid),
    BigInt(i64),
    SmallInt(i16),
    Text(&'static str),
}

/// A list query ready to bind and run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MatchListQuery {
    pub sql: String,
    pub params: Vec<Param>,
}

/// The rows a listing walks, and the columns its order and keyset run on.
struct Scan {
    from_clause: &'static str,
    time_column: &'static str,
    id_column: &'static str,
}

/// All matches, in the order of `matches_newest` (or `matches_by_player_count`).
const MATCHES_SCAN: Scan = Scan {
    from_clause: "matches m",
    time_column: "m.finished_at",
    id_column: "m.id",
};

/// One player's rows of `match_players` in the order of `match_players_by_player`, each
/// joined to its match. `CROSS JOIN` tells SQLite to keep `match_players` as the outer
/// loop, which is always right when a player is given (a player is in a small share of
/// all matches), whatever its statistics say; Postgres reads it as an inner join.
const PLAYER_SCAN: Scan = Scan {
    from_clause: "match_players p CROSS JOIN matches m",
    time_column: "p.finished_at",
    id_column: "p.match_id",
};

/// Collects conditions and the parameters they use.
#[derive(Default)]
struct Conditions {
    conditions: Vec<String>,
    params: Vec<Param>,
}

impl Conditions {
    /// Adds a parameter and returns its placeholder.
    fn param(&mut self, value: Param) -> String {
        self.params.push(value);
        format!("${}", self.params.len())
    }

    fn push(&mut self, condition: String) {
        self.conditions.push(condition);
    }

    /// Chooses the scan: a player filter walks that player's rows.
    fn scan_for(&mut self, player: Option<Uuid>) -> &'static Scan {
        let Some(player) = player else {
            return &MATCHES_SCAN;
        };
        let placeholder = self.param(Param::Uuid(player));
        self.push(format!("p.player_id = {placeholder}"));
        self.push("m.id = p.match_id".to_owned());
        &PLAYER_SCAN
    }

    /// Only rows strictly after the cursor, in the newest-first order.
    fn after(&mut self, scan: &Scan, cursor: MatchCursor) {
        let time = self.param(Param::BigInt(cursor.finished_at));
        let id = self.param(Param::Uuid(cursor.id));
        let Scan {
            time_column,
            id_column,
            ..
        } = scan;
        self.push(format!("({time_column}, {id_column}) < ({time}, {id})"));
    }

    /// The filters other than the player, which `scan_for` took.
    fn filters(&mut self, scan: &Scan, filter: &MatchFilter) {
        let time_column = scan.time_column;
        if let Some(from) = filter.from {
            let placeholder = self.param(Param::BigInt(from));
            self.push(format!("{time_column} >= {placeholder}"));
        }
        if let Some(to) = filter.to {
            let placeholder = self.param(Param::BigInt(to));
            self.push(format!("{time_column} < {placeholder}"));
        }
        // One probe of the `(match_id, player_id)` unique index per listed match.
        if let Some(opponent) = filter.opponent {
            let placeholder = self.param(Param::Uuid(opponent));
            self.push(format!(
                "EXISTS (SELECT 1 FROM match_players o \
                 WHERE o.match_id = m.id AND o.player_id = {placeholder})"
            ));
        }
        if let Some(players) = filter.players {
            let placeholder = self.param(Param::SmallInt(i16::from(players)));
            self.push(format!("m.player_count = {placeholder}"));
        }
        // Abandoned matches are expected to be few, and finished ones the most, so like
        // privacy below this filters the scan in index order rather than needing an index.
        if let Some(status) = filter.status {
            let placeholder = self.param(Param::Text(status.to_column()));
            self.push(format!("m.status = {placeholder}"));
        }
        let required = expansions_mask(&filter.expansions);
        if required != 0 {
            self.push(format!("m.expansions IN ({})", masks_including(required)));
        }
        // Private matches are few, so filtering them out of the scan in index order
        // costs little and needs no index of its own.
        if !filter.include_private {
            self.push("m.is_public".to_owned());
        }
    }

    /// The whole query, newest first, at most `fetch` rows.
    fn into_query(mut self, scan: &Scan, fetch: i64) -> MatchListQuery {
        let where_clause = if self.conditions.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", self.conditions.join(" AND "))
        };
        let limit = self.param(Param::BigInt(fetch));
        let Scan {
            from_clause,
            time_column,
            id_column,
        } = scan;
        MatchListQuery {
            sql: format!(
                "SELECT {SUMMARY_COLUMNS} FROM {from_clause}{where_clause} \
                 ORDER BY {time_column} DESC, {id_column} DESC LIMIT {limit}"
            ),
            params: self.params,
        }
    }
}

/// The query for one page: newest first, strictly after `after`, at most `fetch` rows.
pub(crate) fn match_list_query(
    filter: &MatchFilter,
    after: Option<MatchCursor>,
    fetch: i64,
) -> MatchListQuery {
    let mut conditions = Conditions::default();
    let scan = conditions.scan_for(filter.player);
    if let Some(cursor) = after {
        conditions.after(scan, cursor);
    }
    conditions.filters(scan, filter);
    conditions.into_query(scan, fetch)
}

/// Every expansions bitmask that has all the bits of `required`, as a list of literals.
///
/// The condition is written as a list of values rather than as `(expansions & $n) =
/// $n`, because the planners have statistics for the values of a column but none for a
/// bitwise expression: Postgres guessed such a test matched 0.5% of rows and chose a full
/// scan and sort. The values are literals, not parameters, so that each combination of
/// expansions is its own statement with its own plan; they are integers computed here,
/// never text from a request.
fn masks_including(required: i32) -> String {
    let every_expansion = expansions_mask(&Expansion::ALL);
    (0..=every_expansion)
        .filter(|mask| mask & required == required)
        .map(|mask| mask.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `$first, $first+1, ...`: `count` placeholders for an `IN (...)` list.
pub(crate) fn placeholders(first: usize, count: usize) -> String {
    (first..first + count)
        .map(|index| format!("${index}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `($1, $2), ($3, $4), ...`: the placeholders of a multi-row `VALUES` list of `rows`
/// rows of `columns` values each.
pub(crate) fn values_rows(rows: usize, columns: usize) -> String {
    (0..rows)
        .map(|row| format!("({})", placeholders(row * columns + 1, columns)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MatchStatus;

    /// Every parameter has its placeholder in the text, and no placeholder lacks one.
    fn assert_placeholders_match(query: &MatchListQuery) {
        for index in 1..=query.params.len() {
            assert!(query.sql.contains(&format!("${index}")), "{}", query.sql);
        }
        let beyond = format!("${}", query.params.len() + 1);
        assert!(!query.sql.contains(&beyond), "{}", query.sql);
    }

    #[test]
    fn no_filter_scans_matches_newest_first() {
        let query = match_list_query(&MatchFilter::default(), None, 21);
        assert_eq!(
            query.sql,
            format!(
                "SELECT {SUMMARY_COLUMNS} FROM matches m WHERE m.is_public \
                 ORDER BY m.finished_at DESC, m.id DESC LIMIT $1"
            )
        );
        assert_eq!(query.params, vec![Param::BigInt(21)]);
    }

    #[test]
    fn private_matches_are_listed_only_on_request() {
        let filter = MatchFilter {
            include_private: true,
            ..MatchFilter::default()
        };
        let query = match_list_query(&filter, None, 21);
        assert!(!query.sql.contains("WHERE"), "{}", query.sql);
    }

    #[test]
    fn a_player_filter_scans_that_players_rows() {
        let player = Uuid::from_u128(7);
        let cursor = MatchCursor {
            finished_at: 1_000,
            id: Uuid::from_u128(9),
        };
        let filter = MatchFilter {
            player: Some(player),
            ..MatchFilter::default()
        };
        let query = match_list_query(&filter, Some(cursor), 11);
        assert!(
            query
                .sql
                .contains("FROM match_players p CROSS JOIN matches m")
        );
        assert!(query.sql.contains("p.player_id = $1 AND m.id = p.match_id"));
        assert!(query.sql.contains("(p.finished_at, p.match_id) < ($2, $3)"));
        assert!(
            query
                .sql
                .ends_with("ORDER BY p.finished_at DESC, p.match_id DESC LIMIT $4")
        );
        assert_eq!(
            query.params,
            vec![
                Param::Uuid(player),
                Param::BigInt(1_000),
                Param::Uuid(Uuid::from_u128(9)),
                Param::BigInt(11),
            ]
        );
    }

    #[test]
    fn every_filter_together_binds_each_value_once() {
        let filter = MatchFilter {
            player: Some(Uuid::from_u128(1)),
            from: Some(10),
            to: Some(20),
            expansions: vec![Expansion::Abbot, Expansion::River],
            players: Some(4),
            status: Some(MatchStatus::Abandoned),
            opponent: Some(Uuid::from_u128(3)),
            include_private: false,
        };
        let cursor = MatchCursor {
            finished_at: 15,
            id: Uuid::from_u128(2),
        };
        let query = match_list_query(&filter, Some(cursor), 51);
        assert_placeholders_match(&query);
        assert!(query.sql.contains("p.finished_at >= $4"));
        assert!(query.sql.contains("p.finished_at < $5"));
        assert!(query.sql.contains("o.player_id = $6)"));
        assert!(query.sql.contains("m.player_count = $7"));
        assert!(query.sql.contains("m.status = $8"));
        assert!(query.sql.contains("m.expansions IN (3, 7, 11, 15)"));
        assert_eq!(query.params[5], Param::Uuid(Uuid::from_u128(3)));
        assert_eq!(query.params[6], Param::SmallInt(4));
        assert_eq!(query.params[7], Param::Text("abandoned"));
        assert_eq!(query.params.len(), 9);
    }

    #[test]
    fn expansion_masks_list_every_superset() {
        assert_eq!(masks_including(8), "8, 9, 10, 11, 12, 13, 14, 15");
        assert_eq!(masks_including(15), "15");
        assert_eq!(masks_including(5), "5, 7, 13, 15");
    }

    #[test]
    fn placeholders_number_from_the_first() {
        assert_eq!(placeholders(3, 3), "$3, $4, $5");
        assert_eq!(placeholders(1, 1), "$1");
    }

    #[test]
    fn values_rows_number_row_by_row() {
        assert_eq!(values_rows(2, 3), "($1, $2, $3), ($4, $5, $6)");
        assert_eq!(values_rows(1, 1), "($1)");
    }
}
