//! What the clients measure: counts, samples of latencies and sizes, errors by kind.
//!
//! Every client task keeps a [`Stats`] of its own and hands it back when it ends, where
//! they are merged: no lock is taken on the hot path.

use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The measured part of a run: from the end of the warm-up to the end of the run.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub start: Instant,
    pub end: Instant,
}

impl Window {
    /// A window that opens after `warmup` from now and closes `duration` from now.
    pub fn after_warmup(warmup: Duration, duration: Duration) -> Window {
        let now = Instant::now();
        Window {
            start: now + warmup,
            end: now + duration,
        }
    }

    pub fn contains(&self, instant: Instant) -> bool {
        instant >= self.start && instant < self.end
    }

    pub fn seconds(&self) -> f64 {
        self.end.saturating_duration_since(self.start).as_secs_f64()
    }

    /// The window cut short at `stop` (the server was lost then), if that is before its
    /// end: nothing is measured after it.
    pub fn until(&self, stop: Option<Instant>) -> Window {
        let end = stop.map_or(self.end, |stop| stop.min(self.end));
        Window {
            start: self.start.min(end),
            end,
        }
    }
}

/// Every value of one measure (microseconds, or bytes), kept whole: a client records a
/// few hundred in a game, and the run's summary takes exact percentiles from them all.
///
/// Not a histogram per client and measure: at 3 significant digits up to 64 Mi one is
/// 144 KiB, zero-filled for every player of every game and added into its slot's at the
/// game's end. At 400 games those were most of the load generator's memory, and
/// recording into and adding those cold arrays its largest cost in user space, taken
/// from the cores it shares with the server.
#[derive(Clone, Debug, Default)]
pub struct Samples(Vec<u64>);

impl Samples {
    pub fn record(&mut self, value: u64) {
        self.0.push(value);
    }

    pub fn len(&self) -> u64 {
        self.0.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn extend(&mut self, other: &Samples) {
        self.0.extend_from_slice(&other.0);
    }
}

/// Everything one or more clients measured.
#[derive(Default)]
pub struct Stats {
    /// Commands acked inside the window.
    pub acked: u64,
    /// Commands acked over the whole run, warm-up included.
    pub acked_whole_run: u64,
    /// Commands sent that got no reply: in flight when their connection died or the run
    /// ended.
    pub unanswered: u64,
    pub games_finished: u64,
    /// When the last slot to get its first game going got it going: until then the
    /// server is still busy setting games up, which the warm-up should cover.
    pub all_started_at: Option<Instant>,
    /// Command sent to its ack received, in microseconds.
    pub ack_latency_us: Samples,
    pub update_bytes_with_moves: Samples,
    pub update_bytes_without_moves: Samples,
    pub patch_bytes: Samples,
    /// Errors of the whole run (warm-up included) by kind, e.g. `rejected:stale_seq`.
    pub errors: BTreeMap<String, u64>,
}

impl Stats {
    pub fn error(&mut self, kind: impl Into<String>) {
        *self.errors.entry(kind.into()).or_default() += 1;
    }

    pub fn error_total(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Adds `other`'s counts and samples to these.
    pub fn merge(&mut self, other: &Stats) {
        self.acked += other.acked;
        self.acked_whole_run += other.acked_whole_run;
        self.unanswered += other.unanswered;
        self.games_finished += other.games_finished;
        self.all_started_at = self.all_started_at.max(other.all_started_at);
        let pairs = [
            (&mut self.ack_latency_us, &other.ack_latency_us),
            (
                &mut self.update_bytes_with_moves,
                &other.update_bytes_with_moves,
            ),
            (
                &mut self.update_bytes_without_moves,
                &other.update_bytes_without_moves,
            ),
            (&mut self.patch_bytes, &other.patch_bytes),
        ];
        for (mine, theirs) in pairs {
            mine.extend(theirs);
        }
        for (kind, count) in &other.errors {
            *self.errors.entry(kind.clone()).or_default() += count;
        }
    }
}

/// The median, 99th percentile and maximum of some samples, scaled by `scale` (e.g.
/// 0.001 to turn microseconds into milliseconds); zeros when there are none. A quantile
/// is the nearest rank: the smallest sample with at least that share of them at or
/// below it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub count: u64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

impl Summary {
    pub fn of(samples: &Samples, scale: f64) -> Summary {
        let mut sorted = samples.0.clone();
        sorted.sort_unstable();
        let Some(&max) = sorted.last() else {
            return Summary::default();
        };
        let at_quantile = |quantile: f64| {
            let rank = (quantile * sorted.len() as f64).ceil() as usize;
            sorted[rank.clamp(1, sorted.len()) - 1] as f64 * scale
        };
        Summary {
            count: samples.len(),
            p50: at_quantile(0.50),
            p99: at_quantile(0.99),
            max: max as f64 * scale,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_one_to_a_thousand() {
        let mut values = Samples::default();
        for value in 1..=1000 {
            values.record(value);
        }
        let summary = Summary::of(&values, 1.0);
        assert_eq!(summary.count, 1000);
        assert_eq!(summary.p50, 500.0);
        assert_eq!(summary.p99, 990.0);
        assert_eq!(summary.max, 1000.0);
    }

    #[test]
    fn a_single_slow_sample_shows_in_the_max_not_the_median() {
        let mut latencies = Samples::default();
        for _ in 0..999 {
            latencies.record(200);
        }
        latencies.record(50_000);
        let summary = Summary::of(&latencies, 0.001);
        assert_eq!(summary.p50, 0.2);
        assert_eq!(summary.p99, 0.2);
        assert_eq!(summary.max, 50.0);
    }

    #[test]
    fn an_empty_histogram_summarises_to_zeros() {
        assert_eq!(Summary::of(&Samples::default(), 1.0), Summary::default());
    }

    #[test]
    fn merging_adds_counts_samples_and_errors() {
        let mut total = Stats::default();
        let mut part = Stats {
            acked: 3,
            acked_whole_run: 4,
            unanswered: 1,
            ..Stats::default()
        };
        part.patch_bytes.record(40);
        part.error("rejected:stale_seq");
        total.merge(&part);
        total.merge(&part);
        assert_eq!(total.acked, 6);
        assert_eq!((total.acked_whole_run, total.unanswered), (8, 2));
        assert_eq!(total.patch_bytes.len(), 2);
        assert_eq!(total.errors["rejected:stale_seq"], 2);
        assert_eq!(total.error_total(), 2);
    }

    #[test]
    fn merging_keeps_the_latest_first_start() {
        let early = Instant::now();
        let late = early + Duration::from_millis(5);
        let mut total = Stats {
            all_started_at: Some(late),
            ..Stats::default()
        };
        for other in [Some(early), None] {
            total.merge(&Stats {
                all_started_at: other,
                ..Stats::default()
            });
        }
        assert_eq!(total.all_started_at, Some(late));
    }

    #[test]
    fn the_window_excludes_the_warmup() {
        let window = Window::after_warmup(Duration::from_secs(1), Duration::from_secs(3));
        assert!(!window.contains(Instant::now()));
        assert!(window.contains(window.start));
        assert!(!window.contains(window.end));
        assert!((window.seconds() - 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_window_cut_short_ends_at_the_stop() {
        let window = Window::after_warmup(Duration::from_secs(1), Duration::from_secs(3));
        let half = window.start + Duration::from_millis(500);
        assert!((window.until(Some(half)).seconds() - 0.5).abs() < 1e-9);
        let before = window.start - Duration::from_millis(500);
        assert_eq!(window.until(Some(before)).seconds(), 0.0);
        let after = window.end + Duration::from_secs(1);
        assert_eq!(window.until(Some(after)).end, window.end);
        assert_eq!(window.until(None).end, window.end);
    }
}
