//! The Carcassonne game server: lobbies over REST, authoritative play over WebSocket,
//! persistence to Postgres or an embedded SQLite file, and the `replay` command.
//!
//! [`app`] builds the router from an [`AppState`]; [`run`] serves it on a listener until
//! the shutdown token fires, then drains: no new connections, every client told, every
//! in-flight command finished and committed, every task awaited. Tests bind port 0 and
//! call `run` directly.

mod accounts;
mod admission;
mod api;
mod auth;
mod bots;
mod clock;
mod cluster;
mod config;
mod error;
mod healthcheck;
mod http;
mod metrics;
mod queue;
mod ratings_rebuild;
mod rematches;
mod replay;
mod rooms;
mod state;
mod tournament;
mod web;
mod wire;
mod ws;

// What the binary (main.rs) uses; everything else is private to the library, so that
// rustc reports what nothing calls.
pub use accounts::AccountIssuer;
pub use cluster::ClusterConfig;
pub use config::{Config, Limits, default_bot_threads};
pub use queue::QueueSettings;
pub use queue::plan::MatchPolicy;
pub use rooms::RoomSettings;
pub use rooms::outcome::RatedBotPools;
/// The fuzz target reads arbitrary text as a client frame.
pub use wire::parse_client_message;
pub mod commands {
    //! The subcommands other than `serve`.
    pub use crate::healthcheck::check as healthcheck;
    pub use crate::ratings_rebuild::run as rebuild_ratings;
    pub use crate::replay::run as replay;
    pub use crate::tournament::{TournamentArgs, run as tournament};
}

use crate::bots::BotPool;
use crate::cluster::Cluster;
use crate::error::AppError;
use crate::rooms::actor::Room;
use crate::rooms::registry::RoomOpener;
use crate::rooms::tenure::{BootTime, Tenure};
use crate::state::AppState;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use axum::routing::get;
use carcassonne_store::{Store, StoreError, StoreOptions};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};
use tower_http::trace::TraceLayer;

/// Largest REST request body.
const MAX_BODY_BYTES: usize = 64 * 1024;

/// The smallest REST answer worth gzipping: below this, gzip's 18 bytes of frame and
/// the lost literal savings leave next to nothing (an error body is about 80 bytes).
const COMPRESS_ABOVE_BYTES: u64 = 256;

pub fn app(state: AppState) -> Router {
    let api = api::router()
        .fallback(|| async { AppError::NotFound("no such endpoint") })
        .method_not_allowed_fallback(http::method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        // The JSON API, gzipped when the client accepts it. Only `/api`: the WebSocket
        // upgrade, the probes and `/metrics` stay as they are, and the web client's
        // files come gzipped once and for all (web.rs), as does `/api/tiles`, which the
        // layer leaves alone because it already carries a `Content-Encoding`.
        .layer(
            CompressionLayer::new().compress_when(
                SizeAbove::new(COMPRESS_ABOVE_BYTES)
                    .and(NotForContentType::GRPC)
                    .and(NotForContentType::IMAGES)
                    .and(NotForContentType::SSE),
            ),
        );
    Router::new()
        .nest("/api", api)
        .route("/ws/games/{id}", get(ws::upgrade))
        .route("/healthz", get(api::system::healthz))
        .route("/readyz", get(api::system::readyz))
        .route("/metrics", get(api::system::metrics))
        .merge(web::router())
        .method_not_allowed_fallback(http::method_not_allowed)
        .layer(from_fn_with_state(state.clone(), http::limit_requests))
        .layer(from_fn_with_state(state.clone(), http::observe_requests))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("database: {0}")]
    Store(#[from] StoreError),
    #[error("network: {0}")]
    Io(#[from] std::io::Error),
    #[error("cluster: {0}")]
    Cluster(String),
}

/// Serves until `shutdown` is cancelled, then drains and returns.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let Some(store) = connect_store(&config.store, &shutdown).await? else {
        return Ok(());
    };
    let (opener, rematches) = RoomOpener::channel();
    let mut state = AppState::new(store, config.limits, shutdown.clone())
        .with_rooms(config.rooms, BotPool::new(config.bot_threads), opener)
        .with_queue(config.queue)
        .with_accounts(config.accounts)
        .with_admin_token(config.admin_token_sha256);
    if let Some(cluster_config) = &config.cluster {
        let cluster = Cluster::connect(cluster_config)
            .await
            .map_err(|error| ServeError::Cluster(format!("NATS: {error}")))?;
        tracing::info!(node = %cluster.node, nats = %cluster_config.nats_url, "cluster mode");
        state = state.in_cluster(cluster);
    }
    restore_rooms(&state, config.take_over_from_cluster).await?;
    if let Some(cluster) = state.cluster.clone() {
        let tasks = &state.tasks;
        tasks.spawn(cluster::lease::keep_leases(
            state.rooms.clone(),
            cluster.clone(),
        ));
        tasks.spawn(cluster::lease::sweep_orphans(state.rooms.clone(), cluster));
    }
    let node = state.cluster.as_ref().map(|cluster| cluster.node.clone());
    let supervisor = rooms::supervisor::supervise(state.rooms.clone(), node);
    state.tasks.spawn(supervisor);
    state.tasks.spawn(http::forget_idle_clients(state.clone()));
    state.tasks.spawn(queue::run_matchmaker(state.clone()));
    state
        .tasks
        .spawn(rematches::open_rematches(state.clone(), rematches));
    tracing::info!(address = %listener.local_addr()?, "listening");
    http::serve(listener, app(state.clone()), state.clone()).await;
    tracing::info!("draining");
    let drain_timeout = state.limits.drain_timeout;
    if tokio::time::timeout(drain_timeout, drain(&state))
        .await
        .is_err()
    {
        tracing::warn!(
            ?drain_timeout,
            "the drain timed out; exiting with tasks still running"
        );
    }
    tracing::info!("stopped");
    Ok(())
}

/// Waits for every connection and room to finish, then (cluster mode) hands this node's
/// games over. Bounded by the caller: neither the database nor NATS may hold it up.
async fn drain(state: &AppState) {
    state.tasks.close();
    state.tasks.wait().await;
    if let Some(cluster) = &state.cluster {
        cluster::lease::release_leases(&state.store, cluster).await;
        if !cluster.flush().await {
            tracing::warn!("NATS did not confirm the last messages");
        }
    }
}

/// Connects to the database, waiting for it while it is unreachable (as when it starts
/// alongside the server). `None` if shutdown came first.
async fn connect_store(
    options: &StoreOptions,
    shutdown: &CancellationToken,
) -> Result<Option<Store>, StoreError> {
    // Rated games announce their rating changes with the event the room broadcasts.
    let options = StoreOptions {
        ratings_announcement: Some(rooms::machine::events::ratings_announcement),
        ..options.clone()
    };
    loop {
        match Store::connect_with(&options).await {
            Ok(store) => return Ok(Some(store)),
            Err(StoreError::Unavailable(cause) | StoreError::Unreachable(cause)) => {
                tracing::warn!(%cause, "database unreachable; retrying in 1 s");
            }
            Err(other) => return Err(other),
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shutdown.cancelled() => return Ok(None),
        }
    }
}

/// Brings back every unfinished lobby and game from its log. A single node notes them
/// and listens at once: each is restored on its first request, or by a background task
/// (see `rooms::restore`). In cluster mode only those whose lease this node still holds
/// (restarted under the same name before they lapsed) are restored, before listening;
/// the lease keeper's sweep takes the unowned ones.
async fn restore_rooms(state: &AppState, take_over_from_cluster: bool) -> Result<(), ServeError> {
    let Some(cluster) = &state.cluster else {
        take_over_leases(state, take_over_from_cluster).await?;
        let ids = state.store.live_game_ids().await?;
        tracing::info!(
            unfinished = ids.len(),
            "unfinished games restored on demand and in the background"
        );
        state.unrestored.extend(ids);
        let background = state
            .unrestored
            .clone()
            .restore_the_rest(state.rooms.clone());
        state.tasks.spawn(background);
        return Ok(());
    };
    let mut live = state.store.live_games().await?;
    let asked = BootTime::now();
    // Restarted under its old name, this node has none of its finished games' post-game
    // rooms up: other nodes must not send their visitors here.
    state.store.release_finished_games(&cluster.node).await?;
    let held = state
        .store
        .renew_leases(&cluster.node, cluster.lease_ttl)
        .await?;
    live.retain(|game| held.contains(&game.lobby.id));
    cluster.lease.renewed(asked, held.into_iter().collect());
    let count = live.len();
    for game in live {
        let id = game.lobby.id;
        match Room::restore(game, state.rooms.services.clone()) {
            Ok(mut room) => {
                room.hold_tenure(Tenure::taken(cluster.lease.clone(), asked));
                let started = cluster::start_owned_room(&state.rooms, cluster, room, true).await;
                if let Err(error) = started {
                    tracing::error!(room = %id, %error, "cannot serve a restored game");
                }
            }
            Err(error) => {
                tracing::error!(room = %id, %error, "cannot restore; left in the database")
            }
        }
    }
    tracing::info!(
        restored = state.rooms.len(),
        of = count,
        "unfinished games restored"
    );
    Ok(())
}

/// A single node owns every game, so leases left by an earlier cluster (which would fence
/// its writes) are cleared; but not while a cluster's nodes are alive, unless told to:
/// a node pointed at a running cluster's database by mistake would fight the cluster
/// over every game.
async fn take_over_leases(
    state: &AppState,
    take_over_from_cluster: bool,
) -> Result<(), ServeError> {
    let alive = state.store.live_cluster_nodes().await?;
    if !alive.is_empty() && !take_over_from_cluster {
        return Err(ServeError::Cluster(format!(
            "cluster nodes hold live leases on this database ({}): start with --nats to join \
             them, or stop them first (or pass --take-over-from-cluster)",
            alive.join(", ")
        )));
    }
    let cleared = state.store.clear_leases().await?;
    if cleared > 0 {
        tracing::warn!(
            cleared,
            "cleared the leases of cluster nodes: this node serves alone"
        );
    }
    Ok(())
}
