//! Persistence for the Carcassonne server, on Postgres or an embedded SQLite file.
//!
//! A game is its setup (the lobby row: rules, seats, seed) plus its ordered move log.
//! The server's game actor writes every accepted command here *before* it acknowledges
//! or broadcasts it, and rebuilds unfinished games at start-up by replaying their logs
//! through the engine. A finished game is written once, in one transaction, with its
//! summary, and is then served by the match-history queries.
//!
//! This crate knows nothing of sockets or HTTP: it takes and returns plain rows.
//!
//! Every change to a lobby or game carries the game's new `seq` (the number of the update
//! the server will broadcast for it), and the store keeps `lobbies.seq` equal to the last
//! one written, so sequence numbers survive restarts.
//!
//! # What the store enforces
//!
//! * A change that sets a `seq` is written only if that `seq` is greater than the lobby's
//!   current one and the lobby is in the status the change needs (open for taking and
//!   freeing seats and for the start; open or playing for seat updates and cancelling;
//!   playing for moves and the finish); otherwise nothing is written and the
//!   call returns [`StoreError::Conflict`], or [`StoreError::NotFound`] for a lobby that
//!   does not exist. A repeated command is therefore always a conflict, never a second
//!   application.
//! * On Postgres shared by several server nodes, a live game is owned by the node that
//!   holds its lease (see [`Store::acquire_lease`]), and a change that sets its `seq` from
//!   any other node (or from a store that names no node) is refused by the database with
//!   [`StoreError::NotOwner`], and nothing is written. This fencing is what makes a fork
//!   impossible when two nodes both believe they own a game, whatever their clocks and
//!   memories say. A game no node owns, as every game of a single-node server, is written
//!   by anyone as before.
//! * A player identity holds at most one seat of a lobby and of a match.
//! * Every call that writes more than one row does so in one transaction.
//! * Every call ends within [`StoreOptions::operation_timeout`] (the acquire timeout and
//!   a second), with
//!   [`StoreError::Unavailable`] if the database has not answered by then. A write that
//!   fails so, or by a lost connection, may still have been committed: the caller learns
//!   the truth from [`Store::stored_at`]. A write that never reached the database (no
//!   connection within [`StoreOptions::acquire_timeout`]) fails with
//!   [`StoreError::Unreachable`] and was certainly not written.
//!
//! # Backends
//!
//! `postgres://` URLs use Postgres, `sqlite:` URLs an SQLite file (WAL mode, created when
//! missing). Each has its own migrations folder (`migrations/postgres`,
//! `migrations/sqlite`) with the same tables in that database's types, and both run the
//! same SQL: the queries in `queries/` are generic over the driver, and the little that
//! differs is said once per backend, in `sqlite.rs` and `postgres.rs`. Migrations are
//! embedded in the binary and applied by [`Store::connect`].

mod convert;
mod error;
mod group_commit;
mod leases;
mod match_query;
mod options;
mod postgres;
mod queries;
pub mod ratings;
mod records;
mod schema;
mod sqlite;

use uuid::Uuid;

use group_commit::MoveWriter;
use queries::SqlStore;
use ratings::{RatingChange, RatingPool};

pub use leases::LeaseHolder;
pub use options::{RatingsAnnouncement, StoreOptions};
pub use records::{
    ChatAudience, ChatEffect, ChatEntryRow, ChatPolicy, ChatRead, FinishedMatch, GameLog,
    HeadToHead, JsonText, LeaderboardCursor, LeaderboardEntry, LiveGame, LobbyRow, LobbyStatus,
    MatchCursor, MatchDetail, MatchFilter, MatchPage, MatchPlanner, MatchSeat, MatchStatus,
    MatchSummary, Millis, MoveOrigin, MoveRow, PlayerRating, PlayerRow, PlayerStats, QueueRound,
    QueueTicket, QueuedLobby, RatedMatchEntry, RatingsRebuilt, SeatControl, SeatRow, StoredAt,
    TicketStatus, TimeControl,
};

use std::pin::Pin;
use std::time::Duration;

/// The lowercase hex SHA-256 of `text`'s UTF-8 bytes: how invite codes (and the
/// server's tokens) are stored. The store uses it to hash invite codes that older
/// versions stored in clear.
pub fn sha256_hex(text: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// What [`Store::start_game`] writes, gathered for the backends.
pub(crate) struct GameStart<'a> {
    pub seats: &'a [SeatRow],
    pub seed: u64,
    pub deck_salt: &'a str,
    pub started_at: Millis,
    pub seq: u64,
    /// The events of the start's update, to store with it (see [`Store::write_logged`]).
    pub events: Option<&'a str>,
}

/// A change that is not a move, for [`Store::write_logged`].
#[derive(Clone, Copy, Debug)]
pub enum LoggedChange<'a> {
    /// As [`Store::add_seat`].
    SeatAdded(&'a SeatRow),
    /// As [`Store::remove_seat`].
    SeatRemoved(u8),
    /// As [`Store::start_game`].
    Started {
        seats: &'a [SeatRow],
        seed: u64,
        deck_salt: &'a str,
        started_at: Millis,
    },
    /// As [`Store::cancel_lobby`].
    Cancelled,
    /// As [`Store::update_seat`]. A seat change that ends the game is written by
    /// [`Store::finish_game_logged`].
    SeatUpdated(&'a SeatRow),
}

/// The last change of a game, which [`Store::finish_game`] writes together with its
/// result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinalChange<'a> {
    /// The move that ended the game (the last tile's action).
    Move(&'a MoveRow),
    /// A seat change that ended the game: a resignation or an abandonment after which no
    /// human plays any seat, under the update number `seq`.
    Seat { seat: &'a SeatRow, seq: u64 },
}

/// Everything the transaction that ends a game writes.
pub(crate) struct GameEnding<'a> {
    pub last: FinalChange<'a>,
    pub result: &'a FinishedMatch,
    /// The events of a final seat change's update (a move's are not stored).
    pub events: Option<&'a str>,
    pub announcement: Option<RatingsAnnouncement>,
}

/// A [`FinalChange`] that owns its row, to be sent to the writer's thread.
enum OwnedFinalChange {
    Move(MoveRow),
    Seat { seat: SeatRow, seq: u64 },
}

impl OwnedFinalChange {
    fn from(change: FinalChange<'_>) -> OwnedFinalChange {
        match change {
            FinalChange::Move(mv) => OwnedFinalChange::Move(mv.clone()),
            FinalChange::Seat { seat, seq } => OwnedFinalChange::Seat {
                seat: seat.clone(),
                seq,
            },
        }
    }

    fn borrowed(&self) -> FinalChange<'_> {
        match self {
            OwnedFinalChange::Move(mv) => FinalChange::Move(mv),
            OwnedFinalChange::Seat { seat, seq } => FinalChange::Seat { seat, seq: *seq },
        }
    }
}

impl FinalChange<'_> {
    /// The update number the change is written under.
    pub(crate) fn seq(&self) -> u64 {
        match self {
            FinalChange::Move(mv) => mv.seq,
            FinalChange::Seat { seq, .. } => *seq,
        }
    }
}

/// Which database a [`Store`] talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Postgres,
    Sqlite,
}

#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    /// The database failed or stopped answering during the call; the caller may try
    /// again. A write that fails so may still have been committed (its COMMIT was sent
    /// and its reply lost): [`Store::stored_at`] tells.
    #[error("the database is unavailable: {0}")]
    Unavailable(String),
    /// The database was not reached in time (no connection could be had within the
    /// acquire timeout, or the pool is closed), or a batch's connection was lost before
    /// its COMMIT was sent: nothing was written, and the caller may try again at once.
    #[error("the database is unreachable: {0}")]
    Unreachable(String),
    /// Every pooled connection stayed in use for the whole acquire timeout: the database
    /// answers, but this node asks more of it than its pool allows. Nothing was written;
    /// the caller should slow down and try again shortly (backpressure, not an outage).
    #[error("the database is busy: {0}")]
    Busy(String),
    /// A uniqueness rule was broken: a `seq` or a `(seat, command_id)` already written.
    #[error("conflict: {0}")]
    Conflict(String),
    /// A row that must exist does not.
    #[error("not found")]
    NotFound,
    /// Stored data could not be decoded (a bug or a hand-edited database).
    #[error("corrupt data: {0}")]
    Corrupt(String),
    /// The URL or the migrations are wrong, or the call needs what this backend lacks
    /// (leases need Postgres).
    #[error("configuration: {0}")]
    Config(String),
    /// The write was refused because another node owns the game (its lease was taken
    /// over): this node must stop running the game, since the owner now decides it.
    /// Nothing was written. The message names the game and its owner.
    #[error("not the owner: {0}")]
    NotOwner(String),
}

/// A connection pool to Postgres or SQLite, with the schema migrated.
#[derive(Clone, Debug)]
pub struct Store {
    backend: BackendStore,
    /// Moves go through here, to be written in batches with other games' moves.
    moves: MoveWriter,
    /// The bound on every call: [`StoreOptions::operation_timeout`].
    operation_timeout: Duration,
    /// [`StoreOptions::ratings_announcement`].
    ratings_announcement: Option<RatingsAnnouncement>,
}

/// How full the connection pool is, for metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolStatus {
    /// Connections open now, in use or idle.
    pub size: u32,
    /// Open connections waiting in the pool for a caller.
    pub idle: u32,
    /// The most connections the pool opens ([`StoreOptions::max_connections`]).
    pub max: u32,
}

impl PoolStatus {
    /// Whether every connection the pool may open is open and in use.
    pub fn saturated(&self) -> bool {
        self.size >= self.max && self.idle == 0
    }
}

/// Runs a Postgres-only call (the leases) on a Postgres store, bounded like every call;
/// on SQLite it fails with [`StoreError::Config`], since an SQLite store serves one node
/// and has nothing to lease.
macro_rules! on_postgres {
    ($store:expr, $operation:literal, $db:ident => $call:expr) => {
        match &$store.backend {
            BackendStore::Postgres($db) => $store.bounded($operation, $call).await,
            BackendStore::Sqlite(_) => Err(StoreError::Config(format!(
                "{} needs Postgres: leases exist only in cluster mode",
                $operation
            ))),
        }
    };
}

/// The same queries, on one database driver or the other.
#[derive(Clone, Debug)]
enum BackendStore {
    Postgres(SqlStore<sqlx::Postgres>),
    Sqlite(SqlStore<sqlx::Sqlite>),
}

/// Evaluates `$call` with `$db` bound to the `SqlStore` of whichever backend `$backend`
/// (a `&BackendStore`) is: `$call` compiles once for each driver's `SqlStore`.
macro_rules! each_backend {
    ($backend:expr, $db:ident => $call:expr) => {
        match $backend {
            BackendStore::Postgres($db) => $call,
            BackendStore::Sqlite($db) => $call,
        }
    };
}

/// Runs the same call on whichever backend the store talks to, bounded by the store's
/// operation timeout and named `$operation` in the error when it runs out.
macro_rules! on_backend {
    ($store:expr, $operation:literal, $db:ident => $call:expr) => {
        each_backend!(&$store.backend, $db => $store.bounded($operation, $call).await)
    };
}

/// Runs a write through [`Store::write`]: `$call` (which awaits the write) runs with
/// `$db` bound to the backend's `SqlStore`, on whichever thread that backend's writes
/// run on, so everything it borrows must be moved in (owned) beforehand.
macro_rules! write_on_backend {
    ($store:expr, $operation:literal, $db:ident => $call:expr) => {
        $store
            .write($operation, move |backend| {
                Box::pin(async move { each_backend!(&backend, $db => $call) })
            })
            .await
    };
}

impl BackendStore {
    /// Writes moves of different games together; one answer per move, in order.
    async fn append_moves(&self, moves: &[(Uuid, &MoveRow)]) -> Vec<Result<(), StoreError>> {
        each_backend!(self, db => db.append_moves(moves).await)
    }

    /// Closes the backend's pool and waits for its connections to be closed.
    async fn close(&self) {
        each_backend!(self, db => db.close().await)
    }
}

impl Store {
    /// Connects to `url` (`postgres://...` or `sqlite://path`, the file created when
    /// missing) and applies the migrations in `migrations/`.
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        Store::connect_with(&StoreOptions::new(url)).await
    }

    /// [`Store::connect`] with explicit pool settings.
    ///
    /// Opening a connection is bounded by the acquire timeout; the migrations themselves
    /// are not bounded, because one cut short would only be rolled back and started over
    /// at the next start-up.
    ///
    /// With [`StoreOptions::node`] set, every connection names that node to the database
    /// so that the fencing trigger can refuse its writes to games it does not own; that
    /// needs Postgres, and on SQLite this fails with
    /// `StoreError::Config("cluster mode needs Postgres")`, before opening anything.
    pub async fn connect_with(options: &StoreOptions) -> Result<Store, StoreError> {
        options.checked_node()?;
        let backend = match options.backend()? {
            Backend::Postgres => BackendStore::Postgres(postgres::connect(options).await?),
            Backend::Sqlite => BackendStore::Sqlite(sqlite::connect(options).await?),
        };
        let for_writer = backend.clone();
        let writer_options = options.clone();
        let open_writer = move || match for_writer {
            BackendStore::Postgres(_) => {
                postgres::connect_writer(&writer_options).map(BackendStore::Postgres)
            }
            sqlite @ BackendStore::Sqlite(_) => Ok(sqlite),
        };
        let store = Store {
            moves: MoveWriter::start(open_writer, options.operation_timeout())?,
            backend,
            operation_timeout: options.operation_timeout(),
            ratings_announcement: options.ratings_announcement,
        };
        on_backend!(store, "hash_clear_invite_codes", db => db.hash_clear_invite_codes())?;
        Ok(store)
    }

    /// Runs one call of the store, failing with [`StoreError::Unavailable`] when it takes
    /// longer than the operation timeout. The call's future is then dropped where it
    /// stands: an open transaction is rolled back and its connection handed back to the
    /// pool, which closes it if it does not answer promptly (see `SqlStore::pool_options`).
    async fn bounded<T>(
        &self,
        operation: &'static str,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.operation_timeout, call).await {
            Ok(Err(StoreError::Unreachable(cause))) if self.pool_status().saturated() => {
                Err(StoreError::Busy(cause))
            }
            Ok(result) => result,
            Err(_) => Err(StoreError::Unavailable(format!(
                "timed out: {operation} took longer than {:?}",
                self.operation_timeout
            ))),
        }
    }

    /// Runs a write, bounded like every call. On SQLite it runs on the move writer's
    /// thread, beside the batches (see `MoveWriter::on_writer`): every SQLite write holds
    /// the one write connection from its first statement to its last (see
    /// `queries/commit_groups.rs`), and on the server's runtime each of its statements'
    /// replies waited behind every ready connection task, with every other write queued
    /// behind it. On Postgres, whose writers do not wait for each other, it runs here.
    async fn write<T, W>(&self, operation: &'static str, write: W) -> Result<T, StoreError>
    where
        T: Send + 'static,
        W: FnOnce(BackendStore) -> Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send>>
            + Send
            + 'static,
    {
        let call = async {
            match &self.backend {
                BackendStore::Sqlite(_) => self.moves.on_writer(write).await,
                BackendStore::Postgres(_) => write(self.backend.clone()).await,
            }
        };
        self.bounded(operation, call).await
    }

    /// The longest any call of this store takes: [`StoreOptions::operation_timeout`].
    pub fn operation_timeout(&self) -> Duration {
        self.operation_timeout
    }

    /// Whether a finished rated game's rating changes are announced in its last
    /// transaction ([`StoreOptions::ratings_announcement`]).
    pub fn announces_ratings(&self) -> bool {
        self.ratings_announcement.is_some()
    }

    /// How many connections are open and idle, and the most there may be.
    pub fn pool_status(&self) -> PoolStatus {
        each_backend!(&self.backend, db => db.pool_status())
    }

    pub fn backend(&self) -> Backend {
        match self.backend {
            BackendStore::Postgres(_) => Backend::Postgres,
            BackendStore::Sqlite(_) => Backend::Sqlite,
        }
    }

    /// A cheap round trip, for health checks.
    pub async fn ping(&self) -> Result<(), StoreError> {
        on_backend!(self, "ping", db => db.ping())
    }

    /// Closes every connection of the pool and of the move writer's, and waits for them
    /// to be closed, at most for the operation timeout (a connection stuck on a silent
    /// database is abandoned).
    /// Later calls on this store, or its clones, fail with [`StoreError::Unavailable`].
    pub async fn close(&self) {
        let closing = async {
            self.backend.close().await;
            // The move writer's own pool (on Postgres) closes on the writer's runtime.
            let writer = self.moves.on_writer(|backend| {
                Box::pin(async move {
                    backend.close().await;
                    Ok(())
                })
            });
            let _ = writer.await;
        };
        let _ = tokio::time::timeout(self.operation_timeout, closing).await;
    }

    pub async fn create_player(&self, player: &PlayerRow) -> Result<(), StoreError> {
        let player = player.clone();
        write_on_backend!(self, "create_player", db => db.create_player(&player).await)
    }

    /// Signs in the account `subject` of `issuer`: its bound player, whose secret hash
    /// becomes `player`'s, or `player` itself (bound now, and `true`) at its first
    /// sign-in.
    pub async fn sign_in(
        &self,
        issuer: &str,
        subject: &str,
        player: &PlayerRow,
    ) -> Result<(PlayerRow, bool), StoreError> {
        let (issuer, subject, player) = (issuer.to_owned(), subject.to_owned(), player.clone());
        write_on_backend!(self, "sign_in", db => db.sign_in(&issuer, &subject, &player).await)
    }

    /// Gives `player` the recovery code whose SHA-256 is `code_hash`, valid until
    /// `expires_at`, replacing any earlier one. False when there is no such player.
    pub async fn issue_recovery_code(
        &self,
        player: Uuid,
        code_hash: &str,
        expires_at: Millis,
    ) -> Result<bool, StoreError> {
        let code_hash = code_hash.to_owned();
        write_on_backend!(self, "issue_recovery_code", db => {
            db.issue_recovery_code(player, &code_hash, expires_at).await
        })
    }

    /// Moves a player to the holder of a recovery code: the outstanding, unexpired code
    /// whose SHA-256 is `code_hash` is used up and the player's secret hash becomes
    /// `secret_hash`, in one transaction. The player; `None` for a code that is
    /// unknown, used, replaced or expired at `now`.
    pub async fn recover_player(
        &self,
        code_hash: &str,
        now: Millis,
        secret_hash: &str,
    ) -> Result<Option<PlayerRow>, StoreError> {
        let (code_hash, secret_hash) = (code_hash.to_owned(), secret_hash.to_owned());
        write_on_backend!(self, "recover_player", db => {
            db.recover_player(&code_hash, now, &secret_hash).await
        })
    }

    pub async fn player(&self, id: Uuid) -> Result<Option<PlayerRow>, StoreError> {
        on_backend!(self, "player", db => db.player(id))
    }

    /// Writes a waiting quick-play ticket; false (and nothing written) when `max_waiting`
    /// tickets already wait. A player with a waiting ticket gets [`StoreError::Conflict`].
    pub async fn enqueue(
        &self,
        ticket: &QueueTicket,
        max_waiting: u64,
    ) -> Result<bool, StoreError> {
        let ticket = ticket.clone();
        write_on_backend!(self, "enqueue", db => db.enqueue(&ticket, max_waiting).await)
    }

    pub async fn queue_ticket(&self, id: Uuid) -> Result<Option<QueueTicket>, StoreError> {
        on_backend!(self, "queue_ticket", db => db.queue_ticket(id))
    }

    /// Cancels a waiting ticket: false if it did not wait (any more).
    pub async fn cancel_ticket(&self, id: Uuid) -> Result<bool, StoreError> {
        write_on_backend!(self, "cancel_ticket", db => db.cancel_ticket(id).await)
    }

    /// One matchmaking round (see [`QueueRound`]): expires the tickets whose time ran out
    /// at `now`, hands up to `limit` waiting tickets to `plan`, and writes the lobbies it
    /// forms with their tickets matched, all in one transaction. On Postgres one node's
    /// round runs at a time; a node whose turn it is not gets `ran: false`.
    pub async fn queue_round(
        &self,
        now: Millis,
        limit: u32,
        plan: MatchPlanner,
    ) -> Result<QueueRound, StoreError> {
        write_on_backend!(self, "queue_round", db => db.queue_round(now, limit, plan).await)
    }

    /// Writes a new open lobby with its creator's seat.
    pub async fn create_lobby(
        &self,
        lobby: &LobbyRow,
        creator: &SeatRow,
    ) -> Result<(), StoreError> {
        self.create_seated_lobby(lobby, std::slice::from_ref(creator))
            .await
    }

    /// Writes a new open lobby with all of its seats taken (a rematch's), in one
    /// transaction.
    pub async fn create_seated_lobby(
        &self,
        lobby: &LobbyRow,
        seats: &[SeatRow],
    ) -> Result<(), StoreError> {
        let (lobby, seats) = (lobby.clone(), seats.to_vec());
        write_on_backend!(self, "create_lobby", db => db.create_lobby(&lobby, &seats).await)
    }

    pub async fn lobby(&self, id: Uuid) -> Result<Option<(LobbyRow, Vec<SeatRow>)>, StoreError> {
        on_backend!(self, "lobby", db => db.lobby(id))
    }

    /// Open public lobbies, newest first, `limit` of them after skipping `offset`.
    pub async fn open_public_lobbies(
        &self,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<(LobbyRow, Vec<SeatRow>)>, StoreError> {
        on_backend!(self, "open_public_lobbies", db => db.open_public_lobbies(offset, limit))
    }

    /// Public games in play, most recently started first, `limit` of them after
    /// skipping `offset`: the games a spectator can watch.
    pub async fn playing_public_games(
        &self,
        offset: u32,
        limit: u32,
    ) -> Result<Vec<(LobbyRow, Vec<SeatRow>)>, StoreError> {
        on_backend!(self, "playing_public_games", db => db.playing_public_games(offset, limit))
    }

    /// Adds a seat to an open lobby and sets its `seq`.
    ///
    /// Like every call that sets a `seq`, it fails with [`StoreError::Conflict`] unless
    /// `seq` is greater than the lobby's current one and the lobby is in the expected
    /// status (open here), and with [`StoreError::NotFound`] when there is no such lobby.
    /// A seat number already taken, or a player identity already seated in this lobby, is
    /// also a conflict; a `player_id` with no player row is [`StoreError::NotFound`].
    /// When another node owns the lobby, this and every other call that sets a `seq`
    /// fails with [`StoreError::NotOwner`] instead, whatever the `seq`.
    pub async fn add_seat(&self, lobby: Uuid, seat: &SeatRow, seq: u64) -> Result<(), StoreError> {
        self.add_seat_with(lobby, seat, seq, None).await
    }

    async fn add_seat_with(
        &self,
        lobby: Uuid,
        seat: &SeatRow,
        seq: u64,
        events: Option<String>,
    ) -> Result<(), StoreError> {
        let seat = seat.clone();
        write_on_backend!(self, "add_seat", db => db.add_seat(lobby, &seat, seq, events.as_deref()).await)
    }

    /// Frees a seat of an open lobby and sets its `seq`. [`StoreError::NotFound`] when
    /// that seat is not taken.
    pub async fn remove_seat(&self, lobby: Uuid, seat: u8, seq: u64) -> Result<(), StoreError> {
        self.remove_seat_with(lobby, seat, seq, None).await
    }

    async fn remove_seat_with(
        &self,
        lobby: Uuid,
        seat: u8,
        seq: u64,
        events: Option<String>,
    ) -> Result<(), StoreError> {
        write_on_backend!(self, "remove_seat", db => db.remove_seat(lobby, seat, seq, events.as_deref()).await)
    }

    /// Starts the game: replaces the seats by `seats` (renumbered when the order was
    /// shuffled), stores the seed and the deck commitment's salt, status `Playing`, and
    /// sets `seq`.
    pub async fn start_game(
        &self,
        lobby: Uuid,
        seats: &[SeatRow],
        seed: u64,
        deck_salt: &str,
        started_at: Millis,
        seq: u64,
    ) -> Result<(), StoreError> {
        let start = GameStart {
            seats,
            seed,
            deck_salt,
            started_at,
            seq,
            events: None,
        };
        self.start_game_with(lobby, start).await
    }

    async fn start_game_with(&self, lobby: Uuid, start: GameStart<'_>) -> Result<(), StoreError> {
        let (seats, deck_salt) = (start.seats.to_vec(), start.deck_salt.to_owned());
        let (seed, started_at, seq) = (start.seed, start.started_at, start.seq);
        let events = start.events.map(str::to_owned);
        write_on_backend!(self, "start_game", db => {
            let start = GameStart {
                seats: &seats,
                seed,
                deck_salt: &deck_salt,
                started_at,
                seq,
                events: events.as_deref(),
            };
            db.start_game(lobby, &start).await
        })
    }

    /// Cancels an open lobby, or aborts a game in play, and sets its `seq`: either way
    /// the status becomes `Cancelled`, and an aborted game is not a match. A lobby that is
    /// already finished or cancelled is a [`StoreError::Conflict`].
    pub async fn cancel_lobby(&self, lobby: Uuid, seq: u64) -> Result<(), StoreError> {
        self.cancel_lobby_with(lobby, seq, None).await
    }

    async fn cancel_lobby_with(
        &self,
        lobby: Uuid,
        seq: u64,
        events: Option<String>,
    ) -> Result<(), StoreError> {
        write_on_backend!(self, "cancel_lobby", db => db.cancel_lobby(lobby, seq, events.as_deref()).await)
    }

    /// Rewrites a taken seat's `token_hash`, `control`, `control_seq` and `bot` (a
    /// resignation, an abandonment, a reclaim, a new seat token) and sets the lobby's
    /// `seq`, in one transaction. The lobby must be open or playing, under the same
    /// condition on `seq` as every write ([`StoreError::Conflict`] otherwise);
    /// [`StoreError::NotFound`] when the lobby does not exist or `seat.seat` is not taken.
    /// The seat's other fields are not written: they do not change once it is taken.
    pub async fn update_seat(
        &self,
        lobby: Uuid,
        seat: &SeatRow,
        seq: u64,
    ) -> Result<(), StoreError> {
        self.update_seat_with(lobby, seat, seq, None).await
    }

    async fn update_seat_with(
        &self,
        lobby: Uuid,
        seat: &SeatRow,
        seq: u64,
        events: Option<String>,
    ) -> Result<(), StoreError> {
        let seat = seat.clone();
        write_on_backend!(self, "update_seat", db => db.update_seat(lobby, &seat, seq, events.as_deref()).await)
    }

    /// Appends an accepted command to a game's log and sets the game's `seq` to its
    /// `seq`, in one transaction. [`StoreError::Conflict`] when that `seq` or that
    /// `(seat, command_id)` is already written, or when the game is not playing.
    ///
    /// The move is written in a batch with other games' moves (see `group_commit`); this
    /// returns once that batch has committed. A move of a game another node owns is
    /// refused with [`StoreError::NotOwner`] without holding up the rest of its batch.
    pub async fn append_move(&self, game: Uuid, mv: &MoveRow) -> Result<(), StoreError> {
        self.bounded("append_move", self.moves.append(game, mv.clone()))
            .await
    }

    /// Writes a game's last change together with its result, in one transaction: the
    /// move (or the seat update, as [`Store::update_seat`] makes it), the lobby's `seq`,
    /// status `Finished`, `finished_at`, and the match rows with their status and
    /// resignations; a rated match is rated there too. The game must be playing, under
    /// the usual condition on `seq`. On any error nothing is written.
    ///
    /// With [`StoreOptions::ratings_announcement`] set, a rated match's rating changes
    /// are also announced in that transaction: one more update, numbered `seq + 1`,
    /// whose events are that function's text, becomes the game's last. They are
    /// returned; `None` when no such update was written.
    ///
    /// It runs on the group-commit writer's thread and connections, beside the batches
    /// (see `MoveWriter::on_writer`).
    pub async fn finish_game(
        &self,
        game: Uuid,
        last: FinalChange<'_>,
        result: &FinishedMatch,
    ) -> Result<Option<Vec<RatingChange>>, StoreError> {
        self.finish_game_with(game, last, result, None).await
    }

    /// [`Store::finish_game`] for a seat change that ends the game, with the events of
    /// its update stored as [`Store::write_logged`] stores them.
    pub async fn finish_game_logged(
        &self,
        game: Uuid,
        last: FinalChange<'_>,
        result: &FinishedMatch,
        events: &str,
    ) -> Result<Option<Vec<RatingChange>>, StoreError> {
        let events = Some(events.to_owned());
        self.finish_game_with(game, last, result, events).await
    }

    async fn finish_game_with(
        &self,
        game: Uuid,
        last: FinalChange<'_>,
        result: &FinishedMatch,
        events: Option<String>,
    ) -> Result<Option<Vec<RatingChange>>, StoreError> {
        let last = OwnedFinalChange::from(last);
        let result = result.clone();
        let announcement = self.ratings_announcement;
        let write = self.moves.on_writer(move |backend| {
            Box::pin(async move {
                let ending = GameEnding {
                    last: last.borrowed(),
                    result: &result,
                    events: events.as_deref(),
                    announcement,
                };
                each_backend!(&backend, db => db.finish_game(game, ending).await)
            })
        });
        self.bounded("finish_game", write).await
    }

    /// Writes a change that is not a move, as the call of the same kind above does, and
    /// in the same transaction the events of its update: `events` is the JSON text of
    /// the `events` array of the `update` message with this `seq`, stored as it is. The
    /// events of moves are not stored: replaying the move log gives them again
    /// ([`Store::game_log`] reads both).
    pub async fn write_logged(
        &self,
        lobby: Uuid,
        change: LoggedChange<'_>,
        seq: u64,
        events: &str,
    ) -> Result<(), StoreError> {
        let events = Some(events.to_owned());
        match change {
            LoggedChange::SeatAdded(seat) => self.add_seat_with(lobby, seat, seq, events).await,
            LoggedChange::SeatRemoved(seat) => {
                self.remove_seat_with(lobby, seat, seq, events).await
            }
            LoggedChange::Started {
                seats,
                seed,
                deck_salt,
                started_at,
            } => {
                let events = events.as_deref();
                let start = GameStart {
                    seats,
                    seed,
                    deck_salt,
                    started_at,
                    seq,
                    events,
                };
                self.start_game_with(lobby, start).await
            }
            LoggedChange::Cancelled => self.cancel_lobby_with(lobby, seq, events).await,
            LoggedChange::SeatUpdated(seat) => {
                self.update_seat_with(lobby, seat, seq, events).await
            }
        }
    }

    /// Everything a game's event log is rebuilt from, whatever its status, read in one
    /// snapshot: the lobby, its seats, its moves and the stored events of its other
    /// updates, both in `seq` order. `None` when there is no lobby with this id.
    pub async fn game_log(&self, id: Uuid) -> Result<Option<GameLog>, StoreError> {
        on_backend!(self, "game_log", db => db.game_log(id))
    }

    /// What the database holds of `game` at update `seq`, in one read: the game's stored
    /// `seq`, who owns it and whether that owner's lease is live on the database's
    /// clock, and which command the move stored at `seq` (if any) carries. `None` when
    /// there is no such game. After a write whose outcome is unknown (its reply was
    /// lost), this is what proves that it landed, and that it was this node's write.
    pub async fn stored_at(&self, game: Uuid, seq: u64) -> Result<Option<StoredAt>, StoreError> {
        on_backend!(self, "stored_at", db => db.stored_at(game, seq))
    }

    /// The ids of every open or playing lobby, oldest first: what a restart serves, known
    /// before any of it is read.
    pub async fn live_game_ids(&self) -> Result<Vec<Uuid>, StoreError> {
        on_backend!(self, "live_game_ids", db => db.live_game_ids())
    }

    /// The stored `seq` of every open or playing lobby that `node` owns, or of every one
    /// no node owns when `node` is `None` (a single node's): what a node compares its
    /// rooms' memories with, to find one left behind by a write it could not settle.
    pub async fn live_seqs(&self, node: Option<&str>) -> Result<Vec<(Uuid, u64)>, StoreError> {
        let node = node.unwrap_or_default().to_owned();
        on_backend!(self, "live_seqs", db => db.live_seqs(&node))
    }

    /// Every open or playing lobby with its seats, move log, the newest
    /// [`LIVE_CHAT_ENTRIES`] entries of its chat and its chat mutes, to restore at
    /// start-up. Oldest lobby first.
    pub async fn live_games(&self) -> Result<Vec<LiveGame>, StoreError> {
        on_backend!(self, "live_games", db => db.live_games())
    }

    /// One unfinished lobby or game, as [`Store::live_games`] returns them, read in one
    /// snapshot; `None` when there is no lobby with this id or it is finished or
    /// cancelled. A node restores a game it takes over with this.
    pub async fn live_game(&self, id: Uuid) -> Result<Option<LiveGame>, StoreError> {
        on_backend!(self, "live_game", db => db.live_game(id))
    }

    /// Writes a chat entry of `game` and its `effect`, in one transaction: for
    /// [`ChatEffect::Redact`] the earlier entry's text is replaced, for
    /// [`ChatEffect::Policy`] the lobby's [`LobbyRow::chat_policy`]. The game's `seq` is
    /// not touched, and a chat write is accepted whatever the game's status.
    ///
    /// [`StoreError::Conflict`] when the entry's `chat_seq` is already written;
    /// [`StoreError::NotFound`] when there is no lobby `game`, or no entry to redact. On
    /// any error nothing is written.
    pub async fn append_chat(
        &self,
        game: Uuid,
        entry: &ChatEntryRow,
        effect: &ChatEffect,
    ) -> Result<(), StoreError> {
        let (entry, effect) = (entry.clone(), effect.clone());
        write_on_backend!(self, "append_chat", db => db.append_chat(game, &entry, &effect).await)
    }

    /// The entries of `game`'s chat that `read` selects (see [`ChatRead`]), in `chat_seq`
    /// order; empty for a game with no chat, or no such game.
    pub async fn chat_entries(
        &self,
        game: Uuid,
        read: &ChatRead,
    ) -> Result<Vec<ChatEntryRow>, StoreError> {
        on_backend!(self, "chat_entries", db => db.chat_entries(game, read))
    }

    /// Makes `seat` of `game` mute `author` (the server's name for whoever writes), or no
    /// longer. Setting what is already so succeeds and changes nothing. Muting in a game
    /// that does not exist is [`StoreError::NotFound`].
    pub async fn set_chat_mute(
        &self,
        game: Uuid,
        seat: u8,
        author: &str,
        muted: bool,
    ) -> Result<(), StoreError> {
        let author = author.to_owned();
        write_on_backend!(self, "set_chat_mute", db => {
            db.set_chat_mute(game, seat, &author, muted).await
        })
    }

    /// Who mutes whom in `game`'s chat: `(seat, author)`, by seat then author.
    pub async fn chat_mutes(&self, game: Uuid) -> Result<Vec<(u8, String)>, StoreError> {
        on_backend!(self, "chat_mutes", db => db.chat_mutes(game))
    }

    /// Takes or renews the lease of live game `game` for `node` when it is free (owner
    /// NULL), lapsed, or already `node`'s. True when `node` now holds it.
    ///
    /// The lease runs until the database's `now()` plus `ttl`. False when another node
    /// holds an unexpired lease, or when there is no open or playing game with this id.
    /// Postgres only ([`StoreError::Config`] on SQLite), like every lease call.
    pub async fn acquire_lease(
        &self,
        game: Uuid,
        node: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        on_postgres!(self, "acquire_lease", db => db.acquire_lease(game, node, ttl))
    }

    /// Takes the leases of the games of `games` that [`Store::acquire_lease`] would take,
    /// all in one statement, leaving out any whose row a transaction holds (most likely
    /// a frozen owner's write: a later call takes it once Postgres has ended that
    /// transaction). Returns the ids taken.
    pub async fn acquire_leases(
        &self,
        games: &[Uuid],
        node: &str,
        ttl: Duration,
    ) -> Result<Vec<Uuid>, StoreError> {
        on_postgres!(self, "acquire_leases", db => db.acquire_leases(games, node, ttl))
    }

    /// The live games among `ids`, as [`Store::live_games`] returns them, read in one
    /// round trip: for games whose leases the caller has just taken and has not started
    /// yet, which nobody else can change meanwhile (their reads need no snapshot to
    /// agree). How a node restores the games it takes over. Postgres only.
    pub async fn live_games_taken(&self, ids: &[Uuid]) -> Result<Vec<LiveGame>, StoreError> {
        on_postgres!(self, "live_games_taken", db => db.live_games_taken(ids))
    }

    /// Extends every lease `node` holds on live games; returns the ids it still holds.
    ///
    /// Each is extended to the database's `now()` plus `ttl`, lapsed ones included as
    /// long as no other node took them over. A game missing from the answer was taken
    /// over (or has ended): the node must stop running it, and its writes to it would be
    /// refused with [`StoreError::NotOwner`] anyway.
    pub async fn renew_leases(&self, node: &str, ttl: Duration) -> Result<Vec<Uuid>, StoreError> {
        on_postgres!(self, "renew_leases", db => db.renew_leases(node, ttl))
    }

    /// Gives up every lease `node` holds (owner_node = NULL), so others may take them at once.
    ///
    /// Returns how many live games it released. For a node that stops: its games need not
    /// wait for their leases to lapse.
    pub async fn release_leases(&self, node: &str) -> Result<u64, StoreError> {
        on_postgres!(self, "release_leases", db => db.release_leases(node))
    }

    /// The cluster nodes whose lease is live on the database's clock: a single-node
    /// server must not start on a database a running cluster uses. Empty on SQLite.
    pub async fn live_cluster_nodes(&self) -> Result<Vec<String>, StoreError> {
        match &self.backend {
            BackendStore::Postgres(db) => self.bounded("live_cluster_nodes", db.live_nodes()).await,
            BackendStore::Sqlite(_) => Ok(Vec::new()),
        }
    }

    /// Clears every live game's lease, whoever holds it: how a single-node server takes
    /// back a database a cluster used, since it owns every game and names no node. Zero
    /// on SQLite, which never has leases.
    pub async fn clear_leases(&self) -> Result<u64, StoreError> {
        match &self.backend {
            BackendStore::Postgres(db) => self.bounded("clear_leases", db.clear_leases()).await,
            BackendStore::Sqlite(_) => Ok(0),
        }
    }

    /// Gives up one game's lease if `node` holds it.
    ///
    /// Does nothing, successfully, when another node holds it or no node does.
    pub async fn release_lease(&self, game: Uuid, node: &str) -> Result<(), StoreError> {
        on_postgres!(self, "release_lease", db => db.release_lease(game, node))
    }

    /// Who holds a live game's lease. None when there is no live game with this id.
    pub async fn lease_holder(&self, game: Uuid) -> Result<Option<LeaseHolder>, StoreError> {
        on_postgres!(self, "lease_holder", db => db.lease_holder(game))
    }

    /// The live node that owned finished game `game` last, where its room may still be
    /// up for its post-game stay. None when the game is not finished or no live node
    /// owned it. Postgres only, like every lease call.
    pub async fn finished_game_host(&self, game: Uuid) -> Result<Option<String>, StoreError> {
        on_postgres!(self, "finished_game_host", db => db.finished_game_host(game))
    }

    /// Forgets that `node` owned any finished game, so that no other node sends a visitor
    /// of one to it: what a node does as it starts, with no post-game room up (it may
    /// have crashed in one's stay). Returns how many it released. Postgres only.
    pub async fn release_finished_games(&self, node: &str) -> Result<u64, StoreError> {
        on_postgres!(self, "release_finished_games", db => db.release_finished_games(node))
    }

    /// The database's plan for what [`Store::release_finished_games`] runs, as text: for
    /// checking that a node's start does not read every lobby ever played.
    pub async fn explain_release_finished_games(&self, node: &str) -> Result<String, StoreError> {
        on_postgres!(self, "explain_release_finished_games", db => {
            db.explain_release_finished_games(node)
        })
    }

    /// Live games with no owner or a lapsed lease, oldest first, at most `limit`.
    ///
    /// Oldest means created first, as [`Store::live_games`] orders them. These are the
    /// games a node may take over with [`Store::acquire_lease`]; another node may take
    /// one first, which that call's `false` says.
    pub async fn orphaned_games(&self, limit: u32) -> Result<Vec<Uuid>, StoreError> {
        on_postgres!(self, "orphaned_games", db => db.orphaned_games(limit))
    }

    /// Finished matches, newest first, after `after`, at most `limit` of them. `limit` is
    /// raised to 1 and capped at [`MAX_MATCH_PAGE`]. Private matches are left out unless
    /// [`MatchFilter::include_private`] is set.
    pub async fn matches(
        &self,
        filter: &MatchFilter,
        after: Option<MatchCursor>,
        limit: u32,
    ) -> Result<MatchPage, StoreError> {
        on_backend!(self, "matches", db => db.matches(filter, after, limit))
    }

    /// The database's plan for the query [`Store::matches`] runs with these arguments, as
    /// text: for checking which index a listing uses, when one is slow.
    pub async fn explain_matches(
        &self,
        filter: &MatchFilter,
        after: Option<MatchCursor>,
        limit: u32,
    ) -> Result<String, StoreError> {
        on_backend!(self, "explain_matches", db => db.explain_matches(filter, after, limit))
    }

    /// A match, public or private: the caller decides who may see a private one.
    pub async fn match_detail(&self, id: Uuid) -> Result<Option<MatchDetail>, StoreError> {
        on_backend!(self, "match_detail", db => db.match_detail(id))
    }

    /// The stored game record of a finished match, public or private.
    pub async fn match_record(&self, id: Uuid) -> Result<Option<serde_json::Value>, StoreError> {
        on_backend!(self, "match_record", db => db.match_record(id))
    }

    /// Two players' record in the matches both took a seat in, private ones included
    /// (only counts and scores are given).
    pub async fn head_to_head(
        &self,
        player: Uuid,
        opponent: Uuid,
    ) -> Result<HeadToHead, StoreError> {
        on_backend!(self, "head_to_head", db => db.head_to_head(player, opponent))
    }

    /// Games, wins, average score and points by kind of a player identity; `None` if it
    /// does not exist.
    pub async fn player_stats(&self, id: Uuid) -> Result<Option<PlayerStats>, StoreError> {
        on_backend!(self, "player_stats", db => db.player_stats(id))
    }

    /// Writes finished matches straight into the history, without lobbies or move logs,
    /// in one transaction: for importing a history kept elsewhere, and for benchmarks.
    /// The seats' player identities must exist. Imported matches are public.
    pub async fn import_matches(&self, matches: &[FinishedMatch]) -> Result<(), StoreError> {
        on_backend!(self, "import_matches", db => db.import_matches(matches))
    }

    /// Recomputes every player's rating from the rated matches, in the order they were
    /// rated, from what each stored of its inputs (pool, places, bots' fixed ratings); the
    /// numbers equal those the matches left as they were played. One transaction, which
    /// holds the rating ledger: matches that end meanwhile are rated after it. Not bounded
    /// by the operation timeout: an operator's command, it takes as long as the history.
    pub async fn rebuild_ratings(&self) -> Result<RatingsRebuilt, StoreError> {
        each_backend!(&self.backend, db => db.rebuild_ratings().await)
    }

    /// A page of at most `limit` (1 to [`MAX_LEADERBOARD_PAGE`]) of a pool's ranked
    /// players, best first, after the cursor's entry. Provisional players are left out.
    pub async fn leaderboard(
        &self,
        pool: RatingPool,
        after: Option<LeaderboardCursor>,
        limit: u32,
    ) -> Result<Vec<LeaderboardEntry>, StoreError> {
        let limit = limit.clamp(1, MAX_LEADERBOARD_PAGE);
        on_backend!(self, "leaderboard", db => db.leaderboard(pool, after, limit))
    }

    /// A player's rating in each pool they have played rated games in.
    pub async fn player_ratings(&self, id: Uuid) -> Result<Vec<PlayerRating>, StoreError> {
        on_backend!(self, "player_ratings", db => db.player_ratings(id))
    }

    /// At most `limit` (1 to [`MAX_LEADERBOARD_PAGE`]) of a player's rated matches in a
    /// pool, newest first, rated before ledger number `before`.
    pub async fn rating_history(
        &self,
        id: Uuid,
        pool: RatingPool,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<RatedMatchEntry>, StoreError> {
        let limit = limit.clamp(1, MAX_LEADERBOARD_PAGE);
        on_backend!(self, "rating_history", db => db.rating_history(id, pool, before, limit))
    }

    /// The rating changes of a match, by seat; empty for an unrated one.
    pub async fn match_ratings(&self, id: Uuid) -> Result<Vec<RatingChange>, StoreError> {
        on_backend!(self, "match_ratings", db => db.match_ratings(id))
    }
}

/// How many of a game's newest chat entries [`Store::live_games`] and
/// [`Store::live_game`] read with it: what a restored room holds of its chat.
pub const LIVE_CHAT_ENTRIES: usize = 100;

/// The most matches one call to [`Store::matches`] returns.
pub const MAX_MATCH_PAGE: u32 = 200;

/// The most entries one call to [`Store::leaderboard`] or [`Store::rating_history`] returns.
pub const MAX_LEADERBOARD_PAGE: u32 = 200;
