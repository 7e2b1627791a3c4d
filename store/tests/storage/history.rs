//! The match history: listing newest first, keyset paging, filters, detail, statistics.

use carcassonne_core::Expansion;
use carcassonne_store::{
    FinishedMatch, JsonText, MAX_MATCH_PAGE, MatchCursor, MatchFilter, MatchStatus, MatchSummary,
    PlayerRow, Store,
};
use uuid::Uuid;

use crate::common::{Context, EPOCH, finished_match, player};

/// The identities that play in the sample history.
const POOL: usize = 5;

/// Matches in the sample history.
const MATCHES: usize = 60;

/// A history whose matches vary in everything the filters look at: 2 to 6 seats, every
/// subset of the expansions, identities from a pool of five and guests, and finishing
/// times shared by three matches at a time so that the `id` tie-break matters.
struct SampleHistory {
    players: Vec<PlayerRow>,
    matches: Vec<FinishedMatch>,
}

impl SampleHistory {
    async fn write(store: &Store) -> SampleHistory {
        let players: Vec<PlayerRow> = (0..POOL).map(|i| player(&format!("p{i}"))).collect();
        for player in &players {
            store.create_player(player).await.unwrap();
        }
        let matches: Vec<FinishedMatch> = (0..MATCHES)
            .map(|index| sample_match(index, &players))
            .collect();
        // Two imports, to write through more than one transaction.
        let (older, newer) = matches.split_at(MATCHES / 2);
        store.import_matches(older).await.unwrap();
        store.import_matches(newer).await.unwrap();
        SampleHistory { players, matches }
    }

    /// What the list must return for `filter`: every match it selects, newest first.
    fn expected(&self, filter: &MatchFilter) -> Vec<MatchSummary> {
        let mut selected: Vec<&FinishedMatch> =
            self.matches.iter().filter(|m| selects(filter, m)).collect();
        selected.sort_by_key(|m| std::cmp::Reverse((m.finished_at, m.id)));
        selected.into_iter().map(summary_of).collect()
    }
}

fn sample_match(index: usize, players: &[PlayerRow]) -> FinishedMatch {
    let seat_count = 2 + index % 5;
    let expansions: Vec<Expansion> = Expansion::ALL
        .iter()
        .enumerate()
        .filter(|(bit, _)| index & (1 << bit) != 0)
        .map(|(_, &expansion)| expansion)
        .collect();
    let seats: Vec<(Option<Uuid>, u32)> = (0..seat_count)
        .map(|seat| {
            // Seats 0-4 take distinct identities; the sixth seat, and every seventh
            // one, is a guest.
            let guest = seat == POOL || (index + seat).is_multiple_of(7);
            let identity = (!guest).then(|| players[(index + seat) % POOL].id);
            (identity, ((index * 7 + seat * 13) % 50) as u32)
        })
        .collect();
    let finished_at = EPOCH + (index / 3) as i64 * 60_000;
    let mut result = finished_match(finished_at, &expansions, &seats);
    // One match in four was abandoned after its first seat resigned.
    if index.is_multiple_of(4) {
        result.status = MatchStatus::Abandoned;
        result.seats[0].resigned = true;
        result.seats[0].winner = false;
    }
    result
}

fn selects(filter: &MatchFilter, result: &FinishedMatch) -> bool {
    let has_player = |player: Uuid| result.seats.iter().any(|s| s.player_id == Some(player));
    filter.player.is_none_or(has_player)
        && filter.opponent.is_none_or(has_player)
        && filter.from.is_none_or(|from| result.finished_at >= from)
        && filter.to.is_none_or(|to| result.finished_at < to)
        && filter
            .players
            .is_none_or(|count| result.seats.len() == usize::from(count))
        && filter.expansions.iter().all(|&e| result.rules.has(e))
        && filter.status.is_none_or(|status| result.status == status)
}

fn summary_of(result: &FinishedMatch) -> MatchSummary {
    MatchSummary {
        id: result.id,
        name: result.name.clone(),
        rules: result.rules.clone(),
        player_count: result.seats.len() as u8,
        started_at: result.started_at,
        finished_at: result.finished_at,
        status: result.status,
        tiles_placed: result.tiles_placed,
        seats: result.seats.clone(),
        public: true,
    }
}

/// Every page of a listing, checking that each page but the last is full and that the
/// cursor moves on (a cursor that repeats would page forever).
async fn all_pages(store: &Store, filter: &MatchFilter, page_size: u32) -> Vec<MatchSummary> {
    let mut items = Vec::new();
    let mut after: Option<MatchCursor> = None;
    loop {
        let page = store.matches(filter, after, page_size).await.unwrap();
        assert!(page.items.len() <= page_size as usize);
        items.extend(page.items.iter().cloned());
        let Some(next) = page.next else {
            return items;
        };
        let full = page.items.len() == page_size as usize;
        assert!(full, "a short page before the end");
        let last = page.items.last().unwrap();
        assert_eq!((next.finished_at, next.id), (last.finished_at, last.id));
        if let Some(previous) = after {
            let moved_on = (next.finished_at, next.id) < (previous.finished_at, previous.id);
            assert!(moved_on, "the cursor went from {previous:?} to {next:?}");
        }
        after = Some(next);
    }
}

backend_tests! {
    async fn matches_list_newest_first(context: Context) {
        let history = SampleHistory::write(&context.store).await;
        let page = context.store.matches(&MatchFilter::default(), None, 10).await.unwrap();
        let expected = history.expected(&MatchFilter::default());
        assert_eq!(page.items, expected[..10]);
        assert!(page.next.is_some());
    }

    async fn paging_visits_every_match_once(context: Context) {
        let history = SampleHistory::write(&context.store).await;
        let expected = history.expected(&MatchFilter::default());
        // 7 does not divide 60, and pages end inside groups of equal finishing times.
        for page_size in [7, 1, 60, 61] {
            let listed = all_pages(&context.store, &MatchFilter::default(), page_size).await;
            assert_eq!(listed, expected, "pages of {page_size}");
        }
    }

    async fn each_filter_selects_exactly_its_matches(context: Context) {
        let history = SampleHistory::write(&context.store).await;
        let middle = EPOCH + 5 * 60_000;
        let filters = [
            MatchFilter { player: Some(history.players[0].id), ..MatchFilter::default() },
            MatchFilter { player: Some(history.players[3].id), ..MatchFilter::default() },
            MatchFilter { from: Some(middle), ..MatchFilter::default() },
            MatchFilter { to: Some(middle), ..MatchFilter::default() },
            MatchFilter {
                from: Some(middle),
                to: Some(middle + 4 * 60_000),
                ..MatchFilter::default()
            },
            MatchFilter { expansions: vec![Expansion::Abbot], ..MatchFilter::default() },
            MatchFilter {
                expansions: vec![Expansion::River, Expansion::Festival],
                ..MatchFilter::default()
            },
            MatchFilter { players: Some(3), ..MatchFilter::default() },
            MatchFilter { players: Some(6), ..MatchFilter::default() },
            MatchFilter { status: Some(MatchStatus::Abandoned), ..MatchFilter::default() },
            MatchFilter { status: Some(MatchStatus::Finished), ..MatchFilter::default() },
            MatchFilter {
                player: Some(history.players[1].id),
                status: Some(MatchStatus::Abandoned),
                ..MatchFilter::default()
            },
            MatchFilter {
                player: Some(history.players[0].id),
                opponent: Some(history.players[2].id),
                ..MatchFilter::default()
            },
            MatchFilter { opponent: Some(history.players[4].id), ..MatchFilter::default() },
        ];
        for filter in &filters {
            let expected = history.expected(filter);
            assert!(!expected.is_empty(), "the sample has matches for {filter:?}");
            assert!(expected.len() < MATCHES, "{filter:?} leaves some matches out");
            assert_eq!(all_pages(&context.store, filter, 4).await, expected, "{filter:?}");
        }
    }

    async fn filters_combine(context: Context) {
        let history = SampleHistory::write(&context.store).await;
        let combined = MatchFilter {
            player: Some(history.players[3].id),
            from: Some(EPOCH + 60_000),
            to: Some(EPOCH + 18 * 60_000),
            expansions: vec![Expansion::River],
            players: Some(4),
            status: Some(MatchStatus::Finished),
            opponent: None,
            include_private: false,
        };
        let expected = history.expected(&combined);
        assert!(!expected.is_empty(), "the sample has matches for {combined:?}");
        assert_eq!(all_pages(&context.store, &combined, 1).await, expected);

        let nothing = MatchFilter { players: Some(9), ..combined.clone() };
        let page = context.store.matches(&nothing, None, 10).await.unwrap();
        assert!(page.items.is_empty());
        assert_eq!(page.next, None);
    }

    async fn the_page_size_is_bounded(context: Context) {
        let ada = player("Ada");
        context.store.create_player(&ada).await.unwrap();
        let many: Vec<FinishedMatch> = (0..MAX_MATCH_PAGE as i64 + 5)
            .map(|index| finished_match(EPOCH + index, &[], &[(Some(ada.id), 1), (None, 2)]))
            .collect();
        context.store.import_matches(&many).await.unwrap();

        let huge = context.store.matches(&MatchFilter::default(), None, u32::MAX).await.unwrap();
        assert_eq!(huge.items.len(), MAX_MATCH_PAGE as usize);
        assert!(huge.next.is_some());
        let empty = context.store.matches(&MatchFilter::default(), None, 0).await.unwrap();
        assert_eq!(empty.items.len(), 1);
        let stats = context.store.player_stats(ada.id).await.unwrap().unwrap();
        assert_eq!(stats.games, MAX_MATCH_PAGE as u64 + 5);
    }

    async fn match_detail_and_record_round_trip(context: Context) {
        let history = SampleHistory::write(&context.store).await;
        let mut special = finished_match(EPOCH - 1, &Expansion::ALL, &[(None, 0), (None, 0)]);
        special.record = JsonText::from(serde_json::json!({
            "players": ["Zoë", "李"],
            "turns": [{ "tile": "D", "at": [0, -1], "rotation": 90 }],
            "final": { "scores": [0, 0], "note": null },
        }));
        special.breakdown = JsonText::from(serde_json::json!([]));
        context.store.import_matches(std::slice::from_ref(&special)).await.unwrap();

        for result in history.matches.iter().take(3).chain([&special]) {
            let detail = context.store.match_detail(result.id).await.unwrap().unwrap();
            assert_eq!(detail.summary, summary_of(result));
            assert_eq!(detail.breakdown, result.breakdown.to_value());
            let record = context.store.match_record(result.id).await.unwrap();
            assert_eq!(record, Some(result.record.to_value()));
        }
        assert_eq!(context.store.match_detail(Uuid::new_v4()).await.unwrap(), None);
        assert_eq!(context.store.match_record(Uuid::new_v4()).await.unwrap(), None);
    }

    async fn player_stats_count_games_wins_and_scores(context: Context) {
        let history = SampleHistory::write(&context.store).await;
        for player in &history.players {
            let seats: Vec<_> = history
                .matches
                .iter()
                .flat_map(|m| m.seats.iter())
                .filter(|seat| seat.player_id == Some(player.id))
                .collect();
            let stats = context.store.player_stats(player.id).await.unwrap().unwrap();
            assert_eq!(stats.games, seats.len() as u64);
            assert_eq!(stats.wins, seats.iter().filter(|s| s.winner).count() as u64);
            let total: u32 = seats.iter().map(|s| s.score).sum();
            let average = f64::from(total) / seats.len() as f64;
            assert!((stats.average_score - average).abs() < 1e-9, "{stats:?} {average}");
        }
        let newcomer = player("new");
        context.store.create_player(&newcomer).await.unwrap();
        let stats = context.store.player_stats(newcomer.id).await.unwrap().unwrap();
        assert_eq!((stats.games, stats.wins, stats.average_score), (0, 0, 0.0));
        assert_eq!(context.store.player_stats(Uuid::new_v4()).await.unwrap(), None);
    }
}
