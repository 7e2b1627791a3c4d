//! In-game chat: entries and their keyset reads, the effects written with an entry
//! (a redaction, a change of policy), mutes, and what a restored game gets of its chat.

use carcassonne_store::{
    ChatAudience, ChatEffect, ChatEntryRow, ChatPolicy, ChatRead, LIVE_CHAT_ENTRIES, Store,
    StoreError,
};
use uuid::Uuid;

use crate::common::{Context, EPOCH, move_row, open_lobby, playing_game, seat};

/// Entry `chat_seq`, for the players only when `chat_seq` is a multiple of three.
fn entry(chat_seq: u64) -> ChatEntryRow {
    let audience = match chat_seq % 3 {
        0 => ChatAudience::Players,
        _ => ChatAudience::Everyone,
    };
    ChatEntryRow {
        chat_seq,
        audience,
        created_at: EPOCH + chat_seq as i64,
        entry: format!(r#"{{"type":"message","text":"message {chat_seq}"}}"#),
    }
}

/// Writes entries `1..=count` of `game`, with no effect.
async fn write_entries(store: &Store, game: Uuid, count: u64) {
    for chat_seq in 1..=count {
        store
            .append_chat(game, &entry(chat_seq), &ChatEffect::None)
            .await
            .unwrap();
    }
}

/// The `chat_seq` of each entry `read` finds.
async fn numbers(store: &Store, game: Uuid, read: ChatRead) -> Vec<u64> {
    let entries = store.chat_entries(game, &read).await.unwrap();
    entries.iter().map(|entry| entry.chat_seq).collect()
}

fn read(after: Option<u64>, before: Option<u64>, limit: u32, players: bool) -> ChatRead {
    ChatRead {
        after,
        before,
        limit,
        players,
    }
}

backend_tests! {
    async fn chat_entries_read_back_by_range_limit_and_audience(context: Context) {
        let game = playing_game(&context.store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        write_entries(&context.store, game.id, 10).await;
        let store = &context.store;

        let all = store.chat_entries(game.id, &read(None, None, 100, true)).await.unwrap();
        assert_eq!(all, (1..=10).map(entry).collect::<Vec<_>>());
        // The newest `limit`, in ascending order.
        assert_eq!(numbers(store, game.id, read(None, None, 4, true)).await, [7, 8, 9, 10]);
        // The page before an entry, and what came after one.
        assert_eq!(numbers(store, game.id, read(None, Some(7), 3, true)).await, [4, 5, 6]);
        assert_eq!(numbers(store, game.id, read(Some(7), None, 100, true)).await, [8, 9, 10]);
        assert_eq!(numbers(store, game.id, read(Some(2), Some(6), 100, true)).await, [3, 4, 5]);
        // Spectators read only what everyone may, and still get `limit` of those.
        assert_eq!(
            numbers(store, game.id, read(None, None, 100, false)).await,
            [1, 2, 4, 5, 7, 8, 10]
        );
        assert_eq!(numbers(store, game.id, read(None, None, 3, false)).await, [7, 8, 10]);
        assert_eq!(numbers(store, game.id, read(None, Some(7), 2, false)).await, [4, 5]);
        // Nothing for an empty range, a zero limit, another game.
        assert!(numbers(store, game.id, read(Some(10), None, 100, true)).await.is_empty());
        assert!(numbers(store, game.id, read(None, None, 0, true)).await.is_empty());
        assert!(numbers(store, Uuid::new_v4(), read(None, None, 100, true)).await.is_empty());
        // Bounds past the column's range (a client may send any u64) are past every entry.
        assert_eq!(numbers(store, game.id, read(None, Some(u64::MAX), 2, true)).await, [9, 10]);
        assert_eq!(numbers(store, game.id, read(None, Some(1 << 63), 2, true)).await, [9, 10]);
        assert!(numbers(store, game.id, read(Some(u64::MAX), None, 100, true)).await.is_empty());
    }

    async fn a_taken_chat_seq_is_a_conflict_and_changes_nothing(context: Context) {
        let game = playing_game(&context.store, &[seat(0, "Ada", None)]).await;
        write_entries(&context.store, game.id, 2).await;

        let mut again = entry(2);
        again.entry = r#"{"type":"message","text":"other"}"#.to_owned();
        let plain = context.store.append_chat(game.id, &again, &ChatEffect::None).await;
        assert!(matches!(plain, Err(StoreError::Conflict(_))), "{plain:?}");
        // Nor is the effect written with it.
        let redact = ChatEffect::Redact { chat_seq: 1, entry: "gone".to_owned() };
        let redacting = context.store.append_chat(game.id, &again, &redact).await;
        assert!(matches!(redacting, Err(StoreError::Conflict(_))), "{redacting:?}");
        let policy = ChatEffect::Policy(ChatPolicy::Off);
        let closing = context.store.append_chat(game.id, &again, &policy).await;
        assert!(matches!(closing, Err(StoreError::Conflict(_))), "{closing:?}");

        let all = context.store.chat_entries(game.id, &read(None, None, 100, true)).await.unwrap();
        assert_eq!(all, vec![entry(1), entry(2)]);
        let lobby = context.store.lobby(game.id).await.unwrap().unwrap().0;
        assert_eq!(lobby.chat_policy, ChatPolicy::All);
    }

    async fn chat_of_an_unknown_game_or_entry_is_not_found(context: Context) {
        let game = playing_game(&context.store, &[seat(0, "Ada", None)]).await;
        let nowhere = context.store.append_chat(Uuid::new_v4(), &entry(1), &ChatEffect::None).await;
        assert!(matches!(nowhere, Err(StoreError::NotFound)), "{nowhere:?}");
        let muting = context.store.set_chat_mute(Uuid::new_v4(), 0, "player:x", true).await;
        assert!(matches!(muting, Err(StoreError::NotFound)), "{muting:?}");

        // Redacting an entry that was never written writes nothing, not even the notice.
        let redact = ChatEffect::Redact { chat_seq: 7, entry: "gone".to_owned() };
        let missing = context.store.append_chat(game.id, &entry(1), &redact).await;
        assert!(matches!(missing, Err(StoreError::NotFound)), "{missing:?}");
        assert_eq!(context.count("SELECT COUNT(*) FROM chat_entries").await, 0);
    }

    async fn a_redaction_rewrites_the_old_entry_in_the_same_write(context: Context) {
        let game = playing_game(&context.store, &[seat(0, "Ada", None)]).await;
        write_entries(&context.store, game.id, 3).await;

        let removed = r#"{"type":"removed"}"#.to_owned();
        let notice = ChatEntryRow {
            entry: r#"{"type":"deleted","chat_seq":2}"#.to_owned(),
            ..entry(4)
        };
        let redact = ChatEffect::Redact { chat_seq: 2, entry: removed.clone() };
        context.store.append_chat(game.id, &notice, &redact).await.unwrap();

        let redacted = ChatEntryRow { entry: removed, ..entry(2) };
        let all = context.store.chat_entries(game.id, &read(None, None, 100, true)).await.unwrap();
        assert_eq!(all, vec![entry(1), redacted, entry(3), notice]);
        // The words are gone from the database, not only from what the store returns.
        let left = context.count("SELECT COUNT(*) FROM chat_entries WHERE entry LIKE '%message 2%'").await;
        assert_eq!(left, 0);
    }

    async fn a_policy_entry_changes_the_lobbys_chat_policy(context: Context) {
        let game = playing_game(&context.store, &[seat(0, "Ada", None)]).await;
        assert_eq!(game.chat_policy, ChatPolicy::All);
        let seq = game.seq;

        let policy = ChatEffect::Policy(ChatPolicy::Players);
        context.store.append_chat(game.id, &entry(1), &policy).await.unwrap();
        let lobby = context.store.lobby(game.id).await.unwrap().unwrap().0;
        assert_eq!(lobby.chat_policy, ChatPolicy::Players);
        // Chat is not an update of the game: its `seq` stays.
        assert_eq!(lobby.seq, seq);
        let log = context.store.game_log(game.id).await.unwrap().unwrap();
        assert_eq!(log.lobby.chat_policy, ChatPolicy::Players);

        let policy = ChatEffect::Policy(ChatPolicy::Off);
        context.store.append_chat(game.id, &entry(2), &policy).await.unwrap();
        let live = context.store.live_game(game.id).await.unwrap().unwrap();
        assert_eq!(live.lobby.chat_policy, ChatPolicy::Off);
    }

    async fn a_lobby_keeps_the_chat_policy_it_was_created_with(context: Context) {
        let mut lobby = open_lobby("quiet", EPOCH);
        lobby.chat_policy = ChatPolicy::Players;
        context.store.create_lobby(&lobby, &seat(0, "Ada", None)).await.unwrap();

        let (read, _) = context.store.lobby(lobby.id).await.unwrap().unwrap();
        assert_eq!(read, lobby);
        let live = context.store.live_games().await.unwrap();
        assert_eq!(live[0].lobby.chat_policy, ChatPolicy::Players);
        let open = context.store.open_public_lobbies(0, 10).await.unwrap();
        assert_eq!(open[0].0.chat_policy, ChatPolicy::Players);
    }

    async fn mutes_are_set_unset_and_listed(context: Context) {
        let game = playing_game(&context.store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        let store = &context.store;
        store.set_chat_mute(game.id, 1, "player:ada", true).await.unwrap();
        store.set_chat_mute(game.id, 0, "seat:1", true).await.unwrap();
        store.set_chat_mute(game.id, 0, "player:cy", true).await.unwrap();
        // Muting twice is muting once.
        store.set_chat_mute(game.id, 0, "seat:1", true).await.unwrap();
        let expected = [(0, "player:cy"), (0, "seat:1"), (1, "player:ada")];
        let expected: Vec<(u8, String)> =
            expected.iter().map(|&(seat, author)| (seat, author.to_owned())).collect();
        assert_eq!(store.chat_mutes(game.id).await.unwrap(), expected);

        store.set_chat_mute(game.id, 0, "seat:1", false).await.unwrap();
        // Unmuting whom a seat does not mute changes nothing.
        store.set_chat_mute(game.id, 1, "seat:0", false).await.unwrap();
        let left = store.chat_mutes(game.id).await.unwrap();
        assert_eq!(left, vec![expected[0].clone(), expected[2].clone()]);
        assert!(store.chat_mutes(Uuid::new_v4()).await.unwrap().is_empty());
    }

    // A restarted single node reads one game alone when it is first asked for, and all
    // the others in one go: both reads must give the same game, and the ids read first
    // must be exactly those games.
    async fn one_game_read_alone_is_the_same_as_read_with_all_the_others(context: Context) {
        let store = &context.store;
        let moving = playing_game(store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        for seq in moving.seq + 1..=moving.seq + 4 {
            let mv = move_row(seq, (seq % 2) as u8, &format!("c{seq}"));
            store.append_move(moving.id, &mv).await.unwrap();
        }
        write_entries(store, moving.id, 5).await;
        store.set_chat_mute(moving.id, 1, "seat:0", true).await.unwrap();
        playing_game(store, &[seat(0, "Cy", None)]).await;
        let open = open_lobby("open", EPOCH + 1);
        store.create_lobby(&open, &seat(0, "Di", None)).await.unwrap();

        let all = store.live_games().await.unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(all.iter().find(|game| game.lobby.id == moving.id).unwrap().moves.len(), 4);
        let ids: Vec<Uuid> = all.iter().map(|game| game.lobby.id).collect();
        assert_eq!(store.live_game_ids().await.unwrap(), ids, "the same games, oldest first");
        for game in &all {
            let alone = store.live_game(game.lobby.id).await.unwrap();
            assert_eq!(alone.as_ref(), Some(game));
        }
    }

    async fn live_games_bring_the_newest_chat_and_the_mutes(context: Context) {
        let talkative = playing_game(&context.store, &[seat(0, "Ada", None), seat(1, "Bo", None)]).await;
        let quiet = playing_game(&context.store, &[seat(0, "Cy", None)]).await;
        let short = open_lobby("short", EPOCH + 1);
        context.store.create_lobby(&short, &seat(0, "Di", None)).await.unwrap();
        let total = LIVE_CHAT_ENTRIES as u64 + 20;
        write_entries(&context.store, talkative.id, total).await;
        write_entries(&context.store, short.id, 3).await;
        context.store.set_chat_mute(talkative.id, 1, "seat:0", true).await.unwrap();
        context.store.set_chat_mute(talkative.id, 0, "seat:1", true).await.unwrap();

        let newest: Vec<ChatEntryRow> = (21..=total).map(entry).collect();
        let mutes = vec![(0, "seat:1".to_owned()), (1, "seat:0".to_owned())];
        for store in [context.store.clone(), context.reopen().await] {
            let games = store.live_games().await.unwrap();
            assert_eq!(games.len(), 3);
            let of = |id: Uuid| games.iter().find(|live| live.lobby.id == id).unwrap();
            assert_eq!(of(talkative.id).chat, newest);
            assert_eq!(of(talkative.id).chat_mutes, mutes);
            assert!(of(quiet.id).chat.is_empty());
            assert!(of(quiet.id).chat_mutes.is_empty());
            assert_eq!(of(short.id).chat, (1..=3).map(entry).collect::<Vec<_>>());

            let one = store.live_game(talkative.id).await.unwrap().unwrap();
            assert_eq!(one.chat, newest);
            assert_eq!(one.chat_mutes, mutes);
            let other = store.live_game(short.id).await.unwrap().unwrap();
            assert_eq!(other.chat.len(), 3);
        }
    }
}
