//! The migrations in the repository's `migrations/` directory, embedded in the binary.
//!
//! Each backend has its own folder (`migrations/postgres`, `migrations/sqlite`) because
//! the column types differ (UUID and JSONB against BLOB and TEXT); the tables, columns,
//! keys and indexes are the same, so the one set of queries behaves the same on both.
//! The files are embedded with `include_str!` rather than sqlx's `migrate!` macro, which
//! would pull sqlx's whole compile-time query machinery into the build. A test checks that
//! the list below names every file in both folders, so a new migration cannot be forgotten.
//!
//! The files follow sqlx-cli's `<version>_<description>.sql` naming, and the versions and
//! checksums recorded in `_sqlx_migrations` are the ones sqlx-cli would record, so
//! `sqlx migrate run --source migrations/postgres` and this crate agree.

use std::borrow::Cow;

use sqlx::SqlSafeStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};

use crate::Backend;

/// One migration, in both dialects.
struct EmbeddedMigration {
    version: i64,
    /// The file name's description, underscores read as spaces (as sqlx-cli does).
    description: &'static str,
    postgres: &'static str,
    sqlite: &'static str,
}

const MIGRATIONS: &[EmbeddedMigration] = &[
    EmbeddedMigration {
        version: 1,
        description: "initial",
        postgres: include_str!("../../migrations/postgres/0001_initial.sql"),
        sqlite: include_str!("../../migrations/sqlite/0001_initial.sql"),
    },
    EmbeddedMigration {
        version: 2,
        description: "hashed invites private matches deck salt",
        postgres: include_str!(
            "../../migrations/postgres/0002_hashed_invites_private_matches_deck_salt.sql"
        ),
        sqlite: include_str!(
            "../../migrations/sqlite/0002_hashed_invites_private_matches_deck_salt.sql"
        ),
    },
    EmbeddedMigration {
        version: 3,
        description: "clocks seat control match status",
        postgres: include_str!(
            "../../migrations/postgres/0003_clocks_seat_control_match_status.sql"
        ),
        sqlite: include_str!("../../migrations/sqlite/0003_clocks_seat_control_match_status.sql"),
    },
    EmbeddedMigration {
        version: 4,
        description: "game leases",
        postgres: include_str!("../../migrations/postgres/0004_game_leases.sql"),
        sqlite: include_str!("../../migrations/sqlite/0004_game_leases.sql"),
    },
    EmbeddedMigration {
        version: 5,
        description: "moves keyed by game",
        postgres: include_str!("../../migrations/postgres/0005_moves_keyed_by_game.sql"),
        sqlite: include_str!("../../migrations/sqlite/0005_moves_keyed_by_game.sql"),
    },
    EmbeddedMigration {
        version: 6,
        description: "lighter move writes",
        postgres: include_str!("../../migrations/postgres/0006_lighter_move_writes.sql"),
        sqlite: include_str!("../../migrations/sqlite/0006_lighter_move_writes.sql"),
    },
    EmbeddedMigration {
        version: 7,
        description: "moves keyed by command",
        postgres: include_str!("../../migrations/postgres/0007_moves_keyed_by_command.sql"),
        sqlite: include_str!("../../migrations/sqlite/0007_moves_keyed_by_command.sql"),
    },
    EmbeddedMigration {
        version: 8,
        description: "update events",
        postgres: include_str!("../../migrations/postgres/0008_update_events.sql"),
        sqlite: include_str!("../../migrations/sqlite/0008_update_events.sql"),
    },
    EmbeddedMigration {
        version: 9,
        description: "ratings",
        postgres: include_str!("../../migrations/postgres/0009_ratings.sql"),
        sqlite: include_str!("../../migrations/sqlite/0009_ratings.sql"),
    },
    EmbeddedMigration {
        version: 10,
        description: "queue",
        postgres: include_str!("../../migrations/postgres/0010_queue.sql"),
        sqlite: include_str!("../../migrations/sqlite/0010_queue.sql"),
    },
    EmbeddedMigration {
        version: 11,
        description: "player logins",
        postgres: include_str!("../../migrations/postgres/0011_player_logins.sql"),
        sqlite: include_str!("../../migrations/sqlite/0011_player_logins.sql"),
    },
    EmbeddedMigration {
        version: 12,
        description: "points by kind",
        postgres: include_str!("../../migrations/postgres/0012_points_by_kind.sql"),
        sqlite: include_str!("../../migrations/sqlite/0012_points_by_kind.sql"),
    },
    EmbeddedMigration {
        version: 13,
        description: "recovery codes",
        postgres: include_str!("../../migrations/postgres/0013_recovery_codes.sql"),
        sqlite: include_str!("../../migrations/sqlite/0013_recovery_codes.sql"),
    },
    EmbeddedMigration {
        version: 14,
        description: "chat",
        postgres: include_str!("../../migrations/postgres/0014_chat.sql"),
        sqlite: include_str!("../../migrations/sqlite/0014_chat.sql"),
    },
    EmbeddedMigration {
        version: 15,
        description: "finished games owned",
        postgres: include_str!("../../migrations/postgres/0015_finished_games_owned.sql"),
        sqlite: include_str!("../../migrations/sqlite/0015_finished_games_owned.sql"),
    },
];

/// The migrator for one backend. Running it applies what is missing and does nothing on
/// an up-to-date database; it fails if an applied migration's file has since changed.
pub(crate) fn migrator(backend: Backend) -> Migrator {
    let migrations = MIGRATIONS
        .iter()
        .map(|migration| {
            let sql = match backend {
                Backend::Postgres => migration.postgres,
                Backend::Sqlite => migration.sqlite,
            };
            Migration::new(
                migration.version,
                Cow::Borrowed(migration.description),
                MigrationType::Simple,
                sql.into_sql_str(),
                false,
            )
        })
        .collect();
    Migrator::with_migrations(migrations)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `(version, description)` of every `.sql` file in a migrations folder.
    fn files_in(folder: &str) -> Vec<(i64, String)> {
        let path = format!("{}/../migrations/{folder}", env!("CARGO_MANIFEST_DIR"));
        let mut files: Vec<(i64, String)> = std::fs::read_dir(&path)
            .unwrap_or_else(|error| panic!("reading {path}: {error}"))
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter_map(|name| name.strip_suffix(".sql").map(str::to_owned))
            .map(|stem| {
                let (version, description) = stem.split_once('_').expect("<version>_<name>");
                (version.parse().unwrap(), description.replace('_', " "))
            })
            .collect();
        files.sort();
        files
    }

    #[test]
    fn every_migration_file_is_embedded_for_both_backends() {
        let embedded: Vec<(i64, String)> = MIGRATIONS
            .iter()
            .map(|migration| (migration.version, migration.description.to_owned()))
            .collect();
        assert_eq!(files_in("postgres"), embedded);
        assert_eq!(files_in("sqlite"), embedded);
    }
}
