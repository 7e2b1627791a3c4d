//! Prometheus metrics, served as text at `GET /metrics`.

use prometheus::{
    Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};

/// Every metric the server exports, registered in its own registry.
#[derive(Clone, Debug)]
pub struct Metrics {
    registry: Registry,
    pub live_rooms: IntGauge,
    pub connections: IntGauge,
    pub moves: IntCounter,
    pub move_latency: Histogram,
    pub rejected: IntCounterVec,
}

impl Metrics {
    pub fn new() -> Metrics {
        let registry = Registry::new();
        let live_rooms = IntGauge::new(
            "carcassonne_live_games",
            "Lobbies and games held in memory by this server.",
        )
        .expect("valid metric");
        let connections = IntGauge::new("carcassonne_connections", "Open WebSocket connections.")
            .expect("valid metric");
        let moves = IntCounter::new(
            "carcassonne_moves_total",
            "Commands accepted and committed.",
        )
        .expect("valid metric");
        let move_latency = Histogram::with_opts(
            HistogramOpts::new(
                "carcassonne_move_latency_seconds",
                "Time from a command reaching its game to its reply, database write included.",
            )
            .buckets(vec![
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
            ]),
        )
        .expect("valid metric");
        let rejected = IntCounterVec::new(
            Opts::new(
                "carcassonne_rejected_commands_total",
                "Commands and messages rejected, by error code.",
            ),
            &["code"],
        )
        .expect("valid metric");
        for collector in [
            Box::new(live_rooms.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(connections.clone()),
            Box::new(moves.clone()),
            Box::new(move_latency.clone()),
            Box::new(rejected.clone()),
        ] {
            registry
                .register(collector)
                .expect("metric names are unique");
        }
        Metrics {
            registry,
            live_rooms,
            connections,
            moves,
            move_latency,
            rejected,
        }
    }

    pub fn reject(&self, code: &str) {
        self.rejected.with_label_values(&[code]).inc();
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
