//! Unit tests of the room state machine: no sockets, no database, no clock but the
//! timestamps the tests pass in.

use super::*;
use crate::rooms::contract::Request;
use crate::rooms::outcome::RatedBotPools;
use carcassonne_core::{Expansion, Rules};
use carcassonne_store::TimeControl;
use carcassonne_store::ratings::RatingPool;

const T0: Millis = 1_800_000_000_000;
const CREATOR: &str = "creator-hash";
const GUEST: &str = "guest-hash";

fn settings() -> RoomSettings {
    RoomSettings {
        lobby_idle_timeout: Duration::from_secs(60),
        ..RoomSettings::default()
    }
}

fn seat(number: u8, token_hash: &str, name: &str) -> SeatRow {
    SeatRow {
        seat: number,
        display_name: name.into(),
        player_id: None,
        token_hash: token_hash.into(),
        creator: number == 0,
        joined_at: T0,
        control: SeatControl::Human,
        control_seq: 0,
        bot: None,
    }
}

fn lobby(clock: TimeControl) -> LobbyRow {
    LobbyRow {
        id: uuid::Uuid::new_v4(),
        name: "test".into(),
        public: true,
        invite_hash: None,
        seat_count: 2,
        rules: Rules::default(),
        clock,
        status: LobbyStatus::Open,
        seed: None,
        deck_salt: None,
        seq: 0,
        created_at: T0,
        started_at: None,
        finished_at: None,
        rated: false,
        chat_policy: carcassonne_store::ChatPolicy::default(),
    }
}

fn draw() -> StartDraw {
    StartDraw {
        seed: 7,
        salt: [3; 32],
        order: None,
    }
}

/// Applies what `change` decides, as the shell does after a successful write.
fn commit(machine: &mut RoomMachine, change: Result<Change, RoomError>, now: Millis) {
    machine.apply(change.expect("a change"), now);
}

/// A started two-player game: the creator and a guest, both human.
fn two_player_game(clock: TimeControl) -> RoomMachine {
    let mut machine =
        RoomMachine::open(lobby(clock), vec![seat(0, CREATOR, "Ann")], settings(), T0);
    let (join, _) = machine.join("Bob".into(), None, None, T0).unwrap();
    commit(&mut machine, Ok(join), T0);
    // The guest's token is random; give the seat a known hash for the tests.
    machine.seats[1].token_hash = GUEST.into();
    let start = machine.start(CREATOR, draw(), T0);
    commit(&mut machine, start, T0);
    machine
}

/// Plays the seat to move's first legal move, as that player.
fn play_first_legal(machine: &mut RoomMachine, now: Millis) -> Result<(), RoomError> {
    let change = first_legal_change(machine, now)?;
    commit(machine, Ok(change), now);
    Ok(())
}

/// The change the seat to move's first legal move comes to, as that player's command,
/// decided and not yet written.
fn first_legal_change(machine: &mut RoomMachine, now: Millis) -> Result<Change, RoomError> {
    let seat = machine.game.as_ref().unwrap().current_player().unwrap();
    let hash = machine.seat_row(seat).unwrap().token_hash.clone();
    let mv = machine.game.as_ref().unwrap().legal_moves()[0];
    let id = format!("c{}", machine.seq());
    match machine.command(&hash, id, machine.seq(), mv, now)? {
        Decision::Commit(change) => Ok(*change),
        Decision::Repeat(_) => panic!("a new command was taken for a repeat"),
    }
}

/// Lets the bot job of the moment play its first legal move.
fn play_bot_job(machine: &mut RoomMachine, now: Millis) -> BotJob {
    let job = machine.bot_job().expect("a bot job");
    let mv = job.view.game().legal_moves()[0];
    let change = machine.bot_move(&job, mv, now);
    commit(machine, change, now);
    job
}

fn event_types(outgoing: &Outgoing) -> Vec<String> {
    let message: Value = serde_json::from_slice(outgoing.for_others.as_bytes()).unwrap();
    message["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["type"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn an_idle_open_lobby_expires_and_any_change_postpones_it() {
    let mut machine = RoomMachine::open(
        lobby(TimeControl::None),
        vec![seat(0, CREATOR, "Ann")],
        settings(),
        T0,
    );
    assert_eq!(machine.next_wakeup(), Some(T0 + 60_000));
    assert!(machine.due_change(T0 + 59_999).is_none());
    let (join, _) = machine.join("Bob".into(), None, None, T0 + 30_000).unwrap();
    commit(&mut machine, Ok(join), T0 + 30_000);
    assert!(machine.due_change(T0 + 60_000).is_none());
    let expired = machine.due_change(T0 + 90_000);
    assert!(matches!(
        expired,
        Some(Change::Cancelled(CancelReason::Expired))
    ));
    let update = machine.apply(expired.unwrap(), T0 + 90_000);
    assert!(machine.ended());
    assert_eq!(event_types(&update), ["lobby_cancelled"]);
}

#[test]
fn only_the_creator_adds_bots_and_a_bot_seat_plays_itself() {
    let mut machine = RoomMachine::open(
        lobby(TimeControl::None),
        vec![seat(0, CREATOR, "Ann")],
        settings(),
        T0,
    );
    let refused = machine.add_bot("someone", BotLevel::Random, None, T0);
    assert_eq!(refused.unwrap_err(), RoomError::BadToken);
    let added = machine.add_bot(CREATOR, BotLevel::Random, None, T0);
    commit(&mut machine, added, T0);
    assert_eq!(machine.seats()[1].bot.as_deref(), Some("random"));
    assert_eq!(
        machine
            .add_bot(CREATOR, BotLevel::Greedy, None, T0)
            .unwrap_err(),
        RoomError::LobbyFull
    );
    let start = machine.start(CREATOR, draw(), T0);
    commit(&mut machine, start, T0);
    // The human moves first; then the bot's turn is a job for the pool.
    assert!(machine.bot_job().is_none());
    play_first_legal(&mut machine, T0).unwrap();
    play_first_legal(&mut machine, T0).unwrap();
    let job = play_bot_job(&mut machine, T0);
    assert_eq!((job.seat, job.origin), (1, MoveOrigin::Bot));
}

#[test]
fn a_turn_past_its_deadline_is_played_by_a_bot_and_the_player_is_refused() {
    let clock = TimeControl::Turn {
        per_turn_ms: 2_000,
        reserve_ms: 1_000,
    };
    let mut machine = two_player_game(clock);
    assert_eq!(machine.next_wakeup(), Some(T0 + 3_000));
    assert!(!machine.time_out(T0 + 2_999));
    assert!(machine.bot_job().is_none());
    assert!(machine.time_out(T0 + 3_000));
    let mv = machine.game.as_ref().unwrap().legal_moves()[0];
    let refused = machine.command(CREATOR, "late".into(), machine.seq(), mv, T0 + 3_001);
    assert_eq!(refused.unwrap_err(), RoomError::TurnTimedOut);
    let job = machine.bot_job().unwrap();
    assert_eq!((job.seat, job.origin), (0, MoveOrigin::Timeout));
    let first = {
        let mv = job.view.game().legal_moves()[0];
        let change = machine.bot_move(&job, mv, T0 + 3_100);
        machine.apply(change.unwrap(), T0 + 3_100)
    };
    assert_eq!(&event_types(&first)[..2], ["turn_timed_out", "bot_moved"]);
    play_bot_job(&mut machine, T0 + 3_200);
    // Seat 1's turn, with a whole allowance and reserve; seat 0's reserve is spent.
    assert_eq!(machine.clocks.as_ref().unwrap().reserves(), &[0, 1_000]);
    assert_eq!(machine.next_wakeup(), Some(T0 + 3_200 + 3_000));
    assert!(machine.bot_job().is_none());
}

/// A room that rests between moves wakes to the very game it let go of: the same game
/// after every move, and the same updates for every client as a room that never rests.
#[test]
fn a_resting_room_wakes_to_the_same_game_and_sends_the_same_updates() {
    let mut resting = two_player_game(TimeControl::None);
    let mut awake = two_player_game(TimeControl::None);
    let mut moves = 0;
    while awake.game.as_ref().unwrap().current_player().is_some() {
        assert!(resting.rest(), "a room waiting for a human rests");
        assert!(resting.game.is_none() && resting.is_resting());
        assert!(resting.wake().unwrap(), "it woke");
        assert_eq!(resting.game, awake.game, "the game after {moves} moves");
        let from_rested = first_legal_change(&mut resting, T0).unwrap();
        let from_awake = first_legal_change(&mut awake, T0).unwrap();
        let (rested, kept) = (resting.apply(from_rested, T0), awake.apply(from_awake, T0));
        assert_eq!(rested.for_mover.as_bytes(), kept.for_mover.as_bytes());
        assert_eq!(rested.for_others.as_bytes(), kept.for_others.as_bytes());
        moves += 1;
    }
    assert!(moves > 100, "a whole game was played: {moves} moves");
    assert!(
        resting.rest(),
        "a finished room rests through its post-game stay"
    );
    assert!(resting.wake().unwrap());
    assert_eq!(resting.game, awake.game);
}

/// A resting room answers hellos and catch-ups as it is, without its game, and as an awake
/// room would: a snapshot, the updates missed, or the mover's reminder of their turn, with
/// their legal moves. Only a hello that takes an abandoned seat back needs the game.
#[test]
fn a_resting_room_answers_hellos_and_catch_ups_as_an_awake_one_would() {
    let mut resting = two_player_game(TimeControl::None);
    let mut awake = two_player_game(TimeControl::None);
    // The two games differ only in their lobby's id.
    let (id, other) = (resting.lobby.id.to_string(), awake.lobby.id.to_string());
    let same_id = |texts: Vec<(String, String)>| {
        let same = |text: String| text.replace(&other, &id);
        texts
            .into_iter()
            .map(|(mover, others)| (same(mover), same(others)))
            .collect::<Vec<_>>()
    };
    for _ in 0..40 {
        assert!(resting.rest());
        let seq = awake.seq();
        for hash in [CREATOR, GUEST] {
            assert!(resting.answers_at_rest(&hello(hash)));
            for last_seq in [None, Some(seq), Some(seq - 1)] {
                let rested = resting.connect(Some(hash), None, last_seq, None, T0);
                let kept = awake.connect(Some(hash), None, last_seq, None, T0);
                assert_eq!(
                    texts(&rested.unwrap().catch_up),
                    same_id(texts(&kept.unwrap().catch_up)),
                    "{hash} after {last_seq:?} at {seq}"
                );
                assert_eq!(
                    texts(&resting.catch_up(Some(hash), last_seq, T0)),
                    same_id(texts(&awake.catch_up(Some(hash), last_seq, T0)))
                );
                resting.disconnect(Some(hash));
                awake.disconnect(Some(hash));
            }
        }
        assert!(resting.is_resting() && resting.game.is_none());
        let resign = Request::Resign {
            token_hash: CREATOR.into(),
        };
        assert!(!resting.answers_at_rest(&resign), "a change needs the game");
        assert!(resting.wake().unwrap());
        play_first_legal(&mut resting, T0).unwrap();
        play_first_legal(&mut awake, T0).unwrap();
    }
    resting.seats[1].control = SeatControl::Abandoned;
    assert!(
        !resting.answers_at_rest(&hello(GUEST)),
        "taking a seat back"
    );
    assert!(resting.answers_at_rest(&hello(CREATOR)));
}

fn hello(token_hash: &str) -> Request {
    Request::Connect {
        token_hash: Some(token_hash.into()),
        invite_code: None,
        last_seq: None,
        last_chat_seq: None,
    }
}

/// Each message's texts, for the mover and for the others.
fn texts(messages: &[Arc<Outgoing>]) -> Vec<(String, String)> {
    messages
        .iter()
        .map(|outgoing| {
            let text = |text: &Text| String::from_utf8_lossy(text.as_bytes()).into_owned();
            (text(&outgoing.for_mover), text(&outgoing.for_others))
        })
        .collect()
}

/// A resting room still knows whose turn it is: its deadline stands, and once the turn
/// has run out it wakes and a bot plays it; a room whose bot is to move never rests.
#[test]
fn a_resting_room_keeps_its_turn_deadline_and_never_rests_before_a_bot() {
    let clock = TimeControl::Turn {
        per_turn_ms: 2_000,
        reserve_ms: 1_000,
    };
    let mut machine = two_player_game(clock);
    assert!(machine.rest());
    assert_eq!(machine.next_wakeup(), Some(T0 + 3_000));
    assert!(machine.due_change(T0 + 3_000).is_none());
    assert!(machine.wake().unwrap());
    assert!(machine.time_out(T0 + 3_000));
    assert!(
        !machine.may_rest(),
        "the stand-in must play the timed-out turn"
    );
    assert!(!machine.rest());
    assert_eq!(machine.bot_job().unwrap().origin, MoveOrigin::Timeout);
}

/// Lets seat 0's turn run out and the stand-in play it, then seat 1 play its own turn.
fn time_out_seat_zero(machine: &mut RoomMachine, now: Millis) -> Millis {
    let deadline = machine.next_wakeup().unwrap().max(now);
    assert!(machine.time_out(deadline));
    play_bot_job(machine, deadline);
    play_bot_job(machine, deadline);
    play_first_legal(machine, deadline).unwrap();
    play_first_legal(machine, deadline).unwrap();
    deadline
}

#[test]
fn three_timeouts_in_a_row_abandon_the_seat_until_its_owner_says_hello() {
    let clock = TimeControl::Turn {
        per_turn_ms: 2_000,
        reserve_ms: 0,
    };
    let mut machine = two_player_game(clock);
    let mut now = T0;
    for _ in 0..2 {
        now = time_out_seat_zero(&mut machine, now);
        assert!(machine.due_change(now).is_none());
    }
    now = time_out_seat_zero(&mut machine, now);
    let abandon = machine.due_change(now).expect("the seat is abandoned");
    let update = machine.apply(abandon, now);
    assert_eq!(event_types(&update), ["seat_abandoned"]);
    // A bot plays the abandoned seat at once, without waiting for a deadline.
    assert_eq!(machine.next_wakeup(), None);
    assert_eq!(machine.bot_job().unwrap().origin, MoveOrigin::Bot);
    let mv = machine.game.as_ref().unwrap().legal_moves()[0];
    let refused = machine.command(CREATOR, "x".into(), machine.seq(), mv, now);
    assert_eq!(refused.unwrap_err(), RoomError::SeatAbandoned);
    // The owner's hello is answered at once; taking the seat back is a due change.
    machine
        .connect(Some(CREATOR), None, None, None, now)
        .unwrap();
    let back = machine.due_change(now).expect("taken back");
    let update = machine.apply(back, now);
    assert_eq!(event_types(&update), ["seat_reclaimed"]);
    assert_eq!(machine.seats()[0].control, SeatControl::Human);
    assert!(machine.due_change(now).is_none());
    // A second hello of the owner, now playing the seat, changes nothing.
    machine
        .connect(Some(CREATOR), None, None, None, now)
        .unwrap();
    assert!(machine.due_change(now).is_none());
    play_first_legal(&mut machine, now).unwrap();
}

#[test]
fn a_resigned_seat_is_played_by_a_bot_and_the_last_resignation_ends_the_game() {
    let mut machine = two_player_game(TimeControl::None);
    let resign = machine.resign(GUEST, T0 + 5);
    let Ok(Change::SeatChanged { result: None, .. }) = &resign else {
        panic!("one resignation does not end a game with another human: {resign:?}");
    };
    commit(&mut machine, resign, T0 + 5);
    assert_eq!(machine.resign(GUEST, T0).unwrap_err(), RoomError::Resigned);
    play_first_legal(&mut machine, T0 + 6).unwrap();
    play_first_legal(&mut machine, T0 + 7).unwrap();
    let job = play_bot_job(&mut machine, T0 + 8);
    assert_eq!((job.seat, job.origin), (1, MoveOrigin::Bot));
    play_bot_job(&mut machine, T0 + 9);
    let last = machine.resign(CREATOR, T0 + 10).unwrap();
    let Change::SeatChanged {
        result: Some(result),
        ..
    } = &last
    else {
        panic!("the last human resigning ends the game");
    };
    assert_eq!(result.status, MatchStatus::Abandoned);
    assert!(
        result
            .seats
            .iter()
            .all(|seat| seat.resigned && !seat.winner)
    );
    let update = machine.apply(last, T0 + 10);
    assert!(machine.ended());
    assert_eq!(event_types(&update), ["seat_resigned", "game_abandoned"]);
    assert!(machine.bot_job().is_none());
}

#[test]
fn a_game_can_be_aborted_only_until_every_seat_has_placed_a_tile() {
    let mut machine = two_player_game(TimeControl::None);
    assert!(machine.abort(GUEST).is_ok());
    play_first_legal(&mut machine, T0).unwrap();
    play_first_legal(&mut machine, T0).unwrap();
    assert!(machine.abort(CREATOR).is_ok());
    play_first_legal(&mut machine, T0).unwrap();
    assert_eq!(
        machine.abort(CREATOR).unwrap_err(),
        RoomError::TooLateToAbort
    );
}

#[test]
fn a_bot_answer_to_an_older_state_is_stale() {
    let mut machine = two_player_game(TimeControl::Turn {
        per_turn_ms: 1_000,
        reserve_ms: 0,
    });
    assert!(machine.time_out(T0 + 1_000));
    let job = machine.bot_job().unwrap();
    play_bot_job(&mut machine, T0 + 1_001);
    let mv = job.view.game().legal_moves()[0];
    assert!(matches!(
        machine.bot_move(&job, mv, T0),
        Err(RoomError::StaleSeq { .. })
    ));
}

#[test]
fn a_restored_game_has_the_same_state_and_its_turn_a_fresh_allowance() {
    let clock = TimeControl::Turn {
        per_turn_ms: 2_000,
        reserve_ms: 0,
    };
    let mut machine = two_player_game(clock);
    let mut rec = Recorder::default();
    for step in 0..6 {
        let now = T0 + 100 * step;
        let change = first_legal_change(&mut machine, now).unwrap();
        rec.commit(&mut machine, change, now);
    }
    let live = LiveGame {
        lobby: machine.lobby.clone(),
        seats: machine.seats.clone(),
        moves: rec.moves.clone(),
        chat: Vec::new(),
        chat_mutes: Vec::new(),
    };
    let restart = T0 + 3_600_000;
    let restored = RoomMachine::restore(live, settings(), restart).unwrap();
    assert_eq!(restored.game, machine.game);
    assert_eq!(restored.seq(), machine.seq());
    // The restored log answers the stored command ids as repeats.
    for row in &rec.moves {
        assert_eq!(
            restored.accepted_seq(row.seat, &row.command_id),
            Some(row.seq)
        );
    }
    assert_eq!(restored.next_wakeup(), Some(restart + 2_000));
}

/// A room whose memory fell behind (another change was stored at the `seq` it wrote)
/// takes the stored game in its place: the game and `seq` of the log, the connections it
/// had, the stored command ids answered as repeats, and one snapshot for everyone, the
/// mover's with their legal moves. A client ahead of the room is told it is ahead.
#[test]
fn a_room_behind_the_database_reloads_the_stored_game_and_keeps_its_connections() {
    let mut stored = two_player_game(TimeControl::None);
    let mut behind = two_player_game(TimeControl::None);
    behind.lobby.id = stored.lobby.id;
    behind.connect(Some(CREATOR), None, None, None, T0).unwrap();
    behind.connect(None, None, None, None, T0).unwrap();
    let mut rec = Recorder::default();
    for step in 0..3 {
        let now = T0 + 100 * step;
        let change = first_legal_change(&mut stored, now).unwrap();
        rec.commit(&mut stored, change, now);
    }
    assert!(behind.is_behind(Some(stored.seq())));
    assert!(!behind.is_behind(Some(behind.seq())));
    assert!(!behind.is_behind(None));

    let live = LiveGame {
        lobby: stored.lobby.clone(),
        seats: stored.seats.clone(),
        moves: rec.moves.clone(),
        chat: Vec::new(),
        chat_mutes: Vec::new(),
    };
    let snapshot = behind.reload(live, T0 + 1_000).unwrap();
    assert_eq!(behind.game, stored.game);
    assert_eq!(behind.seq(), stored.seq());
    assert!(!behind.is_behind(Some(stored.seq())));
    assert_eq!(
        behind.connected_seats(),
        vec![0],
        "the creator is still connected"
    );
    for row in &rec.moves {
        assert_eq!(
            behind.accepted_seq(row.seat, &row.command_id),
            Some(row.seq)
        );
    }
    assert!(snapshot.snapshot);
    assert_eq!(snapshot.seq, Some(stored.seq()));
    let mover = behind.mover().expect("a human to move");
    assert_eq!(snapshot.mover.as_deref(), Some(mover.as_str()));
    let for_mover: Value = serde_json::from_slice(snapshot.for_mover.as_bytes()).unwrap();
    let for_others: Value = serde_json::from_slice(snapshot.for_others.as_bytes()).unwrap();
    assert_eq!(for_mover["type"], "snapshot");
    assert!(for_mover["legal_moves"].is_object(), "{for_mover}");
    assert!(for_others["legal_moves"].is_null(), "{for_others}");
    assert_eq!(for_mover["state"], for_others["state"]);
}

/// The patch oracle: on random games (every expansion subset, 2 to 5 seats, some with a
/// running clock), applying each update's patch to a mirror of the state gives exactly
/// the new state, and the patch touches only what the general JSON diff says changed.
#[test]
fn built_patches_rebuild_the_state_exactly_on_random_games() {
    let games = if cfg!(debug_assertions) { 60 } else { 1000 };
    for seed in 0..games {
        mirror_one_random_game(seed);
    }
}

fn mirror_one_random_game(seed: u64) {
    use rand_core::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut lobby = lobby(match seed % 3 {
        0 => TimeControl::Turn {
            per_turn_ms: 5_000,
            reserve_ms: 20_000,
        },
        _ => TimeControl::None,
    });
    lobby.seat_count = 2 + below(&mut rng, 4) as u8;
    lobby.rules.expansions = Expansion::ALL
        .into_iter()
        .filter(|_| below(&mut rng, 2) == 1)
        .collect();
    let mut machine = RoomMachine::open(lobby, vec![seat(0, CREATOR, "Ann")], settings(), T0);
    let mut mirror = serde_json::to_value(&machine.view).unwrap();
    let mut now = T0;
    for _ in 1..machine.lobby.seat_count {
        let added = machine.add_bot(CREATOR, BotLevel::Random, None, now);
        let update = machine.apply(added.unwrap(), now);
        check_patch(&mut mirror, &update, &machine);
    }
    let start = machine.start(CREATOR, StartDraw { seed, ..draw() }, now);
    let update = machine.apply(start.unwrap(), now);
    check_patch(&mut mirror, &update, &machine);
    while !machine.ended() {
        now += below(&mut rng, 3_000) as Millis;
        let update = play_random_move(&mut machine, &mut rng, now);
        check_patch(&mut mirror, &update, &machine);
    }
    assert_eq!(mirror["status"], "finished");
}

/// Plays a random legal move for the seat to move, as its bot or as its player, after
/// any timeout that is due.
fn play_random_move(
    machine: &mut RoomMachine,
    rng: &mut rand_chacha::ChaCha8Rng,
    now: Millis,
) -> Arc<Outgoing> {
    // A human turn that ran out is played by a stand-in, and three in a row abandon the
    // seat: clocks and seat changes get their patches checked too.
    machine.time_out(now);
    if let Some(change) = machine.due_change(now) {
        return machine.apply(change, now);
    }
    let game = machine.game.as_ref().unwrap();
    let legal = game.legal_moves();
    let mv = legal[below(rng, legal.len() as u64) as usize];
    let change = match machine.bot_job() {
        Some(job) => machine.bot_move(&job, mv, now).unwrap(),
        None => {
            let (seq, id) = (machine.seq(), format!("c{}", machine.seq()));
            match machine.command(CREATOR, id, seq, mv, now).unwrap() {
                Decision::Commit(change) => *change,
                Decision::Repeat(_) => panic!("a new command was taken for a repeat"),
            }
        }
    };
    machine.apply(change, now)
}

/// A random number below `bound` (the slight bias of the remainder does not matter here).
fn below(rng: &mut rand_chacha::ChaCha8Rng, bound: u64) -> u64 {
    rand_core::Rng::next_u64(rng) % bound
}

/// Applies the update's patch to the mirror and compares it with the state; and checks
/// against the general JSON diff of the two states that every operation of the built
/// patch touches a field or list that changed (none rewrites what stayed the same).
fn check_patch(mirror: &mut Value, update: &Outgoing, machine: &RoomMachine) {
    let message: Value = serde_json::from_slice(update.for_others.as_bytes()).unwrap();
    let patch: json_patch::Patch = serde_json::from_value(message["patch"].clone()).unwrap();
    let state = serde_json::to_value(&machine.view).unwrap();
    let changed: Vec<String> = json_patch::diff(mirror, &state)
        .iter()
        .map(|operation| operation.path().to_string())
        .collect();
    for operation in patch.iter() {
        // List items are compared by their list: the diff renumbers them its own way.
        let path = operation.path().to_string();
        let (parent, last) = path.rsplit_once('/').unwrap();
        let is_item = last == "-" || last.parse::<usize>().is_ok();
        let path = if is_item { parent } else { path.as_str() };
        let overlaps = |other: &String| other.starts_with(path) || path.starts_with(other.as_str());
        assert!(
            changed.iter().any(overlaps),
            "{path} did not change: {patch:?}"
        );
    }
    json_patch::patch(mirror, &patch).unwrap();
    assert_eq!(*mirror, state, "the built patch {patch:?}");
    // The view is kept between moves, not rebuilt: it must still be the state rebuilt
    // whole.
    assert_eq!(machine.view, machine.current_view(0));
}

/// What the store holds of a room's changes (its moves, and the events of every other
/// change), beside the events each update carried, as the text that went out.
#[derive(Default)]
struct Recorder {
    moves: Vec<MoveRow>,
    stored: Vec<(u64, String)>,
    sent: Vec<(u64, String)>,
}

impl Recorder {
    /// Writes `change` as the shell does, applies it, and keeps its update's events.
    fn commit(&mut self, machine: &mut RoomMachine, change: Change, now: Millis) {
        let seq = machine.seq() + 1;
        match &change {
            Change::Moved { row, .. } => self.moves.push(row.clone()),
            other => self.stored.push((seq, other.logged_events_text().unwrap())),
        }
        let update = machine.apply(change, now);
        #[derive(serde::Deserialize)]
        struct Sent<'a> {
            seq: u64,
            #[serde(borrow)]
            events: &'a serde_json::value::RawValue,
        }
        let sent: Sent = serde_json::from_slice(update.for_others.as_bytes()).unwrap();
        assert_eq!(sent.seq, seq);
        self.sent.push((seq, sent.events.get().to_owned()));
    }

    fn log(&self, machine: &RoomMachine) -> carcassonne_store::GameLog {
        carcassonne_store::GameLog {
            lobby: machine.lobby().clone(),
            seats: machine.seats().to_vec(),
            moves: self.moves.clone(),
            events: self.stored.clone(),
        }
    }
}

#[test]
fn the_rebuilt_event_log_is_every_update_s_events_to_the_byte() {
    let clock = TimeControl::Turn {
        per_turn_ms: 2_000,
        reserve_ms: 0,
    };
    let mut open = lobby(clock);
    open.seat_count = 3;
    open.rules = Rules {
        expansions: Expansion::ALL.to_vec(),
        ..Rules::default()
    };
    let mut machine = RoomMachine::open(open, vec![seat(0, CREATOR, "Ann")], settings(), T0);
    let mut rec = Recorder::default();
    let mut now = T0;
    let (join, _) = machine.join("Bob".into(), None, None, now).unwrap();
    rec.commit(&mut machine, join, now);
    machine.seats[1].token_hash = GUEST.into();
    let (join, _) = machine.join("Cy".into(), None, None, now).unwrap();
    rec.commit(&mut machine, join, now);
    let cy = machine.seats()[2].token_hash.clone();
    let leave = machine.leave(&cy).unwrap();
    rec.commit(&mut machine, leave, now);
    let bot = machine
        .add_bot(CREATOR, BotLevel::Random, None, now)
        .unwrap();
    rec.commit(&mut machine, bot, now);
    let start = machine.start(CREATOR, draw(), now).unwrap();
    rec.commit(&mut machine, start, now);

    // Seat 0 times out three turns in a row and is abandoned; a bot plays it twice, its
    // owner comes back; later seat 1 resigns; the game is played to its last tile.
    let (mut timeouts, mut abandoned_moves) = (3, 0);
    while !machine.ended() {
        now += 10;
        if let Some(change) = machine.due_change(now) {
            rec.commit(&mut machine, change, now);
            continue;
        }
        if let Some(job) = machine.bot_job() {
            let mv = job.view.game().legal_moves()[0];
            let change = machine.bot_move(&job, mv, now).unwrap();
            rec.commit(&mut machine, change, now);
            if machine.seats()[0].control == SeatControl::Abandoned && job.seat == 0 {
                abandoned_moves += 1;
                if abandoned_moves == 4 {
                    machine
                        .connect(Some(CREATOR), None, None, None, now)
                        .unwrap();
                }
            }
            continue;
        }
        let seat = machine.game.as_ref().unwrap().current_player().unwrap();
        if seat == 0 && timeouts > 0 {
            now = machine.next_wakeup().unwrap().max(now);
            assert!(machine.time_out(now));
            timeouts -= 1;
            continue;
        }
        if machine.seq() > 60 && machine.seats()[1].control == SeatControl::Human {
            let resign = machine.resign(GUEST, now).unwrap();
            rec.commit(&mut machine, resign, now);
            continue;
        }
        let hash = machine.seat_row(seat).unwrap().token_hash.clone();
        let mv = machine.game.as_ref().unwrap().legal_moves()[0];
        let id = format!("c{}", machine.seq());
        match machine.command(&hash, id, machine.seq(), mv, now).unwrap() {
            Decision::Commit(change) => rec.commit(&mut machine, *change, now),
            Decision::Repeat(_) => panic!("a new command was taken for a repeat"),
        }
    }

    let all_events: String = rec.sent.iter().map(|(_, text)| text.as_str()).collect();
    for kind in [
        "seat_taken",
        "seat_freed",
        "game_started",
        "turn_timed_out",
        "seat_abandoned",
        "\"reason\":\"abandoned\"",
        "seat_reclaimed",
        "seat_resigned",
        "\"reason\":\"resigned\"",
        "\"reason\":\"bot\"",
        "\"timeouts_in_row\":3",
        "game_over",
    ] {
        assert!(all_events.contains(kind), "the game has {kind}");
    }
    let rebuilt: Vec<(u64, String)> = history::rebuild(rec.log(&machine), u64::MAX)
        .unwrap()
        .into_iter()
        .map(|update| (update.seq, update.events.get().to_owned()))
        .collect();
    assert_eq!(rebuilt.len(), rec.sent.len());
    for (rebuilt, sent) in rebuilt.iter().zip(&rec.sent) {
        assert_eq!(rebuilt, sent);
    }

    // Pages: every update once, in order, whatever the page size.
    for limit in [1, 7, 500] {
        let mut after = 0;
        let mut paged = Vec::new();
        loop {
            let page = history::log_page(rec.log(&machine), after, limit).unwrap();
            assert!(page.items.len() <= limit);
            paged.extend(
                page.items
                    .iter()
                    .map(|u| (u.seq, u.events.get().to_owned())),
            );
            match page.next_after_seq {
                Some(next) => after = next,
                None => break,
            }
        }
        assert_eq!(paged, rec.sent, "limit {limit}");
    }
    let tail = history::log_page(rec.log(&machine), machine.seq(), 5).unwrap();
    assert!(tail.items.is_empty() && tail.next_after_seq.is_none());
}

#[test]
fn a_rated_lobby_takes_bots_only_where_its_pool_allows_them() {
    let mut rated = lobby(TimeControl::None);
    rated.rated = true;
    let mut creator = seat(0, CREATOR, "Ann");
    creator.player_id = Some(uuid::Uuid::from_u128(1));
    let closed = RoomMachine::open(rated.clone(), vec![creator.clone()], settings(), T0);
    let refused = closed.add_bot(CREATOR, BotLevel::Greedy, None, T0);
    assert!(
        matches!(refused, Err(RoomError::RatedPlayersOnly)),
        "{refused:?}"
    );
    let duels_with_bots = RoomSettings {
        rated_bot_pools: RatedBotPools::new(&[RatingPool::TwoPlayer]),
        ..settings()
    };
    let open = RoomMachine::open(
        rated.clone(),
        vec![creator.clone()],
        duels_with_bots.clone(),
        T0,
    );
    let added = open.add_bot(CREATOR, BotLevel::Greedy, None, T0);
    assert!(matches!(added, Ok(Change::SeatTaken(_))), "{added:?}");
    // The pool is the game's: a rated game of three is not a duel.
    rated.seat_count = 3;
    let three = RoomMachine::open(rated, vec![creator], duels_with_bots, T0);
    let refused = three.add_bot(CREATOR, BotLevel::Greedy, None, T0);
    assert!(
        matches!(refused, Err(RoomError::RatedPlayersOnly)),
        "{refused:?}"
    );
}

#[test]
fn chat_opens_with_the_game_and_knows_its_speakers() {
    let mut lobby_only = RoomMachine::open(
        lobby(TimeControl::None),
        vec![seat(0, CREATOR, "Ann")],
        settings(),
        T0,
    );
    assert_eq!(
        lobby_only.say(Some(CREATOR), None, "hi", T0).unwrap_err(),
        RoomError::GameNotStarted
    );
    let mut machine = two_player_game(TimeControl::None);
    let write = machine.say(Some(GUEST), None, "hello", T0).unwrap();
    assert!(
        write.row.entry.contains(r#""name":"Bob""#),
        "{}",
        write.row.entry
    );
    assert_eq!(
        machine.say(Some("stranger"), None, "hi", T0).unwrap_err(),
        RoomError::BadToken
    );
    assert_eq!(
        machine.say(None, None, "hi", T0).unwrap_err(),
        RoomError::SpectatorUnknown
    );
    let watcher = crate::rooms::chat::SpectatorIdentity {
        player_id: uuid::Uuid::nil(),
        name: "Watcher".into(),
    };
    let write = machine.say(None, Some(watcher), "hi", T0).unwrap();
    assert_eq!(
        write.row.audience,
        carcassonne_store::ChatAudience::Everyone
    );
}

#[test]
fn only_the_creator_sets_the_chat_policy_and_the_lobby_shows_it() {
    let mut machine = two_player_game(TimeControl::None);
    let policy = carcassonne_store::ChatPolicy::Off;
    assert_eq!(
        machine.set_chat_policy(GUEST, policy, T0).unwrap_err(),
        RoomError::NotCreator
    );
    let write = machine.set_chat_policy(CREATOR, policy, T0).unwrap();
    machine.apply_chat(&write);
    assert_eq!(machine.lobby().chat_policy, policy);
    assert!(matches!(
        machine.say(Some(CREATOR), None, "hi", T0),
        Err(RoomError::ChatClosed(_))
    ));
}

/// A room keeps what a catch-up may send, and no more: the newest update whole, and
/// older ones while their texts together stay within `CATCH_UP_TEXT_BYTES`, about what
/// the snapshot a client further behind gets instead costs.
#[test]
fn a_room_keeps_only_the_updates_a_catch_up_may_send() {
    let mut machine = two_player_game(TimeControl::None);
    let mut now = T0;
    for _ in 0..100 {
        now += 1_000;
        play_first_legal(&mut machine, now).unwrap();
    }
    let seq = machine.seq();
    assert!(seq > 100, "played {seq}");
    let kept = machine.recent.len() as u64;
    let older_text: usize = (machine.recent.after(0).iter().rev().skip(1))
        .map(|update| update.for_others.len())
        .sum();
    assert!(
        older_text <= CATCH_UP_TEXT_BYTES && kept >= 4,
        "{kept} updates kept, the older ones' texts {older_text} bytes"
    );
    // The furthest catch-up is still the updates themselves; one further, a snapshot.
    let furthest = machine.catch_up(Some(GUEST), Some(seq - kept), now);
    let seqs: Vec<Option<u64>> = furthest.iter().map(|update| update.seq).collect();
    let expected: Vec<Option<u64>> = (seq - kept + 1..=seq).map(Some).collect();
    assert_eq!(seqs, expected);
    let too_far = machine.catch_up(Some(GUEST), Some(seq - kept - 1), now);
    assert!(
        matches!(&too_far[..], [only] if only.snapshot),
        "a snapshot"
    );
}

/// Only the newest update keeps the mover's legal moves: a catch-up's last update
/// carries those of the state it ends at, and no update before it any.
#[test]
fn a_movers_catch_up_carries_only_the_current_legal_moves() {
    let mut machine = two_player_game(TimeControl::None);
    for _ in 0..6 {
        play_first_legal(&mut machine, T0).unwrap();
    }
    let seq = machine.seq();
    let seat = machine.game.as_ref().unwrap().current_player().unwrap();
    let mover = machine.seat_row(seat).unwrap().token_hash.clone();
    let other = if mover == CREATOR { GUEST } else { CREATOR };
    let legal_moves = |outgoing: &Arc<Outgoing>, hash| -> Option<Value> {
        let text = outgoing.text_for(Some(hash));
        let message: Value = serde_json::from_slice(text.as_bytes()).unwrap();
        message.get("legal_moves").cloned()
    };
    let for_mover = machine.catch_up(Some(&mover), Some(seq - 3), T0);
    let seqs: Vec<Option<u64>> = for_mover.iter().map(|update| update.seq).collect();
    assert_eq!(seqs, vec![Some(seq - 2), Some(seq - 1), Some(seq)]);
    let (newest, older) = for_mover.split_last().unwrap();
    assert!(legal_moves(newest, &mover).is_some_and(|moves| moves.is_object()));
    for update in older {
        assert_eq!(legal_moves(update, &mover), None, "{}", update.for_mover);
    }
    let for_other = machine.catch_up(Some(other), Some(seq - 3), T0);
    assert!(
        for_other
            .iter()
            .all(|update| legal_moves(update, other).is_none())
    );
}

#[test]
fn a_spectator_catches_up_on_the_spectators_chat_only() {
    let mut machine = two_player_game(TimeControl::None);
    let write = machine.say(Some(GUEST), None, "players only", T0).unwrap();
    machine.apply_chat(&write);
    assert!(machine.chat_catch_up(None, None).is_empty());
    assert_eq!(machine.chat_catch_up(Some(CREATOR), None).len(), 1);
    let joined = machine.connect(None, None, None, None, T0).unwrap();
    assert!(
        joined
            .catch_up
            .iter()
            .all(|outgoing| outgoing.chat.is_none()),
        "a spectator's hello brings no players' chat"
    );
}

/// Counts the bytes the current thread holds on the heap, so that a test can weigh what
/// a room keeps. Thread-local: other tests running at the same time do not count.
mod heap {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static HELD: Cell<isize> = const { Cell::new(0) };
    }

    struct Counting;

    // SAFETY: every call is passed to the system allocator unchanged; the count beside it
    // allocates nothing.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = HELD.try_with(|held| held.set(held.get() + layout.size() as isize));
            unsafe { System.alloc(layout) }
        }

        unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
            let _ = HELD.try_with(|held| held.set(held.get() - layout.size() as isize));
            unsafe { System.dealloc(pointer, layout) }
        }
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;

    pub fn held() -> isize {
        HELD.with(Cell::get)
    }
}

/// What a live room keeps, sockets aside, from the start of a game to its end: the game
/// itself (most of it the core's board and feature graph), a bounded tail of updates and
/// moves, and while a move is being written, its change. It used to keep every command
/// id twice, the legal moves of its last 64 updates and a square board window (151 KB by
/// the end of this game), and to hold the last move's write with a copy of the game and
/// the match's record as a tree of JSON values (76 KB more); now 31 KB at most.
#[test]
fn a_room_keeps_little_beyond_its_game_from_start_to_end() {
    // The first game made initializes the tile catalogue and other statics, once.
    drop(two_player_game(TimeControl::None));
    let before = heap::held();
    let mut machine = two_player_game(TimeControl::None);
    let mut most = 0;
    let mut moves = 0;
    let mut last_write = 0;
    let mut most_resting = 0;
    while machine.game.as_ref().unwrap().current_player().is_some() {
        let held = heap::held();
        let change = first_legal_change(&mut machine, T0).unwrap();
        last_write = heap::held() - held;
        most = most.max(heap::held() - before);
        commit(&mut machine, Ok(change), T0);
        moves += 1;
        most = most.max(heap::held() - before);
        if machine.rest() {
            most_resting = most_resting.max(heap::held() - before);
            machine.wake().unwrap();
        }
    }
    eprintln!("the last move's change, under way: {last_write} bytes");
    eprintln!("at most while resting between moves: {most_resting} bytes");
    assert!(
        most_resting <= 12 * 1024,
        "a resting room held {most_resting} bytes"
    );
    assert_eq!(
        machine.breakdown.capacity(),
        0,
        "a finished room keeps its scoring breakdown"
    );
    let weigh = |what: &str, held: isize| eprintln!("{what}: {held} bytes");
    let held = heap::held();
    drop(machine.game.take());
    weigh("the game at its end", held - heap::held());
    let held = heap::held();
    machine.recent = KeptUpdates::new(RECENT_UPDATES, CATCH_UP_TEXT_BYTES);
    weigh("the updates kept for a catch-up", held - heap::held());
    let held = heap::held();
    machine.log = MoveLog::default();
    weigh("the move log", held - heap::held());
    weigh("the rest", heap::held() - before);
    assert!(moves > 100, "a whole game was played: {moves} moves");
    eprintln!("at most: {most} bytes");
    assert!(most <= 32 * 1024, "the room held {most} bytes");
}

/// An update's text is kept for catch-ups as long as the room lives: at its length, not at
/// the capacity its serializer grew it to.
#[test]
fn an_update_text_holds_its_length_not_its_spare_capacity() {
    let before = heap::held();
    let mut written = String::with_capacity(4096);
    written.push_str(&"x".repeat(1000));
    let text = Text::from(written);
    let held = heap::held() - before;
    assert_eq!(text.len(), 1000);
    assert!(held <= 1024, "a 1,000-byte text holds {held} bytes");
}

/// Plays a whole game of `rules` with `choose` picking among the legal moves, and
/// returns the most the game itself held at once, measured after every move.
fn most_a_game_holds(rules: Rules, mut choose: impl FnMut(&[Move]) -> Move) -> isize {
    let setup = |seed| Setup {
        rules: rules.clone(),
        players: 2,
        stack: Stack::Seeded(seed),
    };
    // The first game made initializes the tile catalogue, once.
    drop(Game::new(setup(1)));
    let before = heap::held();
    let mut game = Game::new(setup(7)).unwrap();
    let mut most = heap::held() - before;
    while game.current_player().is_some() {
        let moves = game.legal_moves();
        let mv = choose(&moves);
        drop(moves);
        game.play(mv).unwrap();
        most = most.max(heap::held() - before);
    }
    assert!(game.tiles_placed() > 60, "a whole game was played");
    most
}

/// The core's game is most of a room: its board window and its feature graph. A game
/// whose tiles run off in a line (the first legal placement is the westmost) once cost
/// a square window around the origin, 14 KB of a 26 KB game.
#[test]
fn a_game_laid_out_in_a_line_holds_little() {
    let most = most_a_game_holds(Rules::default(), |moves| moves[0]);
    eprintln!("a line: at most {most} bytes");
    assert!(most <= 14 * 1024, "the game held {most} bytes");
}

/// A game whose moves are drawn at random among the legal ones: a board that spreads
/// every way, with every expansion's tiles and figures (27.8 KB with the square window
/// and the feature graph grown by doubling, now 21.5 KB).
#[test]
fn a_game_spread_every_way_holds_little() {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let rules = Rules {
        expansions: Expansion::ALL.to_vec(),
        ..Rules::default()
    };
    let most = most_a_game_holds(rules, |moves| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        moves[(state >> 33) as usize % moves.len()]
    });
    eprintln!("spread: at most {most} bytes");
    assert!(most <= 22 * 1024, "the game held {most} bytes");
}
