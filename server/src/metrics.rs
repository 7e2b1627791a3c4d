//! Prometheus metrics, served as text at `GET /metrics`: games, moves, WebSocket
//! connections by role, refused connections, HTTP requests and the database pool.

use carcassonne_store::PoolStatus;
use prometheus::core::Collector;
use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

/// Every metric the server exports, registered in its own registry.
#[derive(Clone, Debug)]
pub struct Metrics {
    registry: Registry,
    pub live_rooms: IntGauge,
    /// Of those, games whose room let go of the engine's game while a human thinks.
    pub resting_games: IntGauge,
    pub connections: IntGauge,
    /// Open WebSocket connections by role: `pending` (before hello), `player`,
    /// `spectator`.
    pub connections_by_role: IntGaugeVec,
    /// Connections refused or cut by a limit, by reason.
    pub refused: IntCounterVec,
    pub moves: IntCounter,
    /// Moves a bot made, by reason: `bot` (a bot's seat), `timeout`, `stand_in`
    /// (an abandoned or resigned seat).
    pub bot_moves: IntCounterVec,
    /// How long a bot's move took to choose, queueing on the bot threads included.
    pub bot_think: Histogram,
    pub move_latency: Histogram,
    pub rejected: IntCounterVec,
    /// HTTP requests by method, matched route and status.
    pub http_requests: IntCounterVec,
    /// HTTP request latency by method and matched route.
    pub http_latency: HistogramVec,
    /// The database pool: `size`, `idle` and `max` connections.
    pub pool: IntGaugeVec,
    /// Cluster mode, by event: `taken_over` (a game restored here from its log),
    /// `lease_lost` (a room unloaded because another node owns its game), `relayed` (a
    /// request sent to another node's game), `owner_unreachable` (its owner did not answer),
    /// `lost_updates_found` (a stand-in found updates lost on their way).
    pub cluster_events: IntCounterVec,
    /// Cluster mode: stand-ins for games other nodes own.
    pub stand_ins: IntGauge,
    /// Rooms that found their memory behind the database and read their game again
    /// from the log, by how: `superseded` (a write found another change at its `seq`)
    /// or `supervisor` (the periodic check found the stored `seq` ahead). Both should
    /// stay at zero; a rise is worth an alert.
    pub room_reloads: IntCounterVec,
    /// Writes answered before their outcome was known (the database stopped answering
    /// or their reply was lost): each is settled by the room before its next write.
    pub unknown_writes: IntCounter,
}

const LATENCY_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

fn counter_vec(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric")
}

fn gauge_vec(name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric")
}

fn histogram(name: &str, help: &str) -> HistogramOpts {
    HistogramOpts::new(name, help).buckets(LATENCY_BUCKETS.to_vec())
}

impl Metrics {
    pub fn new() -> Metrics {
        let metrics = Metrics {
            registry: Registry::new(),
            live_rooms: IntGauge::new(
                "carcassonne_live_games",
                "Lobbies and games held in memory by this server.",
            )
            .expect("valid metric"),
            resting_games: IntGauge::new(
                "carcassonne_resting_games",
                "Games in memory resting: their engine state let go until their next request.",
            )
            .expect("valid metric"),
            connections: IntGauge::new("carcassonne_connections", "Open WebSocket connections.")
                .expect("valid metric"),
            connections_by_role: gauge_vec(
                "carcassonne_websocket_connections",
                "Open WebSocket connections by role: pending (before hello), player, spectator.",
                &["role"],
            ),
            refused: counter_vec(
                "carcassonne_refused_connections_total",
                "Connections refused or cut by a limit, by reason.",
                &["reason"],
            ),
            moves: IntCounter::new(
                "carcassonne_moves_total",
                "Commands accepted and committed.",
            )
            .expect("valid metric"),
            bot_moves: counter_vec(
                "carcassonne_bot_moves_total",
                "Moves made by bots, by reason: bot (a bot's seat), timeout, stand_in.",
                &["reason"],
            ),
            bot_think: Histogram::with_opts(histogram(
                "carcassonne_bot_think_seconds",
                "Time from asking a bot for a move to its answer, queueing included.",
            ))
            .expect("valid metric"),
            move_latency: Histogram::with_opts(histogram(
                "carcassonne_move_latency_seconds",
                "Time from a command reaching its game to its reply, database write included.",
            ))
            .expect("valid metric"),
            rejected: counter_vec(
                "carcassonne_rejected_commands_total",
                "Commands and messages rejected, by error code.",
                &["code"],
            ),
            http_requests: counter_vec(
                "carcassonne_http_requests_total",
                "HTTP requests answered, by method, matched route and status.",
                &["method", "route", "status"],
            ),
            http_latency: HistogramVec::new(
                histogram(
                    "carcassonne_http_request_duration_seconds",
                    "Time to answer an HTTP request, by method and matched route.",
                ),
                &["method", "route"],
            )
            .expect("valid metric"),
            pool: gauge_vec(
                "carcassonne_database_pool_connections",
                "The database pool's connections: size (open), idle, max.",
                &["state"],
            ),
            cluster_events: counter_vec(
                "carcassonne_cluster_events_total",
                "Cluster mode, by event: taken_over, lease_lost, relayed, owner_unreachable.",
                &["event"],
            ),
            stand_ins: IntGauge::new(
                "carcassonne_cluster_stand_ins",
                "Cluster mode: stand-ins for games that other nodes own.",
            )
            .expect("valid metric"),
            room_reloads: counter_vec(
                "carcassonne_room_reloads_total",
                "Rooms that found their memory behind the database and read their game again, by how: superseded, supervisor.",
                &["reason"],
            ),
            unknown_writes: IntCounter::new(
                "carcassonne_unknown_writes_total",
                "Writes answered before their outcome was known, each settled before the room's next write.",
            )
            .expect("valid metric"),
        };
        metrics.register_all();
        metrics
    }

    fn register_all(&self) {
        let collectors: [Box<dyn Collector>; 17] = [
            Box::new(self.live_rooms.clone()),
            Box::new(self.resting_games.clone()),
            Box::new(self.connections.clone()),
            Box::new(self.connections_by_role.clone()),
            Box::new(self.refused.clone()),
            Box::new(self.moves.clone()),
            Box::new(self.bot_moves.clone()),
            Box::new(self.bot_think.clone()),
            Box::new(self.move_latency.clone()),
            Box::new(self.rejected.clone()),
            Box::new(self.http_requests.clone()),
            Box::new(self.http_latency.clone()),
            Box::new(self.pool.clone()),
            Box::new(self.cluster_events.clone()),
            Box::new(self.stand_ins.clone()),
            Box::new(self.room_reloads.clone()),
            Box::new(self.unknown_writes.clone()),
        ];
        for collector in collectors {
            self.registry
                .register(collector)
                .expect("metric names are unique");
        }
    }

    /// Counts a cluster event (see [`Metrics::cluster_events`]).
    pub fn cluster_event(&self, event: &'static str) {
        self.cluster_events.with_label_values(&[event]).inc();
    }

    pub fn reject(&self, code: &str) {
        self.rejected.with_label_values(&[code]).inc();
    }

    /// Counts a connection refused or cut by a limit.
    pub fn refuse(&self, reason: &str) {
        self.refused.with_label_values(&[reason]).inc();
    }

    /// Records the pool's status, if the store reported one.
    /// Sets the pool gauges from the store's report, read when metrics are scraped.
    pub fn observe_pool(&self, status: PoolStatus) {
        for (state, value) in [
            ("size", status.size),
            ("idle", status.idle),
            ("max", status.max),
        ] {
            self.pool.with_label_values(&[state]).set(i64::from(value));
        }
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            .unwrap_or_default()
    }
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}
