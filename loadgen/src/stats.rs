//! What the clients measure: counts, histograms of latencies and sizes, errors by kind.
//!
//! Every client task keeps a [`Stats`] of its own and hands it back when it ends, where
//! they are merged: no lock is taken on the hot path.

use hdrhistogram::Histogram;
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

/// A histogram of microseconds up to a minute, or of bytes up to 64 MiB, at 3 significant
/// digits.
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 64 * 1024 * 1024, 3).expect("valid histogram bounds")
}

/// Everything one or more clients measured.
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
    pub ack_latency_us: Histogram<u64>,
    pub update_bytes_with_moves: Histogram<u64>,
    pub update_bytes_without_moves: Histogram<u64>,
    pub patch_bytes: Histogram<u64>,
    /// Errors of the whole run (warm-up included) by kind, e.g. `rejected:stale_seq`.
    pub errors: BTreeMap<String, u64>,
}

impl Default for Stats {
    fn default() -> Stats {
        Stats {
            acked: 0,
            acked_whole_run: 0,
            unanswered: 0,
            games_finished: 0,
            all_started_at: None,
            ack_latency_us: histogram(),
            update_bytes_with_moves: histogram(),
            update_bytes_without_moves: histogram(),
            patch_bytes: histogram(),
            errors: BTreeMap::new(),
        }
    }
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
            mine.add(theirs).expect("histograms of the same bounds");
        }
        for (kind, count) in &other.errors {
            *self.errors.entry(kind.clone()).or_default() += count;
        }
    }
}

/// Records `value` in `histogram`, clamped to its range (a value beyond a minute or 64 MiB
/// is kept as the largest the histogram holds rather than lost).
pub fn record(histogram: &mut Histogram<u64>, value: u64) {
    histogram.saturating_record(value.max(1));
}

/// The median, 99th percentile and maximum of a histogram, scaled by `scale`
/// (e.g. 0.001 to turn microseconds into milliseconds); zeros when it is empty.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub count: u64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

impl Summary {
    pub fn of(histogram: &Histogram<u64>, scale: f64) -> Summary {
        if histogram.is_empty() {
            return Summary::default();
        }
        Summary {
            count: histogram.len(),
            p50: histogram.value_at_quantile(0.50) as f64 * scale,
            p99: histogram.value_at_quantile(0.99) as f64 * scale,
            max: histogram.max() as f64 * scale,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_one_to_a_thousand() {
        let mut values = histogram();
        for value in 1..=1000 {
            record(&mut values, value);
        }
        let summary = Summary::of(&values, 1.0);
        assert_eq!(summary.count, 1000);
        assert_eq!(summary.p50, 500.0);
        assert_eq!(summary.p99, 990.0);
        assert_eq!(summary.max, 1000.0);
    }

    #[test]
    fn a_single_slow_sample_shows_in_the_max_not_the_median() {
        let mut latencies = histogram();
        for _ in 0..999 {
            record(&mut latencies, 200);
        }
        record(&mut latencies, 50_000);
        let summary = Summary::of(&latencies, 0.001);
        assert_eq!(summary.p50, 0.2);
        assert_eq!(summary.p99, 0.2);
        assert!((summary.max - 50.0).abs() < 0.05, "{summary:?}");
    }

    #[test]
    fn an_empty_histogram_summarises_to_zeros() {
        assert_eq!(Summary::of(&histogram(), 1.0), Summary::default());
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
        record(&mut part.patch_bytes, 40);
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
